# Sourced by a test that runs on a namespace cluster of the CTest fixture:
#   netns_test_prelude WHAT OUTDIR
# sets `here` (the test's folder) and `cluster` (cluster.sh), skips (exit 77) unless
# root, checks that the fixture gave the state directory, and creates OUTDIR.
netns_test_prelude() {
  local what=$1 out=$2
  here=$(cd "$(dirname "$0")" && pwd)
  cluster=${SEXTANT_NETNS_CLUSTER:-$here/netns/cluster.sh}
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: $what needs root (network namespaces, tc, iptables); running as uid $(id -u)" >&2
    exit 77
  fi
  : "${SEXTANT_NETNS_STATE:?set by the CTest fixture (netns/NetnsCluster.cmake)}"
  mkdir -p "$out"
}
