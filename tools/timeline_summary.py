#!/usr/bin/env python3
"""How busy the GPU was, from a timeline that libimgpipe_cuda_timeline.so wrote (bench/cuda_timeline.cpp).

Usage: timeline_summary.py RUN.timeline[.xz] [--window-kernel TEXT] [--top N]

The window: from the start of the first to the end of the last kernel whose name holds TEXT (default: every
record), so that start-up and shutdown stay out. Over the window it prints:
- the share of it during which at least one kernel ran, and how many ran at once on average (summed kernel
  time over the window);
- that summed time by library (nvJPEG's kernels, imgpipe's, others), and the N kernels with the most time;
- per copy direction, the share of the window with a copy in flight, the bytes and their rate.
Kernel names are demangled with c++filt where it is installed."""
import argparse
import collections
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline")
    parser.add_argument("--window-kernel", default="", help="the window spans the kernels whose names hold this")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()

    kernels, copies = [], []
    with (lzma.open if args.timeline.endswith(".xz") else open)(args.timeline, "rt") as f:
        for line in f:
            fields = line.split(" ", 4)
            if fields[0] == "kernel" and len(fields) == 5:
                kernels.append((int(fields[1]), int(fields[2]), fields[4].strip()))
            elif fields[0] == "copy" and len(fields) == 5:
                kind, size = fields[4].split()
                copies.append((int(fields[1]), int(fields[2]), kind, int(size)))
    if not kernels:
        sys.exit(f"{args.timeline}: no kernel records")
    names = demangled(sorted({k[2] for k in kernels}))
    in_window = [k for k in kernels if args.window_kernel in names[k[2]]]
    if not in_window:
        sys.exit(f"no kernel name holds '{args.window_kernel}'")
    begin, end = min(k[0] for k in in_window), max(k[1] for k in in_window)
    window = end - begin

    def clipped(start, stop):
        return max(start, begin), min(stop, end)

    spans = [clipped(s, e) for s, e, _ in kernels if e > begin and s < end]
    busy = merged_length(spans)
    summed = sum(e - s for s, e in spans)
    print(f"window: {window / 1e6:.1f} ms, {len(spans)} kernels")
    print(f"at least one kernel running: {100 * busy / window:.1f}% of the window; "
          f"kernels running at once on average: {summed / window:.2f}")

    by_library, by_name, launches = collections.Counter(), collections.Counter(), collections.Counter()
    for s, e, name in kernels:
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
    for s, e, kind, size in copies:
        if e > begin and s < end:
            by_kind[kind].append((clipped(s, e), size))
    for kind, items in sorted(by_kind.items()):
        in_flight = merged_length([span for span, _ in items])
        size = sum(b for _, b in items)
        print(f"copies {kind}: {len(items)}, in flight {100 * in_flight / window:.1f}% of the window, "
              f"{size / 1e6:.1f} MB, {size / window:.2f} GB/s over the window")


if __name__ == "__main__":
    main()
