"""Sphinx extension of the book.

- Drops duplicate script/stylesheet entries of each page (sphinx-thebe 0.3.1 registers its inline script
  twice: ``Identifier 'THEBE_JS_URL' has already been declared``).
- Keeps every figure of a cell output legible: each output PNG (an image node, or an ``<img>`` with a PNG
  data URI in an HTML output) goes into a ``div.ntp-scroll.ntp-figure-scroll`` whose ``--ntp-min-width``
  is the narrowest width at which a 10 pt label of the figure is 7 px
  (:func:`ntputils.reports.png.min_legible_width`: the PNG's pixel width and its pHYs dpi, read at build
  time). ``book/_static/scroll_cue.css`` gives the image that minimum width; where the column is narrower
  the container scrolls sideways and ``scroll_cue.js`` shows a cue under it.
- Keeps a stale executed notebook ``book/<chapter>.ipynb`` out of the book where a placeholder page
  ``book/<chapter>.md`` stands for the chapter (:func:`ntputils.book.html.write_placeholders`).
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from ntputils.reports.placeholders import placeholder_exclusions
from ntputils.reports.png import min_legible_width, png_dpi, png_size

#: an ``<img>`` tag whose source is a PNG data URI (matplotlib figures in HTML outputs: c03's sweep drawings)
DATA_IMG = re.compile(r'<img\b[^>]*?\bsrc="data:image/png;base64,([A-Za-z0-9+/=\s]+)"[^>]*>', re.IGNORECASE)
#: the first bytes of a PNG hold its IHDR and (from matplotlib) its pHYs chunk
PNG_HEAD = 4096


def _key(asset: Any) -> tuple:
    attrs = getattr(asset, "attributes", {}) or {}
    filename = getattr(asset, "filename", str(asset)) or ""  # inline scripts come as None *and* ""
    return (filename, tuple(sorted((k, str(v)) for k, v in attrs.items())))


def dedupe_assets(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Keep the first of identical ``script_files``/``css_files`` entries."""
    for name in ("script_files", "css_files"):
        assets = context.get(name)
        if not assets:
            continue
        seen: set[tuple] = set()
        unique = []
        for asset in assets:
            key = _key(asset)
            if key not in seen:
                seen.add(key)
                unique.append(asset)
        assets[:] = unique  # in place: later handlers still append to the builder's list


def legible_width(head: bytes) -> int | None:
    """The minimum CSS width (px) of a PNG whose first bytes are ``head``, or None when it is no PNG."""
    size = png_size(head)
    return min_legible_width(size[0], png_dpi(head)) if size else None


def scroll_open(width: int) -> str:
    return f'<div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: {width}px">'


def wrap_data_images(text: str) -> tuple[str, int]:
    """``text`` (an HTML output) with each PNG data-URI ``<img>`` in a legibility scroll container, and how
    many were wrapped."""
    count = 0

    def wrap(match: re.Match) -> str:
        nonlocal count
        try:
            head = base64.b64decode("".join(match.group(1).split())[:PNG_HEAD * 4 // 3 // 4 * 4])
        except (binascii.Error, ValueError):
            return match.group(0)
        width = legible_width(head)
        if width is None:
            return match.group(0)
        count += 1
        return scroll_open(width) + match.group(0) + "</div>"

    return DATA_IMG.sub(wrap, text), count


def in_cell_output(node: nodes.Node) -> bool:
    """Whether ``node`` is (in) a notebook cell's output, or an image of a figure (a glued one included)."""
    if isinstance(node, nodes.image) and isinstance(node.parent, nodes.figure):
        return True
    parent = node.parent
    while parent is not None:
        if "cell_output" in parent.get("classes", ()):
            return True
        parent = parent.parent
    return False


def image_file(srcdir: Path, node: nodes.image) -> Path | None:
    uri = (node.get("candidates") or {}).get("*") or node.get("uri", "")
    if not uri or "://" in uri or uri.startswith("data:"):
        return None
    path = Path(uri) if Path(uri).is_absolute() and Path(uri).is_file() else srcdir / uri.lstrip("/")
    return path if path.is_file() else None


class LegibleFigures(SphinxPostTransform):
    """Put each PNG of a cell output (and each glued figure) in a scroll container that keeps it at least
    as wide as its labels need (module docstring)."""

    default_priority = 400
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        srcdir = Path(self.app.srcdir)
        for node in list(self.document.findall(nodes.image)):
            if not in_cell_output(node):
                continue
            path = image_file(srcdir, node)
            if path is None or path.suffix.lower() != ".png":
                continue
            with path.open("rb") as f:
                width = legible_width(f.read(PNG_HEAD))
            if width is None:
                continue
            index = node.parent.index(node)
            node.parent.insert(index + 1, nodes.raw("", "</div>", format="html"))
            node.parent.insert(index, nodes.raw("", scroll_open(width), format="html"))
        for node in list(self.document.findall(nodes.raw)):
            if "html" in node.get("format", "").split() and in_cell_output(node) and "<img" in node.astext():
                text, count = wrap_data_images(node.astext())
                if count:
                    node[:] = [nodes.Text(text)]  # the node keeps its classes (output text_html)


def exclude_replaced_notebooks(app, config) -> None:
    """Add to ``exclude_patterns`` each executed notebook whose chapter is a placeholder page in this build
    (two files of one page would be a warning, and the stale notebook must not be shown)."""
    replaced = placeholder_exclusions(Path(app.srcdir))
    if replaced:
        config.exclude_patterns = [*config.exclude_patterns, *replaced]


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", dedupe_assets, priority=900)
    app.connect("config-inited", exclude_replaced_notebooks)
    app.add_post_transform(LegibleFigures)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}



