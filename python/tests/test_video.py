"""imgpipe.VideoReader against the command: the frames `imgpipe stream` decodes on the CPU, with their times."""
import subprocess

import numpy as np
import pytest

import imgpipe
from conftest import BINARY, DATA, read_ppm

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


def test_bad_files_raise_oserror_naming_them(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("this is text, not a video")
    with pytest.raises(OSError, match="notes.mp4: "):
        open_or_skip(text)
    with pytest.raises(OSError, match="the frame size the video declares"):
        open_or_skip(VIDEO / "clip.mp4", max_pixels=1000)
    reader = open_or_skip(VIDEO / "clip_open_gop.mp4")
    assert len(list(reader)) == 17
    with pytest.raises(StopIteration):
        next(reader)
