"""Device arrays (CuPy, PyTorch) in and out without copies, on the caller's stream. Skips without a usable CUDA
device or without CuPy."""
import numpy as np
import pytest

import imgpipe
from conftest import photos, usable

pytestmark = pytest.mark.skipif(not usable("optimized"), reason="no usable CUDA device here; these tests need one")
cupy = pytest.importorskip("cupy", reason="CuPy is not installed")

CHAIN = "resize=301x199,gaussian=5:1.0,rotate=90"


@pytest.mark.parametrize("backend", ["naive", "optimized"])
def test_device_frames_give_the_host_paths_bytes(backend):
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    for name, frame in photos().items():
        out = cupy.from_dlpack(p(cupy.asarray(frame)))
        assert out.shape == (301, 199, 3) and out.dtype == cupy.uint8
        assert np.array_equal(cupy.asnumpy(out), p(frame)), name


def test_a_device_batch_equals_frame_by_frame():
    p = imgpipe.Pipeline("resize=1280x720,gaussian=5:1.0", backend="optimized")
    frames = cupy.asarray(np.stack([np.resize(f, (1080, 1920, 3)) for f in photos().values()] * 4))
    batch = cupy.from_dlpack(p(frames))
    for i in range(len(frames)):
        assert cupy.array_equal(batch[i], cupy.from_dlpack(p(frames[i]))), f"frame {i}"


def test_out_is_written_in_place_and_returned():
    p = imgpipe.Pipeline("flip=h", backend="optimized")
    frame = cupy.asarray(next(iter(photos().values())))
    out = cupy.empty_like(frame)
    pointer = out.data.ptr
    assert p(frame, out=out) is out
    cupy.cuda.Device().synchronize()
    assert out.data.ptr == pointer
    assert cupy.array_equal(out, frame[:, ::-1])
    with pytest.raises(ValueError, match="shape"):
        p(frame, out=cupy.empty((2, 2, 3), cupy.uint8))


def test_work_runs_in_order_on_the_callers_stream():
    # The input is still being written on a non-blocking stream when imgpipe is called on that stream: only a
    # run ordered after those writes sees the final input. On another stream, or the default one, it would
    # read a frame in between.
    p = imgpipe.Pipeline("gray", backend="optimized")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        frame = cupy.zeros((2160, 3840, 3), cupy.uint8)
        for _ in range(200):
            frame += 1
        out = cupy.from_dlpack(p(frame, stream=stream))
        expected = cupy.full((2160, 3840, 3), 200, cupy.uint8)
    stream.synchronize()
    assert cupy.array_equal(out, expected)


def test_pytorch_tensors_work_too():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    p = imgpipe.Pipeline(CHAIN, backend="optimized")
    frame = next(iter(photos().values()))
    out = torch.from_dlpack(p(torch.from_numpy(frame.copy()).cuda()))
    assert np.array_equal(out.cpu().numpy(), p(frame))
