#!/usr/bin/env python3
"""Figures and a summary from sextant results and model files (matplotlib).

    sextant_report.py RESULTS [--model MODEL] -o DIR

Writes into DIR, for what the files contain:
  comm_time.png/.svg    median time per size with its 95% CI, and the fitted model
  comm_busbw.png/.svg   bus bandwidth per size of the collectives
  summary.md            the fits as a table
Each figure is drawn by one function; figures whose data is absent are skipped.
"""

import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sextant_files as sf  # noqa: E402


def _save(fig, out, name):
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out, "%s.%s" % (name, ext))
        fig.savefig(p, dpi=120 if ext == "png" else None, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def _groups(results, level="world"):
    """One key per benchmark at this level: the first dtype and rank count."""
    seen = {}
    for key in results.benchmarks():
        lv, bench, dtype, ranks = key
        if lv == level and bench not in seen:
            seen[bench] = key
    return seen


def comm_time(results, model, out):
    groups = {b: k for b, k in _groups(results).items() if b != "barrier"}
    if not groups:
        return []
    n = len(groups)
    cols = 4
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), squeeze=False, layout="constrained")
    for ax, (bench, key) in zip(axes.flat, sorted(groups.items())):
        t = results.table(*key)
        b = np.maximum(t["bytes"].astype(float), 1)
        med = t["median"] * 1e6
        ax.fill_between(b, t["ci_lo"] * 1e6, t["ci_hi"] * 1e6, alpha=0.3, label="95% CI")
        ax.plot(b, med, "o", ms=3, label="median")
        if model is not None:
            try:
                xs = np.geomspace(b.min(), b.max(), 200)
                ys = [model.predict(bench, x, level=key[0], dtype=key[2], ranks=key[3])["seconds"] * 1e6 for x in xs]
                window = float(t["attrs"].get("window", 1))
                ax.plot(xs, np.array(ys) * window, "-", lw=1.2, label="model")
            except (KeyError, ValueError):
                pass
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        over = " (oversubscribed)" if int(t["attrs"].get("oversubscribed", 0)) else ""
        ax.set_title("%s %s p=%d%s" % (bench, key[2], key[3], over), fontsize=9)
        ax.set_xlabel("bytes")
        ax.set_ylabel("time per iteration (us)")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("sextant comm suite: %s, %s" % (results.meta.get("host", "?"), results.meta.get("mpi_library", "")))
    return _save(fig, out, "comm_time")


def comm_busbw(results, out):
    groups = {b: k for b, k in _groups(results).items()
              if results.table(*k)["attrs"].get("family") == "collective" and b not in ("barrier", "reduce_local")}
    if not groups:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for bench, key in sorted(groups.items()):
        t = results.table(*key)
        ok = t["bytes"] > 0
        ax.plot(t["bytes"][ok], t["busbw"][ok] / 1e9, "-o", ms=3, label=bench)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("bus bandwidth (nccl-tests factors)")
    return _save(fig, out, "comm_busbw")


def summary(results, model, out):
    lines = ["# sextant report", "", "results: `%s`" % results.path, ""]
    for k in ("host", "cpu_model", "mpi_library", "mpi_version", "kokkos_version", "date_utc", "ranks",
              "oversubscribed"):
        if k in results.meta:
            lines.append("- %s: %s" % (k, results.meta[k]))
    if model is not None:
        lines += ["", "## Fits (`%s`)" % model.path, "",
                  "| benchmark | level | dtype | ranks | segments | alpha (us) | bandwidth (GB/s) |",
                  "|---|---|---|---|---|---|---|"]
        for key in model.fits():
            f = model.fit(*key)
            beta = f["beta"][-1]
            lines.append("| %s | %s | %s | %d | %d | %.3f | %.3f |" % (
                key[1], key[0], key[2], key[3], len(f["alpha"]), f["alpha"][0] * 1e6,
                (1e-9 / beta) if beta > 0 else 0.0))
    p = os.path.join(out, "summary.md")
    with open(p, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return [p]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--model")
    ap.add_argument("-o", "--output", default="report")
    a = ap.parse_args(argv)
    try:
        results = sf.open_results(a.results)
        model = sf.open_model(a.model) if a.model else None
    except sf.SchemaError as e:
        print("sextant report: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(a.output, exist_ok=True)
    written = comm_time(results, model, a.output) + comm_busbw(results, a.output) + summary(results, model, a.output)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
