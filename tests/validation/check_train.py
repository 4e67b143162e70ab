#!/usr/bin/env python3
"""Predicted vs measured training steps, over several train-suite results files.

    check_train.py LABEL=RESULTS.h5 [LABEL=RESULTS.h5 ...] [--min-configs N]
                   [--median PCT] [--max PCT] [--goal-median PCT] [--goal-max PCT]
    check_train.py --drift RESULTS.h5 [--drift-tolerance FRACTION] [--drift-of operator|comm|both]

The errors are computed here, from the stored per-step times (their median) and the
stored prediction, not taken from the file's own `error` attributes; a file whose
stored median or error disagrees with the recomputed one fails (the suite would be
reporting a number it did not measure).

Prints one row per configuration (network, step time measured and predicted, error,
the share of the step spent communicating or waiting for a neighbour) and the
summary over all of them; exits 1 when there are fewer configurations than asked,
any ran oversubscribed, a loss did not fall (a configuration's or a single-rank
baseline's), or the median or max |error| is over
its limit.

--drift prints a run's drift, the farther from 1 of its operator drift (its kernels
measured again after the sweep, over the model's time for them) and its comm drift
(the plans' collectives, likewise; `sextant run --suite train` records both), or the
one --drift-of names, and exits 0 when it is within the tolerance of 1, 3 when not, 1
when the file has none. A run whose network changed speed between its collectives'
measurement and its steps is no test of the model: the sweep script measures such a
network again (the kernels are measured again before each configuration's steps). The goals (--goal-median, --goal-max) are reported (met / not met), not
enforced: on a shared 2-core VM the median moved between 4.7% and 10.5% and the max
between 15% and 27% over eight runs of the same code (across the namespaces the delay
line shares its CPU with a rank, and under the training load it releases packets up to
ms late), so the enforced limits sit above the goals and catch a broken model.
"""
import argparse
import re
import statistics
import sys

import h5py
import numpy as np

# Stored and recomputed values must agree to rounding (both are doubles from the same
# samples; the median of an even count is the mean of the middle two either way).
AGREE = 1e-9


def rows_of(label, path):
    with h5py.File(path, "r") as f:
        if "train" not in f:
            sys.exit(f"{path}: no /train group: the train sweep did not run")
        for name, g in f["train"].items():
            a = g.attrs
            phases = g["measured_phases"][()]
            cols = a["measured_phases_columns"]
            cols = (cols.decode() if isinstance(cols, bytes) else cols).split(",")
            waiting = [cols.index(c) for c in ("tp_comm", "pp_comm", "dp_comm", "ep_comm", "pipeline_idle") if c in cols]
            total = cols.index("total")
            share = max(sum(r[i] for i in waiting) / r[total] for r in phases)
            loss = g["loss"][()]
            measured = float(np.median(g["step_time"][()]))
            predicted, predicted_models_only = float(a["predicted"]), float(a["predicted_models_only"])
            error = (predicted - measured) / measured
            stored = {"measured_median": (a["measured_median"], measured), "error": (a["error"], error)}
            disagree = [f"stored {k} {v[0]:.9g} vs recomputed {v[1]:.9g}" for k, v in stored.items()
                        if not abs(v[0] - v[1]) <= AGREE * max(abs(v[1]), 1e-12)]
            yield {
                "network": label, "config": name, "measured": measured, "disagree": disagree,
                "predicted": predicted, "error": error,
                "error_models_only": (predicted_models_only - measured) / measured,
                "comm_share": share, "oversubscribed": int(a["oversubscribed"]),
                "ranks": int(a["dp"] * a["tp"] * a["pp"]),
                "loss_falls": loss[-1] < loss[0],
            }


def baselines_of(label, path):
    """The single-rank baselines: (network, name, whether their loss fell)."""
    with h5py.File(path, "r") as f:
        for name, g in f.get("train_baseline", {}).items():
            loss = g["loss"][()]
            yield label, name, loss[-1] < loss[0]


def drift_of(path):
    """The run's drifts, {"operator": x, "comm": y}: what was measured again after the
    sweep over its time in the model (comm: absent on shared memory before it was
    recorded, and for runs without the isolated collectives)."""
    with h5py.File(path, "r") as f:
        a = f["train"].attrs if "train" in f else {}
        return {k: float(a[f"{k}_drift"]) for k in ("operator", "comm") if f"{k}_drift" in a}


def worst_drift(drifts):
    return max(drifts.values(), key=lambda d: abs(d - 1))


def main():
    if "--drift" in sys.argv[1:]:
        ap = argparse.ArgumentParser()
        ap.add_argument("--drift", required=True, metavar="RESULTS.h5")
        # 10%: undisturbed runs drift 0.96-1.02x (the instrument's spread), a co-tenant's
        # slowdown moved it by ~45% in the CI run that failed; a 10% change of speed moves
        # each error by about as much, inside the margin between the goals and the limits.
        # The comm drift is held to the same 10%: it picks which try is judged and limits
        # nothing. The namespace network's tries judged gave 0.92-1.00x (three runs), the
        # ones it rejected 1.15x and 1.32x while their kernels kept within 2-12%.
        ap.add_argument("--drift-tolerance", type=float, default=0.10)
        ap.add_argument("--drift-of", choices=("operator", "comm", "both"), default="both",
                        help="which drifts judge the run (both: the farther from 1)")
        args = ap.parse_args()
        drifts = drift_of(args.drift)
        if args.drift_of != "both":
            drifts = {k: v for k, v in drifts.items() if k == args.drift_of}
        if not drifts:
            print(f"{args.drift}: no {'' if args.drift_of == 'both' else args.drift_of + ' '}drift recorded")
            return 1
        drift = worst_drift(drifts)
        steady = abs(drift - 1) <= args.drift_tolerance
        parts = ", ".join(f"{k} {v:.3f}x" for k, v in drifts.items())
        print(f"{args.drift}: drift {drift:.3f}x ({parts}; {'within' if steady else 'outside'} "
              f"{100 * args.drift_tolerance:g}% of 1)")
        return 0 if steady else 3

    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="LABEL=RESULTS.h5")
    ap.add_argument("--min-configs", type=int, default=1)
    ap.add_argument("--median", type=float, default=10.0, help="limit on the median |error|, percent")
    ap.add_argument("--max", type=float, default=25.0, help="limit on the max |error|, percent")
    ap.add_argument("--goal-median", type=float, help="goal for the median |error|, percent (reported)")
    ap.add_argument("--goal-max", type=float, help="goal for the max |error|, percent (reported)")
    args = ap.parse_args()
    rows, baselines = [], []
    for run in args.runs:
        label, _, path = run.rpartition("=")
        if not label:
            ap.error(f"'{run}': expected LABEL=RESULTS.h5")
        rows.extend(rows_of(label, path))
        baselines.extend(baselines_of(label, path))
        drifts = drift_of(path)
        print(f"{label}: " + (", ".join(f"{k} drift {v:.3f}x" for k, v in drifts.items()) or "no drift recorded") +
              " (the kernels, and the collectives, measured again after the sweep, over their time in the model)")

    print(f"{'network':<26} {'configuration':<18} {'measured(ms)':>12} {'predicted(ms)':>13} {'error':>8} "
          f"{'op-models':>9} {'comm+wait':>9}")
    for r in rows:
        print(f"{r['network']:<26} {r['config']:<18} {r['measured'] * 1e3:12.3f} {r['predicted'] * 1e3:13.3f} "
              f"{100 * r['error']:7.1f}% {100 * r['error_models_only']:8.1f}% {100 * r['comm_share']:8.0f}%")
    errors = [100 * abs(r["error"]) for r in rows]
    median, worst = statistics.median(errors), max(errors)
    for label in dict.fromkeys(r["network"] for r in rows):
        e = [100 * abs(r["error"]) for r in rows if r["network"] == label]
        print(f"{label}: {len(e)} configurations, median |error| {statistics.median(e):.1f}%  max |error| {max(e):.1f}%")
    # Per strategy family ("pp_gpipe2.small" -> pp_gpipe, "dp_bf162.small" -> dp_bf16: the
    # name, its rank count and its size) and per model size, per network.
    family = lambda r: re.sub(r"%d\.[^.]*$" % r["ranks"], "", r["config"])
    for what, key in (("strategy", family), ("size", lambda r: r["config"].rpartition(".")[2])):
        for label in dict.fromkeys(r["network"] for r in rows):
            groups = {}
            for r in rows:
                if r["network"] == label:
                    groups.setdefault(key(r), []).append(100 * abs(r["error"]))
            print(f"{label}, by {what}: " + "; ".join(
                f"{g} {statistics.median(e):.1f}% / {max(e):.1f}%" for g, e in groups.items()) + " (median / max |error|)")
    print(f"all {len(rows)} configurations: median |error| {median:.1f}%  max |error| {worst:.1f}%")

    problems = []
    if len(rows) < args.min_configs:
        problems.append(f"{len(rows)} configurations, expected at least {args.min_configs}")
    problems += [f"{r['network']} {r['config']}: ran oversubscribed" for r in rows if r["oversubscribed"]]
    problems += [f"{r['network']} {r['config']}: the loss did not fall" for r in rows if not r["loss_falls"]]
    problems += [f"{label} {name} (single-rank baseline): the loss did not fall" for label, name, falls in baselines
                 if not falls]
    problems += [f"{r['network']} {r['config']}: {d}" for r in rows for d in r["disagree"]]
    if median > args.median:
        problems.append(f"median |error| {median:.1f}% > {args.median:g}%")
    if worst > args.max:
        problems.append(f"max |error| {worst:.1f}% > {args.max:g}%")
    for what, value, goal in (("median", median, args.goal_median), ("max", worst, args.goal_max)):
        if goal is not None:
            print(f"goal {what} |error| <= {goal:g}%: {'met' if value <= goal else 'NOT met'} ({value:.1f}%)")
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print(f"PASS: median |error| {median:.1f}% <= {args.median:g}%, max {worst:.1f}% <= {args.max:g}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
