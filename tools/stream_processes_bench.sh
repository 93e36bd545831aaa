#!/usr/bin/env bash
# Several `imgpipe stream` processes at once on one clip, each its own NVDEC stream (the driver spreads them over
# the engines), as a folder of videos runs with xargs -P: total frames per second for each process count.
#   tools/stream_processes_bench.sh IMGPIPE CLIP "1 7 14" raw|jpg [OPS]
# raw: frames to stdout, into /dev/null; jpg: one JPEG per frame into a fresh folder per process (GPU JPEG on
# the optimized backend), removed afterwards. Frames per clip are counted from the first run's summary line.
set -euo pipefail
imgpipe=${1:?usage: tools/stream_processes_bench.sh IMGPIPE CLIP COUNTS raw|jpg [OPS]}
clip=${2:?clip}
counts=${3:?process counts, e.g. "1 7 14"}
output=${4:?raw or jpg}
ops=${5:-resize=1280x720,gaussian=5:1.0}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
frames=$("$imgpipe" stream --input "$clip" --output - --ops "$ops" 2>&1 >/dev/null | sed -n 's/.*imgpipe: \([0-9]*\) frames in.*/\1/p')
[ -n "$frames" ] || { echo "stream_processes_bench: $imgpipe stream on $clip gave no summary line" >&2; exit 1; }
echo "clip $clip: $frames frames; ops $ops; output $output"
for n in $counts; do
  start=$(date +%s.%N)
  pids=()
  for i in $(seq "$n"); do
    if [ "$output" = raw ]; then
      "$imgpipe" stream --input "$clip" --output - --ops "$ops" > /dev/null 2> "$scratch/log.$i" &
    else
      "$imgpipe" stream --input "$clip" --output "$scratch/frames.$i/" --ops "$ops" 2> "$scratch/log.$i" &
    fi
    pids+=("$!")
  done
  failed=0
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { failed=1; echo "process $((i + 1)) of $n failed:" >&2; tail -3 "$scratch/log.$((i + 1))" >&2; }
  done
  end=$(date +%s.%N)
  # The rate counts every process's frames: a failed one would inflate it.
  [ "$failed" -eq 0 ] || { echo "$n processes: not every process finished; no rate" >&2; exit 1; }
  grep -h "frames in" "$scratch"/log.* | head -1 | sed 's/^/  one of them: /'
  awk -v n="$n" -v f="$frames" -v s="$start" -v e="$end" \
    'BEGIN { printf "%3d processes: %d frames in %.2f s = %.0f frames/s\n", n, n * f, e - s, n * f / (e - s) }'
  rm -rf "$scratch"/frames.* "$scratch"/log.*
done
