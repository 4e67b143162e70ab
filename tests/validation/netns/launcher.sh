#!/bin/sh
# Hydra launcher for a namespace cluster (mpiexec -launcher ssh -launcher-exec THIS).
# Hydra calls it like ssh: [-x ...] HOST COMMAND...; HOST is mapped to its network
# namespace through $SEXTANT_NETNS_STATE/hosts (written by cluster.sh up), and the
# command runs there as ssh would run it: through a shell.
while [ $# -gt 0 ]; do
  case $1 in -*) shift ;; *) break ;; esac
done
[ $# -ge 2 ] || { echo "launcher.sh: usage: launcher.sh [-x] HOST COMMAND..." >&2; exit 255; }
host=$1; shift
state=${SEXTANT_NETNS_STATE:?launcher.sh: SEXTANT_NETNS_STATE is not set}
ns=$(awk -v h="$host" '$1 == h { print $2 }' "$state/hosts")
[ -n "$ns" ] || { echo "launcher.sh: host '$host' is not in $state/hosts" >&2; exit 255; }
# A UTS namespace per host gives each its own host name, so MPI sees one node per host
# (MPI_COMM_TYPE_SHARED, placement) instead of one machine; an optional CPU list
# ($state/cpus: "HOST CPUS") pins the host's processes.
cpus=$(awk -v h="$host" '$1 == h { print $2 }' "$state/cpus" 2>/dev/null)
if [ -n "$cpus" ]; then
  exec ip netns exec "$ns" unshare --uts taskset -c "$cpus" sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
fi
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
