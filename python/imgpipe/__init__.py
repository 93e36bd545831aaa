"""imgpipe: op chains over RGB frames on the CPU (OpenCV) or a CUDA GPU.

    import imgpipe
    p = imgpipe.Pipeline("resize=1280x720,gaussian=5:1.0", backend="optimized")
    out = p(frame)                  # NumPy (H, W, 3) or (N, H, W, 3) uint8 -> NumPy
    out = p(cupy_frames, stream=s)  # CuPy -> CuPy, torch -> torch (any DLPack device array), on stream s
    p(numba_frames, out=numba_out)  # __cuda_array_interface__ (Numba) too, in and out
    p.run_folder("photos", "out")   # the batch job: {'done', 'failed', 'errors', ...}; JPEG on the GPU where
                                    # imgpipe.gpu_jpeg()['usable'] (decoder=, encoder= choose)
    p.run_files("photos", imgpipe.list_images("photos")[:100], "out")   # the job on chosen files
    imgpipe.backends()
    frame = imgpipe.decode(data); data = imgpipe.encode(frame, ".png")   # file bytes <-> frames
    imgpipe.plan_outputs("photos", "out")   # the batch job's plan: [(name, output, skip, error)]
    imgpipe.write_output(output, data, input_dir="photos")   # one output, written as the batch job writes it
    with imgpipe.VideoWriter("small.mkv", fps=25, audio_from="clip.mp4") as writer:   # a video's frames and their
        for frame, seconds in imgpipe.VideoReader("clip.mp4"):           # times through the chain, with its sound
            writer.write(p(frame), seconds)
    imgpipe.ray.run_folder(...)     # the same on a Ray cluster (imgpipe/ray.py)
"""
from ._imgpipe import (Pipeline, VideoReader, VideoWriter, __version__, backends, decode, encode, gpu_jpeg,
                       list_image_entries, list_images, plan_outputs, write_output)

__all__ = ["Pipeline", "VideoReader", "VideoWriter", "__version__", "backends", "decode", "encode", "gpu_jpeg",
           "list_image_entries", "list_images", "plan_outputs", "write_output"]
