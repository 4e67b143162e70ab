#!/usr/bin/env python3
"""Seeded mutation fuzzing of every reader of sextant's files.

    fuzz_readers.py SEXTANT DATA_DIR [--seconds S] [--seed N] [--report-every K] [--files results|models|both]

DATA_DIR holds results/model pairs (the golden files of tests/data/golden). Each
iteration copies one file and damages it, either in its structure (through h5py: a
dataset or group deleted, numbers made NaN, Inf, negative, zero, huge or reversed, a
dataset retyped to text or to integers, reshaped, emptied or truncated, attributes
replaced by arrays, text or NaN) or in its bytes (the file cut short),
then feeds it to what reads that kind of file: `fit`, `merge` and `report` for results;
`predict` (a collective, an operator, a training step, with --json), `export` and
`report --model` for models; and the Python reader.

A run is correct when every command ends with exit status 0, 1 or 2; a non-zero status
comes with an error line that starts with "sextant"; nothing prints a Python traceback
or a sanitizer report; and whatever exits 0 from `predict --json` reports finite,
positive seconds (a damaged model that yields nan, inf or a negative time with exit 0 is
a silent wrong answer). Stops after --seconds; prints the tally and each failure with
the seed and iteration that reproduce it; exit status 1 on any failure.
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

import h5py
import numpy as np

import outcomes

def datasets_and_groups(f):
    ds, gs = [], []
    f.visititems(lambda n, o: (ds if isinstance(o, h5py.Dataset) else gs).append(n))
    return ds, gs


def damage_structure(path, rng):
    """One structural mutation of the HDF5 file at path; returns what was done."""
    with h5py.File(path, "a") as f:
        ds, gs = datasets_and_groups(f)
        kind = rng.choice(["delete", "delete_group", "value", "value", "retype_text", "retype_int", "reshape",
                           "empty", "truncate", "reverse", "attribute", "attribute"])
        if kind == "delete_group" and gs:
            g = rng.choice(gs)
            del f[g]
            return "deleted group " + g
        if kind == "attribute":
            objs = [f] + [f[g] for g in gs]
            obj = rng.choice(objs)
            if not obj.attrs:
                return "no attributes on " + obj.name
            name = rng.choice(list(obj.attrs))
            new = rng.choice([np.array([1.0, 2.0, 3.0]), "text", float("nan"), -1.0, 0, 1e308, np.int64(-7)])
            obj.attrs[name] = new
            return "attribute %s:%s = %r" % (obj.name, name, new)
        if not ds:
            return "no datasets"
        n = rng.choice(ds)
        d = f[n]
        if kind == "delete":
            del f[n]
            return "deleted " + n
        numeric = d.dtype.kind in "fiu"
        if kind == "value" and numeric and d.size:
            a = d[()].astype(float) if d.dtype.kind == "f" else d[()]
            v = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e300, -1e300])
            flat = a.reshape(-1)
            flat[rng.randrange(flat.size)] = v if d.dtype.kind == "f" else (-1 if v < 0 else 0)
            d[...] = a
            return "value %s in %s" % (v, n)
        if kind == "retype_text":
            shape = d.shape
            del f[n]
            f[n] = np.array(["x"] * max(1, int(np.prod(shape))), dtype="S1")
            return "retyped to text " + n
        if kind == "retype_int" and numeric:
            a = np.nan_to_num(np.asarray(d[()], dtype=float))
            del f[n]
            f[n] = np.asarray(np.round(np.clip(a * 1e9, -2.0 ** 62, 2.0 ** 62)), dtype=np.int64)
            return "retyped to int64 (x1e9) " + n
        if kind == "reshape":
            del f[n]
            f[n] = np.ones((3, 2, 2))
            return "reshaped " + n
        if kind == "empty":
            dt = d.dtype
            del f[n]
            f.create_dataset(n, shape=(0,), dtype=dt if dt.kind in "fiu" else "f8")
            return "emptied " + n
        if kind == "truncate" and d.ndim >= 1 and d.shape[0] > 1:
            a = d[()][: d.shape[0] // 2]
            del f[n]
            f[n] = a
            return "truncated " + n
        if kind == "reverse" and d.ndim >= 1 and d.shape[0] > 1:
            d[...] = d[()][::-1]
            return "reversed " + n
        del f[n]
        return "deleted " + n


def damage_bytes(path, rng):
    """The file cut short (an interrupted copy). Bytes flipped inside HDF5's own metadata
    are out of scope: the HDF5 library (and h5py over it) can crash on them before
    any reader of sextant's sees a value."""
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(rng.randrange(size))
        return "cut at %d of %d bytes" % (fh.tell(), size)


def finite_positive_seconds(doc):
    """Every 'seconds' number in a predict --json document, checked."""
    bad = []

    def walk(x, where):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("seconds", "total") and isinstance(v, (int, float)) and not isinstance(v, bool):
                    if not (math.isfinite(v) and v > 0):
                        bad.append("%s.%s = %r" % (where, k, v))
                walk(v, where + "." + k)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, "%s[%d]" % (where, i))
    walk(doc, "")
    return bad


class Fuzzer:
    def __init__(self, sextant, work, python):
        self.sextant, self.work, self.python = sextant, work, python
        self.tally = {"runs": 0, "exit 0": 0, "clear error": 0}
        self.failures = []

    def run(self, args, what, json_out=None):
        self.tally["runs"] += 1
        outcome, problem, _ = outcomes.run(args, timeout=120)
        if outcome == "exit 0" and json_out:
            try:
                with open(json_out) as fh:
                    bad = finite_positive_seconds(json.load(fh))
            except (OSError, ValueError) as e:
                bad = ["unreadable --json output: %s" % e]
            if bad:
                outcome, problem = "silent wrong", "exit 0 with " + "; ".join(bad[:3])
        if outcome in outcomes.FAILURES:
            self.failures.append("%s: %s: %s\n    %s" % (what, outcome, problem, " ".join(args)))
        else:
            self.tally[outcome] += 1

    def results_commands(self, r, clean_model, what, with_report):
        S, w = self.sextant, self.work
        self.run([S, "fit", r, "-o", os.path.join(w, "fit.model.h5")], what + " | fit")
        self.run([S, "merge", r, "-o", os.path.join(w, "merged.h5")], what + " | merge")
        if with_report:
            self.run([S, "report", r, "--model", clean_model, "-o", os.path.join(w, "report")], what + " | report")

    def model_commands(self, m, clean_results, what, with_report):
        S, w = self.sextant, self.work
        j = os.path.join(w, "p.json")
        for args in (["--op", "allreduce", "--bytes", "64K", "--ranks", "2"],
                     ["--op", "pingpong", "--bytes", "8"],
                     ["--op", "gemm", "--shape", "256,256,256"],
                     ["--op", "layernorm_forward", "--shape", "1024,1024"],
                     ["--train", "layers=2,hidden=64,heads=4,seq=32,micro_batch=2,global_batch=8"]):
            if os.path.exists(j):
                os.remove(j)
            self.run([S, "predict", m] + args + ["--json", j], what + " | predict " + " ".join(args), json_out=j)
        self.run([S, "export", m, "--to", "extrap", "-o", os.path.join(w, "x.json")], what + " | export extrap")
        self.run([S, "export", m, "--to", "astra-sim", "-o", os.path.join(w, "astra")], what + " | export astra-sim")
        if with_report:
            self.run([S, "report", clean_results, "--model", m, "-o", os.path.join(w, "report")], what + " | report")

    def python_reader(self, path, kind, what):
        code = ("import sys, sextant_files as sf\n"
                "try:\n"
                "    f = sf.open_%s(sys.argv[1])\n"
                "    f.fits() if hasattr(f, 'fits') else f.benchmarks()\n"
                "    [f.fit(*k) for k in f.fits()] if hasattr(f, 'fits') else [f.table(*k) for k in f.benchmarks()]\n"
                "except sf.SchemaError as e:\n"
                "    print('sextant reader: %%s' %% e, file=sys.stderr); sys.exit(1)\n" % kind)
        self.run([self.python, "-c", code, path], what + " | python reader")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sextant")
    ap.add_argument("data")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-every", type=int, default=8, help="run report (slow: matplotlib) every K iterations")
    ap.add_argument("--files", choices=["results", "models", "both"], default="both",
                    help="which kind of file to damage (and so which readers to feed)")
    a = ap.parse_args()
    pairs = []
    for name in sorted(os.listdir(a.data)):
        if name.endswith(".model.h5"):
            results = os.path.join(a.data, name[: -len(".model.h5")] + ".h5")
            if os.path.exists(results):
                pairs.append((results, os.path.join(a.data, name)))
    if not pairs:
        sys.exit("fuzz_readers: no results/model pairs in %s" % a.data)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="sextant-fuzz.")
    fz = Fuzzer(a.sextant, work, sys.executable)
    os.environ["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python") + \
        os.pathsep + os.environ.get("PYTHONPATH", "")
    start, it = time.monotonic(), 0
    try:
        while time.monotonic() - start < a.seconds:
            results, model = rng.choice(pairs)
            target_is_model = {"results": False, "models": True}.get(a.files, rng.random() < 0.5)
            src = model if target_is_model else results
            dst = os.path.join(work, "damaged.h5")
            shutil.copy(src, dst)
            how = damage_bytes(dst, rng) if rng.random() < 0.2 else damage_structure(dst, rng)
            what = "seed %d iteration %d: %s (%s)" % (a.seed, it, os.path.basename(src), how)
            with_report = it % a.report_every == 0
            if target_is_model:
                fz.model_commands(dst, results, what, with_report)
                fz.python_reader(dst, "model", what)
            else:
                fz.results_commands(dst, model, what, with_report)
                fz.python_reader(dst, "results", what)
            it += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t = fz.tally
    print("fuzz_readers: %d damaged files, %d runs in %.0f s: %d exit 0, %d clear errors, %d failures "
          "(crash, hang, traceback, sanitizer report, error without a line, silent wrong answer)"
          % (it, t["runs"], time.monotonic() - start, t["exit 0"], t["clear error"], len(fz.failures)))
    for f in fz.failures[:40]:
        print("FAIL: " + f)
    sys.exit(1 if fz.failures else 0)


if __name__ == "__main__":
    main()
