#!/usr/bin/env python3
"""Matrix runs of `imgpipe bench --matrix --json FILE` side by side: builds or settings A and B (or more), each
timed one or more times on one machine, every matrix row's time under each.

    tools/matrix_compare.py [--chains REGEX] LABEL=RUN.json[,RUN.json...] LABEL=RUN.json[,RUN.json...] ...

Each LABEL's time for a row is the best of its runs (the least noise a run adds is the lower time), shown with
every run's time after it; with exactly two labels, the last column is the second's best over the first's, as
a change in percent. --chains keeps the rows whose size and chain match the regular expression. Runs from
different GPUs are refused: their times do not compare. Files may be xz-compressed (.json.xz). After the table,
the rows more than 2% faster and slower. Needs only Python's standard library.
"""
import argparse
import re
import sys

from bench_json import load

NOTABLE_CHANGE = 0.02


def run_times(doc):
    """{(size and chain, row name): us per frame} of the run's measured matrix rows, in the run's order."""
    return {(row["group"], row["name"]): row["us_per_frame"] for row in doc["rows"]
            if row["section"] == "matrix" and row["status"] == "ok"}


def parse_label(argument):
    label, separator, files = argument.partition("=")
    if not separator or not label or not files:
        raise SystemExit(f"matrix_compare: {argument!r}: expected LABEL=RUN.json[,RUN.json...]")
    return label, files.split(",")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", nargs="+", metavar="LABEL=RUN.json[,RUN.json...]")
    parser.add_argument("--chains", help="only rows whose size and chain match this regular expression")
    args = parser.parse_args()
    if len(args.labels) < 2:
        raise SystemExit("matrix_compare: give two labels or more, each with its runs")

    labels, runs, devices = [], [], set()
    for argument in args.labels:
        label, files = parse_label(argument)
        docs = [load(path, "matrix_compare") for path in files]
        devices.update(doc.get("device", {}).get("name", "no GPU") for doc in docs)
        labels.append(label)
        runs.append([run_times(doc) for doc in docs])
    if len(devices) > 1:
        raise SystemExit(f"matrix_compare: the runs come from different GPUs ({', '.join(sorted(devices))}); "
                         "their times do not compare")

    pattern = re.compile(args.chains) if args.chains else None
    rows = [key for key in runs[0][0] if pattern is None or pattern.search(key[0])]
    rows = [key for key in rows if all(key in run for label_runs in runs for run in label_runs)]
    if not rows:
        print("matrix_compare: no matrix row was measured in every run" + (" among those chains" if pattern else ""),
              file=sys.stderr)
        return 3

    two = len(labels) == 2
    print(f"{devices.pop()}, us per frame: each label's best run, then every run's time")
    print()
    print("| size and chain | row | " + " | ".join(labels) + (" | change |" if two else " |"))
    print("| --- | --- | " + " | ".join("---" for _ in labels) + (" | --- |" if two else " |"))
    faster, slower = [], []
    for key in rows:
        cells, best = [], []
        for label_runs in runs:
            times = [run[key] for run in label_runs]
            best.append(min(times))
            cells.append(f"{min(times):.2f}" + (f" ({', '.join(f'{t:.2f}' for t in times)})" if len(times) > 1 else ""))
        line = f"| {key[0]} | {key[1]} | " + " | ".join(cells)
        if two:
            change = best[1] / best[0] - 1
            line += f" | {100 * change:+.1f}%"
            if change < -NOTABLE_CHANGE:
                faster.append(key)
            elif change > NOTABLE_CHANGE:
                slower.append(key)
        print(line + " |")
    if two:
        print()
        print(f"{len(rows)} rows; {len(faster)} more than {100 * NOTABLE_CHANGE:.0f}% faster under {labels[1]}, "
              f"{len(slower)} more than {100 * NOTABLE_CHANGE:.0f}% slower.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
