#!/usr/bin/env bash
# The 1080p clips imgpipe_bench_video measures NVDEC with (docs/video.md), made with Debian's ffmpeg from the
# photographs in data/images: each photo zoomed and panned for 3 s at 25 fps, four photos, 12 s; H.264 High at
# 4.5 Mbit/s with B-frames, and HEVC Main at 3.4 Mbit/s, both as elementary streams. The 12 s are repeated 4
# times (an elementary stream concatenates: each copy starts with its headers and a keyframe), 1200 frames.
#   tools/make_bench_video.sh OUTPUT_FOLDER
set -euo pipefail
out=$(realpath -m "${1:?usage: tools/make_bench_video.sh OUTPUT_FOLDER}")  # before the cd below
cd "$(dirname "$0")/../data/images"
mkdir -p "$out"
zoom="scale=3840:2160:force_original_aspect_ratio=increase,crop=3840:2160,\
zoompan=z='1+0.003*on':x='iw/2-(iw/zoom/2)+on*2':y='ih/2-(ih/zoom/2)':d=75:s=1920x1080:fps=25,setsar=1,format=yuv420p"
once=$(mktemp -d)
trap 'rm -rf "$once"' EXIT
ffmpeg -loglevel error -y -i astronaut.jpg -i coffee.jpg -i rocket.jpg -i chelsea.png \
  -filter_complex "[0]$zoom[a];[1]$zoom[b];[2]$zoom[c];[3]$zoom[d];[a][b][c][d]concat=n=4:v=1[v]" -map '[v]' \
  -c:v libx264 -preset medium -profile:v high -b:v 4.5M -maxrate 6M -bufsize 9M -bf 3 -g 50 -f h264 "$once/1080p.h264"
ffmpeg -loglevel error -y -i "$once/1080p.h264" -c:v libx265 -preset fast -b:v 3.4M \
  -x265-params log-level=error:keyint=50 -f hevc "$once/1080p.hevc"
for clip in 1080p.h264 1080p.hevc; do
  cat "$once/$clip" "$once/$clip" "$once/$clip" "$once/$clip" > "$out/$clip"
done
ls -l "$out"
