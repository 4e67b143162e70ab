#!/usr/bin/env bash
# run.sh BUILD_DIR CONSUMER_SOURCE MODEL SEXTANT: installs sextant from BUILD_DIR into a
# temporary prefix, builds the consumer against it with find_package, runs it, and
# compares its predictions with what the sextant command prints for the same model; the
# installed Python module too.
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
# The installed version header says what the command says.
expect_rc 0 "$sextant" --version
[ "$(head -1 <<<"$consumer_out")" = "$out" ] || fail "installed version.hpp: '$(head -1 <<<"$consumer_out")', the command: '$out'"
# The same numbers as the sextant command gives: its --json document carries them at
# full precision, so library and command must agree to the last bits (1e-12 relative).
same_as_cli() {  # same_as_cli KEY OP BYTES DTYPE
  local ours theirs
  ours=$(sed -n "s/^$1 //p" <<<"$consumer_out")
  expect_rc 0 "$sextant" predict "$model" --op "$2" --bytes "$3" --ranks 2 --dtype "$4" --json "$work/p.json"
  theirs=$(sed -n 's/^ *"seconds": \([-+0-9.eE]*\),*$/\1/p' "$work/p.json")
  [ -n "$ours" ] && [ -n "$theirs" ] || fail "no $2 prediction to compare: consumer '$ours', sextant '$theirs'"
  awk -v a="$ours" -v s="$theirs" 'BEGIN { d = a / s - 1; if (d < 0) d = -d;
    printf "%s: library %.17g s, sextant predict %.17g s (%.3g apart)\n", "'"$2"'", a, s, d; exit d > 1e-12 }' \
    || fail "$2: the library and sextant predict disagree"
}
same_as_cli pingpong_8B_s pingpong 8 byte
same_as_cli allreduce_1MiB_s allreduce 1048576 float32
# Python after the install: `import sextant` from the installed site-packages gives the
# command's numbers, to the last digit (the same C++ model behind both).
module=$(find "$work/prefix" -path '*site-packages*' -name 'sextant*.so' | head -1)
python=${SEXTANT_PYTHON:-/usr/bin/python3}
if [ -z "$module" ]; then
  echo "consumer: no Python module installed (built only where pybind11 is found): import not checked"
else
  expect_rc 0 "$sextant" predict "$model" --op allreduce --bytes 1048576 --ranks 512 --json "$work/p512.json"
  expect_rc 0 env PYTHONPATH="$(dirname "$module")" "$python" -c '
import json, sys, sextant
m = sextant.Model(sys.argv[1])
ours = m.predict_comm("allreduce", 1 << 20, 512)["seconds"]
theirs = json.load(open(sys.argv[2]))["seconds"]
print(f"installed module {sextant.__file__}: allreduce 1 MiB at 512 ranks {ours!r} s, sextant predict {theirs!r} s")
sys.exit(0 if ours == theirs else 1)' "$model" "$work/p512.json"
  echo "$out"
fi
expect_rc 1 "$work/build/consumer" "$work/nosuch.h5"
contains "$err" "no such file"
echo "consumer: built against the installed package and predicted"
