#!/usr/bin/env bash
# run.sh BUILD_DIR CONSUMER_SOURCE MODEL: installs sextant from BUILD_DIR into a
# temporary prefix, builds the consumer against it with find_package, runs it.
source "$(dirname "$0")/../lib.sh"
build=$1 source=$2 model=$3
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; fail "consumer does not configure against the installed package"; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "consumer does not build"; }
expect_rc 0 "$work/build/consumer" "$model"
echo "$out"
contains "$out" "pingpong_8B_s"
# The same numbers as the sextant command prints.
expect_rc 1 "$work/build/consumer" "$work/nosuch.h5"
contains "$err" "no such file"
echo "consumer: built against the installed package and predicted"
