#!/usr/bin/env bash
# cluster.sh: a ground-truth network of hosts made of network namespaces, with a
# known one-way delay (a user-space NFQUEUE delay line: this kernel has no netem)
# and a known rate (tc tbf on each host's egress). See README.md next to this file.
#
#   cluster.sh up --hosts N --delay-us D --rate RATE [options]   bring a cluster up
#   cluster.sh mpiexec [--timeout S] [--] [mpiexec args]          run MPI across its hosts
#   cluster.sh exec HOST COMMAND...                               run a command on one host
#   cluster.sh hosts | info | stats                               host list / description /
#                                                                 delay-line statistics
#   cluster.sh delay base|nominal                                 delay lines at 1 us / at D
#   cluster.sh down                                               tear it down
#
# Every subcommand takes --state DIR (or $SEXTANT_NETNS_STATE): the directory that
# records what `up` created (namespace names, delay-line PIDs), so a later `down`
# deletes exactly that. Exit status 77 means "cannot run here" (not root, a tool or a
# kernel feature missing); the reason is printed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IFACE=sxnet0          # every host's interface has this name (one UCX_NET_DEVICES for all)
SUBNET=198.18.0       # RFC 2544 benchmarking range, used only inside our namespaces
QUEUE=0               # NFQUEUE number (per namespace, so every host uses 0)

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: SKIP: $*" >&2; exit 77; }
log() { echo "cluster.sh: $*" >&2; }

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
up options:
  --hosts N         hosts (namespaces); 2: one veth pair, N>2: a bridge in a switch namespace
  --delay-us D      one-way delay, added once per direction (0: no delay line)
  --rate RATE       tc rate at each host's egress, e.g. 1gbit, 100mbit (none: unshaped)
  --burst B         tbf burst (auto: 150 us at the rate, at least 2 frames)
  --latency L       tbf queue latency (20ms)
  --where W         where the delay line holds packets: ingress (default; at the
                    receiving host, after its veth) or egress (at the sender, before
                    its qdisc: the sender's TCP then counts held packets as queued
                    in the host, which adds ~11 us one-way at every D >= 20 us)
  --spin-us S       delay line busy-waits the last S us before a release (0)
  --no-gro          leave GRO off
  --pin, --no-pin   host i's MPI processes on CPU i mod ncpu, its delay line on CPU
                    hosts + i given 2 CPUs per host, else beside them (or no pinning)
  --cc ALGO         TCP congestion control on the cluster's route (cubic, bbr, reno)
  --sysctl K=V      a sysctl in every host namespace (repeatable), e.g. net.ipv4.tcp_autocorking=0
  --replace         take down a cluster left in the state directory first
  --delayline PATH  delay-line binary ($SEXTANT_DELAYLINE)
  --preload PATH    ucx_nodisconnect.so for mpiexec ($SEXTANT_NODISCONNECT)
EOF
}

need_root() {
  [ "$(id -u)" = 0 ] || skip "needs root (network namespaces, tc, iptables); running as uid $(id -u)"
}
need_tools() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null || skip "'$t' not found (scripts/setup --tests installs it)"; done
}

# --- state ---------------------------------------------------------------------------
# $state/hosts:      "NAME NAMESPACE ADDRESS" per host, in order
# $state/namespaces: every namespace created, in creation order (switch included)
# $state/pids:       "PID PROGRAM" per delay line
# $state/cpus:       "NAME CPU" per host (--pin)
# $state/config:     shell assignments (hosts, delay_us, rate, preload, ...)
state=${SEXTANT_NETNS_STATE:-}

ns_of() {
  local ns
  ns=$(awk -v h="$1" '$1 == h { print $2 }' "$state/hosts")
  [ -n "$ns" ] || die "no host '$1' in $state/hosts (hosts: $(host_list))"
  echo "$ns"
}
host_list() { awk '{ print $1 }' "$state/hosts" | paste -sd, -; }
need_state() {
  [ -n "$state" ] || die "no state directory: give --state DIR or set SEXTANT_NETNS_STATE"
  [ -s "$state/hosts" ] || die "$state: no cluster is up there"
  # shellcheck disable=SC1091
  source "$state/config"
}

# Is PID still the program we started (not a reused PID)?
is_ours() { [ "$(readlink -f "/proc/$1/exe" 2>/dev/null)" = "$2" ]; }

# Stop processes by PID: TERM, wait up to $2 seconds, then KILL.
stop_pids() {
  local pids=$1 wait_s=$2 p i
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < wait_s * 10; i++)); do
    local alive=""
    for p in $pids; do [ -d "/proc/$p" ] && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    sleep 0.1
  done
  kill -KILL $pids 2>/dev/null || true
}

# Processes still running inside our namespaces other than the delay lines
# (a rank or proxy left behind by a timed-out job).
strays() {
  local ns p
  [ -s "$state/namespaces" ] || return 0
  while read -r ns; do
    ip netns pids "$ns" 2>/dev/null || true
  done <"$state/namespaces" | while read -r p; do
    awk -v p="$p" '$1 == p { found = 1 } END { exit !found }' "$state/pids" 2>/dev/null || echo "$p"
  done | sort -u | paste -sd' ' -
}

# --- up --------------------------------------------------------------------------------
cmd_up() {
  local hosts="" delay_us="" rate="" burst=auto latency=20ms spin_us=0 gro=on pin=0 cc="" replace=0 sysctls=() where=ingress
  local delayline=${SEXTANT_DELAYLINE:-} preload=${SEXTANT_NODISCONNECT:-}
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) hosts=$2; shift 2 ;;
      --delay-us) delay_us=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --burst) burst=$2; shift 2 ;;
      --latency) latency=$2; shift 2 ;;
      --spin-us) spin_us=$2; shift 2 ;;
      --no-gro) gro=off; shift ;;
      --pin) pin=1; shift ;;
      --no-pin) pin=0; shift ;;
      --replace) replace=1; shift ;;
      --cc) cc=$2; shift 2 ;;
      --where) where=$2; shift 2 ;;
      --sysctl) sysctls+=("$2"); shift 2 ;;
      --delayline) delayline=$2; shift 2 ;;
      --preload) preload=$2; shift 2 ;;
      *) die "up: unknown option '$1' (cluster.sh --help)" ;;
    esac
  done
  [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 200 ] || die "up: --hosts N (2..200) is required"
  [[ $delay_us =~ ^[0-9]+([.][0-9]+)?$ ]] || die "up: --delay-us D (microseconds, 0 for none) is required"
  [ -n "$rate" ] || die "up: --rate RATE (e.g. 1gbit, or none) is required"
  [[ $where == ingress || $where == egress ]] || die "up: --where ingress|egress"
  need_root
  need_tools ip tc iptables ethtool awk setsid chrt timeout taskset unshare
  if [ "$rate" != none ] && [ "$burst" = auto ]; then
    # The bucket must cover a late qdisc timer (up to ~150 us here) and two frames;
    # larger, it lets a message's first burst bytes out at veth speed, which shows up
    # as a negative intercept of the large-message line (64 KiB at 100 Mbit/s is 5 ms).
    burst=$(awk -v r="$rate" 'BEGIN {
      if (!match(tolower(r), /^[0-9.]+/)) exit 1
      v = substr(r, 1, RLENGTH); u = tolower(substr(r, RLENGTH + 1))
      m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
      m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9; m["tbps"] = 8e12
      if (!(u in m)) exit 1
      b = v * m[u] / 8 * 150e-6; if (b < 3028) b = 3028
      printf "%d", b }') || die "up: cannot read rate '$rate' (use e.g. 100mbit, 1gbit)"
  fi
  local use_delay=1
  [ "$delay_us" = 0 ] && use_delay=0
  if [ $use_delay = 1 ]; then
    [ -n "$delayline" ] || skip "no delay-line binary (--delayline or SEXTANT_DELAYLINE; built only where libnetfilter_queue is found)"
    [ -x "$delayline" ] || skip "delay line '$delayline' is not an executable (built only where libnetfilter_queue is found)"
  fi

  if [ -z "$state" ]; then
    state=$(mktemp -d "${TMPDIR:-/tmp}/sextant-netns.XXXXXX")
    echo "export SEXTANT_NETNS_STATE=$state"
  fi
  mkdir -p "$state"
  if [ -s "$state/namespaces" ] && [ $replace = 1 ]; then
    log "up: $state holds a cluster from an earlier run: taking it down first"
    cmd_down
  fi
  [ -s "$state/namespaces" ] && die "$state already holds a cluster ($(paste -sd' ' "$state/namespaces")); run 'cluster.sh down' first"
  state=$(cd "$state" && pwd)
  : >"$state/namespaces"; : >"$state/pids"; : >"$state/hosts"
  rm -f "$state"/cpus "$state"/delayline-h*.log "$state"/delayline-h*.ready

  # A prefix unique to this invocation; a name left by an aborted run is never reused.
  local prefix="sxv$$" n=0
  while ip netns list | grep -q "^${prefix}-"; do n=$((n + 1)); prefix="sxv$$x$n"; done

  # From here on any exit before the end (an error, a skip) tears down what was made.
  up_done=0
  trap 'rc=$?; if [ $up_done = 0 ]; then log "up failed (exit $rc), tearing down"; cmd_down >/dev/null 2>&1 || true; fi; exit $rc' EXIT

  local sw="" i ns
  if ! ip netns add "${prefix}-h0" 2>"$state/netns.err"; then
    skip "cannot create network namespaces here: $(cat "$state/netns.err")"
  fi
  echo "${prefix}-h0" >>"$state/namespaces"
  for ((i = 1; i < hosts; i++)); do
    ip netns add "${prefix}-h$i"
    echo "${prefix}-h$i" >>"$state/namespaces"
  done
  for ((i = 0; i < hosts; i++)); do
    ns="${prefix}-h$i"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
    [ ${#sysctls[@]} -eq 0 ] || ip netns exec "$ns" sysctl -qw "${sysctls[@]}"
    echo "h$i $ns $SUBNET.$((i + 1))" >>"$state/hosts"
  done
  # --pin: host i's MPI processes (through launcher.sh) get CPU i mod (CPUs we may
  # use), so that the wake-up path is the same in every run. Its delay line gets a CPU
  # of its own (CPU hosts + i) where there are two per host, so that the line's
  # spinning never takes the rank's CPU; with fewer it shares the host's CPU.
  local cpu_list=() line_cpus=()
  if [ $pin = 1 ]; then
    read -ra cpu_list <<<"$(taskset -pc $$ | sed 's/.*: //' | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); if (n == 2) for (c = r[1]; c <= r[2]; c++) printf "%d ", c; else printf "%d ", r[1] } }')"
    local n=${#cpu_list[@]}
    for ((i = 0; i < hosts; i++)); do
      echo "h$i ${cpu_list[$((i % n))]}" >>"$state/cpus"
      if [ "$n" -ge $((2 * hosts)) ]; then line_cpus+=("${cpu_list[$((hosts + i))]}"); else line_cpus+=("${cpu_list[$((i % n))]}"); fi
    done
    log "CPUs: ranks of h0.. on ${cpu_list[*]:0:$((hosts < n ? hosts : n))}, delay lines on ${line_cpus[*]}"
  fi

  if [ "$hosts" = 2 ]; then
    ip -n "${prefix}-h0" link add "$IFACE" type veth peer name "$IFACE" netns "${prefix}-h1"
  else
    sw="${prefix}-sw"
    ip netns add "$sw"
    echo "$sw" >>"$state/namespaces"
    ip -n "$sw" link set lo up
    ip netns exec "$sw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
    # Bridged frames need not pass the switch's (empty) iptables.
    ip netns exec "$sw" sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
    ip -n "$sw" link add br0 type bridge
    ip -n "$sw" link set br0 up
    for ((i = 0; i < hosts; i++)); do
      ip -n "${prefix}-h$i" link add "$IFACE" type veth peer name "p$i" netns "$sw"
      ip -n "$sw" link set "p$i" master br0
      ip -n "$sw" link set "p$i" up
      ip netns exec "$sw" ethtool -K "p$i" gro "$gro" >/dev/null 2>&1 || true
      # The switch port's egress is the host link's other direction: shaped too, so
      # that traffic converging on one host is limited to its link rate.
      if [ "$rate" != none ]; then
        tc -n "$sw" qdisc add dev "p$i" root tbf rate "$rate" burst "$burst" latency "$latency"
      fi
    done
  fi

  for ((i = 0; i < hosts; i++)); do
    ns="${prefix}-h$i"
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev "$IFACE"
    ip -n "$ns" link set "$IFACE" up
    # --cc: TCP congestion control on the cluster's route (a namespace may not change
    # its default away from the host's, but a route metric may name any available one).
    if [ -n "$cc" ]; then
      ip -n "$ns" route replace "$SUBNET.0/24" dev "$IFACE" proto kernel scope link src "$SUBNET.$((i + 1))" congctl "$cc"
    fi
    if ! ip netns exec "$ns" ethtool -K "$IFACE" gro "$gro" >/dev/null 2>&1; then
      log "warning: cannot set GRO $gro on $IFACE in $ns"
    fi
    if [ "$rate" != none ]; then
      if ! tc -n "$ns" qdisc add dev "$IFACE" root tbf rate "$rate" burst "$burst" latency "$latency" 2>"$state/tc.err"; then
        skip "tc tbf does not work here: $(cat "$state/tc.err")"
      fi
    fi
    if [ $use_delay = 1 ]; then
      local ready="$state/delayline-h$i.ready"
      rm -f "$ready"
      # setsid: outlives this script and the CTest step that ran it; stdout/stderr
      # to a log so nothing holds the caller's pipes. ip netns exec and chrt exec, so
      # $! is the delay line itself.
      local pin_cmd=()
      [ $pin = 1 ] && pin_cmd=(taskset -c "${line_cpus[$i]}")
      setsid ip netns exec "$ns" "${pin_cmd[@]}" chrt -f 50 "$delayline" -q $QUEUE -d "$delay_us" -s "$spin_us" -r "$ready" \
        </dev/null >"$state/delayline-h$i.log" 2>&1 &
      local pid=$!
      echo "$pid $(readlink -f "$delayline")" >>"$state/pids"
      local t
      for ((t = 0; t < 100; t++)); do
        [ -s "$ready" ] && break
        [ -d "/proc/$pid" ] || break
        sleep 0.05
      done
      [ -s "$ready" ] || die "delay line on h$i did not start: $(cat "$state/delayline-h$i.log")"
      # ingress: held in the receiver after its veth, so the sender's TCP sees its
      # packets leave at once, as on a wire (held at egress, before the qdisc, they
      # count as queued in the sending host: TCP small queues and autocorking then
      # add ~11 us one-way at every D >= 20 us, measured; see README.md).
      local rule=(POSTROUTING -o "$IFACE")
      [ "$where" = ingress ] && rule=(PREROUTING -i "$IFACE")
      if ! ip netns exec "$ns" iptables -t mangle -A "${rule[@]}" -j NFQUEUE --queue-num $QUEUE 2>"$state/ipt.err"; then
        skip "iptables NFQUEUE does not work here: $(cat "$state/ipt.err")"
      fi
    fi
  done
  rm -f "$state"/*.err

  # Wait for operstate UP (the kernel's link watch sets it up to a second after the
  # link comes up): before that the interface is not IFF_RUNNING, and UCX leaves it
  # out ("network device 'sxnet0' is not available") and MPI_Init fails.
  local t
  for ((i = 0; i < hosts; i++)); do
    for ((t = 0; t < 100; t++)); do
      ip -n "${prefix}-h$i" -o link show "$IFACE" | grep -q 'state UP' && break
      sleep 0.05
    done
    ip -n "${prefix}-h$i" -o link show "$IFACE" | grep -q 'state UP' || die "$IFACE on h$i is not up after 5 s"
  done

  cat >"$state/config" <<EOF
hosts=$hosts
delay_us=$delay_us
rate=$rate
burst=$burst
latency=$latency
spin_us=$spin_us
gro=$gro
pin=$pin
cc=$cc
sysctls="${sysctls[*]}"
iface=$IFACE
prefix=$prefix
switch=$sw
preload=$preload
EOF
  # A TCP connect h0 -> h1 to a closed port proves the path (addresses, delay lines,
  # qdiscs) both ways: "refused" is h1's answer; a timeout means a broken path.
  local probe
  probe=$(ip netns exec "${prefix}-h0" timeout 3 bash -c "exec 3<>/dev/tcp/$SUBNET.2/9" 2>&1 || true)
  [[ $probe == *refused* ]] || die "h0 cannot reach h1 ($SUBNET.2): ${probe:-timed out}"
  up_done=1
  trap - EXIT
  log "up: $hosts hosts ($(host_list)) prefix $prefix, delay ${delay_us} us one-way, rate $rate, state $state"
}

# --- down ------------------------------------------------------------------------------
cmd_down() {
  [ -n "$state" ] || die "down: no state directory: give --state DIR or set SEXTANT_NETNS_STATE"
  [ -d "$state" ] || { log "down: $state does not exist: nothing to do"; return 0; }
  local pids="" p ns
  # The delay lines first (they accept what they hold and log their statistics),
  # then anything else still running in our namespaces, then the namespaces.
  if [ -s "$state/pids" ]; then
    local exe
    while read -r p exe; do is_ours "$p" "$exe" && pids="$pids $p"; done <"$state/pids"
    stop_pids "$pids" 3
  fi
  stop_pids "$(strays)" 3
  if [ -s "$state/namespaces" ]; then
    tac "$state/namespaces" | while read -r ns; do
      ip netns del "$ns" 2>/dev/null || true
    done
  fi
  local i
  for i in "$state"/delayline-h*.log; do
    [ -s "$i" ] && log "$(basename "$i" .log): $(grep -h 'in total: released' "$i" || tail -1 "$i")"
  done
  rm -f "$state/namespaces" "$state/pids" "$state/hosts" "$state/config" "$state"/*.ready
  log "down: removed ${pids:+delay lines$pids and }namespaces of $state"
}

# --- using it -----------------------------------------------------------------------------
cmd_exec() {
  need_state
  [ $# -ge 2 ] || die "exec: usage: cluster.sh exec HOST COMMAND..."
  local host=$1 ns cpus pin_cmd=()
  ns=$(ns_of "$host"); shift
  # As launcher.sh does for MPI: the host's own name (UTS namespace) and CPU (--pin).
  cpus=$(awk -v h="$host" '$1 == h { print $2 }' "$state/cpus" 2>/dev/null || true)
  [ -n "$cpus" ] && pin_cmd=(taskset -c "$cpus")
  exec ip netns exec "$ns" unshare --uts "${pin_cmd[@]}" sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
}

# The delay lines' statistics (packets, lateness) since the last `stats`.
cmd_stats() {
  need_state
  local p exe i=0
  while read -r p exe; do
    is_ours "$p" "$exe" && kill -USR1 "$p"
  done <"$state/pids"
  sleep 0.2
  for ((i = 0; i < hosts; i++)); do
    [ -s "$state/delayline-h$i.log" ] || continue
    grep 'since last report' "$state/delayline-h$i.log" | tail -2 | sed "s/^delayline: since last report/h$i delay line/"
  done
}

# delay base|nominal: the delay lines hold packets for 1 us (a baseline on the same
# path) or for the cluster's D again.
cmd_delay() {
  need_state
  local sig p exe
  case "${1:-}" in
    base) sig=USR2 ;;
    nominal) sig=HUP ;;
    *) die "delay: expected base or nominal, got '${1:-}'" ;;
  esac
  while read -r p exe; do
    is_ours "$p" "$exe" && kill -"$sig" "$p"
  done <"$state/pids"
  sleep 0.2
}

cmd_info() {
  need_state
  cat "$state/config"
  echo "# host namespace address"
  cat "$state/hosts"
}

# mpiexec.mpich inside the first host, Hydra launching through launcher.sh. Defaults
# (each left out when the caller gives its own): -hosts every host, -ppn 1, -n hosts.
cmd_mpiexec() {
  need_state
  local limit=${SEXTANT_NETNS_TIMEOUT:-300}
  while [ $# -gt 0 ]; do
    case $1 in
      --timeout) limit=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  # Which placement options did the caller give? Only mpiexec's own options count:
  # scanning stops at the program (the first word that is not an option or a value).
  local have_hosts=0 have_ppn=0 have_n=0 a i=0 args=("$@")
  while [ $i -lt ${#args[@]} ]; do
    a=${args[$i]}
    case $a in
      -hosts | -host | -f | -hostfile | -machinefile) have_hosts=1; i=$((i + 2)) ;;
      -ppn) have_ppn=1; i=$((i + 2)) ;;
      -n | -np) have_n=1; i=$((i + 2)) ;;
      -genv | -env) i=$((i + 3)) ;;
      -genvall | -genvnone | -envall | -envnone | -l | -prepend-rank | -v | -verbose | -info | -print-all-exitcodes | -disable-auto-cleanup | -enable-x | -disable-x) i=$((i + 1)) ;;
      -*) i=$((i + 2)) ;;
      *) break ;;
    esac
  done
  local defaults=()
  [ $have_hosts = 1 ] || defaults+=(-hosts "$(host_list)")
  [ $have_ppn = 1 ] || [ $have_hosts = 1 ] || defaults+=(-ppn 1)
  [ $have_n = 1 ] || defaults+=(-n "$hosts")
  local pre=()
  [ -n "$preload" ] && pre=(-genv LD_PRELOAD "$preload")
  [ -n "$preload" ] && [ ! -r "$preload" ] && die "preload library '$preload' is missing"
  local ns0 rc=0 cpus pin_cmd=()
  ns0=$(ns_of h0)
  # Hydra starts h0's proxy itself (h0 is its own host name), not through the
  # launcher: mpiexec carries h0's CPU (--pin) for it.
  cpus=$(awk '$1 == "h0" { print $2 }' "$state/cpus" 2>/dev/null || true)
  [ -n "$cpus" ] && pin_cmd=(taskset -c "$cpus")
  # UCX_TLS=tcp,self is required: otherwise UCX sees one machine and silently uses
  # shared memory between the namespaces (0 bytes on the veths).
  timeout -k 10 "$limit" ip netns exec "$ns0" unshare --uts "${pin_cmd[@]}" \
    sh -c 'hostname h0 && exec "$@"' sh \
    env SEXTANT_NETNS_STATE="$state" UCX_TLS=tcp,self UCX_NET_DEVICES="$IFACE" \
    mpiexec.mpich -launcher ssh -launcher-exec "$here/launcher.sh" -iface "$IFACE" \
    "${defaults[@]}" "${pre[@]}" "$@" || rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    log "mpiexec: timed out after $limit s; stopping what it left running"
    stop_pids "$(strays)" 3
  fi
  return $rc
}

# --- main ---------------------------------------------------------------------------------
[ $# -ge 1 ] || { usage >&2; exit 2; }
sub=$1; shift
# --state DIR may come right after the subcommand.
if [ $# -ge 2 ] && [ "$1" = --state ]; then state=$2; shift 2; fi
[ -n "$state" ] && export SEXTANT_NETNS_STATE="$state"
case $sub in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  exec) cmd_exec "$@" ;;
  mpiexec) cmd_mpiexec "$@" ;;
  hosts) need_state; host_list ;;
  info) cmd_info ;;
  stats) cmd_stats ;;
  delay) cmd_delay "$@" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
