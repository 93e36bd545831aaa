"""Device arrays that speak only __cuda_array_interface__ (Numba's, or a CuPy array wrapped to offer nothing
else): the same bytes as through DLPack, out= written in place, and the interface's stream rules. A bad interface
is refused before the device is touched, so those checks run everywhere; the rest skips without a usable CUDA
device or without CuPy."""
import numpy as np
import pytest

import imgpipe
from conftest import hold, photos, usable, usable_backends

try:
    import cupy
except ImportError:
    cupy = None

CHAIN = "resize=301x199,gaussian=5:1.0,rotate=90"
# A well-formed interface for a 6x4 frame; its pointer is never followed by the checks that use it.
GOOD = {"shape": (4, 6, 3), "typestr": "|u1", "data": (0x10000, False), "version": 3, "strides": None, "stream": None}


class InterfaceOnly:
    """An array offering nothing but a __cuda_array_interface__ dict (and keeping `owner` alive)."""

    def __init__(self, interface, owner=None):
        self.__cuda_array_interface__ = interface
        self.owner = owner


def of_cupy(array, stream=None, readonly=False):
    """A CuPy array as an InterfaceOnly, with the producer stream and read-only flag the test chooses."""
    interface = dict(array.__cuda_array_interface__)
    interface.update(version=3, stream=stream, data=(interface["data"][0], readonly))
    return InterfaceOnly(interface, owner=array)


class BothInterfaces:
    """A host array through DLPack that also offers an interface which would be refused: DLPack is preferred."""

    def __init__(self, array):
        self.array = array
        self.__cuda_array_interface__ = {**GOOD, "typestr": "<f4"}

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def device_test(test):
    test = pytest.mark.skipif(not usable("optimized"), reason="no usable CUDA device here; this test needs one")(test)
    return pytest.mark.skipif(cupy is None, reason="CuPy is not installed")(test)


@pytest.mark.parametrize("entries, error, message", [
    ({"typestr": "<f4"}, TypeError, r"typestr '<f4': frames must be uint8"),
    ({"shape": (4, 6)}, ValueError, r"shape \(H, W, 3\)"),
    ({"shape": (2, 4, 6, 4)}, ValueError, r"shape \(H, W, 3\)"),
    ({"shape": (4, 0, 3)}, ValueError, "sides from 1"),
    ({"shape": "4x6"}, TypeError, "shape must be a tuple of ints"),
    ({"mask": GOOD}, TypeError, "mask must be None"),
    ({"stream": 0}, ValueError, "stream 0 is not allowed"),
    ({"version": 1}, TypeError, "only versions 2 and 3"),
    ({"strides": (18, 1, 6)}, TypeError, r"strides \(18, 1, 6\) are not C-contiguous"),
    ({"strides": (36, 3, 1)}, TypeError, "not C-contiguous"),
    ({"data": 0x10000}, TypeError, r"data must be a tuple \(pointer, readonly\)"),
])
def test_a_bad_interface_is_refused_before_the_device_is_touched(entries, error, message):
    p = imgpipe.Pipeline("flip=h", backend=usable_backends()[0])
    with pytest.raises(error, match=message) as raised:
        p(InterfaceOnly({**GOOD, **entries}))
    if error is TypeError:
        assert "__cuda_array_interface__ of frames" in str(raised.value)


@pytest.mark.skipif(not usable("cpu"), reason="the cpu backend is not usable here")
@pytest.mark.parametrize("entries", [{}, {"strides": (18, 3, 1)}, {"shape": (1, 4, 6, 3), "strides": (7, 18, 3, 1)},
                                     {"version": 2, "stream": None}])
def test_the_cpu_backend_refuses_a_well_formed_interface(entries):
    # Contiguous strides (any stride for a dimension of one) pass the checks and reach the backend's refusal.
    with pytest.raises(TypeError, match="the cpu backend takes host"):
        imgpipe.Pipeline("flip=h", backend="cpu")(InterfaceOnly({**GOOD, **entries}))


@pytest.mark.skipif(not usable("cpu"), reason="the cpu backend is not usable here")
def test_dlpack_is_preferred_when_both_are_offered():
    p = imgpipe.Pipeline("flip=h", backend="cpu")
    frame = next(iter(photos().values())).copy()  # writable: NumPy before 2.0 exports no read-only array by DLPack
    assert np.array_equal(p(BothInterfaces(frame)), p(frame))


@device_test
@pytest.mark.parametrize("stream", [None, 1, 2])
def test_interface_frames_give_the_dlpack_paths_bytes(stream):
    p = imgpipe.Pipeline(CHAIN, backend="optimized")
    for name, frame in photos().items():
        device = cupy.asarray(frame)
        expected = cupy.from_dlpack(p(device))
        result = cupy.from_dlpack(p(of_cupy(device, stream=stream)))
        assert result.shape == expected.shape and cupy.array_equal(result, expected), name
    batch = cupy.asarray(np.stack([np.resize(f, (240, 320, 3)) for f in photos().values()]))
    assert cupy.array_equal(cupy.from_dlpack(p(of_cupy(batch, stream=stream))), cupy.from_dlpack(p(batch)))


@device_test
@pytest.mark.parametrize("wrap_input", [False, True])
def test_out_through_the_interface_is_written_in_place(wrap_input):
    p = imgpipe.Pipeline("flip=h", backend="optimized")
    frame = cupy.asarray(next(iter(photos().values())))
    out = cupy.empty_like(frame)
    wrapped = of_cupy(out)
    assert p(of_cupy(frame) if wrap_input else frame, out=wrapped) is wrapped
    cupy.cuda.Device().synchronize()
    assert wrapped.__cuda_array_interface__["data"][0] == out.data.ptr
    assert cupy.array_equal(out, frame[:, ::-1])
    with pytest.raises(ValueError, match="output's shape"):
        p(frame, out=of_cupy(cupy.empty((2, 2, 3), cupy.uint8)))


@device_test
def test_read_only_out_non_contiguous_arrays_and_host_memory_are_refused():
    p = imgpipe.Pipeline("flip=h", backend="optimized")
    frame = cupy.asarray(next(iter(photos().values())))
    height, width, _ = frame.shape
    with pytest.raises(ValueError, match="of out: read-only, and imgpipe writes into it"):
        p(frame, out=of_cupy(cupy.empty_like(frame), readonly=True))
    p(of_cupy(frame, readonly=True))  # read-only input is fine
    with pytest.raises(TypeError, match="of frames: strides .* are not C-contiguous"):
        p(of_cupy(frame[:, ::2]))
    with pytest.raises(TypeError, match="of out: strides .* are not C-contiguous"):
        p(frame, out=of_cupy(cupy.empty((height, 2 * width, 3), cupy.uint8)[:, ::2]))
    host = np.zeros((4, 6, 3), np.uint8)
    with pytest.raises(ValueError, match="not device memory"):
        p(InterfaceOnly({**GOOD, "data": (host.ctypes.data, False)}, owner=host))


@device_test
def test_the_producers_pending_writes_come_first():
    # The producer writes the frame on s1 behind a spinning kernel while imgpipe runs on s2: only the wait on the
    # stream the interface names keeps imgpipe from reading it early, as the control run without a stream shows.
    p = imgpipe.Pipeline("gray", backend="optimized")
    s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    frame = cupy.zeros((1080, 1920, 3), cupy.uint8)
    out = cupy.zeros_like(frame)
    p(frame, out=out)  # plans and buffers now, so the calls below only enqueue
    # CUDA loads a kernel's module at its first launch, and loading may synchronize the device, which would let
    # the control's spin end before imgpipe reads: every kernel the control runs is launched once before it.
    frame.fill(200)
    hold(s1, cycles=1)
    cupy.all(out == 200)
    cupy.cuda.Device().synchronize()

    def all_written(named_stream):
        frame.fill(0)
        out.fill(0)
        cupy.cuda.Device().synchronize()
        # CuPy synchronizes when it exports its interface, so the dict is taken before the producer's work.
        interface = of_cupy(frame, stream=named_stream)
        hold(s1)
        with s1:
            frame.fill(200)  # still pending when imgpipe is called
        p(interface, stream=s2, out=out)
        s2.synchronize()
        written = bool(cupy.all(out == 200))
        cupy.cuda.Device().synchronize()
        return written

    if all_written(None):
        pytest.skip("control: without a stream to wait for, imgpipe still read the frame after the producer wrote "
                    "it (something in the call synchronizes the streams), so this machine cannot show the wait")
    assert all_written(s1.ptr)


@device_test
def test_the_producers_later_work_waits_for_imgpipe():
    # imgpipe's stream s2 is held by a spinning kernel when the call returns, and the producer then overwrites the
    # frame on its stream s1: the interface makes s1 wait for imgpipe's work, else the overwrite would land first.
    p = imgpipe.Pipeline("gray", backend="optimized")
    s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    frame = cupy.full((1080, 1920, 3), 200, cupy.uint8)
    out = cupy.zeros_like(frame)
    p(frame, out=out)
    out.fill(0)
    cupy.cuda.Device().synchronize()
    interface = of_cupy(frame, stream=s1.ptr)  # before the hold: CuPy synchronizes when it exports
    hold(s2)
    p(interface, stream=s2, out=out)
    with s1:
        frame.fill(0)
    s1.synchronize()
    s2.synchronize()
    assert bool(cupy.all(out == 200))


@device_test
def test_numba_device_arrays_work_too():
    numba_cuda = pytest.importorskip("numba.cuda", reason="Numba is not installed")
    if not numba_cuda.is_available():
        pytest.skip("Numba sees no usable CUDA device")
    p = imgpipe.Pipeline(CHAIN, backend="optimized")
    frame = next(iter(photos().values()))
    out = numba_cuda.device_array((301, 199, 3), np.uint8)
    p(numba_cuda.to_device(frame), out=out)
    assert np.array_equal(out.copy_to_host(), p(frame))
