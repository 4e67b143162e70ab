#!/usr/bin/env python3
"""The Google Benchmark harness of the compute kernels (sextant_compute_bench), run
as its users run it: every kernel x dtype x test shape, validated and timed, its JSON
read back. Checks that nothing was wrong or failed, that the kernels every suite
relies on are there in both precisions, and that the rates it reports are its own
counts over its own manual time (Google Benchmark divides; this recomputes). Bad
options are refused with exit 2 and the option named.

Usage: check_compute_bench.py BENCH_BINARY WORK_DIR
"""
import json
import os
import subprocess
import sys

bench, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
out = os.path.join(work, "compute_bench.json")
failures = []

# 0.01 s per benchmark: the test checks the harness, not the rates' precision.
run = subprocess.run([bench, "--sextant_shapes=test", "--sextant_sweep=false", "--benchmark_min_time=0.01",
                      f"--benchmark_out={out}", "--benchmark_out_format=json"], capture_output=True, text=True)
if run.returncode != 0:
    sys.exit(f"FAIL: exit {run.returncode}\n{run.stderr[-2000:]}")
doc = json.load(open(out))
runs = doc["benchmarks"]
seen = set()
for b in runs:
    name = b["name"]
    if b.get("error_occurred"):
        failures.append(f"{name}: {b.get('error_message')}")
        continue
    kernel, dtype = name.split("/")[:2]
    seen.add((kernel, dtype))
    assert b["time_unit"] == "ms", name
    seconds = b["real_time"] / 1e3  # the manual time of one iteration
    for rate, count in (("FLOP/s", "flops"), ("bytes/s", "bytes")):
        if count in b and b[count] > 0:
            want = b[count] / seconds
            if abs(b[rate] / want - 1) > 1e-6:
                failures.append(f"{name}: {rate} {b[rate]:.6g}, its {count} over its time give {want:.6g}")
    if b.get("flops", 0) > 0 and b.get("bytes", 0) > 0 and abs(b["AI"] / (b["flops"] / b["bytes"]) - 1) > 1e-6:
        failures.append(f"{name}: AI {b['AI']} is not flops / bytes")
for kernel in ("peak_fma", "gemm", "stream_triad", "layernorm_forward", "softmax_backward", "adamw_update"):
    for dtype in ("float32", "float64"):
        if (kernel, dtype) not in seen:
            failures.append(f"{kernel} {dtype}: not measured")

for option in ("--sextant_kernels=nosuch", "--sextant_dtypes=float8", "--sextant_sweep=maybe"):
    bad = subprocess.run([bench, option], capture_output=True, text=True)
    if bad.returncode != 2 or option.split("=")[0] not in bad.stderr:
        failures.append(f"{option}: exit {bad.returncode}, stderr {bad.stderr.strip()[-200:]!r} (want 2, naming it)")

print(f"{len(runs)} benchmarks of {len(seen)} kernel x dtype pairs; rates recomputed; 3 bad options refused")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS")
