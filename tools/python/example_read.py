#!/usr/bin/env python3
"""Example: read a sextant results file and a model file.

    python3 example_read.py RESULTS.h5 MODEL.h5

Prints the pingpong table (message size, median time, bus bandwidth) and the
model's prediction for an 8 KiB pingpong, for each rank count the results
file holds pingpong at.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sextant_files as sf  # noqa: E402

if len(sys.argv) != 3:
    sys.exit("usage: example_read.py RESULTS.h5 MODEL.h5")
try:
    results, model = sf.open_results(sys.argv[1]), sf.open_model(sys.argv[2])
except sf.SchemaError as e:
    sys.exit("example_read: %s" % e)

print("results from %s (%s ranks, %s %s)" % (results.meta.get("host"), results.meta.get("ranks"),
                                             results.meta.get("mpi_library"), results.meta.get("mpi_version")))
# A file may hold pingpong at several communicator sizes (runs merged across
# node counts): one table per rank count.
rank_counts = results.ranks("world", "pingpong", "byte")
if not rank_counts:
    sys.exit("example_read: %s has no world pingpong" % results.path)
for ranks in rank_counts:
    t = results.table("world", "pingpong", "byte", ranks)
    print("pingpong on %d ranks" % ranks)
    print("%10s %12s %12s" % ("bytes", "median(us)", "busbw(GB/s)"))
    for n, med, bw in zip(t["bytes"], t["median"], t["busbw"]):
        print("%10d %12.3f %12.3f" % (n, med * 1e6, bw / 1e9))

    p = model.predict("pingpong", 8192, ranks=ranks)
    print("model: pingpong 8 KiB on %d ranks takes %.3f us (alpha %.3f us + beta part %.3f us), busbw %.3f GB/s%s%s"
          % (ranks, p["seconds"] * 1e6, p["alpha_part"] * 1e6, p["beta_part"] * 1e6, p["busbw"] / 1e9,
             ", EXTRAPOLATED" if p["extrapolated"] else "",
             " (from the fit at %d ranks)" % p["ranks"] if p["extrapolated_ranks"] else ""))
results.close()
