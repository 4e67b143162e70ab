#!/usr/bin/env python3
"""A rank runs no more threads of its own than its threads per rank.

rank_threads.py SEXTANT WORKDIR

Runs `sextant run --suite comm --quick` on 2 ranks with OMP_NUM_THREADS unset (each rank
takes its share of the CPUs) and OMP_WAIT_POLICY=active, and samples every rank's
threads while it runs. The OpenMP runtime's default team is every CPU the process may
use; a worker started beyond the rank's own count (Kokkos counts its threads with a team
of that default size) sits on the partner rank's CPU, and under an active wait policy
spins there for the whole run. Truth: the threads per rank the results file records. A thread that
the process names as itself is one of its own (the MPI library's helpers carry their own
names). Exit 0: every sample within; 1: a sample over, or nothing sampled.
"""
import os
import subprocess
import sys
import time

import h5py


def own_threads(pid):
    """The tasks of pid that carry the process's own name (None once it has exited)."""
    try:
        name = open(f"/proc/{pid}/comm").read().strip()
        tasks = os.listdir(f"/proc/{pid}/task")
        return sum(1 for t in tasks if open(f"/proc/{pid}/task/{t}/comm").read().strip() == name)
    except OSError:
        return None


def ranks_of(marker):
    """Processes whose command line holds marker (the run's unique output path), the launcher's aside."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv and os.path.basename(argv[0]) == b"sextant":
            out.append(int(pid))
    return out


def main():
    sextant, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    results = os.path.join(work, f"threads.{os.getpid()}.h5")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["OMP_WAIT_POLICY"] = "active"
    run = subprocess.Popen(["mpiexec.mpich", "-n", "2", sextant, "run", "--suite", "comm", "--quick",
                            "--collectives", "allreduce,bcast", "-o", results, "--overwrite"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    most = {}  # pid -> the most own threads seen
    deadline = time.monotonic() + 200
    while run.poll() is None and time.monotonic() < deadline:
        for pid in ranks_of(results):
            n = own_threads(pid)
            if n is not None:
                most[pid] = max(most.get(pid, 0), n)
        time.sleep(0.02)
    if run.poll() is None:
        run.kill()
        print("FAIL: the run did not end within 200 s")
        return 1
    output = run.stdout.read()
    if run.returncode != 0:
        print(output[-3000:])
        print(f"FAIL: sextant run exited {run.returncode}")
        return 1
    with h5py.File(results, "r") as f:
        per_rank = int(f["meta"].attrs["threads_per_rank"])
    os.remove(results)
    if len(most) < 2:
        print(f"FAIL: sampled {len(most)} rank(s) of 2 while the run lasted: nothing to judge")
        return 1
    print(f"threads per rank (the results file): {per_rank}; the most own threads seen per rank: "
          + ", ".join(f"pid {p}: {n}" for p, n in sorted(most.items())))
    over = {p: n for p, n in most.items() if n > per_rank}
    if over:
        print(f"FAIL: {len(over)} rank(s) ran more threads of their own than the {per_rank} per rank they recorded "
              "(an OpenMP worker beyond the rank's count shares its partner's CPU)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
