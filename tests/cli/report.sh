#!/usr/bin/env bash
# sextant report draws real figures from real files: PNG and SVG, non-trivial.
source "$(dirname "$0")/../lib.sh"
sextant=$1 results=$2 model=$3
expect_rc 0 "$sextant" report "$results" --model "$model" -o "$work/report"
for f in comm_time comm_busbw; do
  png=$work/report/$f.png svg=$work/report/$f.svg
  [ -f "$png" ] && [ -f "$svg" ] || fail "$f: PNG or SVG missing"
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png is not a PNG"
  [ "$(stat -c %s "$png")" -gt 20000 ] || fail "$png is too small to hold a figure"
  [ "$(grep -c '<path' "$svg")" -gt 50 ] || fail "$svg draws almost nothing"
done
contains "$(cat "$work/report/summary.md")" "| allreduce | world | float32 | 2 |"
expect_rc 1 "$sextant" report "$work/nosuch.h5"
contains "$err" "nosuch.h5"
echo "report: figures written"
