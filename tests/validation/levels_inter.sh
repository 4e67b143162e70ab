#!/usr/bin/env bash
# levels_inter.sh SEXTANT PYTHON OUTDIR
#
# The node levels outside Slurm, on the namespace cluster in $SEXTANT_NETNS_STATE: 2
# hosts x 2 ranks (4 hosts' cluster, the first two used), --levels world,intra,inter.
# Truth: the injected network. Each level holds its own communicator (world p4, intra
# p2: the two ranks of a host, inter p2: one rank per host), and the ping-pong of the
# inter level crosses the delay line while the intra one stays inside a host: the
# inter level's small-message time is at least the injected one-way delay D, the intra
# level's well below it (TCP over the host's loopback, no delay line). The ordering
# holds with a margin of D (200 us) against the scheduling noise of 4 ranks on 2 CPUs.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 SEXTANT PYTHON OUTDIR" >&2; exit 2; }
sextant=$1 python=$2 out=$3
source "$(dirname "$0")/netns/test_prelude.sh"
netns_test_prelude "the node levels" "$out"
delay_us=$(sed -n 's/^delay_us=//p' "$SEXTANT_NETNS_STATE/config" 2>/dev/null || true)
[ -n "$delay_us" ] || { echo "FAIL: the cluster's config does not say its delay" >&2; exit 1; }
rm -f "$out/levels.h5"
# Ranks oversubscribe the CPUs without sextant knowing (each host its own CPU set):
# --wait yield.
"$cluster" mpiexec --timeout 200 -hosts h0,h1 -ppn 2 -n 4 "$sextant" run --suite comm \
  --collectives pingpong,allreduce --levels world,intra,inter -m 8:4K -f 8 -i 40 --budget 0.3 --wait yield \
  -o "$out/levels.h5" >"$out/levels.out"
cat "$out/levels.out"
"$python" - "$out/levels.h5" "$delay_us" <<'PY'
import sys
import h5py
path, delay = sys.argv[1], float(sys.argv[2]) * 1e-6
errors = []
with h5py.File(path, "r") as f:
    want = {"world": "p4", "intra": "p2", "inter": "p2"}
    for level, group in want.items():
        for bench in ("pingpong", "allreduce"):
            dtype = "byte" if bench == "pingpong" else "float32"
            have = sorted(f[f"comm/{level}/{bench}/{dtype}"]) if f"comm/{level}/{bench}/{dtype}" in f else []
            if have != [group]:
                errors.append(f"{level}/{bench}: groups {have}, expected [{group}]")
    small = {level: float(f[f"comm/{level}/pingpong/byte"][want[level]]["median"][0]) for level in ("intra", "inter")}
print(f"ping-pong at 8 B: intra {small['intra'] * 1e6:.1f} us, inter {small['inter'] * 1e6:.1f} us, "
      f"injected one-way delay {delay * 1e6:.0f} us")
if not small["inter"] >= delay:
    errors.append("the inter level did not cross the injected delay")
if not small["intra"] < delay / 2:
    errors.append("the intra level took as long as the network")
for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
