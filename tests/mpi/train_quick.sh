#!/usr/bin/env bash
# mpiexec -n 2 sextant run --suite train --quick: the predicted-vs-measured table with
# its summary line, every configuration recorded, losses falling by 10%, layouts of one
# model with the same float32 loss curve as each other and as the model's single-rank
# baseline, speedups over it, a model fitted in the same run; then a
# 512-rank prediction whose breakdown adds up to its total.
# Usage: train_quick.sh SEXTANT PYTHON OUT.h5
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 output=$3
mkdir -p "$(dirname "$output")"
start=$(date +%s)
# ~60 s at one thread per rank; 240-320 s at two (4 threads on this host's 2 CPUs,
# oversubscribed: every OpenMP region waits for a descheduled thread).
# Every configuration of the quick sweep but the mixture of experts (validation.train_sweep
# runs it, mpi.train.*ep* check its loss): at two threads a rank, oversubscribed, every
# kernel waits for a descheduled thread, the experts double the kernels and their
# all-to-all is measured too: with them this test took 320-380 s of its 400.
configs=$(printf '%s,' {dp,tp,tp_sp,pp_gpipe,pp_1f1b,fsdp,dp_bf16}2.{small,medium})
expect_rc 0 timeout 400 mpiexec.mpich -n 2 "$sextant" run --suite train --quick --overwrite -o "$output" \
  --configs "${configs%,}" --json "${output%.h5}.json" --csv "${output%.h5}"
echo "$out" | tail -12
echo "train --quick: $(( $(date +%s) - start )) s"
grep -qE '^median \|error\| [0-9.]+%  max \|error\| [0-9.]+%$' <<<"$out" || fail "no summary line"
for c in dp2 tp2 tp_sp2 pp_gpipe2 pp_1f1b2 fsdp2 dp_bf162; do contains "$out" "$c.small"; contains "$out" "$c.medium"; done
"$python" - "$output" "${output%.h5}.json" "${output%.h5}" "$work/stdout" <<'PY'
import csv, json, re, sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
printed = open(sys.argv[4]).read()  # the run's standard output
train = f["train"]
assert len(train) == 14, list(train)
# The --json document: every configuration with the file's step times, prediction and
# error; the collectives and kernels the run measured for its model, as in the file.
doc = json.load(open(sys.argv[2]))
assert (doc["schema"], doc["suite"], doc["complete"]) == ("sextant.results.json", "train", True)
rows = {r["configuration"]: r for r in doc["train"]}
assert sorted(rows) == sorted(train), (sorted(rows), list(train))
for name, r in rows.items():
    g = train[name]
    assert r["step_times_s"] == list(g["step_time"][()]), name
    assert r["prediction"]["step_seconds"] == g.attrs["predicted"] and r["error"] == g.attrs["error"], name
    assert [r["prediction"]["breakdown_seconds"][n.decode() if isinstance(n, bytes) else n]
            for n in g["predicted_breakdown_names"][()]] == list(g["predicted_breakdown"][()]), name
assert len(doc["comm"]) > 0 and len(doc["compute"]["kernels"]) > 0
# --csv: a row per configuration with the JSON's numbers (its config and prediction
# flattened into columns), and the comm and compute tables of the same run.
rows = {r["configuration"]: r for r in csv.DictReader(open(sys.argv[3] + ".train.csv"))}
assert sorted(rows) == sorted(train), sorted(rows)
in_doc = {d["configuration"]: d for d in doc["train"]}
for name, r in rows.items():
    assert float(r["measured_median_s"]) == in_doc[name]["measured_median_s"], name
    assert float(r["prediction.step_seconds"]) == train[name].attrs["predicted"], name
    assert int(r["config.hidden"]) == train[name].attrs["hidden"], name
for table in ("comm", "compute", "sweep", "train_baseline"):
    assert len(list(csv.DictReader(open(sys.argv[3] + "." + table + ".csv")))) > 0, table
# The operators measured again after the sweep: a ratio to the model's times, the same
# in both files (a timing, so only its sanity is checked: a machine 5x slower or faster
# at the end than at the start is not one this test can judge either). Not measured
# when oversubscribed (CPU-restricted runs of this test): no timing means anything then.
# The collectives likewise (isolated, as measured for the model).
if any(train[n].attrs["oversubscribed"] for n in train):
    for what in ("operator_drift", "comm_drift"):
        assert what not in train.attrs and what not in doc, what
else:
    for what in ("operator_drift", "comm_drift"):
        drift = train.attrs[what]
        assert doc[what]["time_weighted"] == drift and train.attrs[what + "_cases"] > 0, what
        assert 0.2 < drift < 5, (what, drift)
# The host overhead of the messages between pipeline stages, measured at each size a
# pipeline sends (an activation or its gradient: micro-batch x seq x hidden float32s)
# and carried into the model (a timing: only that it is a number). None oversubscribed.
model = h5py.File(sys.argv[1][:-3] + ".model.h5", "r")
oversubscribed = any(train[n].attrs["oversubscribed"] for n in train)
assert ("message_bytes" in f["sync"]) == (not oversubscribed) == ("message_bytes" in model["sync"])
if not oversubscribed:
    sizes = sorted({int(train[n].attrs["micro_batch"] * train[n].attrs["seq"] * train[n].attrs["hidden"] * 4)
                    for n in train if train[n].attrs["pp"] > 1})
    assert list(f["sync/message_bytes"][()]) == sizes, (list(f["sync/message_bytes"][()]), sizes)
    assert np.isfinite(f["sync/message_overhead_seconds"][()]).all()
    assert (model["sync/message_overhead_seconds"][()] == f["sync/message_overhead_seconds"][()]).all()
# Both forms of every collective a plan sends: back to back (OSU's) at the sweep's sizes
# and the plans', and isolated (after idle) at the plans' sizes, fitted apart.
for coll in ("allreduce", "reduce_scatter", "allgather"):
    plain, isolated = f["comm/world/" + coll + "/float32/p2"], f["comm/world/" + coll + "~isolated/float32/p2"]
    assert set(isolated["bytes"][()]) <= set(plain["bytes"][()]), coll
    assert len(isolated["bytes"]) < len(plain["bytes"]) and (isolated["gap"][()] > 0).all(), coll
    assert (plain["gap"][()] == 0).all(), coll
    assert {coll, coll + "~isolated"} <= set(model["comm/world"]), coll
# Each configuration's kernels measured just before and after its steps and its
# partners' wait before them, the kernels against the model: recorded in both files; a
# configuration run more than once (40% of its steps slowed, up to 3 runs) is one the
# table said it measured again. Its prediction from the model file as fitted is kept
# beside the one from those.
for name in train:
    a, d = train[name].attrs, in_doc[name]
    assert a["attempts"] == d["attempts"] and 1 <= a["attempts"] <= 3, (name, a["attempts"])
    said = re.search(r"\(%s: \d+%% of the steps slowed: measured again\)" % re.escape(name), printed) is not None
    assert (a["attempts"] > 1) == said, (name, int(a["attempts"]), said)
    from_file = a["predicted_from_model_file"]
    assert from_file > 0 and d["predicted_from_model_file_s"] == from_file, name
    assert abs(a["error_from_model_file"] - (from_file / a["measured_median"] - 1)) < 1e-9, name
    if a["oversubscribed"]:  # nothing measured before the steps: the model file's prediction
        assert "kernels_vs_model" not in a and d["kernels_vs_model"] is None, name
        assert "partners_wait_excess" not in train[name] and d["partners_wait"] is None, name
        for what in ("before", "after"):
            assert "kernels_%s_by_rank_seconds" % what not in train[name], (name, what)
            assert d["kernels_%s_by_rank_s" % what] is None, (name, what)
        assert "kernels_rank" not in a and d["kernels_rank"] is None, name
        assert a["predicted"] == from_file, name
    else:
        assert d["kernels_vs_model"] == a["kernels_vs_model"] and 0.2 < a["kernels_vs_model"] < 5, name
        # The intervals the suite measured at (0.1 to 30 ms of work a block); an excess is
        # a share of its interval (a timing: only that it is one).
        t, e = train[name]["partners_wait_interval_seconds"][()], train[name]["partners_wait_excess"][()]
        assert len(t) == len(e) == len(f["sync/interval_seconds"]), (name, t)
        assert 1e-5 < t[0] and t[-1] < 1 and np.isfinite(e).all(), (name, t, e)
        assert d["partners_wait"] == {"interval_s": list(t), "excess": list(e)}, name
        # The kernels measured just before and just after the steps: the prediction's are
        # the slowest rank's, each rank's measurement that took less in all.
        before, after = (train[name]["kernels_%s_by_rank_seconds" % w][()] for w in ("before", "after"))
        assert d["kernels_before_by_rank_s"] == list(before) and d["kernels_after_by_rank_s"] == list(after), name
        assert len(before) == len(after) == 2 and (before > 0).all() and (after > 0).all(), (name, before, after)
        slowest = int(np.argmax(np.minimum(before, after)))
        assert a["kernels_rank"] == d["kernels_rank"] == slowest, (name, a["kernels_rank"], before, after)
BREAKDOWN = ["forward compute", "backward compute", "tp communication", "ep communication", "pp communication",
             "pipeline bubble", "dp communication (exposed)", "optimizer"]
SHAPE = ("layers", "hidden", "heads", "seq", "vocab", "micro_batch", "global_batch", "dtype", "experts", "top_k", "capacity")
curves = {}
# compress=bf16 rounds the dp gradients: its curve is the others' within bfloat16's
# precision (train_check's compressed_limit, 4 dp 2^-8: 3.1% at dp = 2) and further from
# them than reordering moves a curve (5e-7, below; 10x that), or nothing was rounded.
compressed = {n for n in train if train[n].attrs["compress"] == "bf16"}
assert compressed == {"dp_bf162.small", "dp_bf162.medium"}, compressed
def compressed_limit(g):
    return 4 * int(g.attrs["dp"]) * 2.0**-8
for name in train:
    g = train[name]
    loss = g["loss"][()]
    # Training trains: over 8 steps (and the warm-up) the loss falls by at least 10%
    # (measured 18-45% across the sweep's configurations).
    assert loss[-1] <= 0.9 * loss[0], "%s: loss did not fall by 10%%: %s" % (name, loss)
    assert g.attrs["predicted"] > 0 and g.attrs["measured_median"] > 0, name
    names = [n.decode() if isinstance(n, bytes) else n for n in g["predicted_breakdown_names"][()]]
    assert names == BREAKDOWN, "%s: breakdown %s" % (name, names)
    assert abs(sum(g["predicted_breakdown"][()]) - g.attrs["predicted"]) <= 1e-9 * g.attrs["predicted"], name
    key = tuple(str(g.attrs[k]) for k in SHAPE)
    if name not in compressed:
        curves.setdefault(key, []).append((name, loss))
# Every layout of one model size (DP, TP, GPipe, 1F1B, FSDP: the sweep gives them one global
# batch) trains the same model on the same data: their float32 loss curves agree to the
# reordering of sums, measured 2e-8..5e-7 relative (TP splits the GEMM sums); a layout
# that drops or doubles a gradient or an activation's reduction moves the loss by
# >= 1e-2 within a few steps (train_check's float64 parity tests). Limit 1e-4.
compared = 0
for key, runs in curves.items():
    first_name, first = runs[0]
    for name, loss in runs[1:]:
        n = min(len(loss), len(first))  # layouts may run different step counts (a time floor)
        worst = float(np.max(np.abs(loss[:n] - first[:n]) / np.abs(first[:n])))
        print("%s vs %s: loss curves differ by %.2g relative" % (name, first_name, worst))
        assert worst <= 1e-4, "%s vs %s: loss curves differ by %.3g" % (name, first_name, worst)
        compared += 1
assert len(curves) == 2 and compared == len(train) - len(compressed) - len(curves), \
    "expected the 6 uncompressed layouts of each of 2 model sizes to compare, found %s" % {k: [n for n, _ in v] for k, v in curves.items()}
# The single-rank baseline of each model size: rank 0 alone trains the same model on the
# same data with the same global batch, so its loss curve is every layout's (the layouts'
# own independent truth: one rank, no communication), and each configuration's speedup
# is the baseline's median step over its own, in the file, the JSON and the table.
base = f["train_baseline"]
assert sorted(base) == ["single.medium.p2", "single.small.p2"], list(base)
in_json = {d["configuration"]: d for d in doc["train_baseline"]}
assert sorted(in_json) == sorted(base), sorted(in_json)
for name in train:
    b = base[train[name].attrs["baseline"]]  # a wrong one's curve is another model's: caught below
    assert in_json[b.name.split("/")[-1]]["measured_median_s"] == b.attrs["measured_median"]
    n = min(len(b["loss"]), len(train[name]["loss"]))
    worst = float(np.max(np.abs(train[name]["loss"][:n] - b["loss"][:n]) / np.abs(b["loss"][:n])))
    # The layouts' limit above, for the same reason: one rank only reorders the sums
    # (measured: pipelines bit-equal, TP and DP within 5e-7). Compressed: bfloat16's.
    if name in compressed:
        print("%s vs its single-rank baseline: loss curves differ by %.2g relative" % (name, worst))
        limit = compressed_limit(train[name])
        assert 5e-6 < worst <= limit, "%s vs its single-rank baseline: %.3g (limit %.3g)" % (name, worst, limit)
    else:
        assert worst <= 1e-4, "%s vs its single-rank baseline: loss curves differ by %.3g" % (name, worst)
    speedup = b.attrs["measured_median"] / train[name].attrs["measured_median"]
    assert train[name].attrs["speedup"] == speedup and in_doc[name]["speedup"] == speedup, name
    row = [l for l in printed.splitlines() if l.startswith(name + " ")][0]
    assert ("%.2fx" % speedup) in row.split(), (name, row)
print("train results: %d configurations, %d layout pairs with the same loss curve, each with its single-rank "
      "baseline's (speedups %s)" % (len(train), compared,
                                    " ".join("%.2f" % train[n].attrs["speedup"] for n in sorted(train))))
PY
model=${output%.h5}.model.h5
[ -f "$model" ] || fail "no model fitted in the run"
expect_rc 0 "$sextant" predict "$model" \
  --train layers=24,hidden=2048,heads=16,seq=2048,vocab=50304,micro_batch=1,global_batch=512,dp=64,tp=8,pp=1
echo "$out"
contains "$out" "512 ranks = DP 64 x TP 8 x PP 1"
"$python" - <<PY
import re
lines = """$out""".splitlines()
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def seconds(text):
    v, u = text.split()
    return float(v) * unit[u]
# Numbers as %.4g prints them: 12.3 ms, 2.407e+04 s (an oversubscribed run's model).
number = r"[0-9.]+(?:e[+-]?[0-9]+)? (?:ns|us|ms|s)"
parts = [seconds(m.group(1)) for l in lines if (m := re.match(r"^  (?!total)[a-z() ]+?\s{2,}(" + number + r")\s", l))]
total = [seconds(m.group(1)) for l in lines if (m := re.match(r"^predicted step time (" + number + ")", l))][0]
assert len(parts) == 8, parts  # the breakdown rows (models/step_predictor.hpp)
assert abs(sum(parts) - total) <= 0.002 * total, (sum(parts), total)
print("breakdown adds up: %.4g s = %.4g s" % (sum(parts), total))
PY
expect_rc 2 "$sextant" predict "$model" --train layers=3,hidden=64,heads=4,dp=2,tp=3

echo "train suite: ok"
