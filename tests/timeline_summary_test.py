#!/usr/bin/env python3
"""ctest's timeline_summary: tools/timeline_summary.py on a timeline whose answers are worked out by hand.

Usage: timeline_summary_test.py TOOLS/timeline_summary.py"""
import json
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

# nvJPEG's hardware decoder in a GPU JPEG job (--decode-batches): files of batch one copied to the device at 0,
# 0.1 and 0.2 ms, its last planes copied out by 1.2 ms; batch two's files at 1.5 and 1.7 ms. Of the 1.7 ms from
# the first file copy to the last: handing over 0.2 ms (12%), finishing 1.0 ms (59%), between 0.3 ms (18%).
# The small copy is not a file.
DECODE_TIMELINE = """\
kernel 0 10 1 _ZN7imgpipe4cuda5firstEv
copy 0 10 7 HtoD 300000
copy 100000 100010 8 HtoD 300000
copy 200000 200010 9 HtoD 300000
copy 900000 1000000 7 DtoD 2073600
copy 1100000 1200000 8 DtoD 2073600
copy 1300000 1300010 5 HtoD 2000
copy 1500000 1500010 7 HtoD 300000
copy 1700000 1700010 8 HtoD 300000
copy 2600000 2700000 7 DtoD 2073600
kernel 2790000 2800000 1 _ZN7imgpipe4cuda5firstEv
"""

DECODE_EXPECTED = [
    "decode batches: 2, 2.5 files each on average; of the 1.7 ms from the first file copy to the last:",
    "  handing files to the engines: 12% (per batch: median 200 us, mean 200 us, 90th percentile 200 us)",
    "  from a batch's last file copy to its last planes copy: 59% (per batch: median 1000 us",
    "  from there to the next batch's first file copy: 18% (per batch: median 300 us",
]

# The same timeline with --jpeg-engines 2: three files reach their planes copy, each on its own stream's next
# device to device copy: 0.00001-0.9, 0.10001-1.1 and 1.50001-2.6 ms (the files on streams 8 and 9 copied last
# never come out). Over the 2.8 ms window: none 0.60002 ms (21.4%), one 1.39999 ms (50.0%), two 0.79999 ms
# (28.6%), 2.99997 / 2.8 = 1.07 at once on average.
ENGINES_EXPECTED = [
    "JPEG decoder: 3 files, from their copy to the device to their planes' first copy out: median 1000 us, 90th "
    "percentile 1100 us (waiting for a free engine included)",
    "  files with the decoder at once: 1.07 on average; none 21.4%, fewer than 2: 50.0%, 2 or more (every engine "
    "can have one): 28.6% of the window",
]

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
        trace_path = pathlib.Path(scratch) / "trace.json"
        out = subprocess.run([sys.executable, script, str(timeline), "--window-kernel", "imgpipe", "--chrome-trace",
                              str(trace_path)], capture_output=True, text=True, check=True).stdout
        trace = json.loads(trace_path.read_text())["traceEvents"]
        missing = [line for line in EXPECTED if line not in out]
        decode_timeline = pathlib.Path(scratch) / "decode.timeline"
        decode_timeline.write_text(DECODE_TIMELINE)
        decode_out = subprocess.run([sys.executable, script, str(decode_timeline), "--decode-batches",
                                     "--jpeg-engines", "2"], capture_output=True, text=True, check=True).stdout
        missing += [line for line in DECODE_EXPECTED + ENGINES_EXPECTED if line not in decode_out]
        refused = subprocess.run([sys.executable, script, str(timeline), "--window-kernel", "no such kernel"],
                                 capture_output=True, text=True)
    if missing:
        sys.exit("missing from the summaries:\n  " + "\n  ".join(missing) + "\nthey printed:\n" + out + decode_out)
    # The trace: the window's 4 kernels and 2 copies (the last kernel lies outside it), microseconds from the
    # window's start, a track named for each of the 4 streams they ran on.
    spans = [e for e in trace if e["ph"] == "X"]
    tracks = {e["tid"]: e["args"]["name"] for e in trace if e["ph"] == "M"}
    encode = next(e for e in spans if e["name"] == "nvjpeg::encode")
    if len(spans) != 6 or tracks != {1: "stream 1", 2: "stream 2", 3: "stream 3", 4: "stream 4"} or \
            (encode["ts"], encode["dur"], encode["tid"]) != (0.35, 0.25, 3):
        sys.exit(f"the Chrome trace is not the window's: {trace}")
    if refused.returncode == 0 or "no kernel name holds 'no such kernel'" not in refused.stderr:
        sys.exit("a window no kernel names was not refused: " + refused.stderr)
    print(out)


if __name__ == "__main__":
    main()
