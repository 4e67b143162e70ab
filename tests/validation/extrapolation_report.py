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

Where the files hold a forced pairwise alltoall and the ping-pong, a table of the rig's
load comes first: the pairwise alltoall's time per step (p - 1 exchanges of the size)
over the 2-rank ping-pong of that size. On a real network it is about 1; on namespace
hosts that share a few CPUs with the delay lines it grows with p and with the bytes in
flight, and beyond `LOAD_LIMIT` the cell measures the emulator more than the network:
the summary then also gives the median over the cells within it.
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


LOAD_LIMIT = 1.10  # below the 13% the extrapolation must meet, so the rig cannot decide it


def rig_load(meas):
    """{(ranks, bytes): pairwise alltoall time per step / ping-pong time}, or {}."""
    ping = meas.get(("pingpong", 2))
    pairwise = [b for b, _ in meas if b.startswith("alltoall@") and b.endswith("pairwise")]
    if not ping or not pairwise:
        return {}
    load = {}
    for (bench, p), (b, t) in meas.items():
        if bench != pairwise[0] or p < 2:
            continue
        for n, tn in zip(b, t):
            j = np.nonzero(ping[0] == n)[0]
            if len(j) and tn > 0 and ping[1][j[0]] > 0:
                load[(p, n)] = tn / ((p - 1) * ping[1][j[0]])
    return load


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
    load = rig_load(meas)
    if load:
        sizes_l = sorted({n for _, n in load})
        print(f"the rig's load: pairwise alltoall time per step / 2-rank ping-pong (cells over {LOAD_LIMIT} marked *)")
        print(f"  {'bytes':>8}" + "".join(f"  {'p=' + str(p):>6}" for p in rank_counts))
        for n in sizes_l:
            print(f"  {int(n):>8}" + "".join(
                f"  {load[(p, n)]:5.2f}{'*' if load[(p, n)] > LOAD_LIMIT else ' '}" if (p, n) in load else f"  {'-':>6}"
                for p in rank_counts))
    print(f"held-out extrapolation in p: measured median (us) per rank count; "
          f"'pred' = the prediction of the model fitted at p = {fitted_on}, err = pred/measured - 1")
    table = {}
    for bench in benches:
        sizes = meas.get((bench, fitted[-1]), meas[next(k for k in meas if k[0] == bench)])[0]
        head = f"  {bench:<15} {'bytes':>8}" + "".join(f"  {'p=' + str(p):>10}" for p in shown)
        head += "".join(f"  {'pred p=' + str(p):>11}  {'err':>6}" for p in held_out)
        print(head)
        errors = {p: [] for p in held_out}
        calm = {p: [] for p in held_out}  # the cells where the rig's load is within LOAD_LIMIT
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
                if load.get((p, n), np.inf) <= LOAD_LIMIT:
                    calm[p].append(abs(err))
                row += f"  {pred * 1e6:11.1f}  {err * 100:+5.0f}%"
            print(row)
        summary = ", ".join(f"p={p}: median |err| {np.median(e) * 100:.0f}%" for p, e in errors.items() if e)
        if summary:
            print(f"  {bench}: {summary}")
        table[bench] = {p: (np.median(e) * 100, np.median(calm[p]) * 100 if calm[p] else None)
                        for p, e in errors.items() if e}
    within = f" (over the cells within the rig's load limit {LOAD_LIMIT})" if load else ""
    print(f"median |error| over sizes (%), fitted at p = {fitted_on}: all sizes" + within)
    print(f"  {'benchmark':<50}" + "".join(f"  {'p=' + str(p):>9}" for p in held_out))
    for bench, row in table.items():
        cells = []
        for p in held_out:
            if p not in row:
                cells.append(f"  {'-':>9}")
                continue
            every, calm_err = row[p]
            cells.append(f"  {every:4.0f}" + (f" ({calm_err:2.0f})" if calm_err is not None else "     " if load else ""))
        print(f"  {bench:<50}" + "".join(cells))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
