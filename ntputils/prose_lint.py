"""Lint of the chapters' prose: no typed number (every measured number is glued from a record).

Every chapter states the numbers it measures through ``record(name, value)`` and myst's
``{glue:text}`name```, so a re-run (another profile, seed or data version) cannot leave the prose stale.
This module reads the markdown cells of a jupytext percent-format chapter (``# %% [markdown]`` cells,
lines prefixed by ``# ``) and reports every number in them that is not *explained*. The rule is
deliberately "guilty unless explained" rather than a list of suspicious words: a typed measurement can
sit next to any noun ("8 distinct supports"), so a number is accepted only when it is one of

1. **glued** -- ``{glue:text}`...``` roles are removed before scanning; so are the other roles
   (``{cite}``, ``{prf:ref}``), inline code (parameter names such as `` `ufm_steps` ``, code snippets of a
   rule) and fenced code blocks;
2. **a reference** -- a number after Fig./Figs./eq./Sec./App./Thm./Prop./Lemma/Cor./Definition/Table/
   chapter/Step (with lists and ranges: "Figs. 15-17", "Props 2--3", "eq. (7)"), a list or heading
   enumerator ("1. ", "## 3. "), or part of a name (a01, GPT-2, BPE-64, 2-layer, 8x8, 1st, A.4);
3. **formula notation** -- sub- and superscripts of a symbol (``\\sigma_1``, ``x^{2}``), ``\\tfrac12``, and
   the constants 0, 1 and 2 inside ``$...$`` math;
4. **attributed** -- in the scope of a word that attributes it to the papers or to a fixed reference
   ("paper", "authors", "caption", "reports", "spec", "reference"): from that word to the end of the
   sentence, cut short by a word that claims the number as ours ("our", "we", "here", "measured", ...);
5. **a setting stated as a setting** -- ``$name=value$`` in math (an equality, not ``\\approx``) whose value
   is a numeric literal of the chapter's code (its parameters cell, a keyword argument, ...);
6. **a rule constant** -- a numeric literal of the chapter's code that fixes a rule or setting before
   any measurement: an argument of ``within``/``at_least``/``at_most``/``between``/``above_chance``/
   ``preregister_similarity``, a ``paper=``/``tol=`` value, a non-styling keyword argument of a call
   (``draws=20``), or a constant in a comparison (``steps >= 100``). Profile values are *not* in
   this set: a chapter setting in running text must be glued or named (`` `toy_distinct` ``), since it
   changes with the profile;
7. **a year** after a capitalised name ("COLM 2024");
8. **allow-listed** -- :data:`ALLOW`, a short per-chapter list of (snippet, number, reason).

Anything else is reported as ``file:line: number in 'text'``. Run ``python -m ntputils.prose_lint`` for
the report of every chapter.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

#: (chapter prefix, text snippet on the line, number, reason): numbers that are neither measured nor
#: covered by the rules above. Keep it short; every entry says why it is not a measurement.
ALLOW: list[tuple[str, str, str, str]] = [
    ("a01", "sum of $48$ counts", "48", "derivation of a rule: 16 contexts x 3 kept endings"),
    ("a01", r"\sqrt{12}\approx3.5", "3.5", "derivation of a rule: sqrt(12), the sd of a sum of 48 counts"),
]

REF_WORDS = (r"Figs?|Figures?|eqs?|Eqs?|equations?|Secs?|Sections?|App|Apps|Appendix|Appendices|Thms?|"
             r"Theorems?|Props?|Propositions?|Lemmas?|Cor|Corollary|Corollaries|Def|Definitions?|Remarks?|"
             r"Assumptions?|Tables?|chapters?|Chapters?|Steps?|Examples?|Algorithms?|footnotes?|panels?|v|"
             r"tiers?|axis|axes|dims?|dimensions?|claims?|PCs?|modes?|items?|rules?|cases?|columns?|rows?")
# a reference word, then a list/range of numbers or panel letters ending right before the number
_REF_BEFORE = re.compile(rf"\b(?:{REF_WORDS})\.?\s*[(\[]?"
                         r"(?:[\w.()]+\s*(?:,|-|–|—|and|or|&|/|\\&)\s*[(\[]?)*$")
_ATTRIB = re.compile(r"\b(?:paper(?!\s+profile)|papers|paper's|authors?|authors'|caption|reports?|reported|"
                     r"spec|spec's|references?|reference's|published)\b", re.IGNORECASE)
_OURS = re.compile(r"\b(?:our|ours|we|us|here|measured|this run|in this run|got|obtain(?:s|ed)?|gives?)\b",
                   re.IGNORECASE)
# a sentence ends at . ! ? before a capital (or the end), and at a table cell border
_SENTENCE_END = re.compile(r"[.!?](?=\*{0,2}\s+[A-Z*($`\\]|\s*$)|(?<!\\)\|")
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")
_CODE = re.compile(r"``[^`]*``|`[^`]*`")
_LINK = re.compile(r"\]\([^)]*\)|https?://\S+")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.\\])((?:\d{1,3}(?:(?:,|\{,\})\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+−]?\d+)?)"
                     r"(\s?%?)")
STYLE_KW = {"fontsize", "ms", "markersize", "lw", "linewidth", "alpha", "s", "size", "figsize", "dpi", "pad",
            "fraction", "width", "height", "rotation", "zorder", "ncol", "labelsize", "length", "shrink",
            "aspect", "panel_size", "max_labels", "w_pad", "h_pad", "wspace", "hspace", "bins", "top",
            "max_font", "min_font", "mew", "markeredgewidth", "capsize", "elinewidth", "x", "y", "xytext",
            "bbox_to_anchor", "loc", "ha", "va", "vmin", "vmax"}
RULE_FUNCS = {"within", "at_least", "at_most", "between", "above_chance", "preregister_similarity"}
VALUE_KW = {"paper", "tol", "abs_tol", "rel_tol", "margin"}


@dataclass(frozen=True)
class Finding:
    """One unexplained number: where, which, and the line it is on."""

    path: str
    line: int
    number: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.number!r} in {self.text.strip()!r}"


# ------------------------------------------------------------------------------------------------
# the chapter source
# ------------------------------------------------------------------------------------------------
def split_cells(source: str) -> tuple[list[tuple[int, str]], str]:
    """(markdown lines as ``(line number, text without '# ')``, code of all code cells)."""
    md: list[tuple[int, str]] = []
    code: list[str] = []
    kind = None
    for no, line in enumerate(source.splitlines(), start=1):
        if line.startswith("# %%"):
            kind = "markdown" if "[markdown]" in line else "code"
            continue
        if kind == "markdown":
            if line.startswith("# "):
                md.append((no, line[2:]))
            elif line.strip() == "#":
                md.append((no, ""))
        elif kind == "code":
            code.append(line)
    return md, "\n".join(code)


def _value(text: str) -> float | None:
    try:
        return float(text.replace("{,}", "").replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def _const(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const(node.operand)
        return None if v is None else -v
    return None


def _constants(node: ast.AST) -> set[float]:
    return {v for n in ast.walk(node) if (v := _const(n)) is not None}


@dataclass
class CodeFacts:
    """What the prose may cite from a chapter's code: rule constants (rule 6), every numeric literal,
    its profiles' values (the parameters cell's and the profile files') and its parameter names (rule 5)."""

    rules: set[float]
    literals: set[float]
    profile_values: set[float]
    parameters: set[str]


def code_literals(code: str, parameters: str = "", profiles: Sequence[dict] = ()) -> CodeFacts:
    """The :class:`CodeFacts` of a chapter's ``code``, its ``parameters`` cell and its other ``profiles``'
    values (see the module docstring, rules 5-6)."""
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return CodeFacts(set(), set(), set(), set())
    rules: set[float] = set()
    profile_values: set[float] = set()
    names: set[str] = set()
    for node in ast.parse(parameters).body if parameters else []:
        name = getattr(node.targets[0], "id", "") if isinstance(node, ast.Assign) else ""
        if name and name not in ("profile", "seed", "device"):
            names.add(node.targets[0].id)
            profile_values |= _constants(node.value)
    for values in profiles:
        profile_values |= _constants(ast.parse(repr(values), mode="eval"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in RULE_FUNCS:
                rules |= _constants(node)
            for kw in node.keywords:
                if kw.arg in VALUE_KW:
                    rules |= _constants(kw.value)
                elif kw.arg and kw.arg not in STYLE_KW and (v := _const(kw.value)) is not None:
                    rules.add(v)
        elif isinstance(node, ast.Compare):
            for comp in node.comparators:
                rules |= _constants(comp)
    return CodeFacts(rules, _constants(tree) | profile_values, profile_values, names)


def _matches(value: float, pool: set[float], percent: bool) -> bool:
    cands = {value, value / 100} if percent else {value}
    for c in cands:
        for p in pool:
            if math.isclose(c, p, rel_tol=1e-9, abs_tol=1e-15):
                return True
            if float(p).is_integer() and abs(p) <= 30 and math.isclose(c, 10.0 ** p, rel_tol=1e-9):
                return True  # a log10 setting stated as a power of ten
    return False


# ------------------------------------------------------------------------------------------------
# the prose
# ------------------------------------------------------------------------------------------------
def paragraphs(md: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Blank-line separated paragraphs of markdown lines, outside fenced code blocks."""
    out: list[list[tuple[int, str]]] = []
    cur: list[tuple[int, str]] = []
    fence = None
    for no, text in md:
        stripped = text.strip()
        if stripped.startswith("```"):
            info = stripped[3:].strip()
            if fence is None:
                fence = "code" if info and not info.startswith("{") else "directive"
            else:
                fence = None
            if cur:
                out.append(cur)
            cur = []
            continue
        if fence == "code" or (fence == "directive" and stripped.startswith(":")):
            continue
        if not stripped or stripped.startswith("#") or stripped.startswith("|"):
            if cur:
                out.append(cur)
            cur = []
            if stripped:
                out.append([(no, text)])  # headings and table rows stand alone
            continue
        cur.append((no, text))
    if cur:
        out.append(cur)
    return out


def blank_reference_columns(md: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Markdown tables: blank the cells of columns whose header names a figure/equation/section, whose
    numbers are references (rule 2), e.g. the "Fig." column of a comparison table."""
    out = list(md)
    i = 0
    while i < len(out):
        if not out[i][1].lstrip().startswith("|"):
            i += 1
            continue
        j = i
        while j < len(out) and out[j][1].lstrip().startswith("|"):
            j += 1
        header = out[i][1].strip().strip("|").split("|")
        ref = re.compile(r"\b(?:figs?|figures?|eqs?|sec|thm|props?|table)\b", re.IGNORECASE)
        refcols = {k for k, h in enumerate(header) if ref.search(h)}
        for r in range(i + 1, j):
            no, text = out[r]
            cells = text.split("|")
            for k in refcols:
                if k + 1 < len(cells):
                    cells[k + 1] = " " * len(cells[k + 1])
            out[r] = (no, "|".join(cells))
        i = j
    return out


def _blank(match: re.Match) -> str:
    return " " * (match.end() - match.start())


def _clean_math(math_text: str) -> str:
    """Math with formula notation blanked (rule 3), powers of ten written as numbers."""
    s = re.sub(r"\\[dt]?frac\s*(?:\{[^{}]*\}|\w)\s*(?:\{[^{}]*\}|\w)", _blank, math_text)
    s = re.sub(r"\\sqrt\s*(?:\{[^{}]*\}|\w)", _blank, s)  # sqrt of a constant: formula notation
    s = re.sub(r"(?<![\d.])\d+\^(?:\{\d+\}|\d)", _blank, s)  # 2^3: a formula, not a value
    s = s.replace("\\%", "% ")
    s = re.sub(r"\\\{[\d,\s]*(?:\\dots|\\ldots)?[\d,\s]*\\\}", _blank, s)  # index sets {1,2,4}, {1,...,4}
    s = re.sub(r"\\[a-zA-Z]+", lambda m: " " * len(m.group()) if m.group() not in (r"\approx", r"\sim") else
               "≈" + " " * (len(m.group()) - 1), s)
    s = re.sub(r"(?<![\d\s{])([_^])(\{[^{}]*\}|\\?\w)", _blank, s)  # sub/superscript of a symbol
    s = re.sub(r"(?<![\w.])[012](?![\d.,eE])", _blank, s)  # formula constants 0, 1, 2
    return s


def _pow10(m: re.Match) -> str:
    """``a\\cdot10^{-5}`` / ``10^{-5}`` / ``e^{-150}`` -> one number token of the same length."""
    mant, base, exp = m.group(1), m.group(2), m.group(3) or m.group(4)
    value = (float(mant) if mant else 1.0) * (10.0 ** float(exp) if base == "10" else math.exp(float(exp)))
    tok = re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{value:.3g}")
    if len(tok) > len(m.group()):
        tok = re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{value:.0e}")
    return tok + " " * (len(m.group()) - len(tok))


_POW = re.compile(r"(?:(\d+(?:\.\d+)?)\s*\\cdot\s*)?(?:(?<![\w.])|(?<=\\cdot)|(?<=\\cdot ))(10|e)"
                  r"\^(?:\{([-−]?\d+)\}|([-−]?\d)(?!\d))")


def scan_paragraph(lines: list[tuple[int, str]], facts: CodeFacts) -> list[tuple[int, str, str]]:
    """The unexplained numbers of one paragraph: ``(line number, number, line text)``."""
    raw = "\n".join(text for _, text in lines)
    starts = [0]
    for _, text in lines[:-1]:
        starts.append(starts[-1] + len(text) + 1)
    s = _GLUE.sub(lambda m: "G" + " " * (len(m.group()) - 1), raw)
    s = _ROLE.sub(_blank, s)
    s = _CODE.sub(lambda m: "C" + " " * (len(m.group()) - 1), s)
    s = _LINK.sub(_blank, s)
    s = re.sub(r"^\s*(?:[-*]\s+)?\d+\.\s", _blank, s, flags=re.MULTILINE)  # list enumerators
    s = re.sub(r"\(\d\)", _blank, s)  # (1), (2): enumerators in running text
    s = re.sub(r"(?<![\d.])1/\d+\b", _blank, s)  # 1/2, 1/12: fractions such as a chance level
    s = re.sub(r"^(\s*#+\s*)(\d+\.)", lambda m: m.group(1) + " " * len(m.group(2)), s, flags=re.MULTILINE)
    # math: blank formula notation; remember where `name = value` settings are
    settings: list[tuple[int, int]] = []
    pieces = []
    last = 0
    for m in _MATH.finditer(s):
        pieces.append(s[last:m.start()])
        inner = _POW.sub(_pow10, m.group())
        for a in re.finditer(r"(?<![<>!\\])=\s*([\d.,]+(?:e-?\d+)?)(?=\s*(?:\$|,|\\|\s|$))", inner):
            settings.append((m.start() + a.start(1), m.start() + a.end(1)))
        pieces.append(_clean_math(inner))
        last = m.end()
    pieces.append(s[last:])
    s = "".join(pieces)
    s = _POW.sub(_pow10, s)
    # sentences; attribution scopes (rule 4)
    ends = [m.end() for m in _SENTENCE_END.finditer(s)] + [len(s)]
    names = [re.escape(p) for p in facts.parameters]
    names_setting = re.compile(r"\bprofiles?\b" + "".join(rf"|`{n}\b[^`]*`" for n in names))
    scopes = []
    for m in _ATTRIB.finditer(s):
        end = min(e for e in ends if e > m.start())
        stop = _OURS.search(s, m.end(), end)
        scopes.append((m.start(), stop.start() if stop else end))
    found = []
    for m in _NUMBER.finditer(s):
        num, pct = m.group(1), m.group(2).strip()
        a, b = m.start(1), m.start(1) + len(num)
        before, after = s[max(0, a - 80):a], s[b:b + 3]
        value = _value(num)
        if value is None:
            continue
        if _REF_BEFORE.search(before):
            continue
        if re.search(r"[A-Za-z]-$|[A-Za-z]\.$|[A-Z]\s?$|#$", before) or re.match(r"-?[A-Za-z]", after):
            continue  # part of a name: GPT-2, A.4, 2-layer, 8x8, 1st, 124M
        if re.search(r"\b(?:torch|numpy|scipy|cvxpy|python|Python|matplotlib|version)\s*$", before):
            continue  # a software version
        if any(x <= a < y for x, y in scopes):
            continue
        if value in (0.0, 1.0) and not pct:
            continue  # "at most 1", "toward 0": too common as plain constants to be a measurement
        if any(x <= a and b <= y for x, y in settings) and _matches(value, facts.literals, False):
            continue
        if _matches(value, facts.rules, bool(pct)):
            continue
        if _matches(value, facts.profile_values, bool(pct)):
            start = max([0] + [e for e in ends if e <= a])
            end = min(e for e in ends if e > a)
            if names_setting.search(raw[start:end]):
                continue  # a profile value in a sentence that names the profile or the parameter
        if re.fullmatch(r"(19|20)\d\d", num) and re.search(r"[A-Z][\w.&]*\s*,?\s*$", before):
            continue
        line_idx = max(i for i, st in enumerate(starts) if st <= a)
        found.append((lines[line_idx][0], num + pct, lines[line_idx][1]))
    return found


def scan_chapter(path: Path, allow: list[tuple[str, str, str, str]] | None = None) -> list[Finding]:
    """Every unexplained number in the markdown of one chapter source (see the module docstring)."""
    text = path.read_text(encoding="utf-8")
    md, code = split_cells(text)
    cell = re.search(r'^# %% tags=\["parameters"\]\n(.*?)(?=^# %%)', text, re.S | re.M)
    profiles = [yaml.safe_load(p.read_text()) for p in sorted(path.parent.glob(f"{path.stem}.*.yaml"))]
    facts = code_literals(code, cell.group(1) if cell else "", profiles)
    allow = ALLOW if allow is None else allow
    mine = [(snip, num) for ch, snip, num, _ in allow if path.stem.startswith(ch)]
    out = []
    for para in paragraphs(blank_reference_columns(md)):
        for line, num, text in scan_paragraph(para, facts):
            if any(snip in text and num == n for snip, n in mine):
                continue
            out.append(Finding(path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path),
                               line, num, text))
    return out


def scan_text(markdown: str, code: str = "", parameters: str = "",
              profiles: Sequence[dict] = ()) -> list[str]:
    """The unexplained numbers of a markdown snippet (for tests): the numbers as typed."""
    md = [(i, line) for i, line in enumerate(markdown.splitlines(), start=1)]
    facts = code_literals(code, parameters, profiles)
    paras = paragraphs(blank_reference_columns(md))
    return [num for para in paras for _, num, _ in scan_paragraph(para, facts)]


def chapters() -> list[Path]:
    """The chapter sources, ``notebooks/[a-z][0-9][0-9]_*.py``."""
    return sorted(NOTEBOOKS.glob("[a-z][0-9][0-9]_*.py"))


if __name__ == "__main__":  # pragma: no cover - report for humans
    total = 0
    for chapter in chapters():
        findings = scan_chapter(chapter)
        total += len(findings)
        print(f"{chapter.stem}: {len(findings)}")
        for f in findings:
            print("  ", f)
    print(f"{total} unexplained number(s)")
    sys.exit(1 if total else 0)
