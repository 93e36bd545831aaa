"""decode/encode against the files the command reads and writes, run_files on chosen files of a folder, and the
Ray Data job on a local Ray cluster, reading both ways (skipped where Ray is not installed)."""
import os

import numpy as np
import pytest

import imgpipe
from conftest import DATA, photos, read_ppm, run_command, usable_backends, write_ppm


def test_decode_and_encode_are_the_batch_jobs_codecs(tmp_path):
    for name, frame in photos().items():
        data = (DATA / "ppm" / name).read_bytes()
        assert np.array_equal(imgpipe.decode(data), frame), name
        encoded = imgpipe.encode(frame, ".ppm")
        (tmp_path / name).write_bytes(encoded)
        assert np.array_equal(read_ppm(tmp_path / name), frame), name
    with pytest.raises(OSError, match="truncated raster"):
        imgpipe.decode(b"P6 100 100 255\nnot enough pixels")
    with pytest.raises(OSError, match="unknown image extension"):
        imgpipe.encode(np.zeros((2, 2, 3), np.uint8), ".xyz")


def folder_with_a_bad_file(root):
    source = root / "in"
    (source / "sub").mkdir(parents=True)
    for i, frame in enumerate(photos().values()):
        write_ppm(source / ("sub" if i % 2 else "") / f"p{i}.ppm", frame)
    (source / "broken.ppm").write_bytes(b"P6 100 100 255\nnot enough pixels")
    return source


def test_run_files_is_the_batch_job_on_chosen_files(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    listed = imgpipe.list_images(str(source))
    assert listed == sorted(listed) and "broken.ppm" in listed and "sub/p1.ppm" in listed
    chosen = [f for f in listed if f != "sub/p1.ppm"] + ["../outside.ppm"]
    p = imgpipe.Pipeline("rotate=90", backend=usable_backends()[0])
    result = p.run_files(str(source), chosen, str(tmp_path / "out"), format="ppm")
    assert (result["done"], result["failed"], result["files"]) == (len(listed) - 2, 2, len(chosen))
    failed = dict(result["errors"])
    assert "truncated raster" in failed[str(source / "broken.ppm")]
    assert "not a path inside the input folder" in failed[str(source / "../outside.ppm")]
    assert not (tmp_path / "out" / "sub" / "p1.ppm").exists()
    assert (tmp_path / "out" / "p0.ppm").exists()


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_a_ray_data_job_writes_what_the_command_writes(tmp_path, read):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]')")
    import imgpipe.ray

    source = folder_with_a_bad_file(tmp_path)
    backend = usable_backends()[0]
    ops = "resize=301x199,gaussian=5:1.0"
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        summary = imgpipe.ray.run_folder(str(source), str(tmp_path / "ray"), ops, backend=backend, format="ppm",
                                         batch_size=2, read=read)
    finally:
        ray.shutdown()
    assert (summary["done"], summary["failed"]) == (len(photos()), 1)
    [(path, message)] = summary["errors"]
    assert path.endswith("broken.ppm") and "truncated raster" in message
    command = run_command("batch", source, tmp_path / "command", "--ops", ops, "--backend", backend)
    assert command.returncode == 1
    written = sorted(str(p.relative_to(tmp_path / "ray")) for p in (tmp_path / "ray").rglob("*.ppm"))
    assert written == sorted(str(p.relative_to(tmp_path / "command")) for p in (tmp_path / "command").rglob("*.ppm"))
    for relative in written:
        assert np.array_equal(read_ppm(tmp_path / "ray" / relative), read_ppm(tmp_path / "command" / relative))
    assert not [f for f in os.listdir(tmp_path / "ray") if f.startswith(".imgpipe-tmp")]
