#!/usr/bin/env python3
"""Checks that every #include "..." in imgpipe's source runs down the layers (docs/architecture.md):

    apps, python -> pipeline, io      apps -> bench      io -> pipeline      bench -> pipeline, io, kernels
    pipeline -> kernels

A header is found the way the build finds it: in the including file's own folder first, then in the folders
its layer may see. Prints every include that reaches a layer it may not, and exits 1 if there is one."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAY_SEE = {
    "kernels": ["kernels"],
    "pipeline": ["pipeline", "pipeline/cpu", "kernels"],
    "io": ["io", "pipeline"],
    "bench": ["bench", "pipeline", "io", "kernels"],
    "apps": ["apps", "pipeline", "io", "bench"],
    "python": ["python", "pipeline", "io"],
}
ALL_FOLDERS = ["apps", "bench", "io", "pipeline", "pipeline/cpu", "kernels", "python/src"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(header, including_folder):
    """The folder that holds `header` as the compiler would find it, or None (a system or generated header)."""
    if (including_folder / header).exists():
        return including_folder.relative_to(ROOT).as_posix()
    for folder in ALL_FOLDERS:
        if (ROOT / folder / header).exists():
            return folder
    return None


def main():
    problems = []
    for layer, allowed in MAY_SEE.items():
        for source in sorted((ROOT / layer).rglob("*")):
            if source.suffix not in {".hpp", ".cpp", ".cu", ".cuh"}:
                continue
            for header in INCLUDE.findall(source.read_text(encoding="utf-8")):
                found = folder_of(header, source.parent)
                if found is not None and found not in allowed:
                    problems.append(f"{source.relative_to(ROOT)}: includes {found}/{header}, "
                                    f"but {layer}/ may include only {', '.join(allowed)}")
    for problem in problems:
        print(problem)
    print(f"{len(problems)} include(s) against the layers" if problems else "every include runs down the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
