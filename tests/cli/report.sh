#!/usr/bin/env bash
# sextant report draws real figures from real files: PNG and SVG, non-trivial.
# Arguments: SEXTANT PYTHON RESULTS MODEL [TRAIN_RESULTS [TRAIN_MODEL]]: a comm results file and
# its model; optionally a train-suite results file (with /compute and /train) and its
# model, whose report must also hold the roofline and the training-proxy figures.
source "$(dirname "$0")/../lib.sh"
sextant=$1 python=$2 results=$3 model=$4
train=${5:-} train_model=${6:-}
# check_figures DIR NAME...: each NAME.png is a PNG over 20 kB and NAME.svg draws many paths.
check_figures() {
  local dir=$1 f png svg; shift
  for f in "$@"; do
    png=$dir/$f.png svg=$dir/$f.svg
    [ -f "$png" ] && [ -f "$svg" ] || fail "$f: PNG or SVG missing in $dir"
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png is not a PNG"
    [ "$(stat -c %s "$png")" -gt 20000 ] || fail "$png is too small to hold a figure"
    [ "$(grep -c '<path' "$svg")" -gt 50 ] || fail "$svg draws almost nothing"
  done
}
expect_rc 0 "$sextant" report "$results" --model "$model" -o "$work/report"
check_figures "$work/report" comm_time comm_busbw
contains "$(cat "$work/report/summary.md")" "| allreduce | world | float32 | 2 |"
# Every number of the summary recomputed from the files (check_summary.py).
"$python" "$(dirname "$0")/check_summary.py" "$work/report/summary.md" "$model" "$results" || fail "summary.md numbers"
expect_rc 1 "$sextant" report "$work/nosuch.h5"
contains "$err" "nosuch.h5"
if [ -n "$train" ]; then
  expect_rc 0 "$sextant" report "$train" ${train_model:+--model "$train_model"} -o "$work/report_train"
  check_figures "$work/report_train" roofline train_prediction
  contains "$out" "roofline.png"
  contains "$out" "train_prediction.svg"
  summary=$(cat "$work/report_train/summary.md")
  contains "$summary" "## Compute"
  contains "$summary" "## Training proxy"
  contains "$summary" "| config | measured (ms) | predicted (ms) | error (%) |"
  "$python" "$(dirname "$0")/check_summary.py" "$work/report_train/summary.md" "$train_model" "$train" \
    || fail "summary.md numbers (train)"
fi
echo "report: figures written"
