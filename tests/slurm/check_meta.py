#!/usr/bin/env python3
"""check_meta.py FILE CHECK...: checks attributes of a sextant HDF5 file with h5py alone.

CHECK is one of
  env:NAME=VALUE            /meta/environment attribute NAME equals VALUE
  meta:NAME=VALUE           /meta attribute NAME equals VALUE (numbers compared as text)
  source:I:env:NAME=VALUE   /sources/I/environment attribute (a merged file)
  source:I:NAME=VALUE       /sources/I attribute
  has:PATH                  object PATH exists
  lacks:PATH                object PATH does not exist
"""
import sys

import h5py


def text(v):
    if isinstance(v, bytes):
        return v.decode()
    if hasattr(v, "item"):
        v = v.item()
        if isinstance(v, bytes):
            return v.decode()
    return str(v)


def attr(f, path, name):
    if path not in f:
        sys.exit(f"FAIL: {f.filename}: no {path}")
    attrs = f[path].attrs
    if name not in attrs:
        sys.exit(f"FAIL: {f.filename}: {path} has no attribute {name} (has {sorted(attrs)})")
    return text(attrs[name])


def main():
    path, checks = sys.argv[1], sys.argv[2:]
    with h5py.File(path, "r") as f:
        for c in checks:
            kind, _, rest = c.partition(":")
            if kind in ("has", "lacks"):
                if (rest in f) != (kind == "has"):
                    sys.exit(f"FAIL: {path}: {c}")
                continue
            key, _, want = rest.partition("=")
            if kind == "env":
                got = attr(f, "/meta/environment", key)
            elif kind == "meta":
                got = attr(f, "/meta", key)
            elif kind == "source":
                index, _, key = key.partition(":")
                if key.startswith("env:"):
                    got = attr(f, f"/sources/{index}/environment", key[4:])
                else:
                    got = attr(f, f"/sources/{index}", key)
            else:
                sys.exit(f"check_meta.py: unknown check {c}")
            if got != want:
                sys.exit(f"FAIL: {path}: {c}: found {got!r}")
    print(f"{path}: {len(checks)} checks ok")


if __name__ == "__main__":
    main()
