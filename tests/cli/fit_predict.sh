#!/usr/bin/env bash
# fit turns a real results file into a model file; predict answers with an
# interval, explains its terms, and says when it extrapolates.
source "$(dirname "$0")/../lib.sh"
sextant=$1 results=$2 model=$3
expect_rc 0 "$sextant" fit "$results" -o "$model"
contains "$out" "pingpong"
contains "$out" "allreduce"
[ -f "$model" ] || fail "no model file written"
[ ! -e "$model.tmp" ] || fail "temporary model file left behind"

expect_rc 0 "$sextant" predict "$model" --op pingpong --bytes 64 --explain
grep -qE 'pingpong 64 B on 2 ranks .*: [0-9.]+ (ns|us) +\[[0-9.]+ (ns|us), [0-9.]+ (ns|us)\]' <<<"$out" \
  || fail "no time with interval: $out"
for term in "alpha part" "beta part" "gamma part" "segment" "view"; do contains "$out" "$term"; done
if grep -q EXTRAPOLATION <<<"$out"; then fail "64 B is inside the fitted range but was flagged"; fi

# Beyond the fitted rank count: the algorithm view, flagged as extrapolation in p and n.
expect_rc 0 "$sextant" predict "$model" --op allreduce --bytes 64M --ranks 512 --explain
contains "$out" "(algorithm view)"
contains "$out" "EXTRAPOLATION: 64 MiB is outside the fitted range"
contains "$out" "EXTRAPOLATION: algorithm view"
contains "$out" "costed at 512"
for term in "alpha part" "beta part" "gamma part" "calibration" "link"; do contains "$out" "$term"; done
contains "$out" "busbw"
# A benchmark without an algorithm model (pingpong) at another p says the direct view cannot scale.
expect_rc 0 "$sextant" predict "$model" --op pingpong --bytes 8 --ranks 8
contains "$out" "does not scale with ranks"

# Held-out check runs on the same file.
expect_rc 0 "$sextant" fit "$results" --holdout
contains "$out" "MAPE"
contains "$out" "allreduce"

expect_rc 0 "$sextant" predict "$model"
contains "$out" "communication fits"
echo "fit/predict: ok"
