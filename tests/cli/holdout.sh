#!/usr/bin/env bash
# Held-out check of the piecewise Hockney fits: `fit --holdout` fits every other size of
# a sweep and judges the sizes left out (tests/CMakeLists.txt measures that sweep at
# factor sqrt 2, so the fits see sizes a factor 2 apart, the default sweep's density).
# Limit: median over benchmarks of the MAPE below 64 KiB <= 15%; goal 5%. Measured: four
# quick 2-rank runs on a 2-core AMD Zen 3 VM, 6.1-7.7%. A held-out size is predicted by
# interpolating its neighbours, so a protocol switch between them (the transport changes
# protocol two or three times below 64 KiB, at sizes that differ from host to host) costs
# that size its whole step: with the fits a factor 4 apart the same host measured 16.7%,
# which is why this check runs on its own denser sweep. A fit that cannot interpolate at
# all is far above the limit. The median is computed here from `fit --holdout --json`.
source "$(dirname "$0")/../lib.sh"
sextant=$1 results=$2 python=$3
expect_rc 0 "$sextant" fit "$results" --holdout --json "$work/holdout.json"
echo "$out"
holdout=$("$python" -c 'import json, statistics, sys
rows = json.load(open(sys.argv[1]))["comm"]
small = [r["mape_below_64KiB_percent"] for r in rows if r["held_out_below_64KiB"] > 0]
assert any(r["benchmark"] == "allreduce" for r in rows) and small, rows
assert all(r["held_out_below_64KiB"] >= 7 for r in rows if r["benchmark"] == "pingpong"), "too few sizes held out"
print("%.2f" % statistics.median(small))' "$work/holdout.json") || fail "no held-out rows in the JSON"
echo "held-out median MAPE below 64 KiB: $holdout% (limit 15%, goal 5%)"
# In the sanitizer stage (SEXTANT_SANITIZED=1, scripts/test) the sweep was measured by an
# -O0 build with ASan and UBSan beside other tests (one CI: 15.3% there, 8.4% in the
# release stage of the same clone): the fit and the check run under the sanitizers, and
# the accuracy, a property of an optimised build's measurements, is judged in the
# release stage only.
if awk -v m="$holdout" 'BEGIN { exit !(m <= 15) }'; then
  :
elif [ "${SEXTANT_SANITIZED:-0}" = 1 ]; then
  echo "holdout: accuracy not judged in a sanitized build (measured by its -O0 binary, beside other tests)"
else
  fail "held-out median MAPE $holdout% > 15%"
fi
echo "holdout: ok"
