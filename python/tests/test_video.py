"""imgpipe.VideoReader against the command: the frames `imgpipe stream` decodes on the CPU, with their times."""
import os
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

import imgpipe
from conftest import BINARY, DATA, read_ppm, usable_backends

VIDEO = DATA / "video"


def open_or_skip(path, **options):
    try:
        return imgpipe.VideoReader(str(path), **options)
    except OSError as error:
        if "needs a build" in str(error):
            pytest.skip(str(error))
        raise


def test_frames_are_the_commands_and_ffmpegs():
    reader = open_or_skip(VIDEO / "clip.h264")
    frames = [frame for frame, _ in reader]
    assert len(frames) == 30 and reader.frames_read == 30
    assert all(f.shape == (136, 240, 3) and f.dtype == np.uint8 for f in frames)
    for n in (0, 14, 29):
        expected = read_ppm(VIDEO / "ffmpeg_rgb" / f"clip.h264.{n}.ppm")
        assert np.abs(frames[n].astype(int) - expected.astype(int)).max() <= 2, n
    assert reader.frame_rate == 25.0 and reader.damaged_frames == []
    if not BINARY:
        pytest.skip("IMGPIPE_BINARY is not set (ctest sets it): no command to compare with")
    streamed = subprocess.run([BINARY, "stream", "--input", str(VIDEO / "clip.h264"), "--output", "-", "--ops",
                               "flip=h,flip=h", "--decoder", "cpu"], capture_output=True, check=True).stdout
    assert streamed == b"".join(f.tobytes() for f in frames)


def test_each_frame_comes_with_its_time():
    reader = open_or_skip(VIDEO / "clip_vfr.mkv")
    times = [seconds for _, seconds in reader]
    assert len(times) == 30
    if "OpenCV" in reader.decoder:
        assert times == [None] * 30
        return
    made_at = [n / 25 if n < 10 else 0.4 + (n - 10) * 0.08 if n < 20 else 1.2 + (n - 20) * 0.02 for n in range(30)]
    assert times == pytest.approx(made_at, abs=1e-9)
    assert "demuxed from Matroska" in reader.decoder
    elementary = open_or_skip(VIDEO / "clip.hevc")
    assert next(iter(elementary))[1] is None
    assert open_or_skip(VIDEO / "clip.mp4").frames_expected == 114, "the count MP4 keeps"


def test_bad_files_raise_oserror_naming_them(tmp_path, capfd):
    text = tmp_path / "notes.mp4"
    text.write_text("this is text, not a video")
    with pytest.raises(OSError, match="notes.mp4: "):
        open_or_skip(text)
    assert capfd.readouterr().err == "", "the libraries' own lines stay quiet; the error says it"
    with pytest.raises(OSError, match="the frame size the video declares"):
        open_or_skip(VIDEO / "clip.mp4", max_pixels=1000)
    reader = open_or_skip(VIDEO / "clip_open_gop.mp4")
    assert len(list(reader)) == 17
    with pytest.raises(StopIteration):
        next(reader)


def test_a_reader_can_be_asked_about_while_another_thread_reads_it(tmp_path):
    # A long damaged stream: clip.h264 over and over, bytes flipped in every copy but the first.
    clip = (VIDEO / "clip.h264").read_bytes()
    copies = 200
    damaged = tmp_path / "damaged.h264"
    with damaged.open("wb") as out:
        for n in range(copies):
            copy = bytearray(clip)
            for at in range(len(copy) // 8, len(copy), 101 + n) if n else ():
                copy[at] ^= 0xFF
            out.write(copy)
    for _ in range(6):
        reader = open_or_skip(damaged)
        if "OpenCV" in reader.decoder:
            pytest.skip("this build decodes video through OpenCV, which names no damaged frame")
        finished = threading.Event()

        def read_to_the_end():
            for _ in reader:
                pass
            finished.set()

        threading.Thread(target=read_to_the_end).start()
        polls = 0
        while not finished.is_set():
            seen = reader.damaged_frames
            assert seen == sorted(set(seen)) and all(0 <= n < copies * 30 for n in seen), seen[-4:]
            assert reader.frame_rate == 25.0 and reader.frames_expected is None and reader.decoder
            polls += 1
            time.sleep(0.0002)  # as a progress display would, leaving the reader the GIL
        assert polls > 10 and reader.damaged_frames and reader.damaged_frames[-1] < reader.frames_read


def test_frames_without_times_keep_the_sound_of_a_source_that_starts_late(tmp_path):
    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        pytest.skip("no ffmpeg and ffprobe commands here to make and probe a transport stream with sound")
    source = tmp_path / "late.ts"  # a transport stream's clock starts well above 0 (1.4 s here)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1",
                    "-f", "lavfi", "-i", "sine=duration=1", "-c:v", "libx264", "-c:a", "mp2", str(source)], check=True)
    try:
        with imgpipe.VideoWriter(tmp_path / "out.mkv", fps=25, audio_from=source) as writer:
            for frame, _ in imgpipe.VideoReader(source):
                writer.write(frame)  # no seconds: the frames are 1 / 25 s apart from 0
    except OSError as error:
        pytest.skip(str(error))
    if not writer.audio.startswith("audio copied"):
        pytest.skip(writer.audio or "this build's writer carries no sound")
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time",
                            "-of", "csv=p=0", str(tmp_path / "out.mkv")], capture_output=True, text=True, check=True)
    times = [float(line.strip(",")) for line in probe.stdout.split()]
    assert times and times[0] < 0.05 and times[-1] > 0.9, times[:3] + times[-3:]


def test_a_frame_over_max_pixels_raises_though_the_file_declared_less(tmp_path):
    if shutil.which("ffmpeg") is None:
        pytest.skip("no ffmpeg command here to make a stream whose frames grow")
    parts = []
    for size in ("160x120", "320x240"):
        parts.append(tmp_path / f"{size}.ts")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25:duration=1",
                        "-c:v", "libx264", str(parts[-1])], check=True)
    (tmp_path / "grows.ts").write_bytes(b"".join(part.read_bytes() for part in parts))
    reader = open_or_skip(tmp_path / "grows.ts", max_pixels=20000)
    if "OpenCV" in reader.decoder:
        pytest.skip("OpenCV's reader gives every frame the first frame's size")
    with pytest.raises(OSError, match="grows.ts: frame 25: the frame has 76800 pixels, more than the limit of 20000"):
        for _ in reader:
            pass
    assert reader.frames_read == 25
    with pytest.raises(ValueError, match="max_pixels must be at least 1"):
        imgpipe.VideoReader(VIDEO / "clip.mp4", max_pixels=0)


def test_an_anamorphic_videos_shape_goes_from_reader_to_writer(tmp_path):
    frame = np.random.default_rng(3).integers(0, 256, (240, 360, 3), np.uint8)
    try:
        with imgpipe.VideoWriter(tmp_path / "wide.mkv", display_aspect=(32, 18)) as writer:
            writer.write(frame)
        reader = imgpipe.VideoReader(tmp_path / "wide.mkv")
    except OSError as error:
        pytest.skip(str(error))
    if "OpenCV" in reader.decoder:
        pytest.skip("OpenCV's reader and writer know square pixels only")
    assert reader.display_aspect == (16, 9)
    with imgpipe.VideoWriter(tmp_path / "copy.mkv", display_aspect=reader.display_aspect) as writer:
        for frame, _ in reader:
            writer.write(frame)
    assert imgpipe.VideoReader(tmp_path / "copy.mkv").display_aspect == (16, 9)
    for bad in [(0, 9), (16, -9), (2**40, 1)]:
        with pytest.raises(ValueError, match="display_aspect"):
            imgpipe.VideoWriter(tmp_path / "bad.mkv", display_aspect=bad)


def test_a_videos_color_space_goes_from_reader_to_writer(tmp_path):
    frame = np.random.default_rng(4).integers(0, 256, (48, 64, 3), np.uint8)
    try:
        with imgpipe.VideoWriter(tmp_path / "hdr.mkv", color_space=(9, 16)) as writer:
            writer.write(frame)
        reader = imgpipe.VideoReader(tmp_path / "hdr.mkv")
    except OSError as error:
        pytest.skip(str(error))
    if "OpenCV" in reader.decoder:
        pytest.skip("OpenCV's reader and writer know no colour space")
    assert reader.color_space == (9, 16)
    with imgpipe.VideoWriter(tmp_path / "copy.mp4", color_space=reader.color_space) as writer:
        for frame, _ in reader:
            writer.write(frame)
    assert imgpipe.VideoReader(tmp_path / "copy.mp4").color_space == (9, 16)
    with imgpipe.VideoWriter(tmp_path / "untagged.mkv") as writer:
        writer.write(frame)
    assert imgpipe.VideoReader(tmp_path / "untagged.mkv").color_space is None
    assert writer.tags_not_declared == ""
    try:  # OpenCV's writer declares no colour space, and says so
        with imgpipe.VideoWriter(tmp_path / "hdr.avi", color_space=(9, 16), display_aspect=(16, 9)) as writer:
            writer.write(frame)
        assert writer.tags_not_declared == ("pixel shape and colour space not declared: OpenCV's writer declares "
                                            "square pixels and no colour space")
    except OSError as error:
        assert "needs a build with OpenCV" in str(error)
    for bad in [(0, 1), (1, 3), (13, 1), (1, 19), (-1, 1)]:
        with pytest.raises(ValueError, match="color_space"):
            imgpipe.VideoWriter(tmp_path / "bad.mkv", color_space=bad)


def test_a_file_cut_short_says_so_after_its_last_frame(tmp_path):
    whole = open_or_skip(VIDEO / "clip_vfr.mkv")
    frames = sum(1 for _ in whole)
    if "OpenCV" in whole.decoder:
        pytest.skip("OpenCV's reader says nothing of a damaged container")
    assert whole.container_damage is None
    data = (VIDEO / "clip_vfr.mkv").read_bytes()
    (tmp_path / "cut.mkv").write_bytes(data[: len(data) * 6 // 10])
    cut = imgpipe.VideoReader(tmp_path / "cut.mkv")
    assert 0 < sum(1 for _ in cut) < frames
    assert "File ended prematurely" in cut.container_damage


def test_videos_are_named_as_every_other_path_is(tmp_path):
    odd = os.fsdecode(b"clip-\xff")  # not UTF-8: a surrogate, as os.fsdecode and list_images give it
    (tmp_path / odd).mkdir()
    shutil.copy(VIDEO / "clip_vfr.mkv", tmp_path / odd / "in.mkv")
    source = tmp_path / odd / "in.mkv"
    open_or_skip(source)
    for name in (source, str(source), os.fsencode(source)):
        reader = imgpipe.VideoReader(name)
        assert reader.path == str(source) and len(list(reader)) == 30
    frame = np.zeros((48, 64, 3), np.uint8)
    for n, name in enumerate((tmp_path / odd / "a.mkv", os.fsencode(tmp_path / odd / "b.mkv"))):
        try:
            with imgpipe.VideoWriter(name, fps=25, audio_from=source if n else os.fsencode(source)) as writer:
                writer.write(frame)
        except OSError as error:
            pytest.skip(f"no video writer in this build: {error}")
    assert sorted(os.listdir(tmp_path / odd)) == ["a.mkv", "b.mkv", "in.mkv"]
    # An embedded NUL would cut the name short: refused as every path argument refuses it.
    for call in (imgpipe.VideoReader, imgpipe.VideoWriter, imgpipe.list_images):
        with pytest.raises(TypeError):
            call(str(source) + "\0.mkv")
    with pytest.raises(TypeError):
        imgpipe.VideoWriter(tmp_path / "c.mkv", audio_from=str(source) + "\0")


def psnr(a, b):
    mse = np.mean((a.astype(float) - b.astype(float)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def test_a_written_video_keeps_each_frames_time_and_its_pixels(tmp_path):
    source = open_or_skip(VIDEO / "clip_vfr.mkv")
    if "OpenCV" in source.decoder:
        pytest.skip("this build decodes video through OpenCV, without the frames' times")
    p = imgpipe.Pipeline("flip=h", backend=usable_backends()[0])
    path = tmp_path / "flipped.mkv"
    sent = []
    with imgpipe.VideoWriter(str(path), fps=25) as writer:
        for frame, seconds in source:
            sent.append((p(frame), seconds))
            writer.write(sent[-1][0], seconds)
            assert not path.exists(), "the file appeared before it was complete"
    assert writer.frames_written == 30
    back = list(imgpipe.VideoReader(str(path)))
    assert len(back) == 30
    for (frame, seconds), (written, at) in zip(back, sent):
        assert seconds == pytest.approx(at, abs=0.0005)
        assert psnr(frame, written) > 35


def test_a_writer_refuses_an_existing_file_and_leaves_nothing_when_the_block_raises(tmp_path):
    kept = tmp_path / "kept.mkv"
    kept.write_bytes(b"the user's file")
    with pytest.raises(OSError, match="kept.mkv: exists; overwrite=True replaces it"):
        imgpipe.VideoWriter(str(kept))
    assert kept.read_bytes() == b"the user's file"
    with pytest.raises(FileNotFoundError, match="audio_from cannot be read: No such file or directory: .*missing.mp4'$"):
        imgpipe.VideoWriter(tmp_path / "a.mkv", audio_from=tmp_path / "missing.mp4")
    with pytest.raises(OSError, match="audio_from is not a file"):
        imgpipe.VideoWriter(tmp_path / "a.mkv", audio_from=tmp_path)
    for fps in (0, -1, float("nan"), 1000.5, 1e6, 1e-300):
        with pytest.raises(ValueError, match="fps .*: the frame rate must be at least 0.001 and at most 1000"):
            imgpipe.VideoWriter(str(tmp_path / "a.mkv"), fps=fps)
    for name in ("a.ts", "a.webm", "a.gif", "noextension"):
        with pytest.raises(ValueError, match="imgpipe writes videos as .mp4, .mkv, .mov or .avi"):
            imgpipe.VideoWriter(tmp_path / name)
    frame = np.zeros((48, 64, 3), np.uint8)
    try:
        dropped = imgpipe.VideoWriter(str(kept), overwrite=True)
        dropped.write(frame)
    except OSError as error:
        pytest.skip(f"no video writer in this build: {error}")
    del dropped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.mkv"], "a dropped writer left its temporary"
    with pytest.raises(RuntimeError, match="stopped"):
        with imgpipe.VideoWriter(str(kept), overwrite=True) as writer:
            writer.write(frame)
            raise RuntimeError("stopped")
    assert kept.read_bytes() == b"the user's file", "an unfinished video replaced the file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.mkv"], "a temporary was left behind"
    with pytest.raises(ValueError, match="one host frame"):
        imgpipe.VideoWriter(str(tmp_path / "b.mkv")).write(np.zeros((2, 48, 64, 3), np.uint8))
    for seconds in (float("nan"), float("inf"), -1e10, 1e308):
        with pytest.raises(ValueError, match="seconds: .* is not a time within 1e9 s of 0"):
            imgpipe.VideoWriter(str(tmp_path / "c.mkv")).write(frame, seconds)


def test_a_written_video_carries_the_sound_of_the_video_it_came_from(tmp_path):
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if not (ffmpeg and ffprobe):
        pytest.skip("no ffmpeg command here to make a video with sound")
    source = tmp_path / "with_sound.mp4"
    subprocess.run([ffmpeg, "-loglevel", "error", "-i", str(VIDEO / "clip_remuxed.mp4"), "-f", "lavfi", "-i",
                    "sine=duration=1.2", "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", str(source)],
                   check=True)
    reader = open_or_skip(source)
    if "OpenCV" in reader.decoder:
        pytest.skip("this build decodes video through OpenCV, without the frames' times")
    out = tmp_path / "out.mkv"
    with imgpipe.VideoWriter(str(out), fps=25, audio_from=str(source)) as writer:
        for frame, seconds in reader:
            writer.write(frame, seconds)
    assert writer.audio == "audio copied (aac)"
    codecs = subprocess.run([ffprobe, "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", str(out)],
                            capture_output=True, text=True, check=True).stdout.split()
    assert sorted(codecs) == ["aac", "h264"]
