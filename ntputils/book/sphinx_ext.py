"""Sphinx extension of the book: drops duplicate script/stylesheet entries of each page (sphinx-thebe
0.3.1 registers its inline script twice: ``Identifier 'THEBE_JS_URL' has already been declared``), and
keeps a stale executed notebook ``book/<chapter>.ipynb`` out of the book where a placeholder page
``book/<chapter>.md`` stands for the chapter (:func:`ntputils.book.html.write_placeholders`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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


def exclude_replaced_notebooks(app, config) -> None:
    """Add to ``exclude_patterns`` each executed notebook whose chapter is a placeholder page in this build
    (two files of one page would be a warning, and the stale notebook must not be shown)."""
    from ntputils.book.html import placeholder_exclusions

    replaced = placeholder_exclusions(Path(app.srcdir))
    if replaced:
        config.exclude_patterns = [*config.exclude_patterns, *replaced]


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", exclude_replaced_notebooks)
    app.connect("html-page-context", dedupe_assets, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
