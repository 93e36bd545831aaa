#!/usr/bin/env python3
"""The benchmark matrix of `imgpipe bench --matrix --json FILE` as the Markdown table docs/performance.md shows,
each row held to the optimized path's targets; with --before, every time beside a previous run's.

    tools/matrix_table.py MATRIX.json [--exact] [--sizes 1920x1080,3840x2160] [--before OLD.json]

Columns, in microseconds per frame of device-resident frames: the floor (the bytes the chain must read and
write at the run's device-to-device copy rate), naive, optimized one frame per launch, batched (the run's
--matrix-batch frames per launch), NPP where it has the chain; then optimized and batched over the floor, and
naive and NPP over optimized (above 1: optimized is faster). --exact takes the rows with OpenCV's arithmetic.
After the table, the rows that miss a target (batched within 1.3x of the floor, one frame within 2x, never
behind naive or NPP). Needs only Python's standard library.
"""
import argparse
import sys

from bench_json import load

BATCHED_OVER_FLOOR = 1.3
ONE_FRAME_OVER_FLOOR = 2.0


def matrix(doc, exact):
    """{(size, chain): {"floor": us, "naive": us, "optimized": us, "batched": us, "npp": us}}, in the run's order."""
    suffix = " exact" if exact else ""
    wanted = {"naive" + suffix: "naive", "optimized" + suffix: "optimized", "npp": "npp"}
    table = {}
    for row in doc["rows"]:
        if row["section"] != "matrix":
            continue
        size, chain = row["group"].split(" ", 1)
        cells = table.setdefault((size, chain), {})
        name = row["name"]
        key = wanted.get(name)
        if key is None and name.startswith("optimized x") and name.endswith(suffix) and (exact or "exact" not in name):
            key = "batched"
            cells["batch"] = int(name.split()[1][1:])
        if key is None or row["status"] != "ok":
            continue
        cells[key] = row["us_per_frame"]
        if row.get("bytes_per_frame") and row.get("ceiling_gb_per_s"):
            cells["floor"] = row["bytes_per_frame"] / (row["ceiling_gb_per_s"] * 1e3)
    return table


def us(value, before=None):
    if value is None:
        return "-"
    return f"{before:.2f} → {value:.2f}" if before is not None else f"{value:.2f}"


def ratio(numerator, denominator):
    return f"{numerator / denominator:.2f}x" if numerator is not None and denominator else "-"


def misses(size, chain, c):
    """The targets row (size, chain) misses, as words."""
    found = []
    floor = c.get("floor")
    if floor and c.get("batched") is not None and c["batched"] > BATCHED_OVER_FLOOR * floor:
        found.append(f"batched {c['batched'] / floor:.2f}x its floor (target {BATCHED_OVER_FLOOR}x)")
    if floor and c.get("optimized") is not None and c["optimized"] > ONE_FRAME_OVER_FLOOR * floor:
        found.append(f"one frame {c['optimized'] / floor:.2f}x its floor (target {ONE_FRAME_OVER_FLOOR}x)")
    # Optimized must be at least as fast as naive, and faster than NPP: a tie with NPP misses.
    def behind(time, peer):
        return time >= c[peer] if peer == "npp" else time > c[peer]

    for peer in ("naive", "npp"):
        if c.get(peer) is not None and c.get("optimized") is not None and behind(c["optimized"], peer):
            found.append(f"one frame behind {peer.upper() if peer == 'npp' else peer} "
                         f"({c['optimized']:.2f} against {c[peer]:.2f} us)")
        if c.get(peer) is not None and c.get("batched") is not None and behind(c["batched"], peer):
            found.append(f"batched behind {peer.upper() if peer == 'npp' else peer}")
    return [f"{size} `{chain}`: {m}" for m in found]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", help="the JSON of imgpipe bench --matrix --json FILE")
    parser.add_argument("--exact", action="store_true", help="the rows with OpenCV's arithmetic")
    parser.add_argument("--sizes", help="frame sizes to show, e.g. 1920x1080,3840x2160 (default: all)")
    parser.add_argument("--before", help="a previous run's JSON: each time shown as before → now")
    args = parser.parse_args(argv)

    doc = load(args.json, "matrix_table")
    table = matrix(doc, args.exact)
    if not any(c.get("optimized") is not None for c in table.values()):
        print(f"matrix_table: {args.json}: no matrix row was measured (imgpipe bench --matrix makes them)",
              file=sys.stderr)
        return 3
    before = matrix(load(args.before, "matrix_table"), args.exact) if args.before else {}
    sizes = args.sizes.split(",") if args.sizes else None
    batch = next((c["batch"] for c in table.values() if "batch" in c), None)

    device = doc["device"].get("name", "no CUDA device")
    print(f"{device}, {doc['date']}: `{doc['command']}`" + (", exact arithmetic" if args.exact else ""))
    print()
    print(f"| size | chain | floor | naive | optimized | batched ({batch}) | NPP | optimized / floor | "
          "batched / floor | naive / optimized | NPP / optimized |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    missed = []
    for (size, chain), c in table.items():
        if sizes and size not in sizes:
            continue
        b = before.get((size, chain), {})
        floor = c.get("floor")
        print(f"| {size} | `{chain}` | {us(floor)} | {us(c.get('naive'), b.get('naive'))} | "
              f"{us(c.get('optimized'), b.get('optimized'))} | {us(c.get('batched'), b.get('batched'))} | "
              f"{us(c.get('npp'), b.get('npp'))} | {ratio(c.get('optimized'), floor)} | "
              f"{ratio(c.get('batched'), floor)} | {ratio(c.get('naive'), c.get('optimized'))} | "
              f"{ratio(c.get('npp'), c.get('optimized'))} |")
        missed += misses(size, chain, c)
    print()
    if missed:
        print(f"Targets missed ({len(missed)}):")
        for line in missed:
            print(f"- {line}")
    else:
        print("Every row meets every target.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
