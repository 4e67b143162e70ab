#!/usr/bin/env bash
# fit turns a real results file into a model file; predict answers with an
# interval, explains its terms, and says when it extrapolates.
source "$(dirname "$0")/../lib.sh"
sextant=$1 results=$2 model=$3 python=$4
expect_rc 0 "$sextant" fit "$results" -o "$model" --json "$work/fit.json"
contains "$out" "pingpong"
contains "$out" "allreduce"
[ -f "$model" ] || fail "no model file written"
# fit --json holds what the model file holds: every fit's segments, the same doubles.
"$python" - "$work/fit.json" "$model" <<'PY' || fail "fit --json differs from the model file"
import json, sys, h5py
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "sextant.fit" and doc["model_file"] == sys.argv[2], doc["schema"]
with h5py.File(sys.argv[2], "r") as m:
    groups = [(l, b, d, p) for l in m["comm"] for b in m["comm"][l] for d in m["comm"][l][b] for p in m["comm"][l][b][d]]
    assert len(doc["comm"]["fits"]) == len(groups), (len(doc["comm"]["fits"]), len(groups))
    for f in doc["comm"]["fits"]:
        g = m[f"comm/{f['level']}/{f['benchmark']}/{f['dtype']}/p{f['ranks']}"]
        assert [s["alpha_s"] for s in f["segments"]] == list(g["alpha"][()]), f["benchmark"]
        assert [s["beta_s_per_byte"] for s in f["segments"]] == list(g["beta"][()]), f["benchmark"]
    print("fit --json: %d fits, the model file's alpha and beta" % len(doc["comm"]["fits"]))
PY
leftovers=$(find "$(dirname "$model")" -maxdepth 1 -name ".$(basename "$model").*" -o -name "$(basename "$model").tmp")
[ -z "$leftovers" ] || fail "temporary model file left behind: $leftovers"

# Writers never share a temporary file: four fits to one output at once all succeed,
# and the model that lands is a whole one (the same prediction as the serial fit's),
# never a mixture or a zeroed file. The output is never one of the inputs.
expect_rc 0 "$sextant" predict "$model" --op allreduce --bytes 1M
serial=$out
for i in 1 2 3 4; do "$sextant" fit "$results" -o "$work/same.h5" >"$work/fit$i.out" 2>&1 & done
for i in 1 2 3 4; do wait -n || fail "a concurrent fit failed: $(cat "$work"/fit*.out)"; done
expect_rc 0 "$sextant" predict "$work/same.h5" --op allreduce --bytes 1M
[ "$out" = "$serial" ] || fail "concurrent fits left another model: '$out' vs '$serial'"
[ -z "$(find "$work" -name '.same.h5.*')" ] || fail "a concurrent fit left its temporary file"
cp "$results" "$work/r.h5"
expect_rc 2 "$sextant" fit "$work/r.h5" -o "$work/r.h5"
contains "$err" "is the results file"
expect_rc 0 "$sextant" fit "$work/r.h5" -o "$work/r.model.h5"  # the results survived

# A results file from an interrupted run (meta complete = no): fitted, with a warning
# naming what it holds, and the model's /source says so too.
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); assert f['meta'].attrs['complete']=='yes'; f['meta'].attrs['complete']='no'" "$work/r.h5"
expect_rc 0 "$sextant" fit "$work/r.h5" -o "$work/partial.model.h5"
contains "$out" "did not finish (meta complete = no): fitting the"
contains "$out" "allreduce"
contains "$err" "interrupted run"
"$python" -c "import h5py,sys; assert h5py.File(sys.argv[1])['source'].attrs['complete']=='no'" "$work/partial.model.h5" \
  || fail "the model's /source does not say the results were incomplete"

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

# Predictions at the measured sizes against the measurements (check_predict.py: each
# benchmark's median |error| below 64 KiB is the fit's residual, <= 8%).
# In the sanitizer stage (SEXTANT_SANITIZED=1, scripts/test) the measurements come from
# an -O0 build with ASan and UBSan: every prediction still runs under them, and its
# accuracy, a property of an optimised build's measurements, is judged in the release
# stage only.
if [ "${SEXTANT_SANITIZED:-0}" = 1 ]; then
  "$python" "$(dirname "$0")/check_predict.py" "$sextant" "$results" "$model" ||
    echo "fit/predict: accuracy not judged in a sanitized build (measured by its -O0 binary)"
else
  "$python" "$(dirname "$0")/check_predict.py" "$sextant" "$results" "$model" || fail "predictions at measured sizes"
fi

expect_rc 0 "$sextant" predict "$model"
contains "$out" "communication fits"
echo "fit/predict: ok"
