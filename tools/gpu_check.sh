#!/usr/bin/env bash
# Build (the gpu preset, into build-gpu/), test, sanitize and benchmark on a machine with a CUDA GPU: the GPU
# evidence in docs/ comes from this script, run on an NVIDIA H200. Logs go to $OUT (default out/gpu-check).
#   tools/gpu_check.sh [build|test|sanitize|bench|matrix|matrix-ab|profile|jpeg|jpeg-threads|jpeg-timeline]...
#   (no argument: the first four, in that order)
# test: the whole ctest, or with TESTS="test_resize_filter test_gpu_chain:OptimizedFusedHead.*" those test binaries
# only, each with its gtest filter after the first ':' (all of it without one), in parallel, logs in test-NAME.log.
# sanitize: compute-sanitizer's four tools on each GPU test binary's small and odd-sized cases, in parallel
# (SANITIZE_TESTS="test_filter_aos test_convolve" for some binaries only, "test_filter_aos:*GrayFirst*" with a
# gtest filter of its own; SANITIZE_TIMEOUT seconds each, 240). SANITIZE_KERNELS="sobel_aos_kernel
# filter3x3_aos_kernel" checks only those kernels, the first SANITIZE_LAUNCHES (16) launches of each, one run per
# kernel: what a change to a few kernels needs, in the minutes a slow tool would take on a whole binary.
# matrix: `imgpipe bench --matrix` (every op alone and the usual chains at 720p, 1080p and 4K; docs/bench.md) into
# $OUT/matrix.json and matrix.txt, its progress in matrix.log; MATRIX_FRAMES and MATRIX_REPEATS change the run,
# MATRIX_CHAINS (chains separated by spaces) runs those chains instead of the matrix's own, MATRIX_SIZES (sizes
# separated by commas, as --matrix-sizes) at those sizes.
# Then tools/matrix_table.py's table and the targets missed into $OUT/matrix_table.md (MATRIX_BEFORE=OLD.json puts a
# previous run's times beside the new ones, e.g. docs/bench/matrix-h200-6897246.json).
# matrix-ab: two builds of `imgpipe` timed in turn on this machine, twice each, alternating: "before" is the tree with
# the files under AB_BEFORE=DIR laid over it (DIR/kernels/normalize.cu replaces kernels/normalize.cu, ...), "after"
# the tree as it is, each built once into $BUILD/apps/imgpipe-{before,after}, after which the tree's own files are
# put back. The optimized rows of the matrix (MATRIX_BACKENDS to change) into $OUT/ab-{before,after}-{1,2}.json,
# tools/matrix_compare.py's table of them into $OUT/matrix_ab.md, and its rows that changed by more than 2% printed.
# profile: Nsight Compute on the optimized path's interleaved kernels (PROFILE_KERNELS, a regular expression of
# kernel names) in the matrix at PROFILE_SIZE (default 1920x1080), one launch of each launch configuration (one
# frame and 16 frames per launch): the report in $OUT/profile.ncu-rep, its details in profile.txt, and
# tools/ncu_table.py's table of them (time, how busy DRAM, L2, L1 and the issue slots were) in profile.md.
# jpeg: the GPU JPEG folder job against OpenCV (tools/jpeg_folder_bench.py, docs/gpu-jpeg.md), needs Python's
# OpenCV and NumPy. jpeg-threads: the same folder job at each `--gpu-decode-threads` of JPEG_THREADS (default
# "2 3 4 5 6 7"), two rounds alternating, into $OUT/jpeg-threads.txt (the folder in JPEG_WORK, default /dev/shm/jb).
# jpeg-timeline: the same folder job once, recorded by bench/cuda_timeline.cpp into $OUT/jpeg-job.timeline.xz, and
# tools/timeline_summary.py's summary of it (how busy the SMs, the copy engines and the JPEG_ENGINES hardware
# JPEG decoders were, default 7) into $OUT/jpeg-timeline.txt.
# A machine without CLI11, TBB or nlohmann-json (and without a network to install them) can be handed
# Debian's packages, unpacked on a machine that has apt into the git-ignored .deps/prefix:
#   mkdir -p .deps && cd .deps && apt-get download libcli11-dev libtbb-dev libtbb12 libtbbmalloc2 \
#     libtbbbind-2-5 libhwloc15 nlohmann-json3-dev libffmpeg-nvenc-dev \
#     && for f in *.deb; do dpkg -x "$f" prefix; done && rm *.deb
# and carried along; this script then points CMake and the loader at it. For containers on NVDEC and video
# files that keep each frame's time, also unpack libavformat-dev, libavcodec-dev, libavutil-dev and
# libswscale-dev there, with the libraries their .so links point at (libavformat.so.59.27.100, ...: the
# libavformat59, libavcodec59, libavutil57, libswscale6 and libswresample4 packages), and copy beside them the
# shared libraries those need (`ldd`; Debian's FFmpeg 5.1 pulls in about 170 MB of codec libraries, 49 MB as an
# xz tarball). A link left dangling there hides the library from CMake, which then builds without it; the build
# step names such links.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-check}
BUILD=build-gpu  # the gpu preset's binaryDir
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test sanitize bench)

cmake_args=(--preset gpu)
# The Python module and its tests too, where this machine's python3 has nanobind.
if python3 -c "import nanobind" 2>/dev/null; then
  cmake_args+=(-DIMGPIPE_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)")
fi
# The same prefix packed as .deps/prefix.tar.xz (tar -C .deps -cJf .deps/prefix.tar.xz prefix), one file to carry
# to the machine instead of a tree, is unpacked here where the folder is missing.
if [ ! -d .deps/prefix ] && [ -f .deps/prefix.tar.xz ]; then
  tar -C .deps -xJf .deps/prefix.tar.xz || { echo "could not unpack .deps/prefix.tar.xz"; exit 1; }
fi
if [ -d .deps/prefix/usr ]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$PWD/.deps/prefix/usr")
  export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# The folder of the JPEG steps: JPEG_FILES 1080p photos (tools/jpeg_folder_bench.py), made once.
jpeg_folder=${JPEG_WORK:-/dev/shm/jb}/in
make_jpeg_folder() {
  python3 -c "import sys, pathlib; sys.path.insert(0, 'tools'); import jpeg_folder_bench as j; \
j.make_folder(pathlib.Path('$jpeg_folder'), ${JPEG_FILES:-4000})"
}
jpeg_job=(--ops resize=1280x720,gaussian=5:1.0 --format jpg --quality 90 --overwrite --timings)

status=0
for step in "${steps[@]}"; do
  case "$step" in
    build)
      if [ -d .deps/prefix ]; then
        find .deps/prefix -xtype l -name "*.so" | sed 's/^/build: a dangling link, that library will not be found: /'
      fi
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
      cmake "${cmake_args[@]}" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
      cmake --build "$BUILD" -j"$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error|Error" -A3 "$OUT/build.log" | head -60; exit 1; }
      grep -E "ptxas info|bytes stack frame" "$OUT/build.log" > "$OUT/ptxas.log"
      echo "build: ok, $(grep -c "warning:" "$OUT/build.log") compiler warnings (build.log)"
      ;;
    test)
      if [ -z "${TESTS:-}" ]; then
        ctest --test-dir "$BUILD" --output-on-failure -j8 > "$OUT/ctest.log" 2>&1 || status=1
        grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Subprocess" "$OUT/ctest.log" | head -40
        continue
      fi
      pids=()
      declare -A started=()
      read -r -a entries <<< "$TESTS"  # split on spaces, never globbed
      for entry in "${entries[@]}"; do
        name=${entry%%:*}
        [ -z "${started[$name]:-}" ] || { echo "test: $name is named twice in TESTS (join its filters with ':')"; status=1; continue; }
        started[$name]=1
        filter_args=()
        [ "$entry" = "$name" ] || filter_args=(--gtest_filter="${entry#*:}")
        [ -x "$BUILD/tests/$name" ] || { echo "test: $BUILD/tests/$name was not built"; status=1; continue; }
        "$BUILD/tests/$name" "${filter_args[@]}" > "$OUT/test-$name.log" 2>&1 &
        pids+=("$!:$name")
      done
      for entry in "${pids[@]}"; do
        IFS=: read -r pid name <<< "$entry"
        wait "$pid"; rc=$?
        echo "test $name: exit $rc, $(grep -E '^\[  PASSED  \]' "$OUT/test-$name.log")" \
          "$(grep -oE '^\[  (SKIPPED |FAILED  )\] [0-9]+ tests?' "$OUT/test-$name.log" | tr '\n' ' ')"
        [ $rc -eq 0 ] || status=1
      done
      ;;
    sanitize)
      command -v compute-sanitizer > /dev/null \
        || { echo "sanitize: compute-sanitizer is not on PATH"; status=1; continue; }
      # Every tool on every GPU test binary, all at once (one process each): the small and odd-sized cases,
      # where edges and partial tiles live; the photographs add time, not paths.
      declare -A filters=(
        [test_layout]='AllAlignments/*'
        [test_resize]='*odd_sizes*'
        [test_convolve]='*odd_sizes*:BothPaths/*'
        [test_transpose]='*odd_sizes*:AllVariants/*'
        [test_gray]='*odd_sizes*'
        [test_normalize]='*odd_sizes*'
        [test_gpu_chain]='Chains/*:BothPaths/*:GpuBackend.*:OptimizedFusedHead.ALone*:DeviceChainBatch.EqualsRunFrameByFrame'
        [test_resize_filter]='OddK*:*Batched*:*OddSizes*:*Wide*:*BackToBack*:*OpenCvArithmetic*:ResizeFilterArguments.*'
        [test_convolve_variants]='*'
        [test_filter_aos]='*Box*:*Sobel*:*ThreeByThree*:*Refuses*:*GrayFirst*'
        [test_reorient_filter]='*OddSizes*:*Refuses*'
        [test_engine]='Kinds/*optimized*:Kinds/*naive_pinned*'
        [test_jpeg_ycbcr]='*'
        [test_gpu_jpeg]='*'
        [test_gpu_video]='*'
        [test_pointwise_aos]='*'
        [test_gpu_exact]='*NormalizeRoundsTies*:*BatchesAndChangingSizes*:*Chains*:*ExactRatios*:*ChainsEnds*:*Unaligned*')
      pids=()
      # SANITIZE_TESTS' binaries, each with the filter given after its name or the one above.
      declare -A chosen=()
      read -r -a entries <<< "${SANITIZE_TESTS:-}"
      for entry in "${entries[@]}"; do
        name=${entry%%:*}
        [ -n "${filters[$name]:-}" ] || { echo "sanitize: no GPU test binary $name"; status=1; continue; }
        if [ "$entry" = "$name" ]; then chosen[$name]=${filters[$name]}; else chosen[$name]=${entry#*:}; fi
      done
      if [ ${#entries[@]} -eq 0 ]; then
        for name in "${!filters[@]}"; do chosen[$name]=${filters[$name]}; done
      fi
      read -r -a kernels <<< "${SANITIZE_KERNELS:-all}"
      for tool in memcheck racecheck initcheck synccheck; do
        for name in "${!chosen[@]}"; do
          t="$BUILD/tests/$name"
          [ -x "$t" ] || continue
          # initcheck does not see what the hardware JPEG engines write, and flags nvJPEG's kernel that reads it
          # (docs/gpu-jpeg.md).
          [ "$tool" = initcheck ] && [ "$name" = test_gpu_jpeg ] && continue
          for kernel in "${kernels[@]}"; do
            kernel_args=()
            [ "$kernel" = all ] || kernel_args=(--kernel-name "kns=$kernel" --launch-count "${SANITIZE_LAUNCHES:-16}")
            run="$tool-$name${SANITIZE_KERNELS:+-$kernel}"
            timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool "$tool" --error-exitcode 9 "${kernel_args[@]}" \
              "$t" --gtest_filter="${chosen[$name]}" > "$OUT/sanitize-$run.log" 2>&1 &
            pids+=("$!:$run")
          done
        done
      done
      for entry in "${pids[@]}"; do
        IFS=: read -r pid run <<< "$entry"
        wait "$pid"; rc=$?
        log="$OUT/sanitize-$run.log"
        echo "compute-sanitizer $run: exit $rc, $(grep -E "SUMMARY" "$log" | tail -1), $(grep -cE "^\[       OK \]" "$log") tests passed"
        [ $rc -eq 0 ] || status=1
      done
      ;;
    bench)
      for b in "$BUILD"/bench/imgpipe_bench_kernels; do
        [ -x "$b" ] && "$b" --json "$OUT/bench_kernels.json" 2>&1 | tee "$OUT/bench_kernels.log"
      done
      # imgpipe bench: progress to bench.log, the table (printed last) to bench_table.txt; docs/bench.md.
      "$BUILD"/apps/imgpipe bench --ops "${BENCH_OPS:-resize=1280x720,gaussian=5:1.0}" --size "${BENCH_SIZE:-1920x1080}" \
        --frames "${BENCH_FRAMES:-300}" --repeats "${BENCH_REPEATS:-7}" \
        --json "$OUT/bench.json" --trace "$OUT/bench_trace.json" 2> "$OUT/bench.log" | tee "$OUT/bench_table.txt" \
        || status=1
      ;;
    matrix)
      "$BUILD"/apps/imgpipe bench --matrix --frames "${MATRIX_FRAMES:-128}" --repeats "${MATRIX_REPEATS:-5}" \
        ${MATRIX_SIZES:+--matrix-sizes $MATRIX_SIZES} ${MATRIX_CHAINS:+--matrix-chains $MATRIX_CHAINS} \
        --json "$OUT/matrix.json" > "$OUT/matrix.txt" 2> "$OUT/matrix.log" || status=1
      sed -n '/^size and chain/,$p' "$OUT/matrix.txt"
      python3 tools/matrix_table.py "$OUT/matrix.json" ${MATRIX_BEFORE:+--before "$MATRIX_BEFORE"} \
        > "$OUT/matrix_table.md" || status=1
      sed -n '/^Targets missed/,$p;/^Every row meets/p' "$OUT/matrix_table.md"
      ;;
    matrix-ab)
      [ -d "${AB_BEFORE:-}" ] || { echo "matrix-ab: AB_BEFORE must name a folder of the before build's files"; status=1; continue; }
      ab_files=$(cd "$AB_BEFORE" && find . -type f | sed 's|^\./||')
      [ -n "$ab_files" ] || { echo "matrix-ab: $AB_BEFORE holds no files"; status=1; continue; }
      ab_after=$(mktemp -d)
      for f in $ab_files; do
        [ -f "$f" ] || { echo "matrix-ab: $AB_BEFORE/$f has no counterpart in the tree"; status=1; continue 2; }
        mkdir -p "$ab_after/$(dirname "$f")" && cp "$f" "$ab_after/$f"
      done
      # Copies, not cp -p: the files put back are newer than any object built from the before files.
      ab_restore() { cp -r "$ab_after"/. . && rm -rf "$ab_after"; }
      trap ab_restore EXIT
      trap 'exit 1' INT TERM
      # Each side built once, as its own copy of the binary; the tree's files back before the timing starts.
      built=1
      for build in before after; do
        if [ "$build" = before ]; then from=$AB_BEFORE; else from=$ab_after; fi
        for f in $ab_files; do cp "$from/$f" "$f"; done
        cmake --build "$BUILD" -j"$(nproc)" --target imgpipe > "$OUT/ab-build-$build.log" 2>&1 \
          && cp "$BUILD/apps/imgpipe" "$BUILD/apps/imgpipe-$build" \
          || { echo "matrix-ab: the $build build failed (ab-build-$build.log)"; status=1; built=0; break; }
      done
      ab_restore && trap - EXIT INT TERM
      for round in 1 2; do
        [ $built -eq 1 ] || break
        for build in before after; do
          "$BUILD/apps/imgpipe-$build" bench --matrix --backends "${MATRIX_BACKENDS:-optimized}" \
            --frames "${MATRIX_FRAMES:-128}" --repeats "${MATRIX_REPEATS:-5}" \
            ${MATRIX_SIZES:+--matrix-sizes $MATRIX_SIZES} ${MATRIX_CHAINS:+--matrix-chains $MATRIX_CHAINS} \
            --json "$OUT/ab-$build-$round.json" \
            > "$OUT/ab-$build-$round.log" 2>&1 \
            || { echo "matrix-ab: the $build matrix failed (ab-$build-$round.log)"; status=1; break 2; }
          echo "matrix-ab: $build, round $round: done"
        done
      done
      if [ -f "$OUT/ab-after-2.json" ]; then
        python3 tools/matrix_compare.py before="$OUT/ab-before-1.json,$OUT/ab-before-2.json" \
          after="$OUT/ab-after-1.json,$OUT/ab-after-2.json" > "$OUT/matrix_ab.md" || status=1
        awk -F'|' '$6 ~ /%/ { v = $6; gsub(/[ %+]/, "", v); if (v + 0 > 2 || v + 0 < -2) print }' "$OUT/matrix_ab.md"
        tail -1 "$OUT/matrix_ab.md"
      fi
      ;;
    profile)
      command -v ncu > /dev/null || { echo "profile: ncu (Nsight Compute) is not on PATH"; status=1; continue; }
      ncu --clock-control none -f -o "$OUT/profile" \
        -k regex:"${PROFILE_KERNELS:-^(gray_sobel_luma|stretch|range_aos|reorient_filter3x3_aos|sobel_aos|separable_aos|filter3x3_aos|pointwise)}" \
        --filter-mode per-launch-config --launch-skip 2 -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
        --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
        "$BUILD"/apps/imgpipe bench --matrix --matrix-sizes "${PROFILE_SIZE:-1920x1080}" --backends optimized \
        --frames 64 --repeats 1 --warmup 1 > "$OUT/profile.log" 2>&1 \
        || { echo "profile: ncu failed (profile.log)"; status=1; continue; }
      ncu --import "$OUT/profile.ncu-rep" --page details > "$OUT/profile.txt" 2>&1 \
        && python3 tools/ncu_table.py "$OUT/profile.txt" | tee "$OUT/profile.md" || status=1
      ;;
    jpeg)
      python3 tools/jpeg_folder_bench.py --imgpipe "$BUILD"/apps/imgpipe --bench-jpeg "$BUILD"/bench/imgpipe_bench_jpeg \
        --files "${JPEG_FILES:-4000}" --json "$OUT/jpeg-folder.json" > "$OUT/jpeg-folder.txt" 2>&1 || status=1
      tail -6 "$OUT/jpeg-folder.txt"
      ;;
    jpeg-threads)
      make_jpeg_folder || { status=1; continue; }
      : > "$OUT/jpeg-threads.txt"
      for round in 1 2; do
        for threads in ${JPEG_THREADS:-2 3 4 5 6 7}; do
          "$BUILD"/apps/imgpipe batch "$jpeg_folder" "${jpeg_folder%/in}/out-threads" "${jpeg_job[@]}" \
            --gpu-decode-threads "$threads" > "$OUT/jpeg-threads-$threads-$round.log" 2>&1 || status=1
          echo "--gpu-decode-threads $threads, round $round: $(grep -oE '[0-9.]+ images/s' \
            "$OUT/jpeg-threads-$threads-$round.log"); $(grep -oE 'its [0-9]+ threads busy.*' \
            "$OUT/jpeg-threads-$threads-$round.log")" | tee -a "$OUT/jpeg-threads.txt"
        done
      done
      ;;
    jpeg-timeline)
      make_jpeg_folder || { status=1; continue; }
      recorder=$PWD/$BUILD/bench/libimgpipe_cuda_timeline.so
      [ -f "$recorder" ] || { echo "jpeg-timeline: $recorder was not built (the toolkit has no CUPTI)"; status=1; continue; }
      rm -f "$OUT/jpeg-job.timeline" "$OUT/jpeg-job.timeline.xz"
      CUDA_INJECTION64_PATH=$recorder IMGPIPE_TIMELINE=$OUT/jpeg-job.timeline "$BUILD"/apps/imgpipe batch \
        "$jpeg_folder" "${jpeg_folder%/in}/out-timeline" "${jpeg_job[@]}" > "$OUT/jpeg-timeline-job.log" 2>&1 || status=1
      grep -E "images/s|per image|busy" "$OUT/jpeg-timeline-job.log"
      [ -s "$OUT/jpeg-job.timeline" ] || { echo "jpeg-timeline: no timeline was written (jpeg-timeline-job.log)"; status=1; continue; }
      python3 tools/timeline_summary.py "$OUT/jpeg-job.timeline" --window-kernel imgpipe --top 14 \
        --jpeg-engines "${JPEG_ENGINES:-7}" > "$OUT/jpeg-timeline.txt" || status=1
      cat "$OUT/jpeg-timeline.txt"
      xz -T0 "$OUT/jpeg-job.timeline"
      ;;
    *) echo "unknown step '$step' (build, test, sanitize, bench, matrix, matrix-ab, jpeg, jpeg-threads, jpeg-timeline)"; exit 2 ;;
  esac
done
exit $status
