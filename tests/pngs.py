"""Tiny PNG files made in memory, for the tests of the page checks and the Sphinx extension."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int, dpi: float | None) -> bytes:
    """A white PNG, with a pHYs chunk recording ``dpi`` (as matplotlib writes it) unless None."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    phys = chunk(b"pHYs", struct.pack(">IIB", round(dpi / 0.0254), round(dpi / 0.0254), 1)) if dpi else b""
    idat = chunk(b"IDAT", zlib.compress(b"".join(b"\0" + b"\xff" * width for _ in range(height))))
    return b"\x89PNG\r\n\x1a\n" + ihdr + phys + idat + chunk(b"IEND", b"")
