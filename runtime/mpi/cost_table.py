#!/usr/bin/env python3
"""Writes the drop-in's price table: every schedule that a candidate of
SCHEDULES_CPP (the candidate table candidates.py writes) prices, on the rank counts below, as
`collc cost --format json` prices it, one C++ initializer row each:
{"schedule", p, first, count, first', count'}, the index and number of its
entries in the parts table on the port model (A·t_s + B·m·t_w), then
where the receivers copy (`copies: receiver`, shared memory; A'·t_s +
O'·t_o + B'·m·t_w). Each entry {L, A, O, B} holds the start-ups, overheads
and words of the steps whose largest message is L blocks, which a model of
several segments prices in the segment of that message. The file holds
the sizes it priced, ascending, where COLLC_PRICED_SIZES is defined, the
parts where COLLC_COST_PARTS is, the rows where neither is. An alltoallv collective is priced on
its one rank count by 001's flat model (m = L_max / P), the same on either
machine.

  cost_table.py [--serve=F] [--param=NAME=LO..HI]... COLLC OUT MAX_P PRICED_P
                SCHEDULES_CPP SPEC...

Every size up to PRICED_P is priced; above it, up to MAX_P, the sizes 2^k
and 3·2^(k-1) (Choice.cpp prices the others as the largest priced size
below them, PricedSizes.h).

F: the model's `serve` for the receivers-copy prices (default 0.2, as
measured on 16 cores: 0.17-0.21). --param: the ranges the schedules were
compiled for, so that `collc cost --p` takes the member each size runs.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

from generated import write_if_changed
from fractions import Fraction


def main():
    args, serve, ranges = sys.argv[1:], "0.2", []
    if args and args[0].startswith("--serve="):
        serve = args.pop(0).split("=", 1)[1]
    while args and args[0].startswith("--param="):
        ranges.append(args.pop(0))
    collc, out, max_p, priced_p, table, specs = (args[0], args[1], int(args[2]),
                                                 int(args[3]), args[4], args[5:])
    # A candidate's row ends with the schedules it is priced by: {"a", "b"}.
    with open(table) as f:
        parts = re.findall(r'\{"(\w+)", (?:nullptr|"(\w+)")\}', f.read())
    names = sorted({n for pair in parts for n in pair if n})
    rows = []

    # A machine whose receivers copy: `time` then carries A', O' and B'.
    scratch = tempfile.TemporaryDirectory()
    receivers = os.path.join(scratch.name, "receivers.coll")
    with open(receivers, "w") as f:
        f.write("model receivers = { ts: 1us, tw: 1ps/byte, copies: receiver, "
                "serve: %s };\n" % serve)

    def price(p, picks):
        # A schedule with no member of p ranks is skipped with a note; one
        # whose fixed root is outside p ranks is an error (exit 2) that
        # leaves the file's compositions unpriced, so those are priced on
        # their own below.
        run = subprocess.run([collc, "cost", *specs, "--p", str(p), "--format", "json",
                              "--model", receivers + ":receivers", *ranges, *picks], capture_output=True, text=True)
        if run.returncode not in (0, 2):
            sys.exit(run.stderr)
        priced = json.loads(run.stdout)
        found = {s["schedule"]: s for s in priced["schedules"]}
        for a in priced.get("alltoallv", []):
            one = [{"largest_m": "1", "ts": a["ts"], "to": 0, "tw_m": a["tw_m"]}]
            found[a["collective"]] = {"valid": a["p"] == p, "ts": a["ts"], "tw_m": a["tw_m"],
                                      "parts": one,
                                      "time": {"ts": a["ts"], "to": 0, "tw_m": a["tw_m"],
                                               "parts": one}}
        return run.returncode, found

    sizes = list(range(2, min(max_p, priced_p) + 1))
    k = 1
    while (1 << k) <= max_p:
        sizes += [q for q in (3 << (k - 1), 1 << k) if priced_p < q <= max_p]
        k += 1
    sizes = sorted(set(sizes))

    def price_all(p):
        status, found = price(p, [])
        for name in names:
            if status and name not in found:
                found.update(price(p, ["--schedule", name])[1])
        return found

    # One `collc cost` per size and core at once; the rows in size order.
    with concurrent.futures.ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        priced_sizes = list(pool.map(price_all, sizes))
    parts, listed_at = [], {}

    def add_parts(listed):
        # A list of parts another row has already is shared.
        entries = tuple("{%r, %r, %r, %r}," % tuple(
            float(Fraction(str(part[key]))) for key in ("largest_m", "ts", "to", "tw_m"))
            for part in listed)
        if entries not in listed_at:
            listed_at[entries] = len(parts)
            parts.extend(entries)
        return "%d, %d" % (listed_at[entries], len(entries))

    for p, found in zip(sizes, priced_sizes):
        for name in names:
            s = found.get(name)
            if s and s.get("valid"):
                rows.append('{"%s", %d, %s, %s},' % (
                    name, p, add_parts(s["parts"]), add_parts(s["time"]["parts"])))
    if not rows:
        sys.exit("cost_table.py: collc cost priced no schedule of %s" % table)
    text = ("// Generated by cost_table.py from `collc cost`. Do not edit.\n"
            "#if defined(COLLC_PRICED_SIZES)\n" +
            "".join("%d,\n" % p for p in sizes) +
            "#elif defined(COLLC_COST_PARTS)\n" + "\n".join(parts) + "\n#else\n" +
            "\n".join(rows) + "\n#endif\n")
    write_if_changed(out, text)


if __name__ == "__main__":
    main()
