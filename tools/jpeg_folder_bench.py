#!/usr/bin/env python3
"""The GPU JPEG folder benchmark (docs/gpu-jpeg.md): a folder of 1080p quality-90 JPEG photos through
resize 1280x720 + Gaussian 5x5 into quality-90 JPEGs, by imgpipe with GPU codecs and by OpenCV on every core,
with the output quality of each against a float reference.

Usage: jpeg_folder_bench.py --imgpipe BUILD/apps/imgpipe [--bench-jpeg BUILD/bench/imgpipe_bench_jpeg]
                            [--files 2000] [--work DIR] [--json results.json]

1. Makes --files JPEGs (1920x1080, quality 90, 4:2:0) from the photographs in data/images: each scaled to
   cover 1080p from a different crop, some mirrored, so no two files are alike. --work defaults to
   /dev/shm/imgpipe-jpeg-bench where /dev/shm has room (on the H200 machine, a job writing under /tmp slowed
   down from its second run on), else /tmp/imgpipe-jpeg-bench.
2. imgpipe_bench_jpeg on that folder: nvJPEG's hardware ceiling, imgpipe's decoder, imgpipe's encoder.
3. OpenCV's decoder alone and encoder alone on every core (a process pool, files in memory): the CPU rows to
   set beside the GPU codecs.
4. `imgpipe batch --timings` on it, GPU decode and encode (twice; the second run is reported, the first warms
   the disk cache), with where its time went.
5. OpenCV on every core (a process pool): read, resize (INTER_LINEAR), GaussianBlur 5x5 sigma 1, write at
   quality 90; the CPU job to compare with.
6. PSNR of 40 outputs of each job against a reference: OpenCV's decode, then resize and blur in float32.
Needs OpenCV's Python module and NumPy."""
import argparse
import json
import multiprocessing
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import cv2
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS = "resize=1280x720,gaussian=5:1.0"


def make_photo(task):
    index, target = task
    photos = [cv2.imread(str(p), cv2.IMREAD_COLOR) for p in sorted((ROOT / "data" / "images").glob("*"))]
    photo = photos[index % len(photos)]
    rng = np.random.default_rng(index)
    h, w = photo.shape[:2]
    ch, cw = int(h * rng.uniform(0.6, 1.0)), int(w * rng.uniform(0.6, 1.0))
    y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
    crop = cv2.resize(photo[y:y + ch, x:x + cw], (1920, 1080), interpolation=cv2.INTER_CUBIC)
    if index % 2:
        crop = crop[:, ::-1]
    noise = rng.normal(0, 3, crop.shape).astype(np.float32)  # grain: upscaled photos are smoother than real ones
    crop = np.clip(crop + noise, 0, 255).astype(np.uint8)
    cv2.imwrite(target, crop, [cv2.IMWRITE_JPEG_QUALITY, 90])


def make_folder(folder: pathlib.Path, count: int) -> None:
    if folder.exists() and len(list(folder.glob("*.jpg"))) == count:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with multiprocessing.Pool(os.cpu_count()) as pool:
        pool.map(make_photo, [(i, str(folder / f"photo_{i:06d}.jpg")) for i in range(count)], chunksize=16)


def cpu_job_one(paths):
    source, target = paths
    image = cv2.imread(source, cv2.IMREAD_COLOR)
    image = cv2.resize(image, (1280, 720), interpolation=cv2.INTER_LINEAR)
    image = cv2.GaussianBlur(image, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT_101)
    cv2.imwrite(target, image, [cv2.IMWRITE_JPEG_QUALITY, 90])


def opencv_job(folder: pathlib.Path, out: pathlib.Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    jobs = [(str(p), str(out / p.name)) for p in sorted(folder.glob("*.jpg"))]
    cv2.setNumThreads(1)
    with multiprocessing.Pool(os.cpu_count()) as pool:
        start = time.perf_counter()
        pool.map(cpu_job_one, jobs, chunksize=8)
        return len(jobs) / (time.perf_counter() - start)


# The files' bytes, loaded before the pool forks, so that the workers time decoding and encoding alone.
_ENCODED: list = []
_FRAMES: list = []


def _decode_range(span):
    start = time.perf_counter()
    for index in range(*span):
        cv2.imdecode(np.frombuffer(_ENCODED[index], np.uint8), cv2.IMREAD_COLOR)
    return time.perf_counter() - start


def _encode_range(span):
    start, written = time.perf_counter(), 0
    for index in range(*span):
        written += len(cv2.imencode(".jpg", _FRAMES[index], [cv2.IMWRITE_JPEG_QUALITY, 90])[1])
    return time.perf_counter() - start, written


def _spans(count: int, parts: int):
    step = -(-count // parts)
    return [(begin, min(begin + step, count)) for begin in range(0, count, step)]


def opencv_codec_rows(folder: pathlib.Path, count: int) -> dict:
    """OpenCV's decoder alone and its encoder alone (1280x720 frames, quality 90) on every core, one process
    each, the files in memory: images/s and MB/s of the whole pool, from its first start to its last end."""
    global _ENCODED, _FRAMES
    paths = sorted(folder.glob("*.jpg"))[:count]
    _ENCODED = [p.read_bytes() for p in paths]
    cores = os.cpu_count()
    cv2.setNumThreads(1)
    context = multiprocessing.get_context("fork")  # the workers share the loaded files
    with context.Pool(cores) as pool:
        start = time.perf_counter()
        pool.map(_decode_range, _spans(len(_ENCODED), cores))
        decode_s = time.perf_counter() - start
    _FRAMES = [cv2.resize(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR), (1280, 720),
                          interpolation=cv2.INTER_LINEAR) for data in _ENCODED]
    with context.Pool(cores) as pool:
        start = time.perf_counter()
        encoded = pool.map(_encode_range, _spans(len(_FRAMES), cores))
        encode_s = time.perf_counter() - start
    rows = {"files": len(_ENCODED), "processes": cores,
            "decode_images_per_s": len(_ENCODED) / decode_s,
            "decode_mb_per_s": sum(map(len, _ENCODED)) / decode_s / 1e6,
            "encode_images_per_s": len(_FRAMES) / encode_s,
            "encode_mb_per_s_out": sum(written for _, written in encoded) / encode_s / 1e6}
    _ENCODED, _FRAMES = [], []
    return rows


def imgpipe_job(imgpipe: str, folder: pathlib.Path, out: pathlib.Path, *codec_args: str) -> dict:
    """images_per_s: the job's own rate (imgpipe's summary); wall_images_per_s: the whole command, start-up
    (CUDA context, nvJPEG handles) included; timings: the --timings lines."""
    result = {}
    for _ in range(2):
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        run = subprocess.run([imgpipe, "batch", str(folder), str(out), "--ops", OPS, "--format", "jpg",
                              "--quality", "90", "--timings", *codec_args], capture_output=True, text=True)
        wall = time.perf_counter() - start
        lines = run.stderr.replace("\r", "\n").splitlines()
        summary = next((line for line in reversed(lines) if " done, " in line and "images/s" in line), "")
        rate = re.search(r"\(([\d.]+) images/s\)", summary)
        files = len(list(folder.glob("*.jpg")))
        result = {"exit": run.returncode, "summary": summary, "images_per_s": float(rate.group(1)) if rate else 0.0,
                  "wall_s": wall, "wall_images_per_s": files / wall,
                  "timings": [line for line in lines if "timings: " in line]}
    return result


def psnr_against_reference(folder: pathlib.Path, outputs: pathlib.Path, count: int = 40) -> float:
    errors = []
    for source in sorted(folder.glob("*.jpg"))[:count]:
        image = cv2.imread(str(source), cv2.IMREAD_COLOR).astype(np.float32)
        image = cv2.resize(image, (1280, 720), interpolation=cv2.INTER_LINEAR)
        reference = cv2.GaussianBlur(image, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT_101)
        got = cv2.imread(str(outputs / source.name), cv2.IMREAD_COLOR).astype(np.float32)
        errors.append(np.mean((got - reference) ** 2))
    return float(10 * np.log10(255.0 ** 2 / np.mean(errors)))


def default_work(files: int) -> str:
    """/dev/shm where it holds the folder and both jobs' outputs (about 0.5 MB a file) with room to spare."""
    shm = pathlib.Path("/dev/shm")
    if shm.is_dir() and shutil.disk_usage(shm).free > files * 1_000_000:
        return str(shm / "imgpipe-jpeg-bench")
    return "/tmp/imgpipe-jpeg-bench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imgpipe", required=True)
    parser.add_argument("--bench-jpeg")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--work", help="where the folder and the outputs go (default: see above)")
    parser.add_argument("--slots", help="imgpipe batch --slots (default: imgpipe's)")
    parser.add_argument("--cpu-codec-files", type=int, default=1000,
                        help="files in OpenCV's decode-only and encode-only rows (held in memory, decoded too)")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = pathlib.Path(args.work or default_work(args.files))
    folder = work / "in"
    print(f"making {args.files} 1080p quality-90 JPEGs in {folder}", file=sys.stderr)
    make_folder(folder, args.files)
    sizes = [p.stat().st_size for p in folder.glob("*.jpg")]
    results = {"files": len(sizes), "mean_file_kb": sum(sizes) / len(sizes) / 1e3, "cores": os.cpu_count()}
    if args.bench_jpeg:
        bench = subprocess.run([args.bench_jpeg, str(folder), "--json", str(work / "bench_jpeg.json")],
                               capture_output=True, text=True)
        print(bench.stdout + bench.stderr)
        if bench.returncode == 0:
            results["codec_rows"] = json.loads((work / "bench_jpeg.json").read_text())["rows"]
    cpu_rows = results["opencv_codec_rows"] = opencv_codec_rows(folder, args.cpu_codec_files)
    print(f"OpenCV on {cpu_rows['processes']} processes, {cpu_rows['files']} files in memory: decode "
          f"{cpu_rows['decode_images_per_s']:.0f} images/s ({cpu_rows['decode_mb_per_s']:.0f} MB/s in), encode "
          f"1280x720 quality 90 {cpu_rows['encode_images_per_s']:.0f} images/s "
          f"({cpu_rows['encode_mb_per_s_out']:.0f} MB/s out)")
    slots = ["--slots", args.slots] if args.slots else []
    results["imgpipe_gpu_codecs"] = imgpipe_job(args.imgpipe, folder, work / "out-gpu", "--decoder", "gpu",
                                                 "--encoder", "gpu", *slots)
    if results["imgpipe_gpu_codecs"]["exit"] != 0:
        print(f"imgpipe batch failed: {results['imgpipe_gpu_codecs']['summary']}", file=sys.stderr)
        return 1
    results["imgpipe_gpu_codecs"]["psnr_db"] = psnr_against_reference(folder, work / "out-gpu")
    results["opencv_all_cores_images_per_s"] = opencv_job(folder, work / "out-opencv")
    results["opencv_psnr_db"] = psnr_against_reference(folder, work / "out-opencv")
    gpu, cpu = results["imgpipe_gpu_codecs"], results["opencv_all_cores_images_per_s"]
    print(json.dumps(results, indent=2))
    print(f"\nfolder job, {results['files']} files of {results['mean_file_kb']:.0f} KB on average:")
    print(f"  imgpipe, GPU decode + optimized chain + GPU encode: {gpu['images_per_s']:8.0f} images/s, "
          f"{gpu['psnr_db']:.2f} dB  (exit {gpu['exit']}; whole command {gpu['wall_images_per_s']:.0f} images/s)")
    print(f"  OpenCV, {results['cores']} processes:                        {cpu:8.0f} images/s, "
          f"{results['opencv_psnr_db']:.2f} dB")
    print(f"  speed-up {gpu['images_per_s'] / cpu:.2f}x; PSNR gap {results['opencv_psnr_db'] - gpu['psnr_db']:+.2f} dB")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
