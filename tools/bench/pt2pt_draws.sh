#!/usr/bin/env bash
# Benchmark (not a test; ~1 min a draw): the ping-pong validation on networks nobody
# tuned for. For each SEED the release build is configured with
# SEXTANT_VALIDATION_SEED=SEED, which draws a one-way delay log-uniform in 50..2000 us
# and a rate log-uniform in 50..1000 Mbit/s (the draw is printed), and ctest runs that
# pair with the calibration pair it is judged against (validation.pt2pt.random_*,
# validation.pt2pt.cal_1us_1g): the fitted alpha against the delay the delay lines
# applied, the fitted rate against the goodput tbf passed, each within 5%. summary.py
# then prints every draw's row. At the end the build is configured as before with a
# fresh draw (SEXTANT_VALIDATION_SEED unset).
#   tools/bench/pt2pt_draws.sh SEED [SEED...]
# Needs root and a release build (scripts/build release).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SEED [SEED...]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/release
[ -f "$build/CMakeCache.txt" ] || { echo "$0: no release build in $build (scripts/build release)" >&2; exit 2; }
! grep -q '^SEXTANT_VALIDATION_NETWORK:[A-Z]*=.' "$build/CMakeCache.txt" ||
  { echo "$0: SEXTANT_VALIDATION_NETWORK is set in $build: it replaces every draw (unset it first)" >&2; exit 2; }
python=/usr/bin/python3; [ -x "$python" ] || python=python3
restore() { cmake -USEXTANT_VALIDATION_SEED "$build" >/dev/null 2>&1 || true; }
trap restore EXIT
names=(cal_1us_1g)
failed=0
for seed in "$@"; do
  drawn=$(cmake -DSEXTANT_VALIDATION_SEED="$seed" "$build" 2>&1 | grep 'validation network drawn') ||
    { echo "$0: seed $seed: the build drew no network" >&2; exit 1; }
  echo "${drawn#-- }"
  name=$(ctest --test-dir "$build" -N -R '^validation\.pt2pt\.random_' | sed -n 's/.*validation\.pt2pt\.\(random_[^ ]*\).*/\1/p' | head -1)
  ctest --test-dir "$build" --output-on-failure -R "^validation\.pt2pt\.(cal_1us_1g|$name)\$" >"$build/pt2pt_draw_$seed.log" 2>&1 ||
    { failed=1; echo "seed $seed: a pair failed (its output: $build/pt2pt_draw_$seed.log)"; }
  names+=("$name")
done
"$python" "$root/tests/validation/summary.py" "$build/tests/validation/out" "${names[@]}" || failed=1
exit "$failed"
