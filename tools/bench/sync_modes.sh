#!/usr/bin/env bash
# Benchmark (not a test): the 8-byte ping-pong latency under barrier and window
# synchronisation, measured side by side in one run, alternating launches so both
# modes see the same machine state; and the spread (CV) of each mode across launches.
#   tools/bench/sync_modes.sh [LAUNCHES] [SEXTANT]
set -euo pipefail
launches=${1:-8}
sextant=${2:-$(dirname "$0")/../../build/release/tools/sextant}
python=/usr/bin/python3; [ -x "$python" ] || python=python3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$launches"); do
  for mode in barrier window; do
    timeout 120 mpiexec.mpich -n 2 "$sextant" run --suite comm --collectives pingpong -m 8:8 -i 20000 \
      --budget 2 --precision 0.005 --sync "$mode" --json "$work/$mode-$i.json" -o "$work/$mode-$i.h5" >/dev/null 2>&1
  done
done
"$python" - "$work" "$launches" <<'PY'
import json, statistics, sys
work, n = sys.argv[1], int(sys.argv[2])
print(f"8-byte ping-pong one-way latency, 2 ranks, {n} launches per mode (alternating)")
print(f"{'mode':8} {'median of launch medians (us)':>30} {'min (us)':>9} {'max (us)':>9} {'CV across launches':>19} {'mean CI95 half-width':>21}")
res = {}
for mode in ("barrier", "window"):
    meds, hw = [], []
    for i in range(1, n + 1):
        s = json.load(open(f"{work}/{mode}-{i}.json"))[0]["sizes"][0]
        meds.append(s["median_s"] * 1e6)
        hw.append((s["ci_hi_s"] - s["ci_lo_s"]) / 2 / s["median_s"] * 100)
    cv = statistics.stdev(meds) / statistics.mean(meds) * 100 if n > 1 else 0.0
    res[mode] = statistics.median(meds)
    print(f"{mode:8} {statistics.median(meds):30.3f} {min(meds):9.3f} {max(meds):9.3f} {cv:18.1f}% {statistics.mean(hw):20.2f}%")
print(f"ratio window/barrier: {res['window'] / res['barrier']:.3f}")
PY
