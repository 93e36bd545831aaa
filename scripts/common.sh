# Shared by setup.sh and test.sh: install what is missing (Debian 12), then configure and build into build/.
# Sourced, not run.

# Build tools and the libraries CMake looks for. OpenCV is optional for imgpipe, but these scripts set up
# the full build (TurboJPEG for JPEG on the CPU straight to and from RGB, nlohmann-json for `imgpipe bench
# --json`, matplotlib for tools/plot_bench.py, ffmpeg for the README's pipe example and its test, Python's
# development files, NumPy and pytest for the Python module, nv-codec-headers for NVDEC video decoding, FFmpeg's
# libavformat and libavcodec to demux containers for it and, with libswscale, to write video files that keep
# each frame's time); the CUDA toolkit comes from NVIDIA, not from here.
imgpipe_packages=(cmake ninja-build g++ libopencv-dev libturbojpeg0-dev libgtest-dev libgmock-dev libcli11-dev
  libtbb-dev nlohmann-json3-dev libffmpeg-nvenc-dev libavformat-dev libavcodec-dev libswscale-dev python3-matplotlib
  ffmpeg python3-dev python3-venv python3-numpy python3-pytest)

install_missing() {
  local missing=() package
  for package in "${imgpipe_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "imgpipe: every package is already installed"
    return
  fi
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "imgpipe: installing ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# nvcc may be installed but not on PATH (NVIDIA's packages put it in /usr/local/cuda/bin).
find_nvcc() {
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  if ! command -v "${CUDACXX:-nvcc}" >/dev/null; then
    echo "imgpipe: no CUDA toolkit: ${CUDACXX:-nvcc} is not a command; install the toolkit from NVIDIA, or set" \
      "CUDACXX to nvcc's path" >&2
    exit 1
  fi
}

# The Python module is built with nanobind, which Debian 12 does not package: it comes from PyPI, into a virtual
# environment under build/ that also sees Debian's NumPy and pytest. One version, the one tested: its headers
# are compiled under the build's -Werror (2.0.0's, for one, are not clean under -Wpedantic).
python_venv=build/python-venv
nanobind_version=3.1.0
make_python_venv() {
  local installed
  installed=$("$python_venv/bin/python" -c "import nanobind; print(nanobind.__version__)" 2>/dev/null || true)
  [ "$installed" = "$nanobind_version" ] && return
  echo "imgpipe: installing nanobind $nanobind_version from PyPI into $python_venv (for the Python module)"
  /usr/bin/python3 -m venv --system-site-packages "$python_venv"
  "$python_venv/bin/pip" install --quiet "nanobind==$nanobind_version"
}

# nvJPEG (GPU JPEG decode and encode) is in most CUDA toolkits; NVIDIA's Debian 12 toolkit packages may lack
# it. Then PyPI's nvidia-nvjpeg wheel (header and library, CUDA 13) goes into the same virtual environment, and
# its folder is where CMake looks (NVJPEG_ROOT). Other toolkit versions build with CPU JPEG only.
nvjpeg_root=""
find_nvjpeg() {
  local nvcc_path cuda_root release
  nvcc_path=$(command -v "${CUDACXX:-nvcc}")
  cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")
  [ -f "$cuda_root/include/nvjpeg.h" ] && return
  release=$("$nvcc_path" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  if [ "$release" != 13 ]; then
    echo "imgpipe: CUDA $release's toolkit has no nvjpeg.h; building with CPU JPEG only"
    return
  fi
  nvjpeg_root=$("$python_venv/bin/python" -c "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'cu13'))" 2>/dev/null || true)
  if [ -z "$nvjpeg_root" ] || [ ! -f "$nvjpeg_root/include/nvjpeg.h" ]; then
    echo "imgpipe: installing nvJPEG from PyPI (nvidia-nvjpeg 13.0) into $python_venv (for GPU JPEG)"
    if ! "$python_venv/bin/pip" install --quiet "nvidia-nvjpeg==13.0.*"; then
      echo "imgpipe: nvidia-nvjpeg could not be installed (above: pip's reason); building with CPU JPEG only" >&2
      nvjpeg_root=""
      return
    fi
    nvjpeg_root=$("$python_venv/bin/python" -c "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'cu13'))")
  fi
}

# The cpu-only preset (CMakePresets.json), a Release build into build/ in which a warning fails the build, with
# the Python module.
build_imgpipe() {
  find_nvcc
  make_python_venv
  find_nvjpeg
  # The tests' Python scripts too run in the virtual environment, which sees Debian's NumPy.
  cmake --preset cpu-only -DIMGPIPE_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PWD/$python_venv/bin/python" \
    -DPython3_EXECUTABLE="$PWD/$python_venv/bin/python" ${nvjpeg_root:+-DNVJPEG_ROOT="$nvjpeg_root"}
  cmake --build --preset cpu-only -j"$(nproc)"
}
