#!/usr/bin/env bash
# A full disk: every writer ends with one clear line and exit 1, never a crash; no
# temporary file is left; nothing already written is damaged. Needs root (a small
# tmpfs is mounted for the test); skipped (77) otherwise.
source "$(dirname "$0")/../lib.sh"
sextant=$1 results=$2
disk=$work/disk
mkdir -p "$disk"
mount -t tmpfs -o size=20m tmpfs "$disk" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs (needs root)"; exit 77; }
trap 'umount "$disk" 2>/dev/null; rm -rf "$work"' EXIT

# run: short of its reserve, the run stops before the file could be damaged; the file
# it leaves is a readable results file.
dd if=/dev/zero of="$disk/fill" bs=1M count=6 status=none
expect_rc 1 timeout 120 mpiexec.mpich -n 2 "$sextant" run --suite comm --quick --collectives pingpong -o "$disk/r.h5"
contains "$err" "free on its filesystem: stopping before a write could damage the file"
expect_rc 1 "$sextant" fit "$disk/r.h5" -o "$work/r.model.h5"
contains "$err" "no /comm or /compute results to fit"  # opened and read: not damaged

# fit and merge on a disk with almost nothing left: a clear line, no temporary left.
rm -f "$disk/fill" "$disk/r.h5"
dd if=/dev/zero of="$disk/fill" bs=1k count=$((20 * 1024 - 24)) status=none 2>/dev/null || true
expect_rc 1 "$sextant" fit "$results" -o "$disk/m.h5"
contains "$err" "$disk/m.h5: not written"
contains "$err" "No space left on device"
expect_rc 1 "$sextant" merge "$results" -o "$disk/merged.h5"
contains "$err" "free in"
leftovers=$(find "$disk" -name '.*' -type f)
[ -z "$leftovers" ] || fail "temporary files left on the full disk: $leftovers"
echo "full disk: clear errors, nothing damaged, nothing left behind"
