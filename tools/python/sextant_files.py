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
    for key in m.fits():                      # (level, benchmark, dtype, ranks)
        f = m.fit(*key)                       # {"alpha": array, "beta": array, "lo_bytes": ..., "attrs": ...}
    for key in m.algorithms():                # (level, benchmark, dtype, ranks)
        a = m.algorithm_fit(*key)             # {"lo_bytes": ..., "algorithm": [...], "calibration": ...}
    m.loggp["world"]                          # {"L_plus_2o": ..., "g": ..., "G": ..., "ranks": ...}

This module reads the data. Predictions come from the C++ model itself, through
the `sextant` Python module (bindings/python; `import sextant`,
`sextant.Model(path).predict_comm("allreduce", 1 << 20, 64)`): there is no second
implementation of the cost formulas.

Where ranks is None (the default), the only rank count present is used; a
KeyError lists the rank counts when there are several.

Any file that cannot be read as the expected kind raises SchemaError, whose
message names the file and the problem.

As a script, ``python3 sextant_files.py FILE`` prints a summary of a file of
either kind.  Needs only numpy and h5py.
"""

import os
import re
import sys

import h5py
import numpy as np

RESULTS_SCHEMA = "sextant.results"
MODEL_SCHEMA = "sextant.model"
SUPPORTED_VERSION = 1

__all__ = ["SchemaError", "Results", "Model", "open_results", "open_model",
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


# The 1-D datasets of a results group that hold text; every other one holds numbers.
_TEXT_COLUMNS = ("stop_reason", "unmeasured", "shape", "validation_message")


def _where(obj):
    return "%s:%s" % (obj.file.filename, obj.name)


def _numbers(ds):
    """A numeric dataset as a float array; SchemaError naming it when it holds text or
    compound data (a file edited by hand, or another tool's)."""
    if ds.dtype.kind not in "fiub":
        raise SchemaError("%s: expected numbers, found %s data" % (_where(ds), ds.dtype))
    return np.asarray(ds[()], dtype=float)


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
                if name not in _TEXT_COLUMNS and obj.dtype.kind not in "fiub":
                    raise SchemaError("%s: expected numbers, found %s data" % (_where(obj), obj.dtype))
                out[name] = _read_dataset(obj)
        for name in ("bytes", "median"):
            if name not in out:
                raise SchemaError("%s: lacks the 1-D dataset %s" % (_where(g), name))
        lengths = {name: len(v) for name, v in out.items()}
        if len(set(lengths.values())) > 1:
            raise SchemaError("%s: datasets differ in length (%s)" % (
                _where(g), ", ".join("%s %d" % kv for kv in sorted(lengths.items()))))
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


# ---------------------------------------------------------------- model

_SEGMENT_FIELDS = ("lo_bytes", "hi_bytes", "alpha", "beta", "alpha_ci_lo", "alpha_ci_hi",
                   "beta_ci_lo", "beta_ci_hi", "r2", "rms_rel_residual", "points")
_RANGE_NUMBERS = ("lo_bytes", "hi_bytes", "calibration", "median_abs_error")
_RANGE_STRINGS = ("algorithm", "indistinguishable")
_ALGORITHM_ATTRS = ("ranks", "size_unit", "gamma", "link_ranks")
_LOGGP_ATTRS = ("ranks", "L_plus_2o", "g", "G")


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
            fit[n] = _numbers(g[n])
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
        try:
            fit["gamma"] = float(a["gamma"])
        except (TypeError, ValueError):
            raise SchemaError("%s: attribute gamma is %r, not a number" % (_where(g), a["gamma"])) from None
        fit["link_ranks"] = a["link_ranks"]
        for n in _RANGE_NUMBERS:
            fit[n] = _numbers(g[n])
        fit["algorithm"] = [str(x) for x in _read_dataset(g["algorithm"])]
        fit["indistinguishable"] = [[t for t in str(x).split(",") if t]
                                    for x in _read_dataset(g["indistinguishable"])]
        lengths = {len(fit[n]) for n in _RANGE_NUMBERS + _RANGE_STRINGS}
        if len(lengths) != 1 or 0 in lengths:
            raise SchemaError("%s: %s: range datasets are empty or differ in length" % (self.path, where))
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
        count present; there is no nearest-rank fallback here.
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
