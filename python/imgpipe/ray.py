"""A folder through imgpipe on a Ray cluster, with Ray Data as the distributed engine.

    import imgpipe.ray
    summary = imgpipe.ray.run_folder("/shared/photos", "/shared/out", "resize=1280x720,gaussian=5:1.0",
                                     backend="optimized", concurrency=8)   # 8 actors, one GPU each

The driver lists the input once and plans every output with `imgpipe batch`'s own planner
(`imgpipe.plan_outputs`): the output folder outside the input (compared by identity, so a link or a bind mount
into the input counts), one input per output (a later input whose output an earlier one makes fails, naming it),
no output where a folder is or must be, existing outputs refused, skipped or replaced. A pool of actors each
holds one `imgpipe.Pipeline` (one GPU each for the GPU backends); Ray Data streams the planned files to them in
batches, and each actor returns one status row per file. A file that fails is a row with its message, never a
failed job. Outputs go to `output_dir`, which every worker must be able to write (a shared file system), under
the input's relative path, written by `imgpipe batch`'s own writer: through a temporary name renamed into place,
never into the input folder through a link or a mount inside the output folder. Two ways to read:

- files (a local or shared folder): Ray Data carries only relative paths; each actor runs its batch of files as
  imgpipe's own job (`Pipeline.run_files`: decode and encode on several threads, copies overlapped with the
  chain, the GIL released), so the files' bytes never pass through the object store.
- bytes (a local folder, an object-store prefix such as s3://, or any URL pyarrow reads): Ray Data reads the
  listed files (`read_binary_files`) and passes their bytes through the object store; each actor decodes, runs
  the chain, encodes and writes file by file (`imgpipe.write_output`).
"""
import math
import os
import re

import numpy as np

import imgpipe

IMAGE_EXTENSIONS = ["ppm", "png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _is_url(path):
    return bool(_URL.match(path))


def _without_file_scheme(path):
    """A file:// URL as the local path it names, so that it gets a local folder's rules (the output kept out of
    it, links into it refused); anything else as it is."""
    if not path.lower().startswith("file://"):
        return path
    import urllib.parse

    return urllib.parse.unquote(urllib.parse.urlparse(path).path)


def _actor_pipeline(ops, backend):
    """The actor's Pipeline, on the GPU Ray gave it: Ray limits CUDA_VISIBLE_DEVICES to the actor's GPUs, so its
    one GPU is device 0 inside the actor."""
    if backend == "cpu":
        return imgpipe.Pipeline(ops, backend=backend)
    return imgpipe.Pipeline(ops, backend=backend, device=0)


class _FileWorker:
    """One Pipeline per actor, planned once; called by map_batches on batches of {'path'} relative to the input.

    The driver planned only files whose outputs did not exist, so without overwrite an output already there was
    written by this job: by an attempt at this batch that Ray retries after its actor died. run_files skips it
    (skip_existing) and the file counts as done."""

    def __init__(self, ops, backend, input_root, output_dir, extension, quality, overwrite, jobs):
        self.pipeline = _actor_pipeline(ops, backend)
        self.input_root = input_root
        self.output_dir = output_dir
        self.extension = extension
        self.quality = quality
        self.overwrite = overwrite
        self.jobs = jobs
        self.device_failure = ""

    def __call__(self, batch):
        if self.device_failure:
            # A sticky CUDA error outlives the call that met it: leave, so that Ray starts a fresh actor and runs
            # this batch there.
            os._exit(1)
        files = [str(path) for path in batch["path"]]
        result = self.pipeline.run_files(self.input_root, files, self.output_dir, format=self.extension,
                                         quality=self.quality, jobs=self.jobs, overwrite=self.overwrite,
                                         skip_existing=not self.overwrite)
        failures = {os.path.normpath(path): message for path, message in result["errors"]}
        paths = [os.path.join(self.input_root, f) for f in files]
        messages = [failures.get(os.path.normpath(path), "") for path in paths]
        if result["device_failure"]:
            self.device_failure = result["device_failure"]
            outputs = [output for _, output, _, _ in imgpipe.plan_outputs(self.input_root, self.output_dir, files,
                                                                          format=self.extension, overwrite=True)]
            messages = [message or self.unfinished_message(path, output)
                        for message, path, output in zip(messages, paths, outputs)]
        statuses = ["failed" if message else "done" for message in messages]
        return {"path": np.asarray(paths), "status": np.asarray(statuses), "message": np.asarray(messages)}

    def unfinished_message(self, path, output):
        """After a device failure, "" for a file whose output this job wrote (without overwrite, an output there),
        else why it may not be written: the result counts the files done but does not name them."""
        if not self.overwrite and os.path.lexists(output):
            return ""
        return f"{path}: not processed: the device failed: {self.device_failure}"


class _BytesWorker:
    """One Pipeline per actor, planned once; called by map_batches on batches of {'bytes', 'path'}.

    Each batch is planned again for its outputs, as the driver planned it; as with _FileWorker, without overwrite
    an output already there was written by this job (a retried batch), so the file is skipped and counts as done.
    remote_input: the files come from a URL, not from a folder here that the outputs must stay out of."""

    def __init__(self, ops, backend, input_root, output_dir, extension, quality, overwrite, remote_input=False):
        self.pipeline = _actor_pipeline(ops, backend)
        self.input_root = input_root.rstrip("/")
        self.output_dir = output_dir
        self.extension = extension
        self.quality = quality
        self.overwrite = overwrite
        self.remote_input = remote_input

    def relative(self, path):
        prefix = self.input_root + "/"
        return path[len(prefix):] if path.startswith(prefix) else os.path.basename(path)

    def process(self, data, output):
        frame = self.pipeline(imgpipe.decode(data))
        encoded = imgpipe.encode(frame, os.path.splitext(output)[1].lower(), quality=self.quality)
        imgpipe.write_output(output, encoded, input_dir=None if self.remote_input else self.input_root,
                             overwrite=self.overwrite)

    def __call__(self, batch):
        paths = [str(path) for path in batch["path"]]
        plans = imgpipe.plan_outputs(self.input_root, self.output_dir, [self.relative(path) for path in paths],
                                     format=self.extension, overwrite=self.overwrite,
                                     skip_existing=not self.overwrite, remote_input=self.remote_input)
        statuses, messages = [], []
        for data, path, (_, output, skip, error) in zip(batch["bytes"], paths, plans):
            message = error
            if not error and not skip:
                try:
                    self.process(data, output)
                except Exception as failure:  # one file's failure is its row, not the job's
                    # The batch job's messages name the file they are about: the output where writing failed.
                    named = str(failure).startswith((path, output))
                    message = str(failure) if named else f"{path}: {failure}"
            statuses.append("failed" if message else "done")
            messages.append(message)
        return {"path": np.asarray(paths), "status": np.asarray(statuses), "message": np.asarray(messages)}


def _list_url(url):
    """(filesystem, root, names): the files under a URL with an image extension, relative to it, sorted."""
    import pyarrow.fs

    filesystem, root = pyarrow.fs.FileSystem.from_uri(url)
    root = root.rstrip("/")
    infos = filesystem.get_file_info(pyarrow.fs.FileSelector(root, recursive=True))
    names = sorted(info.path[len(root) + 1:] for info in infos
                   if info.type == pyarrow.fs.FileType.File and info.extension.lower() in IMAGE_EXTENSIONS)
    return filesystem, root, names


def _utf8(name):
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:  # os.fsdecode's surrogates for bytes that are not UTF-8
        return False


def _plan(root, names, output_dir, extension, overwrite, skip_existing):
    """(names to run, files skipped, [(path, message)] failed on the driver): the batch job's plan
    (imgpipe.plan_outputs) of the folder root as it lists it (names None), or of the names listed under a URL.
    A file the plan will not write fails with the batch job's message (an entry that cannot be read as an image
    file too: Ray's read task would stop the whole job on it), and so does a name that is not UTF-8 (Ray Data
    carries names in Arrow tables, whose strings are UTF-8)."""
    work, skipped, failed = [], 0, []
    plans = imgpipe.plan_outputs(root, output_dir, names, format=extension, overwrite=overwrite,
                                 skip_existing=skip_existing, remote_input=names is not None)
    for name, _, skip, error in plans:
        path = os.path.join(root, name)
        if error:
            failed.append((path, error))
        elif skip:
            skipped += 1
        elif not _utf8(path):
            failed.append((path, f"{path}: the name is not valid UTF-8, which Ray Data cannot carry; imgpipe batch "
                                 "and Pipeline.run_folder read it"))
        else:
            work.append(name)
    return work, skipped, failed


def _resolve_backend(backend, cluster_gpus):
    """The actors' backend: ValueError for an unknown name, or a GPU backend where it cannot run (Ray would wait
    for ever for a GPU the cluster does not have)."""
    compiled_in = {b["name"]: b["compiled_in"] for b in imgpipe.backends()}
    if backend != "auto" and backend not in compiled_in:
        raise ValueError(f"backend {backend!r}: auto or one of {', '.join(compiled_in)}")
    if backend == "auto":
        return "optimized" if cluster_gpus and compiled_in.get("optimized") else "cpu"
    if backend != "cpu" and not compiled_in[backend]:
        raise ValueError(f"backend {backend!r}: this imgpipe was built without CUDA; backend='cpu' runs here")
    if backend != "cpu" and not cluster_gpus:
        raise ValueError(f"backend {backend!r} needs a GPU per actor and the Ray cluster has none "
                         "(ray.cluster_resources() lists no 'GPU'); backend='cpu' runs on CPUs")
    return backend


def _batching(files, actors, batch_size, default_batch_size):
    """(batch_size, blocks): batches of default_batch_size, smaller where the folder is too small to give every
    actor one (Ray Data bundles blocks up to batch_size for an actor, so small blocks alone would not spread
    it), and a few blocks per actor."""
    if batch_size is None:
        batch_size = max(1, min(default_batch_size, math.ceil(files / actors)))
    return batch_size, max(1, min(math.ceil(files / batch_size), 4 * actors))


def run_folder(input_path, output_dir, ops, *, backend="auto", format="same", quality=95, overwrite=False,
               skip_existing=False, concurrency=None, batch_size=None, read_blocks=None, cpus_per_actor=1.0,
               read="auto", jobs=0):
    """Every image under input_path through the chain into output_dir on the Ray cluster `ray.init()` joined.

    The driver lists and plans input_path as the batch job does (a local folder through `imgpipe.plan_outputs`; a
    URL through pyarrow, its names then planned against output_dir), resolves a relative input_path and output_dir
    against its own working directory, and raises ValueError before any actor starts where output_dir is input_path
    or inside it (or the reverse), as `imgpipe batch` does. read: "files" (the actors read the files themselves;
    input_path on a file system every worker reads), "bytes" (Ray Data reads them and passes their bytes through the
    object store), or "auto": files for a local path, bytes for a URL (s3://, gs://, ...). backend: auto (optimized
    where the cluster has GPUs), cpu, naive or optimized; ValueError for a GPU backend on a cluster without GPUs.
    overwrite replaces existing outputs, skip_existing skips them (counted in 'skipped'); otherwise they fail.
    concurrency: actors, or (min, max) for an autoscaling pool (default: one per GPU of the cluster for a GPU
    backend, else 1). Each actor reserves cpus_per_actor CPUs (and one GPU for a GPU backend); with read="bytes",
    Ray Data's read tasks need CPUs too, so the actors' reservations must leave at least one CPU of the cluster
    free, or the job waits for ever. batch_size: files per actor call (default 64 for files, 16 for bytes, fewer
    where the folder is too small to give every actor a batch). read_blocks: the blocks the work is split into
    (None: Ray's choice for bytes, a few per actor for files; on a small folder Ray's choice of one read task per
    few files costs more than the images, so a few blocks per actor is faster, docs/python.md). jobs: each actor's
    decode/encode threads with read="files" (0: one per hardware thread of its node). Returns {'done', 'failed',
    'skipped', 'errors': [(path, message)], 'seconds'}.
    """
    import time

    import ray

    input_path, output_dir = _without_file_scheme(input_path), _without_file_scheme(output_dir)
    if read == "auto":
        read = "bytes" if _is_url(input_path) else "files"
    if read not in ("files", "bytes"):
        raise ValueError(f"read: 'auto', 'files' or 'bytes', not {read!r}")
    if read == "files" and _is_url(input_path):
        raise ValueError(f"read='files' reads a folder every worker sees, not a URL ({input_path}); read='bytes' "
                         "reads URLs")
    if _is_url(output_dir):
        raise ValueError(f"output_dir: a folder every worker writes (a shared file system), not a URL ({output_dir})")
    if overwrite and skip_existing:
        raise ValueError("overwrite and skip_existing contradict each other")
    # A bad chain fails here, before the cluster does any work; on the cpu backend, which sets up nothing on a GPU,
    # where the build has it (not without OpenCV).
    cpu_built = any(b["name"] == "cpu" and b["compiled_in"] for b in imgpipe.backends())
    imgpipe.Pipeline(ops, backend="cpu" if cpu_built else "auto")
    gpus = int(ray.cluster_resources().get("GPU", 0))
    backend = _resolve_backend(backend, gpus)
    gpu = backend != "cpu"
    if concurrency is None:
        concurrency = max(1, gpus) if gpu else 1
    actors = max(concurrency) if isinstance(concurrency, tuple) else concurrency
    output_dir = os.path.abspath(output_dir)
    start = time.perf_counter()
    if _is_url(input_path):
        filesystem, root, listed = _list_url(input_path)
    else:
        import pyarrow.fs

        filesystem, root, listed = pyarrow.fs.LocalFileSystem(), os.path.abspath(input_path), None
    names, skipped, errors = _plan(root, listed, output_dir, format, overwrite, skip_existing)
    done = 0
    if names:
        batch_size, blocks = _batching(len(names), actors, batch_size, 64 if read == "files" else 16)
        if read == "files":
            work = ray.data.from_items([{"path": name} for name in names],
                                       override_num_blocks=read_blocks or blocks)
            worker, arguments = _FileWorker, dict(jobs=jobs)
        else:
            work = ray.data.read_binary_files([os.path.join(root, name) for name in names], filesystem=filesystem,
                                              include_paths=True, override_num_blocks=read_blocks)
            worker, arguments = _BytesWorker, dict(remote_input=_is_url(input_path))
        statuses = work.map_batches(
            worker,
            fn_constructor_kwargs=dict(ops=ops, backend=backend, input_root=root, output_dir=output_dir,
                                       extension=format, quality=quality, overwrite=overwrite, **arguments),
            batch_size=batch_size, concurrency=concurrency, num_gpus=1 if gpu else 0, num_cpus=cpus_per_actor,
            batch_format="numpy",
        )
        # One streaming pass: the status rows are counted as they arrive; only failures are kept.
        for batch in statuses.iter_batches(batch_size=1024, batch_format="numpy"):
            ok = batch["status"] == "done"
            done += int(ok.sum())
            errors += [(str(path), str(message)) for path, message in zip(batch["path"][~ok], batch["message"][~ok])]
    return {"done": done, "failed": len(errors), "skipped": skipped, "errors": errors,
            "seconds": time.perf_counter() - start}
