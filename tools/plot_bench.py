#!/usr/bin/python3
"""Charts from the JSON of `imgpipe bench --json FILE` (schema: docs/bench.md).

    tools/plot_bench.py BENCH.json [--out DIR]

Writes into DIR (default: beside the JSON):
  throughput.png  end-to-end and device-resident rows: GB/s of each, its ceiling from the same run, fps and
                  the fraction of the ceiling written on the bar
  ablation.png    each ablation row's speedup over its twin, grouped by technique
  stages.png      each op of the chain alone, naive against optimized (microseconds per frame)
  matrix.png      imgpipe bench --matrix: per frame size, every chain's fraction of its floor for naive,
                  optimized (one frame per launch, with fast and exact arithmetic, and batched) and NPP
A chart whose rows were all skipped (e.g. the GPU rows of a run without a CUDA device) is not written; the
script says so. Needs matplotlib: Debian's python3-matplotlib (scripts/setup.sh installs it) serves
/usr/bin/python3, the interpreter named above; another Python needs its own (pip install matplotlib).
"""
import argparse
import os
import sys

from bench_json import load


def ok_rows(doc, section):
    return [r for r in doc["rows"] if r["section"] == section and r["status"] == "ok"]


def subtitle(doc):
    device = doc["device"]
    where = device["name"] if device.get("available") else "no CUDA device"
    p = doc["parameters"]
    size = f"{p['size']['width']}x{p['size']['height']}"
    what = "the benchmark matrix" if p["sections"] == ["matrix"] else f"{p['chain']} on {size}"
    return (f"{what}, {where}, CUDA driver {doc['versions'].get('cuda_driver') or '-'}, "
            f"{doc['date']}, median of {p['repeats']} x {p['frames']} frames")


def ceiling_labels(doc):
    return {c["id"]: c["label"] for c in doc["ceilings"]}


def plot_throughput(plt, doc, path):
    rows = [("e2e", r) for r in ok_rows(doc, "end-to-end")] + [("kernel", r) for r in ok_rows(doc, "kernel")]
    if not rows:
        return "no end-to-end or kernel row was measured"
    labels = ceiling_labels(doc)
    names = [f"{kind}: {r['name']}" for kind, r in rows]
    gbps = [r["gb_per_s"] for _, r in rows]
    ceilings = [r["ceiling_gb_per_s"] for _, r in rows]
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 2.2))
    y = list(range(len(rows)))
    colors = ["tab:blue" if kind == "e2e" else "tab:green" for kind, _ in rows]
    ax.barh(y, gbps, color=colors, alpha=0.8)
    for i, ((kind, r), c) in enumerate(zip(rows, ceilings)):
        if c:
            ax.plot([c, c], [i - 0.4, i + 0.4], color="black", linewidth=2)
        fraction = f", {100 * r['fraction_of_ceiling']:.0f}% of {r['ceiling']}" if r["fraction_of_ceiling"] else ""
        ax.text(r["gb_per_s"], i, f"  {r['fps']:.0f} fps{fraction}", va="center", fontsize=8)
    values = [v for v in gbps + ceilings if v]
    if values and max(values) / min(values) > 50:
        ax.set_xscale("log")
        ax.set_xlim(right=max(values) * 4)
    else:
        ax.set_xlim(0, max(values) * 1.45)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (bytes that must move: input read once + output written once); black bar: the row's ceiling")
    used = sorted({r["ceiling"] for _, r in rows if r["ceiling"]})
    legend = "; ".join(f"{u}: {labels.get(u, u)}" for u in used)
    ax.set_title("imgpipe bench: throughput against the ceilings of the same run\n" + subtitle(doc), fontsize=9)
    fig.text(0.01, 0.01, "ceilings - " + legend, fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def plot_ablation(plt, doc, path):
    rows = [r for r in ok_rows(doc, "ablation") if r.get("speedup")]
    if not rows:
        return "no ablation row with a measured twin"
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(rows) + 2.2))
    y = list(range(len(rows)))
    groups = [r["group"] for r in rows]
    palette = plt.get_cmap("tab10")
    order = list(dict.fromkeys(groups))
    colors = [palette(order.index(g) % 10) for g in groups]
    speedups = [r["speedup"] for r in rows]
    ax.barh(y, speedups, color=colors, alpha=0.85)
    ax.axvline(1.0, color="black", linewidth=1)
    for i, r in enumerate(rows):
        ax.text(r["speedup"], i, f"  {r['speedup']:.2f}x vs {r['twin']} ({r['fps']:.0f} fps)", va="center",
                fontsize=8)
    if max(speedups) / min(speedups) > 20:
        ax.set_xscale("log")
        ax.set_xlim(right=max(speedups) * 6)
    else:
        ax.set_xlim(0, max(speedups) * 1.6)
    ax.set_yticks(y, [f"{r['group']}: {r['name']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("speedup over the twin row (everything else held fixed); 1.0 = no change")
    ax.set_title("imgpipe bench: one technique at a time\n" + subtitle(doc), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def plot_stages(plt, doc, path):
    rows = ok_rows(doc, "stage")
    if not rows:
        return "no stage row was measured"
    groups = list(dict.fromkeys(r["group"] for r in rows))
    paths = list(dict.fromkeys(r["name"] for r in rows))
    width = 0.8 / len(paths)
    fig, ax = plt.subplots(figsize=(max(10, 2.2 * len(groups) + 2), 4.5))
    for k, name in enumerate(paths):
        xs, ys = [], []
        for i, g in enumerate(groups):
            match = [r for r in rows if r["group"] == g and r["name"] == name]
            if match:
                xs.append(i + (k - (len(paths) - 1) / 2) * width)
                ys.append(match[0]["us_per_frame"])
        ax.bar(xs, ys, width=width, label=name)
        for x, v in zip(xs, ys):
            ax.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_ylabel("microseconds per frame (device-resident)")
    if max(r["us_per_frame"] for r in rows) / min(r["us_per_frame"] for r in rows) > 50:
        ax.set_yscale("log")
    ax.legend()
    ax.set_title("imgpipe bench: each op of the chain alone\n" + subtitle(doc), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def plot_matrix(plt, doc, path):
    rows = ok_rows(doc, "matrix")
    if not rows:
        return "no matrix row was measured (imgpipe bench --matrix makes them)"
    batched = next((r["name"] for r in rows if r["name"].startswith("optimized x") and "exact" not in r["name"]), None)
    paths = ["naive", "optimized", "optimized exact", batched, "npp"]
    paths = [p for p in paths if p and any(r["name"] == p for r in rows)]
    sizes = []
    for r in rows:
        size = r["group"].split(" ", 1)[0]
        if size not in sizes:
            sizes.append(size)
    fig, axes = plt.subplots(1, len(sizes), figsize=(7.5 * len(sizes), 9), squeeze=False)
    colors = {"naive": "tab:gray", "optimized": "tab:green", "optimized exact": "tab:olive", "npp": "tab:orange"}
    for ax, size in zip(axes[0], sizes):
        chains = []
        for r in rows:
            size_of_row, chain = r["group"].split(" ", 1)
            if size_of_row == size and chain not in chains:
                chains.append(chain)
        height = 0.8 / len(paths)
        for k, name in enumerate(paths):
            fractions = []
            for chain in chains:
                row = next((r for r in rows if r["group"] == f"{size} {chain}" and r["name"] == name), None)
                fractions.append(row["fraction_of_ceiling"] if row else 0)
            y = [i + k * height for i in range(len(chains))]
            ax.barh(y, fractions, height=height, label=name, color=colors.get(name, "tab:blue"))
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(chains))])
        ax.set_yticklabels(chains)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(size)
        ax.set_xlabel("fraction of the floor (the bytes at the device-to-device copy rate)")
    axes[0][0].legend(loc="lower right")
    fig.suptitle("imgpipe bench --matrix\n" + subtitle(doc), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def main(argv):
    parser = argparse.ArgumentParser(description="PNG charts from imgpipe bench --json")
    parser.add_argument("json", help="the file imgpipe bench --json wrote")
    parser.add_argument("--out", help="folder for the PNGs (default: the JSON's folder)")
    args = parser.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"plot_bench: matplotlib is not installed for {sys.executable}; run this script with /usr/bin/python3 "
              "after apt-get install python3-matplotlib (Debian), or pip install matplotlib for this Python",
              file=sys.stderr)
        return 3
    doc = load(args.json, "plot_bench")
    out = args.out or os.path.dirname(os.path.abspath(args.json))
    os.makedirs(out, exist_ok=True)
    written = 0
    for name, plot in (("throughput.png", plot_throughput), ("ablation.png", plot_ablation),
                       ("stages.png", plot_stages), ("matrix.png", plot_matrix)):
        path = os.path.join(out, name)
        why_not = plot(plt, doc, path)
        if why_not:
            print(f"plot_bench: {name} not written: {why_not}")
        else:
            written += 1
            print(f"plot_bench: wrote {path}")
    if not written:
        print("plot_bench: nothing to plot: every row was skipped", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
