#!/usr/bin/env bash
# run.sh BUILD_DIR CONSUMER_SOURCE MODEL SEXTANT: installs sextant from BUILD_DIR into a
# temporary prefix, builds the consumer against it with find_package, runs it, and
# compares its predictions with what the sextant command prints for the same model.
source "$(dirname "$0")/../lib.sh"
build=$1 source=$2 model=$3 sextant=$4
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; fail "consumer does not configure against the installed package"; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "consumer does not build"; }
expect_rc 0 "$work/build/consumer" "$model"
echo "$out"
contains "$out" "pingpong_8B_s"
consumer_out=$out
# The same numbers as the sextant command prints (it rounds to 4 significant digits:
# agreement within 0.1% is agreement to its last digit).
same_as_cli() {  # same_as_cli KEY OP BYTES DTYPE
  local ours theirs
  ours=$(sed -n "s/^$1 //p" <<<"$consumer_out")
  expect_rc 0 "$sextant" predict "$model" --op "$2" --bytes "$3" --ranks 2 --dtype "$4"
  theirs=$(sed -n 's/^[^:]*: \([0-9.]*\) \(ns\|us\|ms\|s\) .*/\1 \2/p' <<<"$out" | head -1)
  [ -n "$ours" ] && [ -n "$theirs" ] || fail "no $2 prediction to compare: consumer '$ours', sextant '$out'"
  awk -v a="$ours" -v t="$theirs" 'BEGIN { split(t, v, " "); s = v[1] * (v[2] == "ns" ? 1e-9 : v[2] == "us" ? 1e-6 : v[2] == "ms" ? 1e-3 : 1);
    d = a / s - 1; if (d < 0) d = -d; printf "%s: library %.6g s, sextant predict %.4g s (%.3f%% apart)\n", "'"$2"'", a, s, 100 * d; exit d > 1e-3 }' \
    || fail "$2: the library and sextant predict disagree"
}
same_as_cli pingpong_8B_s pingpong 8 byte
same_as_cli allreduce_1MiB_s allreduce 1048576 float32
expect_rc 1 "$work/build/consumer" "$work/nosuch.h5"
contains "$err" "no such file"
echo "consumer: built against the installed package and predicted"
