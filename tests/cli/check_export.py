#!/usr/bin/env python3
"""`sextant export` against each format's published definition and against sextant's files.

    check_export.py SEXTANT RESULTS MODEL COMPUTE_MODEL

(calculon: see its section below.)

extrap (from RESULTS, a rank sweep):
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

sextant, results, model, compute_model = sys.argv[1:5]
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
                        # The same doubles as the stored median's samples: only the
                        # order of numpy's and sextant's median arithmetic can differ.
                        elif not math.isclose(float(np.median(got)), float(med), rel_tol=1e-12):
                            errors.append(f"{bench} {level} {dtype} p={ranks} n={n}: median {np.median(got)} != {med}")
ranks_seen = sorted({k[2] for k in exported})
if len(exported) != expected:
    errors.append(f"{len(exported)} points exported, the file has {expected} measured sizes")
print(f"extrap export: {len(meas)} callpaths, {len(exported)} (p, n) points, p in {ranks_seen}")

# astra-sim (from a model file): ASTRA-sim 2.0's analytical network YAML (topology,
# npus_count, bandwidth in GB/s of 2^30 B, latency in ns, one entry per dimension) and
# its system JSON (the keys its system parser reads, implementations per dimension);
# the link's numbers are the model's world ping-pong (h5py), the compute numbers its
# ceilings.
TOPOLOGIES = {"Ring", "FullyConnected", "Switch"}
IMPLEMENTATIONS = {"ring", "direct", "doubleBinaryTree", "halvingDoubling", "oneRing", "oneDirect",
                   "oneHalvingDoubling"}
try:
    import yaml
except ImportError:
    yaml = None
for path, ranks in ((model, 16), (compute_model, 8)):
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sextant, "export", path, "--to", "astra-sim", "-o", out, "--ranks", str(ranks)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            errors.append(f"astra-sim export of {path}: exit {p.returncode}: {p.stderr.strip()}")
            continue
        text = open(f"{out}/network.yml").read()
        net = yaml.safe_load(text) if yaml else None
        system = json.load(open(f"{out}/system.json"))
    if net is not None:
        keys = {"topology", "npus_count", "bandwidth", "latency"}
        if set(net) != keys or len({len(net[k]) for k in keys}) != 1:
            errors.append(f"network.yml: keys {sorted(net)} or dimension counts differ")
            continue
        if not set(net["topology"]) <= TOPOLOGIES or net["npus_count"] != [ranks]:
            errors.append(f"network.yml: topology {net['topology']}, npus_count {net['npus_count']}")
        with h5py.File(path, "r") as m:
            pp = m["comm/world/pingpong/byte"]
            g = pp[sorted(pp, key=lambda k: int(k[1:]))[0]]
            alpha, beta = float(g["alpha"][0]), float(g["beta"][-1])
            ceilings = m["compute/ceilings"].attrs if "compute/ceilings" in m else None
            peak32 = float(ceilings["peak_flops_float32"]) if ceilings is not None else None
        if not (math.isclose(net["latency"][0], alpha * 1e9, rel_tol=1e-5) and
                math.isclose(net["bandwidth"][0], 1 / beta / 2**30, rel_tol=1e-5)):
            errors.append(f"network.yml: latency {net['latency']} ns, bandwidth {net['bandwidth']} GB/s; the model's "
                          f"ping-pong says {alpha * 1e9} ns, {1 / beta / 2**30} GB/s")
    dims = 1
    for key in ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
                "all-to-all-implementation"):
        if not (isinstance(system.get(key), list) and len(system[key]) == dims and set(system[key]) <= IMPLEMENTATIONS):
            errors.append(f"system.json {key}: {system.get(key)!r}")
    if system.get("scheduling-policy") not in ("LIFO", "FIFO") or system.get("collective-optimization") not in \
            ("baseline", "localBWAware") or not all(isinstance(system.get(k), int) for k in
                                                    ("endpoint-delay", "active-chunks-per-dimension",
                                                     "preferred-dataset-splits", "boost-mode", "roofline-enabled")):
        errors.append(f"system.json: {system}")
    if system.get("roofline-enabled") == 1:
        peak = (peak32 or 0) / 1e12
        if not math.isclose(system.get("peak-perf", 0), peak, rel_tol=1e-9) or not system.get("local-mem-bw", 0) > 0:
            errors.append(f"system.json: peak-perf {system.get('peak-perf')} TFLOP/s, the model's fp32 peak {peak}")
    print(f"astra-sim export of {path}: network {net if net is not None else '(PyYAML missing: not parsed)'}, "
          f"roofline {'on' if system.get('roofline-enabled') else 'off'}")

# astra-sim workload (--train, from the train suite's model): ASTRA-sim's text workload
# as Chakra's text converter parses it (line 1 a parallelism it knows, line 2 the row
# count, rows of 12 columns: name, trainable flag, then per phase an integer compute
# time, a collective it knows and an integer size, NONE with 0; the update time last).
# Content: each layer's collective bytes against the transformer's own arithmetic
# (Megatron's partitioning of the activations and parameters over tp, here and not
# from sextant's plan), and the compute against `sextant predict --train --json`: the
# forward, backward and optimizer totals of the step, within the whole-microsecond
# rounding of each row.
COLLECTIVES = {"NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL"}
cfg = dict(layers=3, hidden=64, heads=4, seq=32, vocab=256, micro_batch=2, global_batch=8, dp=2, tp=2)
train = ",".join(f"{k}={v}" for k, v in cfg.items())
with tempfile.TemporaryDirectory() as out:
    p = subprocess.run([sextant, "export", compute_model, "--to", "astra-sim", "-o", out, "--train", train],
                       capture_output=True, text=True)
    lines = open(f"{out}/workload.txt").read().splitlines() if p.returncode == 0 else []
    npus = (yaml.safe_load(open(f"{out}/network.yml")) if yaml and p.returncode == 0 else {}).get("npus_count")
if p.returncode != 0:
    errors.append(f"astra-sim workload export: exit {p.returncode}: {p.stderr.strip()}")
rows = {}
if lines:
    head = lines[0].split()
    if head[:1] != ["HYBRID_DATA_MODEL"] or head[1:] != ["model_parallel_NPU_group:", str(cfg["tp"])]:
        errors.append(f"workload line 1: {lines[0]!r}")
    if not lines[1].strip().isdigit() or int(lines[1]) != len(lines) - 2:
        errors.append(f"workload line 2: {lines[1]!r} for {len(lines) - 2} rows")
    if yaml and npus != [cfg["dp"] * cfg["tp"]]:
        errors.append(f"network.yml beside the workload: npus_count {npus}")
    for line in lines[2:]:
        col = line.split()
        ok = len(col) == 12 and all(c.lstrip("-").isdigit() for c in (col[1], col[2], col[4], col[5], col[7], col[8],
                                                                        col[10], col[11]))
        ok = ok and all(col[i] in COLLECTIVES and (col[i] == "NONE") == (int(col[i + 1]) == 0) for i in (3, 6, 9))
        ok = ok and all(int(col[i]) >= 0 for i in (2, 5, 8, 11))
        if not ok:
            errors.append(f"workload row {line!r}")
            continue
        rows[col[0]] = col
    H, T, s, tp = cfg["hidden"], cfg["micro_batch"] * cfg["seq"], 4, cfg["tp"]
    M = cfg["global_batch"] // (cfg["micro_batch"] * cfg["dp"])
    Hl, Fl, Vl = H // tp, 4 * H // tp, cfg["vocab"] // tp
    layer_params = Fl * H + Fl + H * Fl + Hl * H + 3 * H * Hl + 4 * H
    want = {"embedding": (M * T * H * s, 0, (cfg["seq"] + Vl) * H * s),
            "final": (M * 3 * T * s, M * T * H * s, (H * Vl + 2 * H) * s)}
    want.update({f"layer{i}": (M * 2 * T * H * s, M * 2 * T * H * s, layer_params * s) for i in range(cfg["layers"])})
    if list(rows) != ["embedding"] + [f"layer{i}" for i in range(cfg["layers"])] + ["final"]:
        errors.append(f"workload layers {list(rows)}")
    for name, (fwd, ig, wg) in want.items():
        col = rows.get(name)
        if col and (int(col[4]), int(col[7]), int(col[10])) != (fwd, ig, wg):
            errors.append(f"workload {name}: tp forward, tp backward, dp bytes {col[4]}, {col[7]}, {col[10]}; "
                          f"the model's arithmetic gives {fwd}, {ig}, {wg}")
    p = subprocess.run([sextant, "predict", compute_model, "--train", train, "--json", "-"], capture_output=True,
                       text=True)
    parts = json.loads(p.stdout[p.stdout.index("{"):])["prediction"]["breakdown_seconds"] if p.returncode == 0 else {}
    half_us = 0.5 * len(rows)  # each row's times are rounded to whole microseconds
    for what, columns in (("forward compute", (2,)), ("backward compute", (5, 8)), ("optimizer", (11,))):
        got = sum(int(c[i]) for c in rows.values() for i in columns)
        if what not in parts or abs(got - parts[what] * 1e6) > half_us * len(columns):
            errors.append(f"workload {what}: {got} us in all; predict --train says {parts.get(what, 0) * 1e6:.1f} us")
    print(f"astra-sim workload of {train}: {len(rows)} layers, compute "
          f"{sum(int(c[i]) for c in rows.values() for i in (2, 5, 8))} us per step")
bad = subprocess.run([sextant, "export", compute_model, "--to", "astra-sim", "-o", "/nonexistent/x", "--train",
                      train.replace("tp=2", "tp=1,pp=2")], capture_output=True, text=True)
if bad.returncode != 2 or "pp=1" not in bad.stderr:
    errors.append(f"workload with pp=2: exit {bad.returncode}: {bad.stderr.strip()}")
bad = subprocess.run([sextant, "export", compute_model, "--to", "astra-sim", "-o", "/nonexistent/x", "--train",
                      train + ",zero=3"], capture_output=True, text=True)
if bad.returncode != 2 or "zero=3" not in bad.stderr:
    errors.append(f"workload with zero=3: exit {bad.returncode}: {bad.stderr.strip()}")

# calculon (from a model file with comm and compute parts): the schema its System,
# Processor, Memory and Network classes accept (the keys each asserts, efficiencies in
# (0, 1], thresholds descending to 0, offsets given for collectives only), and the
# numbers against the model file read with h5py: the fp32 peak, the last memory
# level's bandwidth, the ping-pong's alpha and 1/beta, and each collective's Calculon
# slope, scalar x (1 - 1/p) / bandwidth per byte of the whole vector, equal to the
# model's large-message beta (a per-rank block being 1/p of the vector).
def curve(name, pairs):
    ok = isinstance(pairs, list) and pairs and all(isinstance(x, list) and len(x) == 2 for x in pairs)
    if not ok or not all(isinstance(t, number) and isinstance(e, number) and 0 < e <= 1 for t, e in pairs):
        errors.append(f"calculon {name}: {pairs!r}")
        return
    thresholds = [t for t, _ in pairs]
    if any(a <= b for a, b in zip(thresholds, thresholds[1:])) or thresholds[-1] != 0:
        errors.append(f"calculon {name}: thresholds {thresholds} not descending to 0")


with tempfile.NamedTemporaryFile(suffix=".json") as out:
    p = subprocess.run([sextant, "export", compute_model, "--to", "calculon", "-o", out.name,
                        "--memory-per-rank", "12G"], capture_output=True, text=True)
    calc = json.load(open(out.name)) if p.returncode == 0 else None
    if p.returncode != 0:
        errors.append(f"calculon export: exit {p.returncode}: {p.stderr.strip()}")
    bad = [subprocess.run([sextant, "export", compute_model, "--to", "calculon", "-o", out.name],
                          capture_output=True, text=True),
           subprocess.run([sextant, "export", model, "--to", "calculon", "-o", out.name, "--memory-per-rank", "1G"],
                          capture_output=True, text=True)]
    if bad[0].returncode != 2 or "--memory-per-rank" not in bad[0].stderr:
        errors.append(f"calculon without --memory-per-rank: exit {bad[0].returncode}: {bad[0].stderr.strip()}")
    if bad[1].returncode != 1 or "compute part" not in bad[1].stderr:
        errors.append(f"calculon of a model without compute: exit {bad[1].returncode}: {bad[1].stderr.strip()}")
if calc is not None:
    if set(calc) != {"matrix", "vector", "mem1", "mem2", "processing_mode", "networks"}:
        errors.append(f"calculon: keys {sorted(calc)}")
    with h5py.File(compute_model, "r") as m:
        peak = float(m["compute/ceilings"].attrs["peak_flops_float32"])
        dram = float(m["compute/ceilings/bandwidth"][-1])
        fits = {}
        for bench in ("pingpong", "allreduce", "allgather", "reduce_scatter"):
            dt = "byte" if bench == "pingpong" else "float32"
            if f"comm/world/{bench}/{dt}" in m:
                grp = m[f"comm/world/{bench}/{dt}"]
                g = grp[max(grp, key=lambda k: int(k[1:]))]
                fits[bench] = (int(g.attrs["ranks"]), float(g["alpha"][0]), float(g["beta"][-1]),
                               g.attrs.get("size_unit", "vector"))
    for unit in ("matrix", "vector"):
        proc = calc.get(unit, {}).get("float32", {})
        if not math.isclose(proc.get("tflops", 0), peak / 1e12, rel_tol=1e-9):
            errors.append(f"calculon {unit}: tflops {proc.get('tflops')}, the model's fp32 peak {peak / 1e12}")
        curve(unit, proc.get("gflops_efficiency"))
    for mem in ("mem1", "mem2"):
        if set(calc.get(mem, {})) != {"GiB", "GBps", "MB_efficiency"}:
            errors.append(f"calculon {mem}: keys {sorted(calc.get(mem, {}))}")
            continue
        curve(mem, calc[mem]["MB_efficiency"])
    if calc["mem1"].get("GiB") != 12 or not math.isclose(calc["mem1"].get("GBps", 0), dram / 1e9, rel_tol=1e-9):
        errors.append(f"calculon mem1: {calc['mem1']}, expected 12 GiB at {dram / 1e9} GB/s")
    if calc.get("processing_mode") not in ("roofline", "no_overlap"):
        errors.append(f"calculon processing_mode {calc.get('processing_mode')!r}")
    nets = calc.get("networks", [])
    net_keys = {"bandwidth", "efficiency", "size", "latency", "ops", "must_be_filled", "processor_usage"}
    if len(nets) != 1 or set(nets[0]) != net_keys:
        errors.append(f"calculon networks: {nets!r}")
    else:
        n = nets[0]
        ops = n["ops"]
        if set(ops) != {"p2p", "reduce_scatter", "all_gather", "all_reduce"} or ops["p2p"][1] is not None or \
                any(ops[k][1] is None or not ops[k][0] > 0 for k in ("reduce_scatter", "all_gather", "all_reduce")):
            errors.append(f"calculon ops: {ops}")
        # The ranges Calculon's Network class asserts (a schema, not an accuracy limit).
        if not (n["bandwidth"] > 0 and 0 < n["efficiency"] <= 1 and n["size"] >= 0 and 0 <= n["processor_usage"] < 1):
            errors.append(f"calculon network: {n}")
        _, alpha, beta, _ = fits["pingpong"]
        if not (math.isclose(n["latency"], alpha, rel_tol=1e-9) and math.isclose(n["bandwidth"], 1 / beta / 1e9,
                                                                                 rel_tol=1e-9)):
            errors.append(f"calculon network: latency {n['latency']}, bandwidth {n['bandwidth']}; the ping-pong "
                          f"says {alpha} s, {1 / beta / 1e9} GB/s")
        for key, bench in (("all_reduce", "allreduce"), ("all_gather", "allgather"),
                           ("reduce_scatter", "reduce_scatter")):
            if bench not in fits:
                continue
            ranks, _, b, unit = fits[bench]
            unit = unit.decode() if isinstance(unit, bytes) else unit
            want = b / (ranks if unit == "per_rank_block" else 1)
            scalar, offset = ops[key]
            got = scalar * (1 + offset / ranks) / (n["bandwidth"] * n["efficiency"] * 1e9)
            if not math.isclose(got, want, rel_tol=1e-9):
                errors.append(f"calculon {key}: slope {got} s/B at p={ranks}, the model's beta per vector byte {want}")
    print(f"calculon export of {compute_model}: matrix {calc['matrix']['float32']['tflops']:.4g} TFLOP/s, "
          f"{len(nets)} network(s), ops {nets[0]['ops'] if nets else None}")

for e in errors[:20]:
    print("FAIL:", e, file=sys.stderr)
print(f"exports: {len(errors)} problems")
sys.exit(1 if errors else 0)
