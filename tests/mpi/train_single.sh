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
