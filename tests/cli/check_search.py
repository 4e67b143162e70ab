#!/usr/bin/env python3
"""`sextant predict --train ... --search N` against an independent enumeration and against
`sextant predict --train` of each layout.

    check_search.py SEXTANT MODEL

Truths:
- the layouts: every (dp, tp, pp, micro-batch, schedule, sp) with dp*tp*pp = N that the
  proxy can run (tp divides heads and vocabulary, pp <= layers, micro-batch x dp divides
  the global batch; one stage has no schedule to choose; sequence parallelism needs tp > 1
  and micro-batch x seq tokens divisible by tp), enumerated here from those
  rules: the search must list exactly these, each once;
- each layout's time: what `sextant predict --train` with that layout prints in its own
  --json (the one predictor, reached through the command line), to 1e-12 relative;
- the order: fastest first;
- the memory limit: no layout above it, and the ones left out are counted.
Reads only the JSON documents (docs/file-formats.md).
"""
import json
import subprocess
import sys
import tempfile

sextant, model = sys.argv[1], sys.argv[2]
MODEL = dict(layers=4, hidden=64, heads=4, seq=32, vocab=256, global_batch=16)
RANKS = 8
errors = []


def run(*args, want=0):
    p = subprocess.run([sextant, "predict", model, *args], capture_output=True, text=True)
    if p.returncode != want:
        sys.exit(f"FAIL: exit {p.returncode}, expected {want}: sextant predict {' '.join(args)}\n{p.stderr}")
    return p


def predict_json(*args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        run(*args, "--json", f.name)
        return json.load(open(f.name))


def train_text(extra=None):
    d = dict(MODEL, **(extra or {}))
    return ",".join(f"{k}={v}" for k, v in d.items())


def divisors(n):
    return [k for k in range(1, n + 1) if n % k == 0]


expected = set()
for tp in divisors(RANKS):
    for pp in divisors(RANKS // tp):
        dp = RANKS // tp // pp
        if MODEL["heads"] % tp or MODEL["vocab"] % tp or MODEL["layers"] < pp or MODEL["global_batch"] % dp:
            continue
        for mb in divisors(MODEL["global_batch"] // dp):
            for schedule in (["1f1b"] if pp == 1 else ["1f1b", "gpipe"]):
                for sp in ([False, True] if tp > 1 and mb * MODEL["seq"] % tp == 0 else [False]):
                    expected.add((dp, tp, pp, mb, schedule, sp))

doc = predict_json("--train", train_text(), "--search", str(RANKS))
if doc.get("schema") != "sextant.prediction" or doc.get("kind") != "layout_search" or doc.get("schema_version") != 1:
    errors.append(f"document header {doc.get('schema')} {doc.get('kind')} {doc.get('schema_version')}")
layouts = doc["layouts"]
found = [(l["config"]["dp"], l["config"]["tp"], l["config"]["pp"], l["config"]["micro_batch"], l["config"]["schedule"],
          l["config"]["sp"]) for l in layouts]
if len(found) != len(set(found)):
    errors.append("a layout is listed twice")
if set(found) != expected:
    errors.append(f"layouts: missing {sorted(expected - set(found))}, unexpected {sorted(set(found) - expected)}")
times = [l["step_seconds"] for l in layouts]
if times != sorted(times):
    errors.append("not ordered fastest first")
for l in layouts:
    parts = sum(l["breakdown_seconds"].values())
    if abs(parts - l["step_seconds"]) > 1e-9 * l["step_seconds"]:
        errors.append(f"{l['config']}: breakdown {parts} != step {l['step_seconds']}")

# Each of the fastest, a middle and the slowest layout, predicted on its own.
for l in [layouts[0], layouts[len(layouts) // 2], layouts[-1]]:
    c = l["config"]
    one = predict_json("--train", train_text(dict(dp=c["dp"], tp=c["tp"], pp=c["pp"], micro_batch=c["micro_batch"],
                                                  schedule=c["schedule"], sp=int(c["sp"]))))
    t = one["prediction"]["step_seconds"]
    if abs(t - l["step_seconds"]) > 1e-12 * t:
        errors.append(f"dp={c['dp']} tp={c['tp']} pp={c['pp']} mb={c['micro_batch']} {c['schedule']} sp={c['sp']}: "
                      f"search says {l['step_seconds']} s, predict --train says {t} s")

# A memory limit between the smallest and the largest working set.
memory = sorted(l["memory_bytes_per_rank"] for l in layouts)
limit = memory[len(memory) // 2]
limited = predict_json("--train", train_text(), "--search", str(RANKS), "--memory-per-rank", str(int(limit)))
kept = limited["layouts"]
if any(l["memory_bytes_per_rank"] > limit for l in kept):
    errors.append("a layout above the memory limit was kept")
if len(kept) + limited["over_memory"] != len(layouts) or limited["over_memory"] != sum(m > limit for m in memory):
    errors.append(f"memory limit: kept {len(kept)} + left out {limited['over_memory']} != {len(layouts)} layouts")

# Placement: 2 ranks per node on a model measured on one level ('world' only): every
# group falls back to world, and each layout's notes say so.
placed = predict_json("--train", train_text(), "--search", str(RANKS), "--ranks-per-node", "2")
if placed.get("ranks_per_node") != 2 or any(l["levels"] != {"tp": "world", "dp": "world", "pp": "world"} or
                                            not any("no 'intra' level" in n or "no 'inter' level" in n
                                                    for n in l["notes"]) for l in placed["layouts"]):
    errors.append("--ranks-per-node on a world-only model: levels or notes wrong")
run("--train", train_text(), "--search", "8", "--ranks-per-node", "2", "--tp-level", "intra", want=2)

# Bad input: a layout key with --search, --search without --train, no layout at all.
run("--train", train_text(dict(dp=2)), "--search", "8", want=2)
run("--train", train_text(dict(sp=1)), "--search", "8", want=2)
run("--search", "8", want=2)
p = run("--train", train_text(dict(heads=3, hidden=63, vocab=255)), "--search", "7", want=1)
if "no layout" not in p.stderr:
    errors.append(f"a model with no layout on 7 ranks: {p.stderr.strip()}")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"layout search of {RANKS} ranks: {len(layouts)} layouts (expected {len(expected)}), "
      f"searched in {doc['search_seconds']:.3f} s, fastest dp={found[0][0]} tp={found[0][1]} pp={found[0][2]} "
      f"mb={found[0][3]} {found[0][4]}: {times[0]:.6g} s; {len(errors)} problems")
sys.exit(1 if errors else 0)
