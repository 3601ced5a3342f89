"""Lint rules the browser check applies to the facts it collects from a rendered page (pure functions).

Each rule takes the facts of one thing (an output's text, the page's visible text, one figure, one table)
and returns a problem (a string) or ``None``; :func:`lint_page` applies them all to one page report of
:data:`tests.browser_check.CHECK_JS`. It lives with the tests: nothing in the book's build or runner uses it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

from ntputils.reports.png import DEFAULT_DPI, LABEL_PT, MIN_LABEL_PX, label_px

#: an image alt text that is a generated name rather than a description: a long hex hash or a file name.
FILE_ALT = re.compile(r"[0-9a-fA-F]{32,}|\.(png|jpe?g|svg|gif|pdf)\s*$", re.IGNORECASE)
CAPTION_NUMBER = re.compile(r"^\s*(Fig(ure)?\.?|Table)\s*[\d.]+\s*", re.IGNORECASE)

NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(inf|nan)", re.IGNORECASE)
#: reprs of objects nobody meant to show: matplotlib artists and figures, anything printed with its address
STRAY = re.compile(r"^\[?<[\w.]+[ >].*>\]?$|\bat 0x[0-9a-f]{6,}>|^Text\(.*\)$", re.DOTALL)
#: calls whose repr is raw numbers: numpy scalars and arrays, tensors, the collections' wrappers
REPR_CALL = re.compile(r"^(np\.|numpy\.|torch\.)?(array|tensor|float\d*|int\d*|bool_|str_|Counter|"
                       r"defaultdict|OrderedDict|dict_keys|dict_values|dict_items|Series|Index)\(")
OPENERS = {"[": "]", "{": "}", "(": ")"}


def _one_bracketed(text: str) -> bool:
    """Whether ``text`` is a single bracketed expression: its first bracket closes at its very end
    (``[1, 2]`` is, ``[ok] done`` and ``[1]\\n[2]`` are not). Quoted strings are skipped."""
    if not text or text[0] not in OPENERS:
        return False
    depth, quote, i = 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in OPENERS:
            depth += 1
        elif c in OPENERS.values():
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
        i += 1
    return False


def repr_output(text: str, result: bool) -> str | None:
    """Why a cell's text output is a raw Python repr or a stray output, or ``None`` if it reads as text.

    ``result``: the output is an execute result (the value of a cell's last line), not printed text. The
    rule is about the *whole* text: a quoted string, a tuple/list/dict/set of literals, a dict or list repr
    (``{'a': ...``, ``[np.float64(...)``), an ``array(...)``/``np.float64(...)``, a matplotlib artist; a
    bare number only as an execute result. A sentence that merely contains brackets is fine.
    """
    s = text.strip()
    if not s:
        return None
    if STRAY.search(s):
        return f"stray output {_short(s)}"
    if NUMBER.fullmatch(s):
        return f"a bare number as the cell's value: {_short(s)}" if result else None
    try:
        value = ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    else:
        if isinstance(value, (str, bytes)):
            return f"a quoted string {_short(s)}"
        if isinstance(value, (tuple, list, dict, set, frozenset)):
            return f"a Python {type(value).__name__} repr {_short(s)}"
        if result:
            return f"a Python value {_short(s)}"
        return None
    if s.startswith("{'") or s.startswith('{"'):
        return f"a Python dict repr {_short(s)}"
    if _one_bracketed(s) and re.match(r"^[\[({]\s*([\[({'\"\d.+-]|np\.|array\(|tensor\()", s):
        return f"a Python {'list' if s[0] == '[' else 'tuple/dict/set'} repr {_short(s)}"
    call = REPR_CALL.match(s)
    if call and _one_bracketed(s[call.end() - 1:]):
        return f"a raw {call.group(0)[:-1]} repr {_short(s)}"
    if result and re.match(r"^[A-Za-z_][\w.]*\(", s) and _one_bracketed(s[s.index("("):]):
        return f"an object repr as the cell's value {_short(s)}"
    return None


def _short(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= n else s[:n] + "...")


def path_needles(root: str, home: str) -> list[str]:
    """The substrings that give away the build machine: the project root, its user's home and the usual
    scratch/user folders."""
    needles = [root.rstrip("/"), home.rstrip("/"), "/home/", "/tmp/", "/work/"]
    return list(dict.fromkeys(n for n in needles if len(n) > 1))


def machine_paths(text: str, needles: Iterable[str]) -> list[str]:
    """The absolute paths of the build machine in visible ``text`` (one snippet per distinct path start).

    A needle counts where a path starts: at the start of the text, after a space, quote, bracket, ``=``,
    ``:`` or after ``file://``; not inside a URL or a longer word (``https://x.org/home/`` is no path)."""
    found: dict[str, str] = {}
    for needle in needles:
        pattern = re.compile(r"(?:(?<![\w./~-])|(?<=file://))" + re.escape(needle) + r"[^\s'\"<>)\]]*")
        for m in pattern.finditer(text):
            found.setdefault(m.group(0), m.group(0))
    return [f"machine path {p!r}" for p in sorted(found)][:10]


def figure_problem(fig: dict[str, Any]) -> str | None:
    """Why an image output (``fig``: ``alt``, ``caption`` = its figure's figcaption text or ``None`` when
    it is in no ``figure``) is uncaptioned, or ``None``."""
    caption = CAPTION_NUMBER.sub("", (fig.get("caption") or "").strip()).strip(" #")
    if fig.get("caption") is None:
        return "not in a figure with a caption"
    if not caption:
        return "empty caption"
    alt = (fig.get("alt") or "").strip()
    if not alt:
        return "no alt text"
    if FILE_ALT.search(alt):
        return f"alt text is a file name: {_short(alt, 40)}"
    return None


def legibility_problem(natural_width: float, rendered_width: float, dpi: float) -> str | None:
    """A figure shrunk so far that its default-size labels fall below :data:`MIN_LABEL_PX`, or ``None``."""
    px = label_px(natural_width, rendered_width, dpi)
    if px is None or px >= MIN_LABEL_PX:
        return None
    return (f"illegible: shown at {rendered_width:.0f} of {natural_width:.0f} px, a {LABEL_PT:g} pt label at "
            f"{dpi:g} dpi renders {px:.1f} px (< {MIN_LABEL_PX:g})")


#: what a wide thing's ``state`` means (``overflow`` facts of :data:`tests.browser_check.CHECK_JS`)
OVERFLOW_STATES = {
    "clipped": "is cut off: its box does not scroll",
    "uncued": "scrolls sideways but nothing shows it (no scroll cue: book/_static/scroll_cue.js not loaded?)",
    "page": "sticks out of the page column (no box of its own scrolls)",
}


def overflow_problem(item: dict[str, Any]) -> str | None:
    """Why a display equation, table, figure or output block that is wider than its box (``item``: ``kind``,
    ``index``, ``name``, ``state``, ``width`` of its content, ``box`` width) is a problem, or ``None`` when it
    scrolls with a visible cue (``state`` "cued")."""
    why = OVERFLOW_STATES.get(item["state"])
    if why is None:
        return None
    return (f"wide {item['kind']} {item['index'] + 1} ({_short(item['name'], 40)}): {item['width']:.0f} px "
            f"in a {item['box']:.0f} px box {why}")


def legibility_problems(report: dict[str, Any], dpi_of=lambda src: None) -> list[str]:
    """The figures of one page report whose ``LABEL_PT`` labels render below :data:`MIN_LABEL_PX`
    (``dpi_of(src)``: an image's dpi, None: the default). The book keeps each figure at least
    :func:`min_legible_width` wide (``ntputils.reports.sphinx_ext``), so this fails only where that is
    lost."""
    problems = []
    for fig in report.get("figures", []):
        why = legibility_problem(fig["natural"], fig["rendered"], dpi_of(fig["src"]) or DEFAULT_DPI)
        if why:
            problems.append(f"illegible figure: figure {fig['index'] + 1} "
                            f"({fig['src'].rsplit('/', 1)[-1][:24]}): {why}")
    return problems


def lint_page(report: dict[str, Any], needles: Iterable[str], dpi_of=lambda src: None) -> list[str]:
    """The lint problems of one page report: raw reprs/stray outputs, machine paths, uncaptioned and
    illegible figures, and wide equations, tables, figures and output blocks that are cut off or scroll
    without a visible cue."""
    problems = []
    for out in report.get("outputs", []):
        why = repr_output(out["text"], out["result"])
        if why:
            problems.append(f"raw output in cell output {out['index']}: {why}")
    problems += [f"{p} in the page text" for p in machine_paths(report.get("text", ""), needles)]
    for fig in report.get("figures", []):
        where = f"figure {fig['index'] + 1} ({fig['src'].rsplit('/', 1)[-1][:24]})"
        why = figure_problem(fig)
        if why:
            problems.append(f"uncaptioned figure: {where}: {why}")
    problems += legibility_problems(report, dpi_of)
    problems += [why for why in map(overflow_problem, report.get("overflow", [])) if why]
    return problems
