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
work=$(mktemp -d "${TMPDIR:-/tmp}/sextant-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
