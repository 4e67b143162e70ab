# Shared helpers for the shell tests. Each test sources this file.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc WANT CMD...: runs CMD, captures stdout/stderr in $out/$err, checks the exit status.
expect_rc() {
  local want=$1; shift
  set +e
  "$@" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  set -e
  out=$(cat "$work/stdout"); err=$(cat "$work/stderr")
  [ "$rc" -eq "$want" ] || { echo "--- stdout"; echo "$out" | tail -20; echo "--- stderr"; echo "$err" | tail -20; fail "exit $rc, expected $want: $*"; }
}
contains() { grep -qF -- "$2" <<<"$1" || fail "expected to find '$2' in: $(head -c 2000 <<<"$1")"; }
# oversubscribed SEXTANT RANKS: prints 1 when RANKS ranks on this node oversubscribe
# the CPUs sextant may use (its own count, `sextant info`: cpusets and affinity
# included), with OMP_NUM_THREADS threads per rank if set, else the CPUs shared among
# the ranks (at least one each); 0 otherwise. Tests expect what sextant will decide.
oversubscribed() {
  local usable threads
  usable=$("$1" info 2>/dev/null | sed -n 's/^cores *\([0-9]*\) usable.*/\1/p')
  [ -n "$usable" ] || fail "sextant info did not say how many CPUs it may use"
  threads=${OMP_NUM_THREADS:-$(( usable / $2 > 0 ? usable / $2 : 1 ))}
  echo $(( $2 * threads > usable ? 1 : 0 ))
}
work=$(mktemp -d "${TMPDIR:-/tmp}/sextant-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
