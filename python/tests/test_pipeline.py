"""The module against the imgpipe command: same bytes for the same chain and backend, on real photographs,
one frame or a batch, a folder job with a bad file in it, and the command's error messages."""
import errno
import pathlib
import re
import shutil

import numpy as np
import pytest

import imgpipe
from conftest import DATA, photos, read_ppm, run_command, usable, usable_backends, write_ppm

CHAIN = "resize=301x199,gaussian=5:1.0,rotate=90"


def test_backends_lists_every_kind():
    names = {b["name"]: b for b in imgpipe.backends()}
    assert set(names) == {"cpu", "naive", "optimized"}
    for b in names.values():
        assert isinstance(b["usable"], bool) and isinstance(b["detail"], str) and b["detail"]


@pytest.mark.parametrize("backend", usable_backends())
def test_a_frame_gives_the_commands_bytes(tmp_path, backend):
    result = run_command("batch", photos_dir(), tmp_path / "out", "--ops", CHAIN, "--backend", backend,
                         "--format", "ppm")
    assert result.returncode == 0, result.stderr
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    assert p.backend == backend and p.chain == "resize=301x199,gaussian=5:1,rotate=90"
    for name, frame in photos().items():
        out = p(frame)
        assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (301, 199, 3)
        assert np.array_equal(out, read_ppm(tmp_path / "out" / name)), name


@pytest.mark.parametrize("backend", usable_backends())
def test_a_batch_equals_frame_by_frame(backend):
    p = imgpipe.Pipeline(CHAIN, backend=backend, slots=2)
    frames = np.stack([frame[:120, :160] for frame in photos().values()] * 3)
    out = p(frames)
    assert out.shape == (len(frames), 301, 199, 3)
    for i, frame in enumerate(frames):
        assert np.array_equal(out[i], p(np.ascontiguousarray(frame))), f"frame {i}"


@pytest.mark.parametrize("backend", usable_backends())
def test_jax_host_arrays_come_in_through_dlpack(backend):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    frame = next(iter(photos().values()))
    out = p(jax.device_put(frame, jax.devices("cpu")[0]))  # JAX puts arrays on its GPU where it has one
    assert isinstance(out, np.ndarray) and np.array_equal(out, p(frame))


def test_the_version_is_the_projects():
    project = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert imgpipe.__version__ == re.search(r"project\(imgpipe VERSION ([0-9.]+)", project).group(1)


def test_output_size_follows_the_chain():
    assert imgpipe.Pipeline("resize=64x48,transpose", backend=usable_backends()[0]).output_size((640, 480)) == (48, 64)


def test_bad_arguments_raise_with_the_commands_words(tmp_path):
    with pytest.raises(ValueError) as error:
        imgpipe.Pipeline("blur=5")
    command = run_command("batch", photos_dir(), tmp_path / "out", "--ops", "blur=5")
    assert command.returncode == 2
    assert f"--ops: {error.value}" in command.stderr
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        imgpipe.Pipeline("gray", backend="gpu")
    p = imgpipe.Pipeline("gray", backend=usable_backends()[0])
    for format in ("gif", "PNG", ".png"):
        with pytest.raises(ValueError, match=f"format '{re.escape(format)}': same, or an image extension"):
            p.run_folder(str(photos_dir()), str(tmp_path / "refused"), format=format)
    assert not (tmp_path / "refused").exists()
    with pytest.raises(ValueError, match=r"shape \(H, W, 3\)"):
        p(np.zeros((4, 4), np.uint8))
    with pytest.raises(TypeError):
        p(np.zeros((4, 4, 3), np.float32))


def test_arguments_out_of_range_raise_value_and_type_errors(tmp_path):
    p = imgpipe.Pipeline("flip=h", backend=usable_backends()[0])
    frame = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(TypeError, match="stream: expected None, a cudaStream_t"):
        p(frame, stream="x")
    with pytest.raises(TypeError, match="stream: expected None, a cudaStream_t"):
        p(frame, stream=-1)
    # 2^31 frames of one pixel: calloc'd, never touched, refused from the shape alone.
    with pytest.raises(ValueError, match="a batch of 2147483648 frames: at most 2147483647"):
        p(np.zeros((2**31, 1, 1, 3), np.uint8))
    for size in ((0, 0), (-3, 7), (65536, 1)):
        with pytest.raises(ValueError, match="sides from 1 to 65535"):
            p.output_size(size)
    with pytest.raises(ValueError, match="jobs: 2147483647 is not from 0"):
        p.run_folder(str(photos_dir()), str(tmp_path / "out"), jobs=2**31 - 1)
    a_file = tmp_path / "a-file"
    a_file.write_bytes(b"x")
    with pytest.raises(OSError):
        p.run_folder(str(photos_dir()), str(a_file / "out"))


def test_run_folder_is_the_batch_job(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    for name, frame in photos().items():
        write_ppm(source / name, frame)
    (source / "broken.ppm").write_bytes(b"P6 100 100 255\nnot enough pixels")
    backend = usable_backends()[0]
    p = imgpipe.Pipeline(CHAIN, backend=backend)
    summary = p.run_folder(str(source), str(tmp_path / "out"), jobs=2)
    assert (summary["done"], summary["failed"], summary["files"]) == (len(photos()), 1, len(photos()) + 1)
    stages = summary["stage_seconds"]
    assert set(stages) == {"read", "submit", "complete", "write"}
    assert stages["read"] > 0 and stages["write"] > 0, "decoding and encoding files takes time"
    on_cpu = summary["stage_cpu_seconds"]
    assert set(on_cpu) == set(stages) and on_cpu["read"] > 0
    assert all(0 <= on_cpu[stage] <= stages[stage] * 1.01 + 1e-3 for stage in stages), (on_cpu, stages)
    [(path, message)] = summary["errors"]
    assert path == str(source / "broken.ppm") and message.startswith(f"{path}: truncated raster")
    command = run_command("batch", source, tmp_path / "command", "--ops", CHAIN, "--backend", backend)
    assert command.returncode == 1 and message in command.stderr, "the command's message for the same file"
    for name in photos():
        assert np.array_equal(read_ppm(tmp_path / "out" / name), read_ppm(tmp_path / "command" / name)), name
    again = p.run_folder(str(source), str(tmp_path / "out"), skip_existing=True)
    assert again["skipped"] == len(photos()) and again["done"] == 0
    refused = p.run_files(str(source), [next(iter(photos()))], str(tmp_path / "out"))
    [(_, existing)] = refused["errors"]
    assert existing.endswith("exists; overwrite=True replaces it, skip_existing=True skips it"), existing
    with pytest.raises(ValueError, match="inside it"):
        p.run_folder(str(source), str(source / "out"))


def test_run_folder_shards_cover_the_folder_once(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    for i in range(10):
        write_ppm(source / f"f{i}.ppm", np.full((6, 8, 3), i, np.uint8))
    p = imgpipe.Pipeline("flip=h", backend=usable_backends()[0])
    written = []
    for k in range(3):
        p.run_folder(str(source), str(tmp_path / f"out{k}"), shard=(k, 3))
        written += sorted(f.name for f in (tmp_path / f"out{k}").glob("*.ppm"))
    assert sorted(written) == sorted(f"f{i}.ppm" for i in range(10))


def test_run_folder_checks_and_reports_its_jpeg_codecs(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    write_ppm(source / "a.ppm", np.full((6, 8, 3), 7, np.uint8))
    p = imgpipe.Pipeline("flip=h", backend=usable_backends()[0])
    for option in ("decoder", "encoder"):
        with pytest.raises(ValueError, match=f"{option} 'hardware': auto, gpu or cpu"):
            p.run_folder(str(source), str(tmp_path / "refused"), **{option: "hardware"})
    for threads in (0, 65):
        with pytest.raises(ValueError, match=f"gpu_decode_threads {threads}: from 1 to 64"):
            p.run_folder(str(source), str(tmp_path / "refused"), gpu_decode_threads=threads)
    summary = p.run_folder(str(source), str(tmp_path / "out"), decoder="cpu", encoder="cpu")
    assert (summary["done"], summary["decoder"], summary["encoder"]) == (1, "cpu", "cpu")
    assert summary["jpeg_decoded_by"] is None and summary["gpu_encoded"] == 0
    for backend in {"cpu", "naive"} & set(usable_backends()):  # their engines keep no frames on the device
        host_engine = imgpipe.Pipeline("flip=h", backend=backend)
        for option in ("decoder", "encoder"):
            with pytest.raises(ValueError, match=f"{option}='gpu': the engine .* keeps no frames on the device"):
                host_engine.run_folder(str(source), str(tmp_path / "refused"), **{option: "gpu"})
        assert host_engine.run_folder(str(source), str(tmp_path / backend))["decoder"] == "cpu"
    assert not (tmp_path / "refused").exists(), "a refused job writes nothing"
    jpeg = imgpipe.gpu_jpeg()
    assert isinstance(jpeg["usable"], bool) and jpeg["detail"] and all(isinstance(line, str) for line in jpeg["detail"])


@pytest.mark.skipif(not usable("optimized"), reason="no usable CUDA device here; GPU JPEG needs one")
def test_run_folder_decodes_and_encodes_jpeg_on_the_gpu_as_the_command_does(tmp_path):
    if not imgpipe.gpu_jpeg()["usable"]:
        pytest.skip("GPU JPEG is unavailable here: " + "; ".join(imgpipe.gpu_jpeg()["detail"]))
    source = tmp_path / "in"
    source.mkdir()
    photographs = sorted((DATA / "images").glob("*.jpg"))
    for photo in photographs:
        shutil.copy(photo, source)
    (source / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"not a JPEG after all" * 20)
    chain = "resize=320x240,gaussian=5:1.0"
    p = imgpipe.Pipeline(chain, backend="optimized")
    summary = p.run_folder(str(source), str(tmp_path / "out"), format="jpg", quality=90, decoder="gpu",
                           encoder="gpu", jobs=2)
    assert (summary["done"], summary["failed"]) == (len(photographs), 1)
    assert (summary["decoder"], summary["encoder"], summary["gpu_encoded"]) == ("gpu", "gpu", len(photographs))
    assert sum(summary["jpeg_decoded_by"].values()) == len(photographs)
    [(path, message)] = summary["errors"]
    assert path == str(source / "broken.jpg")
    command = run_command("batch", source, tmp_path / "command", "--ops", chain, "--backend", "optimized",
                          "--format", "jpg", "--quality", "90", "--decoder", "gpu", "--encoder", "gpu", "--jobs", "2")
    assert command.returncode == 1 and message in command.stderr, "the command's message for the same file"
    for photo in photographs:
        written = (tmp_path / "out" / photo.name).read_bytes()
        assert written[:3] == b"\xff\xd8\xff", photo.name
        assert written == (tmp_path / "command" / photo.name).read_bytes(), photo.name


def photos_dir():
    return DATA / "ppm"


def test_exact_is_the_default_and_fast_is_asked_for():
    assert imgpipe.Pipeline("resize=301x199", backend="cpu").exact
    assert not imgpipe.Pipeline("resize=301x199", backend="cpu", exact=False).exact


# What exact=True promises, checked against OpenCV's Python module where it is installed: the same bytes as
# OpenCV's own functions, on every backend.
EXACT_CASES = {
    "resize=301x199,gaussian=5:1.0": lambda cv2, f: cv2.GaussianBlur(cv2.resize(f, (301, 199)), (5, 5), 1.0),
    "resize=97x301,box=5:replicate": lambda cv2, f: cv2.blur(cv2.resize(f, (97, 301)), (5, 5),
                                                             borderType=cv2.BORDER_REPLICATE),
    "gray": lambda cv2, f: np.repeat(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY)[:, :, None], 3, axis=2),
}


@pytest.mark.parametrize("backend", usable_backends())
@pytest.mark.parametrize("chain", list(EXACT_CASES))
def test_exact_gives_opencvs_bytes(backend, chain):
    cv2 = pytest.importorskip("cv2", reason="OpenCV's Python module is not installed")
    cv2.ipp.setUseIPP(False)  # IPP rounds its own way; imgpipe follows OpenCV's own code, as Debian's build runs it
    p = imgpipe.Pipeline(chain, backend=backend, exact=True)
    assert p.exact
    for name, frame in photos().items():
        assert np.array_equal(p(frame), EXACT_CASES[chain](cv2, frame)), name


@pytest.mark.skipif(not usable("optimized"), reason="no usable CUDA device here")
def test_device_picks_the_gpu_and_one_that_is_not_there_is_a_value_error():
    on_first = imgpipe.Pipeline(CHAIN, backend="optimized", device=0)
    assert on_first.device == 0
    frame = next(iter(photos().values()))
    assert np.array_equal(on_first(frame), imgpipe.Pipeline(CHAIN, backend="optimized")(frame))
    assert np.array_equal(on_first(np.stack([frame, frame]))[1], on_first(frame))
    with pytest.raises(ValueError, match="there is no device 99"):
        imgpipe.Pipeline(CHAIN, backend="optimized", device=99)


def test_the_cpu_backend_ignores_device():
    if not usable("cpu"):
        pytest.skip("the cpu backend is not usable here")
    assert imgpipe.Pipeline(CHAIN, backend="cpu", device=7).device is None


def test_a_missing_file_or_folder_is_file_not_found_error(tmp_path):
    missing = tmp_path / "missing"
    calls = [lambda: imgpipe.list_images(missing), lambda: imgpipe.list_image_entries(missing),
             lambda: imgpipe.Pipeline("flip=h", backend="cpu").run_folder(missing, tmp_path / "out")]
    try:
        video_decoder = imgpipe.VideoReader(DATA / "video" / "clip.mp4").decoder
    except OSError as error:  # a build without OpenCV or FFmpeg's libraries reads no video files
        assert "needs a build with OpenCV or FFmpeg" in str(error), error
        video_decoder = None
    if video_decoder is not None and "OpenCV" not in video_decoder:  # OpenCV's reader says no errno
        calls.append(lambda: imgpipe.VideoReader(missing))
    for call in calls:
        with pytest.raises(FileNotFoundError) as raised:
            call()
        assert raised.value.errno == errno.ENOENT and raised.value.filename == str(missing)
        # As Python's own: "[Errno 2] <what failed>: No such file or directory: '<file>'", the file named once.
        assert str(raised.value).endswith(f": '{missing}'") and str(raised.value).count(str(missing)) == 1, raised.value
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        imgpipe.list_images(tmp_path / "file")
