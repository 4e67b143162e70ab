#!/usr/bin/env bash
# mpiexec -n 2 sextant run --suite train --train CONFIG: a model and layout of the
# user's, in predict --train's spelling and not in the sweep (a shape of its own, FSDP),
# runs as one configuration named for its layout, with its own single-rank baseline and
# the baseline's loss curve; a layout whose ranks are not the run's is refused.
# Usage: train_custom.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 custom=$3
mkdir -p "$(dirname "$custom")"
shape=layers=3,hidden=48,heads=6,seq=24,vocab=96
# ~20-28 s in a release build (the sanitizer stage leaves it out: at -O0 it took 266-500 s).
expect_rc 0 timeout 500 mpiexec.mpich -n 2 "$sextant" run --suite train --quick --steps 4 --overwrite -o "$custom" \
  --train $shape,dp=2,zero=3
contains "$out" "dp2_zero3.custom"
"$python" - "$custom" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
assert list(f["train"]) == ["dp2_zero3.custom"], list(f["train"])
g, b = f["train/dp2_zero3.custom"], f["train_baseline/single.custom.p2"]
shape = {k: int(g.attrs[k]) for k in ("layers", "hidden", "heads", "seq", "vocab", "dp", "zero")}
assert shape == dict(layers=3, hidden=48, heads=6, seq=24, vocab=96, dp=2, zero=3), shape
n = min(len(g["loss"]), len(b["loss"]))
worst = float(np.max(np.abs(g["loss"][:n] - b["loss"][:n]) / np.abs(b["loss"][:n])))
# train_quick.sh's limit for the layouts, for the same reason: one rank only reorders sums.
assert worst <= 1e-4, "dp2_zero3.custom vs its baseline: loss curves differ by %.3g" % worst
print("custom configuration: dp2_zero3.custom, loss curve within %.2g of its baseline" % worst)
PY
expect_rc 2 mpiexec.mpich -n 2 "$sextant" run --suite train --quick -o "$custom.bad" --train $shape,dp=4
contains "$err" "dp x tp x pp = 4, but the run has 2 ranks"
echo "train --train: ok"
