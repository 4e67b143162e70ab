#!/usr/bin/env bash
# mpiexec -n 4 sextant run --suite train --quick on the sweep's hybrids (DP2 x TP2 and
# TP2 x PP2): where 4 ranks oversubscribe the CPUs sextant may use (2 here) the run must
# say so (table header, /train/<config> attribute) and its timings mean nothing; what
# it shows is that the hybrids run end to end, measured, predicted and recorded, with
# losses falling. (Their losses equal the single-rank run's: mpi.train.* tests.)
# Usage: train_hybrid4.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 output=$3
mkdir -p "$(dirname "$output")"
rm -f "$output"
start=$(date +%s)
expect_rc 0 timeout 500 mpiexec.mpich -n 4 "$sextant" run --suite train --quick --overwrite --steps 4 \
  --configs dp2_tp2_pp14.small,tp2_pp24.small -o "$output"
echo "$out" | sed -n '/^# training proxy/,$p'
echo "train --quick, 4 ranks: $(( $(date +%s) - start )) s"
over=$(oversubscribed "$sextant" 4)
if [ "$over" = 1 ]; then
  contains "$out" "OVERSUBSCRIBED: timings not meaningful"
fi
"$python" - "$output" "$over" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
oversubscribed = sys.argv[2] == "1"
train = f["train"]
assert sorted(train) == ["dp2_tp2_pp14.small", "tp2_pp24.small"], list(train)
for name, g in train.items():
    a = g.attrs
    assert (a["dp"], a["tp"], a["pp"]) in ((2, 2, 1), (1, 2, 2)), name
    assert bool(a["oversubscribed"]) == oversubscribed, (name, a["oversubscribed"])
    loss = g["loss"][()]
    assert loss[-1] < loss[0], "%s: loss did not decrease: %s" % (name, loss)
    assert g["measured_phases"].shape[0] == 4, name
    assert a["predicted"] > 0 and a["measured_median"] > 0, name
print("4-rank hybrids: recorded, %s" % ("flagged oversubscribed" if oversubscribed else "not oversubscribed"))
PY
echo "train hybrids at 4 ranks: ok"
