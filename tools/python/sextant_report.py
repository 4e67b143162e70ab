#!/usr/bin/env python3
"""Figures and a summary from sextant results and model files (matplotlib).

    sextant_report.py RESULTS [--model MODEL] -o DIR

Writes into DIR, for what the files contain:
  comm_time.png/.svg    median time per size with its 95% CI, and the fitted model
  comm_busbw.png/.svg   bus bandwidth per size of the collectives
  roofline.png/.svg     compute kernels on a roofline per dtype: the model's ceilings
                        (/compute/ceilings), or without a model the peak_fma kernels
                        and the maximum and minimum of the triad sweep
  membw.png/.svg        working-set sweep (bandwidth vs working set) and the model's
                        memory levels
  train_prediction.png/.svg  training proxy: predicted vs measured step time, and the
                        predicted breakdown next to rank 0's measured phases
  summary.md            the fits, the compute ceilings and operator models, and the
                        training proxy's predictions as tables
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
import h5py  # noqa: E402
import sextant_files as sf  # noqa: E402

try:  # the C++ model (bindings/python), for the model curves: no second implementation here
    import sextant as cxx_model  # noqa: E402
except ImportError:
    cxx_model = None


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


def comm_time(results, predictor, out):
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
        if predictor is not None:
            try:
                xs = np.geomspace(b.min(), b.max(), 200)
                ys = [predictor.predict_comm(bench, x, level=key[0], dtype=key[2], ranks=key[3])["seconds"] * 1e6
                      for x in xs]
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


# ---------------------------------------------------------------- compute suite

def _str(v):
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)


def _num(v, default=float("nan")):
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _fmt_size(n):
    n = float(n)
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return "%.4g %s" % (n / scale, unit)
    return "%.0f B" % n


def _h5(path):
    """The file at path open read-only with h5py, or None."""
    try:
        return h5py.File(path, "r")
    except (OSError, TypeError):
        return None


def _col(group, name, text=False):
    """A 1-D dataset of group as a float array, or with text=True as a list of str; None
    where it is absent. SchemaError naming it when it holds the other kind."""
    ds = group.get(name)
    if not isinstance(ds, h5py.Dataset):
        return None
    if h5py.check_string_dtype(ds.dtype) is not None:
        if not text:
            raise sf.SchemaError("%s:%s: expected numbers, found text" % (ds.file.filename, ds.name))
        return [_str(x) for x in np.atleast_1d(ds[()])]
    if text:
        raise sf.SchemaError("%s:%s: expected text, found %s data" % (ds.file.filename, ds.name, ds.dtype))
    return np.atleast_1d(sf._numbers(ds))


def compute_kernels(path):
    """The kernels of /compute/kernels/<kernel>/<dtype> in the results file: a list of
    dicts kernel, dtype, family, pass, shape (list of str), flops, bytes, median, valid
    (arrays, one element per shape).  [] where the file has none."""
    out = []
    f = _h5(path)
    if f is None:
        return out
    with f:
        kg = f.get("compute/kernels")
        if not isinstance(kg, h5py.Group):
            return out
        for kernel in sorted(kg):
            if not isinstance(kg[kernel], h5py.Group):
                continue
            for dtype in sorted(kg[kernel]):
                g = kg[kernel][dtype]
                if not isinstance(g, h5py.Group):
                    continue
                flops, nbytes, med = _col(g, "flops"), _col(g, "bytes"), _col(g, "median")
                if flops is None or nbytes is None or med is None or not (len(flops) == len(nbytes) == len(med)):
                    continue
                valid = _col(g, "valid")
                shape = _col(g, "shape", text=True)
                out.append({
                    "kernel": kernel, "dtype": dtype,
                    "family": _str(g.attrs.get("family", "")) or "other",
                    "pass": _str(g.attrs.get("pass", "")),
                    "shape": shape if shape is not None and len(shape) == len(med) else [""] * len(med),
                    "flops": flops, "bytes": nbytes, "median": med,
                    "valid": valid if valid is not None and len(valid) == len(med) else np.ones(len(med)),
                })
    return out


def compute_sweeps(path):
    """{(kernel, dtype): (working_set, bandwidth)} of /compute/sweep/<kernel>/<dtype>
    (bytes, bytes/s, sorted by working set), plus "cache_bytes": the /compute attribute
    (a list, possibly empty)."""
    out = {}
    f = _h5(path)
    if f is None:
        return out
    with f:
        c = f.get("compute")
        if not isinstance(c, h5py.Group):
            return out
        cache = c.attrs.get("cache_bytes")
        out["cache_bytes"] = [float(x) for x in np.atleast_1d(cache)] if cache is not None else []
        sg = c.get("sweep")
        if not isinstance(sg, h5py.Group):
            return out
        for kernel in sorted(sg):
            if not isinstance(sg[kernel], h5py.Group):
                continue
            for dtype in sorted(sg[kernel]):
                g = sg[kernel][dtype]
                if not isinstance(g, h5py.Group):
                    continue
                ws, bw = _col(g, "working_set"), _col(g, "bandwidth")
                if ws is None or bw is None or len(ws) != len(bw):
                    continue
                ok = np.isfinite(ws) & np.isfinite(bw) & (ws > 0) & (bw > 0)
                order = np.argsort(ws[ok])
                if order.size:
                    out[(kernel, dtype)] = (ws[ok][order], bw[ok][order])
    return out


def compute_model(path):
    """The model file's /compute group: {"peak": {dtype: FLOP/s}, "levels": [(name,
    lo_bytes, hi_bytes, bytes/s), ...], "operators": [(op, dtype, attrs), ...],
    "model": text}, or None where it has none."""
    if path is None:
        return None
    f = _h5(path)
    if f is None:
        return None
    with f:
        c = f.get("compute")
        if not isinstance(c, h5py.Group):
            return None
        out = {"peak": {}, "levels": [], "operators": [], "model": _str(c.attrs.get("model", ""))}
        cg = c.get("ceilings")
        if isinstance(cg, h5py.Group):
            for k, v in cg.attrs.items():
                if k.startswith("peak_flops_") and _num(v) > 0:
                    out["peak"][k[len("peak_flops_"):]] = _num(v)
            level = _col(cg, "level", text=True)
            lo, hi, bw = (_col(cg, n) for n in ("lo_bytes", "hi_bytes", "bandwidth"))
            if bw is not None:
                n = len(bw)
                level = level if level is not None and len(level) == n else ["level %d" % i for i in range(n)]
                lo = lo if lo is not None and len(lo) == n else np.full(n, np.nan)
                hi = hi if hi is not None and len(hi) == n else np.full(n, np.nan)
                out["levels"] = [(level[i], lo[i], hi[i], bw[i]) for i in range(n) if bw[i] > 0]
        og = c.get("operators")
        if isinstance(og, h5py.Group):
            for op in sorted(og):
                if not isinstance(og[op], h5py.Group):
                    continue
                for dtype in sorted(og[op]):
                    g = og[op][dtype]
                    if isinstance(g, h5py.Group):
                        out["operators"].append((op, dtype, {k: sf._value(v) for k, v in g.attrs.items()}))
    return out


def compute_ceilings(kernels, sweeps, cmodel):
    """The roofs to draw: {"peak": {dtype: (FLOP/s, source)}, "levels": [(label,
    bytes/s)], "source": text}.  From the model's /compute/ceilings where it has them;
    a dtype without a model peak takes the best peak-family kernel (max flops/median),
    and without model levels the bandwidth roofs are the maximum and minimum of the
    triad sweep (else the dot sweep)."""
    peak, levels, source = {}, [], "results"
    if cmodel is not None:
        for d, v in cmodel["peak"].items():
            peak[d] = (v, "model")
        levels = [("%s %.0f GB/s" % (name, bw / 1e9), bw) for name, lo, hi, bw in cmodel["levels"]]
        if cmodel["peak"] or levels:
            source = "model"
    for k in kernels:
        if k["family"] != "peak" or k["dtype"] in peak and peak[k["dtype"]][1] == "model":
            continue
        ok = (k["median"] > 0) & np.isfinite(k["median"]) & (k["flops"] > 0)
        if ok.any():
            best = float(np.max(k["flops"][ok] / k["median"][ok]))
            if best > peak.get(k["dtype"], (0.0, ""))[0]:
                peak[k["dtype"]] = (best, k["kernel"])
    if not levels:
        for kernel in ("triad", "dot"):
            bws = [bw for key, v in sweeps.items() if key != "cache_bytes" and key[0] == kernel for bw in [v[1]]]
            if bws:
                allbw = np.concatenate(bws)
                levels = [("sweep max (%s) %.0f GB/s" % (kernel, allbw.max() / 1e9), float(allbw.max())),
                          ("sweep min (%s) %.0f GB/s" % (kernel, allbw.min() / 1e9), float(allbw.min()))]
                break
    return {"peak": peak, "levels": levels, "source": source}


_PASS_MARKERS = {"": "o", "forward": "^", "backward": "v", "update": "s"}


_OTHER_MARKERS = {}


def _pass_marker(p):
    """The scatter marker of a kernel pass (forward, backward, update, none, others)."""
    if p in _PASS_MARKERS:
        return _PASS_MARKERS[p]
    if p not in _OTHER_MARKERS:
        _OTHER_MARKERS[p] = "DPXh*<>"[len(_OTHER_MARKERS) % 7]
    return _OTHER_MARKERS[p]


def _line_angle(ax, fig, slope_decades=1.0):
    """Screen angle (degrees) of a line of slope slope_decades (decades of y per decade
    of x) on log-log axes whose limits are set."""
    pos = ax.get_position()
    w, h = fig.get_size_inches()
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    px_per_dec_x = pos.width * w / math.log10(x1 / x0)
    px_per_dec_y = pos.height * h / math.log10(y1 / y0)
    return math.degrees(math.atan2(slope_decades * px_per_dec_y, px_per_dec_x))


class _LogLayout:
    """Positions on log-log axes (limits and position set) in inches, for placing labels."""

    def __init__(self, ax, fig):
        pos = ax.get_position()
        w, h = fig.get_size_inches()
        self.w, self.h = pos.width * w, pos.height * h
        (self.x0, self.x1), (self.y0, self.y1) = np.log10(ax.get_xlim()), np.log10(ax.get_ylim())

    def inches(self, x, y):
        return ((math.log10(x) - self.x0) / (self.x1 - self.x0) * self.w,
                (math.log10(y) - self.y0) / (self.y1 - self.y0) * self.h)

    def data(self, X, Y):
        return (10 ** (self.x0 + X / self.w * (self.x1 - self.x0)),
                10 ** (self.y0 + Y / self.h * (self.y1 - self.y0)))

    def diagonal_label(self, slope, cap, nchars, fontsize, obstacles):
        """Where to write a label of nchars along the line y = slope * x (below y = cap):
        ((x, y) data anchor, above the line?, sample points of the label in inches), the
        candidate farthest from the obstacles (inch points), or None if none fits."""
        length = nchars * fontsize * 0.55 / 72
        height = fontsize * 1.25 / 72
        # the line in inches: from its entry into the axes to the cap (or the top)
        xa, ya = self.inches(10 ** self.x0, slope * 10 ** self.x0)
        d = np.array([1.0 / (self.x1 - self.x0) * self.w, 1.0 / (self.y1 - self.y0) * self.h])
        d /= np.hypot(*d)
        normal = np.array([-d[1], d[0]])
        ytop = self.inches(1, cap)[1] if cap else self.h
        ytop = min(ytop, self.h) - 0.05
        t_lo = max(0.0, (0.08 - ya) / d[1]) + 0.1
        t_hi = (ytop - ya) / d[1] - length - 0.05  # the label ends below the cap
        if t_hi < t_lo:
            return None
        obs = np.array(obstacles) if obstacles else np.zeros((0, 2))
        best = None
        for t in np.linspace(t_lo, t_hi, 24):
            base = np.array([xa, ya]) + t * d
            for above in (True, False):
                off = normal * (0.03 if above else -0.03)
                mid = off + normal * (height / 2 if above else -height / 2)
                samples = [tuple(base + mid + u * d) for u in np.linspace(0, length, 10)]
                if any(not (0 < X < self.w and 0 < Y < self.h) for X, Y in samples):
                    continue
                dist = np.min(np.hypot(*(obs[:, None, :] - np.array(samples)[None, :, :]).transpose(2, 0, 1))) \
                    if len(obs) else np.inf
                score = min(dist, 0.25) - 0.02 * t - (0.01 if not above else 0.0)
                if best is None or score > best[0]:
                    best = (score, self.data(*(base + off)), above, samples)
        return None if best is None else best[1:]


def roofline(results, model, out):
    """roofline.png/.svg: one log-log panel per dtype with compute kernels."""
    kernels = compute_kernels(results.path)
    points = {}
    for k in kernels:
        ok = (k["flops"] > 0) & (k["bytes"] > 0) & (k["median"] > 0) & np.isfinite(k["median"])
        if ok.any():
            points.setdefault(k["dtype"], []).append((k, ok))
    if not points:
        return []
    sweeps = compute_sweeps(results.path)
    cmodel = compute_model(model.path) if model is not None else None
    roofs = compute_ceilings(kernels, sweeps, cmodel)
    families = sorted({k["family"] for lst in points.values() for k, _ in lst})
    # tab10 without its grey (the roofs are grey), then tab20's lighter shades
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7] + \
        [c for i, c in enumerate(plt.get_cmap("tab20").colors) if i % 2 and i != 15]
    colour = {fam: palette[i % len(palette)] for i, fam in enumerate(families)}
    passes = sorted({k["pass"] for lst in points.values() for k, _ in lst})

    dtypes = sorted(points)
    n = len(dtypes)
    fig, axes = plt.subplots(1, n, figsize=(6.6 * n, 5.6), squeeze=False)
    fig.subplots_adjust(left=0.09 / n ** 0.5, right=1 - 0.02 / n ** 0.5, bottom=0.11, top=0.88, wspace=0.18)
    level_colours = plt.get_cmap("Greys")(np.linspace(0.95, 0.45, max(len(roofs["levels"]), 1)))
    invalid_seen = False
    for ax, dtype in zip(axes.flat, dtypes):
        ai_all, perf_all = [], []
        for k, ok in points[dtype]:
            ai = k["flops"][ok] / k["bytes"][ok]
            perf = k["flops"][ok] / k["median"][ok] / 1e9
            bad = k["valid"][ok] == 0
            ai_all.append(ai)
            perf_all.append(perf)
            ax.scatter(ai[~bad], perf[~bad], s=26, color=colour[k["family"]], marker=_pass_marker(k["pass"]),
                       edgecolors="k", linewidths=0.3, alpha=0.85, zorder=3)
            if bad.any():
                invalid_seen = True
                ax.scatter(ai[bad], perf[bad], s=40, color="red", marker="x", zorder=4)
        ai_all, perf_all = np.concatenate(ai_all), np.concatenate(perf_all)
        own_peak = roofs["peak"].get(dtype, (None, ""))[0]
        peaks = [v for v, _ in roofs["peak"].values()]
        bws = [bw for _, bw in roofs["levels"]]
        # limits: every point, every ceiling, and each roof's ridge point
        cap = own_peak if own_peak else (max(peaks) if peaks else None)
        ridges = [cap / bw for bw in bws] if cap else []
        xlo = min(ai_all.min(), min(ridges) if ridges else np.inf) / 4
        xhi = max(ai_all.max(), max(ridges) if ridges else 0) * 4
        ytop = max([perf_all.max()] + [p / 1e9 for p in peaks])
        ylo = min(perf_all.min(), ytop / 1e3) / 4
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(xlo, xhi)
        ax.set_ylim(ylo, ytop * 3)
        xs = np.geomspace(xlo, xhi, 400)
        # compute ceilings: this dtype's solid, the other precisions' dotted
        for d, (v, src) in sorted(roofs["peak"].items()):
            own = d == dtype
            ax.axhline(v / 1e9, color="k" if own else "0.45", lw=1.6 if own else 1.0, ls="-" if own else ":",
                       zorder=2)
            ax.text(xlo * 1.3, v / 1e9 * 1.06, "%s peak %.1f GFLOP/s%s" % (d, v / 1e9, "" if src == "model" else
                                                                        " (%s)" % src),
                    ha="left", va="bottom", fontsize=7.5, color="k" if own else "0.35", zorder=5)
        # bandwidth roofs, capped at this dtype's peak
        angle = _line_angle(ax, fig)
        place = _LogLayout(ax, fig)
        obstacles = [place.inches(a, p) for a, p in zip(ai_all, perf_all)]
        for v, _ in roofs["peak"].values():
            label_len = 34 * 7.5 * 0.55 / 72
            x0, y0 = place.inches(xlo * 1.3, v / 1e9 * 1.06)
            obstacles += [(x0 + t, y0 + 0.06) for t in np.linspace(0, label_len, 12)]
        for (label, bw), c in zip(roofs["levels"], level_colours):
            ys = xs * bw / 1e9
            if cap:
                ys = np.minimum(ys, cap / 1e9)
            ax.plot(xs, ys, "-", color=c, lw=1.2, zorder=2)
            spot = place.diagonal_label(bw / 1e9, cap / 1e9 if cap else None, len(label), 7, obstacles)
            if spot is not None:
                (lx, ly), above, samples = spot
                obstacles += samples
                ax.text(lx, ly, label, rotation=angle, rotation_mode="anchor", ha="left",
                        va="bottom" if above else "top", fontsize=7, color=c, zorder=5)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(dtype, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", alpha=0.1)
    handles = [plt.Line2D([], [], ls="", marker="o", color=colour[f], mec="k", mew=0.3, label=f) for f in families]
    handles += [plt.Line2D([], [], ls="", marker=_pass_marker(p), color="0.6", mec="k", mew=0.3,
                           label="pass: %s" % (p or "-")) for p in passes]
    if invalid_seen:
        handles.append(plt.Line2D([], [], ls="", marker="x", color="red", label="failed validation"))
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.005), ncol=min(len(handles), 7),
               fontsize=8, frameon=False)
    src = "model file ceilings" if roofs["source"] == "model" else \
        "ceilings from peak kernels and the working-set sweep" if roofs["peak"] or roofs["levels"] else "no ceilings"
    fig.suptitle("sextant compute roofline: %s, %s (%s)" % (results.meta.get("host", "?"),
                                                           results.meta.get("cpu_model", ""), src), fontsize=10)
    return _save(fig, out, "roofline")


def membw(results, model, out):
    """membw.png/.svg: bandwidth vs working set of the sweeps, with the model's levels."""
    sweeps = compute_sweeps(results.path)
    curves = {k: v for k, v in sweeps.items() if k != "cache_bytes"}
    if not curves:
        return []
    cmodel = compute_model(model.path) if model is not None else None
    levels = cmodel["levels"] if cmodel else []
    fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
    for (kernel, dtype), (ws, bw) in sorted(curves.items()):
        ax.plot(ws, bw / 1e9, "-o", ms=3, lw=1.2, label="%s %s" % (kernel, dtype), zorder=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    allws = np.concatenate([v[0] for v in curves.values()])
    allbw = np.concatenate([v[1] for v in curves.values()])
    lo_bw = min([allbw.min()] + [bw for *_, bw in levels])
    hi_bw = max([allbw.max()] + [bw for *_, bw in levels])
    ytop = hi_bw / 1e9 * 3.5
    ax.set_ylim(lo_bw / 1e9 / 1.8, ytop)
    x0, x1 = allws.min() / 1.5, allws.max() * 1.5
    for name, lo, hi, bw in levels:
        a = lo if np.isfinite(lo) and lo > 0 else x0
        b = hi if np.isfinite(hi) and hi > 0 else x1
        x0, x1 = min(x0, a / 1.2), max(x1, b * 1.2)
        ax.hlines(bw / 1e9, a, b, colors="0.2", lw=3.5, alpha=0.35, zorder=2)
        ax.text(math.sqrt(a * b), bw / 1e9 * 1.07, "%s %.0f GB/s" % (name, bw / 1e9), ha="center", va="bottom",
                fontsize=7.5, color="0.15", zorder=4, bbox=dict(fc="white", ec="none", alpha=0.7, pad=0.5))
    for i, c in enumerate(sweeps.get("cache_bytes", [])):
        if c > 0:
            ax.axvline(c, color="tab:gray", ls=":", lw=1, zorder=1)
            ax.text(c * 1.08, ytop / 1.12, "L%d cache\n%s" % (i + 1, _fmt_size(c)), ha="left", va="top",
                    fontsize=7, color="0.35")
            x1 = max(x1, c * 1.5)
    ax.set_xlim(x0, x1)
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if levels:
        handles.append(plt.Line2D([], [], color="0.2", lw=3.5, alpha=0.35))
        labels.append("model memory levels")
    ax.legend(handles, labels, fontsize=8, loc="lower left")
    ax.set_title("memory bandwidth vs working set (%s)" % results.meta.get("host", "?"), fontsize=10)
    return _save(fig, out, "membw")


# ---------------------------------------------------------------- training proxy

_PHASE_COLUMNS = "total,forward,backward,optimizer,tp_comm,pp_comm,dp_comm,pipeline_idle,other"  # files before ep_comm
# one colour per category, predicted breakdown names and measured phases matched by keyword
_CATEGORIES = [("forward", "forward", "tab:blue"), ("backward", "backward", "tab:orange"),
               ("optimizer", "optimizer", "tab:green"), ("tp comm", "tp", "tab:red"),
               ("pp comm", "pp", "tab:purple"), ("dp comm", "dp", "tab:brown"), ("ep comm", "ep", "tab:olive"),
               ("pipeline idle / bubble", "pipeline|bubble|idle", "tab:pink"), ("other", "other", "tab:gray")]


def _category(name):
    n = name.lower().replace("_", " ")
    for label, keys, _ in _CATEGORIES:
        for key in keys.split("|"):
            if n == key or n.startswith(key + " ") or key in ("pipeline", "bubble", "idle") and key in n:
                return label
    return "other"


def train_configs(path):
    """The /train/<config> groups of the results file: a list of dicts name, attrs,
    breakdown ([(name, seconds)]), phases ([(column, seconds)] of rank 0 or []),
    step_time (the measured steps' times), sorted by measured median.  [] where there
    are none."""
    out = []
    f = _h5(path)
    if f is None:
        return out
    with f:
        tg = f.get("train")
        if not isinstance(tg, h5py.Group):
            return out
        for name in sorted(tg):
            g = tg[name]
            if not isinstance(g, h5py.Group):
                continue
            a = {k: sf._value(v) for k, v in g.attrs.items()}
            if not (_num(a.get("measured_median")) > 0 and _num(a.get("predicted")) > 0):
                continue
            names, vals = _col(g, "predicted_breakdown_names", text=True), _col(g, "predicted_breakdown")
            breakdown = list(zip(names, vals)) if names is not None and vals is not None and \
                len(names) == len(vals) else []
            phases = []
            mp = g.get("measured_phases")
            if isinstance(mp, h5py.Dataset) and mp.ndim == 2 and mp.shape[0] > 0:
                cols = _str(mp.attrs.get("measured_phases_columns", a.get("measured_phases_columns", _PHASE_COLUMNS)))
                cols = [c.strip() for c in cols.split(",")]
                row = np.asarray(mp[0], dtype=float)
                if len(cols) == len(row):
                    phases = list(zip(cols, row))
            st = g.get("step_time")
            step_time = np.asarray(st[()], dtype=float) if isinstance(st, h5py.Dataset) and st.size else \
                np.array([_num(a["measured_median"])])
            out.append({"name": name, "attrs": a, "breakdown": breakdown, "phases": phases, "step_time": step_time})
    out.sort(key=lambda c: (_num(c["attrs"]["measured_median"]), c["name"]))
    return out


def _spread_labels(ys, min_gap):
    """Label positions (log10) near ys (log10), at least min_gap apart, in ys's order."""
    order = np.argsort(ys)
    pos = np.array(ys, dtype=float)[order]
    for _ in range(200):
        moved = False
        for i in range(1, len(pos)):
            gap = pos[i] - pos[i - 1]
            if gap < min_gap:
                push = (min_gap - gap) / 2 + 1e-9
                pos[i - 1] -= push
                pos[i] += push
                moved = True
        if not moved:
            break
    out = np.empty_like(pos)
    out[order] = pos
    return out


def train_prediction(results, out):
    """train_prediction.png/.svg: predicted vs measured step time, and breakdowns."""
    cfgs = train_configs(results.path)
    if not cfgs:
        return []
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 6.2), gridspec_kw={"width_ratios": [1, 1.35]},
                                 layout="constrained")
    meas = np.array([_num(c["attrs"]["measured_median"]) for c in cfgs]) * 1e3
    pred = np.array([_num(c["attrs"]["predicted"]) for c in cfgs]) * 1e3
    lo = np.array([_num(c["attrs"].get("measured_ci_lo"), m / 1e3) for c, m in zip(cfgs, meas)]) * 1e3
    hi = np.array([_num(c["attrs"].get("measured_ci_hi"), m / 1e3) for c, m in zip(cfgs, meas)]) * 1e3
    lo = np.where(np.isfinite(lo), np.minimum(lo, meas), meas)
    hi = np.where(np.isfinite(hi), np.maximum(hi, meas), meas)
    mo = np.array([_num(c["attrs"].get("predicted_models_only")) for c in cfgs]) * 1e3
    vmin = min(lo.min(), pred.min(), np.nanmin(np.where(mo > 0, mo, np.inf))) / 1.6
    vmax = max(hi.max(), pred.max()) * 1.6
    line = np.geomspace(vmin, vmax, 100)
    ax.fill_between(line, line / 1.25, line * 1.25, color="tab:orange", alpha=0.12, lw=0, label="±25%")
    ax.fill_between(line, line / 1.10, line * 1.10, color="tab:green", alpha=0.18, lw=0, label="±10%")
    ax.plot(line, line, "k-", lw=0.8, label="predicted = measured")

    def layout(a):
        parts = ["%s%s" % (k, a.get(k)) for k in ("dp", "tp", "pp") if int(_num(a.get(k), 1)) > 1]
        s = "x".join(parts) or "single"
        if int(_num(a.get("pp"), 1)) > 1 and a.get("schedule"):
            s += " " + str(a["schedule"])
        return s
    kinds = sorted({layout(c["attrs"]) for c in cfgs})
    kcol = {k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(kinds)}
    for k in kinds:
        sel = np.array([layout(c["attrs"]) == k for c in cfgs])
        ax.errorbar(meas[sel], pred[sel], xerr=[meas[sel] - lo[sel], hi[sel] - meas[sel]], fmt="o", ms=6,
                    color=kcol[k], mec="k", mew=0.4, capsize=3, lw=1, label=k, zorder=4)
    okmo = np.isfinite(mo) & (mo > 0)
    if okmo.any():
        ax.plot(meas[okmo], mo[okmo], "o", ms=5, mfc="none", mec="0.3", mew=0.8,
                label="predicted from models only", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(vmin, vmax)
    ax.set_ylim(vmin, vmax)
    ax.set_aspect("equal")
    # labels to the right of each point, spread vertically so that close ones do not collide
    ly = _spread_labels(np.log10(pred), math.log10(vmax / vmin) * 0.042)
    for c, x, y, yl in zip(cfgs, meas, pred, ly):
        ax.annotate(c["name"], (x, y), xytext=(x * 1.25, 10 ** yl), fontsize=7.5, va="center", ha="left",
                    arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5, shrinkA=0, shrinkB=3), zorder=5)
    ax.set_xlabel("measured step time (ms, median with 95% CI)")
    ax.set_ylabel("predicted step time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left")
    ax.set_title("training proxy: predicted vs measured step time", fontsize=10)

    # stacked bars, both normalised by rank 0's measured total; absolute ms above each pair
    cats = [label for label, _, _ in _CATEGORIES]
    ccol = {label: col for label, _, col in _CATEGORIES}
    x = np.arange(len(cfgs))
    w = 0.38
    used = set()
    totals = []
    for i, c in enumerate(cfgs):
        phases = dict(c["phases"])
        total = phases.get("total") or sum(v for k, v in c["phases"] if k != "total") or meas[i] / 1e3
        bars = []
        if c["breakdown"]:
            bars.append((i - w / 2, [(_category(n), v) for n, v in c["breakdown"]], "P"))
        if c["phases"]:
            bars.append((i + w / 2, [(_category(n), v) for n, v in c["phases"] if n != "total"], "M"))
        for xpos, parts, tag in bars:
            sums = {}
            for cat, v in parts:
                if np.isfinite(v) and v > 0:
                    sums[cat] = sums.get(cat, 0.0) + v
            bottom = 0.0
            for cat in cats:
                if cat in sums:
                    hgt = sums[cat] / total * 100
                    bx.bar(xpos, hgt, w * 0.95, bottom=bottom, color=ccol[cat], edgecolor="white", lw=0.4)
                    bottom += hgt
                    used.add(cat)
            bx.text(xpos, bottom + 1, tag, ha="center", va="bottom", fontsize=7)
        totals.append(total)
    bx.axhline(100, color="k", lw=0.6, ls="--")
    bx.set_xticks(x)
    bx.set_xticklabels(["%s\n%.3g ms" % (c["name"], t * 1e3) for c, t in zip(cfgs, totals)], rotation=30,
                       ha="right", rotation_mode="anchor", fontsize=8)
    ymax = bx.get_ylim()[1]
    bx.set_ylim(0, max(ymax, 110) * 1.08)
    bx.set_xlim(-0.6, len(cfgs) - 0.4)
    bx.set_ylabel("% of rank 0's measured step time")
    bx.set_title("P: predicted breakdown, M: measured phases of rank 0 (its total under the name)", fontsize=10)
    bx.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=ccol[cat]) for cat in cats if cat in used],
              labels=[cat for cat in cats if cat in used], fontsize=7.5, loc="upper left", ncol=2)
    bx.grid(True, axis="y", alpha=0.3)
    fig.suptitle("sextant training proxy: %s, %s ranks" % (results.meta.get("host", "?"),
                                                           results.meta.get("ranks", "?")), fontsize=11)
    return _save(fig, out, "train_prediction")


def _summary_compute(results, model):
    """The "## Compute" section: ceilings, and the model's operator fits ([] if none)."""
    kernels = compute_kernels(results.path)
    sweeps = compute_sweeps(results.path)
    cmodel = compute_model(model.path) if model is not None else None
    if not kernels and len(sweeps) <= 1 and cmodel is None:
        return []
    roofs = compute_ceilings(kernels, sweeps, cmodel)
    lines = ["", "## Compute", ""]
    if kernels:
        lines += ["%d kernel measurements (%s), %s." % (
            sum(len(k["median"]) for k in kernels), ", ".join(sorted({k["dtype"] for k in kernels})),
            "ceilings from the model file" if roofs["source"] == "model" else
            "ceilings from the peak kernels and the working-set sweep" if roofs["peak"] or roofs["levels"] else
            "no ceilings (no model file /compute group, no peak kernel, no sweep)"), ""]
    if cmodel is not None and cmodel["model"]:
        lines += ["model: `%s`" % cmodel["model"], ""]
    if roofs["peak"]:
        lines += ["| dtype | peak (GFLOP/s) | from |", "|---|---|---|"]
        for d, (v, src) in sorted(roofs["peak"].items()):
            lines.append("| %s | %.1f | %s |" % (d, v / 1e9, "model file" if src == "model" else
                                                  "kernel %s (max flops/median)" % src))
        lines.append("")
    if cmodel is not None and cmodel["levels"]:
        lines += ["| memory level | working set from | to | bandwidth (GB/s) |", "|---|---|---|---|"]
        for name, lo, hi, bw in cmodel["levels"]:
            lines.append("| %s | %s | %s | %.1f |" % (name, _fmt_size(lo) if np.isfinite(lo) else "-",
                                                      _fmt_size(hi) if np.isfinite(hi) else "-", bw / 1e9))
        lines.append("")
    elif roofs["levels"]:
        lines += ["| bandwidth roof | bandwidth (GB/s) |", "|---|---|"]
        for label, bw in roofs["levels"]:
            lines.append("| %s | %.1f |" % (label.rsplit(" ", 2)[0], bw / 1e9))
        lines.append("")
    if cmodel is not None and cmodel["operators"]:
        lines += ["### Operator models", "",
                  "| operator | dtype | e_compute | e_memory | t0 (us) | median rel. error (%) | shapes |",
                  "|---|---|---|---|---|---|---|"]
        for op, dtype, a in cmodel["operators"]:
            lines.append("| %s | %s | %.3f | %.3f | %.2f | %.1f | %s |" % (
                op, dtype, _num(a.get("e_compute")), _num(a.get("e_memory")), _num(a.get("t0")) * 1e6,
                _num(a.get("median_rel_error")) * 100, a.get("shapes", "-")))
        lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def _summary_train(results):
    """The "## Training proxy" table ([] if the results file has no /train)."""
    cfgs = train_configs(results.path)
    if not cfgs:
        return []
    lines = ["", "## Training proxy", "",
             "| config | measured (ms) | predicted (ms) | error (%) |", "|---|---|---|---|"]
    for c in sorted(cfgs, key=lambda c: c["name"]):
        a = c["attrs"]
        meas, pred = float(np.median(c["step_time"])), _num(a["predicted"])
        err = (pred - meas) / meas  # from the stored samples, not the file's own error
        lines.append("| %s | %.3f | %.3f | %+.1f |" % (c["name"], meas * 1e3, pred * 1e3, err * 100))
    return lines


def summary(results, model, out):
    lines = ["# sextant report", "", "results: `%s`" % results.path, ""]
    for k in ("host", "cpu_model", "mpi_library", "mpi_version", "kokkos_version", "date_utc", "ranks",
              "oversubscribed"):
        if k in results.meta:
            lines.append("- %s: %s" % (k, results.meta[k]))
    if model is not None and model.fits():
        lines += ["", "## Fits (`%s`)" % model.path, "",
                  "| benchmark | level | dtype | ranks | segments | alpha (us) | bandwidth (GB/s) |",
                  "|---|---|---|---|---|---|---|"]
        for key in model.fits():
            f = model.fit(*key)
            beta = f["beta"][-1]
            lines.append("| %s | %s | %s | %d | %d | %.3f | %s |" % (
                key[1], key[0], key[2], key[3], len(f["alpha"]), f["alpha"][0] * 1e6,
                "%.3f" % (1e-9 / beta) if beta > 0 else "-"))  # no slope fitted: no bandwidth, not 0
    lines += _summary_compute(results, model) + _summary_train(results)
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
        written = report(a.results, a.model, a.output)
    except (sf.SchemaError, OSError) as e:
        print("sextant report: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001: bad input is one line, not a traceback
        if os.environ.get("SEXTANT_DEBUG"):
            raise
        print("sextant report: %s (results %s%s): %s: %s (SEXTANT_DEBUG=1 shows where)" % (
            "cannot draw the report", a.results, ", model " + a.model if a.model else "", type(e).__name__, e),
            file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0


def report(results_path, model_path, out):
    """Draws every figure and the summary of the files into out; returns the paths."""
    results = sf.open_results(results_path)
    model = sf.open_model(model_path) if model_path else None
    predictor = None
    if model is not None and model.fits():
        if cxx_model is None:
            print("sextant report: the Python module `sextant` is not importable (built with pybind11, see README): "
                  "comm_time has no model curves", file=sys.stderr)
        else:
            try:
                predictor = cxx_model.Model(model_path)
            except ValueError as e:  # the C++ reader's one line: file, object, what is wrong
                raise sf.SchemaError(str(e)) from None
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise OSError("-o %s: cannot create the output folder: %s" % (out, e.strerror or e)) from None
    return (comm_time(results, predictor, out) + comm_busbw(results, out)
            + roofline(results, model, out) + membw(results, model, out)
            + train_prediction(results, out) + summary(results, model, out))


if __name__ == "__main__":
    sys.exit(main())
