#!/usr/bin/env bash
# imgpipe batch on data/ppm through five chains (the fused resize + filter, the planar ops, nearest resize):
#   tools/compare_backends.sh cpu DIR   the cpu backend's outputs into DIR (needs a build with OpenCV)
#   tools/compare_backends.sh gpu DIR   naive and optimized on the same chains, each compared with DIR
#                                       (tools/compare_outputs.py: largest difference, values off by more than 1)
# A GPU machine without OpenCV gets DIR made elsewhere, e.g. as an untracked folder of the tree.
# BUILD (default build-gpu for gpu, build for cpu) names the build folder; $OUT/compare holds the GPU outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
dir=${2:-}
[ -n "$dir" ] && { [ "$mode" = cpu ] || [ "$mode" = gpu ]; } || { sed -n 2,7p "$0"; exit 2; }
chains=("resize=640x480,gaussian=5:1.0" "gray,sobel,rotate=90,box=3,normalize"
        "resize=1000x700:nearest,flip=v,transpose,sharpen" "resize=333x251,box=5" "resize=1280x720,gaussian=7:1.5")
if [ "$mode" = cpu ]; then
  imgpipe=${BUILD:-build}/apps/imgpipe
  for j in "${!chains[@]}"; do
    "$imgpipe" batch data/ppm "$dir/$j" --ops "${chains[$j]}" --backend cpu --format ppm --overwrite > /dev/null 2>&1
  done
  echo "cpu outputs of ${#chains[@]} chains in $dir"
  exit 0
fi
imgpipe=${BUILD:-build-gpu}/apps/imgpipe
work=${OUT:-out}/compare
mkdir -p "$work"
for j in "${!chains[@]}"; do
  for backend in naive optimized; do
    "$imgpipe" batch data/ppm "$work/$backend-$j" --ops "${chains[$j]}" --backend "$backend" --format ppm --overwrite \
      > "$work/$backend-$j.log" 2>&1 || { cat "$work/$backend-$j.log"; exit 1; }
    echo "${chains[$j]} --backend $backend: $(python3 tools/compare_outputs.py "$dir/$j" "$work/$backend-$j")"
  done
done
