#!/usr/bin/env python3
"""ctest's matrix_table: tools/matrix_table.py on a matrix whose answers are worked out by hand.

Usage: matrix_table_test.py TOOLS/matrix_table.py"""
import json
import pathlib
import subprocess
import sys
import tempfile


def row(group, name, us, status="ok", bytes_per_frame=8e6):
    # 8 MB at 4000 GB/s: a floor of 2.00 us.
    return {"section": "matrix", "group": group, "name": name, "status": status, "us_per_frame": us,
            "bytes_per_frame": bytes_per_frame, "ceiling_gb_per_s": 4000.0,
            "reason": None if status == "ok" else "NPP has no such filter"}


def document(rows):
    return {"schema": "imgpipe-bench/1", "date": "2026-12-05T00:00:00Z", "command": "imgpipe bench --matrix",
            "device": {"available": True, "name": "Some GPU"}, "rows": rows}


# gray: every target met (batched 2.4 <= 1.3 x 2 = 2.6, one frame 3.9 <= 4, ahead of naive, no NPP row).
# flip=h: one frame 5.0 us (2.50x its floor), batched 3.0 (1.50x), and behind NPP one frame (5.0 against 4.5).
NOW = document([
    row("1920x1080 gray", "naive", 6.0), row("1920x1080 gray", "optimized", 3.9),
    row("1920x1080 gray", "optimized x16", 2.4), row("1920x1080 gray", "naive exact", 6.5),
    row("1920x1080 gray", "optimized exact", 4.4), row("1920x1080 gray", "optimized x16 exact", 2.8),
    row("1920x1080 gray", "npp", None, status="skipped"),
    row("1920x1080 flip=h", "naive", 9.0), row("1920x1080 flip=h", "optimized", 5.0),
    row("1920x1080 flip=h", "optimized x16", 3.0), row("1920x1080 flip=h", "npp", 4.5),
    {"section": "ceiling", "group": "ceilings", "name": "d2d", "status": "ok", "us_per_frame": None},
])
BEFORE = document([row("1920x1080 flip=h", "optimized", 6.25)])


def run(tool, *args):
    return subprocess.run([sys.executable, tool, *map(str, args)], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        now, before, other = (pathlib.Path(folder) / name for name in ("now.json", "before.json", "other.json"))
        now.write_text(json.dumps(NOW))
        before.write_text(json.dumps(BEFORE))
        other.write_text(json.dumps({"schema": "something else"}))

        fast = run(tool, now)
        assert fast.returncode == 0, fast.stderr
        lines = fast.stdout.splitlines()
        assert lines[0] == "Some GPU, 2026-12-05T00:00:00Z: `imgpipe bench --matrix`", lines[0]
        assert "| 1920x1080 | `gray` | 2.00 | 6.00 | 3.90 | 2.40 | - | 1.95x | 1.20x | 1.54x | - |" in lines, fast.stdout
        assert "| 1920x1080 | `flip=h` | 2.00 | 9.00 | 5.00 | 3.00 | 4.50 | 2.50x | 1.50x | 1.80x | 0.90x |" in lines
        assert "| size | chain | floor | naive | optimized | batched (16) | NPP |" in fast.stdout
        missed = [line for line in lines if line.startswith("- ")]
        assert missed == [
            "- 1920x1080 `flip=h`: batched 1.50x its floor (target 1.3x)",
            "- 1920x1080 `flip=h`: one frame 2.50x its floor (target 2.0x)",
            "- 1920x1080 `flip=h`: one frame behind NPP (5.00 against 4.50 us)",
        ], missed

        exact = run(tool, now, "--exact", "--sizes", "1920x1080")
        assert "| 1920x1080 | `gray` | 2.00 | 6.50 | 4.40 | 2.80 | - | 2.20x | 1.40x | 1.48x | - |" in exact.stdout, \
            exact.stdout
        assert "exact arithmetic" in exact.stdout.splitlines()[0]

        compared = run(tool, now, "--before", before)
        assert "| 6.25 → 5.00 |" in compared.stdout, compared.stdout

        assert "| 1920x1080 |" not in run(tool, now, "--sizes", "3840x2160").stdout

        refused = run(tool, other)
        assert refused.returncode != 0 and "not an imgpipe bench JSON" in refused.stderr, refused.stderr
        empty = pathlib.Path(folder) / "empty.json"
        empty.write_text(json.dumps(document([])))
        nothing = run(tool, empty)
        assert nothing.returncode == 3 and "no matrix row was measured" in nothing.stderr, nothing.stderr
    print("matrix_table: every case as worked out")


if __name__ == "__main__":
    main()
