#!/usr/bin/env python3
"""What driving imgpipe from Python costs on device-resident frames, against the same work driven from C++.

    PYTHONPATH=build-gpu/python python3 tools/python_overhead_bench.py --imgpipe build-gpu/apps/imgpipe \\
        --json out/overhead.json

Needs a CUDA device, CuPy and the imgpipe module (built with -DIMGPIPE_BUILD_PYTHON=ON). Two measurements, with
the optimized backend and fast arithmetic (Pipeline's default), frames and outputs already in device memory:

(a) a batch: `p(batch, stream=s, out=out)` called --batch-calls times back to back, CUDA events around the
    calls on s (median of --repeats), against `imgpipe bench --matrix` (C++ calling DeviceChain::run_batch on the
    same stream of work: the row `optimized xN` for this chain and size). overhead = python / C++ - 1.
(b) one frame per call: --calls calls of `p(frame, stream=s, out=out)`, rotating through the batch's frames as
    the C++ row `optimized` rotates through its pool. With s held by a spinning kernel, the calls only enqueue:
    the host clock over them gives the host time per call (Python, the binding, the array's import and imgpipe's
    own CUDA launches), and CUDA events around them the GPU time per frame once the spin ends. Run live (no
    spin), CUDA events give the time per frame that Python sustains, which is the GPU's time when the host time
    per call is below it; live - GPU is what the Python call adds per frame, overhead = live / C++ - 1.

Each is run with the input as a CuPy array (DLPack, with its stream handshake) and as an object offering only
__cuda_array_interface__ (as Numba's arrays do) that names no stream. The calls are made with s as CuPy's
current stream (`with s:`), as a CuPy program that runs its work on s does: CuPy's side of the handshake then
has nothing to order (its stream is imgpipe's). One more row (b) makes the DLPack calls with CuPy's default
stream current instead, so that the handshake orders that stream before s on every call (an event recorded
and waited for). Prints a table; --json writes every number.
"""
import argparse
import contextlib
import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Holds a stream for `cycles` GPU clock cycles, so that the calls timed behind it only enqueue.
SPIN = r"""extern "C" __global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {}
}"""


class InterfaceOnly:
    """A CuPy array offering nothing but __cuda_array_interface__, with no producer stream to wait for."""

    def __init__(self, array):
        self.array = array
        interface = dict(array.__cuda_array_interface__)
        interface["stream"] = None
        self.__cuda_array_interface__ = interface


def fail(message):
    sys.exit(f"python_overhead_bench: {message}")


def load_modules():
    try:
        import cupy
    except ImportError as error:
        fail(f"needs CuPy ({error}); install the wheel for this CUDA, e.g. pip install cupy-cuda13x")
    try:
        import imgpipe
    except ImportError as error:
        fail(f"cannot import imgpipe ({error}): set PYTHONPATH to the build's python folder (PYTHONPATH=build-gpu/"
             "python after tools/gpu_check.sh build, which builds the module where python3 has nanobind; by hand: "
             "-DIMGPIPE_BUILD_PYTHON=ON)")
    optimized = next(b for b in imgpipe.backends() if b["name"] == "optimized")
    if not optimized["usable"]:
        fail(f"the optimized backend is not usable here: {optimized['detail']}")
    return cupy, imgpipe


def parse_size(text):
    try:
        width, height = (int(side) for side in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected WxH, e.g. 1920x1080") from None
    return width, height


def batch_size(text):
    value = int(text)
    if not 2 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{value}: from 2 to 64, as imgpipe bench --matrix-batch takes it")
    return value


def median_and_samples(samples):
    return {"median": statistics.median(samples), "samples": samples}


def time_batch(cupy, p, batch, out, calls, repeats, warmup):
    """CUDA events around `calls` back-to-back calls on one stream, and the host clock over them; per call."""
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(warmup):
            p(batch, stream=stream, out=out)
    stream.synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    device_us, host_us = [], []
    for _ in range(repeats):
        start.record(stream)
        began = time.perf_counter()
        with stream:
            for _ in range(calls):
                p(batch, stream=stream, out=out)
        host_us.append(1e6 * (time.perf_counter() - began) / calls)
        stop.record(stream)
        stop.synchronize()
        device_us.append(1e3 * cupy.cuda.get_elapsed_time(start, stop) / calls)
    return {"us_per_call": median_and_samples(device_us), "host_us_per_call": median_and_samples(host_us)}


def time_frames(cupy, p, pairs, repeats, warmup, spin_cycles, stream_current=True):
    """One frame per call, the (frame, out) pairs in turn: held behind a spin (host time per call, GPU time per
    frame) and live (time per frame on the stream). The calls run with their stream as CuPy's current one, or
    (stream_current=False) with CuPy's default stream current."""
    stream = cupy.cuda.Stream(non_blocking=True)
    calling = stream if stream_current else contextlib.nullcontext()
    spin = cupy.RawKernel(SPIN, "spin")
    with calling:
        for frame, out in pairs[:warmup]:
            p(frame, stream=stream, out=out)
    stream.synchronize()
    start, stop, spun = cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.Event(disable_timing=True)
    host_us, gpu_us, live_us, busy = [], [], [], True
    for _ in range(repeats):
        with stream:
            spin((1,), (1,), (cupy.int64(spin_cycles),))
        spun.record(stream)
        start.record(stream)
        began = time.perf_counter()
        with calling:
            for frame, out in pairs:
                p(frame, stream=stream, out=out)
        host_us.append(1e6 * (time.perf_counter() - began) / len(pairs))
        busy = busy and not spun.done  # the spin outlasted the calls: none of them waited for the GPU
        stop.record(stream)
        stop.synchronize()
        gpu_us.append(1e3 * cupy.cuda.get_elapsed_time(start, stop) / len(pairs))

        start.record(stream)
        with calling:
            for frame, out in pairs:
                p(frame, stream=stream, out=out)
        stop.record(stream)
        stop.synchronize()
        live_us.append(1e3 * cupy.cuda.get_elapsed_time(start, stop) / len(pairs))
    return {"host_us_per_call": median_and_samples(host_us), "gpu_us_per_frame": median_and_samples(gpu_us),
            "live_us_per_frame": median_and_samples(live_us),
            "live_minus_gpu_us": statistics.median(live_us) - statistics.median(gpu_us), "gpu_busy_throughout": busy}


def cpp_rows(binary, size, chain, batch, calls, repeats):
    """`imgpipe bench --matrix` at this size with batches of `batch`: its rows for the chain, one frame per launch
    and batched (microseconds per frame), or why there are none."""
    if not binary:
        return {"reason": "no --imgpipe given"}
    if not os.access(binary, os.X_OK):
        return {"reason": f"{binary} is not an executable"}
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "bench.json")
        command = [binary, "bench", "--matrix", "--matrix-sizes", f"{size[0]}x{size[1]}", "--matrix-batch",
                   str(batch), "--backends", "optimized", "--frames", str(batch * calls), "--repeats", str(repeats),
                   "--json", report]
        run = subprocess.run(command, capture_output=True, text=True)
        if not os.path.exists(report):
            return {"command": command, "reason": f"exit {run.returncode}: {run.stderr.strip()[-500:]}"}
        with open(report) as f:
            rows = json.load(f)["rows"]
    group = f"{size[0]}x{size[1]} {chain}"
    found = {r["name"]: r for r in rows if r["section"] == "matrix" and r["group"] == group}
    result = {"command": command, "group": group}
    for key, name in (("frame", "optimized"), ("batch", f"optimized x{batch}")):
        row = found.get(name)
        if row is None:
            result[key] = {"reason": f"no matrix row '{name}' in group '{group}' (the matrix's chains: docs/bench.md)"}
        elif row["status"] != "ok":
            result[key] = {"reason": f"{row['status']}: {row['reason']}"}
        else:
            result[key] = {"us_per_frame": row["us_per_frame"], "samples_us_per_frame": row["samples_us_per_frame"]}
    return result


def ratio_minus_one(python_us, cpp_us):
    return None if cpp_us is None else python_us / cpp_us - 1


def cell(value, digits=1):
    return "n/a" if value is None else f"{value:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imgpipe", help="the imgpipe command, for the C++ rows (imgpipe bench --matrix)")
    parser.add_argument("--ops", default="resize=1280x720,gaussian=5:1.0", help="the chain (default: %(default)s)")
    parser.add_argument("--size", type=parse_size, default=(1920, 1080), help="WxH of the frames (default 1920x1080)")
    parser.add_argument("--batch", type=batch_size, default=64,
                        help="frames per batched call, 2 to 64 as imgpipe bench --matrix-batch takes it (default 64)")
    parser.add_argument("--batch-calls", type=int, default=20, help="batched calls per timed repeat")
    parser.add_argument("--calls", type=int, default=100,
                        help="one-frame calls per timed repeat; all must fit behind the spin")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats; medians are reported")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (plans, buffers, caches)")
    parser.add_argument("--spin-cycles", type=int, default=100_000_000,
                        help="GPU clock cycles the stream is held for (default: about 50 ms on an H200)")
    parser.add_argument("--json", help="write every number here")
    args = parser.parse_args()

    cupy, imgpipe = load_modules()
    p = imgpipe.Pipeline(args.ops, backend="optimized")
    width, height = args.size
    out_width, out_height = p.output_size((width, height))
    batch = cupy.random.randint(0, 256, size=(args.batch, height, width, 3), dtype=cupy.uint8)
    out = cupy.empty((args.batch, out_height, out_width, 3), cupy.uint8)
    inputs = {"dlpack": (batch, out), "cuda_array_interface": (InterfaceOnly(batch), InterfaceOnly(out))}
    cupy.cuda.Device().synchronize()

    gc.disable()  # no collection inside a timed loop
    batched, single = {}, {}
    for name, (frames, outs) in inputs.items():
        batched[name] = time_batch(cupy, p, frames, outs, args.batch_calls, args.repeats, args.warmup)
        pairs = [(batch[i % args.batch], out[i % args.batch]) for i in range(args.calls)]
        if name == "cuda_array_interface":
            pairs = [(InterfaceOnly(f), InterfaceOnly(o)) for f, o in pairs]
        single[name] = time_frames(cupy, p, pairs, args.repeats, args.warmup, args.spin_cycles)
        if name == "dlpack":
            single["dlpack, default stream current"] = time_frames(cupy, p, pairs, args.repeats, args.warmup,
                                                                   args.spin_cycles, stream_current=False)
    gc.enable()

    cpp = cpp_rows(args.imgpipe, args.size, p.chain, args.batch, args.batch_calls, args.repeats)
    cpp_batch_us = cpp.get("batch", {}).get("us_per_frame")
    cpp_batch_us = None if cpp_batch_us is None else cpp_batch_us * args.batch
    cpp_frame_us = cpp.get("frame", {}).get("us_per_frame")
    for name in inputs:
        batched[name]["overhead"] = ratio_minus_one(batched[name]["us_per_call"]["median"], cpp_batch_us)
    for row in single.values():
        row["live_overhead"] = ratio_minus_one(row["live_us_per_frame"]["median"], cpp_frame_us)

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    device = device.decode() if isinstance(device, bytes) else device
    print(f"imgpipe from Python: {p.chain} on {width}x{height} frames, optimized backend, {device}")
    print(f"\n(a) a batch of {args.batch} per call: us per call (CUDA events), C++: imgpipe bench --matrix "
          f"'optimized x{args.batch}'")
    print(f"{'input':<22}{'python':>10}{'C++':>10}{'overhead':>10}{'host/call':>11}")
    for name, row in batched.items():
        overhead = "n/a" if row["overhead"] is None else f"{100 * row['overhead']:+.1f}%"
        print(f"{name:<22}{cell(row['us_per_call']['median']):>10}{cell(cpp_batch_us):>10}{overhead:>10}"
              f"{cell(row['host_us_per_call']['median']):>11}")
    print("\n(b) one frame per call, us: host time per call (GPU held), GPU time per frame, live time per frame "
          "(CUDA events) and what it adds to the GPU's; C++: 'optimized'")
    print(f"{'input':<32}{'host/call':>10}{'GPU':>8}{'live':>8}{'live-GPU':>10}{'C++':>8}{'overhead':>10}"
          "  GPU busy throughout")
    for name, row in single.items():
        overhead = "n/a" if row["live_overhead"] is None else f"{100 * row['live_overhead']:+.1f}%"
        print(f"{name:<32}{cell(row['host_us_per_call']['median']):>10}{cell(row['gpu_us_per_frame']['median']):>8}"
              f"{cell(row['live_us_per_frame']['median']):>8}{cell(row['live_minus_gpu_us']):>10}"
              f"{cell(cpp_frame_us):>8}{overhead:>10}  {row['gpu_busy_throughout']}")
    for reason in [cpp.get("reason")] + [cpp.get(key, {}).get("reason") for key in ("batch", "frame")]:
        if reason:
            print(f"note: C++ rows: {reason}")
    if not all(row["gpu_busy_throughout"] for row in single.values()):
        print("note: the spin ended before the one-frame calls did, so some waited for the GPU; raise --spin-cycles")

    if args.json:
        report = {
            "schema": "imgpipe-python-overhead/1",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": sys.argv,
            "device": device,
            "versions": {"python": sys.version.split()[0], "cupy": cupy.__version__,
                         "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()},
            "parameters": {"ops": args.ops, "chain": p.chain, "size": [width, height],
                           "output_size": [out_width, out_height], "backend": "optimized", "exact": p.exact,
                           "batch": args.batch, "batch_calls": args.batch_calls, "calls": args.calls,
                           "repeats": args.repeats, "warmup": args.warmup, "spin_cycles": args.spin_cycles},
            "batch": batched,
            "single_frame": single,
            "cpp": {**cpp, "batch_us_per_call": cpp_batch_us, "frame_us_per_frame": cpp_frame_us},
        }
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
