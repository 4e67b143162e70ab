#!/usr/bin/env python3
"""Tests of tools/python/sextant_files.py against files written by sextant.

    SEXTANT_RESULTS=results.h5 SEXTANT_MODEL=model.h5 python3 tests/python/test_reader.py

SEXTANT_RESULTS: a results file from `sextant run --suite comm`; SEXTANT_MODEL:
the model `sextant fit` made of it.  Both use the layout
/comm/<level>/<benchmark>/<dtype>/p<ranks> (the model also /comm_algorithms/...
and /comm_loggp/<level>); files holding several rank counts, and models with a
multi-segment link and multi-range algorithm fits, are made here by copying and
rewriting groups.  Optional SEXTANT_BIN: the sextant binary, to compare
Model.predict with `sextant predict` (direct and algorithm views).  Needs numpy and h5py only
(unittest, no pytest).  Exit status: 0 all passed, 1 a test failed, 2 usage.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "..", "tools", "python"))
sys.path.insert(0, TOOLS)
import sextant_files as sf  # noqa: E402

RESULTS = os.environ.get("SEXTANT_RESULTS", "")
MODEL = os.environ.get("SEXTANT_MODEL", "")
SEXTANT_BIN = os.environ.get("SEXTANT_BIN", "")

PROVENANCE = ("host", "cpu_model", "mpi_library", "mpi_version", "kokkos_version", "kokkos_backend",
              "compiler", "git_revision", "command_line", "date_utc", "rank_placement")
PER_SIZE = ("bytes", "count", "data_bytes", "median", "ci_lo", "ci_hi", "min", "mean", "max", "p5",
            "p95", "p99", "cv", "algbw", "busbw", "valid", "total", "late", "wrong", "wrong_in_place",
            "clock_residual", "stop_reason")
NONBLOCKING = ("overlapped", "compute", "overlap_percent")
GROUP_ATTRS = ("benchmark", "family", "level", "dtype", "op", "sync", "ranks", "busbw_factor", "window",
               "oversubscribed")
MODEL_ATTRS = ("view", "ranks", "oversubscribed", "busbw_factor", "data_bytes_per_byte", "size_unit",
               "bytes_min", "bytes_max", "criterion")
ALGORITHM_ATTRS = ("view", "ranks", "size_unit", "gamma", "link", "link_ranks")
RANGES = ("lo_bytes", "hi_bytes", "algorithm", "calibration", "median_abs_error", "indistinguishable")
LOGGP_ATTRS = ("ranks", "L_plus_2o", "g", "G", "note")
# The algorithms of models/collectives.cpp, per op.
ALGORITHMS = {
    "allreduce": ("recursive_doubling", "rabenseifner", "ring"),
    "allgather": ("ring", "recursive_doubling"),
    "reduce_scatter": ("recursive_halving", "pairwise"),
    "bcast": ("binomial", "scatter_allgather"),
    "reduce": ("binomial", "rabenseifner"),
    "alltoall": ("bruck", "pairwise"),
    "gather": ("binomial",),
    "scatter": ("binomial",),
    "barrier": ("dissemination",),
}
SEGMENT = ("lo_bytes", "hi_bytes", "alpha", "beta", "alpha_ci_lo", "alpha_ci_hi", "beta_ci_lo",
           "beta_ci_hi", "r2", "rms_rel_residual", "points")


def raw_keys(f, top="comm"):
    """(level, benchmark, dtype, ranks) of every p<ranks> group under /<top>, read with h5py alone."""
    out = []
    if top not in f:
        return out
    for lv, lg in f[top].items():
        for bn, bg in lg.items():
            for dt, dg in bg.items():
                for name in dg:
                    if re.fullmatch(r"p[1-9][0-9]*", name):
                        out.append((lv, bn, dt, int(name[1:])))
    return sorted(out)


def raw_path(key, top="comm"):
    return "%s/%s/%s/%s/p%d" % ((top,) + tuple(key))


def raw_str(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def merged_copy(src, dst, extra_ranks, scale):
    """Copies src to dst and adds, next to every p<ranks> group, a copy at each
    rank count of extra_ranks with its "ranks" attribute changed and, for a
    model, alpha and beta (and, in /comm_algorithms, the calibration)
    multiplied by scale[ranks]: a file as if runs at several communicator sizes
    had been merged.  Also adds top-level groups (/comm_pt2pt, /compute) that
    readers must ignore."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        for top in ("comm", "comm_algorithms"):
            for key in raw_keys(f, top):
                dg = f["%s/%s/%s/%s" % ((top,) + key[:3])]
                for p in extra_ranks:
                    name = "p%d" % p
                    if name in dg:
                        continue
                    dg.copy(dg["p%d" % key[3]], name)
                    g = dg[name]
                    g.attrs["ranks"] = np.int64(p)
                    for ds in ("alpha", "beta", "calibration"):
                        if ds in g:
                            g[ds][...] = g[ds][()] * scale[p]
        # future top-level groups: the Python reader walks /comm only
        junk = f.create_group("comm_pt2pt/world/pingpong/byte/p2")
        junk.attrs["ranks"] = np.int64(2)
        junk.create_dataset("bytes", data=np.arange(3.0))
        f.create_group("compute/stream/float64/p1").create_dataset("bandwidth", data=np.ones(2))
        f.create_dataset("notes", data=np.arange(4))


def check_meta(test, meta, env, schema):
    test.assertEqual(meta.get("schema"), schema)
    test.assertEqual(meta.get("schema_version"), 1)
    test.assertIsInstance(meta.get("ranks"), int)
    test.assertGreaterEqual(meta["ranks"], 1)
    for name in PROVENANCE:
        test.assertIn(name, meta, "provenance field %r missing" % name)
        test.assertIsInstance(meta[name], str)
    test.assertIsInstance(env, dict)
    for k, v in env.items():
        test.assertIsInstance(k, str)
        test.assertIsInstance(v, str)


class TestResults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = sf.open_results(RESULTS)
        cls.raw = h5py.File(RESULTS, "r")

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.raw.close()

    def test_meta(self):
        check_meta(self, self.r.meta, self.r.environment, sf.RESULTS_SCHEMA)

    def test_benchmark_list(self):
        b = self.r.benchmarks()
        self.assertTrue(b, "no benchmark groups")
        self.assertEqual(b, raw_keys(self.raw))
        for key in b:
            self.assertEqual(len(key), 4)
            self.assertIsInstance(key[3], int)
            self.assertEqual(key[3], self.raw[raw_path(key)].attrs["ranks"])
            self.assertIn(key[3], self.r.ranks(*key[:3]))
        # every dtype group holds p<ranks> groups only, nothing of the old layout
        for lv, bn, dt, _ in b:
            for name, obj in self.raw["comm/%s/%s/%s" % (lv, bn, dt)].items():
                self.assertIsInstance(obj, h5py.Group, name)
                self.assertRegex(name, r"^p[1-9][0-9]*$")

    def test_tables(self):
        for key in self.r.benchmarks():
            with self.subTest(group=raw_path(key)):
                t = self.r.table(*key)
                a = t["attrs"]
                for name in GROUP_ATTRS:
                    self.assertIn(name, a)
                self.assertEqual((a["level"], a["benchmark"], a["dtype"], a["ranks"]), key)
                expected = PER_SIZE + (NONBLOCKING if a.get("nonblocking") else ())
                for name in expected:
                    self.assertIn(name, t)
                n = len(t["bytes"])
                self.assertGreater(n, 0)
                for name, v in t.items():
                    if name != "attrs":
                        self.assertEqual(v.shape, (n,), "dataset %s has length %d, bytes has %d"
                                         % (name, len(v), n))
                g = self.raw[raw_path(key)]
                np.testing.assert_array_equal(t["median"], g["median"][()])
                np.testing.assert_array_equal(t["bytes"], g["bytes"][()])
                self.assertTrue(all(isinstance(s, str) and s for s in t["stop_reason"]))
                self.assertTrue(np.all(t["valid"] + t["late"] == t["total"]))
                # ranks=None: the only rank count present
                if len(self.r.ranks(*key[:3])) == 1:
                    np.testing.assert_array_equal(self.r.table(*key[:3])["median"], t["median"])

    def test_samples(self):
        for key in self.r.benchmarks():
            with self.subTest(group=raw_path(key)):
                t = self.r.table(*key)
                ranks = key[3]
                g = self.raw[raw_path(key) + "/samples"]
                self.assertEqual(len(g), len(t["bytes"]))
                for i, total in enumerate(t["total"]):
                    s = self.r.samples(*key, i)
                    self.assertEqual(s.shape, (total, ranks))
                    np.testing.assert_array_equal(s, g["%03d" % i][()])
                    # a row (iteration) is valid when no rank's sample is NaN
                    self.assertEqual(int(np.isfinite(s).all(axis=1).sum()), t["valid"][i])
                np.testing.assert_array_equal(self.r.samples(*key, -1), g["%03d" % (len(t["bytes"]) - 1)][()])
                with self.assertRaises(IndexError):
                    self.r.samples(*key, len(t["bytes"]))
                if len(self.r.ranks(*key[:3])) == 1:
                    np.testing.assert_array_equal(self.r.samples(*key[:3], None, 0), g["000"][()])
                    np.testing.assert_array_equal(self.r.samples(*key[:3], size_index=0), g["000"][()])
                with self.assertRaises(TypeError):  # the pre-ranks call samples(level, bench, dtype, i)
                    self.r.samples(*key[:3], 0)

    def test_unknown_group(self):
        with self.assertRaises(KeyError):
            self.r.table("world", "no_such_benchmark", "byte")
        key = self.r.benchmarks()[0]
        with self.assertRaises(KeyError) as cm:
            self.r.table(*key[:3], key[3] + 1000)
        self.assertIn(str(key[3]), str(cm.exception))
        with self.assertRaises(ValueError):
            self.r.table(*key[:3], 0)


class TestMergedResults(unittest.TestCase):
    """A results file with each benchmark at several rank counts, plus unknown top-level groups."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sextant_py_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_several_rank_counts(self):
        with sf.open_results(RESULTS) as r:
            base = r.benchmarks()
        have = {k[3] for k in base}
        extra = [p for p in (3, 64) if p not in have]
        path = os.path.join(self.tmp, "merged.h5")
        merged_copy(RESULTS, path, extra, {p: 1.0 for p in extra})
        with sf.open_results(path) as r, h5py.File(path, "r") as raw:
            keys = r.benchmarks()
            self.assertEqual(keys, raw_keys(raw))
            self.assertEqual(len(keys), len(base) * (1 + len(extra)))
            self.assertFalse(any(k[1] == "stream" for k in keys))  # /compute ignored
            level, bench, dtype, p0 = base[0]
            self.assertEqual(r.ranks(level, bench, dtype), sorted([p0] + extra))
            with self.assertRaises(KeyError) as cm:
                r.table(level, bench, dtype)
            for p in [p0] + extra:
                self.assertIn(str(p), str(cm.exception))
            with self.assertRaises(KeyError):
                r.samples(level, bench, dtype, None, 0)
            for p in [p0] + extra:
                t = r.table(level, bench, dtype, p)
                self.assertEqual(t["attrs"]["ranks"], p)
                np.testing.assert_array_equal(t["median"], raw[raw_path((level, bench, dtype, p))]["median"][()])
                np.testing.assert_array_equal(r.samples(level, bench, dtype, p, 0),
                                              raw[raw_path((level, bench, dtype, p)) + "/samples/000"][()])
            p = subprocess.run([sys.executable, os.path.join(TOOLS, "sextant_files.py"), path],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)


def independent_prediction(g, n):
    """Prediction for n bytes straight from the raw datasets of a model group."""
    lo, hi = g["lo_bytes"][()], g["hi_bytes"][()]
    alpha, beta = g["alpha"][()], g["beta"][()]
    inside = [i for i in range(len(lo)) if lo[i] <= n <= hi[i]]
    if inside:
        k = inside[0]
    elif n < lo[0]:
        k = 0
    elif n > hi[-1]:
        k = len(lo) - 1
    else:  # in a gap: nearer neighbour on a log scale
        j = max(i for i in range(len(lo)) if hi[i] < n)
        left, right = hi[j], lo[j + 1]
        if left > 0:
            k = j if math.log(n / left) <= math.log(right / n) else j + 1
        else:
            k = j if n - left <= right - n else j + 1
    t, alpha_part = alpha[k] + beta[k] * n, alpha[k]
    if not inside and lo[0] <= n <= hi[-1] and hi[j] > 0:
        # In a gap: a power law through the two segments' ends (a straight line on
        # log-log axes), whose alpha part is the alphas weighted the same way.
        t_left, t_right = alpha[j] + beta[j] * hi[j], alpha[j + 1] + beta[j + 1] * lo[j + 1]
        w = math.log(n / hi[j]) / math.log(lo[j + 1] / hi[j])
        t = t_left * (t_right / t_left) ** w
        alpha_part = min(alpha[j] + w * (alpha[j + 1] - alpha[j]), t)
    a = g.attrs
    return {"seconds": t, "alpha_part": alpha_part, "beta_part": t - alpha_part, "segment": k,
            "busbw": n * a["data_bytes_per_byte"] / t * a["busbw_factor"] if t > 0 else 0.0,
            "extrapolated": bool(n < a["bytes_min"] or n > a["bytes_max"])}


def probe_sizes(g):
    """Sizes below, inside, at the ends of, between and above the segments."""
    lo, hi = g["lo_bytes"][()], g["hi_bytes"][()]
    sizes = {0.0, float(lo[0]) / 2, float(hi[-1]) * 4}
    for i in range(len(lo)):
        sizes.update({float(lo[i]), float(hi[i]), math.sqrt(max(lo[i], 1) * hi[i])})
        if i > 0:
            mid = math.sqrt(max(hi[i - 1], 1) * lo[i])
            sizes.update({mid * 0.98, mid * 1.02})
    return sorted(sizes)


def independent_range(lo, hi, n):
    """Index of the algorithm range for n bytes: the first holding n, else the
    nearest on a log1p scale (the first of equally near ones)."""
    for i in range(len(lo)):
        if lo[i] <= n <= hi[i]:
            return i
    d = [min(abs(math.log1p(n) - math.log1p(lo[i])), abs(math.log1p(n) - math.log1p(hi[i])))
         for i in range(len(lo))]
    return d.index(min(d))


def independent_algorithm_prediction(f, level, bench, dtype, algo_ranks, n, ranks):
    """The algorithm view from the raw groups of an open model file f: the
    algorithm fit at algo_ranks, the pingpong link at the level's smallest rank
    count, costed with sf.algorithm_cost (checked against closed forms below)."""
    a = f[raw_path((level, bench, dtype, algo_ranks), "comm_algorithms")]
    link_p = min(k[3] for k in raw_keys(f) if k[0] == level and k[1] == "pingpong")
    lg = f[raw_path((level, "pingpong", "byte", link_p))]
    lo, hi = a["lo_bytes"][()], a["hi_bytes"][()]
    r = independent_range(lo, hi, n)
    name = raw_str(a["algorithm"][r])
    cal = float(a["calibration"][r])
    op = bench[1:] if bench.startswith("i") and bench[1:] in ALGORITHMS else bench
    data = n * (ranks if raw_str(a.attrs["size_unit"]) == "per_rank_block" else 1)
    link = sf.Link(lg["lo_bytes"][()], lg["hi_bytes"][()], lg["alpha"][()], lg["beta"][()], a.attrs["gamma"])
    # Of the chosen algorithm and those the fitted p could not tell apart, the one
    # cheapest at ranks (the first of equal ones).
    ties = [t for t in raw_str(a["indistinguishable"][r]).split(",") if t]
    costs = [(sf.algorithm_cost(op, x, link, data, ranks), x) for x in [name] + ties if x in ALGORITHMS[op]]
    c, name = min(costs, key=lambda cx: cx[0].total())
    t = c.total() * cal
    factor = {"allreduce": 2.0 * (ranks - 1) / ranks}.get(
        op, (ranks - 1) / ranks if op in ("allgather", "reduce_scatter", "alltoall", "gather", "scatter") else 1.0)
    return {"seconds": t, "algorithm": name, "calibration": cal, "link_ranks": link_p,
            "alpha_part": c.alpha_part * cal, "beta_part": c.beta_part * cal, "gamma_part": c.gamma_part * cal,
            "busbw": data / t * factor if t > 0 else 0.0,
            "extrapolated": bool(n < lo[0] or n > hi[-1])}


def check_parts(test, p):
    """alpha + beta + gamma parts add up to seconds."""
    test.assertTrue(math.isclose(p["alpha_part"] + p["beta_part"] + p["gamma_part"], p["seconds"],
                                 rel_tol=1e-12, abs_tol=1e-300), p)
    if p["view"] == "direct":
        test.assertEqual(p["gamma_part"], 0.0)


class TestModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = sf.open_model(MODEL)
        cls.raw = h5py.File(MODEL, "r")

    @classmethod
    def tearDownClass(cls):
        cls.raw.close()

    def test_meta_and_source(self):
        check_meta(self, self.m.meta, self.m.environment, sf.MODEL_SCHEMA)
        self.assertIn("file", self.m.source)
        for name in PROVENANCE:
            self.assertIn(name, self.m.source)
        raw_file = self.raw["source"].attrs["file"]
        if isinstance(raw_file, bytes):
            raw_file = raw_file.decode()
        self.assertEqual(self.m.source["file"], raw_file)

    def test_fits(self):
        fits = self.m.fits()
        self.assertTrue(fits, "model has no fits")
        self.assertEqual(fits, raw_keys(self.raw))
        for key in fits:
            g = self.raw[raw_path(key)]
            for name in MODEL_ATTRS:
                self.assertIn(name, g.attrs)
            self.assertEqual(g.attrs["ranks"], key[3])
            lengths = {g[name].shape for name in SEGMENT}
            self.assertEqual(len(lengths), 1)
            f = self.m.fit(*key)
            self.assertEqual((f["level"], f["benchmark"], f["dtype"], f["ranks"]), key)
            np.testing.assert_array_equal(f["alpha"], g["alpha"][()])
            self.assertIn(f["attrs"]["size_unit"], ("vector", "per_rank_block"))

    def test_algorithm_fits(self):
        keys = self.m.algorithms()
        self.assertEqual(keys, raw_keys(self.raw, "comm_algorithms"))
        if not keys:
            self.skipTest("model has no algorithm fits")
        for key in keys:
            with self.subTest(group=raw_path(key, "comm_algorithms")):
                g = self.raw[raw_path(key, "comm_algorithms")]
                for name in ALGORITHM_ATTRS:
                    self.assertIn(name, g.attrs)
                a = self.m.algorithm_fit(*key)
                self.assertEqual((a["level"], a["benchmark"], a["dtype"], a["ranks"]), key)
                self.assertEqual(a["attrs"]["view"], "algorithm")
                self.assertEqual(a["attrs"]["link"], "pingpong")
                self.assertEqual(a["size_unit"], raw_str(g.attrs["size_unit"]))
                self.assertIn(a["size_unit"], ("vector", "per_rank_block"))
                # the direct fit of the same benchmark has the same size unit
                self.assertEqual(a["size_unit"], self.m.fit(*key)["attrs"]["size_unit"])
                self.assertEqual(a["gamma"], g.attrs["gamma"])
                self.assertEqual(a["link_ranks"], g.attrs["link_ranks"])
                self.assertEqual(a["link_ranks"], self.m.link(key[0])["ranks"])
                for name in ("lo_bytes", "hi_bytes", "calibration", "median_abs_error"):
                    np.testing.assert_array_equal(a[name], g[name][()])
                self.assertEqual(a["algorithm"], [raw_str(x) for x in g["algorithm"][()]])
                self.assertEqual([",".join(t) for t in a["indistinguishable"]],
                                 [raw_str(x) for x in g["indistinguishable"][()]])
                op = sf.base_op(key[1])
                for name, ties in zip(a["algorithm"], a["indistinguishable"]):
                    self.assertIn(name, sf.algorithms_for(op))
                    for t in ties:
                        self.assertIn(t, sf.algorithms_for(op))
                        self.assertNotEqual(t, name)
                self.assertTrue(np.all(a["lo_bytes"] <= a["hi_bytes"]))
                self.assertTrue(np.all(a["hi_bytes"][:-1] < a["lo_bytes"][1:]))
                self.assertTrue(np.all(a["calibration"] > 0))
        with self.assertRaises(KeyError):
            self.m.algorithm_fit("world", "pingpong", "byte")
        key = keys[0]
        with self.assertRaises(KeyError):
            self.m.algorithm_fit(*key[:3], key[3] + 1000)  # no nearest-rank fallback here

    def test_loggp(self):
        levels = sorted(self.raw["comm_loggp"]) if "comm_loggp" in self.raw else []
        self.assertEqual(sorted(self.m.loggp), levels)
        for level in levels:
            g = self.raw["comm_loggp/" + level]
            l = self.m.loggp[level]
            for name in LOGGP_ATTRS:
                self.assertIn(name, l)
            self.assertEqual(l["ranks"], g.attrs["ranks"])
            for name in ("L_plus_2o", "g", "G"):
                self.assertEqual(l[name], g.attrs[name])
            self.assertIsInstance(l["note"], str)
            # L + 2o is the pingpong alpha of the link
            self.assertEqual(l["L_plus_2o"], self.m.link(level)["alpha"][0])

    def test_predict_matches_raw(self):
        for level, bench, dtype, ranks in self.m.fits():
            g = self.raw[raw_path((level, bench, dtype, ranks))]
            for n in probe_sizes(g):
                with self.subTest(fit="%s/%s/%s/p%d" % (level, bench, dtype, ranks), bytes=n):
                    p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=ranks)
                    e = independent_prediction(g, n)
                    self.assertEqual(p["segment"], e["segment"])
                    self.assertEqual(p["extrapolated"], e["extrapolated"])
                    self.assertEqual(p["ranks"], ranks)
                    self.assertFalse(p["extrapolated_ranks"])
                    self.assertEqual(p["view"], "direct")
                    self.assertIsNone(p["algorithm"])
                    check_parts(self, p)
                    for k in ("seconds", "alpha_part", "beta_part", "busbw"):
                        # The parts to 1e-12 of the total (in a gap the beta part is a
                        # difference, computed in another order here).
                        scale = e["seconds"] if k.endswith("_part") else 0.0
                        self.assertTrue(math.isclose(p[k], e[k], rel_tol=1e-12, abs_tol=max(1e-12 * scale, 1e-300)),
                                        "%s: %r != %r" % (k, p[k], e[k]))

    def test_byte_fallback(self):
        untyped = [k for k in self.m.fits() if k[2] == "byte"]
        if not untyped:
            self.skipTest("no untyped benchmark in the model")
        level, bench, _, ranks = untyped[0]
        p = self.m.predict(bench, 8, level=level, ranks=ranks)  # default dtype float32
        self.assertEqual(p["dtype"], "byte")
        self.assertEqual(p["seconds"], self.m.predict(bench, 8, level=level, dtype="byte", ranks=ranks)["seconds"])
        self.assertEqual(self.m.fit(level, bench, "float32", ranks)["dtype"], "byte")

    def test_errors(self):
        with self.assertRaises(KeyError):
            self.m.predict("no_such_benchmark", 8)
        level, bench, dtype, ranks = self.m.fits()[0]
        with self.assertRaises(ValueError):
            self.m.predict(bench, -1, level=level, dtype=dtype, ranks=ranks)
        for bad in (0, -2, 2.5, "4", True):
            with self.assertRaises(ValueError):
                self.m.predict(bench, 8, level=level, dtype=dtype, ranks=bad)
        with self.assertRaises(KeyError):
            self.m.fit(level, bench, dtype, ranks + 1000)  # fit has no nearest-rank fallback

    def test_algorithm_view(self):
        """At rank counts not fitted, collectives with an algorithm fit answer from it."""
        keys = self.m.algorithms()
        if not keys or not any(k[1] == "pingpong" for k in self.m.fits()):
            self.skipTest("model has no algorithm fits or no pingpong link")
        fitted = {k[3] for k in self.m.fits()}
        for level, bench, dtype, ranks in keys:
            for asked in (3, 4, 6, 7, 64, 100):
                if asked in fitted:
                    continue
                for n in (0, 1, 8, 100, 8192, 100000, 1 << 20, 64 << 20):
                    with self.subTest(fit="%s/%s/%s/p%d" % (level, bench, dtype, ranks), ranks=asked, bytes=n):
                        p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
                        e = independent_algorithm_prediction(self.raw, level, bench, dtype, ranks, n, asked)
                        self.assertEqual(p["view"], "algorithm")
                        self.assertTrue(p["extrapolated_ranks"])
                        self.assertEqual(p["ranks"], ranks)
                        self.assertIsNone(p["segment"])
                        for k in ("algorithm", "link_ranks", "extrapolated", "calibration"):
                            self.assertEqual(p[k], e[k], k)
                        for k in ("seconds", "alpha_part", "beta_part", "gamma_part", "busbw"):
                            self.assertTrue(math.isclose(p[k], e[k], rel_tol=1e-12, abs_tol=1e-300),
                                            "%s: %r != %r" % (k, p[k], e[k]))
                        self.assertTrue(p["lo"] <= p["seconds"] <= p["hi"])
                        check_parts(self, p)

    def test_against_sextant_cli(self):
        if not (SEXTANT_BIN and os.access(SEXTANT_BIN, os.X_OK)):
            self.skipTest("set SEXTANT_BIN to compare with `sextant predict`")
        for level, bench, dtype, ranks in self.m.fits()[:6]:
            for n in (8, 8192, 1 << 20):
                with self.subTest(fit="%s/%s/%s/p%d" % (level, bench, dtype, ranks), bytes=n):
                    cli = cli_predict(self, MODEL, bench, n, level, dtype, ranks)
                    ours = self.m.predict(bench, n, level=level, dtype=dtype, ranks=ranks)
                    self.assertEqual(cli["view"], "direct")
                    check_against_cli(self, cli, ours)
        # rank counts not fitted: the algorithm view for collectives with one, else the
        # nearest direct fit
        fitted = {k[3] for k in self.m.fits()}
        for level, bench, dtype, _ in self.m.fits():
            for asked in (3, 6, 64):
                if asked in fitted:
                    continue
                for n in (8, 8192, 1 << 20, 16 << 20):
                    with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), ranks=asked, bytes=n):
                        cli = cli_predict(self, MODEL, bench, n, level, dtype, asked)
                        ours = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
                        check_against_cli(self, cli, ours)


class TestMergedModel(unittest.TestCase):
    """A model with each fit at several rank counts, plus unknown top-level groups."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sextant_py_")
        with h5py.File(MODEL, "r") as f:
            base = raw_keys(f)
        # one rank count already in the file (from the run), two more at 2x and 4x its size
        # (costs scaled 1.5x and 3x so that the fits differ)
        p0 = base[0][3]
        cls.base = [k for k in base if k[3] == p0]
        cls.p0, cls.p1, cls.p2 = p0, 2 * p0, 4 * p0
        cls.scale = {cls.p0: 1.0, cls.p1: 1.5, cls.p2: 3.0}
        cls.path = os.path.join(cls.tmp, "merged.model.h5")
        merged_copy(MODEL, cls.path, [cls.p1, cls.p2], cls.scale)
        cls.m = sf.open_model(cls.path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_fits_and_unknown_groups(self):
        with h5py.File(self.path, "r") as raw:
            self.assertIn("comm_pt2pt", raw)
            self.assertIn("compute", raw)
            self.assertEqual(self.m.fits(), raw_keys(raw))
        ranks = {k[3] for k in self.m.fits()}
        self.assertTrue({self.p0, self.p1, self.p2} <= ranks)
        for level, bench, dtype, _ in self.base:
            with self.assertRaises(KeyError) as cm:
                self.m.fit(level, bench, dtype)
            for p in (self.p0, self.p1, self.p2):
                self.assertIn(str(p), str(cm.exception))
            with self.assertRaises(KeyError):
                self.m.predict(bench, 8, level=level, dtype=dtype)  # ranks=None, several present
            for p in (self.p0, self.p1, self.p2):
                f = self.m.fit(level, bench, dtype, p)
                self.assertEqual(f["ranks"], p)
                self.assertEqual(f["attrs"]["ranks"], p)

    def check_choice(self, level, bench, dtype, n, asked, expect):
        p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
        self.assertEqual(p["ranks"], expect)
        self.assertEqual(p["extrapolated_ranks"], asked != expect)
        e = self.m.predict(bench, n, level=level, dtype=dtype, ranks=expect)
        self.assertEqual(p["seconds"], e["seconds"])
        self.assertFalse(e["extrapolated_ranks"])
        return p

    def has_algorithm_view(self, level, bench, dtype):
        return any(k[:3] == (level, bench, dtype) for k in self.m.algorithms())

    def test_nearest_rank_count(self):
        p0, p1, p2 = self.p0, self.p1, self.p2
        for level, bench, dtype, _ in self.base:
            if self.has_algorithm_view(level, bench, dtype):
                continue  # test_algorithm_view_nearest
            with self.subTest(fit="%s/%s/%s" % (level, bench, dtype)):
                base = self.m.predict(bench, 8192, level=level, dtype=dtype, ranks=p0)
                for p in (p1, p2):
                    q = self.m.predict(bench, 8192, level=level, dtype=dtype, ranks=p)
                    self.assertTrue(math.isclose(q["seconds"], base["seconds"] * self.scale[p], rel_tol=1e-12))
                self.check_choice(level, bench, dtype, 8192, 1, p0)          # below every fit
                self.check_choice(level, bench, dtype, 8192, p2 * 100, p2)   # above every fit
                self.check_choice(level, bench, dtype, 8192, p1 + 1, p1)
                self.check_choice(level, bench, dtype, 8192, p2 - 1, p2)
                if p0 % 2 == 0:
                    self.check_choice(level, bench, dtype, 8192, p0 + p0 // 2, p0)  # a tie: the smaller
                self.check_choice(level, bench, dtype, 8192, (p1 + p2) // 2, p1)  # a tie: the smaller

    def test_algorithm_view_nearest(self):
        """Not fitted at the rank count asked: the algorithm fit at the nearest rank
        count (its calibration), costed on the pingpong link of the smallest rank count."""
        p0, p1, p2 = self.p0, self.p1, self.p2
        link = self.m.link("world")
        if link is None:
            self.skipTest("no world pingpong")
        self.assertEqual(link["ranks"], p0)  # the smallest, not the scaled copies
        collectives = [k for k in self.base if self.has_algorithm_view(*k[:3])]
        if not collectives:
            self.skipTest("model has no algorithm fits")
        with h5py.File(self.path, "r") as raw:
            for level, bench, dtype, _ in collectives:
                for n in (8, 8192, 1 << 20):
                    base = self.m.predict(bench, n, level=level, dtype=dtype, ranks=p0)
                    self.assertEqual(base["view"], "direct")
                    for asked, expect in ((1, p0), (3, p0), (p1 + 1, p1), (p2 - 1, p2), (p2 * 100, p2),
                                          ((p1 + p2) // 2, p1)):  # the last a tie: the smaller
                        if asked in (p0, p1, p2):
                            continue
                        with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), ranks=asked, bytes=n):
                            p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
                            self.assertEqual(p["view"], "algorithm")
                            self.assertEqual(p["ranks"], expect)
                            self.assertEqual(p["link_ranks"], p0)
                            self.assertTrue(p["extrapolated_ranks"])
                            e = independent_algorithm_prediction(raw, level, bench, dtype, expect, n, asked)
                            self.assertEqual(p["algorithm"], e["algorithm"])
                            a0 = self.m.algorithm_fit(level, bench, dtype, p0)
                            r = independent_range(a0["lo_bytes"], a0["hi_bytes"], n)
                            self.assertTrue(math.isclose(p["calibration"], a0["calibration"][r] * self.scale[expect],
                                                         rel_tol=1e-12))
                            self.assertTrue(math.isclose(p["seconds"], e["seconds"], rel_tol=1e-12, abs_tol=1e-300))
                            check_parts(self, p)

    def test_byte_fallback_with_ranks(self):
        untyped = [k for k in self.base if k[2] == "byte"]
        if not untyped:
            self.skipTest("no untyped benchmark in the model")
        level, bench, _, _ = untyped[0]
        p = self.check_choice(level, bench, "float32", 8, self.p2 + 1, self.p2)
        self.assertEqual(p["dtype"], "byte")

    def test_summary(self):
        p = subprocess.run([sys.executable, os.path.join(TOOLS, "sextant_files.py"), self.path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(sf.MODEL_SCHEMA, p.stdout)

    def test_against_sextant_cli(self):
        if not (SEXTANT_BIN and os.access(SEXTANT_BIN, os.X_OK)):
            self.skipTest("set SEXTANT_BIN to compare with `sextant predict`")
        # no ties here: the CLI breaks them by the order it reads the groups in
        for level, bench, dtype, _ in self.base:
            for asked in (self.p0, self.p1, self.p2, self.p1 + 1, self.p2 * 10):
                with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), ranks=asked):
                    cli = cli_predict(self, self.path, bench, 8192, level, dtype, asked)
                    ours = self.m.predict(bench, 8192, level=level, dtype=dtype, ranks=asked)
                    check_against_cli(self, cli, ours)


_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_TIME = r"(-?[0-9.]+(?:e[+-]?[0-9]+)?) (ns|us|ms|s)"
_CLI_LINE = re.compile(r"\): %s  \[%s, %s\]  busbw (-?[0-9.]+) GB/s  \((\w+) view\)" % (_TIME, _TIME, _TIME))


def cli_predict(test, model, bench, n, level, dtype, ranks):
    """What `sextant predict` prints, parsed: seconds, lo, hi (seconds), busbw
    (bytes/s), view, and the two extrapolation flags."""
    out = subprocess.run([SEXTANT_BIN, "predict", model, "--op", bench, "--bytes", str(n),
                          "--level", level, "--dtype", dtype, "--ranks", str(ranks)],
                         capture_output=True, text=True, check=True).stdout
    m = _CLI_LINE.search(out)
    test.assertIsNotNone(m, out)
    g = m.groups()
    flags = [line for line in out.splitlines() if line.startswith("EXTRAPOLATION: ")]
    return {"seconds": float(g[0]) * _UNIT[g[1]], "lo": float(g[2]) * _UNIT[g[3]], "hi": float(g[4]) * _UNIT[g[5]],
            "busbw": float(g[6]) * 1e9, "view": g[7],
            "extrapolated": any("outside the fitted range" in x for x in flags),
            "extrapolated_ranks": any("outside the fitted range" not in x for x in flags),
            "algorithm": (re.search(r"algorithm view: (\w+) identified", out) or [None, None])[1],
            "output": out}


def check_against_cli(test, cli, ours):
    """Model.predict agrees with `sextant predict` (which prints 4 significant
    digits, busbw to 1 MB/s)."""
    msg = "%s\nours: %r" % (cli["output"], ours)
    test.assertEqual(cli["view"], ours["view"], msg)
    for k in ("seconds", "lo", "hi"):
        test.assertTrue(math.isclose(cli[k], ours[k], rel_tol=1e-3, abs_tol=1e-15), "%s: %s" % (k, msg))
    test.assertTrue(math.isclose(cli["busbw"], ours["busbw"], rel_tol=1e-3, abs_tol=0.51e6), "busbw: " + msg)
    test.assertEqual(cli["extrapolated"], ours["extrapolated"], msg)
    test.assertEqual(cli["extrapolated_ranks"], ours["extrapolated_ranks"], msg)
    if ours["view"] == "algorithm":
        test.assertEqual(cli["algorithm"], ours["algorithm"], msg)
    check_parts(test, ours)


def one_segment_link(alpha, beta, gamma):
    return sf.Link([0.0], [1e12], [alpha], [beta], gamma)


class TestAlgorithmCosts(unittest.TestCase):
    """The ported cost functions against DESIGN.md's closed forms (as
    tests/unit/test_collectives.cpp), the non-power-of-two steps, and the link
    segment chosen per step."""

    alpha, beta, gamma = 2e-6, 1e-9, 0.25e-9

    def cost(self, op, alg, n, p, link=None):
        c = sf.algorithm_cost(op, alg, link or one_segment_link(self.alpha, self.beta, self.gamma), n, p)
        self.assertTrue(math.isclose(c.alpha_part + c.beta_part + c.gamma_part, c.total(), rel_tol=1e-15))
        return c

    def near(self, got, want, what):
        self.assertTrue(math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15), "%s: %r != %r" % (what, got, want))

    def test_table(self):
        for op, names in ALGORITHMS.items():
            self.assertEqual(tuple(sf.algorithms_for(op)), names)
        self.assertEqual(sf.algorithms_for("pingpong"), [])
        with self.assertRaises(KeyError):
            sf.algorithm_cost("allreduce", "no_such_algorithm", one_segment_link(1, 1, 0), 8, 4)
        with self.assertRaises(ValueError):
            sf.algorithm_cost("allreduce", "ring", one_segment_link(1, 1, 0), 8, 0)

    def test_closed_forms_powers_of_two(self):
        a, b, g = self.alpha, self.beta, self.gamma
        n = float(1 << 20)
        for p in (2, 4, 8, 64):
            lg, f = math.log2(p), (p - 1) / p
            want = {
                ("allreduce", "ring"): 2 * (p - 1) * a + 2 * n * f * b + n * f * g,
                ("allreduce", "recursive_doubling"): lg * (a + n * b + n * g),
                ("allreduce", "rabenseifner"): 2 * lg * a + 2 * n * f * b + n * f * g,
                ("allgather", "ring"): (p - 1) * a + n * f * b,
                ("allgather", "recursive_doubling"): lg * a + n * f * b,
                ("reduce_scatter", "recursive_halving"): lg * a + n * f * (b + g),
                ("reduce_scatter", "pairwise"): (p - 1) * a + n * f * (b + g),
                ("bcast", "binomial"): lg * (a + n * b),
                ("bcast", "scatter_allgather"): 2 * lg * a + 2 * n * f * b,
                ("reduce", "binomial"): lg * (a + n * b + n * g),
                ("alltoall", "bruck"): lg * a + n / 2 * lg * b,
                ("alltoall", "pairwise"): (p - 1) * a + n * f * b,
                ("gather", "binomial"): lg * a + n * f * b,
                ("scatter", "binomial"): lg * a + n * f * b,
            }
            for (op, alg), t in want.items():
                self.near(self.cost(op, alg, n, p).total(), t, "%s %s p=%d" % (op, alg, p))
            self.near(self.cost("barrier", "dissemination", 0, p).total(), lg * a, "barrier p=%d" % p)
            # the parts separately, for the reductions
            c = self.cost("allreduce", "ring", n, p)
            self.near(c.alpha_part, 2 * (p - 1) * a, "ring alpha")
            self.near(c.beta_part, 2 * n * f * b, "ring beta")
            self.near(c.gamma_part, n * f * g, "ring gamma")
            c = self.cost("reduce", "rabenseifner", n, p)
            self.near(c.alpha_part, 2 * lg * a, "reduce rabenseifner alpha")
            self.near(c.beta_part, 2 * n * f * b, "reduce rabenseifner beta")
            self.near(c.gamma_part, n * f * g, "reduce rabenseifner gamma")

    def test_non_powers_of_two(self):
        a, b, g = self.alpha, self.beta, self.gamma
        n, p = float(6 << 16), 6  # floor(lg 6) = 2, ceil(lg 6) = 3
        want = {
            # two more steps folding the extra ranks in and out, and their reduction
            ("allreduce", "recursive_doubling"): 4 * (a + n * b) + 3 * n * g,
            ("allreduce", "rabenseifner"): 4 * a + 2 * (n / 2 + n / 4) * b + 2 * (a + n * b) + n * 5 / 6 * g,
            ("allreduce", "ring"): 10 * a + 10 * n / 6 * b + n * 5 / 6 * g,
            ("allgather", "ring"): 5 * a + 5 * n / 6 * b,
            # blocks of n/6: 1, 2, then the 2 left
            ("allgather", "recursive_doubling"): 3 * a + 5 * n / 6 * b,
            ("reduce_scatter", "recursive_halving"): 3 * a + (n / 2 + n / 4 + n / 8) * b + n * 5 / 6 * g,
            ("reduce_scatter", "pairwise"): 5 * a + 5 * n / 6 * (b + g),
            # the tree's critical path: rank 3 is two hops away (0 -> 2 as the root's
            # second send, 2 -> 3), so 2 latencies and 2 + 1 injections
            ("bcast", "binomial"): 2 * a + 3 * n * b,
            ("bcast", "scatter_allgather"): 3 * a + 7 * n / 8 * b + 3 * a + 5 * n / 6 * b,
            ("reduce", "binomial"): 3 * (a + n * b + n * g),
            ("reduce", "rabenseifner"): 6 * a + 2 * 7 * n / 8 * b + n * 5 / 6 * g,
            ("alltoall", "bruck"): 3 * a + 3 * n / 2 * b,
            ("alltoall", "pairwise"): 5 * a + 5 * n / 6 * b,
            ("gather", "binomial"): 3 * a + (4 + 2 + 1) * n / 6 * b,
            ("barrier", "dissemination"): 3 * a,
        }
        for (op, alg), t in want.items():
            self.near(self.cost(op, alg, n if op != "barrier" else 0, p).total(), t, "%s %s p=6" % (op, alg))
        # p = 3: the root's two sends overlap in flight: one latency, two injections
        self.near(self.cost("bcast", "binomial", n, 3).total(), a + 2 * n * b, "bcast binomial p=3")
        for alg in ALGORITHMS["allreduce"]:
            self.assertGreater(self.cost("allreduce", alg, 65536, 6).total(),
                               self.cost("allreduce", alg, 65536, 4).total(), alg)
        # one rank: nothing to do
        for op, names in ALGORITHMS.items():
            for alg in names:
                self.assertEqual(self.cost(op, alg, n, 1).total(), 0.0, "%s %s p=1" % (op, alg))

    def test_step_uses_the_segment_of_its_size(self):
        a1, b1, a2, b2 = 1e-6, 1e-9, 5e-6, 0.25e-9
        link = sf.Link([0, 4000], [1000, 1e12], [a1, a2], [b1, b2], 0.0)  # gap boundary: sqrt(1000*4000) = 2000
        # In the gap (1000, 4000): the time at the two ends, interpolated on log-log axes;
        # at 2000 bytes, halfway on a log scale, the geometric mean of the two ends.
        t1000, t4000 = a1 + 1000 * b1, a2 + 4000 * b2
        self.near(self.cost("allgather", "ring", 8 * 2000, 8, link).total(), 7 * math.sqrt(t1000 * t4000), "in the gap")
        self.near(self.cost("allgather", "ring", 8 * 500, 8, link).total(), 7 * (a1 + 500 * b1), "first segment")
        self.near(self.cost("allgather", "ring", 8 * 5000, 8, link).total(), 7 * (a2 + 5000 * b2), "second segment")
        self.near(self.cost("allreduce", "rabenseifner", 8000, 4, link).total(),
                  2 * (a2 + 4000 * b2) + 2 * math.sqrt(t1000 * t4000), "steps of two segments")
        self.near(self.cost("bcast", "binomial", 10, 4, link).total(), 2 * (a1 + 10 * b1), "first segment")
        self.near(self.cost("barrier", "dissemination", 0, 8, link).total(), 3 * a1, "zero bytes")

    def test_busbw_factor_and_base_op(self):
        self.assertEqual(sf.busbw_factor("allreduce", 8), 2.0 * 7 / 8)
        for op in ("allgather", "reduce_scatter", "alltoall", "gather", "scatter"):
            self.assertEqual(sf.busbw_factor(op, 4), 0.75, op)
        for op in ("bcast", "reduce", "barrier", "pingpong"):
            self.assertEqual(sf.busbw_factor(op, 4), 1.0, op)
        self.assertEqual(sf.base_op("iallreduce"), "allreduce")
        self.assertEqual(sf.base_op("ireduce_scatter"), "reduce_scatter")
        self.assertEqual(sf.base_op("allreduce"), "allreduce")
        self.assertEqual(sf.base_op("pingpong"), "pingpong")
        self.assertEqual(sf.base_op("inter_pingpong"), "inter_pingpong")


# A three-segment link with gaps, and algorithm ranges with gaps between them.
LINK = {"lo_bytes": [1, 2048, 131072], "hi_bytes": [1024, 65536, 16 << 20],
        "alpha": [1e-6, 3e-6, 2e-5], "beta": [1e-10, 2e-10, 8e-11]}
RANGE_BOUNDS = [(4, 64), (256, 4096), (16384, 262144), (1 << 20, 4 << 20)]
CALIBRATION = [1.1, 0.8, 1.5, 1.25]
MEDIAN_ERROR = [0.1, 0.3, 0.05, 0.2]


def synthetic_model(src, dst):
    """Copies the model src to dst with the level's pingpong link made a
    three-segment fit, and every algorithm fit made several ranges with gaps
    that use, between them, every algorithm of the op; a barrier direct and
    algorithm fit is added if missing.  Returns the link's rank count."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        link_key = min((k for k in raw_keys(f) if k[:2] == ("world", "pingpong")), key=lambda k: k[3])
        g = f[raw_path(link_key)]
        k = len(LINK["lo_bytes"])
        values = dict(LINK, alpha_ci_lo=[x * 0.9 for x in LINK["alpha"]], alpha_ci_hi=[x * 1.1 for x in LINK["alpha"]],
                      beta_ci_lo=[x * 0.95 for x in LINK["beta"]], beta_ci_hi=[x * 1.05 for x in LINK["beta"]],
                      r2=[0.99] * k, rms_rel_residual=[0.02, 0.05, 0.15], points=[4] * k)
        for name in SEGMENT:
            del g[name]
            g.create_dataset(name, data=np.asarray(values[name], dtype=float))
        p = link_key[3]
        if not any(kk[:2] == ("world", "barrier") for kk in raw_keys(f)):
            f.copy(g, "comm/world/barrier/byte/p%d" % p)
            f["comm/world/barrier/byte/p%d" % p].attrs["size_unit"] = "vector"
            a = f.create_group("comm_algorithms/world/barrier/byte/p%d" % p)
            a.attrs.update({"view": "algorithm", "ranks": np.int64(p), "size_unit": "vector",
                            "gamma": 0.0, "link": "pingpong", "link_ranks": np.int64(p)})
            for name in RANGES:
                a.create_dataset(name, data=np.zeros(1))
        for key in raw_keys(f, "comm_algorithms"):
            a = f[raw_path(key, "comm_algorithms")]
            op = key[1][1:] if key[1].startswith("i") and key[1][1:] in ALGORITHMS else key[1]
            names = ALGORITHMS[op]
            m = min(len(RANGE_BOUNDS), len(names) + 1)
            bounds = RANGE_BOUNDS[:m] if op != "barrier" else [(0, 0)]
            algs = [names[i % len(names)] for i in range(len(bounds))]
            ties = ["" if i % 2 == 0 or len(names) < 2 else [x for x in names if x != algs[i]][0]
                    for i in range(len(bounds))]
            cols = {"lo_bytes": [float(b[0]) for b in bounds], "hi_bytes": [float(b[1]) for b in bounds],
                    "calibration": CALIBRATION[:len(bounds)], "median_abs_error": MEDIAN_ERROR[:len(bounds)]}
            for name in RANGES:
                del a[name]
            for name, v in cols.items():
                a.create_dataset(name, data=np.asarray(v, dtype=float))
            a.create_dataset("algorithm", data=algs, dtype=h5py.string_dtype())
            a.create_dataset("indistinguishable", data=ties, dtype=h5py.string_dtype())
            if op in ("allreduce", "reduce_scatter", "reduce"):
                a.attrs["gamma"] = 0.5e-9
    return p


SYNTHETIC_SIZES = (0, 2, 4, 40, 64, 100, 256, 1000, 3000, 4096, 8000, 16384, 100000, 262144, 500000,
                   1 << 20, 4 << 20, 64 << 20)


class TestSyntheticAlgorithmView(unittest.TestCase):
    """The algorithm view on a model with a three-segment link and multi-range
    algorithm fits: every algorithm, range gaps, step sizes in every segment and
    gap of the link, against the independent computation and `sextant predict`."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sextant_py_")
        cls.path = os.path.join(cls.tmp, "synthetic.model.h5")
        cls.link_ranks = synthetic_model(MODEL, cls.path)
        cls.m = sf.open_model(cls.path)
        cls.raw = h5py.File(cls.path, "r")

    @classmethod
    def tearDownClass(cls):
        cls.raw.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def not_fitted(self, candidates):
        fitted = {k[3] for k in self.m.fits()}
        return [p for p in candidates if p not in fitted]

    def test_every_algorithm_is_used(self):
        used = {(sf.base_op(k[1]), name) for k in self.m.algorithms() for name in self.m.algorithm_fit(*k)["algorithm"]}
        ops = {sf.base_op(k[1]) for k in self.m.algorithms()}
        for op in ops:
            for name in ALGORITHMS[op]:
                self.assertIn((op, name), used)
        self.assertEqual(self.m.link("world")["ranks"], self.link_ranks)
        self.assertEqual(len(self.m.link("world")["alpha"]), 3)

    def test_against_independent(self):
        seen = set()
        for level, bench, dtype, ranks in self.m.algorithms():
            for asked in self.not_fitted((3, 4, 5, 6, 7, 8, 12, 64, 1000)):
                for n in SYNTHETIC_SIZES:
                    with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), ranks=asked, bytes=n):
                        p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
                        e = independent_algorithm_prediction(self.raw, level, bench, dtype, ranks, n, asked)
                        self.assertEqual(p["view"], "algorithm")
                        for k in ("algorithm", "calibration", "link_ranks", "extrapolated"):
                            self.assertEqual(p[k], e[k], k)
                        for k in ("seconds", "alpha_part", "beta_part", "gamma_part", "busbw"):
                            self.assertTrue(math.isclose(p[k], e[k], rel_tol=1e-12, abs_tol=1e-300),
                                            "%s: %r != %r" % (k, p[k], e[k]))
                        check_parts(self, p)
                        seen.add((sf.base_op(bench), p["algorithm"]))
                        if sf.base_op(bench) in ("allreduce", "reduce_scatter", "reduce") and n > 0 and asked > 1:
                            self.assertGreater(p["gamma_part"], 0)
        self.assertTrue(seen)

    def test_range_choice(self):
        keys = [k for k in self.m.algorithms() if k[1] == "allreduce"]
        if not keys:
            self.skipTest("no allreduce algorithm fit")
        level, bench, dtype, _ = keys[0]
        asked = self.not_fitted((6, 5, 7))[0]
        algs = ALGORITHMS["allreduce"]
        for n, r in ((0, 0), (4, 0), (64, 0), (100, 0), (200, 1), (256, 1), (8000, 1), (9000, 2),
                     (262144, 2), (500000, 2), (600000, 3), (64 << 20, 3)):
            # 100: log1p distance to 64 is 0.44, to 256 0.93; 200 the other way; 8000 and 9000
            # lie either side of the middle of 4096..16384 (8192.5 on a log1p scale)
            p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
            # the range's algorithm, or on odd ranges its tie where that is cheaper here
            # (which one: test_against_independent)
            chosen = algs[r % len(algs)]
            allowed = {chosen} | ({[x for x in algs if x != chosen][0]} if r % 2 else set())
            self.assertIn(p["algorithm"], allowed, n)
            self.assertEqual(p["calibration"], CALIBRATION[r], n)
            self.assertEqual(p["extrapolated"], n < 4 or n > (4 << 20), n)

    def test_interval(self):
        level, bench, dtype, _ = self.m.algorithms()[0]
        asked = self.not_fitted((6, 5, 7))[0]
        for n in SYNTHETIC_SIZES:
            p = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
            a = self.m.algorithm_fit(level, bench, dtype)
            r = independent_range(a["lo_bytes"], a["hi_bytes"], n)
            spread = max(MEDIAN_ERROR[r], 0.15)  # the link's last segment residual
            self.assertTrue(math.isclose(p["lo"], p["seconds"] / (1 + spread), rel_tol=1e-12))
            self.assertTrue(math.isclose(p["hi"], p["seconds"] * (1 + spread), rel_tol=1e-12))

    def test_against_sextant_cli(self):
        if not (SEXTANT_BIN and os.access(SEXTANT_BIN, os.X_OK)):
            self.skipTest("set SEXTANT_BIN to compare with `sextant predict`")
        for level, bench, dtype, _ in self.m.algorithms():
            for asked in self.not_fitted((3, 6, 8, 64)):
                for n in (0, 100, 3000, 8000, 500000, 4 << 20, 64 << 20):
                    with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), ranks=asked, bytes=n):
                        cli = cli_predict(self, self.path, bench, n, level, dtype, asked)
                        ours = self.m.predict(bench, n, level=level, dtype=dtype, ranks=asked)
                        self.assertEqual(ours["view"], "algorithm")
                        check_against_cli(self, cli, ours)

    def variant(self, name, edit):
        path = os.path.join(self.tmp, name)
        shutil.copyfile(self.path, path)
        with h5py.File(path, "r+") as f:
            edit(f)
        return path

    def test_without_link_or_algorithms(self):
        """No pingpong at the level, or a model without /comm_algorithms (and
        /comm_loggp): rank counts not fitted fall back to the nearest direct fit."""
        def drop_pingpong(f):
            del f["comm/world/pingpong"]

        def drop_groups(f):
            del f["comm_algorithms"]
            del f["comm_loggp"]

        for name, edit in (("no_link.h5", drop_pingpong), ("no_algorithms.h5", drop_groups)):
            path = self.variant(name, edit)
            m = sf.open_model(path)
            if name == "no_algorithms.h5":
                self.assertEqual(m.algorithms(), [])
                self.assertEqual(m.loggp, {})
            else:
                self.assertIsNone(m.link("world"))
                self.assertTrue(m.algorithms())
            for level, bench, dtype, ranks in m.fits()[:8]:
                for asked in self.not_fitted((3, 64)):
                    with self.subTest(model=name, fit="%s/%s/%s" % (level, bench, dtype), ranks=asked):
                        p = m.predict(bench, 8192, level=level, dtype=dtype, ranks=asked)
                        self.assertEqual(p["view"], "direct")
                        self.assertEqual(p["ranks"], ranks)
                        self.assertTrue(p["extrapolated_ranks"])
                        if SEXTANT_BIN and os.access(SEXTANT_BIN, os.X_OK):
                            check_against_cli(self, cli_predict(self, path, bench, 8192, level, dtype, asked), p)

    def test_schema_errors(self):
        key = self.m.algorithms()[0]
        where = raw_path(key, "comm_algorithms")

        def unknown_algorithm(f):
            g = f[where]
            names = [raw_str(x) for x in g["algorithm"][()]]
            names[-1] = "carrier_pigeon"
            del g["algorithm"]
            g.create_dataset("algorithm", data=names, dtype=h5py.string_dtype())

        def short_dataset(f):
            g = f[where]
            v = g["calibration"][()]
            del g["calibration"]
            g.create_dataset("calibration", data=np.append(v, 1.0))

        def no_gamma(f):
            del f[where].attrs["gamma"]

        def no_loggp_attr(f):
            del f["comm_loggp/world"].attrs["G"]

        for name, edit, words in (("unknown.h5", unknown_algorithm, ("carrier_pigeon", where)),
                                  ("short.h5", short_dataset, ("differ in length",)),
                                  ("no_gamma.h5", no_gamma, ("gamma",)),
                                  ("no_G.h5", no_loggp_attr, ("comm_loggp", "G"))):
            with self.subTest(variant=name):
                path = self.variant(name, edit)
                with self.assertRaises(sf.SchemaError) as cm:
                    sf.open_model(path)
                for w in (path,) + words:
                    self.assertIn(w, str(cm.exception))

    def test_summary(self):
        p = subprocess.run([sys.executable, os.path.join(TOOLS, "sextant_files.py"), self.path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("algorithms allreduce", p.stdout)
        self.assertIn("LogGP world", p.stdout)


class TestSchemaErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sextant_py_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assertSchemaError(self, opener, path, *words):
        with self.assertRaises(sf.SchemaError) as cm:
            opener(path)
        msg = str(cm.exception)
        self.assertIn(path, msg)
        for w in words:
            self.assertIn(w, msg)

    def test_missing_file(self):
        path = os.path.join(self.tmp, "does_not_exist.h5")
        self.assertSchemaError(sf.open_results, path, "no such file")
        self.assertSchemaError(sf.open_model, path, "no such file")

    def test_not_hdf5(self):
        path = os.path.abspath(__file__)
        self.assertSchemaError(sf.open_results, path, "not an HDF5 file")
        self.assertSchemaError(sf.open_model, path, "not an HDF5 file")

    def test_wrong_kind(self):
        self.assertSchemaError(sf.open_model, RESULTS, "sextant.results", "sextant.model")
        self.assertSchemaError(sf.open_results, MODEL, "sextant.model", "sextant.results")

    def test_unsupported_version(self):
        path = os.path.join(self.tmp, "model_v999.h5")
        shutil.copyfile(MODEL, path)
        with h5py.File(path, "r+") as f:
            f["meta"].attrs["schema_version"] = np.int64(999)
        self.assertSchemaError(sf.open_model, path, "999", "not supported")

    def test_old_layout(self):
        # the layout before p<ranks> groups: datasets straight in the dtype group
        path = os.path.join(self.tmp, "old_layout.h5")
        shutil.copyfile(MODEL, path)
        with h5py.File(path, "r+") as f:
            key = raw_keys(f)[0]
            dg = f["comm/%s/%s/%s" % key[:3]]
            for name in list(dg["p%d" % key[3]]):
                dg.move("p%d/%s" % (key[3], name), name)
            del dg["p%d" % key[3]]
        self.assertSchemaError(sf.open_model, path, "p<ranks>", "/comm/%s/%s/%s" % key[:3])

    def test_ranks_attribute_mismatch(self):
        path = os.path.join(self.tmp, "mismatch.h5")
        shutil.copyfile(MODEL, path)
        with h5py.File(path, "r+") as f:
            key = raw_keys(f)[0]
            f[raw_path(key)].attrs["ranks"] = np.int64(key[3] + 1)
        self.assertSchemaError(sf.open_model, path, "ranks")

    def test_no_meta(self):
        path = os.path.join(self.tmp, "plain.h5")
        with h5py.File(path, "w") as f:
            f.create_group("comm")
        self.assertSchemaError(sf.open_results, path, "/meta")


class TestScripts(unittest.TestCase):
    def run_py(self, *args):
        return subprocess.run([sys.executable] + list(args), capture_output=True, text=True)

    def test_summary(self):
        for path, schema in ((RESULTS, sf.RESULTS_SCHEMA), (MODEL, sf.MODEL_SCHEMA)):
            p = self.run_py(os.path.join(TOOLS, "sextant_files.py"), path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(schema, p.stdout)
        p = self.run_py(os.path.join(TOOLS, "sextant_files.py"), os.path.abspath(__file__))
        self.assertEqual(p.returncode, 1)
        self.assertIn("not an HDF5 file", p.stderr)

    def test_example(self):
        with sf.open_results(RESULTS) as r:
            has = bool(r.ranks("world", "pingpong", "byte"))
        if not has or not [k for k in sf.open_model(MODEL).fits() if k[:3] == ("world", "pingpong", "byte")]:
            self.skipTest("no world pingpong in these files")
        p = self.run_py(os.path.join(TOOLS, "example_read.py"), RESULTS, MODEL)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pingpong 8 KiB", p.stdout)


if __name__ == "__main__":
    missing = [n for n, v in (("SEXTANT_RESULTS", RESULTS), ("SEXTANT_MODEL", MODEL)) if not v]
    if missing:
        print("test_reader.py: set %s to a results file and the model fitted from it" % " and ".join(missing),
              file=sys.stderr)
        sys.exit(2)
    # A skipped case is not a pass: ctest reports the whole test as skipped (exit 77,
    # SKIP_RETURN_CODE) and the cases that skipped are listed, unless one failed.
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        for case, reason in result.skipped:
            print("SKIPPED: %s: %s" % (case.id(), reason), file=sys.stderr)
        sys.exit(77)
    sys.exit(0)
