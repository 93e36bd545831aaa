#!/usr/bin/env python3
"""The Ray Data job (imgpipe.ray.run_folder) against `imgpipe batch` on the same folder, in images per second.

    PYTHONPATH=build/python tools/ray_folder_bench.py --imgpipe build/apps/imgpipe --folder PHOTOS \\
        --ops resize=640x480,gaussian=5:1.0 --backend cpu --cpus 2 --repeats 2 \\
        --configs files:1:64 files:2:64 bytes:1:16

Each config is READ:ACTORS:BATCH (read="files" or "bytes", concurrency, batch_size). Every run writes into a
fresh output folder next to the input's (removed afterwards); the command runs with `--backend` and the same
chain. Ray's cluster start (`ray.init`) is outside the timing, the job's own start (actors, first tasks) inside.
Prints one Markdown row per run and the median of each config's rates over the command's.
"""
import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def count_images(folder):
    import imgpipe

    return len(imgpipe.list_images(folder))


def time_command(binary, folder, ops, backend, scratch):
    out = tempfile.mkdtemp(dir=scratch)
    shutil.rmtree(out)
    start = time.perf_counter()
    run = subprocess.run([binary, "batch", folder, out, "--ops", ops, "--backend", backend], capture_output=True,
                         text=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    if run.returncode != 0:
        sys.exit(f"imgpipe batch failed ({run.returncode}): {run.stderr.strip()}")
    return seconds


def time_ray(folder, ops, backend, read, actors, batch, scratch):
    import imgpipe.ray

    out = tempfile.mkdtemp(dir=scratch)
    summary = imgpipe.ray.run_folder(folder, out, ops, backend=backend, read=read, concurrency=actors,
                                     batch_size=batch)
    shutil.rmtree(out, ignore_errors=True)
    if summary["failed"]:
        sys.exit(f"the Ray job failed on {summary['failed']} files, e.g. {summary['errors'][0]}")
    return summary["seconds"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imgpipe", required=True, help="the imgpipe binary")
    parser.add_argument("--folder", required=True, help="the input folder")
    parser.add_argument("--ops", default="resize=640x480,gaussian=5:1.0")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--cpus", type=int, default=2, help="ray.init(num_cpus=...)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["files:1:64", "files:2:64", "bytes:1:16"],
                        help="READ:ACTORS:BATCH for each Ray run")
    args = parser.parse_args()

    import ray

    files = count_images(args.folder)
    scratch = tempfile.mkdtemp(prefix="ray-folder-bench-")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    rates = {}
    print(f"{files} images in {args.folder}, {args.ops}, backend {args.backend}, ray.init(num_cpus={args.cpus})")
    print("| run | seconds | images/s |\n| --- | --- | --- |")
    try:
        for _ in range(args.repeats):
            seconds = time_command(args.imgpipe, args.folder, args.ops, args.backend, scratch)
            rates.setdefault("imgpipe batch", []).append(files / seconds)
            print(f"| imgpipe batch | {seconds:.2f} | {files / seconds:.1f} |", flush=True)
            for config in args.configs:
                read, actors, batch = config.split(":")
                seconds = time_ray(args.folder, args.ops, args.backend, read, int(actors), int(batch), scratch)
                name = f"Ray, read={read}, {actors} actor(s), batch {batch}"
                rates.setdefault(name, []).append(files / seconds)
                print(f"| {name} | {seconds:.2f} | {files / seconds:.1f} |", flush=True)
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    command = statistics.median(rates["imgpipe batch"])
    for name, values in rates.items():
        print(f"median {name}: {statistics.median(values):.1f} images/s, "
              f"{statistics.median(values) / command:.0%} of the command's")


if __name__ == "__main__":
    main()
