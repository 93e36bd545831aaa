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

# Elementary streams for NVDEC, whose parser reads no container: frames 20-49 of the clip at 240x136 (136 is
# not a multiple of 16, so the decoder crops), H.264 with B-frames in BT.601 limited range and HEVC in BT.709
# full range; and FFmpeg's own RGB of frames 0, 14 and 29 of each, which the GPU decode is compared with.
excerpt="select='between(n,20,49)',setpts=N/25/TB,scale=240:136"
ffmpeg -loglevel error -y -i video/clip.mp4 -vf "$excerpt,format=yuv420p" \
  -c:v libx264 -preset medium -crf 26 -bf 2 -g 12 -f h264 video/clip.h264
ffmpeg -loglevel error -y -i video/clip.mp4 -vf "$excerpt:out_color_matrix=bt709:out_range=full,format=yuvj420p" \
  -c:v libx265 -x265-params log-level=error:colorprim=bt709:transfer=bt709:colormatrix=bt709:range=full \
  -crf 28 -f hevc video/clip.hevc
mkdir -p video/ffmpeg_rgb
for stream in clip.h264 clip.hevc; do
  for n in 0 14 29; do
    ffmpeg -loglevel error -y -i "video/$stream" -vf "select=eq(n\\,$n)" -frames:v 1 -pix_fmt rgb24 \
      "video/ffmpeg_rgb/$stream.$n.ppm"
  done
done

# The same streams in containers, for NVDEC behind libavformat. clip_remuxed.mp4 is clip.h264 muxed as it is:
# the raw stream has no presentation times, so the muxer's edit list starts the video two pictures in, and
# FFmpeg's decoders show 28 of its 30 pictures. clip_vfr.mkv is clip.hevc's frames re-encoded at a variable
# frame rate: frames 0-9 at 25 frames/s, 10-19 at 12.5, 20-29 at 50 (times 0, 0.04, ... 0.36, 0.4, 0.48, ...
# 1.12, 1.2, 1.22, ... 1.38 s).
ffmpeg -loglevel error -y -r 25 -i video/clip.h264 -c copy -fflags +bitexact video/clip_remuxed.mp4
vfr="if(lt(N,10),N/25,if(lt(N,20),0.4+(N-10)*0.08,1.2+(N-20)*0.02))"
ffmpeg -loglevel error -y -i video/clip.hevc -vf "setpts='$vfr/TB',format=yuvj420p" -fps_mode passthrough \
  -enc_time_base 1:1000 -c:v libx265 \
  -x265-params log-level=error:colorprim=bt709:transfer=bt709:colormatrix=bt709:range=full \
  -crf 28 -fflags +bitexact video/clip_vfr.mkv

# clip_open_gop.hevc is clip.hevc's frames re-encoded by x265 in open GOPs (a CRA picture every 12 frames, each
# with 3 leading RASL pictures shown before it) and cut before its second GOP, so that it starts at a CRA picture
# whose leading pictures no decoder can show: FFmpeg shows 18 of its 21 pictures. clip_open_gop.mp4 is it muxed
# as it is; the muxer's edit list also hides the CRA picture, so FFmpeg shows 17.
ffmpeg -loglevel error -y -i video/clip.hevc -c:v libx265 \
  -x265-params log-level=error:keyint=12:min-keyint=12:open-gop=1:bframes=3:b-adapt=0:scenecut=0:colorprim=bt709:transfer=bt709:colormatrix=bt709:range=full \
  -crf 28 -f hevc video/open_gop_whole.hevc
python3 - video/open_gop_whole.hevc video/clip_open_gop.hevc <<'PY'
import sys
stream = open(sys.argv[1], "rb").read()
second_vps = stream.index(b"\x00\x00\x00\x01\x40\x01", 1)  # the second GOP's parameter sets, then its CRA picture
open(sys.argv[2], "wb").write(stream[second_vps:])
PY
rm video/open_gop_whole.hevc
ffmpeg -loglevel error -y -r 25 -i video/clip_open_gop.hevc -c copy -fflags +bitexact video/clip_open_gop.mp4
