#!/usr/bin/env bash
# sextant run --suite compute --quick: every kernel of the registry measured and
# validated, the working-set sweep recorded, the fit gives ceilings and operator
# models, and predict answers for an operator.
# Usage: compute_quick.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 output=$3
mkdir -p "$(dirname "$output")"
start=$(date +%s)
expect_rc 0 timeout 280 mpiexec.mpich -n 1 "$sextant" run --suite compute --quick --overwrite -o "$output" \
  --json "${output%.h5}.json" --csv "${output%.h5}"
echo "compute --quick: $(( $(date +%s) - start )) s"
contains "$out" "gemm"
if grep -qE ' NO$' <<<"$out"; then fail "a kernel failed validation: $(grep -E ' NO$' <<<"$out")"; fi
"$python" - "$output" "${output%.h5}.json" "${output%.h5}" <<'PY'
import csv, json, sys, h5py
f = h5py.File(sys.argv[1], "r")
# The --json document holds the same medians as the file, kernel by kernel and shape by shape.
doc = json.load(open(sys.argv[2]))
assert (doc["schema"], doc["schema_version"], doc["suite"], doc["complete"]) == ("sextant.results.json", 1, "compute", True), doc["schema"]
in_json = {(k["kernel"], k["dtype"], k["shape"]): k["median_s"] for k in doc["compute"]["kernels"]}
in_file = {}
for name in f["compute/kernels"]:
    for dtype in f["compute/kernels"][name]:
        g = f["compute/kernels"][name][dtype]
        for shape, median in zip(g["shape"][()], g["median"][()]):
            in_file[(name, dtype, shape.decode() if isinstance(shape, bytes) else shape)] = float(median)
assert in_json == in_file, "the JSON document's kernel medians differ from the results file's"
# The statistics against the stored samples (numpy's default percentile is the Type 7
# quantile core/stats uses), and the JSON's p5/p99 against the file's. rtol 1e-12: the
# same formula on the same doubles, so only rounding may differ (a wrong quantile or a
# statistic of other samples is off by far more).
import numpy as np
json_q = {(k["kernel"], k["dtype"], k["shape"]): (k["p5_s"], k["p99_s"]) for k in doc["compute"]["kernels"]}
checked = 0
for name in f["compute/kernels"]:
    for dtype in f["compute/kernels"][name]:
        g = f["compute/kernels"][name][dtype]
        for i, shape in enumerate(g["shape"][()]):
            x = g["samples"]["%03d" % i][()]
            want = dict(zip(("min", "p5", "median", "p99", "max"), [x.min(), *np.percentile(x, [5, 50, 99]), x.max()]))
            for key, value in want.items():
                assert np.isclose(g[key][i], value, rtol=1e-12, atol=0), (name, dtype, key, g[key][i], value)
            shape = shape.decode() if isinstance(shape, bytes) else shape
            assert json_q[(name, dtype, shape)] == (g["p5"][i], g["p99"][i]), (name, dtype, shape)
            checked += 1
print("compute statistics: min, p5, median, p99, max of %d cases equal the stored samples'" % checked)
# --csv: the same rows as flat tables (kernels; the working-set sweep's points).
rows = list(csv.DictReader(open(sys.argv[3] + ".compute.csv")))
assert {(r["kernel"], r["dtype"], r["shape"]): float(r["median_s"]) for r in rows} == in_json and len(rows) == len(in_json)
points = sum(len(c["points"]) for c in doc["compute"]["working_set_sweep"])
assert len(list(csv.DictReader(open(sys.argv[3] + ".sweep.csv")))) == points > 0
assert doc["compute"]["threads"] == f["compute"].attrs["threads"]
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
# --strict: a kernel faster than a measured ceiling fails the test (a user's fit would
# raise the ceiling and warn instead).
expect_rc 0 "$sextant" fit --strict "$output" -o "${output%.h5}.model.h5"
contains "$out" "compute ceilings"
contains "$out" "memory"
contains "$out" "peak_fma float64: best at"
"$python" - "$output" "${output%.h5}.model.h5" <<'PY'
import sys, h5py
results, model = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
c = results["compute"]
isa, vbytes = c.attrs["isa"], int(c.attrs["vector_bytes"])
isa = isa.decode() if isinstance(isa, bytes) else isa
ceil = model["compute/ceilings"]
p32, p64 = ceil.attrs["peak_flops_float32"], ceil.attrs["peak_flops_float64"]
# --strict passed: nothing beat a ceiling by more than the 5% the instrument's noise
# allows; what beat it by less was raised to its rate and is listed.
for line in ceil["raised"][()]:
    print("ceiling raised within the noise allowance:", line.decode() if isinstance(line, bytes) else line)
# A vector holds twice as many float32 as float64 lanes, so the peak doubles (goal 2.0).
# Limit 1.5: the best-of-sweep rates move < 20% on a shared 2-core VM (measured
# 1.88-1.96 at 1 and 2 threads, native and x86-64-v3 builds); a peak kernel whose
# float32 chains spill or do not vectorise gives ~1.0.
ratio = p32 / p64
print("peak float32 / float64 = %.2f (goal 2.0, limit 1.5), ISA %s, %d-byte vectors" % (ratio, isa, vbytes))
if vbytes >= 16:
    assert ratio >= 1.5, "float32 peak only %.2fx float64 with %d-byte vectors" % (ratio, vbytes)
else:
    print("NOT CHECKED: float32 / float64 peak (the build's ISA has no vectors of two float64)")
# Memory levels as the working-set sweep found them: in order of working set, each at
# most the bandwidth of the level before it (10% allowance: the sweep's points move by
# a few % run to run on the shared VM); faster memory further out is a misread sweep.
names = [n.decode() if isinstance(n, bytes) else n for n in ceil["level"][()]]
lo, bw = ceil["lo_bytes"][()], ceil["bandwidth"][()]
assert len(names) >= 2, "fewer than two memory levels: %s" % names
assert len(set(names)) == len(names), "two levels with one name: %s" % names
assert all(lo[i] < lo[i + 1] for i in range(len(lo) - 1)), "levels not in order of working set: %s" % list(lo)
for i in range(1, len(bw)):
    assert bw[i] <= 1.1 * bw[i - 1], "%s (%.1f GB/s) faster than %s (%.1f GB/s)" % (
        names[i], bw[i] / 1e9, names[i - 1], bw[i - 1] / 1e9)
print("memory levels: " + ", ".join("%s %.1f GB/s" % (n, b / 1e9) for n, b in zip(names, bw)))
for dt in ("float32", "float64"):
    shape = ceil.attrs["peak_shape_" + dt]
    shape = shape.decode() if isinstance(shape, bytes) else shape
    assert "vectors=" in shape, "no accumulator count recorded for %s: %r" % (dt, shape)
PY
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 256,256,256 --dtype float64
grep -qE '^gemm M=256,N=256,K=256,ta=0,tb=0 \(float64\): [0-9.]+ (us|ms)' <<<"$out" || fail "no gemm prediction: $out"
# At a measured shape the operator model answers with the measurement itself (its
# lookup of measured points): the same time as the results file's median, to the
# 4 significant digits predict prints. Catches a lost point, a unit or a shape-key slip.
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 1024,1024,1024 --dtype float64
"$python" - "$output" "$out" <<'PY'
import re, sys, h5py
g = h5py.File(sys.argv[1], "r")["compute/kernels/gemm/float64"]
shapes = [s.decode() if isinstance(s, bytes) else s for s in g["shape"][()]]
measured = g["median"][()][shapes.index("M=1024,N=1024,K=1024,ta=0,tb=0")]
m = re.search(r"\(float64\): ([0-9.]+) (ns|us|ms|s)", sys.argv[2])
predicted = float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
print("gemm 1024^3 float64: measured %.6g s, predicted %.6g s" % (measured, predicted))
assert abs(predicted / measured - 1) <= 5e-4, "prediction at a measured shape is not the measurement"
PY
expect_rc 2 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 256,x --dtype float64
contains "$err" "256,x"
expect_rc 2 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 0,512,512 --dtype float64
contains "$err" "M=0 (must be >= 1)"
expect_rc 2 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape -1,512,512 --dtype float64
contains "$err" "M=-1"
# Far beyond the measured shapes: a time, flagged as extrapolation.
expect_rc 0 "$sextant" predict "${output%.h5}.model.h5" --op gemm --shape 100000,100000,100000 --dtype float64
contains "$out" "EXTRAPOLATION"
# A damaged compute part: one line naming the object and the value.
cp "${output%.h5}.model.h5" "$work/damaged.h5"
"$python" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); g=f['compute/operators']; o=g[list(g)[0]]; o[list(o)[0]].attrs['e_compute']=0.0" "$work/damaged.h5"
expect_rc 1 "$sextant" predict "$work/damaged.h5" --op gemm --shape 256,256,256 --dtype float64
contains "$err" "e_compute 0 (must be in (0, 1])"
echo "compute suite: ok"
