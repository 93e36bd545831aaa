#!/usr/bin/env bash
# Rebuilds data/ from Debian's python3-skimage sample images. Needs python3-skimage, ffmpeg and a built
# imgpipe (for the PPM copies, which must be exactly what imgpipe decodes): data/make_data.sh [IMGPIPE]
set -euo pipefail
cd "$(dirname "$0")"
skimage=/usr/lib/python3/dist-packages/skimage/data
imgpipe=${1:-../build/apps/imgpipe}
mkdir -p images ppm video

# Kept as shipped: a JPEG, and a grayscale PNG (so the batch also sees a one-channel input).
cp "$skimage/rocket.jpg" "$skimage/coins.png" images/
# chelsea.png loses only its iCCP chunk, a profile libpng rejects with a warning on every read
# ("known incorrect sRGB profile"); every other chunk, pixels included, is copied byte for byte.
python3 - "$skimage/chelsea.png" images/chelsea.png <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
out, pos = bytearray(data[:8]), 8
while pos < len(data):
    length, kind = struct.unpack('>I4s', data[pos:pos + 8])
    if kind != b'iCCP':
        out += data[pos:pos + 12 + length]
    pos += 12 + length
open(sys.argv[2], 'wb').write(out)
PY
# The two largest PNGs become high-quality JPEGs to keep data/ small.
for name in astronaut coffee; do
  ffmpeg -loglevel error -y -i "$skimage/$name.png" -q:v 2 "images/$name.jpg"
done

# PPM copies, decoded by imgpipe itself (two flips are the identity), for builds without OpenCV.
"$imgpipe" batch images ppm --ops flip=h,flip=h --format ppm --backend cpu --overwrite

# A 4.6 s, 640x360, 25 fps H.264 clip: four photos, 1.5 s each, cross-faded.
fit='scale=640:360:force_original_aspect_ratio=increase,crop=640:360,setsar=1,fps=25,format=yuv420p'
ffmpeg -loglevel error -y \
  -loop 1 -t 1.5 -i images/astronaut.jpg -loop 1 -t 1.5 -i images/chelsea.png \
  -loop 1 -t 1.5 -i images/coffee.jpg -loop 1 -t 1.5 -i images/rocket.jpg \
  -filter_complex "[0]$fit[a];[1]$fit[b];[2]$fit[c];[3]$fit[d];\
[a][b]xfade=transition=fade:duration=0.5:offset=1[ab];\
[ab][c]xfade=transition=fade:duration=0.5:offset=2[abc];\
[abc][d]xfade=transition=fade:duration=0.5:offset=3[v]" \
  -map '[v]' -c:v libx264 -preset slow -crf 28 -movflags +faststart -an video/clip.mp4
