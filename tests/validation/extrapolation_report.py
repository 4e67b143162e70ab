#!/usr/bin/env python3
"""Print held-out measurements at 3 and 4 ranks next to a 2-rank model's predictions.

extrapolation_report.py SEXTANT MODEL RESULTS_P2 RESULTS_P3 [RESULTS_P4 ...]

Reads the results files with h5py (docs/file-formats.md); predictions come from
`sextant predict MODEL --op OP --bytes N --ranks P --json -`. The accuracy is reported, not
judged (extrapolation in p is the scale work's to make hold); what is judged: every
size measured at 2 ranks was measured at every held-out rank count, and `predict`
answered every one of them with a finite, positive time. Exit 1 otherwise.
"""
import json
import subprocess
import sys

import h5py
import numpy as np



def measurements(path):
    """{(benchmark, ranks): (bytes, median)} for the world level."""
    out = {}
    with h5py.File(path, "r") as f:
        world = f["comm/world"]
        for bench in world:
            for dtype in world[bench]:
                for pg in world[bench][dtype]:
                    g = world[bench][dtype][pg]
                    out[(bench, int(g.attrs["ranks"]))] = (np.asarray(g["bytes"][()]), np.asarray(g["median"][()]))
    return out


def predict(sextant, model, op, nbytes, ranks):
    try:
        r = subprocess.run([sextant, "predict", model, "--op", op, "--bytes", str(int(nbytes)), "--ranks",
                            str(ranks), "--json", "-"], capture_output=True, text=True, timeout=30)
        seconds = json.loads(r.stdout)["seconds"] if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError):
        return None
    return seconds if isinstance(seconds, float) and seconds > 0 else None


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    sextant, model, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    meas = {}
    problems = []
    for path in files:
        meas.update(measurements(path))
    benches = sorted({b for b, _ in meas})
    rank_counts = sorted({p for _, p in meas})
    print("held-out extrapolation in p: measured median (us) per rank count; "
          "'pred' = the 2-rank model's prediction, err = pred/measured - 1")
    for bench in benches:
        sizes = meas.get((bench, 2), meas[next(k for k in meas if k[0] == bench)])[0]
        head = f"  {bench:<15} {'bytes':>8}" + "".join(f"  {'p=' + str(p):>10}" for p in rank_counts)
        head += "".join(f"  {'pred p=' + str(p):>11}  {'err':>6}" for p in rank_counts if p != 2)
        print(head)
        errors = {p: [] for p in rank_counts if p != 2}
        for i, n in enumerate(sizes):
            row = f"  {'':<15} {int(n):>8}"
            for p in rank_counts:
                b, t = meas.get((bench, p), (np.array([]), np.array([])))
                j = np.nonzero(b == n)[0]
                row += f"  {t[j[0]] * 1e6:10.1f}" if len(j) else f"  {'-':>10}"
            for p in rank_counts:
                if p == 2:
                    continue
                b, t = meas.get((bench, p), (np.array([]), np.array([])))
                j = np.nonzero(b == n)[0]
                pred = predict(sextant, model, bench, n, p)
                if not len(j):
                    problems.append(f"{bench} {int(n)} B: not measured at {p} ranks")
                elif not t[j[0]] > 0:  # stored as missing (window sync found no on-time start)
                    problems.append(f"{bench} {int(n)} B at {p} ranks: stored as not measured")
                    j = []
                if pred is None or not (np.isfinite(pred) and pred > 0):
                    problems.append(f"{bench} {int(n)} B at {p} ranks: sextant predict gave no time")
                if pred is None or not len(j):
                    row += f"  {'-':>11}  {'-':>6}"
                    continue
                err = pred / t[j[0]] - 1
                errors[p].append(abs(err))
                row += f"  {pred * 1e6:11.1f}  {err * 100:+5.0f}%"
            print(row)
        summary = ", ".join(f"p={p}: median |err| {np.median(e) * 100:.0f}%" for p, e in errors.items() if e)
        if summary:
            print(f"  {bench}: {summary}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
