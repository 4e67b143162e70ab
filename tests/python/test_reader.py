#!/usr/bin/env python3
"""Tests of tools/python/sextant_files.py against files written by sextant.

    SEXTANT_RESULTS=results.h5 SEXTANT_MODEL=model.h5 python3 tests/python/test_reader.py

SEXTANT_RESULTS: a results file from `sextant run --suite comm`; SEXTANT_MODEL:
the model `sextant fit` made of it.  Both use the layout
/comm/<level>/<benchmark>/<dtype>/p<ranks> (the model also /comm_algorithms/...
and /comm_loggp/<level>); files holding several rank counts, and models with a
multi-segment link and multi-range algorithm fits, are made here by copying and
rewriting groups.  The reader reads data; predictions are the C++ model's, through
the `sextant` module, tested in test_binding.py.  Needs numpy and h5py only
(unittest, no pytest).  Exit status: 0 all passed, 1 a test failed, 2 usage.
"""
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
                for name, ties in zip(a["algorithm"], a["indistinguishable"]):
                    self.assertIn(name, ALGORITHMS[key[1][1:] if key[1][1:] in ALGORITHMS else key[1]])
                    self.assertNotIn(name, ties)
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
            for p in (self.p0, self.p1, self.p2):
                f = self.m.fit(level, bench, dtype, p)
                self.assertEqual(f["ranks"], p)
                self.assertEqual(f["attrs"]["ranks"], p)

    def test_summary(self):
        p = subprocess.run([sys.executable, os.path.join(TOOLS, "sextant_files.py"), self.path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(sf.MODEL_SCHEMA, p.stdout)


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
