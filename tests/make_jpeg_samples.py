#!/usr/bin/env python3
"""JPEG files for the GPU JPEG tests (tests/test_gpu_jpeg.cpp), each with what OpenCV's decoder makes of it.

Usage: make_jpeg_samples.py OUT_DIR DATA_DIR

Writes OUT_DIR/NAME.jpg and OUT_DIR/NAME.ppm (cv2.imread's pixels as RGB, EXIF orientation applied) for the
sample photographs in DATA_DIR/images and variants made from them: one scaled to 1920x1080 at quality 90 (the
kind of file the benchmark's folder holds), an odd size, 4:2:2 and 4:4:4 chroma, progressive, grayscale, and
every EXIF orientation from 2 to 8. OUT_DIR/samples.txt lists the names, one per line. Exits with 77 (ctest: skipped)
when OpenCV's Python module is missing, or older than 4.7 (Debian 12's 4.6), whose encoder cannot choose the
chroma subsampling; the GPU machine has a newer one, the C++ build there has no OpenCV."""
import pathlib
import struct
import sys

try:
    import cv2
    import numpy as np
except ImportError as missing:
    print(f"skipped: {missing}; the GPU JPEG tests compare against OpenCV's Python module (pip install "
          "opencv-python-headless)")
    sys.exit(77)
if not hasattr(cv2, "IMWRITE_JPEG_SAMPLING_FACTOR"):
    print(f"skipped: OpenCV's Python module {cv2.__version__} cannot choose the JPEG chroma subsampling (4.7 or "
          "later can); the GPU JPEG tests need 4:2:2 and 4:4:4 samples (pip install opencv-python-headless)")
    sys.exit(77)


def with_exif_orientation(jpeg: bytes, orientation: int) -> bytes:
    """The JPEG with an APP1 Exif segment right after SOI holding one IFD entry: Orientation (0x0112)."""
    tiff = b"MM\x00\x2a" + struct.pack(">I", 8) + struct.pack(">H", 1)
    tiff += struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(">I", 0)
    payload = b"Exif\x00\x00" + tiff
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def write_ppm(path: pathlib.Path, rgb: np.ndarray) -> None:
    height, width = rgb.shape[:2]
    path.write_bytes(f"P6\n{width} {height}\n255\n".encode() + np.ascontiguousarray(rgb).tobytes())


def main() -> int:
    out, data = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    samples = {}
    for photo in sorted((data / "images").glob("*.jpg")):
        samples[photo.stem] = photo.read_bytes()
    astronaut = cv2.imread(str(data / "images" / "astronaut.jpg"), cv2.IMREAD_COLOR)
    rocket = cv2.imread(str(data / "images" / "rocket.jpg"), cv2.IMREAD_COLOR)

    def encode(image, *params):
        ok, encoded = cv2.imencode(".jpg", image, list(params))
        assert ok
        return encoded.tobytes()

    hd = cv2.resize(rocket, (1920, 1080), interpolation=cv2.INTER_CUBIC)
    samples["rocket_1080p_q90"] = encode(hd, cv2.IMWRITE_JPEG_QUALITY, 90)
    samples["astronaut_odd_333x217"] = encode(astronaut[41:258, 17:350], cv2.IMWRITE_JPEG_QUALITY, 92)
    samples["rocket_422"] = encode(rocket, cv2.IMWRITE_JPEG_QUALITY, 90,
                                   cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422)
    samples["astronaut_444"] = encode(astronaut, cv2.IMWRITE_JPEG_QUALITY, 95,
                                      cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444)
    samples["rocket_progressive"] = encode(rocket, cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1)
    samples["astronaut_gray"] = encode(cv2.cvtColor(astronaut, cv2.COLOR_BGR2GRAY), cv2.IMWRITE_JPEG_QUALITY, 95)
    odd = encode(astronaut[0:301, 0:203], cv2.IMWRITE_JPEG_QUALITY, 95)  # not square: every turn shows
    for orientation in range(2, 9):
        samples[f"astronaut_exif{orientation}"] = with_exif_orientation(odd, orientation)

    for name, jpeg in samples.items():
        (out / f"{name}.jpg").write_bytes(jpeg)
        decoded = cv2.imread(str(out / f"{name}.jpg"), cv2.IMREAD_COLOR)
        write_ppm(out / f"{name}.ppm", cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB))
    (out / "samples.txt").write_text("".join(f"{name}\n" for name in samples))
    print(f"{len(samples)} JPEG samples and OpenCV's decodes of them in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
