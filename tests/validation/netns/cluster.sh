#!/usr/bin/env bash
# cluster.sh: a ground-truth network of hosts made of network namespaces, with a
# known one-way delay (a user-space NFQUEUE delay line: this kernel has no netem)
# and a known rate (tc tbf). See README.md next to this file.
#
#   cluster.sh up --hosts N --delay-us D --rate RATE [options]   bring a cluster up
#   cluster.sh mpiexec [--timeout S] [--] [mpiexec args]          run MPI across its hosts
#   cluster.sh exec HOST COMMAND...                               run a command on one host
#   cluster.sh hosts | info                                       host list / description
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
  --delay-us D      one-way delay added at each host's egress (0: no delay line)
  --rate RATE       tc rate at each host's egress, e.g. 1gbit, 100mbit (none: unshaped)
  --burst B         tbf burst (64kb)        --latency L  tbf queue latency (20ms)
  --spin-us S       delay line busy-waits the last S us before a release (0)
  --no-gro          leave GRO off
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
# $state/pids:       delay-line PIDs
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

# Is PID still the process we started (not a reused PID)?
is_ours() { [ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }

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
    grep -qx "$p" "$state/pids" 2>/dev/null || echo "$p"
  done | sort -u | paste -sd' ' -
}

# --- up --------------------------------------------------------------------------------
cmd_up() {
  local hosts="" delay_us="" rate="" burst=64kb latency=20ms spin_us=0 gro=on
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
      --delayline) delayline=$2; shift 2 ;;
      --preload) preload=$2; shift 2 ;;
      *) die "up: unknown option '$1' (cluster.sh --help)" ;;
    esac
  done
  [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 200 ] || die "up: --hosts N (2..200) is required"
  [[ $delay_us =~ ^[0-9]+([.][0-9]+)?$ ]] || die "up: --delay-us D (microseconds, 0 for none) is required"
  [ -n "$rate" ] || die "up: --rate RATE (e.g. 1gbit, or none) is required"
  need_root
  need_tools ip tc iptables ethtool awk setsid chrt timeout
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
  [ -s "$state/namespaces" ] && die "$state already holds a cluster ($(paste -sd' ' "$state/namespaces")); run 'cluster.sh down' first"
  state=$(cd "$state" && pwd)
  : >"$state/namespaces"; : >"$state/pids"; : >"$state/hosts"

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
    echo "h$i $ns $SUBNET.$((i + 1))" >>"$state/hosts"
  done

  if [ "$hosts" = 2 ]; then
    ip -n "${prefix}-h0" link add "$IFACE" type veth peer name "$IFACE" netns "${prefix}-h1"
  else
    sw="${prefix}-sw"
    ip netns add "$sw"
    echo "$sw" >>"$state/namespaces"
    ip -n "$sw" link set lo up
    ip netns exec "$sw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
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
      setsid ip netns exec "$ns" chrt -f 50 "$delayline" -q $QUEUE -d "$delay_us" -s "$spin_us" -r "$ready" \
        </dev/null >"$state/delayline-h$i.log" 2>&1 &
      local pid=$!
      echo "$pid" >>"$state/pids"
      local t
      for ((t = 0; t < 100; t++)); do
        [ -s "$ready" ] && break
        [ -d "/proc/$pid" ] || break
        sleep 0.05
      done
      [ -s "$ready" ] || die "delay line on h$i did not start: $(cat "$state/delayline-h$i.log")"
      if ! ip netns exec "$ns" iptables -t mangle -A POSTROUTING -o "$IFACE" -j NFQUEUE --queue-num $QUEUE 2>"$state/ipt.err"; then
        skip "iptables NFQUEUE does not work here: $(cat "$state/ipt.err")"
      fi
    fi
  done
  rm -f "$state"/*.err

  cat >"$state/config" <<EOF
hosts=$hosts
delay_us=$delay_us
rate=$rate
burst=$burst
latency=$latency
spin_us=$spin_us
gro=$gro
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
    for p in $(cat "$state/pids"); do is_ours "$p" delayline && pids="$pids $p"; done
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
    [ -s "$i" ] && log "$(basename "$i" .log): $(grep -h 'late by' "$i" || tail -1 "$i")"
  done
  rm -f "$state/namespaces" "$state/pids" "$state/hosts" "$state/config" "$state"/*.ready
  log "down: removed ${pids:+delay lines$pids and }namespaces of $state"
}

# --- using it -----------------------------------------------------------------------------
cmd_exec() {
  need_state
  [ $# -ge 2 ] || die "exec: usage: cluster.sh exec HOST COMMAND..."
  local ns
  ns=$(ns_of "$1"); shift
  exec ip netns exec "$ns" "$@"
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
  local ns0 rc=0
  ns0=$(ns_of h0)
  # UCX_TLS=tcp,self is required: otherwise UCX sees one host name and silently
  # uses shared memory between the namespaces (0 bytes on the veths).
  timeout -k 10 "$limit" ip netns exec "$ns0" env SEXTANT_NETNS_STATE="$state" \
    UCX_TLS=tcp,self UCX_NET_DEVICES="$IFACE" \
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
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
