#!/usr/bin/env python3
"""Hostile input, tried the way a user who means harm (or has a bad day) would.

    hostile.py SEXTANT RESULTS MODEL GOLDEN [--only CATEGORY,...]

Every probe is a bad input: a command line, a damaged or wrong file, a signal or a
killed rank in the middle of a run, a full disk, writers racing for one output. Each is
judged by what the command did (tests/cli/outcomes.py): a clear error (exit 1 or 2
with a line that starts with "sextant"; for a run that was interrupted: it ended within
30 s, not with 0, and the measurements that finished are readable and marked
incomplete), or a failure: a crash, a hang, an unclear error, or a silent wrong answer
(exit 0 for input that has no right answer, or an output that lies). Prints the table
by category; exit status 1 on any failure.

RESULTS and MODEL are a results file of the comm suite and its model; GOLDEN the
directory of tests/data/golden (compute-v1.h5 and its model: compute measurements). Probes that need root (a small tmpfs for the full disk)
are left out, and said so, without it.
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

import outcomes

RUN_SECONDS = 60        # a command that takes longer on bad input hangs (the longest probe run takes ~5 s)
INTERRUPT_SECONDS = 30  # the bound: a signal or a killed rank ends the launch within this


class Probe:
    def __init__(self, category, what):
        self.category, self.what = category, what


class Table:
    COLUMNS = ("tried", "clear error", "accepted, checked") + outcomes.FAILURES

    def __init__(self):
        self.rows, self.failures, self.notes = {}, [], []

    def add(self, probe, outcome, detail=""):
        row = self.rows.setdefault(probe.category, dict.fromkeys(self.COLUMNS, 0))
        row["tried"] += 1
        row[outcome] += 1
        if outcome in outcomes.FAILURES:
            self.failures.append("%s: %s: %s: %s" % (probe.category, probe.what, outcome, detail))

    def print(self):
        width = max(len(c) for c in self.rows) + 2
        print("%-*s" % (width, "category") + "".join("%18s" % c for c in self.COLUMNS))
        total = dict.fromkeys(self.COLUMNS, 0)
        for category, row in self.rows.items():
            print("%-*s" % (width, category) + "".join("%18d" % row[c] for c in self.COLUMNS))
            for c in self.COLUMNS:
                total[c] += row[c]
        print("%-*s" % (width, "all") + "".join("%18d" % total[c] for c in self.COLUMNS))
        for n in self.notes:
            print("note: " + n)
        for f in self.failures:
            print("FAIL: " + f)


class Hostile:
    def __init__(self, sextant, results, model, golden, work):
        self.S, self.results, self.model, self.work = sextant, results, model, work
        self.compute_results = os.path.join(golden, "compute-v1.h5")
        self.compute_model = os.path.join(golden, "compute-v1.model.h5")
        self.table = Table()
        self.n = 0

    def path(self, name):
        self.n += 1
        return os.path.join(self.work, "%03d-%s" % (self.n, name))

    # ------------------------------------------------------------------ judging
    def expect_error(self, category, args, what=None, timeout=RUN_SECONDS, check_ok=None):
        """Runs a bad input; exit 0 is a silent wrong answer unless check_ok (output ->
        None when the answer is right, else what is wrong) accepts it."""
        probe = Probe(category, what or " ".join(a.replace(self.work + "/", "") for a in args[1:]))
        outcome, detail, p = outcomes.run(args, timeout, cwd=self.work)
        if outcome == "exit 0":
            wrong = check_ok(p) if check_ok else "exit 0 for input that has no right answer"
            outcome, detail = ("silent wrong", wrong) if wrong else ("accepted, checked", "")
        self.table.add(probe, outcome, detail)

    # ------------------------------------------------------------------ the command line
    def command_lines(self):
        S, w = self.S, self.work
        quick = ["--quick", "--collectives", "pingpong", "-m", "8:64"]

        def run(*bad, base=None):
            args = [S, "run", "--suite", "comm"] + (quick if base is None else base) + ["-o", self.path("r.h5")] + list(bad)
            self.expect_error("command line", args)

        self.expect_error("command line", [S])
        self.expect_error("command line", [S, "--bogus"])
        self.expect_error("command line", [S, "frobnicate"])
        self.expect_error("command line", [S, "info", "extra"])
        self.expect_error("command line", [S, "run", "--suite", "COMM"])
        self.expect_error("command line", [S, "run", "--suite", ""])
        self.expect_error("command line", [S, "run", "positional"])
        no_sizes = ["--quick", "--collectives", "pingpong"]
        for sizes in ["", "abc", "4M:1", "-8", "8:-1", "1:2:3", "99999999999999999999", "8K:16X", ":", "0x10", "1.5:8",
                      "2048G"]:
            run("-m", sizes, base=no_sizes)
        for factor in ["0", "1", "-2", "nan", "inf", "abc", "0.5"]:
            run("-f", factor)
        for n in ["0", "-1", "abc", "1.5"]:
            run("-i", n)
        for n in ["-5", "abc", "1e99"]:
            run("-x", n)
        for budget in ["-1", "0", "nan", "inf", "abc"]:
            run("--budget", budget)
        for precision in ["-0.1", "0", "2", "nan"]:
            run("--precision", precision)
        for check in ["-1", "abc"]:
            run("--check", check)
        for dtypes in ["float16", "", ",", "float32,,float64", "FLOAT32"]:
            run("--dtypes", dtypes)
        for op in ["prod", ""]:
            run("--op", op)
        run("--sync", "sometimes")
        for c in ["nosuch", "", ","]:
            run("--collectives", c, base=["--quick", "-m", "8:64"])
        for levels in ["nosuch", "", "world,nosuch"]:
            run("--levels", levels)
        for ranks in ["2:8", "1:2", "4,2", "abc", "0", "2:", "3:2"]:
            run("--ranks", ranks)
        for window in ["0", "-1", "abc"]:
            run("--window", window)
        run("--memory", "gpu")
        run("--wait", "sometimes")
        run("--total-bytes=maybe")
        run("--json", "/proc/nope.json")
        run("--csv", "/proc/nope")
        self.expect_error("command line", [S, "run", "--suite", "comm"] + quick + ["-o", "/proc/nope.h5"])
        self.expect_error("command line", [S, "run", "--suite", "comm"] + quick + ["-o", w])
        self.expect_error("command line", [S, "run", "--suite", "comm"] + quick + ["-o", ""])
        self.expect_error("command line", [S, "run", "--suite", "comm"] + quick + ["-o", self.results],
                          what="run -o an existing results file")
        compute = [S, "run", "--suite", "compute", "--quick"]
        for bad in (["--kernels", "nosuch"], ["--families", "nosuch"], ["--dtypes", "int32"], ["--ranks", "2:4"],
                    ["--kernels", ""], ["--memory", "device"]):
            self.expect_error("command line", compute + ["-o", self.path("c.h5")] + bad)
        train = [S, "run", "--suite", "train", "--quick"]
        for bad in (["--configs", "nosuch"], ["--model-sizes", "huge"], ["--model-sizes", ""], ["--dense", "nosuch"],
                    ["--steps", "0"], ["--steps", "-1"], ["--steps", "abc"]):
            self.expect_error("command line", train + ["-o", self.path("t.h5")] + bad)

        fit_out = self.path("m.h5")
        for args in ([], ["nosuch.h5"], [w], [self.model], [self.results, "-o", self.results],
                     [self.results, "-o", "/proc/nope.h5"], [self.results, "-o", w], [self.results, "--json", "/proc/x"],
                     [self.results, self.results], [self.results, "-o", fit_out, "--holdout=maybe"]):
            self.expect_error("command line", [S, "fit"] + args)

        m = self.model

        def predict(*bad):
            self.expect_error("command line", [S, "predict", m] + list(bad))

        self.expect_error("command line", [S, "predict"])
        for op in ["nosuch", ""]:
            predict("--op", op, "--bytes", "8")
        for b in ["-8", "abc", "8Q", "1e400", "", "1.5", "99999999999999999999999"]:
            predict("--op", "allreduce", "--bytes", b)
        for r in ["0", "-1", "abc", "1"]:
            predict("--op", "allreduce", "--bytes", "8", "--ranks", r)
        predict("--op", "allreduce", "--bytes", "8", "--level", "nosuch")
        predict("--op", "allreduce", "--bytes", "8", "--level", "inter")
        predict("--op", "allreduce", "--bytes", "8", "--dtype", "float16")
        predict("--op", "allreduce")
        predict("--bytes", "8")
        predict("--op", "allreduce", "--bytes", "8", "--shape", "8,8,8")
        cm = self.compute_model
        for shape in ["0,0,0", "-1,512,512", "abc", "1,2", "M=1,N=2", "512,512,512,512", ""]:
            self.expect_error("command line", [S, "predict", cm, "--op", "gemm", "--shape", shape])
        # Far outside what was measured: an answer, labelled as an extrapolation.
        self.expect_error("command line", [S, "predict", cm, "--op", "gemm", "--shape", "100000,100000,100000"],
                          check_ok=lambda p: None if "EXTRAPOLATION" in p.stdout else "no extrapolation label")
        self.expect_error("command line", [S, "predict", cm, "--op", "nosuch", "--shape", "8,8"])
        self.expect_error("command line", [S, "predict", cm, "--op", "gemm"])
        for train_cfg in ["layers", "layers=2,hidden=64", "layers=2,hidden=63,heads=4", "foo=1", "layers=0,hidden=64,heads=4",
                          "layers=2,hidden=64,heads=4,dp=0", "layers=2,hidden=64,heads=4,tp=3",
                          "layers=2,hidden=64,heads=4,pp=4", "layers=2,hidden=64,heads=4,micro_batch=3,global_batch=8",
                          "layers=-2,hidden=64,heads=4", "layers=2,hidden=64,heads=4,seq=0", "=", ",,,",
                          "layers=2,layers=3,hidden=64,heads=4"]:
            predict("--train", train_cfg)
        base_train = ["--train", "layers=2,hidden=64,heads=4"]
        predict(*base_train, "--tp-level", "nosuch")
        predict(*base_train, "--ranks-per-node", "0")
        predict(*base_train, "--search", "0")
        predict("--search", "4")
        predict(*base_train, "--search", "4", "--top", "0")
        predict(*base_train, "--search", "4", "--memory-per-rank", "abc")
        predict("--op", "allreduce", "--bytes", "8", "--json", "/proc/nope.json")
        predict("--op", "allreduce", "--bytes", "8", *base_train)

        for args in ([], [self.results], ["-o", self.path("merged.h5")], [self.results, "-o", self.results],
                     ["nosuch.h5", "-o", self.path("merged.h5")], [self.model, "-o", self.path("merged.h5")],
                     [self.results, "-o", "/proc/nope.h5"]):
            self.expect_error("command line", [S, "merge"] + args)
        for args in (["nosuch.h5"], [self.model], [self.results, "-o", "/proc/nope"], [self.results, "--model", "nosuch.h5"],
                     [self.results, "--model", self.results]):
            self.expect_error("command line", [S, "report"] + args + ([] if "-o" in args else ["-o", self.path("rep")]))
        self.expect_error("command line", [S, "export", m, "--to", "astra-sim"])
        for args in (["--to", "nosuch"], ["--to", "calculon"], ["--to", "astra-sim", "--ranks", "0"],
                     ["--to", "calculon", "--memory-per-rank", "abc"], ["--to", "extrap", "-o", "/proc/nope.json"]):
            out = [] if "-o" in args else ["-o", self.path("export")]
            self.expect_error("command line", [S, "export", m] + args + out)
        self.expect_error("command line", [S, "export", self.results, "--to", "astra-sim", "-o", self.path("astra")])
        self.expect_error("command line", [S, "export", cm, "--to", "extrap", "-o", self.path("x.json")])
        for args in (["--nodes", "0"], ["--nodes", "-1"], ["--ranks-per-node", "0"], ["--suites", "nosuch"],
                     ["--suites", ""], ["--time", "99:99"], ["--time", "abc"], ["--site-env", "nosuch.env"],
                     ["-o", "/proc/nope.sh"], ["--run-args", "--nosuch"], ["--job-name", "a\nb"], ["--time", "-1:00:00"]):
            self.expect_error("command line", [S, "jobscript"] + args)

    # ------------------------------------------------------------------ files
    def damaged(self, source, name, change):
        """A copy of source with change(h5py file) applied."""
        path = self.path(name + ".h5")
        shutil.copy(source, path)
        with h5py.File(path, "r+") as f:
            change(f)
        return path

    def readers_of_results(self, path, what):
        S = self.S
        self.expect_error("files", [S, "fit", path, "-o", self.path("m.h5")], what="fit " + what)
        self.expect_error("files", [S, "merge", path, "-o", self.path("merged.h5")], what="merge " + what)

    def readers_of_model(self, path, what, op=("--op", "allreduce", "--bytes", "64K")):
        j = self.path("p.json")
        self.expect_error("files", [self.S, "predict", path, *op, "--json", j], what="predict " + what,
                          check_ok=lambda p: self.prediction_is_wrong(j))
        self.expect_error("files", [self.S, "export", path, "--to", "astra-sim", "-o", self.path("astra")],
                          what="export " + what)

    def prediction_is_wrong(self, json_path):
        """None for a finite, positive prediction; else what is wrong (a damage the
        prediction does not read leaves a right answer)."""
        try:
            with open(json_path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            return "exit 0 and no readable --json: %s" % e
        seconds = doc.get("seconds")
        if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
            return "exit 0 with seconds = %r" % (seconds,)
        return None

    def files(self):
        text = self.path("text.h5")
        with open(text, "w") as fh:
            fh.write("not hdf5\n")
        empty = self.path("empty.h5")
        open(empty, "w").close()
        fifo = self.path("fifo.h5")
        os.mkfifo(fifo)
        loop_a, loop_b = self.path("loop_a.h5"), self.path("loop_b.h5")
        os.symlink(loop_b, loop_a)
        os.symlink(loop_a, loop_b)
        half = self.path("half.h5")
        with open(self.results, "rb") as src, open(half, "wb") as dst:
            dst.write(src.read(os.path.getsize(self.results) // 2))
        head = self.path("head.h5")
        with open(self.model, "rb") as src, open(head, "wb") as dst:
            dst.write(src.read(1024))
        for name, path in (("a text file", text), ("an empty file", empty), ("a named pipe", fifo),
                           ("a symlink loop", loop_a), ("a directory", self.work), ("/dev/null", "/dev/null"),
                           ("/dev/zero", "/dev/zero")):
            self.readers_of_results(path, name)
            self.readers_of_model(path, name)
        self.readers_of_results(half, "results cut at half")
        self.readers_of_results(self.model, "a model file as results")
        self.readers_of_model(head, "model cut at 1 KiB")
        self.readers_of_model(self.results, "a results file as model")

        pp = "comm/world/pingpong/byte/p2"
        ar = "comm/world/allreduce/float32/p2"

        def set_value(where, name, index, value):
            def change(f):
                a = f[where][name][()]
                a = a.astype(float) if a.dtype.kind == "f" else a
                a.reshape(-1)[index] = value
                f[where][name][...] = a
            return change

        def retype(where, name, convert):
            def change(f):
                a = f[where][name][()]
                del f[where][name]
                f[where][name] = convert(a)
            return change

        def set_attr(where, name, value):
            def change(f):
                f[where].attrs[name] = value
            return change

        results_damage = [
            ("median NaN", set_value(pp, "median", 0, float("nan"))),
            ("median negative", set_value(pp, "median", 1, -1e-6)),
            ("median infinite", set_value(pp, "median", 2, float("inf"))),
            ("bytes reversed", lambda f: f[pp]["bytes"].__setitem__(Ellipsis, f[pp]["bytes"][()][::-1])),
            ("bytes repeated", lambda f: f[pp]["bytes"].__setitem__(Ellipsis, np.full(f[pp]["bytes"].shape, 8))),
            ("median as int64 ns", retype(pp, "median", lambda a: np.asarray(a * 1e9, dtype=np.int64))),
            ("median as text", retype(pp, "median", lambda a: np.array(["x"] * a.size, dtype="S1"))),
            ("median shorter than bytes", retype(pp, "median", lambda a: a[: a.size // 2])),
            ("median 3-D", retype(pp, "median", lambda a: np.ones((2, 2, 2)))),
            ("ranks attribute contradicts p2", set_attr(ar, "ranks", 7)),
            ("ranks attribute 0", set_attr(ar, "ranks", 0)),
            ("ranks attribute text", set_attr(ar, "ranks", "two")),
            ("size_unit unknown", set_attr(ar, "size_unit", "per_rank")),
            ("schema version 999", set_attr("meta", "schema_version", 999)),
            ("schema another tool's", set_attr("meta", "schema", "other.tool")),
            ("no /meta", lambda f: f.__delitem__("meta")),
            ("no /comm", lambda f: f.__delitem__("comm")),
            ("no bytes dataset", lambda f: f[pp].__delitem__("bytes")),
            ("an empty benchmark group", lambda f: [f[pp].__delitem__(k) for k in list(f[pp])]),
            ("complete = maybe", set_attr("meta", "complete", "maybe")),
        ]
        for what, change in results_damage:
            self.readers_of_results(self.damaged(self.results, "r", change), what)

        def segment(where, name, value):
            return set_value(where, name, 0, value)

        model_damage = [
            ("alpha NaN", segment(ar, "alpha", float("nan")), None),
            ("alpha negative", segment(ar, "alpha", -3e-5), None),
            ("beta infinite", segment(ar, "beta", float("inf")), None),
            ("beta negative", set_value(pp, "beta", -1, -1e-9), ("--op", "pingpong", "--bytes", "4M")),
            ("segment bounds reversed", lambda f: f[ar]["lo_bytes"].__setitem__(Ellipsis, f[ar]["lo_bytes"][()][::-1]), None),
            ("segments emptied", lambda f: [retype(ar, k, lambda a: a[:0])(f) for k in list(f[ar])], None),
            ("alpha as text", retype(ar, "alpha", lambda a: np.array(["x"] * a.size, dtype="S1")), None),
            ("busbw factor NaN", set_attr(ar, "busbw_factor", float("nan")), None),
            ("algorithm calibration NaN", set_value("comm_algorithms/world/allreduce/float32/p2", "calibration", 0,
                                                    float("nan")), None),
            ("algorithm name unknown", retype("comm_algorithms/world/allreduce/float32/p2", "algorithm",
                                              lambda a: np.array([b"nosuch"] * a.size)), None),
            ("ranks attribute contradicts p2", set_attr(ar, "ranks", 7), None),
            ("size_unit unknown", set_attr(ar, "size_unit", "per_rank"), None),
            ("schema version 999", set_attr("meta", "schema_version", 999), None),
            ("no /comm", lambda f: f.__delitem__("comm"), None),
        ]
        for what, change, op in model_damage:
            path = self.damaged(self.model, "m", change)
            self.readers_of_model(path, what, **({"op": op} if op else {}))

        gemm = ("--op", "gemm", "--shape", "256,256,256", "--dtype", "float32")
        ceilings = "compute/ceilings"
        compute_damage = [
            ("peak float32 NaN", set_attr(ceilings, "peak_flops_float32", float("nan"))),
            ("peak float32 zero", set_attr(ceilings, "peak_flops_float32", 0.0)),
            ("peak float32 negative", set_attr(ceilings, "peak_flops_float32", -1e11)),
            ("peak float32 text", set_attr(ceilings, "peak_flops_float32", "fast")),
            ("no peak float32", lambda f: f[ceilings].attrs.__delitem__("peak_flops_float32")),
            ("memory bandwidth NaN", set_value(ceilings, "bandwidth", 0, float("nan"))),
            ("memory bandwidth zero", set_value(ceilings, "bandwidth", 1, 0.0)),
            ("memory levels out of order", lambda f: f[ceilings]["lo_bytes"].__setitem__(
                Ellipsis, f[ceilings]["lo_bytes"][()][::-1])),
            ("no ceilings", lambda f: f.__delitem__(ceilings)),
        ]
        for what, change in compute_damage:
            self.readers_of_model(self.damaged(self.compute_model, "c", change), "compute " + what, op=gemm)

        with h5py.File(self.compute_results, "r") as f:
            kernel = "compute/kernels/" + sorted(f["compute/kernels"])[0]
            kernel += "/" + sorted(f[kernel])[0]
            sweep = "compute/sweep/triad/" + sorted(f["compute/sweep/triad"])[0]
        compute_results_damage = [
            ("kernel median negative", set_value(kernel, "median", 0, -1e-3)),
            ("kernel median infinite", set_value(kernel, "median", 0, float("inf"))),
            ("kernel median as int64 ns", retype(kernel, "median", lambda a: np.asarray(a * 1e9, dtype=np.int64))),
            ("kernel flops NaN", set_value(kernel, "flops", 0, float("nan"))),
            ("sweep bandwidth NaN", set_value(sweep, "bandwidth", 0, float("nan"))),
            ("sweep bandwidth zero", set_value(sweep, "bandwidth", 1, 0.0)),
            ("sweep working sets reversed", lambda f: f[sweep]["working_set"].__setitem__(
                Ellipsis, f[sweep]["working_set"][()][::-1])),
            ("sweep shorter bandwidth", retype(sweep, "bandwidth", lambda a: a[: a.size // 2])),
        ]
        for what, change in compute_results_damage:
            self.readers_of_results(self.damaged(self.compute_results, "cr", change), "compute " + what)

    # ------------------------------------------------------------------ signals
    def interrupted(self, what, launch, stop, launcher_signalled=False):
        """Starts launch (args) writing OUT, waits until it has finished a few
        benchmarks, then stop(popen) interrupts it. Judged: the launch ends within
        INTERRUPT_SECONDS, not with 0, and what it wrote fits (with the incomplete warning)."""
        probe = Probe("signals, killed ranks", what)
        out = self.path("interrupted.h5")
        log = open(self.path("interrupted.err"), "w+")
        p = subprocess.Popen(launch + ["-o", out], stdout=subprocess.DEVNULL, stderr=log, cwd=self.work,
                             start_new_session=True)
        deadline = time.monotonic() + RUN_SECONDS
        while time.monotonic() < deadline and p.poll() is None:
            log.seek(0)
            if sum(1 for line in log if line.startswith("[comm") or line.startswith("[compute")) >= 12:
                break
            time.sleep(0.05)
        if p.poll() is not None:
            log.seek(0)
            self.table.add(probe, "unclear error", "the run ended (exit %d) before it could be interrupted: %s"
                           % (p.returncode, log.read()[-300:]))
            return
        stop(p)
        t0 = time.monotonic()
        try:
            rc = p.wait(timeout=INTERRUPT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            self.table.add(probe, "hang", "still running %d s after it was interrupted" % INTERRUPT_SECONDS)
            return
        log.seek(0)
        err = log.read()
        if rc == 0:
            # MPICH's Hydra, signalled itself, sometimes returns 0 although its ranks died
            # by the signal it forwarded: not sextant's status to set. What sextant owes:
            # a rank said it was interrupted and where its results are (checked here), and
            # the file says it is incomplete (checked below). Not every rank's line: Hydra
            # may exit before it forwards the last one (one x86-64-v3 run: exit 0, fewer than 2).
            said = err.count("interrupted by SIG")
            if not launcher_signalled or said < 1:
                self.table.add(probe, "silent wrong", "exit 0 after it was interrupted, nothing said")
                return
            self.table.notes.append("%s: mpiexec returned 0; %d of 2 ranks' lines reached it saying they were "
                                    "interrupted" % (what, said))
        try:
            with h5py.File(out, "r") as f:
                complete = f["meta"].attrs.get("complete")
        except (OSError, KeyError) as e:
            self.table.add(probe, "crash", "after exit %d its file cannot be read: %s" % (rc, e))
            return
        if complete not in ("no", b"no"):
            self.table.add(probe, "silent wrong", "after exit %d its file says complete = %r" % (rc, complete))
            return
        # fit uses what finished and says the run was interrupted, or says clearly what
        # is missing (a compute run stopped before its sweep has no memory ceilings).
        fit_outcome, detail, fit = outcomes.run([self.S, "fit", out, "-o", self.path("m.h5")], RUN_SECONDS)
        if fit_outcome == "exit 0" and "interrupted run" not in fit.stderr:
            fit_outcome, detail = "silent wrong", "fit of an interrupted run does not say so"
        self.table.add(probe, "clear error" if fit_outcome == "exit 0" else fit_outcome, detail)

    def ranks(self, n):
        """Pids of the ranks of this probe's launch, by rank."""
        found = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as fh:
                    env = dict(kv.split(b"=", 1) for kv in fh.read().split(b"\0") if b"=" in kv)
                with open("/proc/%s/cmdline" % pid, "rb") as fh:
                    cmd = fh.read()
            except OSError:
                continue
            if b"PMI_RANK" in env and self.work.encode() in cmd and cmd.startswith(self.S.encode()):
                found[int(env[b"PMI_RANK"])] = int(pid)
        return found

    def kill_rank(self, rank):
        def stop(p):
            pids = self.ranks(2)
            os.kill(pids[rank], signal.SIGKILL)
        return stop

    def signals(self):
        S = self.S
        comm = [S, "run", "--suite", "comm", "--quick"]
        two = ["mpiexec.mpich", "-n", "2"] + comm
        compute = [S, "run", "--suite", "compute", "--quick"]
        self.interrupted("SIGTERM to a compute run of one rank", compute, lambda p: p.send_signal(signal.SIGTERM))
        self.interrupted("SIGINT to a compute run of one rank", compute, lambda p: p.send_signal(signal.SIGINT))
        self.interrupted("SIGTERM to mpiexec of 2 ranks", two, lambda p: p.send_signal(signal.SIGTERM), True)
        self.interrupted("SIGINT to mpiexec of 2 ranks", two, lambda p: p.send_signal(signal.SIGINT), True)
        self.interrupted("SIGKILL of rank 1 of 2", two, self.kill_rank(1))
        self.interrupted("SIGKILL of rank 0 of 2 (the writer)", two, self.kill_rank(0))
        self.interrupted("SIGTERM to rank 1 of 2", two, lambda p: os.kill(self.ranks(2)[1], signal.SIGTERM))

    # ------------------------------------------------------------------ full disk
    def full_disk(self):
        disk = os.path.join(self.work, "disk")
        os.mkdir(disk)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk], capture_output=True).returncode:
            print("hostile: full disk left out: cannot mount a tmpfs (needs root)")
            return
        try:
            with open(os.path.join(disk, "fill"), "wb") as fh:
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                        fh.flush()
                except OSError:
                    pass
            S = self.S
            for args in ([S, "run", "--suite", "comm", "--quick", "--collectives", "pingpong", "-o", disk + "/r.h5"],
                         ["mpiexec.mpich", "-n", "2", S, "run", "--suite", "comm", "--quick", "-o", disk + "/r2.h5"],
                         [S, "run", "--suite", "compute", "--quick", "-o", disk + "/c.h5"],
                         [S, "fit", self.results, "-o", disk + "/m.h5"],
                         [S, "merge", self.results, "-o", disk + "/merged.h5"],
                         [S, "predict", self.model, "--op", "allreduce", "--bytes", "8", "--json", disk + "/p.json"],
                         [S, "export", self.model, "--to", "astra-sim", "-o", disk + "/astra"],
                         [S, "export", self.results, "--to", "extrap", "-o", disk + "/x.json"],
                         [S, "jobscript", "-o", disk + "/job.sh"],
                         [S, "report", self.results, "-o", disk + "/report"]):
                self.expect_error("full disk", args, what=" ".join(a.replace(self.work + "/", "") for a in args))
            left = [n for n in os.listdir(disk) if n.startswith(".")]
            if left:
                self.table.add(Probe("full disk", "temporary files"), "silent wrong", "left behind: %s" % left)
        finally:
            subprocess.run(["umount", disk])

    # ------------------------------------------------------------------ concurrency
    def racing(self, what, args_of, out, right, copies=4, rounds=3):
        """copies commands writing the same out at once, rounds times: each ends with
        exit 0 or a clear error, and what is left at out is right(out) (None)."""
        probe = Probe("concurrent writers", what)
        for _ in range(rounds):
            if os.path.isdir(out):
                shutil.rmtree(out)
            elif os.path.exists(out):
                os.remove(out)
            procs = [subprocess.Popen(args_of(i), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                      cwd=self.work) for i in range(copies)]
            judged = []
            for p in procs:
                try:
                    _, err = p.communicate(timeout=RUN_SECONDS)
                    judged.append(outcomes.judge_exit(p.returncode, err))
                except subprocess.TimeoutExpired:
                    p.kill()
                    judged.append(("hang", "over %d s" % RUN_SECONDS))
            bad = [j for j in judged if j[0] in outcomes.FAILURES]
            if bad:
                self.table.add(probe, *bad[0])
                return
            if not any(j[0] == "exit 0" for j in judged):
                self.table.add(probe, "unclear error", "every writer failed: %s" % judged)
                return
            wrong = right(out)
            if wrong:
                self.table.add(probe, "silent wrong", wrong)
                return
        self.table.add(probe, "accepted, checked")

    def same_model(self, reference):
        def right(out):
            p = subprocess.run(["h5diff", "--exclude-path", "/meta", reference, out], capture_output=True, text=True)
            return None if p.returncode == 0 else "the file left differs from a fit alone: %s" % p.stdout[-300:]
        return right

    def concurrency(self):
        S = self.S
        alone = self.path("alone.model.h5")
        subprocess.run([S, "fit", self.results, "-o", alone], check=True, capture_output=True)
        shared = self.path("shared.model.h5")
        self.racing("4 fits, one output", lambda i: [S, "fit", self.results, "-o", shared], shared, self.same_model(alone))
        merged_alone = self.path("merged_alone.h5")
        subprocess.run([S, "merge", self.results, "-o", merged_alone], check=True, capture_output=True)
        merged = self.path("merged.h5")
        self.racing("4 merges, one output", lambda i: [S, "merge", self.results, "-o", merged], merged,
                    self.same_model(merged_alone))
        j = self.path("p.json")
        self.racing("4 predictions, one --json", lambda i: [S, "predict", self.model, "--op", "allreduce",
                                                            "--bytes", str(8 << i), "--json", j], j,
                    self.prediction_is_wrong)
        astra = self.path("astra")

        def astra_right(out):
            names = sorted(os.listdir(out)) if os.path.isdir(out) else []
            return None if names and not any(n.startswith(".") for n in names) else "left: %s" % names
        self.racing("4 exports, one directory", lambda i: [S, "export", self.model, "--to", "astra-sim", "-o", astra],
                    astra, astra_right)
        runs = self.path("run.h5")

        def one_complete_run(out):
            try:
                with h5py.File(out, "r") as f:
                    complete = f["meta"].attrs.get("complete")
            except OSError as e:
                return "unreadable: %s" % e
            return None if complete in ("yes", b"yes") else "complete = %r" % (complete,)
        self.racing("2 runs, one -o", lambda i: [S, "run", "--suite", "comm", "--quick", "--collectives", "pingpong",
                                                 "-m", "8:64", "-o", runs], runs, one_complete_run, copies=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sextant")
    ap.add_argument("results")
    ap.add_argument("model")
    ap.add_argument("golden")
    ap.add_argument("--only", default="command_lines,files,signals,full_disk,concurrency")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sextant-hostile.")
    os.environ["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python") + \
        os.pathsep + os.environ.get("PYTHONPATH", "")
    h = Hostile(os.path.abspath(a.sextant), os.path.abspath(a.results), os.path.abspath(a.model),
                os.path.abspath(a.golden), work)
    start = time.monotonic()
    try:
        for part in a.only.split(","):
            getattr(h, part)()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    h.table.print()
    tried = sum(r["tried"] for r in h.table.rows.values())
    print("hostile: %d bad inputs in %.0f s, %d failures" % (tried, time.monotonic() - start, len(h.table.failures)))
    sys.exit(1 if h.table.failures else 0)


if __name__ == "__main__":
    main()
