#!/usr/bin/env bash
# Runs every fuzz target for a while, two at a time (one core each), each on a scratch copy of its corpus.
#   fuzz/run.sh BUILD_DIR [SECONDS=180] [WORK_DIR=BUILD_DIR/fuzz-work]
# Crash inputs land in WORK_DIR/artifacts/; each run's log is WORK_DIR/<target>/fuzz-0.log.
# New corpus entries stay in WORK_DIR/<target>/corpus: the committed seeds in fuzz/corpus are never written.
set -euo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS] [WORK_DIR]}
seconds=${2:-180}
work=${3:-$build/fuzz-work}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
mkdir -p "$work/artifacts"
work=$(cd "$work" && pwd)

run() {  # target dictionary
  local target=$1 dict=$2
  mkdir -p "$work/$target/corpus"
  (cd "$work/$target" &&
   "$build/$target" corpus "$here/corpus/$target" -dict="$here/$dict" -max_total_time="$seconds" -jobs=1 \
     -artifact_prefix="$work/artifacts/$target-" >launcher.log 2>&1) && status=ok || status="FOUND SOMETHING"
  echo "$target: $status; $(grep -E '^Done [0-9]+ runs' "$work/$target/fuzz-0.log" || echo 'no summary') (log: $work/$target/fuzz-0.log)"
}

run fuzz_chain chain.dict &
run fuzz_ppm ppm.dict &
wait
run fuzz_size chain.dict &
run fuzz_image_header image_header.dict &
wait
ls "$work/artifacts"
