"""No chapter's prose types a measured number: the scanner of ``ntputils.prose_lint`` on samples and on
every chapter source. Run ``python -m ntputils.prose_lint`` for the full report."""

from __future__ import annotations

import pytest

from ntputils.prose_lint import ALLOW, chapters, scan_chapter, scan_text, split_cells

PARAMETERS = """profile = "cpu"
seed = 0
device = "auto"
toy_distinct = 8
d = 64
seeds = 3
"""
PAPER = [{"profile": "paper", "d": 512, "seeds": 5}]
CODE = """
preregister({"x": ("claim", at_least(0.9)), "y": ("claim", within(0.163, abs_tol=0.03))})
record("sts_dist", dist, paper=0.163)
rep = similarity_with_chance(H, S, draws=20)
late = steps >= 100
"""


# --- the examples of typed measurements are caught ------------------------------------------
@pytest.mark.parametrize("text, numbers", [
    ("The direction converges like $c/\\log(1/\\lambda)$ with $c\\approx1.5$.", ["1.5"]),
    ("The direction converges like c ~ 1.5 on the Synthetic data.", ["1.5"]),
    ("Random draws can coincide: the toy has 8 distinct supports.", ["8"]),  # 8 is also a parameter's value
    ("Over the seeds about 5% of the contexts end in *to*.", ["5%"]),
    ("The finer classes are learned between epochs 25-65.", ["25", "65"]),
    ("The correlation ranges over about 0.45-0.65.", ["0.45", "0.65"]),
    ("| run | CE − H |\n|---|---|\n| paper profile | 1e-5 |", ["1e-5"]),
    ("At the end CE − H is $10^{-5}$.", ["1e-5"]),
    ("which needs $\\lambda$ of order $e^{-150}$", ["7.18e-66"]),
    ("We measure $n=73$ pairs.", ["73"]),  # name = value, but 73 is no literal of the code
    ("The paper reports 0.163 and ours is 0.224.", ["0.224"]),  # the attribution stops at "ours"
    ("(paper: 0.163, measured 0.224)", ["0.224"]),
])
def test_typed_measurements_are_reported(text, numbers):
    assert scan_text(text, CODE, PARAMETERS, PAPER) == numbers


# --- what prose may contain ----------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "Our distance is {glue:text}`sts_dist:.3f`, against the paper's 0.163.",
    "The paper reports 0.163 on its Simplified TinyStories ($m=403$, $V=104$), ranks 30–31 against 31.",
    "(paper: 0.163; rule: within 0.03)",
    "As the caption of Fig. 9 says, the steps are 0, 13, 30, 55, 60.",
    "See Fig. 6d-e, eq. (7), Theorems 1–2, Props 2–3, Sec. 4.4, App. A.4, Figs. 15-17 and chapter a01.",
    "A 2-layer GPT-2 with a BPE-64 tokenizer, the 1st token, 8x8 digits, 124M parameters.",
    "We train with $d=64$ and $\\sigma_1$, $\\tfrac12\\|W\\|_F^2$, $\\mathbb R^{V\\times m}$, $x_{k+1}$.",
    "The cpu profile trains 3 seeds.",
    "With `seeds=3` the run repeats.",
    "Each of the `toy_distinct` supports is used twice.",
    "The within-group mean must be at least 0.9, against the mean of 20 random matrices.",
    "After the first 100 steps every quantity moves the way the path moves.",
    "1. (Fig. 6a) the loss approaches the entropy.\n## 3. Symmetric cases",
    "The papers appeared at COLM 2024.",
    "```python\nx = 12345\n```",
    "A value in code: `abs_tol=0.37`.",
    "| Fig. | paper | ours |\n|---|---|---|\n| 14 | text | text |",
    "On the dims $\\mathcal K=\\{1,2,4\\}$ with counts in $\\{1,\\dots,4\\}$ (chance: 1/2 per item).",
    "All $2^3$ configurations, $\\sqrt{55}$ and $\\tfrac14$, at about 1/12 of the steps, with torch 2.13.",
    "The paper reports $\\|L\\|_*=197.88$ against $\\|S\\|_*=199.14$ (ratio 0.9937),\n"
    "and ranks 30–31 against 31.",
])
def test_explained_numbers_pass(text):
    assert scan_text(text, CODE, PARAMETERS, PAPER) == []


def test_settings_follow_the_profiles():
    """A profile value may be typed where its sentence names the profile; a stale one is reported."""
    assert scan_text("The cpu profile trains 3 seeds.", CODE, PARAMETERS, PAPER) == []
    assert scan_text("The cpu profile trains 4 seeds.", CODE, PARAMETERS, PAPER) == ["4"]
    assert scan_text("We use $d=64$.", CODE, PARAMETERS, PAPER) == []
    assert scan_text("We use $d=65$.", CODE, PARAMETERS, PAPER) == ["65"]


def test_split_cells_reads_markdown_and_code():
    src = "# %% [markdown]\n# Text 7.\n#\n# more\n\n# %%\nx = 1\n# %% [markdown]\n# end\n"
    md, code = split_cells(src)
    assert [no for no, _ in md] == [2, 3, 4, 9]
    assert "x = 1" in code and "Text" not in code


def test_allow_list_is_short_and_every_entry_is_used_and_explained():
    assert len(ALLOW) <= 15
    by_chapter = {p.stem[:3]: p for p in chapters()}
    for entry in ALLOW:
        ch, snippet, number, reason = entry
        assert len(reason) > 15, f"allow-list entry {ch} {number!r} needs a reason"
        others = [e for e in ALLOW if e != entry]
        assert len(scan_chapter(by_chapter[ch], allow=others)) > len(scan_chapter(by_chapter[ch])), (
            f"stale allow-list entry {entry}: it suppresses nothing")


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem[:3])
def test_no_typed_measurements_in_prose(chapter):
    findings = scan_chapter(chapter)
    assert not findings, (
        f"{len(findings)} number(s) in the prose of {chapter.stem} are neither glued ({{glue:text}}), "
        "attributed to the papers, references, settings stated as settings nor rule constants "
        "(see ntputils/prose_lint.py):\n"
        + "\n".join(str(f) for f in findings))
