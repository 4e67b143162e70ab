#!/usr/bin/env python3
"""Read sextant's HDF5 files from Python: results files and model files.

Both file kinds carry a /meta group whose attributes name the schema
("sextant.results" or "sextant.model") and its version, followed by the
provenance of the run (host, cpu_model, mpi_library, ..., ranks) and a
/meta/environment subgroup with one attribute per environment variable.
This module reads schema version 1, the version written by sextant 0.1.

Benchmarks (results) and fits (model) live in
/comm/<level>/<benchmark>/<dtype>/p<ranks> groups, one per communicator size,
so that one file can hold the same benchmark at several rank counts (runs
merged across node counts).  They are keyed by (level, benchmark, dtype,
ranks) tuples, ranks an int.  A model file also holds the algorithm view of
the collectives, /comm_algorithms/<level>/<benchmark>/<dtype>/p<ranks> (which
algorithm the library ran per size range, with its calibration), and
/comm_loggp/<level>.  Other top-level groups (e.g. /comm_pt2pt, /compute) are
ignored.

    import sextant_files as sf

    r = sf.open_results("results.h5")
    for key in r.benchmarks():                # (level, benchmark, dtype, ranks)
        t = r.table(*key)                     # {"bytes": array, "median": array, ..., "attrs": {...}}
    s = r.samples("world", "pingpong", "byte", None, 0)   # [iterations, ranks] seconds, NaN = invalid

    m = sf.open_model("model.h5")
    p = m.predict("pingpong", 8)              # {"seconds": ..., "busbw": ..., "ranks": ..., ...}
    p = m.predict("allreduce", 1 << 20, ranks=64)   # not fitted at 64: p["view"] == "algorithm"
    for key in m.algorithms():                # (level, benchmark, dtype, ranks)
        a = m.algorithm_fit(*key)             # {"lo_bytes": ..., "algorithm": [...], "calibration": ...}
    m.loggp["world"]                          # {"L_plus_2o": ..., "g": ..., "G": ..., "ranks": ...}

predict() answers as `sextant predict` does: from the direct fit at exactly the
rank count asked for, else from the algorithm view (collectives; the cost
formulas of models/collectives.cpp are ported here: algorithm_cost, Link),
else from the direct fit at the nearest rank count.

Where ranks is None (the default), the only rank count present is used; a
KeyError lists the rank counts when there are several.

Any file that cannot be read as the expected kind raises SchemaError, whose
message names the file and the problem.

As a script, ``python3 sextant_files.py FILE`` prints a summary of a file of
either kind.  Needs only numpy and h5py.
"""

import math
import os
import re
import sys

import h5py
import numpy as np

RESULTS_SCHEMA = "sextant.results"
MODEL_SCHEMA = "sextant.model"
SUPPORTED_VERSION = 1

__all__ = ["SchemaError", "Results", "Model", "open_results", "open_model",
           "CostTerms", "Link", "algorithms_for", "algorithm_cost", "busbw_factor", "base_op",
           "RESULTS_SCHEMA", "MODEL_SCHEMA", "SUPPORTED_VERSION"]


class SchemaError(Exception):
    """A file is missing, not HDF5, or not of the expected schema and version."""


# ---------------------------------------------------------------- helpers

def _value(v):
    """An HDF5 attribute value as a plain Python value (str, int, float, list)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OSU":
            return [_value(x) for x in v.tolist()]
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _attrs(obj):
    return {k: _value(v) for k, v in obj.attrs.items()}


def _read_dataset(ds):
    """A dataset as a numpy array; strings come back as an object array of str."""
    if h5py.check_string_dtype(ds.dtype) is not None:
        return np.array(ds.asstr()[()], dtype=object)
    return ds[()]


def _open_checked(path, schema):
    """Opens path read-only and checks /meta's schema name and version."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SchemaError("%s: no such file" % path)
    if not os.path.isfile(path):
        raise SchemaError("%s: not a regular file" % path)
    try:
        is_hdf5 = h5py.is_hdf5(path)
    except OSError as e:
        raise SchemaError("%s: cannot read: %s" % (path, e)) from None
    if not is_hdf5:
        raise SchemaError("%s: not an HDF5 file (expected a %s file)" % (path, schema))
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise SchemaError("%s: cannot open as HDF5: %s" % (path, e)) from None
    try:
        if "meta" not in f or not isinstance(f["meta"], h5py.Group):
            raise SchemaError("%s: not a %s file (no /meta group)" % (path, schema))
        meta = f["meta"]
        if "schema" not in meta.attrs or "schema_version" not in meta.attrs:
            raise SchemaError("%s: not a %s file (/meta lacks schema/schema_version)" % (path, schema))
        name = _value(meta.attrs["schema"])
        if name != schema:
            raise SchemaError("%s: is a '%s' file, expected '%s'" % (path, name, schema))
        version = _value(meta.attrs["schema_version"])
        if version != SUPPORTED_VERSION:
            raise SchemaError("%s: %s schema version %s is not supported (this reader reads version %d)"
                              % (path, schema, version, SUPPORTED_VERSION))
    except BaseException:
        f.close()
        raise
    return f


def _read_meta(group):
    """(attributes of group, attributes of group/environment)."""
    env = _attrs(group["environment"]) if "environment" in group else {}
    return _attrs(group), env


_RANKS_GROUP = re.compile(r"p([1-9][0-9]*)")


def _comm_groups(f, path, top="comm"):
    """{(level, benchmark, dtype, ranks): HDF5 path} of every
    /<top>/<level>/<benchmark>/<dtype>/p<ranks> group (top: "comm", or
    "comm_algorithms" in a model file).  Only /<top> is walked; children of a
    dtype group that are not named p<ranks> are ignored.  Raises SchemaError
    for a dtype group in the older layout (datasets directly in it, no
    p<ranks> group) and for a p<ranks> group whose "ranks" attribute says
    otherwise."""
    out = {}
    comm = f.get(top)
    if not isinstance(comm, h5py.Group):
        return out
    for level, lg in comm.items():
        if not isinstance(lg, h5py.Group):
            continue
        for bench, bg in lg.items():
            if not isinstance(bg, h5py.Group):
                continue
            for dtype, dg in bg.items():
                if not isinstance(dg, h5py.Group):
                    continue
                where = "/%s/%s/%s/%s" % (top, level, bench, dtype)
                found = False
                for name, rg in dg.items():
                    m = _RANKS_GROUP.fullmatch(name)
                    if not (m and isinstance(rg, h5py.Group)):
                        continue
                    ranks = int(m.group(1))
                    if "ranks" in rg.attrs:
                        attr = _value(rg.attrs["ranks"])
                        if attr != ranks:
                            raise SchemaError("%s: %s/%s has ranks attribute %r, not %d"
                                              % (path, where, name, attr, ranks))
                    out[(level, bench, dtype, ranks)] = "%s/%s" % (where, name)
                    found = True
                if not found and any(isinstance(x, h5py.Dataset) for x in dg.values()):
                    raise SchemaError("%s: %s holds datasets but no p<ranks> group: the layout before "
                                      "/comm/<level>/<benchmark>/<dtype>/p<ranks>, which this reader "
                                      "does not read" % (path, where))
    return out


def _key_str(key):
    return "/".join(str(k) if i < 3 else "p%d" % k for i, k in enumerate(key))


def _check_ranks(ranks):
    """ranks as an int >= 1, or None."""
    if ranks is None:
        return None
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise ValueError("ranks must be a positive integer or None, got %r" % (ranks,))
    return int(ranks)


def _pick_ranks(path, what, available, ranks):
    """The rank count to use among available (sorted ints) for a request of
    ranks exactly (None: the only one present).  KeyError if there is none."""
    if ranks is None:
        if len(available) == 1:
            return available[0]
        raise KeyError("%s: %s is present at several rank counts (%s): pass ranks=" %
                       (path, what, ", ".join(str(p) for p in available)))
    if ranks in available:
        return ranks
    raise KeyError("%s: %s is not present at %d ranks (it is at: %s)"
                   % (path, what, ranks, ", ".join(str(p) for p in available)))


def _fmt_bytes(n):
    n = float(n)
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return "%g %s" % (round(n / scale, 3), unit)
    return "%g B" % n


def _fmt_seconds(s):
    a = abs(s)
    if a < 1e-6:
        return "%.0f ns" % (s * 1e9)
    if a < 1e-3:
        return "%.3g us" % (s * 1e6)
    if a < 1:
        return "%.3g ms" % (s * 1e3)
    return "%.3g s" % s


# ---------------------------------------------------------------- results

class Results:
    """A sextant.results file, open read-only.  Use as a context manager or call close()."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._file = _open_checked(self.path, RESULTS_SCHEMA)
        #: /meta attributes: schema, schema_version, ranks and provenance strings.
        #: /meta/environment attributes: the recorded environment variables.
        self.meta, self.environment = _read_meta(self._file["meta"])
        try:
            self._groups = _comm_groups(self._file, self.path)
        except BaseException:
            self._file.close()
            raise

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Results(%r)" % self.path

    def benchmarks(self):
        """Sorted list of (level, benchmark, dtype, ranks) tuples, one per
        benchmark group (ranks: the communicator size, an int)."""
        return sorted(self._groups)

    def ranks(self, level, benchmark, dtype):
        """Sorted rank counts at which the benchmark is present ([] if none)."""
        return sorted(k[3] for k in self._groups if k[:3] == (level, benchmark, dtype))

    def _group(self, level, benchmark, dtype, ranks):
        ranks = _check_ranks(ranks)
        what = "/comm/%s/%s/%s" % (level, benchmark, dtype)
        available = self.ranks(level, benchmark, dtype)
        if not available:
            have = ", ".join(_key_str(b) for b in self.benchmarks())
            raise KeyError("%s: no group %s (the file has: %s)" % (self.path, what, have))
        p = _pick_ranks(self.path, what, available, ranks)
        return self._file[self._groups[(level, benchmark, dtype, p)]]

    def table(self, level, benchmark, dtype, ranks=None):
        """Every 1-D dataset of the /comm/<level>/<benchmark>/<dtype>/p<ranks>
        group (one entry per message size) as numpy arrays keyed by name (bytes,
        median, busbw, valid, stop_reason, ...), plus "attrs": the group's
        attributes as a dict.  Times are seconds, bandwidths bytes/s.
        ranks=None: the only rank count present (KeyError if several)."""
        g = self._group(level, benchmark, dtype, ranks)
        out = {}
        for name, obj in g.items():
            if isinstance(obj, h5py.Dataset) and obj.ndim == 1:
                out[name] = _read_dataset(obj)
        out["attrs"] = _attrs(g)
        return out

    def samples(self, level, benchmark, dtype, ranks=None, size_index=None):
        """Raw per-rank times for the size_index-th message size: a 2-D array of
        shape [iterations, ranks], seconds; NaN marks an invalid (late) sample.
        Negative indices count from the last size.  ranks=None: the only rank
        count present (KeyError if several).  With a key from benchmarks():
        samples(*key, size_index)."""
        if size_index is None:
            raise TypeError("samples() needs size_index: samples(level, benchmark, dtype, ranks, size_index)"
                            " (ranks may be None)")
        g = self._group(level, benchmark, dtype, ranks)
        n = g["bytes"].shape[0] if "bytes" in g else len(g["samples"])
        i = int(size_index)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("%s: size index %s out of range (%d sizes)" % (self.path, size_index, n))
        return g["samples/%03d" % i][()]


# ---------------------------------------------------------------- collective algorithms
#
# A port of models/collectives.cpp (view b of the model): the cost of each
# algorithm MPI libraries use for a collective, built from the point-to-point
# link (the pingpong piecewise Hockney fit of the level) and gamma, the time per
# byte of a local reduction.  Each step of m bytes costs alpha + beta * m with
# the link segment that covers m; a reduction adds gamma per byte combined.
# n is the algbw byte count of the operation, p the rank count.


class CostTerms:
    """The parts of an algorithm's cost, seconds; total() is their sum."""

    __slots__ = ("alpha_part", "beta_part", "gamma_part")

    def __init__(self, alpha_part=0.0, beta_part=0.0, gamma_part=0.0):
        self.alpha_part = alpha_part
        self.beta_part = beta_part
        self.gamma_part = gamma_part

    def total(self):
        return self.alpha_part + self.beta_part + self.gamma_part

    def __repr__(self):
        return "CostTerms(alpha_part=%r, beta_part=%r, gamma_part=%r)" % (
            self.alpha_part, self.beta_part, self.gamma_part)


class Link:
    """The link of the algorithm view: a piecewise Hockney fit (one-way
    ping-pong time; per segment lo_bytes, hi_bytes, alpha, beta, sequences of
    equal length) and gamma, seconds per byte reduced (0 when not measured)."""

    def __init__(self, lo_bytes, hi_bytes, alpha, beta, gamma=0.0):
        self.lo_bytes = [float(x) for x in lo_bytes]
        self.hi_bytes = [float(x) for x in hi_bytes]
        self.alpha = [float(x) for x in alpha]
        self.beta = [float(x) for x in beta]
        if not (len(self.lo_bytes) == len(self.hi_bytes) == len(self.alpha) == len(self.beta)) \
                or not self.lo_bytes:
            raise ValueError("Link: segment sequences are empty or differ in length")
        self.gamma = float(gamma)

    @classmethod
    def from_fit(cls, fit, gamma=0.0):
        """The link of a fit as Model.fit() returns it (the pingpong fit)."""
        return cls(fit["lo_bytes"], fit["hi_bytes"], fit["alpha"], fit["beta"], gamma)

    def step(self, c, m, count=1):
        """Adds count messages of m bytes to the CostTerms c."""
        if count > 0:
            self.path(c, m, count, count)

    def path(self, c, m, latencies, injections):
        """A path of messages of m bytes: latencies alpha terms, injections beta terms."""
        alpha_part, beta_part, _, _ = _piecewise_terms(self.lo_bytes, self.hi_bytes, self.alpha, self.beta,
                                                       max(m, 0.0))
        c.alpha_part += latencies * alpha_part
        c.beta_part += injections * beta_part

    def reduce_bytes(self, c, nbytes):
        c.gamma_part += self.gamma * nbytes


def _lg(p):
    return math.log2(p) if p > 1 else 0.0


def _ceil_lg(p):
    return int(math.ceil(math.log2(p))) if p > 1 else 0


def _power_of_two(p):
    return p > 0 and (p & (p - 1)) == 0


def _frac(p):
    return (p - 1) / p if p > 0 else 0.0


# --- allreduce
def _allreduce_recursive_doubling(l, n, p):
    c = CostTerms()
    steps = int(math.floor(_lg(p)))
    # Non-powers of two: MPICH folds the extra ranks in before and out after (2 more steps).
    if not _power_of_two(p):
        steps += 2
    l.step(c, n, steps)
    l.reduce_bytes(c, n * math.floor(_lg(p)) + (0 if _power_of_two(p) else n))
    return c


def _allreduce_rabenseifner(l, n, p):
    c = CostTerms()
    k = int(math.floor(_lg(p)))
    for s in range(1, k + 1):
        l.step(c, n / 2.0 ** s, 2)  # halving + doubling
    if not _power_of_two(p):
        l.step(c, n, 2)
    l.reduce_bytes(c, n * _frac(p))
    return c


def _allreduce_ring(l, n, p):
    c = CostTerms()
    l.step(c, n / p, 2.0 * (p - 1))
    l.reduce_bytes(c, n * _frac(p))
    return c


# --- allgather (n = total gathered)
def _allgather_ring(l, n, p):
    c = CostTerms()
    l.step(c, n / p, p - 1)
    return c


def _allgather_recursive_doubling(l, n, p):
    c = CostTerms()
    # Step k moves 2^k blocks (the last step what is left); Bruck's algorithm has
    # the same cost for any p.
    block, blocks_moved = n / p, 0.0
    for k in range(_ceil_lg(p)):
        blocks = min(2.0 ** k, float(p - 1) - blocks_moved)
        l.step(c, blocks * block)
        blocks_moved += blocks
    return c


# --- reduce_scatter (n = total input)
def _reduce_scatter_recursive_halving(l, n, p):
    c = CostTerms()
    for k in range(1, _ceil_lg(p) + 1):
        l.step(c, n / 2.0 ** k)
    l.reduce_bytes(c, n * _frac(p))
    return c


def _reduce_scatter_pairwise(l, n, p):
    c = CostTerms()
    l.step(c, n / p, p - 1)
    l.reduce_bytes(c, n * _frac(p))
    return c


# --- bcast
def _bcast_binomial(l, n, p):
    # The binomial tree's critical path, as models/collectives.cpp: rank r is
    # popcount(r) hops from the root, each hop the k-th send of its sender (k
    # injections, one latency).
    best = CostTerms()
    if p < 2:
        return best
    unit = CostTerms()  # one latency and one injection of n bytes
    l.path(unit, n, 1, 1)
    top = 1
    while top < p:
        top <<= 1
    worst = (-1.0, 0, 0)
    for r in range(1, p):
        hops = injections = 0
        q, q_top, mask = 0, top, top >> 1
        while mask > 0:
            if r & mask:
                m = q_top >> 1
                while m >= mask:
                    injections += q + m < p
                    m >>= 1
                hops += 1
                q += mask
                q_top = mask
            mask >>= 1
        t = hops * unit.alpha_part + injections * unit.beta_part
        if t > worst[0]:
            worst = (t, hops, injections)
    l.path(best, n, worst[1], worst[2])
    return best


def _bcast_scatter_allgather(l, n, p):
    c = CostTerms()
    for k in range(1, _ceil_lg(p) + 1):
        l.step(c, n / 2.0 ** k)  # binomial scatter
    ag = _allgather_recursive_doubling(l, n, p)
    c.alpha_part += ag.alpha_part
    c.beta_part += ag.beta_part
    return c


# --- reduce
def _reduce_binomial(l, n, p):
    c = CostTerms()
    l.step(c, n, _ceil_lg(p))
    l.reduce_bytes(c, n * _ceil_lg(p))
    return c


def _reduce_rabenseifner(l, n, p):
    c = _reduce_scatter_recursive_halving(l, n, p)
    for k in range(1, _ceil_lg(p) + 1):
        l.step(c, n / 2.0 ** k)  # binomial gather
    return c


# --- alltoall (n = total sent by a rank)
def _alltoall_bruck(l, n, p):
    c = CostTerms()
    l.step(c, n / 2, _ceil_lg(p))
    return c


def _alltoall_pairwise(l, n, p):
    c = CostTerms()
    l.step(c, n / p, p - 1)
    return c


# --- gather / scatter (n = total)
def _gather_binomial(l, n, p):
    c = CostTerms()
    for k in range(_ceil_lg(p) - 1, -1, -1):
        l.step(c, n * 2.0 ** k / p)
    return c


# --- barrier
def _barrier_dissemination(l, n, p):
    c = CostTerms()
    l.step(c, 0.0, _ceil_lg(p))
    return c


# (op, algorithm name, cost function), in the order of collectives.cpp's table.
_ALGORITHM_TABLE = (
    ("allreduce", "recursive_doubling", _allreduce_recursive_doubling),
    ("allreduce", "rabenseifner", _allreduce_rabenseifner),
    ("allreduce", "ring", _allreduce_ring),
    ("allgather", "ring", _allgather_ring),
    ("allgather", "recursive_doubling", _allgather_recursive_doubling),
    ("reduce_scatter", "recursive_halving", _reduce_scatter_recursive_halving),
    ("reduce_scatter", "pairwise", _reduce_scatter_pairwise),
    ("bcast", "binomial", _bcast_binomial),
    ("bcast", "scatter_allgather", _bcast_scatter_allgather),
    ("reduce", "binomial", _reduce_binomial),
    ("reduce", "rabenseifner", _reduce_rabenseifner),
    ("alltoall", "bruck", _alltoall_bruck),
    ("alltoall", "pairwise", _alltoall_pairwise),
    ("gather", "binomial", _gather_binomial),
    ("scatter", "binomial", _gather_binomial),
    ("barrier", "dissemination", _barrier_dissemination),
)


def algorithms_for(op):
    """Names of the algorithms known for a collective op ([] for ops without a model)."""
    return [name for o, name, _ in _ALGORITHM_TABLE if o == op]


def algorithm_cost(op, algorithm, link, n, p):
    """CostTerms of one algorithm of op for n bytes (the algbw byte count) on p
    ranks over link (a Link).  KeyError for an unknown (op, algorithm)."""
    for o, name, fn in _ALGORITHM_TABLE:
        if o == op and name == algorithm:
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
                raise ValueError("algorithm_cost: p must be a positive integer, got %r" % (p,))
            return fn(link, float(n), int(p))
    raise KeyError("no algorithm '%s' for '%s' (known: %s)"
                   % (algorithm, op, ", ".join(algorithms_for(op)) or "none"))


def busbw_factor(op, p):
    """nccl-tests bus-bandwidth factor of a (base) op at p ranks (1 for other ops)."""
    if op == "allreduce":
        return 2.0 * (p - 1) / p if p > 0 else 0.0
    if op in ("reduce_scatter", "allgather", "alltoall", "gather", "scatter"):
        return _frac(p)
    return 1.0


def base_op(benchmark):
    """The blocking op a benchmark name models ("iallreduce" -> "allreduce")."""
    if benchmark.startswith("i") and algorithms_for(benchmark[1:]):
        return benchmark[1:]
    return benchmark


def _segment_for(lo, hi, n):
    """Index of the segment used for n bytes (as sextant's segment_for): the
    one whose range holds n, else the first below the range, the last above
    it, and in a gap the nearer on a log scale."""
    if n <= hi[0]:
        return 0  # inside the first segment or below the fitted range
    for i in range(1, len(lo)):
        if n > hi[i]:
            continue
        if n >= lo[i]:
            return i
        # In the gap between two segments: nearest on a log scale, i.e. the
        # boundary is the geometric mean of the two range ends.
        left, right = hi[i - 1], lo[i]
        boundary = math.sqrt(left * right) if left > 0 else 0.5 * (left + right)
        return i - 1 if n <= boundary else i
    return len(lo) - 1  # above the fitted range


def _piecewise_terms(lo, hi, alpha, beta, n):
    """(alpha_part, beta_part, segment, gap) for n bytes, as sextant's predict_terms:
    the segment's line, except in the gap between two fitted ranges, where the time
    is interpolated geometrically between the two segments' ends (gap: the pair of
    segments, else None)."""
    i = _segment_for(lo, hi, n)
    alpha_part, beta_part = float(alpha[i]), float(beta[i]) * n
    for j in range(1, len(lo)):
        left, right = float(hi[j - 1]), float(lo[j])
        if not (left < n < right and left > 0):
            continue
        t_left = float(alpha[j - 1]) + float(beta[j - 1]) * left
        t_right = float(alpha[j]) + float(beta[j]) * right
        if not (t_left > 0 and t_right > 0):
            break
        w = math.log(n / left) / math.log(right / left)
        seconds = math.exp((1 - w) * math.log(t_left) + w * math.log(t_right))
        alpha_part = min((1 - w) * float(alpha[j - 1]) + w * float(alpha[j]), seconds)
        return alpha_part, seconds - alpha_part, i, (j - 1, j)
    return alpha_part, beta_part, i, None


def _range_for(lo, hi, n):
    """Index of the algorithm range used for n bytes (as comm_model.cpp's
    range_for): the first range holding n, else the nearest on a log1p scale
    (the first of equally near ones)."""
    best, best_d = 0, math.inf
    for i in range(len(lo)):
        if lo[i] <= n <= hi[i]:
            return i
        d = min(abs(math.log1p(n) - math.log1p(lo[i])), abs(math.log1p(n) - math.log1p(hi[i])))
        if d < best_d:
            best, best_d = i, d
    return best


# ---------------------------------------------------------------- model

_SEGMENT_FIELDS = ("lo_bytes", "hi_bytes", "alpha", "beta", "alpha_ci_lo", "alpha_ci_hi",
                   "beta_ci_lo", "beta_ci_hi", "r2", "rms_rel_residual", "points")
_RANGE_NUMBERS = ("lo_bytes", "hi_bytes", "calibration", "median_abs_error")
_RANGE_STRINGS = ("algorithm", "indistinguishable")
_ALGORITHM_ATTRS = ("ranks", "size_unit", "gamma", "link_ranks")
_LOGGP_ATTRS = ("ranks", "L_plus_2o", "g", "G")


def _nearest(have, ranks):
    """The rank count of have nearest to ranks (a tie goes to the smaller)."""
    return min(have, key=lambda q: (abs(q - ranks), q))


class Model:
    """A sextant.model file, read completely when opened (it is small)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with _open_checked(self.path, MODEL_SCHEMA) as f:
            #: /meta attributes (provenance of the fit) and /meta/environment.
            self.meta, self.environment = _read_meta(f["meta"])
            #: /source attributes: provenance of the results file fitted,
            #: including "file" (its path); environment under "environment".
            self.source = {}
            if "source" in f:
                self.source, src_env = _read_meta(f["source"])
                self.source["environment"] = src_env
            self._fits = {}
            for key, where in _comm_groups(f, self.path).items():
                self._fits[key] = self._read_fit(f[where], key, where)
            self._algorithms = {}
            for key, where in _comm_groups(f, self.path, "comm_algorithms").items():
                self._algorithms[key] = self._read_algorithm_fit(f[where], key, where)
            #: /comm_loggp: {level: {"ranks", "L_plus_2o", "g", "G", "note"}}
            #: (L + 2o: the pingpong alpha; g: seconds per message and G: seconds
            #: per byte of the bandwidth stream).  {} for a model without it.
            self.loggp = {}
            lg = f.get("comm_loggp")
            if isinstance(lg, h5py.Group):
                for level, g in lg.items():
                    if not isinstance(g, h5py.Group):
                        continue
                    a = _attrs(g)
                    missing = [n for n in _LOGGP_ATTRS if n not in a]
                    if missing:
                        raise SchemaError("%s: /comm_loggp/%s lacks attribute(s) %s"
                                          % (self.path, level, ", ".join(missing)))
                    self.loggp[level] = a

    def _read_fit(self, g, key, where):
        fit = {"level": key[0], "benchmark": key[1], "dtype": key[2], "ranks": key[3], "attrs": _attrs(g)}
        missing = [n for n in _SEGMENT_FIELDS if n not in g]
        if missing:
            raise SchemaError("%s: %s lacks dataset(s) %s" % (self.path, where, ", ".join(missing)))
        for n in _SEGMENT_FIELDS:
            fit[n] = np.asarray(g[n][()], dtype=float)
        lengths = {len(fit[n]) for n in _SEGMENT_FIELDS}
        if len(lengths) != 1 or 0 in lengths:
            raise SchemaError("%s: %s: segment datasets are empty or differ in length" % (self.path, where))
        return fit

    def _read_algorithm_fit(self, g, key, where):
        a = _attrs(g)
        fit = {"level": key[0], "benchmark": key[1], "dtype": key[2], "ranks": key[3], "attrs": a}
        missing = [n for n in _ALGORITHM_ATTRS if n not in a]
        if missing:
            raise SchemaError("%s: %s lacks attribute(s) %s" % (self.path, where, ", ".join(missing)))
        missing = [n for n in _RANGE_NUMBERS + _RANGE_STRINGS if n not in g]
        if missing:
            raise SchemaError("%s: %s lacks dataset(s) %s" % (self.path, where, ", ".join(missing)))
        fit["size_unit"] = a["size_unit"]
        fit["gamma"] = float(a["gamma"])
        fit["link_ranks"] = a["link_ranks"]
        for n in _RANGE_NUMBERS:
            fit[n] = np.asarray(g[n][()], dtype=float)
        fit["algorithm"] = [str(x) for x in _read_dataset(g["algorithm"])]
        fit["indistinguishable"] = [[t for t in str(x).split(",") if t]
                                    for x in _read_dataset(g["indistinguishable"])]
        lengths = {len(fit[n]) for n in _RANGE_NUMBERS + _RANGE_STRINGS}
        if len(lengths) != 1 or 0 in lengths:
            raise SchemaError("%s: %s: range datasets are empty or differ in length" % (self.path, where))
        op = base_op(key[1])
        for name in fit["algorithm"]:
            if name not in algorithms_for(op):
                raise SchemaError("%s: %s: unknown algorithm '%s' for %s" % (self.path, where, name, key[1]))
        return fit

    def __repr__(self):
        return "Model(%r)" % self.path

    def fits(self):
        """Sorted list of (level, benchmark, dtype, ranks) tuples, one per fit."""
        return sorted(self._fits)

    def algorithms(self):
        """Sorted list of (level, benchmark, dtype, ranks) tuples, one per
        algorithm fit (/comm_algorithms; [] for a model without it)."""
        return sorted(self._algorithms)

    def _candidates(self, level, benchmark, dtype):
        """(dtype used, sorted rank counts) of the fits of benchmark at level with
        dtype, falling back to "byte" for untyped benchmarks; KeyError if none."""
        for d in (dtype, "byte"):
            have = sorted(k[3] for k in self._fits if k[:3] == (level, benchmark, d))
            if have:
                return d, have
        names = sorted({"%s@%s/%s" % (b, lv, d) for lv, b, d, _ in self._fits})
        raise KeyError("%s: no model for '%s' at level '%s' with dtype '%s' (the model has: %s)"
                       % (self.path, benchmark, level, dtype, ", ".join(names)))

    def fit(self, level, benchmark, dtype, ranks=None):
        """The fit of /comm/<level>/<benchmark>/<dtype>/p<ranks> as a dict:
        level, benchmark, dtype, ranks, "attrs" (view, ranks, busbw_factor,
        data_bytes_per_byte, size_unit, bytes_min, bytes_max, ...) and one numpy
        array per segment field (lo_bytes, hi_bytes, alpha, beta, ...).  dtype
        falls back to "byte" for untyped benchmarks.  ranks=None: the only rank
        count present; there is no nearest-rank fallback here (see predict).
        Raises KeyError if there is no such fit.  With a key from fits():
        fit(*key)."""
        ranks = _check_ranks(ranks)
        d, have = self._candidates(level, benchmark, dtype)
        p = _pick_ranks(self.path, "the model of '%s' at level '%s' with dtype '%s'" % (benchmark, level, d),
                        have, ranks)
        return self._fits[(level, benchmark, d, p)]

    def algorithm_fit(self, level, benchmark, dtype, ranks=None):
        """The algorithm fit of /comm_algorithms/<level>/<benchmark>/<dtype>/p<ranks>
        as a dict: level, benchmark, dtype, ranks, "attrs" (view, ranks,
        size_unit, gamma, link, link_ranks), size_unit, gamma (s/byte),
        link_ranks, and per size range lo_bytes, hi_bytes, calibration,
        median_abs_error (numpy arrays), algorithm (list of str) and
        indistinguishable (list of lists of str).  dtype falls back to "byte".
        ranks=None: the only rank count present; no nearest-rank fallback.
        Raises KeyError if there is no such fit.  With a key from algorithms():
        algorithm_fit(*key)."""
        ranks = _check_ranks(ranks)
        for d in (dtype, "byte"):
            have = sorted(k[3] for k in self._algorithms if k[:3] == (level, benchmark, d))
            if have:
                p = _pick_ranks(self.path, "the algorithm fit of '%s' at level '%s' with dtype '%s'"
                                % (benchmark, level, d), have, ranks)
                return self._algorithms[(level, benchmark, d, p)]
        names = sorted({"%s@%s/%s" % (b, lv, d) for lv, b, d, _ in self._algorithms})
        raise KeyError("%s: no algorithm fit for '%s' at level '%s' with dtype '%s' (the model has: %s)"
                       % (self.path, benchmark, level, dtype, ", ".join(names) or "none"))

    def link(self, level="world"):
        """The pingpong fit of a level that the algorithm view uses as its link
        (the one at the smallest rank count: a pair, as Hockney means), or None."""
        ping = [k for k in self._fits if k[1] == "pingpong" and k[0] == level]
        if not ping:
            return None
        return self._fits[min(ping, key=lambda k: (k[3], k))]

    def predict(self, benchmark, nbytes, level="world", dtype="float32", ranks=None):
        """Predicted time of one operation of nbytes (in the benchmark's size unit)
        on ranks ranks, as sextant's CommModel::predict:

        1. ranks=None (the only rank count fitted; KeyError if there are
           several) or a direct fit at exactly ranks: the direct view, that
           fit's piecewise Hockney line.
        2. Else, for a collective with an algorithm fit (the one at the nearest
           rank count; a tie goes to the smaller) and a pingpong fit at the
           level (the link): the algorithm view.  The algorithm identified for
           the size range holding nbytes (else the nearest range on a log1p
           scale) is costed at p = ranks on the link, each step with the link
           segment covering its size, and multiplied by the range's
           calibration.  The size is scaled by ranks where the size unit is a
           per-rank block.
        3. Else the direct fit at the nearest rank count (absolute difference;
           a tie goes to the smaller count), unscaled: the direct view does not
           scale with ranks.

        Returns a dict: seconds (= alpha_part + beta_part + gamma_part), lo and
        hi (the interval sextant prints), alpha_part, beta_part, gamma_part (0
        in the direct view, where reduction is part of beta), busbw (bytes/s),
        view ("direct" or "algorithm"), algorithm (None in the direct view),
        calibration (1.0 in the direct view), segment (0-based index of the
        segment of the direct fit; None in the algorithm view), extrapolated
        (nbytes outside the fitted size range: [bytes_min, bytes_max], or the
        algorithm fit's first lo_bytes to last hi_bytes), dtype and ranks (of
        the direct fit used, or of the algorithm fit in the algorithm view),
        link_ranks (rank count of the pingpong link; None in the direct view)
        and extrapolated_ranks (ranks was given and differs from the fitted
        rank count; always True in the algorithm view)."""
        n = float(nbytes)
        if not (math.isfinite(n) and n >= 0):
            raise ValueError("predict: message size must be non-negative and finite, got %r" % (nbytes,))
        ranks = _check_ranks(ranks)
        d, have = self._candidates(level, benchmark, dtype)
        if ranks is None:
            p = _pick_ranks(self.path, "the model of '%s' at level '%s' with dtype '%s'" % (benchmark, level, d),
                            have, None)
        else:
            p = _nearest(have, ranks)
        if ranks is not None and p != ranks:
            algo_have = [k[3] for k in self._algorithms if k[:3] == (level, benchmark, d)]
            link = self.link(level)
            if algo_have and link is not None:
                return self._predict_algorithm(self._algorithms[(level, benchmark, d, _nearest(algo_have, ranks))],
                                               link, benchmark, n, ranks)
        f = self._fits[(level, benchmark, d, p)]
        a = f["attrs"]
        alpha_part, beta_part, i, gap = _piecewise_terms(f["lo_bytes"], f["hi_bytes"], f["alpha"], f["beta"], n)
        seconds = alpha_part + beta_part
        rms = float(f["rms_rel_residual"][i])
        lo = min(float(f["alpha_ci_lo"][i]) + float(f["beta_ci_lo"][i]) * n, seconds * (1 - rms))
        hi = max(float(f["alpha_ci_hi"][i]) + float(f["beta_ci_hi"][i]) * n, seconds * (1 + rms))
        for j in gap or ():  # in a gap: everything between the two segments' lines
            line = float(f["alpha"][j]) + float(f["beta"][j]) * n
            lo, hi = min(lo, line), max(hi, line)
        busbw = n * a["data_bytes_per_byte"] / seconds * a["busbw_factor"] if seconds > 0 else 0.0
        return {
            "seconds": seconds,
            "lo": lo,
            "hi": hi,
            "alpha_part": alpha_part,
            "beta_part": beta_part,
            "gamma_part": 0.0,
            "busbw": busbw,
            "view": "direct",
            "algorithm": None,
            "calibration": 1.0,
            "segment": i,
            "bridged": gap is not None,
            "extrapolated": bool(n < a["bytes_min"] or n > a["bytes_max"]),
            "dtype": f["dtype"],
            "ranks": f["ranks"],
            "link_ranks": None,
            "extrapolated_ranks": ranks is not None and ranks != f["ranks"],
        }

    @staticmethod
    def _predict_algorithm(algo, link, benchmark, nbytes, ranks):
        """View (b) at ranks ranks: see predict."""
        op = base_op(benchmark)
        r = _range_for(algo["lo_bytes"], algo["hi_bytes"], nbytes)
        name = algo["algorithm"][r]
        cal = float(algo["calibration"][r])
        n = nbytes * (ranks if algo["size_unit"] == "per_rank_block" else 1)
        l = Link.from_fit(link, algo["gamma"])
        c = algorithm_cost(op, name, l, n, ranks)
        # The cheapest of the algorithms the fitted p could not tell apart (as sextant).
        for other in algo["indistinguishable"][r]:
            if other not in algorithms_for(op):
                continue
            oc = algorithm_cost(op, other, l, n, ranks)
            if oc.total() < c.total():
                name, c = other, oc
        seconds = c.total() * cal
        spread = max(float(algo["median_abs_error"][r]), float(link["rms_rel_residual"][-1]))
        return {
            "seconds": seconds,
            "lo": seconds / (1 + spread),
            "hi": seconds * (1 + spread),
            "alpha_part": c.alpha_part * cal,
            "beta_part": c.beta_part * cal,
            "gamma_part": c.gamma_part * cal,
            "busbw": n / seconds * busbw_factor(op, ranks) if seconds > 0 else 0.0,
            "view": "algorithm",
            "algorithm": name,
            "calibration": cal,
            "segment": None,
            "bridged": False,
            "extrapolated": bool(nbytes < algo["lo_bytes"][0] or nbytes > algo["hi_bytes"][-1]),
            "dtype": algo["dtype"],
            "ranks": algo["ranks"],
            "link_ranks": link["ranks"],
            "extrapolated_ranks": True,
        }


def open_results(path):
    """Opens a sextant.results file (schema version 1); raises SchemaError."""
    return Results(path)


def open_model(path):
    """Opens a sextant.model file (schema version 1); raises SchemaError."""
    return Model(path)


# ---------------------------------------------------------------- script

_META_SHOWN = ("host", "cpu_model", "mpi_library", "mpi_version", "kokkos_version", "kokkos_backend",
               "compiler", "git_revision", "date_utc", "rank_placement", "ranks")


def _print_meta(meta):
    for k in _META_SHOWN:
        if k in meta:
            print("  %-15s %s" % (k, meta[k]))


def _summary(path):
    path = os.fspath(path)
    kind = None
    if os.path.isfile(path) and h5py.is_hdf5(path):
        with h5py.File(path, "r") as f:
            if "meta" in f and "schema" in f["meta"].attrs:
                kind = _value(f["meta"].attrs["schema"])
    if kind == MODEL_SCHEMA:
        m = open_model(path)
        print("%s: %s version %s" % (path, kind, m.meta.get("schema_version")))
        _print_meta(m.meta)
        print("  fitted from     %s" % m.source.get("file", "?"))
        print("%-16s %-6s %-8s %5s %3s %10s %10s  %s" % ("benchmark", "level", "dtype", "ranks", "seg",
                                                       "alpha(us)", "bw(GB/s)", "bytes"))
        for level, bench, dtype, ranks in m.fits():
            f = m.fit(level, bench, dtype, ranks)
            a = f["attrs"]
            beta = f["beta"][-1]
            print("%-16s %-6s %-8s %5d %3d %10.3f %10.3f  %s .. %s" % (
                bench, level, dtype, ranks, len(f["alpha"]), f["alpha"][0] * 1e6,
                1e-9 / beta if beta > 0 else 0.0, _fmt_bytes(a["bytes_min"]), _fmt_bytes(a["bytes_max"])))
        for level, l in sorted(m.loggp.items()):
            G = l["G"]
            print("LogGP %s (%s ranks): L+2o %s  g %s  G %.4g ns/byte (%.3f GB/s)" % (
                level, l["ranks"], _fmt_seconds(l["L_plus_2o"]), _fmt_seconds(l["g"]), G * 1e9,
                1e-9 / G if G > 0 else 0.0))
        for key in m.algorithms():
            a = m.algorithm_fit(*key)
            ranges = "; ".join("%s..%s %s (x%.2f)" % (
                _fmt_bytes(lo), _fmt_bytes(hi), "=".join([name] + ties), cal)
                for lo, hi, name, ties, cal in zip(a["lo_bytes"], a["hi_bytes"], a["algorithm"],
                                                   a["indistinguishable"], a["calibration"]))
            print("algorithms %s %s %s p=%d: %s" % (key[1], key[0], key[2], key[3], ranges))
    else:  # results, or let open_results explain what is wrong
        with open_results(path) as r:
            print("%s: %s version %s" % (path, r.meta["schema"], r.meta.get("schema_version")))
            _print_meta(r.meta)
            print("%-16s %-6s %-8s %5s %5s %17s %12s %13s" % ("benchmark", "level", "dtype", "ranks", "sizes",
                                                            "bytes", "min median", "max busbw"))
            for level, bench, dtype, ranks in r.benchmarks():
                t = r.table(level, bench, dtype, ranks)
                b, med, bw = t["bytes"], t["median"], t["busbw"]
                if len(b) == 0:
                    continue
                rng = "%s..%s" % (_fmt_bytes(b.min()), _fmt_bytes(b.max()))
                ok = med[np.isfinite(med)]
                bw_text = "%8.3f GB/s" % (np.nanmax(bw) / 1e9) if np.isfinite(bw).any() else "-"
                print("%-16s %-6s %-8s %5d %5d %17s %12s %13s" % (
                    bench, level, dtype, ranks, len(b), rng, _fmt_seconds(ok.min()) if ok.size else "-", bw_text))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: sextant_files.py FILE   (a sextant results or model file)", file=sys.stderr)
        return 2
    try:
        _summary(argv[0])
    except SchemaError as e:
        print("sextant_files: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
