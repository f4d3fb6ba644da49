"""Shrink the figures of executed chapters: every PNG output becomes a 256-colour PNG (median cut, no dithering).

The chapters draw retina figures (twice the pixels of their size on the page) so that they stay sharp on any screen;
as 256-colour PNGs they take about a third of the bytes and look the same (a heatmap's cells, text and lines use
far fewer than 256 colours). ``make execute`` runs this after executing a chapter; the test suite checks that every
committed figure is shrunk. Only PNG data changes; nbval does not compare images.

    python book/shrink_figures.py notebooks/02_alignment.ipynb [...]
"""

from __future__ import annotations

import argparse
import base64
import io
import sys
from pathlib import Path

import nbformat
from PIL import Image

COLOURS = 256


def shrink(png: bytes) -> bytes:
    """The PNG as a 256-colour palette PNG (unchanged if it is one already)."""
    image = Image.open(io.BytesIO(png))
    if image.mode == "P":
        return png
    quantized = image.convert("RGB").quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    quantized.save(out, "PNG", optimize=True)
    return out.getvalue()


def shrink_notebook(path: Path) -> tuple[int, int]:
    """Shrink every PNG output of a notebook in place; the bytes of its figures before and after."""
    nb = nbformat.read(path, as_version=4)
    before = after = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            png = base64.b64decode(data["image/png"])
            small = shrink(png)
            before, after = before + len(png), after + len(small)
            data["image/png"] = base64.b64encode(small).decode("ascii")
    nbformat.write(nb, path)
    return before, after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.is_file():
            print(f"error: no notebook at {path}", file=sys.stderr)
            return 2
        before, after = shrink_notebook(path)
        print(f"{path}: figures {before / 1e3:.0f} kB -> {after / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
