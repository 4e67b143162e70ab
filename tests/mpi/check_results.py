"""Checks a comm-suite results file with h5py alone (independent of sextant's reader).

usage: check_results.py FILE --ranks N [--all] [--oversubscribed] [--wrong] [--window] [--levels L,...]
                        [--late-rank R [--widened SECONDS]] [--stalled] [--rank-counts P,...] [--json FILE] [--table FILE]
"""
import argparse
import math
import sys

import h5py
import numpy as np

ALL = ["pingpong", "bandwidth", "bibandwidth", "multi_latency", "multi_bandwidth", "barrier", "bcast",
       "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall", "gather", "scatter", "reduce_local",
       "iallreduce", "iallgather", "ireduce_scatter", "ialltoall", "ibcast"]
PROVENANCE = ["host", "cpu_model", "cores", "mpi_library", "mpi_version", "kokkos_version", "kokkos_backend",
              "compiler", "git_revision", "command_line", "date_utc", "rank_placement"]
STATS = ["bytes", "count", "median", "ci_lo", "ci_hi", "min", "mean", "max", "p5", "p95", "p99", "cv",
         "algbw", "busbw", "valid", "total", "wrong", "wrong_in_place", "stop_reason", "sync_window", "unmeasured"]

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--all", action="store_true", help="every benchmark must be present")
ap.add_argument("--oversubscribed", action="store_true")
ap.add_argument("--wrong", action="store_true", help="expect wrong values to be recorded")
ap.add_argument("--window", action="store_true", help="window sync: every group says so, clock residual recorded")
ap.add_argument("--levels", help="the level groups the file must hold, exactly (e.g. world,intra)")
ap.add_argument("--table", help="the run's standard output: an OSU-style regex on each table (^SIZE\\s+(\\S+)) must "
                "give the file's medians in microseconds")
ap.add_argument("--json", help="the run's --json document: the same statistics as the file, complete")
ap.add_argument("--rank-counts", help="a rank sweep: every benchmark must hold exactly these rank groups "
                "(default: the launch's ranks)")
ap.add_argument("--passes", type=int, default=1, help="the run measured its sizes in this many passes: each group "
               "says so, and every size pooled at least that many iterations")
ap.add_argument("--late-rank", type=int, help="the run forced this rank's window starts late (--test-late-rank): "
                "without --widened every size must be stored as missing, with its reason and no time")
ap.add_argument("--stalled", action="store_true", help="the run stalled a rank in each size's first two batches "
                "(--test-stall-rank): every size must be measured, after late starts")
ap.add_argument("--widened", type=float, help="the late rank waited this long before each start: every size must "
                "be measured, on a window widened past it, after late starts")
a = ap.parse_args()
errors = []

with h5py.File(a.file, "r") as f:
    meta = f["meta"].attrs
    if meta["schema"] != "sextant.results" or int(meta["schema_version"]) != 1:
        errors.append("bad schema in /meta")
    errors += [f"/meta lacks {k}" for k in PROVENANCE if k not in meta]
    complete = meta.get("complete")
    complete = complete.decode() if isinstance(complete, bytes) else complete
    if complete != "yes":
        errors.append(f"/meta complete is {complete!r} after a run that finished")
    if int(meta["ranks"]) != a.ranks:
        errors.append(f"/meta ranks {meta['ranks']} != {a.ranks}")
    found = set()
    rank_groups = {}  # (level, benchmark, dtype) -> rank groups written
    total_wrong = 0
    for level in f["comm"]:
        for bench in f["comm"][level]:
            for dtype in f["comm"][level][bench]:
              rank_groups[(level, bench, dtype)] = set(f["comm"][level][bench][dtype])
              for ranks in f["comm"][level][bench][dtype]:
                g = f["comm"][level][bench][dtype][ranks]
                where = g.name
                if ranks != f"p{int(g.attrs['ranks'])}":
                    errors.append(f"{where}: group name does not match ranks attribute {g.attrs['ranks']}")
                found.add(bench)
                n = len(g["bytes"])
                if n == 0:
                    errors.append(f"{where}: no sizes")
                for k in STATS:
                    if k not in g or len(g[k]) != n:
                        errors.append(f"{where}: dataset {k} missing or of wrong length")
                if bool(g.attrs["oversubscribed"]) != a.oversubscribed:
                    errors.append(f"{where}: oversubscribed attribute is {g.attrs['oversubscribed']}")
                total = g["total"][()]
                valid = g["valid"][()]
                late = g["late"][()]
                med, lo, hi = g["median"][()], g["ci_lo"][()], g["ci_hi"][()]
                window = g["sync_window"][()]
                reasons = [r.decode() if isinstance(r, bytes) else r for r in g["unmeasured"][()]]
                for i in range(n):
                    s = g["samples"][f"{i:03d}"]
                    if s.shape != (total[i], int(g.attrs["ranks"])):
                        errors.append(f"{where}: samples/{i:03d} shape {s.shape} != ({total[i]}, ranks)")
                    if a.window != np.isfinite(window[i]) or (a.window and not window[i] > 0):
                        errors.append(f"{where}: size {i}: sync_window {window[i]} in {'window' if a.window else 'barrier'} mode")
                    t = np.asarray(s)
                    if a.late_rank is not None and a.widened is None:
                        # Forced late on one rank: nothing to measure, and nothing made up.
                        if not reasons[i] or not math.isnan(med[i]) or valid[i] >= 3 or late[i] + valid[i] != total[i]:
                            errors.append(f"{where}: size {i}: late rank not stored as missing: median {med[i]} "
                                          f"valid {valid[i]} late {late[i]} reason {reasons[i]!r}")
                        if not np.isnan(t[:, a.late_rank]).all():
                            errors.append(f"{where}: size {i}: the late rank has timed samples")
                        continue
                    if reasons[i]:
                        errors.append(f"{where}: size {i}: stored as not measured: {reasons[i]}")
                        continue
                    if a.stalled and not (late[i] > 0 and valid[i] >= 3):
                        errors.append(f"{where}: size {i}: no stall seen or survived (late {late[i]}, valid {valid[i]})")
                    if a.widened is not None and not (window[i] > a.widened and late[i] > 0 and valid[i] >= 3):
                        errors.append(f"{where}: size {i}: window {window[i]} s not widened past the late rank's "
                                      f"{a.widened} s (late {late[i]}, valid {valid[i]})")
                    if valid[i] < 1 or not (lo[i] <= med[i] <= hi[i]) or not med[i] > 0:
                        errors.append(f"{where}: size {i}: median {med[i]} CI [{lo[i]}, {hi[i]}] valid {valid[i]}")
                    # the stored median is the median of the max-over-ranks of valid iterations
                    ok = ~np.isnan(t).any(axis=1)
                    coll = t[ok].max(axis=1)
                    if len(coll) != valid[i] or not math.isclose(np.median(coll), med[i], rel_tol=1e-9):
                        errors.append(f"{where}: size {i}: median not reproducible from samples")
                if int(g.attrs["passes"]) != a.passes:
                    errors.append(f"{where}: passes attribute {g.attrs['passes']}, the run's {a.passes}")
                if (total < a.passes).any():
                    errors.append(f"{where}: fewer iterations than passes: {total}")
                sync = g.attrs["sync"]
                sync = sync.decode() if isinstance(sync, bytes) else sync
                if sync != ("window" if a.window else "barrier"):
                    errors.append(f"{where}: sync attribute {sync!r}")
                if a.window:
                    # The residual of the clock synchronisation: measured 4e-9..8e-8 s on
                    # shared memory; above 1 ms, window starts at these sizes mean nothing.
                    r = g["clock_residual"][()]
                    if not (np.isfinite(r) & (r >= 0) & (r < 1e-3)).all():
                        errors.append(f"{where}: clock residual {r} not a measured residual below 1 ms")
                total_wrong += int(g["wrong"][()].sum() + g["wrong_in_place"][()].sum())
    if a.all:
        errors += [f"benchmark {b} missing" for b in ALL if b not in found]
    want_groups = {f"p{p}" for p in (a.rank_counts.split(",") if a.rank_counts else [a.ranks])}
    for (level, bench, dtype), groups in rank_groups.items():
        if level == "world" and groups != want_groups:
            errors.append(f"/comm/{level}/{bench}/{dtype}: rank groups {sorted(groups)}, expected {sorted(want_groups)}")
    if a.levels and set(f["comm"]) != set(a.levels.split(",")):
        errors.append(f"levels written {sorted(f['comm'])}, expected {a.levels}")
    if a.wrong and total_wrong == 0:
        errors.append("expected wrong values recorded, found none")
    if not a.wrong and total_wrong != 0:
        errors.append(f"{total_wrong} wrong values recorded")

if a.json:
    # The JSON document (docs/file-formats.md) against the HDF5 file: every group's
    # statistics, equal (JSON null where the file has NaN).
    import json
    doc = json.load(open(a.json))
    if (doc.get("schema"), doc.get("schema_version"), doc.get("suite"), doc.get("complete")) != \
            ("sextant.results.json", 1, "comm", True):
        errors.append(f"{a.json}: header {doc.get('schema')} {doc.get('schema_version')} {doc.get('suite')} "
                      f"complete={doc.get('complete')}")
    if doc.get("meta", {}).get("ranks") != a.ranks:
        errors.append(f"{a.json}: meta ranks {doc.get('meta', {}).get('ranks')}")
    with h5py.File(a.file, "r") as f:
        seen = 0
        for item in doc.get("comm", []):
            path = f"comm/{item['level']}/{item['benchmark']}/{item['dtype']}/p{item['ranks']}"
            if path not in f:
                errors.append(f"{a.json}: {path} is not in the results file")
                continue
            seen += 1
            g = f[path]
            for k, key in (("median", "median_s"), ("ci_lo", "ci_lo_s"), ("p99", "p99_s")):
                stored = [None if math.isnan(v) else float(v) for v in g[k][()]]
                if [s_.get(key) for s_ in item["sizes"]] != stored:
                    errors.append(f"{a.json}: {path} {key} differs from the file's {k}")
            if [s_["bytes"] for s_ in item["sizes"]] != [int(b) for b in g["bytes"][()]]:
                errors.append(f"{a.json}: {path} sizes differ from the file's")
        groups = sum(len(f["comm"][l][b][d]) for l in f["comm"] for b in f["comm"][l] for d in f["comm"][l][b])
        if seen != groups:
            errors.append(f"{a.json}: {seen} benchmark groups, the file has {groups}")

if a.table:
    # The tables as OSU users parse them: a benchmark's title line '# NAME ...', then
    # per size a line starting with the size, the median (us) right after it.
    import re
    size_line = re.compile(r"^(\d+)\s+(\S+)")
    tables, current = {}, None
    for line in open(a.table):
        title = re.match(r"^# ([\w@~]+)  level=(\w+)  ranks=(\d+)  dtype=(\w+)", line)  # allreduce@ring, bcast~isolated
        if title:
            current = tables.setdefault(title.groups(), {})
        elif current is not None and (m := size_line.match(line)):
            current[int(m.group(1))] = m.group(2)
    if not tables:
        errors.append(f"{a.table}: no benchmark table")
    with h5py.File(a.file, "r") as f:
        for (bench, level, ranks, dtype), rows in tables.items():
            g = f[f"comm/{level}/{bench}/{dtype}/p{ranks}"]
            want = {int(b): ("-" if math.isnan(m) else f"{m * 1e6:.3f}") for b, m in zip(g["bytes"][()], g["median"][()])}
            if rows != want:
                errors.append(f"{a.table}: {bench} {level}: the regex read {rows}, the file has {want}")

for e in errors[:30]:
    print("FAIL:", e, file=sys.stderr)
print(f"{a.file}: {len(found)} benchmarks checked, {len(errors)} problems")
sys.exit(1 if errors else 0)
