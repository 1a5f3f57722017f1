#!/usr/bin/env python3
"""Counts the pairs of message labels that overlap in each panel of a
`collc draw` figure: each label a box along its arrow (its anchor, the
rotation, about 5.2 px a character long and 10 px high), tested on the
rectangles' axes. Prints "panel STEP: N overlaps" per panel with any, and
"overlapping labels: TOTAL".

  label_overlaps.py FIGURE.svg
"""
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def box(text):
    x, y = float(text.get("x")), float(text.get("y"))
    angle = float(re.match(r"rotate\(([-0-9.]+)", text.get("transform")).group(1))
    a = math.radians(angle)
    return (x, y), (math.cos(a), math.sin(a)), 2.6 * len(text.text or ""), 5.0


def overlap(p, q):
    axes = [p[1], (-p[1][1], p[1][0]), q[1], (-q[1][1], q[1][0])]
    def extent(b, axis):
        d, h = b[1], (-b[1][1], b[1][0])
        return (b[2] * abs(d[0] * axis[0] + d[1] * axis[1]) +
                b[3] * abs(h[0] * axis[0] + h[1] * axis[1]))
    gap = (q[0][0] - p[0][0], q[0][1] - p[0][1])
    return all(abs(gap[0] * ax[0] + gap[1] * ax[1]) <= extent(p, ax) + extent(q, ax)
               for ax in axes)


def main():
    root = ET.parse(sys.argv[1]).getroot()
    total = 0
    for panel in root.iter(NS + "g"):
        if panel.get("class") != "step":
            continue
        boxes = [box(t) for g in panel.iter(NS + "g") if g.get("class") == "message"
                 for t in g.findall(NS + "text")]
        n = sum(overlap(boxes[i], boxes[j])
                for i in range(len(boxes)) for j in range(i + 1, len(boxes)))
        if n:
            print("panel %s: %d overlaps" % (panel.get("data-step"), n))
        total += n
    print("overlapping labels: %d" % total)


if __name__ == "__main__":
    main()
