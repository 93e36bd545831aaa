#!/usr/bin/env python3
"""ctest's timeline_summary: tools/timeline_summary.py on a timeline whose answers are worked out by hand.

Usage: timeline_summary_test.py TOOLS/timeline_summary.py"""
import pathlib
import subprocess
import sys
import tempfile

# Window: the imgpipe kernels span 100..500 ns. Kernels run during 100..300 and 400..500 (300 of 400 ns), and
# 100 + 150 + 100 + 50 (the nvJPEG kernel's part inside the window) = 400 ns summed: 1.00 at once. The last
# kernel lies outside the window; half of the HtoD copy lies inside it.
TIMELINE = """\
kernel 100 200 1 _ZN7imgpipe4cuda5firstEv
kernel 150 300 2 _ZN6nvjpeg6decodeEv
kernel 400 500 1 _ZN7imgpipe4cuda5firstEv
kernel 450 700 3 _ZN6nvjpeg6encodeEv
kernel 800 900 3 _ZN5other5laterEv
copy 120 180 4 DtoD 3000
copy 440 560 4 HtoD 1000
memset 100 110 4 64
"""

EXPECTED = [
    "window: 0.0 ms, 4 kernels",
    "at least one kernel running: 75.0% of the window; kernels running at once on average: 1.00",
    "imgpipe        0.0 ms   50.0%",
    "nvJPEG         0.0 ms   50.0%",
    "copies DtoD: 1, in flight 15.0% of the window",
    "copies HtoD: 1, in flight 15.0% of the window",
]


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as scratch:
        timeline = pathlib.Path(scratch) / "run.timeline"
        timeline.write_text(TIMELINE)
        out = subprocess.run([sys.executable, script, str(timeline), "--window-kernel", "imgpipe"],
                             capture_output=True, text=True, check=True).stdout
        missing = [line for line in EXPECTED if line not in out]
        refused = subprocess.run([sys.executable, script, str(timeline), "--window-kernel", "no such kernel"],
                                 capture_output=True, text=True)
    if missing:
        sys.exit("missing from the summary:\n  " + "\n  ".join(missing) + "\nit printed:\n" + out)
    if refused.returncode == 0 or "no kernel name holds 'no such kernel'" not in refused.stderr:
        sys.exit("a window no kernel names was not refused: " + refused.stderr)
    print(out)


if __name__ == "__main__":
    main()
