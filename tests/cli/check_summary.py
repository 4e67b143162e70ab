#!/usr/bin/env python3
"""The numbers of a report's summary.md against the files it was drawn from.

    check_summary.py SUMMARY.md MODEL.h5 [RESULTS.h5]

Reads the tables of summary.md and recomputes every number from the files with h5py:
the fits table (alpha of the first segment in us, 1/beta of the last in GB/s) from the
model's /comm groups; the memory levels (bandwidth) and peaks from /compute/ceilings;
with RESULTS, the training table from each configuration's stored step times (their
median) and prediction. Each printed number must equal the recomputed one to the
digits printed (half a unit of the last printed digit). Exit 1 on any difference, a
row that names nothing in the files, or a table that is missing.
"""
import re
import sys

import h5py
import numpy as np


def tables(text):
    """{header line: [row cells]} for every markdown table."""
    out, header = {}, None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = line
            out[header] = []
        elif not set(line) <= set("|-"):
            out[header].append(cells)
    return out


def agrees(printed, value):
    """Whether `printed` (e.g. '4.368', '+0.3') is value rounded to its digits ('-' is no value)."""
    try:
        number = float(printed)
    except ValueError:
        return False
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(number - value) <= 0.5 * 10 ** -decimals + 1e-12


def find(tabs, prefix):
    return next((rows for h, rows in tabs.items() if h.startswith(prefix)), None)


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    tabs = tables(open(sys.argv[1]).read())
    model = h5py.File(sys.argv[2], "r")
    problems, checked = [], 0

    def check(what, printed, value):
        nonlocal checked
        checked += 1
        if not agrees(printed, value):
            problems.append(f"{what}: summary says {printed}, the file gives {value:.6g}")

    fits = find(tabs, "| benchmark | level | dtype | ranks | segments |")
    if "comm" in model:
        if not fits:
            problems.append("no fits table although the model has /comm")
        for bench, level, dtype, ranks, segments, alpha, bw in fits or []:
            path = f"comm/{level}/{bench}/{dtype}/p{ranks}"
            if path not in model:
                problems.append(f"fits row {bench} {level} {dtype} {ranks}: no {path} in the model")
                continue
            g = model[path]
            check(f"{path} segments", segments, len(g["alpha"]))
            check(f"{path} alpha (us)", alpha, g["alpha"][0] * 1e6)
            beta = g["beta"][-1]
            if beta > 0:
                check(f"{path} bandwidth (GB/s)", bw, 1e-9 / beta)
            elif bw != "-":
                problems.append(f"{path}: no slope fitted, but the summary prints bandwidth {bw}")
    if "compute/ceilings" in model:
        c = model["compute/ceilings"]
        levels = find(tabs, "| memory level |")
        if not levels:
            problems.append("no memory-level table although the model has /compute/ceilings")
        names = [n.decode() if isinstance(n, bytes) else n for n in c["level"][()]]
        for name, _, _, bw in levels or []:
            if name not in names:
                problems.append(f"memory level {name}: not in the model")
                continue
            check(f"memory level {name} bandwidth (GB/s)", bw, c["bandwidth"][names.index(name)] / 1e9)
        for dtype, peak, _ in find(tabs, "| dtype | peak (GFLOP/s) |") or []:
            check(f"peak {dtype} (GFLOP/s)", peak, c.attrs["peak_flops_" + dtype] / 1e9)
    if len(sys.argv) == 4:
        results = h5py.File(sys.argv[3], "r")
        if "train" in results:
            rows = find(tabs, "| config | measured (ms) | predicted (ms) | error (%) |")
            if not rows:
                problems.append("no training table although the results have /train")
            for name, meas, pred, err in rows or []:
                g = results["train"][name]
                m = float(np.median(g["step_time"][()]))
                p = float(g.attrs["predicted"])
                check(f"train {name} measured (ms)", meas, m * 1e3)
                check(f"train {name} predicted (ms)", pred, p * 1e3)
                check(f"train {name} error (%)", err, 100 * (p - m) / m)
    for p in problems:
        print("FAIL:", p)
    print(f"summary.md: {checked} numbers checked against the files, {len(problems)} wrong")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
