#!/usr/bin/env python3
"""How busy the GPU was, from a timeline that libimgpipe_cuda_timeline.so wrote (bench/cuda_timeline.cpp).

Usage: timeline_summary.py RUN.timeline[.xz] [--window-kernel TEXT] [--top N] [--chrome-trace FILE]
                           [--decode-batches] [--jpeg-engines N]

The window: from the start of the first to the end of the last kernel whose name holds TEXT (default: every
record), so that start-up and shutdown stay out. Over the window it prints:
- the share of it during which at least one kernel ran, and how many ran at once on average (summed kernel
  time over the window);
- that summed time by library (nvJPEG's kernels, imgpipe's, others), and the N kernels with the most time;
- per copy direction, the share of the window with a copy in flight, the bytes and their rate.
Kernel names are demangled with c++filt where it is installed. --chrome-trace also writes the window as Chrome's
trace-event JSON, one track per CUDA stream, for Perfetto (ui.perfetto.dev: Open trace file).

--decode-batches, for a GPU JPEG job: inside each batched call nvJPEG's hardware decoder copies the files' bytes
to the device one after another (a host to device copy of each file's size), the pace at which the JPEG engines
get them, and copies the decoded planes out (device to device) as the engines finish. The file copies, split
where more than 0.6 ms passes between two, mark its batches. It says how the time from the first file copy to the last divides: handing a batch's files
over, then from the batch's last file copy to its last planes copy (the engines finishing the batch), then
until the next batch's first file copy (between batches, the engines have nothing).

--jpeg-engines N, for a GPU JPEG job on a GPU with N hardware JPEG decoders (the H200 has 7), with either of
nvJPEG's APIs: a file is with the decoder from the end of its copy to the device to the start of the next device
to device copy on the same stream (its planes coming out). It says how long files were with the decoder (a free
engine's wait included) and, over the window, how many were with it at once: on average, and the share of the
window with none, with some but fewer than N, and with N or more, when every engine can have a file. A job that keeps
fewer than N files with the decoder leaves engines idle: their feeding bounds it, not the engines."""
import argparse
import bisect
import collections
import json
import lzma
import shutil
import subprocess
import sys


def merged_length(intervals):
    """Length of the union of (start, end) intervals."""
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def demangled(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return dict(zip(names, out.splitlines()))


def short(name, width=100):
    """The demangled name without its return type and parameter list, cut to `width`."""
    name = name.replace("(anonymous namespace)::", "").removeprefix("void ")
    depth = 0
    for i, c in enumerate(name):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "(" and depth == 0:
            name = name[:i]
            break
    return name if len(name) <= width else name[: width - 3] + "..."


def library(name):
    if "nvjpeg" in name.lower():
        return "nvJPEG"
    if "imgpipe" in name:
        return "imgpipe"
    return "other"


def decode_batches(copies, min_file_bytes=64_000, batch_gap=600_000):
    """The batches of nvJPEG's hardware decoder, from its file and planes copies (see the module's help)."""
    files = sorted(s for s, _, _, kind, size in copies if kind == "HtoD" and size >= min_file_bytes)
    planes_done = sorted(e for _, e, _, kind, _ in copies if kind == "DtoD")
    if len(files) < 2 or not planes_done:
        return None
    batches = [[files[0]]]
    for previous, current in zip(files, files[1:]):
        if current - previous > batch_gap:
            batches.append([])
        batches[-1].append(current)
    handing, finishing, between = [], [], []
    for batch, following in zip(batches, batches[1:]):
        handing.append(batch[-1] - batch[0])
        done_before = bisect.bisect_right(planes_done, following[0])
        last_planes = planes_done[done_before - 1] if done_before else batch[-1]
        finishing.append(max(0, last_planes - batch[-1]))
        between.append(following[0] - max(last_planes, batch[-1]))
    return {"batches": len(batches), "files": len(files), "span": files[-1] - files[0],
            "handing": handing, "finishing": finishing, "between": between}


def files_with_decoder(copies, min_file_bytes=64_000):
    """(start, end) of each file with the hardware decoder (see --jpeg-engines in the module's help)."""
    by_stream = collections.defaultdict(list)
    for start, stop, stream, kind, size in copies:
        by_stream[stream].append((start, stop, kind, size))
    files = []
    for stream_copies in by_stream.values():
        handed_over = None
        for start, stop, kind, size in sorted(stream_copies):
            if kind == "HtoD" and size >= min_file_bytes:
                handed_over = stop
            elif kind == "DtoD" and handed_over is not None:
                files.append((handed_over, start))
                handed_over = None
    return files


def at_once(intervals, begin, end):
    """{count: ns of [begin, end) during which `count` of the intervals were open}."""
    edges = sorted([(max(s, begin), 1) for s, e in intervals if e > begin and s < end] +
                   [(min(e, end), -1) for s, e in intervals if e > begin and s < end])
    time_at, open_now, last = collections.Counter(), 0, begin
    for t, change in edges:
        time_at[open_now] += t - last
        open_now += change
        last = t
    time_at[open_now] += end - last
    return time_at


def write_chrome_trace(path, kernels, copies, names, begin, end):
    """The window's kernels and copies as spans, microseconds from its start, a track per stream."""
    events, streams = [], set()
    for start, stop, stream, name in kernels:
        if stop > begin and start < end:
            events.append({"name": short(names[name]), "cat": "kernel", "ph": "X", "pid": 0, "tid": stream,
                           "ts": (start - begin) / 1e3, "dur": (stop - start) / 1e3})
            streams.add(stream)
    for start, stop, stream, kind, size in copies:
        if stop > begin and start < end:
            events.append({"name": f"{kind} {size} bytes", "cat": "copy", "ph": "X", "pid": 0, "tid": stream,
                           "ts": (start - begin) / 1e3, "dur": (stop - start) / 1e3})
            streams.add(stream)
    events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": s, "args": {"name": f"stream {s}"}}
               for s in sorted(streams)]
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline")
    parser.add_argument("--window-kernel", default="", help="the window spans the kernels whose names hold this")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--chrome-trace", help="also write the window as Chrome trace-event JSON to this file")
    parser.add_argument("--decode-batches", action="store_true",
                        help="also how nvJPEG's hardware decoder spent the time between its batches")
    parser.add_argument("--jpeg-engines", type=int, metavar="N",
                        help="also how many files the N hardware JPEG decoders had at once")
    args = parser.parse_args()

    kernels, copies = [], []
    with (lzma.open if args.timeline.endswith(".xz") else open)(args.timeline, "rt") as f:
        for line in f:
            fields = line.split(" ", 4)
            if fields[0] == "kernel" and len(fields) == 5:
                kernels.append((int(fields[1]), int(fields[2]), int(fields[3]), fields[4].strip()))
            elif fields[0] == "copy" and len(fields) == 5:
                kind, size = fields[4].split()
                copies.append((int(fields[1]), int(fields[2]), int(fields[3]), kind, int(size)))
    if not kernels:
        sys.exit(f"{args.timeline}: no kernel records")
    names = demangled(sorted({k[3] for k in kernels}))
    in_window = [k for k in kernels if args.window_kernel in names[k[3]]]
    if not in_window:
        sys.exit(f"no kernel name holds '{args.window_kernel}'")
    begin, end = min(k[0] for k in in_window), max(k[1] for k in in_window)
    window = end - begin

    def clipped(start, stop):
        return max(start, begin), min(stop, end)

    spans = [clipped(s, e) for s, e, _, _ in kernels if e > begin and s < end]
    busy = merged_length(spans)
    summed = sum(e - s for s, e in spans)
    print(f"window: {window / 1e6:.1f} ms, {len(spans)} kernels")
    print(f"at least one kernel running: {100 * busy / window:.1f}% of the window; "
          f"kernels running at once on average: {summed / window:.2f}")

    by_library, by_name, launches = collections.Counter(), collections.Counter(), collections.Counter()
    for s, e, _, name in kernels:
        if e <= begin or s >= end:
            continue
        cs, ce = clipped(s, e)
        by_library[library(names[name])] += ce - cs
        by_name[short(names[name])] += ce - cs
        launches[short(names[name])] += 1
    print("kernel time by library (share of the summed kernel time):")
    for lib, ns in by_library.most_common():
        print(f"  {lib:8s} {ns / 1e6:9.1f} ms  {100 * ns / summed:5.1f}%")
    print(f"the {args.top} kernels with the most time:")
    for name, ns in by_name.most_common(args.top):
        print(f"  {ns / 1e6:8.1f} ms  {launches[name]:7d} launches  {ns / launches[name] / 1e3:8.1f} us each  {name}")

    by_kind = collections.defaultdict(list)
    for s, e, _, kind, size in copies:
        if e > begin and s < end:
            by_kind[kind].append((clipped(s, e), size))
    for kind, items in sorted(by_kind.items()):
        in_flight = merged_length([span for span, _ in items])
        size = sum(b for _, b in items)
        print(f"copies {kind}: {len(items)}, in flight {100 * in_flight / window:.1f}% of the window, "
              f"{size / 1e6:.1f} MB, {size / window:.2f} GB/s over the window")
    if args.decode_batches:
        batches = decode_batches([c for c in copies if c[1] > begin and c[0] < end])
        if batches is None:
            print("decode batches: no file copies to the device in the window")
        else:
            span = batches["span"]
            handed = len(batches["handing"])
            print(f"decode batches: {batches['batches']}, {batches['files'] / batches['batches']:.1f} files each on "
                  f"average; of the {span / 1e6:.1f} ms from the first file copy to the last:")
            for label, times in (("handing files to the engines", batches["handing"]),
                                 ("from a batch's last file copy to its last planes copy", batches["finishing"]),
                                 ("from there to the next batch's first file copy", batches["between"])):
                ordered = sorted(times)
                print(f"  {label}: {100 * sum(times) / span:.0f}% (per batch: median "
                      f"{ordered[len(ordered) // 2] / 1e3:.0f} us, mean {sum(times) / handed / 1e3:.0f} us, "
                      f"90th percentile {ordered[9 * len(ordered) // 10] / 1e3:.0f} us)")
    if args.jpeg_engines:
        files = files_with_decoder(copies)
        if not files:
            print("JPEG decoder: no file copied to the device and its planes out on the same stream")
        else:
            times = sorted(e - s for s, e in files)
            time_at = at_once(files, begin, end)
            engines = args.jpeg_engines
            none, all_fed = time_at[0], sum(ns for count, ns in time_at.items() if count >= engines)
            mean = sum(count * ns for count, ns in time_at.items()) / window
            print(f"JPEG decoder: {len(files)} files, from their copy to the device to their planes' first copy out: "
                  f"median {times[len(times) // 2] / 1e3:.0f} us, 90th percentile "
                  f"{times[9 * len(times) // 10] / 1e3:.0f} us (waiting for a free engine included)")
            print(f"  files with the decoder at once: {mean:.2f} on average; none {100 * none / window:.1f}%, "
                  f"fewer than {engines}: {100 * (window - none - all_fed) / window:.1f}%, {engines} or more (every "
                  f"engine can have one): {100 * all_fed / window:.1f}% of the window")
    if args.chrome_trace:
        write_chrome_trace(args.chrome_trace, kernels, copies, names, begin, end)
        print(f"Chrome trace of the window: {args.chrome_trace}")


if __name__ == "__main__":
    main()
