#!/usr/bin/env python3
"""Print injected vs fitted values of every ping-pong pair (rows by check_pt2pt.py).

summary.py OUTDIR NAME...   exit 0 when every row is present and within tolerance,
77 (skipped) when not root: then the pairs did not run either.
"""
import json
import os
import sys
import time

STALE_S = 3600  # a row older than this is from an earlier ctest run


def main():
    out, names = sys.argv[1], sys.argv[2:]
    if os.geteuid() != 0:
        print("SKIP: the network validation needs root; no pairs were measured", file=sys.stderr)
        return 77
    # err: against the delay the lines applied (judged); vs D: against the nominal delay.
    print(f"{'pair':<20} {'D us':>6} {'rate':>8} | {'alpha us':>9} {'-alpha0':>8} {'applied':>8} {'err':>7} "
          f"{'vs D':>7} | {'goodput MB/s':>12} {'fitted MB/s':>11} {'err':>7} | {'segs':>4} {'large from':>10}  ok")
    ok = True
    for name in names:
        path = f"{out}/{name}.row.json"
        try:
            age = time.time() - os.path.getmtime(path)
            with open(path) as f:
                r = json.load(f)
        except OSError:
            age, r = None, None
        if r is None or age > STALE_S:
            why = "no result" if r is None else f"only a result from {age / 3600:.1f} h ago"
            print(f"{name:<20} ({why}: the test did not run or failed before the check)")
            ok = False
            continue
        delta = "-" if r["delta"] is None else f"{r['delta'] * 1e6:8.1f}"
        aerr = "(cal)" if r["alpha_err"] is None else f"{r['alpha_err'] * 100:+6.1f}%"
        nominal = "-" if r.get("alpha_err_nominal") is None else f"{r['alpha_err_nominal'] * 100:+6.1f}%"
        applied = "-" if r.get("applied_us") is None else f"{r['applied_us']:8.1f}"
        print(f"{name:<20} {r['delay_us']:>6g} {r['rate']:>8} | {r['alpha'] * 1e6:9.1f} {delta:>8} {applied:>8} "
              f"{aerr:>7} {nominal:>7} | "
              f"{r['goodput'] / 1e6:12.2f} {r['bw'] / 1e6:11.2f} {r['bw_err'] * 100:+6.1f}% | "
              f"{r['segments']:>4} {int(r['large_range'][0]):>10}  {'yes' if r['ok'] else 'NO'}")
        ok = ok and r["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
