#!/usr/bin/env python3
"""Nsight Compute's report of kernel launches as one Markdown table: per launch, its time and how busy DRAM, the
L2, the SMs' L1 and shared memory, and the schedulers' issue slots were, and which of those four was the busiest.

    ncu ... -o REPORT COMMAND      (with the SpeedOfLight, ComputeWorkloadAnalysis, LaunchStats and Occupancy
                                    sections, which --set full and tools/gpu_check.sh's profile step include)
    ncu --import REPORT.ncu-rep --page details > REPORT.txt
    tools/ncu_table.py REPORT.txt

A launch's percentages are of each unit's peak over its duration (L1 and shared memory: over the SMs' active
cycles); "issue slots" is the share of cycles in which a scheduler issued an instruction. The busiest unit is the
one closest to its peak, not a verdict on what bounds the kernel: a launch with every unit well below its peak
waits on latency. A metric the report lacks is shown as "-". Needs only Python's standard library.
"""
import argparse
import re
import sys

# A launch's header: "  KERNEL(ARGUMENTS) (GX, GY, GZ)x(BX, BY, BZ), Context 1, Stream 18, Device 0, CC 9.0".
HEADER = re.compile(r"^  (?P<kernel>\S.*?) \((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\), Context ")
# A metric row: "    NAME    UNIT    VALUE" (a unit-less row has two columns).
METRIC = re.compile(r"^    (?P<name>\S.*?)\s{2,}(?:(?P<unit>\S+)\s+)?(?P<value>-?[\d,]+(?:\.\d+)?)\s*$")
UNIT_SECONDS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
                "s": 1.0, "second": 1.0}
UNITS = [("DRAM", "DRAM Throughput"), ("L2", "L2 Cache Throughput"), ("L1/shared", "L1/TEX Cache Throughput"),
         ("issue", "Issue Slots Busy")]


def short_name(kernel):
    """The kernel's name without its return type, namespaces and parameter list; template arguments kept."""
    name = re.sub(r"^void ", "", kernel)
    name = re.sub(r"\(anonymous namespace\)::|<?unnamed>::", "", name)
    depth = 0
    for i, c in enumerate(name):  # the parameter list: the first "(" outside template brackets
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            name = name[:i]
            break
    head, bracket, rest = name.partition("<")
    return head.rsplit("::", 1)[-1] + bracket + rest


def parse(lines):
    """[{kernel, grid, block, metrics: {name: (unit, value)}}] in the report's order."""
    launches = []
    for line in lines:
        header = HEADER.match(line)
        if header:
            launches.append({"kernel": short_name(header["kernel"]), "grid": header["grid"],
                             "block": header["block"], "metrics": {}})
            continue
        metric = METRIC.match(line.rstrip("\n"))
        if metric and launches:
            launches[-1]["metrics"].setdefault(metric["name"], (metric["unit"] or "",
                                                                 float(metric["value"].replace(",", ""))))
    return launches


def microseconds(metrics):
    if "Duration" not in metrics:
        return None
    unit, value = metrics["Duration"]
    if unit not in UNIT_SECONDS:
        raise ValueError(f"a Duration in {unit!r}, which this script does not know")
    return value * UNIT_SECONDS[unit] * 1e6


def table(launches):
    out = ["| kernel | grid | block | us | DRAM % | L2 % | L1/shared % | issue slots % | registers | occupancy % "
           "| busiest |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    def shown(v, digits=1):
        return "-" if v is None else f"{v:.{digits}f}"

    for launch in launches:
        m = launch["metrics"]

        def value(name):
            return m[name][1] if name in m else None

        us = microseconds(m)
        busy = [(value(metric), label) for label, metric in UNITS if value(metric) is not None]
        busiest = max(busy)[1] if busy else "-"
        registers = value("Registers Per Thread")
        out.append(f"| `{launch['kernel']}` | ({launch['grid']}) | ({launch['block']}) | {shown(us, 2)} | "
                   + " | ".join(shown(value(metric)) for _, metric in UNITS)
                   + f" | {'-' if registers is None else int(registers)} | {shown(value('Achieved Occupancy'))} "
                   f"| {busiest} |")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("details", help="the text of `ncu --import REPORT.ncu-rep --page details`")
    args = parser.parse_args()
    with open(args.details, encoding="utf-8", errors="replace") as f:
        launches = parse(f)
    if not launches:
        sys.exit(f"{args.details}: no kernel launch found (is it the output of `ncu --import ... --page details`?)")
    print(table(launches))


if __name__ == "__main__":
    main()
