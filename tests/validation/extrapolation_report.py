#!/usr/bin/env python3
"""Print held-out measurements at other rank counts next to a model's predictions.

extrapolation_report.py SEXTANT MODEL FITTED_RESULTS HELD_OUT_RESULTS [...]

MODEL was fitted on FITTED_RESULTS (one rank count or several: `run --ranks 2:4`); every
rank count of the held-out files that is not in it is predicted. Reads the results
files with h5py (docs/file-formats.md); predictions come from `sextant predict MODEL --op
OP --bytes N --ranks P --json -`. The accuracy is reported, not judged (extrapolation in
p is the scale work's to make hold); what is judged: every size measured at the largest
fitted rank count was measured at every held-out rank count, and `predict` answered
every one of them with a finite, positive time. Exit 1 otherwise. The last table is
the median |error| over sizes per benchmark and held-out rank count.
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
    meas = measurements(files[0])
    fitted = sorted({p for _, p in meas})
    problems = []
    for path in files[1:]:
        meas.update({k: v for k, v in measurements(path).items() if k[1] not in fitted})
    benches = sorted({b for b, _ in meas})
    rank_counts = sorted({p for _, p in meas})
    held_out = [p for p in rank_counts if p not in fitted]
    shown = [fitted[-1]] + held_out
    fitted_on = ", ".join(map(str, fitted))
    print(f"held-out extrapolation in p: measured median (us) per rank count; "
          f"'pred' = the prediction of the model fitted at p = {fitted_on}, err = pred/measured - 1")
    table = {}
    for bench in benches:
        sizes = meas.get((bench, fitted[-1]), meas[next(k for k in meas if k[0] == bench)])[0]
        head = f"  {bench:<15} {'bytes':>8}" + "".join(f"  {'p=' + str(p):>10}" for p in shown)
        head += "".join(f"  {'pred p=' + str(p):>11}  {'err':>6}" for p in held_out)
        print(head)
        errors = {p: [] for p in held_out}
        for i, n in enumerate(sizes):
            row = f"  {'':<15} {int(n):>8}"
            for p in shown:
                b, t = meas.get((bench, p), (np.array([]), np.array([])))
                j = np.nonzero(b == n)[0]
                row += f"  {t[j[0]] * 1e6:10.1f}" if len(j) else f"  {'-':>10}"
            for p in held_out:
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
        table[bench] = {p: np.median(e) * 100 for p, e in errors.items() if e}
    print(f"median |error| over sizes (%), fitted at p = {fitted_on}")
    print(f"  {'benchmark':<45}" + "".join(f"  {'p=' + str(p):>5}" for p in held_out))
    for bench, row in table.items():
        print(f"  {bench:<45}" + "".join(f"  {row[p]:5.0f}" if p in row else f"  {'-':>5}" for p in held_out))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
