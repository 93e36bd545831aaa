"""Device arrays (CuPy, PyTorch) in and out without copies, on the caller's stream; results in the input's
library. Skips without a usable CUDA device or without CuPy."""
import time

import numpy as np
import pytest

import imgpipe
from conftest import hold, photos, usable

pytestmark = pytest.mark.skipif(not usable("optimized"), reason="no usable CUDA device here; these tests need one")
cupy = pytest.importorskip("cupy", reason="CuPy is not installed")

CHAIN = "resize=301x199,gaussian=5:1.0,rotate=90"


@pytest.mark.parametrize("backend", ["naive", "optimized"])
def test_jax_device_arrays_come_in_through_dlpack(backend):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("this JAX has no GPU backend")
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    frame = next(iter(photos().values()))
    result = p(jax.device_put(frame, gpu))
    assert hasattr(result, "__dlpack__"), "a device array that speaks DLPack"
    assert np.array_equal(np.asarray(jax.numpy.from_dlpack(result)), p(frame))


@pytest.mark.parametrize("backend", ["naive", "optimized"])
def test_device_frames_give_the_host_paths_bytes(backend):
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    for name, frame in photos().items():
        out = p(cupy.asarray(frame))
        assert isinstance(out, cupy.ndarray), "CuPy in, CuPy out"
        assert out.shape == (301, 199, 3) and out.dtype == cupy.uint8
        assert np.array_equal(cupy.asnumpy(out), p(frame)), name


def test_a_device_batch_equals_frame_by_frame():
    p = imgpipe.Pipeline("resize=1280x720,gaussian=5:1.0", backend="optimized")
    frames = cupy.asarray(np.stack([np.resize(f, (1080, 1920, 3)) for f in photos().values()] * 4))
    batch = p(frames)
    for i in range(len(frames)):
        assert cupy.array_equal(batch[i], p(frames[i])), f"frame {i}"


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


def test_pending_writes_of_the_producer_come_first():
    p = imgpipe.Pipeline("gray", backend="optimized")
    stream = cupy.cuda.Stream(non_blocking=True)
    frame = cupy.zeros((1080, 1920, 3), cupy.uint8)
    p(frame)
    cupy.cuda.Device().synchronize()
    hold(stream)
    with stream:
        frame += 200  # still pending when imgpipe is called
    out = p(frame, stream=stream)
    stream.synchronize()
    assert bool(cupy.all(out == 200))


def test_the_work_is_enqueued_on_the_callers_stream():
    # With the caller's stream held by a spinning kernel, imgpipe's result cannot appear before the spin ends;
    # run on any other stream, it would be there within milliseconds.
    p = imgpipe.Pipeline("gray", backend="optimized")
    stream, other = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    frame = cupy.full((1080, 1920, 3), 200, cupy.uint8)
    out, early = cupy.zeros_like(frame), cupy.zeros_like(frame)  # allocated now: an allocation may wait
    p(frame, out=out)
    out.fill(0)
    cupy.cuda.Device().synchronize()
    hold(stream)
    assert p(frame, stream=stream, out=out) is out
    time.sleep(0.02)
    with other:
        cupy.copyto(early, out)
    other.synchronize()
    assert not bool(cupy.any(early)), "the result was written before the caller's stream got to it"
    stream.synchronize()
    assert bool(cupy.all(out == 200))


def test_pytorch_tensors_work_too():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    p = imgpipe.Pipeline(CHAIN, backend="optimized")
    frame = next(iter(photos().values()))
    out = p(torch.from_numpy(frame.copy()).cuda())
    assert isinstance(out, torch.Tensor) and out.is_cuda, "PyTorch in, PyTorch out"
    assert np.array_equal(out.cpu().numpy(), p(frame))
    into = torch.empty((301, 199, 3), dtype=torch.uint8, device="cuda")
    assert p(torch.from_numpy(frame.copy()).cuda(), out=into) is into
    torch.cuda.synchronize()
    assert np.array_equal(into.cpu().numpy(), p(frame))
