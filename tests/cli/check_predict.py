#!/usr/bin/env python3
"""`sextant predict` at the sizes a results file measured, against those measurements.

    check_predict.py SEXTANT RESULTS MODEL [--median PCT]

For every communication benchmark the file holds (world level, every dtype and rank
count), predicts every measured size through the command line and compares the time
with the stored median (per message for the streaming benchmarks: the stored median
is the time of a window of `window` messages). The measurements are the truth here:
the model was fitted to them, so a prediction at a measured size is the fit's residual
there. Limit: per benchmark, the median |error| over its sizes below 64 KiB is at
most --median (default 8%): five quick 2-rank runs on a shared 2-core VM gave
0.14-0.27% over all sizes, and 1.6-2.0% for the worst benchmark; a fit with
the wrong units, a lost segment or a wrong interpolation is off by far more. Sizes from
64 KiB up are printed, not judged (the quick sweep has one or two of them, and the
piecewise fit's last segment needs more points than that: errors up to -65% there are
the model's, reported by the held-out check). Every benchmark with a model must answer.
Reads the results with h5py alone and the predictions from `predict --json -`
(docs/file-formats.md).
"""
import argparse
import json
import statistics
import subprocess
import sys

import h5py

SMALL = 64 * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sextant")
    ap.add_argument("results")
    ap.add_argument("model")
    ap.add_argument("--median", type=float, default=8.0,
                    help="limit on each benchmark's median |error| below 64 KiB, percent")
    a = ap.parse_args()
    small, large, problems = [], [], []
    with h5py.File(a.results, "r") as f:
        world = f["comm/world"]
        for bench in world:
            for dtype in world[bench]:
                for pg in world[bench][dtype]:
                    g = world[bench][dtype][pg]
                    if bench == "barrier":  # no size: not a fitted curve
                        continue
                    ranks = int(g.attrs["ranks"])
                    sizes, medians = g["bytes"][()], g["median"][()]
                    streaming = bench in ("bandwidth", "bibandwidth", "multi_bandwidth")
                    per_message = float(g.attrs["window"]) if streaming else 1.0
                    for n, t in zip(sizes, medians):
                        if not t > 0:  # stored as not measured: nothing to compare
                            continue
                        r = subprocess.run([a.sextant, "predict", a.model, "--op", bench, "--bytes", str(int(n)),
                                            "--dtype", dtype, "--ranks", str(ranks), "--json", "-"],
                                           capture_output=True, text=True, timeout=60)
                        try:
                            pred = json.loads(r.stdout)["seconds"] if r.returncode == 0 else None
                        except (ValueError, KeyError):
                            pred = None
                        if not (isinstance(pred, float) and pred > 0):
                            problems.append(f"{bench} {dtype} {int(n)} B on {ranks}: no prediction "
                                            f"({(r.stderr or r.stdout).strip()[:120]})")
                            continue
                        err = 100 * (pred / (t / per_message) - 1)
                        (small if n < SMALL else large).append((abs(err), bench, dtype, int(n)))
    for name, rows in (("below 64 KiB", small), ("64 KiB and up", large)):
        if rows:
            worst = max(rows)
            print(f"{name}: {len(rows)} sizes, median |error| {statistics.median(r[0] for r in rows):.2f}%, "
                  f"max {worst[0]:.1f}% ({worst[1]} {worst[2]} {worst[3]} B)")
    if not small:
        problems.append("no measured size below 64 KiB to compare")
    by_benchmark = {}
    for err, bench, dtype, _ in small:
        by_benchmark.setdefault((bench, dtype), []).append(err)
    worst = max(((statistics.median(e), b) for b, e in by_benchmark.items()), default=(0, None))
    if worst[1]:
        print(f"worst benchmark below 64 KiB: {worst[1][0]} {worst[1][1]}, median |error| {worst[0]:.2f}%")
    problems += [f"{b} {d}: median |error| below 64 KiB {statistics.median(e):.2f}% > {a.median:g}%"
                 for (b, d), e in by_benchmark.items() if statistics.median(e) > a.median]
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
