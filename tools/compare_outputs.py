#!/usr/bin/env python3
# Largest per-value difference between the PPM outputs of two imgpipe batch runs (same file names), e.g. a GPU
# backend against --backend cpu:  tools/compare_outputs.py CPU_DIR GPU_DIR. Needs numpy.
import sys, os, numpy as np
def read_ppm(p):
    d = open(p, 'rb').read()
    parts = []; i = 0
    while len(parts) < 4:
        while d[i:i+1].isspace(): i += 1
        if d[i:i+1] == b'#':
            while d[i:i+1] != b'\n': i += 1
            continue
        j = i
        while not d[j:j+1].isspace(): j += 1
        parts.append(d[i:j]); i = j
    i += 1
    w, h = int(parts[1]), int(parts[2])
    return np.frombuffer(d[i:i+w*h*3], np.uint8).reshape(h, w, 3)
def main():
    if len(sys.argv) != 3:
        print("usage: tools/compare_outputs.py CPU_DIR GPU_DIR", file=sys.stderr)
        return 2
    cpu, gpu = sys.argv[1], sys.argv[2]
    names = sorted(f for f in os.listdir(cpu) if os.path.isfile(os.path.join(cpu, f)))
    missing = [f for f in names if not os.path.isfile(os.path.join(gpu, f))]
    if not names or missing:
        print(f"{gpu}: nothing to compare: " + (f"{cpu} holds no files" if not names else
                                                 f"missing {', '.join(missing)}"), file=sys.stderr)
        return 1
    worst = 0; over = 0; total = 0
    for f in names:
        a = read_ppm(os.path.join(cpu, f)).astype(int); b = read_ppm(os.path.join(gpu, f)).astype(int)
        assert a.shape == b.shape, (f, a.shape, b.shape)
        d = np.abs(a - b); worst = max(worst, int(d.max())); over += int((d > 1).sum()); total += d.size
    print(f"{gpu}: max |diff| {worst}, values off by more than 1: {over} of {total}")
    return 0


sys.exit(main())
