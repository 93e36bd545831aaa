#!/usr/bin/env python3
"""ctest's ncu_table: tools/ncu_table.py on a report excerpt laid out as `ncu --import ... --page details` prints
it, whose table is worked out by hand.

Usage: ncu_table_test.py TOOLS/ncu_table.py"""
import pathlib
import subprocess
import sys
import tempfile

# Two launches: the first with every metric (its L1 the busiest unit, its duration in us, a grouped register
# count), the second in ms, from the anonymous namespace with a template argument, without occupancy, its DRAM the
# busiest. Advice paragraphs and other sections in between, as ncu prints them.
REPORT = """[1292] imgpipe@127.0.0.1
  void unnamed>::sobel_aos_kernel<0, 32>(AosFrames, AosFramesOut, BorderMode) (30, 34, 16)x(256, 1, 1), Context 1, Stream 18, Device 0, CC 9.0
    Warning: Data collection happened without fixed GPU frequencies. Profiling results may be inconsistent.
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    DRAM Frequency                  Ghz         2.62
    Elapsed Cycles                cycle      218,001
    DRAM Throughput                   %        48.61
    Duration                         us       112.96
    L1/TEX Cache Throughput           %        86.42
    L2 Cache Throughput               %        62.02
    Compute (SM) Throughput           %        65.96
    ----------------------- ----------- ------------

    OPT   This workload exhibits low compute throughput and memory bandwidth utilization relative to the peak
          performance of this device.

    Section: Compute Workload Analysis
    -------------------- ----------- ------------
    Metric Name          Metric Unit Metric Value
    -------------------- ----------- ------------
    Issue Slots Busy               %        65.96
    -------------------- ----------- ------------
    Section: Launch Statistics
    Registers Per Thread             register/thread              32
    Threads                                   thread       8,355,840
    Section: Occupancy
    Achieved Occupancy                        %        69.21
  void imgpipe::cuda::(anonymous namespace)::range_aos_kernel(AosRuns, unsigned int *) (33, 16, 1)x(256, 1, 1), Context 1, Stream 18, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    DRAM Throughput                   %        74.56
    Duration                         ms         1.25
    L1/TEX Cache Throughput           %        29.47
    L2 Cache Throughput               %        70.08
    Section: Compute Workload Analysis
    Issue Slots Busy               %        42.68
    Section: Launch Statistics
    Registers Per Thread             register/thread              64
"""

EXPECTED = [
    "| kernel | grid | block | us | DRAM % | L2 % | L1/shared % | issue slots % | registers | occupancy % | busiest |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    "| `sobel_aos_kernel<0, 32>` | (30, 34, 16) | (256, 1, 1) | 112.96 | 48.6 | 62.0 | 86.4 | 66.0 | 32 | 69.2 "
    "| L1/shared |",
    "| `range_aos_kernel` | (33, 16, 1) | (256, 1, 1) | 1250.00 | 74.6 | 70.1 | 29.5 | 42.7 | 64 | - | DRAM |",
]


def run(tool, *args):
    return subprocess.run([sys.executable, tool, *map(str, args)], capture_output=True, text=True)


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        report, empty = pathlib.Path(folder) / "report.txt", pathlib.Path(folder) / "empty.txt"
        report.write_text(REPORT)
        empty.write_text("==PROF== Disconnected from process 1292\n")

        made = run(tool, report)
        assert made.returncode == 0, made.stderr
        assert made.stdout.splitlines() == EXPECTED, made.stdout

        refused = run(tool, empty)
        assert refused.returncode != 0 and "no kernel launch found" in refused.stderr, refused.stderr
    print("ncu_table: every case as worked out")


if __name__ == "__main__":
    main()
