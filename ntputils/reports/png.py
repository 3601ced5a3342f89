"""PNG facts the book's build needs: a PNG's pixel size and dpi, and the narrowest width at which its
default-size labels stay legible (:mod:`ntputils.reports.sphinx_ext` keeps every figure at least that wide;
the browser test, ``tests/browser_check.py``, fails a page where that is lost)."""

from __future__ import annotations

import math
import struct

#: matplotlib's default figure dpi (the inline backend of matplotlib-inline >= 0.1.7 keeps it, and no chapter
#: sets ``figure.dpi``/``savefig.dpi``); used when the PNG carries no pHYs chunk to read it from.
DEFAULT_DPI = 100.0
#: matplotlib's default font size (``font.size``), in points: the tick and axis labels of a chapter figure.
LABEL_PT = 10.0
#: the smallest CSS px height of that label we accept: below 7 px text is no longer legible on a screen.
MIN_LABEL_PX = 7.0

def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels of a PNG (its IHDR chunk), or ``None`` when ``data`` is no PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    return struct.unpack(">II", data[16:24])


def min_legible_width(natural_width: float, dpi: float | None) -> int:
    """The narrowest CSS width at which a ``natural_width`` px image drawn at ``dpi`` (None: the default)
    shows a ``LABEL_PT`` label at :data:`MIN_LABEL_PX` or more: the width the book keeps every figure at
    (``ntputils.reports.sphinx_ext``; a scroll container takes what the column cannot)."""
    scale = LABEL_PT * (dpi or DEFAULT_DPI) / 72.0
    return math.ceil(natural_width * MIN_LABEL_PX / scale - 1e-9)


def png_dpi(data: bytes) -> float | None:
    """The dpi a PNG records in its pHYs chunk (matplotlib writes it), or ``None``."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"pHYs" and length >= 9:
            x, _, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
            return round(x * 0.0254, 1) if unit == 1 and x else None
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + length
    return None


def label_px(natural_width: float, rendered_width: float, dpi: float) -> float | None:
    """The CSS px height a ``LABEL_PT`` label drawn at ``dpi`` has once the image is shown at
    ``rendered_width`` (None when the image is not shown or has no size)."""
    if natural_width <= 0 or rendered_width <= 0:
        return None
    return LABEL_PT * dpi / 72.0 * rendered_width / natural_width
