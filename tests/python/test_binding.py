#!/usr/bin/env python3
"""The `sextant` Python module against the `sextant` command: the same C++ model, so the
same numbers, exactly (the command's --json documents carry every digit).

    SEXTANT_BIN=sextant SEXTANT_MODEL=comm.model.h5 SEXTANT_TRAIN_MODEL=train.model.h5 \\
        PYTHONPATH=<build>/python python3 tests/python/test_binding.py

Communication: every fit of the model at sizes inside, between and beyond its segments,
at the fitted rank count (direct view) and at others (algorithm view); operators at
measured and unmeasured shapes; training steps and the layout search. Exit status 0
all passed, 1 a failure, 77 the module is not built here.
"""
import json
import os
import subprocess
import sys
import unittest

try:
    import sextant
except ImportError as e:
    print("SKIP: the sextant module is not importable (%s): built only with pybind11" % e, file=sys.stderr)
    sys.exit(77)
import h5py

SEXTANT_BIN = os.environ.get("SEXTANT_BIN", "")
MODEL = os.environ.get("SEXTANT_MODEL", "")
TRAIN_MODEL = os.environ.get("SEXTANT_TRAIN_MODEL", "")
TRAIN = "layers=4,hidden=64,heads=4,seq=32,vocab=256,global_batch=16"


def cli(*args):
    """`sextant predict ... --json -`: the document."""
    p = subprocess.run([SEXTANT_BIN, "predict", *args, "--json", "-"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("sextant predict %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return json.loads(p.stdout)


class TestComm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = sextant.Model(MODEL)

    def test_fits_are_the_files(self):
        with h5py.File(MODEL, "r") as f:
            groups = sorted((l, b, d, int(p[1:])) for l in f["comm"] for b in f["comm"][l]
                            for d in f["comm"][l][b] for p in f["comm"][l][b][d])
        self.assertEqual(sorted(self.m.fits()), groups)
        self.assertTrue(self.m.has_comm)

    def test_same_numbers_as_the_command(self):
        compared = views = 0
        seen_views = set()
        for level, bench, dtype, ranks in self.m.fits():
            if bench == "barrier":
                continue
            for n in (1, 8, 1000, 4096, 65536, 3 << 20, 1 << 26):
                for p in (ranks, ranks + 1, 4 * ranks, 64):
                    with self.subTest(benchmark=bench, dtype=dtype, bytes=n, ranks=p):
                        ours = self.m.predict_comm(bench, n, level=level, dtype=dtype, ranks=p)
                        theirs = cli(MODEL, "--op", bench, "--bytes", str(n), "--ranks", str(p), "--level", level,
                                     "--dtype", dtype)
                        for k in ("seconds", "interval_seconds", "busbw_Bps", "view", "terms_seconds",
                                  "extrapolated_bytes", "extrapolated_ranks", "algorithm", "calibration"):
                            self.assertEqual(ours.get(k), theirs.get(k), k)
                        self.assertGreater(ours["seconds"], 0)
                        compared += 1
                        seen_views.add(ours["view"])
        self.assertGreater(compared, 100)
        self.assertEqual(seen_views, {"direct", "algorithm"})

    def test_errors_name_the_problem(self):
        with self.assertRaises(ValueError) as cm:
            sextant.Model("/no/such/model.h5")
        self.assertIn("/no/such/model.h5", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.m.predict_comm("no_such_benchmark", 8)
        self.assertIn("no_such_benchmark", str(cm.exception))
        with self.assertRaises(ValueError):
            self.m.predict_comm("allreduce", 8, ranks=0)
        with h5py.File(MODEL, "r") as f, self.assertRaises(TypeError):
            sextant.Model(f)  # paths, never HDF5 handles, cross the boundary


@unittest.skipUnless(TRAIN_MODEL, "set SEXTANT_TRAIN_MODEL to a model with a compute part")
class TestTrain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = sextant.Model(TRAIN_MODEL)

    def test_operator(self):
        for shape in ("64,256,64", "300,300,300"):
            theirs = cli(TRAIN_MODEL, "--op", "gemm", "--shape", shape)
            ours = self.m.predict_operator("gemm", theirs["flops"], theirs["bytes"], dtype=theirs["dtype"],
                                           family="gemm", shape=theirs["shape"])
            self.assertEqual(ours["seconds"], theirs["seconds"], shape)
            self.assertEqual(ours["operator_model"], theirs["operator_model"], shape)

    def test_step(self):
        for layout in ("dp=2", "tp=2", "pp=2,schedule=gpipe", "dp=2,pp=2,zero1=1"):
            text = TRAIN + "," + layout
            theirs = cli(TRAIN_MODEL, "--train", text)
            ours = self.m.predict_step(text)
            self.assertEqual(ours["prediction"], theirs["prediction"], layout)
            self.assertEqual(ours["config"], theirs["config"], layout)
        # a dict gives the same configuration as its key=value string
        as_dict = dict(kv.split("=") for kv in (TRAIN + ",dp=2").split(","))
        self.assertEqual(self.m.predict_step(as_dict), self.m.predict_step(TRAIN + ",dp=2"))
        with self.assertRaises(ValueError) as cm:
            self.m.predict_step(TRAIN + ",tp=3")
        self.assertIn("tp", str(cm.exception))

    def test_layout_search(self):
        theirs = cli(TRAIN_MODEL, "--train", TRAIN, "--search", "8")["layouts"]
        ours = self.m.search_layouts(TRAIN, 8)
        self.assertEqual(ours, theirs)
        theirs = cli(TRAIN_MODEL, "--train", TRAIN, "--search", "8", "--ranks-per-node", "2")["layouts"]
        self.assertEqual(self.m.search_layouts(TRAIN, 8, ranks_per_node=2), theirs)

    def test_placed_step(self):
        text = TRAIN + ",dp=2,tp=2"
        theirs = cli(TRAIN_MODEL, "--train", text, "--ranks-per-node", "2")
        ours = self.m.predict_step(text, ranks_per_node=2)
        self.assertEqual(ours["prediction"], theirs["prediction"])
        self.assertEqual(ours["levels"], theirs["levels"])


if __name__ == "__main__":
    missing = [n for n, v in (("SEXTANT_BIN", SEXTANT_BIN), ("SEXTANT_MODEL", MODEL)) if not v]
    if missing:
        print("test_binding.py: set %s" % " and ".join(missing), file=sys.stderr)
        sys.exit(2)
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
