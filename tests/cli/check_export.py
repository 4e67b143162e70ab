#!/usr/bin/env python3
"""`sextant export RESULTS --to extrap` against Extra-P's JSON input definition and
against the results file.

    check_export.py SEXTANT RESULTS

Structure: the schema of Extra-P's JSON input format (its file-format documentation,
Extra-P 4.x): an object with "parameters" (a non-empty array of strings) and
"measurements" (callpath -> metric -> array of {"point": numbers, one per parameter,
"values": a non-empty array of numbers}); callpaths without Extra-P's "->" separator.
Content: every measured size of every benchmark group is one point (p = the group's
ranks, n = its bytes) whose values are the collective times of the valid repetitions,
recomputed here from the stored samples (the slowest rank of each repetition without a
late start), and their median is the stored median.
"""
import json
import math
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sextant, results = sys.argv[1], sys.argv[2]
errors = []
with tempfile.NamedTemporaryFile(suffix=".json") as out:
    p = subprocess.run([sextant, "export", results, "--to", "extrap", "-o", out.name], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: sextant export exited {p.returncode}: {p.stderr}")
    doc = json.load(open(out.name))

number = (int, float)
if not (isinstance(doc, dict) and set(doc) == {"parameters", "measurements"}):
    errors.append(f"top level: keys {sorted(doc) if isinstance(doc, dict) else type(doc)}")
params = doc.get("parameters")
if not (isinstance(params, list) and params and all(isinstance(x, str) for x in params)):
    errors.append(f"parameters: {params!r}")
if params != ["p", "n"]:
    errors.append(f"parameters {params}, expected ['p', 'n']")
meas = doc.get("measurements")
if not (isinstance(meas, dict) and meas):
    errors.append("measurements: not a non-empty object")
    meas = {}
exported = {}
for callpath, metrics in meas.items():
    if "->" in callpath or not (isinstance(metrics, dict) and metrics):
        errors.append(f"callpath {callpath!r}: bad name or no metric")
        continue
    for metric, series in metrics.items():
        if not isinstance(series, list):
            errors.append(f"{callpath}/{metric}: not an array")
            continue
        for m in series:
            point, values = m.get("point"), m.get("values")
            if not (isinstance(point, list) and len(point) == len(params) and all(isinstance(x, number) for x in point)):
                errors.append(f"{callpath}: point {point!r}")
                continue
            if not (isinstance(values, list) and values and all(isinstance(x, number) for x in values)):
                errors.append(f"{callpath} {point}: values")
                continue
            exported[(callpath, metric, point[0], point[1])] = values

expected = 0
with h5py.File(results, "r") as f:
    for level in f["comm"]:
        for bench in f["comm"][level]:
            if bench == "barrier":
                continue
            for dtype in f["comm"][level][bench]:
                for pg in f["comm"][level][bench][dtype]:
                    g = f["comm"][level][bench][dtype][pg]
                    ranks = int(g.attrs["ranks"])
                    for i, (n, med) in enumerate(zip(g["bytes"][()], g["median"][()])):
                        if math.isnan(med):
                            continue
                        expected += 1
                        t = np.asarray(g["samples"][f"{i:03d}"])
                        truth = t[~np.isnan(t).any(axis=1)].max(axis=1)
                        got = exported.get((f"{bench} {level} {dtype}", "time", ranks, float(n)))
                        if got is None:
                            errors.append(f"{bench} {level} {dtype} p={ranks} n={n}: not exported")
                        elif list(truth) != got:
                            errors.append(f"{bench} {level} {dtype} p={ranks} n={n}: values differ from the samples")
                        elif not math.isclose(float(np.median(got)), float(med), rel_tol=1e-12):
                            errors.append(f"{bench} {level} {dtype} p={ranks} n={n}: median {np.median(got)} != {med}")
ranks_seen = sorted({k[2] for k in exported})
if len(exported) != expected:
    errors.append(f"{len(exported)} points exported, the file has {expected} measured sizes")
for e in errors[:20]:
    print("FAIL:", e, file=sys.stderr)
print(f"extrap export: {len(meas)} callpaths, {len(exported)} (p, n) points, p in {ranks_seen}; {len(errors)} problems")
sys.exit(1 if errors else 0)
