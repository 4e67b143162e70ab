# Shared by the job scripts in jobscripts/ and those `sextant jobscript` writes
# (sourced inside the job, never run; installed as share/sextant/jobscripts/common.sh).
# Reads the site settings (site.env), loads modules, makes the results directory
# results/<cluster>/<jobid>/ with the job's provenance, and launches steps.
# Requires bash >= 4.4. Every script runs with `set -euo pipefail`: a failed step
# fails the job with the step's exit status.

sextant_log() { echo "sextant job: $*" >&2; }
sextant_die() { sextant_log "$*"; exit 1; }

# sextant_job_init KIND: settings, modules, binary, results directory, provenance.
# Sets: outdir, nodes, per_node, ntasks, cluster.
sextant_job_init() {
  local kind=$1
  [ -n "${SLURM_JOB_ID:-}" ] || sextant_die "not inside a Slurm job: submit with jobscripts/submit or sbatch"
  # Set but empty (a generated script without --site-env): no site file.
  SEXTANT_SITE_ENV=${SEXTANT_SITE_ENV-${SEXTANT_HOME:-.}/jobscripts/site.env}
  if [ -n "$SEXTANT_SITE_ENV" ]; then
    [ -r "$SEXTANT_SITE_ENV" ] || sextant_die "site environment file '$SEXTANT_SITE_ENV' is not readable"
    set -a
    # shellcheck source=site.env
    source "$SEXTANT_SITE_ENV"
    set +a
  fi
  # site.env's defaults, for a job without a site file.
  : "${SEXTANT_MODULES:=}" "${SEXTANT_BIN:=}" "${SEXTANT_LAUNCHER:=srun}" "${SEXTANT_SRUN_ARGS:=--mpi=pmi2}"
  : "${SEXTANT_MPIEXEC:=mpiexec.mpich}" "${SEXTANT_MPIEXEC_ARGS:=}" "${SEXTANT_RUN_ARGS:=}"
  if [ -n "$SEXTANT_MODULES" ]; then
    command -v module >/dev/null 2>&1 || type module >/dev/null 2>&1 ||
      sextant_die "SEXTANT_MODULES='$SEXTANT_MODULES' but no 'module' command in the job"
    set +u  # module implementations read unset variables
    # shellcheck disable=SC2086
    module load $SEXTANT_MODULES
    set -u
  fi
  if [ -z "$SEXTANT_BIN" ]; then
    if [ -n "${SEXTANT_DEFAULT_BIN:-}" ]; then  # a generated script: the sextant that wrote it
      SEXTANT_BIN=$SEXTANT_DEFAULT_BIN
    elif [ -x "${SEXTANT_HOME:-.}/build/release/tools/sextant" ]; then
      SEXTANT_BIN=$SEXTANT_HOME/build/release/tools/sextant
    else
      SEXTANT_BIN=sextant
    fi
  fi
  command -v "$SEXTANT_BIN" >/dev/null ||
    sextant_die "SEXTANT_BIN '$SEXTANT_BIN' is not an executable (set it in $SEXTANT_SITE_ENV)"
  case $SEXTANT_LAUNCHER in
    srun | mpiexec) ;;
    *) sextant_die "SEXTANT_LAUNCHER '$SEXTANT_LAUNCHER': use srun or mpiexec (in $SEXTANT_SITE_ENV)" ;;
  esac
  export SEXTANT_BIN SEXTANT_SITE_ENV

  nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
  ntasks=${SLURM_NTASKS:-$((nodes * ${SEXTANT_RANKS_PER_NODE:-1}))}
  per_node=$((ntasks / nodes))
  cluster=${SEXTANT_CLUSTER:-${SLURM_CLUSTER_NAME:-$(hostname -s)}}
  outdir=${SEXTANT_RESULTS_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}/results}/$cluster/$SLURM_JOB_ID
  mkdir -p "$outdir"

  # Provenance of the job beside its results; each results file records the
  # SLURM_JOB*/SLURM_NTASKS/SLURM_TASKS_PER_NODE layout in /meta/environment too.
  {
    echo "kind=$kind"
    echo "job_id=$SLURM_JOB_ID"
    echo "job_name=${SLURM_JOB_NAME:-}"
    echo "cluster=$cluster"
    echo "partition=${SLURM_JOB_PARTITION:-}"
    echo "account=${SLURM_JOB_ACCOUNT:-}"
    echo "node_list=${SLURM_JOB_NODELIST:-}"
    echo "nodes=$nodes"
    echo "ntasks=$ntasks"
    echo "tasks_per_node=${SLURM_TASKS_PER_NODE:-}"
    echo "cpus_per_node=${SLURM_JOB_CPUS_PER_NODE:-}"
    echo "submit_dir=${SLURM_SUBMIT_DIR:-}"
    echo "submit_host=${SLURM_SUBMIT_HOST:-}"
    echo "batch_host=$(hostname)"
    echo "site_env=$SEXTANT_SITE_ENV"
    echo "launcher=$SEXTANT_LAUNCHER"
    echo "sextant_bin=$SEXTANT_BIN"
    echo "sextant_version=$("$SEXTANT_BIN" --version 2>&1 || true)"
    echo "start_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$outdir/job.txt"
  [ -z "$SEXTANT_SITE_ENV" ] || cp "$SEXTANT_SITE_ENV" "$outdir/site.env"
  scontrol show job -d "$SLURM_JOB_ID" >"$outdir/scontrol-job.txt" 2>&1 || true
  trap sextant_job_finish EXIT
  sextant_log "$kind: job $SLURM_JOB_ID on ${SLURM_JOB_NODELIST:-?} ($nodes node(s), $ntasks tasks), results in $outdir"
}

sextant_job_finish() {
  local rc=$?
  { echo "exit_status=$rc"; echo "end_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; } >>"$outdir/job.txt"
  sextant_log "exit status $rc; results in $outdir"
}

# sextant_launch NODES RANKS_PER_NODE CMD...: one MPI step on NODES nodes of the allocation.
sextant_launch() {
  local n=$1 r=$2 extra
  shift 2
  case $SEXTANT_LAUNCHER in
    srun)
      read -ra extra <<<"$SEXTANT_SRUN_ARGS"
      set -- srun "${extra[@]}" --nodes="$n" --ntasks=$((n * r)) --ntasks-per-node="$r" "$@" ;;
    mpiexec)
      read -ra extra <<<"$SEXTANT_MPIEXEC_ARGS"
      set -- "$SEXTANT_MPIEXEC" -n $((n * r)) -ppn "$r" "${extra[@]}" "$@" ;;
  esac
  echo "step=$*" >>"$outdir/job.txt"
  echo "+ $*" >&2
  "$@"
}

# sextant_run_suite SUITE NODES RANKS_PER_NODE OUT.h5 [sextant run options]: the
# step's output goes to the job log and to OUT.log. Returns the step's exit status.
sextant_run_suite() {
  local suite=$1 n=$2 r=$3 out=$4 rc=0 site_args
  shift 4
  read -ra site_args <<<"$SEXTANT_RUN_ARGS"
  sextant_launch "$n" "$r" "$SEXTANT_BIN" run --suite "$suite" -o "$out" "${site_args[@]}" "$@" 2>&1 |
    tee "${out%.h5}.log" || rc=$?
  [ "$rc" -eq 0 ] || sextant_log "step 'sextant run --suite $suite' on $n node(s) x $r failed with exit status $rc"
  return "$rc"
}

# sextant_fit RESULTS MODEL: fits on the batch node (no MPI launch needed).
sextant_fit() {
  echo "+ $SEXTANT_BIN fit $1 -o $2" >&2
  "$SEXTANT_BIN" fit "$1" -o "$2"
}

# sextant_merge OUT INPUT...
sextant_merge() {
  local out=$1
  shift
  echo "+ $SEXTANT_BIN merge $* -o $out" >&2
  "$SEXTANT_BIN" merge "$@" -o "$out"
}

# sextant_sweep_list MAX [LIST]: LIST if given (checked against MAX), else
# 1 2 4 ... up to MAX, and MAX itself.
sextant_sweep_list() {
  local max=$1 list=${2:-} v out=""
  if [ -n "$list" ]; then
    for v in $list; do
      [[ $v =~ ^[1-9][0-9]*$ ]] || sextant_die "sweep value '$v' is not a positive integer"
      [ "$v" -le "$max" ] || sextant_die "sweep value $v exceeds the allocation ($max)"
    done
    echo "$list"
    return
  fi
  for ((v = 1; v < max; v *= 2)); do out+="$v "; done
  echo "$out$max"
}
