#!/usr/bin/env bash
# EXPERIMENT: the GPU JPEG decoder's decoupled decode threads against its batched lane, in the folder job and
# in the decode bench, in one device call.   OUT=$OUT tools/jpeg_pool_ab.sh   (device: carry [".deps"])
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/jpeg-pool-ab}
mkdir -p "$OUT"
prefix=()
if [ -d .deps/prefix/usr ]; then
  export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  prefix=("-DCMAKE_PREFIX_PATH=$PWD/.deps/prefix/usr")
fi
cmake --preset gpu "${prefix[@]}" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu -j"$(nproc)" --target imgpipe imgpipe_bench_jpeg test_gpu_jpeg > "$OUT/build.log" 2>&1 \
  || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "build: ok, $(grep -c "warning:" "$OUT/build.log") warnings"
timeout 150 build-gpu/tests/test_gpu_jpeg > "$OUT/test_gpu_jpeg.log" 2>&1; echo "test_gpu_jpeg exit $?"
grep -E "PASSED|FAILED|went through" "$OUT/test_gpu_jpeg.log"
folder=/dev/shm/jb/in
[ -d "$folder" ] || python3 -c "import sys,pathlib; sys.path.insert(0,'tools'); import jpeg_folder_bench as j; \
j.make_folder(pathlib.Path('$folder'), 4000)"
declare -A policies=(
  [batched]="IMGPIPE_JPEG_HARDWARE_API=batched"
  [pool7x2]=""
  [pool7x3]="IMGPIPE_JPEG_STATES=3"
  [pool14x1]="IMGPIPE_JPEG_DECODE_THREADS=14 IMGPIPE_JPEG_STATES=1"
  [pool4x2]="IMGPIPE_JPEG_DECODE_THREADS=4"
)
order=(batched pool7x2 pool7x3 pool14x1 pool4x2)
: > "$OUT/ab.txt"
for round in 1 2; do
  for name in "${order[@]}"; do
    timeout 60 env ${policies[$name]} build-gpu/apps/imgpipe batch "$folder" /dev/shm/out-$name \
      --ops resize=1280x720,gaussian=5:1.0 --format jpg --quality 90 --overwrite --timings > "$OUT/$name-$round.log" 2>&1
    echo "== $name, round $round (exit $?)" >> "$OUT/ab.txt"
    grep -E "images/s|hardware JPEG decoding|encoding|CPU:" "$OUT/$name-$round.log" >> "$OUT/ab.txt"
  done
done
for name in "${order[@]}"; do
  [ "$name" = batched ] && continue
  diff -rq /dev/shm/out-batched "/dev/shm/out-$name" > /dev/null && echo "$name: same bytes as batched" >> "$OUT/ab.txt" \
    || echo "$name: OUTPUTS DIFFER from batched" >> "$OUT/ab.txt"
done
cat "$OUT/ab.txt"
timeout 150 build-gpu/bench/imgpipe_bench_jpeg "$folder" --repeats 2 > "$OUT/bench.txt" 2>&1
echo "== imgpipe_bench_jpeg (exit $?)"; cat "$OUT/bench.txt" | grep -v "^reading"
