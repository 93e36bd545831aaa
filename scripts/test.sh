#!/usr/bin/env bash
# On a fresh Debian 12 machine with the CUDA toolkit: install what is missing, build, run every test.
# Tests that need a GPU skip (and say why) on a machine without one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh
install_missing
build_imgpipe
ctest --preset cpu-only -j"$(nproc)"
