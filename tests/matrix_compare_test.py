#!/usr/bin/env python3
"""ctest's matrix_compare: tools/matrix_compare.py on runs whose answers are worked out by hand.

Usage: matrix_compare_test.py TOOLS/matrix_compare.py"""
import json
import lzma
import pathlib
import subprocess
import sys
import tempfile


def document(times, device="Some GPU"):
    rows = [{"section": "matrix", "group": group, "name": name, "status": "ok", "us_per_frame": us}
            for (group, name), us in times.items()]
    rows.append({"section": "matrix", "group": "1920x1080 gray", "name": "npp", "status": "skipped",
                 "us_per_frame": None})
    return {"schema": "imgpipe-bench/1", "device": {"available": True, "name": device}, "rows": rows}


# Before: two runs; after: two runs, the first one noisy. gaussian one frame: best 10.0 -> best 8.0 (-20.0%);
# gaussian batched: 4.0 -> 4.1 (+2.5%); gray: 3.0 -> 3.03 (+1.0%, within the 2% band).
BEFORE = [
    {("1920x1080 gaussian=5:1", "optimized"): 10.0, ("1920x1080 gaussian=5:1", "optimized x16"): 4.0,
     ("1920x1080 gray", "optimized"): 3.0},
    {("1920x1080 gaussian=5:1", "optimized"): 10.4, ("1920x1080 gaussian=5:1", "optimized x16"): 4.2,
     ("1920x1080 gray", "optimized"): 3.1},
]
AFTER = [
    {("1920x1080 gaussian=5:1", "optimized"): 9.0, ("1920x1080 gaussian=5:1", "optimized x16"): 4.1,
     ("1920x1080 gray", "optimized"): 3.5},
    {("1920x1080 gaussian=5:1", "optimized"): 8.0, ("1920x1080 gaussian=5:1", "optimized x16"): 4.3,
     ("1920x1080 gray", "optimized"): 3.03},
]


def run(tool, *args):
    return subprocess.run([sys.executable, tool, *map(str, args)], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder)
        before = [path / f"before-{i}.json" for i in (1, 2)]
        after = [path / "after-1.json", path / "after-2.json.xz"]
        for file, times in zip(before, BEFORE):
            file.write_text(json.dumps(document(times)))
        after[0].write_text(json.dumps(document(AFTER[0])))
        with lzma.open(after[1], "wt", encoding="utf-8") as f:
            json.dump(document(AFTER[1]), f)

        both = [f"before={before[0]},{before[1]}", f"after={after[0]},{after[1]}"]
        compared = run(tool, *both)
        assert compared.returncode == 0, compared.stderr
        lines = compared.stdout.splitlines()
        assert lines[0].startswith("Some GPU"), lines[0]
        assert "| size and chain | row | before | after | change |" in lines, compared.stdout
        assert "| 1920x1080 gaussian=5:1 | optimized | 10.00 (10.00, 10.40) | 8.00 (9.00, 8.00) | -20.0% |" in lines
        assert "| 1920x1080 gaussian=5:1 | optimized x16 | 4.00 (4.00, 4.20) | 4.10 (4.10, 4.30) | +2.5% |" in lines
        assert "| 1920x1080 gray | optimized | 3.00 (3.00, 3.10) | 3.03 (3.50, 3.03) | +1.0% |" in lines
        assert "3 rows; 1 more than 2% faster under after, 1 more than 2% slower." in lines, compared.stdout

        chosen = run(tool, *both, "--chains", "gray")
        assert "gaussian" not in chosen.stdout and "| 1920x1080 gray |" in chosen.stdout, chosen.stdout

        three = run(tool, f"a={before[0]}", f"b={after[0]}", f"c={after[1]}")
        assert "| size and chain | row | a | b | c |" in three.stdout and "change" not in three.stdout, three.stdout
        assert "| 1920x1080 gray | optimized | 3.00 | 3.50 | 3.03 |" in three.stdout, three.stdout

        other_gpu = path / "other.json"
        other_gpu.write_text(json.dumps(document(AFTER[0], device="Another GPU")))
        refused = run(tool, f"before={before[0]}", f"after={other_gpu}")
        assert refused.returncode != 0 and "different GPUs" in refused.stderr, refused.stderr
        unlabelled = run(tool, str(before[0]), str(after[0]))
        assert unlabelled.returncode != 0 and "LABEL=RUN.json" in unlabelled.stderr, unlabelled.stderr
        nothing = run(tool, *both, "--chains", "rotate")
        assert nothing.returncode == 3 and "no matrix row" in nothing.stderr, nothing.stderr
    print("matrix_compare: every case as worked out")


if __name__ == "__main__":
    main()
