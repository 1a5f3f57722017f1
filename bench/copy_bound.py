#!/usr/bin/env python3
"""Large messages against the machine's memory: each collective's median at
the largest size of a bench.csv (collc bench --csv), beside the time its
bytes take to copy once at the rates `collc calibrate --pattern copy`
measured (calibrate.txt's "memory:" lines), as scripts/bench.sh writes them.

The bound: every byte a rank must receive is read and written once (2 bytes
of copy each), all ranks copying at once at the rate p ranks copy together;
for scatter and gather every byte passes the root, at one rank's rate.

    python3 bench/copy_bound.py bench.csv calibrate.txt
"""
import csv, re, sys

# Bytes a collective must deliver, all ranks together, for p ranks and the
# bench's m (Table 4.1 of seed 000: the vector, or each rank's block).
RECEIVED = {
    "broadcast": lambda p, m: (p - 1) * m,       # each rank but the root, m
    "reduce": lambda p, m: (p - 1) * m,          # the dual of broadcast
    "scan": lambda p, m: (p - 1) * m,
    "allreduce": lambda p, m: 2 * (p - 1) * m,   # 2m(p-1)/p a rank
    "allgather": lambda p, m: p * (p - 1) * m,   # m(p-1) a rank
    "reduce_scatter": lambda p, m: p * (p - 1) * m,
    "alltoall": lambda p, m: p * (p - 1) * m,
    "alltoallv": lambda p, m: p * (p - 1) * m,
    "scatter": lambda p, m: (p - 1) * m,         # all through the root
    "gather": lambda p, m: (p - 1) * m,
}
THROUGH_ROOT = {"scatter", "gather"}

def main(bench_csv, calibrate_txt):
    rate = {}  # ranks -> GB/s together
    for line in open(calibrate_txt):
        if (g := re.search(r"memory: ([\d.]+) GB/s a rank, ([\d.]+) GB/s for (\d+) ranks", line)):
            rate[int(g.group(3))] = float(g.group(2))
    rows = list(csv.DictReader(open(bench_csv)))
    if not rows or not rate:
        sys.exit("copy_bound: no rows in %s or no memory: line in %s" % (bench_csv, calibrate_txt))
    largest = max(int(r["bytes"]) for r in rows)
    print("Largest messages (%d MiB) against the copy bound: the bytes each collective must\n"
          "deliver, read and written once, at the rate the ranks copy at together "
          "(scatter, gather: one rank's)" % (largest >> 20))
    print("  %-16s %5s %10s %10s %10s %11s %10s  %s" % ("collective", "ranks", "ours ms", "MPI ms",
          "bound ms", "ours/bound", "MPI/bound", "rate"))
    for r in rows:
        p, m, c = int(r["ranks"]), int(r["bytes"]), r["collective"]
        if m != largest or c not in RECEIVED:
            continue
        gbps = rate.get(1 if c in THROUGH_ROOT else p)
        if not gbps:
            continue
        bound_ms = 2 * RECEIVED[c](p, m) / (gbps * 1e9) * 1e3
        ours, mpi = float(r["ours_median_us"]) / 1e3, float(r["mpi_median_us"]) / 1e3
        print("  %-16s %5d %10.2f %10.2f %10.2f %11.2f %10.2f  %.1f GB/s" %
              (c, p, ours, mpi, bound_ms, ours / bound_ms, mpi / bound_ms, gbps))

if __name__ == "__main__":
    main(*sys.argv[1:3])
