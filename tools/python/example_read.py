#!/usr/bin/env python3
"""Example: read a sextant results file and a model file, and predict with the model.

    PYTHONPATH=<build>/python python3 example_read.py RESULTS.h5 MODEL.h5

Prints the pingpong table (message size, median time, bus bandwidth) and the
model's prediction for an 8 KiB pingpong, for each rank count the results
file holds pingpong at; then, where the model has an algorithm view of
allreduce, the algorithm it identified per size range and a prediction at a
rank count that was not measured. The data come from sextant_files (h5py); the
predictions from the `sextant` module, the C++ model itself.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sextant  # noqa: E402  (bindings/python: the C++ model)
import sextant_files as sf  # noqa: E402

if len(sys.argv) != 3:
    sys.exit("usage: example_read.py RESULTS.h5 MODEL.h5")
try:
    results, model = sf.open_results(sys.argv[1]), sf.open_model(sys.argv[2])
    predictor = sextant.Model(sys.argv[2])
except (sf.SchemaError, ValueError) as e:
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

    p = predictor.predict_comm("pingpong", 8192, dtype="byte", ranks=ranks)
    print("model: pingpong 8 KiB on %d ranks takes %.3f us (alpha %.3f us + beta part %.3f us), busbw %.3f GB/s%s%s"
          % (ranks, p["seconds"] * 1e6, p["terms_seconds"]["alpha"] * 1e6, p["terms_seconds"]["beta"] * 1e6,
             p["busbw_Bps"] / 1e9, ", EXTRAPOLATED" if p["extrapolated_bytes"] else "",
             " (from the fit at %d ranks)" % p["fitted_ranks"] if p["extrapolated_ranks"] else ""))

# The algorithm view: which algorithm the library ran per size range, costed on
# the pingpong link at a rank count that was not measured.
for level, bench, dtype, ranks in model.algorithms():
    if bench != "allreduce":
        continue
    a = model.algorithm_fit(level, bench, dtype, ranks)
    print("allreduce (%s, %s) at %d ranks ran: %s" % (level, dtype, ranks, "; ".join(
        "%d..%d B %s (x%.2f)" % (lo, hi, name, cal)
        for lo, hi, name, cal in zip(a["lo_bytes"], a["hi_bytes"], a["algorithm"], a["calibration"]))))
    fitted = model.fit(level, bench, dtype, ranks)["ranks"]
    other = 4 * fitted if 4 * fitted not in {k[3] for k in model.fits()} else 4 * fitted + 1
    p = predictor.predict_comm(bench, 1 << 20, level=level, dtype=dtype, ranks=other)
    terms = p["terms_seconds"]
    print("model: allreduce 1 MiB on %d ranks takes %.3f us (%s view: %s x%.2f; alpha %.3f + beta %.3f"
          " + gamma %.3f us), busbw %.3f GB/s" % (other, p["seconds"] * 1e6, p["view"], p.get("algorithm", "-"),
                                                  p.get("calibration", 1.0), terms["alpha"] * 1e6, terms["beta"] * 1e6,
                                                  terms["gamma"] * 1e6, p["busbw_Bps"] / 1e9))
    break
results.close()
