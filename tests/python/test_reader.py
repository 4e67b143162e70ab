#!/usr/bin/env python3
"""Tests of tools/python/sextant_files.py against files written by sextant.

    SEXTANT_RESULTS=results.h5 SEXTANT_MODEL=model.h5 python3 tests/python/test_reader.py

SEXTANT_RESULTS: a results file from `sextant run --suite comm`; SEXTANT_MODEL:
the model `sextant fit` made of it.  Optional SEXTANT_BIN: the sextant binary,
to compare Model.predict with `sextant predict`.  Needs numpy and h5py only
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
MODEL_ATTRS = ("view", "ranks", "oversubscribed", "busbw_factor", "data_bytes_per_byte", "bytes_min",
               "bytes_max", "criterion")
SEGMENT = ("lo_bytes", "hi_bytes", "alpha", "beta", "alpha_ci_lo", "alpha_ci_hi", "beta_ci_lo",
           "beta_ci_hi", "r2", "rms_rel_residual", "points")


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
        raw = sorted((lv, bn, dt) for lv in self.raw["comm"] for bn in self.raw["comm"][lv]
                     for dt in self.raw["comm"][lv][bn])
        self.assertEqual(b, raw)

    def test_tables(self):
        for key in self.r.benchmarks():
            with self.subTest(group="/".join(key)):
                t = self.r.table(*key)
                a = t["attrs"]
                for name in GROUP_ATTRS:
                    self.assertIn(name, a)
                self.assertEqual((a["level"], a["benchmark"], a["dtype"]), key)
                expected = PER_SIZE + (NONBLOCKING if a.get("nonblocking") else ())
                for name in expected:
                    self.assertIn(name, t)
                n = len(t["bytes"])
                self.assertGreater(n, 0)
                for name, v in t.items():
                    if name != "attrs":
                        self.assertEqual(v.shape, (n,), "dataset %s has length %d, bytes has %d"
                                         % (name, len(v), n))
                g = self.raw["comm/%s/%s/%s" % key]
                np.testing.assert_array_equal(t["median"], g["median"][()])
                np.testing.assert_array_equal(t["bytes"], g["bytes"][()])
                self.assertTrue(all(isinstance(s, str) and s for s in t["stop_reason"]))
                self.assertTrue(np.all(t["valid"] + t["late"] == t["total"]))

    def test_samples(self):
        for key in self.r.benchmarks():
            with self.subTest(group="/".join(key)):
                t = self.r.table(*key)
                ranks = t["attrs"]["ranks"]
                g = self.raw["comm/%s/%s/%s/samples" % key]
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

    def test_unknown_group(self):
        with self.assertRaises(KeyError):
            self.r.table("world", "no_such_benchmark", "byte")


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
    t = alpha[k] + beta[k] * n
    a = g.attrs
    return {"seconds": t, "alpha_part": alpha[k], "beta_part": beta[k] * n, "segment": k,
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
        for key in fits:
            g = self.raw["comm/%s/%s/%s" % key]
            for name in MODEL_ATTRS:
                self.assertIn(name, g.attrs)
            lengths = {g[name].shape for name in SEGMENT}
            self.assertEqual(len(lengths), 1)

    def test_predict_matches_raw(self):
        for level, bench, dtype in self.m.fits():
            g = self.raw["comm/%s/%s/%s" % (level, bench, dtype)]
            for n in probe_sizes(g):
                with self.subTest(fit="%s/%s/%s" % (level, bench, dtype), bytes=n):
                    p = self.m.predict(bench, n, level=level, dtype=dtype)
                    e = independent_prediction(g, n)
                    self.assertEqual(p["segment"], e["segment"])
                    self.assertEqual(p["extrapolated"], e["extrapolated"])
                    for k in ("seconds", "alpha_part", "beta_part", "busbw"):
                        self.assertTrue(math.isclose(p[k], e[k], rel_tol=1e-12, abs_tol=1e-300),
                                        "%s: %r != %r" % (k, p[k], e[k]))

    def test_byte_fallback(self):
        untyped = [k for k in self.m.fits() if k[2] == "byte"]
        if not untyped:
            self.skipTest("no untyped benchmark in the model")
        level, bench, _ = untyped[0]
        p = self.m.predict(bench, 8, level=level)  # default dtype float32
        self.assertEqual(p["dtype"], "byte")
        self.assertEqual(p["seconds"], self.m.predict(bench, 8, level=level, dtype="byte")["seconds"])

    def test_errors(self):
        with self.assertRaises(KeyError):
            self.m.predict("no_such_benchmark", 8)
        level, bench, dtype = self.m.fits()[0]
        with self.assertRaises(ValueError):
            self.m.predict(bench, -1, level=level, dtype=dtype)

    def test_against_sextant_cli(self):
        if not (SEXTANT_BIN and os.access(SEXTANT_BIN, os.X_OK)):
            self.skipTest("set SEXTANT_BIN to compare with `sextant predict`")
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
        for level, bench, dtype in self.m.fits()[:6]:
            for n in (8, 8192, 1 << 20):
                out = subprocess.run([SEXTANT_BIN, "predict", MODEL, "--op", bench, "--bytes", str(n),
                                      "--level", level, "--dtype", dtype],
                                     capture_output=True, text=True, check=True).stdout
                m = re.search(r"\): ([0-9.e+-]+) (ns|us|ms|s) ", out)
                self.assertIsNotNone(m, out)
                cli = float(m.group(1)) * unit[m.group(2)]
                ours = self.m.predict(bench, n, level=level, dtype=dtype)["seconds"]
                # the CLI prints 3 significant digits (whole nanoseconds below 1 us)
                self.assertTrue(math.isclose(cli, ours, rel_tol=6e-3, abs_tol=0.6e-9), out)


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
            has = ("world", "pingpong", "byte") in r.benchmarks()
        if not has or ("world", "pingpong", "byte") not in sf.open_model(MODEL).fits():
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
    unittest.main(verbosity=2)
