"""Shared by the Python tests: the photographs in data/ppm, PPM files read and written without OpenCV, and the
imgpipe command the module is checked against. ctest sets IMGPIPE_BINARY and IMGPIPE_DATA_DIR."""
import functools
import os
import pathlib
import subprocess

import numpy as np
import pytest

import imgpipe

DATA = pathlib.Path(os.environ.get("IMGPIPE_DATA_DIR", pathlib.Path(__file__).resolve().parents[2] / "data"))
BINARY = os.environ.get("IMGPIPE_BINARY")


def read_ppm(path):
    """A binary 8-bit PPM (P6) as an (H, W, 3) uint8 array."""
    data = pathlib.Path(path).read_bytes()
    fields, at = [], 0
    while len(fields) < 4:
        while data[at:at + 1].isspace():
            at += 1
        end = at
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[at:end])
        at = end
    assert fields[0] == b"P6" and fields[3] == b"255", f"{path}: not an 8-bit P6 PPM"
    width, height = int(fields[1]), int(fields[2])
    return np.frombuffer(data[at + 1:at + 1 + width * height * 3], np.uint8).reshape(height, width, 3)


def write_ppm(path, frame):
    height, width, _ = frame.shape
    pathlib.Path(path).write_bytes(b"P6\n%d %d\n255\n" % (width, height) + np.ascontiguousarray(frame).tobytes())


def photos():
    return {p.name: read_ppm(p) for p in sorted((DATA / "ppm").glob("*.ppm"))}


def usable(name):
    return any(b["name"] == name and b["usable"] for b in imgpipe.backends())


def usable_backends():
    return [b["name"] for b in imgpipe.backends() if b["usable"]]


def run_command(*args):
    if not BINARY:
        pytest.skip("IMGPIPE_BINARY is not set (ctest sets it): no command to compare with")
    return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)


# Holds a stream for about `cycles` GPU clock cycles (200,000,000: about 0.1 s on an H200), so that work queued
# behind it is still pending while a test looks.
SPIN = r"""extern "C" __global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {}
}"""


@functools.cache
def spin_kernel():
    import cupy  # only the device tests hold streams, and they skip without CuPy

    return cupy.RawKernel(SPIN, "spin")


def hold(stream, cycles=200_000_000):
    import cupy

    with stream:
        spin_kernel()((1,), (1,), (cupy.int64(cycles),))
