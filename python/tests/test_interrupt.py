"""Ctrl-C in Python: a folder job or a host batch stops after the work in flight and raises KeyboardInterrupt,
leaving the finished files complete and no temporary file behind. Each job runs in a Python of its own, which
the test interrupts with SIGINT as a terminal's Ctrl-C would."""
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import imgpipe
from conftest import usable_backends, write_ppm

# Much work for a small file: each takes tens of milliseconds on one core, so hundreds of them take seconds.
CHAIN = "resize=2048x2048,gaussian=31:8,resize=64x64"
FILES = 500
# An uncaught KeyboardInterrupt ends Python by SIGINT, as the shell expects of a program stopped by Ctrl-C.
INTERRUPTED = -signal.SIGINT
WAIT_SECONDS = 120  # for what takes well under a second where nothing else runs

# Python installs its SIGINT handler only where the signal is not ignored at its start, as it may be under a CI
# runner or nohup; the jobs here get the handler an interactive Python has.
FOLDER_JOB = """
import signal, sys
import imgpipe
signal.signal(signal.SIGINT, signal.default_int_handler)
backend, call, input_dir, output_dir = sys.argv[1:]
p = imgpipe.Pipeline("{chain}", backend=backend)
if call == "run_folder":
    p.run_folder(input_dir, output_dir, jobs=2)
else:
    p.run_files(input_dir, imgpipe.list_images(input_dir), output_dir, jobs=2)
""".format(chain=CHAIN)

# Prints how long the batch would take (measured on a small one) just before running it. The pipeline still
# runs batches after the interrupted one.
HOST_BATCH = """
import signal, sys, time
import numpy as np
import imgpipe
signal.signal(signal.SIGINT, signal.default_int_handler)
p = imgpipe.Pipeline("{chain}", backend=sys.argv[1])
frame = np.random.default_rng(7).integers(0, 256, (48, 48, 3), np.uint8)
start = time.monotonic()
small = p(np.stack([frame] * 8))
per_frame = (time.monotonic() - start) / 8
frames = np.stack([frame] * min(20000, int(60 / per_frame)))
print(len(frames) * per_frame, flush=True)
try:
    p(frames)
except KeyboardInterrupt:
    assert np.array_equal(p(np.stack([frame] * 8)), small)
    raise
""".format(chain=CHAIN)


def slow_backend():
    """The cpu backend, slow enough on these jobs for a signal to land in the middle of them; a GPU backend
    finishes them first. The job stops the same way on every backend."""
    if "cpu" not in usable_backends():
        pytest.skip("the cpu backend is not usable here, and a GPU backend finishes these jobs before a signal lands")
    return "cpu"


def start_python(script, *args):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished_outputs(folder):
    if not folder.exists():
        return set()
    return {path.name for path in folder.iterdir() if ".imgpipe-tmp-" not in path.name}


@pytest.mark.parametrize("call", ["run_folder", "run_files"])
def test_ctrl_c_stops_a_folder_job_after_the_files_in_flight(tmp_path, call):
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    noise = np.random.default_rng(7).integers(0, 256, (48, 48, 3), np.uint8)
    for i in range(FILES):
        write_ppm(source / f"{i:04}.ppm", np.roll(noise, i))
    job = start_python(FOLDER_JOB, slow_backend(), call, source, out)
    deadline = time.monotonic() + WAIT_SECONDS
    while not (written_before := finished_outputs(out)):
        assert job.poll() is None, f"the job ended before it was interrupted: {job.communicate()}"
        assert time.monotonic() < deadline, "no file was written"
        time.sleep(0.01)
    job.send_signal(signal.SIGINT)
    _, stderr = job.communicate(timeout=WAIT_SECONDS)

    assert job.returncode == INTERRUPTED and "KeyboardInterrupt" in stderr, stderr
    written = finished_outputs(out)
    assert written_before <= written
    assert len(written) < FILES // 2, f"the job went on after Ctrl-C: {len(written)} of {FILES} files written"
    temporaries = [path.name for path in out.iterdir() if ".imgpipe-tmp-" in path.name]
    assert not temporaries, "the files in flight were finished or removed"
    for name in written:
        assert imgpipe.decode((out / name).read_bytes()).shape == (64, 64, 3), name


def test_ctrl_c_stops_a_host_batch():
    job = start_python(HOST_BATCH, slow_backend())
    line = job.stdout.readline()
    assert line, f"the batch did not start: {job.communicate()}"
    batch_seconds = float(line)
    time.sleep(1)  # into the batch
    job.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    _, stderr = job.communicate(timeout=WAIT_SECONDS)
    stopped_after = time.monotonic() - interrupted

    assert job.returncode == INTERRUPTED and "KeyboardInterrupt" in stderr, stderr
    assert stopped_after < batch_seconds / 4, f"{stopped_after:.1f} s after Ctrl-C, of a {batch_seconds:.0f} s batch"
