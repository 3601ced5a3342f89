"""The page lint rules of the browser check, without a browser: each rule on positive and negative
examples."""

from __future__ import annotations

import pytest
from pngs import png

from ntputils.reports.png import MIN_LABEL_PX, label_px, min_legible_width, png_dpi, png_size
from tests.page_lint import (
    figure_problem,
    legibility_problem,
    legibility_problems,
    lint_page,
    machine_paths,
    overflow_problem,
    path_needles,
    repr_output,
)


@pytest.mark.parametrize("text", [
    "'reproduced'", '"done"\n', "('reproduced', 'deviates')", "{'a': 1}", "[1, 2, 3]",
    "[np.float64(0.5), np.float64(0.25)]", "array([1., 2.])", "np.float64(0.31)",
    "{'a01_V': Claim(key='a01_V', rule=Rule(low=30.0))}", "{1, 2}", "[(0, 'a'), (1, 'b')]",
    "<Figure size 640x480 with 1 Axes>", "[<matplotlib.lines.Line2D at 0x7f3a2c1d0e50>]",
    "Text(0.5, 1.0, 'loss')", "tensor([0.1000, 0.2000])", "Counter({'a': 2})",
])
def test_reprs_are_flagged_as_printed_text_and_as_results(text):
    assert repr_output(text, result=False)
    assert repr_output(text, result=True)


@pytest.mark.parametrize("text", ["42", "0.125", "-1e-05", "nan", "True", "NTPData(V=30, m=16)"])
def test_bare_values_are_flagged_only_as_a_cells_value(text):
    assert repr_output(text, result=True)
    assert repr_output(text, result=False) is None


@pytest.mark.parametrize("text", [
    "rank in [30, 31]", "PASS | rank(WH) = min(d, r) | measured: {1: 1, 2: 2} | paper: min(d, r)",
    "[run] a01 ...\n[ok] a01: ok in 3 s", "[1, 2]\n[3, 4] are the two halves", "(our own figure)",
    "NTPData(V=30, m=16, n=71, H=1.0636)\n",
    "160 template sentences, e.g.\n  'Lily wants to try the cookies.'",
    "                  ours     paper\nm                   16        16", "", "   \n",
    "lam = 0.02: convex optimum 1.46387325, rank r = 5", "a < b and c > d",
])
def test_sentences_tables_and_logs_pass(text):
    assert repr_output(text, result=False) is None
    assert repr_output(text, result=True) is None or text.startswith("NTPData")


def test_machine_paths():
    needles = path_needles("/srv/build/ntp-book", "/home/alice")
    assert needles == ["/srv/build/ntp-book", "/home/alice", "/home/", "/tmp/", "/work/"]
    assert path_needles("/work/x", "/")[-1] == "/work/" and "/" not in path_needles("/work/x", "/")
    text = ("data in /work/shared/data (cache '/tmp/ntp-cache/x.npz'), file:///srv/build/ntp-book/a.html\n"
            "see https://example.org/home/page and and/or /homework/ and the data /work/shared/data again")
    found = machine_paths(text, needles)
    assert found == ["machine path '/srv/build/ntp-book/a.html'", "machine path '/tmp/ntp-cache/x.npz'",
                     "machine path '/work/shared/data'"]
    assert machine_paths("ours /home/bob/x", needles) == ["machine path '/home/bob/x'"]
    assert machine_paths("no paths: rank in [30, 31], ~/.cache, C:/tmp-like", needles) == []


@pytest.mark.parametrize("fig, why", [
    ({"alt": "Bar chart of the probabilities.", "caption": None}, "not in a figure with a caption"),
    ({"alt": "Bar chart of the probabilities.", "caption": ""}, "empty caption"),
    ({"alt": "Bar chart of the probabilities.", "caption": "Fig. 1.2 "}, "empty caption"),
    ({"alt": "", "caption": "The context probabilities."}, "no alt text"),
    ({"alt": None, "caption": "The context probabilities."}, "no alt text"),
    ({"alt": "../_images/4a30a3f8ba3b713246f22629f87f054ea79aad5cb2f22c99315eebf00bda69d7.png",
      "caption": "The context probabilities."}, "alt text is a file name"),
    ({"alt": "figure.png", "caption": "The context probabilities."}, "alt text is a file name"),
    ({"alt": "Bar chart of the probabilities.", "caption": "The probabilities (our own figure)."}, None),
])
def test_figure_captions_and_alt_text(fig, why):
    got = figure_problem(fig)
    assert (got is None) if why is None else got.startswith(why)


def test_legibility():
    assert label_px(1000, 500, 72) == pytest.approx(5.0)
    assert label_px(1000, 0, 100) is None and label_px(0, 10, 100) is None
    # 10 pt at 100 dpi is 13.9 px: legible down to a scale of 7/13.9 = 0.504
    assert legibility_problem(1711, 672, 100) == ("illegible: shown at 672 of 1711 px, a 10 pt label at "
                                                  "100 dpi renders 5.5 px (< 7)")
    assert legibility_problem(911, 672, 100) is None
    assert legibility_problem(1000, 505, 100) is None and legibility_problem(1000, 503, 100)
    assert legibility_problem(2000, 672, 200) is None  # a retina figure drawn at twice the dpi
    assert MIN_LABEL_PX == 7.0


def test_min_legible_width_keeps_a_10pt_label_at_7px():
    # 10 pt at 100 dpi is 13.9 px at the natural size: 1293 px may shrink to 652 px (7.003 px), not 651
    assert min_legible_width(1293, 100) == 652 and min_legible_width(1293, None) == 652
    assert legibility_problem(1293, 652, 100) is None and legibility_problem(1293, 651, 100)
    assert min_legible_width(2000, 200) == 504  # a retina figure drawn at twice the dpi
    assert min_legible_width(400, 36) == 560  # a low-dpi figure is shown larger than its pixels
    for natural in range(1, 3000, 7):
        for dpi in (72, 100, 144, 150, 200):
            assert legibility_problem(natural, min_legible_width(natural, dpi), dpi) is None


@pytest.mark.parametrize("state, why", [
    ("clipped", "wide equation 2 ('sum_j x'): 787 px in a 688 px box is cut off: its box does not scroll"),
    ("uncued", "wide equation 2 ('sum_j x'): 787 px in a 688 px box scrolls sideways but nothing shows it"),
    ("page", "wide equation 2 ('sum_j x'): 787 px in a 688 px box sticks out of the page column"),
    ("cued", None),
])
def test_wide_things_must_scroll_with_a_cue(state, why):
    problem = overflow_problem({"kind": "equation", "index": 1, "name": "sum_j x", "state": state,
                                "width": 787, "box": 688})
    assert problem == why if why is None else problem.startswith(why), problem


def test_png_dpi():
    assert png_size(png(4, 2, 100)) == (4, 2) and png_size(b"GIF89a...") is None
    assert png_dpi(png(4, 2, 100)) == 100.0
    assert png_dpi(png(4, 2, 200)) == 200.0
    assert png_dpi(png(4, 2, None)) is None
    assert png_dpi(b"GIF89a...") is None


def test_lint_page_reports_page_facts_with_where():
    report = {
        "outputs": [{"index": 0, "result": True, "text": "'reproduced'"},
                    {"index": 1, "result": False, "text": "rank in [30, 31]"}],
        "text": "Data: /work/shared/data",
        "figures": [{"index": 0, "src": "../_images/abc.png", "alt": "abc.png", "caption": None,
                     "natural": 2000, "rendered": 672},
                    {"index": 1, "src": "../_images/def.png", "alt": "A plot.", "caption": "A caption.",
                     "natural": 900, "rendered": 672}],
        "overflow": [{"kind": "table", "index": 0, "name": "a b c", "state": "clipped", "width": 900,
                      "box": 688},
                     {"kind": "table", "index": 1, "name": "d e f", "state": "cued", "width": 900,
                      "box": 688}],
    }
    illegible = ("illegible figure: figure 1 (abc.png): illegible: shown at 672 of 2000 px, a 10 pt label at "
                 "100 dpi renders 4.7 px (< 7)")
    problems = lint_page(report, ["/work/"], dpi_of=lambda src: 200.0 if src.endswith("def.png") else None)
    assert problems == [
        "raw output in cell output 0: a quoted string \"'reproduced'\"",
        "machine path '/work/shared/data' in the page text",
        "uncaptioned figure: figure 1 (abc.png): not in a figure with a caption",
        illegible,
        "wide table 1 ('a b c'): 900 px in a 688 px box is cut off: its box does not scroll",
    ]
    assert legibility_problems(report) == [illegible]  # figure 2: 900 -> 672 px at 100 dpi is 10.4 px
    assert lint_page({}, ["/work/"]) == []
