#!/usr/bin/env python3
"""Memory over a long folder job (docs/gpu-jpeg.md): `imgpipe batch` on folders of N JPEG files, with the
process's peak resident memory (pinned host buffers included: they are resident) and its peak GPU memory
(nvidia-smi, sampled every 0.1 s), so that folders of different sizes show whether either grows with the
folder.

Usage: jpeg_memory_bench.py --imgpipe BUILD/apps/imgpipe [--files 10000,100000] [--size 640x360]
                            [--codec gpu|cpu] [--work DIR] [--json results.json]

The files are the photographs of data/images scaled to --size and saved at quality 90, written again and
again under new names (the job does not care that they repeat; the folder's size is what is measured). The job
resizes them to half size and writes JPEG files at quality 90. Needs OpenCV's Python module."""
import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import cv2

ROOT = pathlib.Path(__file__).resolve().parent.parent


def make_folder(folder: pathlib.Path, count: int, width: int, height: int) -> None:
    if folder.exists() and sum(1 for _ in folder.iterdir()) == count:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    encoded = []
    for path in sorted((ROOT / "data" / "images").glob("*")):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is not None:
            image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
            encoded.append(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes())
    for index in range(count):
        (folder / f"photo_{index:07d}.jpg").write_bytes(encoded[index % len(encoded)])


def memory_kb(pid: int, field: str) -> int:
    """A /proc/PID/status field in kB (really KiB): VmRSS now, VmHWM the peak so far."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(field + r":\s+(\d+) kB", status)
    return int(found.group(1)) if found else 0


def gpu_memory_mib(pid: int):
    """The process's GPU memory in MiB from nvidia-smi; None where there is no nvidia-smi."""
    try:
        listing = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listing.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 2 and fields[0] == str(pid):
            return int(fields[1])
    return 0


def run_job(imgpipe: str, folder: pathlib.Path, out: pathlib.Path, width: int, height: int, codec: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    command = [imgpipe, "batch", str(folder), str(out), "--ops", f"resize={width // 2}x{height // 2}", "--format",
               "jpg", "--quality", "90", "--decoder", codec, "--encoder", codec]
    start = time.perf_counter()
    # stderr into a file, not a pipe: a job that reports many bad files would fill a pipe read only at the end.
    with tempfile.TemporaryFile(mode="w+") as stderr:
        job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        peak_rss_kb, peak_gpu_mib, samples = 0, None, []
        while job.poll() is None:
            rss, gpu = memory_kb(job.pid, "VmRSS"), gpu_memory_mib(job.pid)
            # The kernel's high-water mark: the peak between two samples too.
            peak_rss_kb = max(peak_rss_kb, rss, memory_kb(job.pid, "VmHWM"))
            if gpu is not None:
                peak_gpu_mib = max(peak_gpu_mib or 0, gpu)
            samples.append((round(time.perf_counter() - start, 2), rss // 1024, gpu))
            time.sleep(0.1)
        stderr.seek(0)
        errors = stderr.read()
    summary = next((line for line in reversed(errors.replace("\r", "\n").splitlines()) if " done, " in line), "")
    rate = re.search(r"\(([\d.]+) images/s\)", summary)
    written = sum(1 for _ in out.iterdir()) if out.exists() else 0
    return {"exit": job.returncode, "summary": summary, "images_per_s": float(rate.group(1)) if rate else 0.0,
            "outputs": written, "peak_resident_mb": peak_rss_kb * 1024 / 1e6, "peak_gpu_mib": peak_gpu_mib,
            "samples": samples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imgpipe", required=True)
    parser.add_argument("--files", default="10000,100000", help="folder sizes, comma-separated")
    parser.add_argument("--size", default="640x360", help="the photos' size, WxH")
    parser.add_argument("--codec", default="gpu", choices=["gpu", "cpu"], help="--decoder and --encoder of the job")
    parser.add_argument("--work", default="/dev/shm/imgpipe-memory-bench" if pathlib.Path("/dev/shm").is_dir()
                        else "/tmp/imgpipe-memory-bench")
    parser.add_argument("--json")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    work = pathlib.Path(args.work)
    results = []
    for count in (int(c) for c in args.files.split(",")):
        folder = work / f"in-{count}"
        print(f"making {count} {width}x{height} JPEGs in {folder}", file=sys.stderr)
        make_folder(folder, count, width, height)
        result = run_job(args.imgpipe, folder, work / "out", width, height, args.codec)
        result["files"] = count
        results.append(result)
        gpu = "n/a" if result["peak_gpu_mib"] is None else f"{result['peak_gpu_mib']} MiB"
        print(f"{count:>8} files: exit {result['exit']}, {result['outputs']} outputs, "
              f"{result['images_per_s']:.0f} images/s, peak resident {result['peak_resident_mb']:.0f} MB, "
              f"peak GPU memory {gpu}")
        shutil.rmtree(work / "out", ignore_errors=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"size": args.size, "codec": args.codec, "runs": results},
                                                      indent=1) + "\n")
    return 0 if all(r["exit"] == 0 and r["outputs"] == r["files"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
