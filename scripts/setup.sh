#!/usr/bin/env bash
# On a fresh Debian 12 machine with the CUDA toolkit: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh
install_missing
build_imgpipe

# The main job: every photograph in data/images to 640x480, then a 5x5 Gaussian blur (sigma 1).
out=out/main-job
./build/apps/imgpipe batch data/images "$out" --ops "resize=640x480,gaussian=5:1.0" --overwrite
echo "imgpipe: the main job's outputs are in $PWD/$out"
