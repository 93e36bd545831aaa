"""A folder through imgpipe on a Ray cluster, with Ray Data as the distributed engine.

    import imgpipe.ray
    summary = imgpipe.ray.run_folder("s3://bucket/photos", "/shared/out", "resize=1280x720,gaussian=5:1.0",
                                     backend="optimized", concurrency=8)   # 8 actors, one GPU each

Ray Data reads the files (`read_binary_files`: local paths, S3, GCS, anything pyarrow reads), streams their
bytes in batches to a pool of actors, and each actor holds one `imgpipe.Pipeline` (one GPU each for the GPU
backends): it decodes, runs the chain, encodes and writes every file of its batch, and returns one status row
per file. A file that fails is a row with its message, never a failed job. Outputs go to `output_dir`, which
every worker must be able to write (a shared file system), under the input's relative path, through a temporary
name renamed into place, as `imgpipe batch` writes them.
"""
import os
import tempfile

import numpy as np

import imgpipe

IMAGE_EXTENSIONS = ["ppm", "png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp"]


def _without_scheme(path):
    return path.split("://", 1)[1] if "://" in path else os.path.abspath(path)


class _Worker:
    """One Pipeline per actor, planned once; called by map_batches on batches of {'bytes', 'path'}."""

    def __init__(self, ops, backend, input_root, output_dir, extension, quality, overwrite):
        self.pipeline = imgpipe.Pipeline(ops, backend=backend)
        self.input_root = input_root.rstrip("/") + "/"
        self.output_dir = output_dir
        self.extension = extension
        self.quality = quality
        self.overwrite = overwrite

    def output_path(self, path):
        relative = path[len(self.input_root):] if path.startswith(self.input_root) else os.path.basename(path)
        target = os.path.join(self.output_dir, relative)
        if self.extension != "same":
            target = os.path.splitext(target)[0] + "." + self.extension
        return target

    def process(self, data, path):
        target = self.output_path(path)
        if os.path.lexists(target) and not self.overwrite:
            raise FileExistsError(f"output {target} exists; overwrite=True replaces it")
        frame = self.pipeline(imgpipe.decode(bytes(data)))
        encoded = imgpipe.encode(frame, os.path.splitext(target)[1].lower(), quality=self.quality)
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".imgpipe-tmp-")
        try:
            with os.fdopen(handle, "wb") as f:
                f.write(encoded)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise

    def __call__(self, batch):
        statuses, messages = [], []
        for data, path in zip(batch["bytes"], batch["path"]):
            try:
                self.process(data, path)
                statuses.append("done")
                messages.append("")
            except Exception as error:  # one file's failure is its row, not the job's
                statuses.append("failed")
                messages.append(str(error) if str(error).startswith(path) else f"{path}: {error}")
        return {"path": np.asarray(batch["path"]), "status": np.asarray(statuses), "message": np.asarray(messages)}


def run_folder(input_path, output_dir, ops, *, backend="auto", format="same", quality=95, overwrite=False,
               concurrency=None, batch_size=16, read_blocks=None, cpus_per_actor=1.0):
    """Every image under input_path through the chain into output_dir on the Ray cluster `ray.init()` joined.

    concurrency: actors (default: one per GPU of the cluster for a GPU backend, else 1). Each actor reserves
    cpus_per_actor CPUs (and one GPU for a GPU backend), and Ray Data's read tasks need CPUs too: the actors'
    reservations must leave at least one CPU of the cluster free, or the job waits for ever. read_blocks: the blocks Ray Data reads the files into (None: Ray's
    choice; on a small folder Ray's choice of one task per few files costs more than the images, so a few blocks
    per actor is faster, docs/python.md). Returns {'done', 'failed', 'errors': [(path, message)], 'seconds'}.
    """
    import time

    import ray

    imgpipe.Pipeline(ops, backend="auto")  # a bad chain fails here, before the cluster does any work
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if backend == "auto":
        backend = "optimized" if gpus > 0 else "cpu"
    gpu = backend != "cpu"
    if concurrency is None:
        concurrency = max(1, gpus) if gpu else 1
    start = time.perf_counter()
    files = ray.data.read_binary_files(input_path, include_paths=True, file_extensions=IMAGE_EXTENSIONS,
                                       override_num_blocks=read_blocks)
    statuses = files.map_batches(
        _Worker,
        fn_constructor_kwargs=dict(ops=ops, backend=backend, input_root=_without_scheme(input_path),
                                   output_dir=output_dir, extension=format, quality=quality, overwrite=overwrite),
        batch_size=batch_size, concurrency=concurrency, num_gpus=1 if gpu else 0, num_cpus=cpus_per_actor,
        batch_format="numpy",
    )
    # One streaming pass: the status rows are counted as they arrive; only failures are kept.
    done, errors = 0, []
    for batch in statuses.iter_batches(batch_size=1024, batch_format="numpy"):
        ok = batch["status"] == "done"
        done += int(ok.sum())
        errors += [(str(path), str(message)) for path, message in zip(batch["path"][~ok], batch["message"][~ok])]
    return {"done": done, "failed": len(errors), "errors": errors, "seconds": time.perf_counter() - start}
