#!/usr/bin/env bash
# sextant run --suite compute --quick: every kernel of the registry measured and
# validated, the working-set sweep recorded, the fit gives ceilings and operator
# models, and predict answers for an operator.
# Usage: compute_quick.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 output=$3
mkdir -p "$(dirname "$output")"
start=$(date +%s)
expect_rc 0 timeout 280 mpiexec.mpich -n 1 "$sextant" run --suite compute --quick -o "$output"
echo "compute --quick: $(( $(date +%s) - start )) s"
contains "$out" "gemm"
if grep -qE ' NO$' <<<"$out"; then fail "a kernel failed validation: $(grep -E ' NO$' <<<"$out")"; fi
"$python" - "$output" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
kernels = f["compute/kernels"]
need = ["stream_copy", "stream_scale", "stream_add", "stream_triad", "stream_dot", "peak_fma", "gemm",
        "gemm_batched", "conv2d_forward", "bias_gelu_forward", "bias_gelu_backward", "relu_forward",
        "softmax_forward", "softmax_backward", "layernorm_forward", "layernorm_backward", "attention_forward",
        "embedding_forward", "embedding_backward", "reduce_sum", "adamw_update"]
missing = [k for k in need if k not in kernels]
assert not missing, "kernels missing from the results: %s" % missing
for name in kernels:
    for dtype in kernels[name]:
        g = kernels[name][dtype]
        assert all(g["valid"][()] == 1), "%s %s: invalid" % (name, dtype)
        assert (g["median"][()] > 0).all(), "%s %s: no time" % (name, dtype)
sweep = f["compute/sweep/triad"]
ws = sweep[list(sweep)[0]]["working_set"][()]
assert len(ws) >= 8 and ws[-1] / ws[0] > 1000, "sweep too short: %s" % ws
print("compute results: %d kernels, sweep %d points" % (len(kernels), len(ws)))
PY
expect_rc 0 "$sextant" fit "$output" -o "${output%.h5}.model.h5"
contains "$out" "compute ceilings"
contains "$out" "memory"
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 256,256,256 --dtype float64
grep -qE '^gemm M=256,N=256,K=256,ta=0,tb=0 \(float64\): [0-9.]+ (us|ms)' <<<"$out" || fail "no gemm prediction: $out"
expect_rc 2 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 256,x --dtype float64
contains "$err" "256,x"
echo "compute suite: ok"
