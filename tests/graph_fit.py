#!/usr/bin/env python3
"""Checks that every node's label in a Graphviz SVG lies inside the node's box as a reader sees it.

For each node (`<g class="node">`) it makes three copies of the picture holding that node alone: one
with only its text, one with only its shapes, filled, and one with only their lines. Each is rendered
with rsvg-convert (librsvg; fontconfig chooses the fonts, so FONTCONFIG_FILE picks the reader's), and
every pixel the text inks must lie inside the shapes and at least CLEAR points off every line: not on
or past the border, nor on a line inside the box. Prints one line per node whose text does not; exits
1 if any does not.

Usage: graph_fit.py SVG...   (needs rsvg-convert and PIL: Debian librsvg2-bin, python3-pil)
"""
import copy
import io
import subprocess
import sys
import xml.etree.ElementTree as ET

from PIL import Image, ImageChops, ImageFilter

SVG = "{http://www.w3.org/2000/svg}"
SHAPES = {SVG + t for t in ("polygon", "polyline", "path", "ellipse", "rect", "circle")}
ZOOM = 4    # pixels per point: fine enough to see a sliver of a glyph past the border
INKED = 96  # alpha from which an anti-aliased text pixel counts as ink
CLEAR = 1   # points every inked text pixel keeps from the node's outline
NEAR = int((0.5 + CLEAR) * ZOOM)  # pixels from a line's middle that text keeps off: half the 1pt stroke, then CLEAR


def render(tree):
    svg = ET.tostring(tree.getroot())
    # At 72 dpi a point of the SVG is a pixel before the zoom.
    png = subprocess.run(["rsvg-convert", "--dpi-x", "72", "--dpi-y", "72", "--zoom", str(ZOOM), "--format", "png"], input=svg,
                         stdout=subprocess.PIPE, check=True).stdout
    return Image.open(io.BytesIO(png)).getchannel("A")


def alone(tree, node_id, part):
    """A copy of `tree` with only node `node_id`, and of it only `part`: "text" (black), "area" (its shapes
    filled black) or "lines" (its shapes' strokes alone, black)."""
    t = copy.deepcopy(tree)
    graph = t.getroot().find(SVG + "g")
    for child in list(graph):
        if child.get("id") != node_id:
            graph.remove(child)
    node = graph.find(SVG + "g")
    for el in list(node):
        if (el.tag == SVG + "text") != (part == "text"):
            node.remove(el)
        elif part == "text":
            el.set("fill", "black")
        else:
            el.set("fill", "black" if part == "area" else "none")
            el.set("stroke", "black")
    return t


def overflow(tree, node_id):
    """How many inked text pixels of the node are not at least CLEAR points inside its box and off every line
    drawn in it (a box3d's front face, a cylinder's rim)."""
    text, area, lines = (render(alone(tree, node_id, part)) for part in ("text", "area", "lines"))
    ink = text.point(lambda a: 255 if a >= INKED else 0)
    area = area.point(lambda a: 255 if a > 0 else 0)
    lines = lines.point(lambda a: 255 if a > 0 else 0)
    # Only where the node is: the union of its box and its ink, with room for widening the lines.
    boxes = [b for b in (ink.getbbox(), area.getbbox()) if b]
    if not boxes:
        return 0
    pad = NEAR + 1
    crop = (max(min(b[0] for b in boxes) - pad, 0), max(min(b[1] for b in boxes) - pad, 0),
            max(b[2] for b in boxes) + pad, max(b[3] for b in boxes) + pad)
    ink, area, lines = ink.crop(crop), area.crop(crop), lines.crop(crop)
    # Where text may be: inside the filled shapes, farther than CLEAR from any line (the outline included).
    inner = ImageChops.subtract(area, lines.filter(ImageFilter.MaxFilter(2 * NEAR + 1)))
    outside = ImageChops.subtract(ink, inner)
    return outside.histogram()[255]


def main(files):
    bad = 0
    for f in files:
        tree = ET.parse(f)
        graph = tree.getroot().find(SVG + "g")
        nodes = [g for g in graph.findall(SVG + "g") if g.get("class") == "node"]
        if not nodes:
            print(f"{f}: no nodes")
            bad += 1
        for g in nodes:
            if g.find(SVG + "text") is None:
                continue
            out = overflow(tree, g.get("id"))
            if out:
                bad += 1
                lines = " / ".join(t.text or "" for t in g.findall(SVG + "text"))
                print(f"{f}: node {g.findtext(SVG + 'title')}: {out} text pixels outside its box or within {CLEAR}pt "
                      f"of a line of it ({lines})")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
