"""A tiny Sphinx extension for the book (listed in ``_config.yml`` under ``sphinx.extra_extensions``).

sphinx-thebe 0.3.1 (pulled in by Jupyter Book 1) registers its inline configuration script twice,
so every page declares ``const THEBE_JS_URL`` twice and the browser throws
``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared``. This extension removes
duplicate script and stylesheet entries from each page's context before it is rendered.
"""

from __future__ import annotations

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


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", dedupe_assets, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
