"""A folder through imgpipe on a Ray cluster, with Ray Data as the distributed engine.

    import imgpipe.ray
    summary = imgpipe.ray.run_folder("/shared/photos", "/shared/out", "resize=1280x720,gaussian=5:1.0",
                                     backend="optimized", concurrency=8)   # 8 actors, one GPU each

A pool of actors each holds one `imgpipe.Pipeline` (one GPU each for the GPU backends); Ray Data streams the work
to them in batches, and each actor returns one status row per file. A file that fails is a row with its
message, never a failed job. Outputs go to `output_dir`, which every worker must be able to write (a shared
file system), under the input's relative path, through a temporary name renamed into place, as `imgpipe batch`
writes them. Two ways to read:

- files (a local or shared folder): the driver lists the folder once (`imgpipe.list_images`) and Ray Data
  carries only relative paths; each actor runs its batch of files as imgpipe's own job (`Pipeline.run_files`:
  decode and encode on several threads, copies overlapped with the chain, the GIL released), so the files'
  bytes never pass through the object store.
- bytes (an object-store prefix such as s3://, or any URL pyarrow reads): Ray Data reads the files
  (`read_binary_files`) and passes their bytes through the object store; each actor decodes, runs the chain,
  encodes and writes file by file.
"""
import os
import tempfile

import numpy as np

import imgpipe

IMAGE_EXTENSIONS = ["ppm", "png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp"]


def _without_scheme(path):
    return path.split("://", 1)[1] if "://" in path else os.path.abspath(path)


def _actor_pipeline(ops, backend):
    """The actor's Pipeline, on the GPU Ray gave it: Ray limits CUDA_VISIBLE_DEVICES to the actor's GPUs, so its
    one GPU is device 0 inside the actor."""
    if backend == "cpu":
        return imgpipe.Pipeline(ops, backend=backend)
    return imgpipe.Pipeline(ops, backend=backend, device=0)


class _FileWorker:
    """One Pipeline per actor, planned once; called by map_batches on batches of {'path'} relative to the input."""

    def __init__(self, ops, backend, input_root, output_dir, extension, quality, overwrite, jobs):
        self.pipeline = _actor_pipeline(ops, backend)
        self.input_root = input_root
        self.output_dir = output_dir
        self.extension = extension
        self.quality = quality
        self.overwrite = overwrite
        self.jobs = jobs

    def __call__(self, batch):
        files = [str(path) for path in batch["path"]]
        result = self.pipeline.run_files(self.input_root, files, self.output_dir, format=self.extension,
                                         quality=self.quality, jobs=self.jobs, overwrite=self.overwrite)
        failures = {os.path.normpath(path): message for path, message in result["errors"]}
        paths = [os.path.join(self.input_root, f) for f in files]
        messages = [failures.get(os.path.normpath(path), "") for path in paths]
        statuses = ["failed" if message else "done" for message in messages]
        return {"path": np.asarray(paths), "status": np.asarray(statuses), "message": np.asarray(messages)}


class _BytesWorker:
    """One Pipeline per actor, planned once; called by map_batches on batches of {'bytes', 'path'}."""

    def __init__(self, ops, backend, input_root, output_dir, extension, quality, overwrite):
        self.pipeline = _actor_pipeline(ops, backend)
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
               concurrency=None, batch_size=None, read_blocks=None, cpus_per_actor=1.0, read="auto", jobs=0):
    """Every image under input_path through the chain into output_dir on the Ray cluster `ray.init()` joined.

    read: "files" (the actors read the files themselves; input_path on a file system every worker reads),
    "bytes" (Ray Data reads them and passes their bytes through the object store), or "auto": files for a local
    path, bytes for a URL (s3://, gs://, ...). concurrency: actors (default: one per GPU of the cluster for a GPU
    backend, else 1). Each actor reserves cpus_per_actor CPUs (and one GPU for a GPU backend); with read="bytes",
    Ray Data's read tasks need CPUs too, so the actors' reservations must leave at least one CPU of the cluster
    free, or the job waits for ever. batch_size: files per actor call (default 64 for files, 16 for bytes).
    read_blocks: the blocks the work is split into (None: Ray's choice for bytes, enough batches for every actor
    for files; on a small folder Ray's choice of one read task per few files costs more than the images, so a few
    blocks per actor is faster, docs/python.md). jobs: each actor's decode/encode threads with read="files" (0:
    one per hardware thread of its node). Returns {'done', 'failed', 'errors': [(path, message)], 'seconds'}.
    """
    import time

    import ray

    imgpipe.Pipeline(ops, backend="auto")  # a bad chain fails here, before the cluster does any work
    if read == "auto":
        read = "bytes" if "://" in input_path else "files"
    if read not in ("files", "bytes"):
        raise ValueError(f"read: 'auto', 'files' or 'bytes', not {read!r}")
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if backend == "auto":
        backend = "optimized" if gpus > 0 else "cpu"
    gpu = backend != "cpu"
    if concurrency is None:
        concurrency = max(1, gpus) if gpu else 1
    if batch_size is None:
        batch_size = 64 if read == "files" else 16
    start = time.perf_counter()
    if read == "files":
        root = _without_scheme(input_path)
        files = imgpipe.list_images(root)
        blocks = read_blocks or max(1, min(len(files) // batch_size, 4 * concurrency))
        work = ray.data.from_items([{"path": f} for f in files], override_num_blocks=blocks)
        worker, arguments = _FileWorker, dict(input_root=root, jobs=jobs)
    else:
        work = ray.data.read_binary_files(input_path, include_paths=True, file_extensions=IMAGE_EXTENSIONS,
                                          override_num_blocks=read_blocks)
        worker, arguments = _BytesWorker, dict(input_root=_without_scheme(input_path))
    statuses = work.map_batches(
        worker,
        fn_constructor_kwargs=dict(ops=ops, backend=backend, output_dir=output_dir, extension=format,
                                   quality=quality, overwrite=overwrite, **arguments),
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
