#!/usr/bin/env bash
# One rank: the train suite's single-rank baseline runs (no communication to measure or
# fit), writes a model with a compute part only, and predicts and measures the single
# configurations. Accuracy is the sweep's to judge (validation.train_sweep).
# Usage: train_single.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 output=$3
mkdir -p "$(dirname "$output")"
expect_rc 0 timeout 250 mpiexec.mpich -n 1 "$sextant" run --suite train --quick --overwrite -o "$output"
echo "$out" | tail -6
contains "$out" "single1.small"
contains "$out" "single1.medium"
grep -qE '^median \|error\| [0-9.]+%  max \|error\| [0-9.]+%$' <<<"$out" || fail "no summary line"
"$python" - "$output" "${output%.h5}.model.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as r, h5py.File(sys.argv[2], "r") as m:
    assert sorted(r["train"]) == ["single1.medium", "single1.small"], list(r["train"])
    for g in r["train"].values():
        assert g.attrs["predicted"] > 0 and g.attrs["measured_median"] > 0
        assert g["loss"][-1] < g["loss"][0]
        assert g.attrs["speedup"] == 1  # its own baseline: none measured apart
    assert "train_baseline" not in r, list(r)
    assert "compute" in m and "comm" not in m, list(m)
print("single-rank baseline: 2 configurations, a compute-only model")
PY

# The same sweep with full activation recomputation (--recompute): named for it, with
# the loss curve of the run without it (the math is the same). And from one model file,
# predict --train costs the recomputed forward: the backward is longer.
recomputed=$work/recompute.h5
expect_rc 0 timeout 250 mpiexec.mpich -n 1 "$sextant" run --suite train --quick --model-sizes small --recompute full \
  --overwrite -o "$recomputed"
contains "$out" "single1_recompute_full.small"
small=layers=2,hidden=64,heads=4,seq=32,vocab=256,micro_batch=2,global_batch=4
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --train "$small" --json "$work/plain.json"
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --train "$small,recompute=full" --json "$work/full.json"
"$python" - "$output" "$recomputed" "$work/plain.json" "$work/full.json" <<'PY'
import json, sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as plain, h5py.File(sys.argv[2], "r") as rc:
    assert list(rc["train"]) == ["single1_recompute_full.small"], list(rc["train"])
    a, b = plain["train/single1.small"], rc["train/single1_recompute_full.small"]
    assert b.attrs["recompute"] == "full" and a.attrs["recompute"] == "none"
    n = min(len(a["loss"]), len(b["loss"]))
    worst = float(np.max(np.abs(a["loss"][:n] - b["loss"][:n]) / np.abs(a["loss"][:n])))
    # Recomputation runs the same kernels on the same operands in the same order: the
    # curves are bit-equal (measured 0); 1e-6 only leaves float32 room for a kernel whose
    # reduction order depends on its buffer's alignment, far below the 1e-2 a lost or
    # doubled activation moves the loss by within a few steps.
    assert worst <= 1e-6, "recomputation changed the loss curve by %.3g" % worst
p, f = (json.load(open(x))["prediction"]["breakdown_seconds"] for x in sys.argv[3:5])
extra = f["backward compute"] - p["backward compute"]
# Only that it is costed: the recomputed ops meet other cache states than the forward's,
# so no tighter bound holds on every host.
assert extra > 0, (extra, f, p)
print("recompute=full: the same loss curve (%.2g); predicted backward +%.3f ms for a forward of %.3f ms"
      % (worst, 1e3 * extra, 1e3 * p["forward compute"]))
PY
