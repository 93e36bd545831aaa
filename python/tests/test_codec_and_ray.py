"""decode/encode against the files the command reads and writes, run_files on chosen files of a folder, the batch
job's planner and writer (plan_outputs, write_output), and the Ray Data job on a local Ray cluster, reading both
ways (skipped where Ray is not installed)."""
import os

import numpy as np
import pytest

import imgpipe
import imgpipe.ray
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


def test_decode_and_write_output_take_any_contiguous_bytes_like_object(tmp_path):
    name, frame = next(iter(photos().items()))
    data = (DATA / "ppm" / name).read_bytes()
    as_array = np.frombuffer(data, np.uint8)
    for view in [bytearray(data), memoryview(data), as_array, memoryview(b"xx" + data)[2:]]:
        assert np.array_equal(imgpipe.decode(view), frame), type(view)
        imgpipe.write_output(tmp_path / "out.ppm", view, input_dir=None, overwrite=True)
        assert (tmp_path / "out.ppm").read_bytes() == data, type(view)
    with pytest.raises((BufferError, ValueError), match="contiguous"):  # as the exporter refuses
        imgpipe.decode(np.stack([as_array, as_array], axis=1)[:, 0])  # every other byte: not contiguous
    with pytest.raises(TypeError):
        imgpipe.write_output(tmp_path / "text.ppm", "P6 text, not bytes", input_dir=None)
    assert not (tmp_path / "text.ppm").exists()


def folder_with_a_bad_file(root):
    source = root / "in"
    (source / "sub").mkdir(parents=True)
    for i, frame in enumerate(photos().values()):
        write_ppm(source / ("sub" if i % 2 else "") / f"p{i}.ppm", frame)
    (source / "broken.ppm").write_bytes(b"P6 100 100 255\nnot enough pixels")
    return source


# A name that is not UTF-8 comes back from list_images and the errors as os.fsdecode gives it (surrogates for the
# odd bytes), and goes in as such a str, a bytes-built path or a pathlib.Path, to the same file.
def test_names_that_are_not_utf8_lead_to_their_files(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    odd = os.fsencode(source) + b"/\xff.ppm"
    write_ppm(os.fsdecode(odd), next(iter(photos().values())))
    (source / os.fsdecode(b"\xfe.ppm")).write_bytes(b"P6 4 4 255\nshort")
    assert os.fsdecode(b"\xff.ppm") in imgpipe.list_images(source)
    p = imgpipe.Pipeline("rotate=90", backend=usable_backends()[0])
    result = p.run_folder(source, tmp_path / "out")
    assert (result["done"], result["failed"]) == (len(photos()) + 1, 2)
    assert os.path.exists(os.fsencode(tmp_path / "out") + b"/\xff.ppm")
    failed = dict(result["errors"])
    assert os.fsdecode(b"\xfe.ppm") in failed[str(source / os.fsdecode(b"\xfe.ppm"))]
    again = p.run_files(source, [os.fsdecode(b"\xff.ppm")], tmp_path / "again")
    assert again["done"] == 1 and os.path.exists(os.fsencode(tmp_path / "again") + b"/\xff.ppm")


def test_list_image_entries_says_why_an_entry_cannot_be_read(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    os.symlink(tmp_path / "nowhere.ppm", source / "dead.ppm")
    (source / "folder.ppm").mkdir()
    entries = dict(imgpipe.list_image_entries(source))
    assert sorted(entries) == imgpipe.list_images(source)
    assert entries["broken.ppm"] == "" and entries["sub/p1.ppm"] == ""
    assert entries["dead.ppm"] == "is a broken symbolic link"
    assert entries["folder.ppm"].startswith("is a directory")


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


def test_plan_outputs_is_the_batch_jobs_plan(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    os.symlink(tmp_path / "nowhere.ppm", source / "dead.ppm")
    out = tmp_path / "out"
    (out / "p0.ppm").mkdir(parents=True)
    (out / "sub").mkdir()
    write_ppm(out / "sub" / "p1.ppm", next(iter(photos().values())))
    plans = imgpipe.plan_outputs(source, out)
    assert [name for name, _, _, _ in plans] == imgpipe.list_images(source)
    by_name = {name: (output, skip, error) for name, output, skip, error in plans}
    assert by_name["p2.ppm"] == (str(out / "p2.ppm"), False, "")
    assert by_name["dead.ppm"][2] == f"{source / 'dead.ppm'}: not processed: is a broken symbolic link"
    folder_refusal = f"{source / 'p0.ppm'}: not processed: its output {out / 'p0.ppm'} is a folder"
    assert by_name["p0.ppm"][2] == folder_refusal
    assert by_name["sub/p1.ppm"][2] == (f"{source / 'sub/p1.ppm'}: not processed: output {out / 'sub/p1.ppm'} "
                                        "exists; overwrite=True replaces it, skip_existing=True skips it")
    for options in [dict(overwrite=True), dict(skip_existing=True)]:
        again = {name: (skip, error) for name, _, skip, error in imgpipe.plan_outputs(source, out, **options)}
        assert again["p0.ppm"] == (False, folder_refusal)  # a folder is neither replaced nor skipped
        assert again["sub/p1.ppm"] == ("skip_existing" in options, "")
    # An output another output needs as its folder: x.ppm's x.png, where x.png/inner.ppm's output goes.
    [(_, x, _, refused), (_, inner, _, fine)] = imgpipe.plan_outputs(source, out, ["x.ppm", "x.png/inner.ppm"],
                                                                     format="png")
    assert (x, inner, fine) == (str(out / "x.png"), str(out / "x.png/inner.png"), "")
    assert refused.endswith(f"its output {x} is the folder the output of {source / 'x.png/inner.ppm'} goes in")
    with pytest.raises(ValueError, match="format 'gif'"):
        imgpipe.plan_outputs(source, out, format="gif")


def test_plan_outputs_keeps_the_output_folder_out_of_the_input_through_links(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    os.symlink(source / "sub", tmp_path / "into-input")
    with pytest.raises(ValueError, match=f"the output folder '{tmp_path / 'into-input/out'}' is the input folder"):
        imgpipe.plan_outputs(source, tmp_path / "into-input" / "out")
    assert not (source / "sub" / "out").exists()


def test_plan_outputs_of_names_under_a_url_applies_the_outputs_rules(tmp_path):
    out = tmp_path / "out"
    (out / "taken.png").mkdir(parents=True)
    plans = imgpipe.plan_outputs("bucket/photos", out, ["a.ppm", "sub/b.PPM", "../up.ppm", "taken.ppm"],
                                 format="png", remote_input=True)
    assert [(output, error) for _, output, _, error in plans[:2]] == [(str(out / "a.png"), ""),
                                                                      (str(out / "sub/b.png"), "")]
    assert plans[2][3] == "bucket/photos/../up.ppm: not processed: not a path under the input prefix bucket/photos"
    assert plans[3][3] == f"bucket/photos/taken.ppm: not processed: its output {out / 'taken.png'} is a folder"
    with pytest.raises(ValueError, match="remote_input=True plans the files given"):
        imgpipe.plan_outputs("bucket/photos", out, remote_input=True)


def test_write_output_writes_as_the_batch_job_writes(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    out = tmp_path / "out"
    imgpipe.write_output(str(out / "new" / "a.ppm"), b"first", input_dir=source)
    assert (out / "new" / "a.ppm").read_bytes() == b"first"
    with pytest.raises(OSError, match=f"{out / 'new/a.ppm'}: exists"):
        imgpipe.write_output(out / "new" / "a.ppm", b"second", input_dir=source)
    imgpipe.write_output(out / "new" / "a.ppm", b"second", input_dir=source, overwrite=True)
    assert (out / "new" / "a.ppm").read_bytes() == b"second"
    imgpipe.write_output(tmp_path / "elsewhere" / "b.ppm", b"remote", input_dir=None)
    assert (tmp_path / "elsewhere" / "b.ppm").read_bytes() == b"remote"
    # A folder of the outputs that is a link into the input: nothing is written through it, even with overwrite.
    os.symlink(source / "sub", out / "sub")
    inputs = {name: (source / name).read_bytes() for name in relative_files(source)}
    for name in ["p1.ppm", "new.ppm"]:
        with pytest.raises(OSError, match=f"its folder {out / 'sub'} leads into the input folder {source}"):
            imgpipe.write_output(out / "sub" / name, b"among the inputs", input_dir=source, overwrite=True)
    assert {name: (source / name).read_bytes() for name in relative_files(source)} == inputs
    assert not [f for f in os.listdir(out / "new") if f.startswith(".")]


def test_the_driver_plans_with_the_batch_jobs_planner(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    odd = os.fsdecode(os.fsencode(source) + b"/\xff.ppm")
    write_ppm(odd, next(iter(photos().values())))
    out = tmp_path / "out"
    (out / "p0.ppm").mkdir(parents=True)
    for skip_existing in [False, True]:
        names, skipped, failed = imgpipe.ray._plan(str(source), None, str(out), "same", False, skip_existing)
        assert (len(names), skipped) == (len(photos()), 0)  # broken.ppm fails when read; p0.ppm and odd here
        failed = dict(failed)
        assert failed[str(source / "p0.ppm")].endswith(f"its output {out / 'p0.ppm'} is a folder")
        assert "the name is not valid UTF-8, which Ray Data cannot carry" in failed[odd]
    os.symlink(source / "sub", tmp_path / "into-input")
    with pytest.raises(ValueError, match="is the input folder"):
        imgpipe.ray._plan(str(source), None, str(tmp_path / "into-input"), "same", False, False)


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]')")
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def run_on_ray(source, output, read, ops="rotate=90", **options):
    return imgpipe.ray.run_folder(str(source), str(output), ops, backend=usable_backends()[0], read=read, **options)


def relative_files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_a_ray_data_job_writes_what_the_command_writes(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    ops = "resize=301x199,gaussian=5:1.0"
    summary = run_on_ray(source, tmp_path / "ray", read, ops, format="ppm", batch_size=2)
    assert (summary["done"], summary["failed"], summary["skipped"]) == (len(photos()), 1, 0)
    [(path, message)] = summary["errors"]
    assert path.endswith("broken.ppm") and "truncated raster" in message
    command = run_command("batch", source, tmp_path / "command", "--ops", ops, "--backend", usable_backends()[0])
    assert command.returncode == 1
    written = relative_files(tmp_path / "ray")
    assert written == relative_files(tmp_path / "command")
    for relative in written:
        assert np.array_equal(read_ppm(tmp_path / "ray" / relative), read_ppm(tmp_path / "command" / relative))
    mode = 0o666 & ~current_umask()
    assert {oct(os.stat(tmp_path / "ray" / relative).st_mode & 0o777) for relative in written} == {oct(mode)}


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_relative_folders_are_the_callers(ray_cluster, tmp_path, monkeypatch, read):
    folder_with_a_bad_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    summary = run_on_ray("in", "out", read)
    assert (summary["done"], summary["failed"]) == (len(photos()), 1)
    assert relative_files(tmp_path / "out") == [f for f in relative_files(tmp_path / "in") if f != "broken.ppm"]


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_an_output_folder_inside_the_input_is_refused_before_any_work(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    with pytest.raises(ValueError, match="the output folder '.*out' is the input folder '.*in' or inside it"):
        run_on_ray(source, source / "out", read)
    with pytest.raises(ValueError, match="the input folder '.*in' is inside the output folder"):
        run_on_ray(source, tmp_path, read)
    with pytest.raises(ValueError, match="the output folder '.*out' is the input folder '.*in' or inside it"):
        run_on_ray(source.as_uri(), source / "out", read)  # a file:// URL names the same folder
    assert not (source / "out").exists()


def test_a_file_url_is_the_local_folder_it_names():
    assert imgpipe.ray._without_file_scheme("file:///data/my%20photos") == "/data/my photos"
    assert imgpipe.ray._without_file_scheme("s3://bucket/photos") == "s3://bucket/photos"
    assert imgpipe.ray._without_file_scheme("photos") == "photos"


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_existing_outputs_are_refused_skipped_or_replaced(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    first = run_on_ray(source, tmp_path / "out", read)
    assert (first["done"], first["failed"], first["skipped"]) == (len(photos()), 1, 0)
    refused = run_on_ray(source, tmp_path / "out", read)
    assert (refused["done"], refused["failed"], refused["skipped"]) == (0, len(photos()) + 1, 0)
    assert "exists; overwrite=True replaces it, skip_existing=True skips it" in dict(refused["errors"])[
        str(source / "p0.ppm")]
    skipped = run_on_ray(source, tmp_path / "out", read, skip_existing=True)
    assert (skipped["done"], skipped["failed"], skipped["skipped"]) == (0, 1, len(photos()))
    replaced = run_on_ray(source, tmp_path / "out", read, overwrite=True)
    assert (replaced["done"], replaced["failed"], replaced["skipped"]) == (len(photos()), 1, 0)
    with pytest.raises(ValueError, match="contradict"):
        run_on_ray(source, tmp_path / "out", read, overwrite=True, skip_existing=True)


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_a_link_in_the_output_folder_never_leads_outputs_into_the_input(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    (tmp_path / "out").mkdir()
    os.symlink(source / "sub", tmp_path / "out" / "sub")
    inputs = {name: (source / name).read_bytes() for name in relative_files(source)}
    summary = run_on_ray(source, tmp_path / "out", read, overwrite=True)
    assert {name: (source / name).read_bytes() for name in relative_files(source)} == inputs
    subfolder = [message for path, message in summary["errors"] if path.startswith(str(source / "sub"))]
    assert subfolder and all("leads into the input folder" in message for message in subfolder)


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_an_output_that_is_a_folder_is_refused_by_the_driver(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    (tmp_path / "out" / "p0.ppm").mkdir(parents=True)
    summary = run_on_ray(source, tmp_path / "out", read, skip_existing=True)
    assert (summary["done"], summary["skipped"]) == (len(photos()) - 1, 0)
    assert f"its output {tmp_path / 'out' / 'p0.ppm'} is a folder" in dict(summary["errors"])[str(source / "p0.ppm")]


def actor(read, source, output, overwrite=False, pipeline=None):
    """The worker one actor of the job holds, here in this process."""
    if read == "files":
        worker = imgpipe.ray._FileWorker("rotate=90", usable_backends()[0], str(source), str(output), "same", 95,
                                         overwrite, 1)
    else:
        worker = imgpipe.ray._BytesWorker("rotate=90", usable_backends()[0], str(source), str(output), "same", 95,
                                          overwrite)
    if pipeline:
        worker.pipeline = pipeline
    return worker


def batch_of(read, source, names):
    if read == "files":
        return {"path": np.asarray(names)}
    return {"bytes": [(source / name).read_bytes() for name in names],
            "path": np.asarray([str(source / name) for name in names])}


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_a_retried_batch_counts_the_outputs_it_wrote(tmp_path, read):
    # Ray runs a batch again on a fresh actor when the one running it died: the outputs the first attempt wrote
    # (none existed when the driver planned the job) are this job's.
    source = folder_with_a_bad_file(tmp_path)
    names = ["p0.ppm", "sub/p1.ppm", "broken.ppm"]
    first = actor(read, source, tmp_path / "out")(batch_of(read, source, names))
    written = (tmp_path / "out" / "p0.ppm").read_bytes()
    again = actor(read, source, tmp_path / "out")(batch_of(read, source, names))
    assert list(first["status"]) == list(again["status"]) == ["done", "done", "failed"]
    assert (tmp_path / "out" / "p0.ppm").read_bytes() == written
    assert not [f for f in os.listdir(tmp_path / "out") if f.startswith(".")]


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_an_actor_never_writes_into_the_input_through_a_link_in_the_output_folder(tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    (tmp_path / "out").mkdir()
    os.symlink(source / "sub", tmp_path / "out" / "sub")
    inputs = {name: (source / name).read_bytes() for name in relative_files(source)}
    rows = actor(read, source, tmp_path / "out", overwrite=True)(batch_of(read, source, ["sub/p1.ppm", "p0.ppm"]))
    assert list(rows["status"]) == ["failed", "done"]
    # Both ways name the output that was not written, as the batch job does.
    assert rows["message"][0].startswith(f"{tmp_path / 'out' / 'sub' / 'p1.ppm'}: not written: its folder "
                                         f"{tmp_path / 'out' / 'sub'} leads into the input folder {source}")
    assert {name: (source / name).read_bytes() for name in relative_files(source)} == inputs


@pytest.mark.parametrize("read", ["files", "bytes"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_an_actor_refuses_an_output_that_is_a_folder_naming_it(tmp_path, read, overwrite):
    source = folder_with_a_bad_file(tmp_path)
    (tmp_path / "out" / "p0.ppm").mkdir(parents=True)
    rows = actor(read, source, tmp_path / "out", overwrite=overwrite)(batch_of(read, source, ["p0.ppm", "p2.ppm"]))
    assert list(rows["status"]) == ["failed", "done"]
    assert rows["message"][0] == f"{source / 'p0.ppm'}: not processed: its output {tmp_path / 'out' / 'p0.ppm'} " \
                                 "is a folder"
    assert (tmp_path / "out" / "p0.ppm").is_dir()


def test_bytes_outputs_are_created_as_the_command_creates_them(tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    mask = os.umask(0o027)
    try:
        actor("bytes", source, tmp_path / "out")(batch_of("bytes", source, ["p0.ppm"]))
    finally:
        os.umask(mask)
    assert os.stat(tmp_path / "out" / "p0.ppm").st_mode & 0o777 == 0o640


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_two_inputs_for_one_output_make_it_once(ray_cluster, tmp_path, read):
    source = tmp_path / "in"
    source.mkdir()
    first, second = list(photos().values())[:2]
    write_ppm(source / "a.PPM", first)
    write_ppm(source / "a.ppm", second)
    summary = run_on_ray(source, tmp_path / "out", read, format="ppm", overwrite=True, batch_size=1)
    assert (summary["done"], summary["failed"]) == (1, 1)
    [(path, message)] = summary["errors"]
    assert path == str(source / "a.ppm") and f"is already made from {source / 'a.PPM'}" in message
    assert relative_files(tmp_path / "out") == ["a.ppm"]
    assert read_ppm(tmp_path / "out" / "a.ppm").shape == (first.shape[1], first.shape[0], 3)  # rotated a.PPM


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_both_ways_of_reading_take_the_files_the_batch_job_lists(ray_cluster, tmp_path, read):
    source = tmp_path / "in"
    (source / "_d").mkdir(parents=True)
    frame = next(iter(photos().values()))
    for name in ["_a.ppm", ".b.ppm", "_d/c.ppm", "p.ppm"]:
        write_ppm(source / name, frame)
    os.symlink(tmp_path / "nowhere.ppm", source / "dead.ppm")
    # What an actor killed while `run_files` wrote p.ppm into a folder leaves there: never an input.
    write_ppm(source / ".p.ppm.imgpipe-tmp-123-4.ppm", frame)
    summary = run_on_ray(source, tmp_path / "out", read)
    assert (summary["done"], summary["failed"]) == (4, 1)
    assert summary["errors"][0][0] == str(source / "dead.ppm")
    assert relative_files(tmp_path / "out") == [".b.ppm", "_a.ppm", "_d/c.ppm", "p.ppm"]
    (tmp_path / "empty").mkdir()
    empty = run_on_ray(tmp_path / "empty", tmp_path / "out-empty", read)
    assert (empty["done"], empty["failed"], empty["skipped"], empty["errors"]) == (0, 0, 0, [])


@pytest.mark.parametrize("read", ["files", "bytes"])
def test_a_name_that_is_not_utf8_is_a_failed_row(ray_cluster, tmp_path, read):
    source = folder_with_a_bad_file(tmp_path)
    odd = os.fsdecode(os.fsencode(source) + b"/\xff.ppm")
    write_ppm(odd, next(iter(photos().values())))
    summary = run_on_ray(source, tmp_path / "out", read)
    assert "the name is not valid UTF-8, which Ray Data cannot carry" in dict(summary["errors"])[odd]
    assert summary["done"] == len(photos())


def test_backends_are_checked_on_the_driver(ray_cluster, tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    with pytest.raises(ValueError, match="backend 'GPU': auto or one of cpu"):
        imgpipe.ray.run_folder(str(source), str(tmp_path / "out"), "rotate=90", backend="GPU")
    if ray_cluster.cluster_resources().get("GPU", 0):
        return
    for backend in ["naive", "optimized"]:
        with pytest.raises(ValueError, match=f"backend '{backend}'"):
            imgpipe.ray.run_folder(str(source), str(tmp_path / "out"), "rotate=90", backend=backend)


def test_an_autoscaling_pool_takes_its_largest_size(ray_cluster, tmp_path):
    source = folder_with_a_bad_file(tmp_path)
    summary = run_on_ray(source, tmp_path / "out", "files", concurrency=(1, 2))
    assert (summary["done"], summary["failed"]) == (len(photos()), 1)


def test_a_small_folder_gives_every_actor_a_batch():
    assert imgpipe.ray._batching(10, 8, None, 64) == (2, 5)
    assert imgpipe.ray._batching(1000, 8, None, 64) == (64, 16)
    assert imgpipe.ray._batching(100000, 8, None, 64) == (64, 32)
    assert imgpipe.ray._batching(10, 8, 4, 64) == (4, 3)


def test_a_device_failure_fails_the_files_it_stopped(tmp_path):
    class StoppedAfterTheFirstFile:  # what run_files returns when a sticky CUDA error ends the job
        def run_files(self, root, files, out, **options):
            (tmp_path / "out").mkdir()
            write_ppm(tmp_path / "out" / files[0], next(iter(photos().values())))
            return {"done": 1, "failed": 0, "skipped": 0, "files": len(files), "errors": [],
                    "device_failure": "an illegal memory access was encountered"}

    source = folder_with_a_bad_file(tmp_path)
    worker = actor("files", source, tmp_path / "out", pipeline=StoppedAfterTheFirstFile())
    rows = worker(batch_of("files", source, ["p0.ppm", "p2.ppm", "broken.ppm"]))
    assert list(rows["status"]) == ["done", "failed", "failed"]
    assert rows["message"][1] == f"{source / 'p2.ppm'}: not processed: the device failed: an illegal memory access " \
                                 "was encountered"
    assert worker.device_failure  # its next call ends the actor, for Ray to start a fresh one
