"""The book's Sphinx extension keeps each output figure at the width its 10 pt labels need to be 7 px
(ntputils.reports.sphinx_ext.LegibleFigures): image nodes of cell outputs and figures, and PNG data URIs in
HTML outputs, go into a scroll container carrying that minimum width; other images are left alone."""

from __future__ import annotations

import base64
from types import SimpleNamespace

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from pngs import png

from ntputils.reports.png import min_legible_width
from ntputils.reports.sphinx_ext import LegibleFigures, legible_width, wrap_data_images


def test_legible_width_reads_the_png():
    assert legible_width(png(1293, 2, 100)) == 652 == min_legible_width(1293, 100)
    assert legible_width(png(1293, 2, None)) == 652  # no pHYs: matplotlib's 100 dpi
    assert legible_width(png(2000, 2, 200)) == 504
    assert legible_width(b"GIF89a") is None


def test_data_uri_images_of_html_outputs_are_wrapped():
    b64 = base64.b64encode(png(1000, 3, 100)).decode()
    text = f'<figure><img src="data:image/png;base64,{b64}" alt="A plot." style="max-width: 100%"></figure>'
    wrapped, count = wrap_data_images(text + '<img src="data:image/gif;base64,R0lGOD">')
    assert count == 1
    assert wrapped.startswith('<figure><div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: '
                              '504px"><img src="data:image/png;base64,')
    assert wrapped.endswith('</div></figure><img src="data:image/gif;base64,R0lGOD">')
    assert wrap_data_images("<p>no image</p>") == ("<p>no image</p>", 0)


def test_the_post_transform_wraps_output_and_figure_pngs(tmp_path):
    (tmp_path / "out.png").write_bytes(png(1400, 2, 100))
    (tmp_path / "fig.png").write_bytes(png(700, 2, 200))
    (tmp_path / "logo.png").write_bytes(png(900, 2, 100))
    doc = new_document("page", get_default_settings(Parser))
    output = nodes.container(classes=["cell_output"])
    output += nodes.image(uri="out.png", candidates={"*": "out.png"})
    b64 = base64.b64encode(png(1000, 3, 100)).decode()
    output += nodes.raw("", f'<img src="data:image/png;base64,{b64}">', format="html",
                        classes=["output", "text_html"])
    figure = nodes.figure()
    figure += nodes.image(uri="fig.png", candidates={"*": "fig.png"})
    figure += nodes.caption(text="A caption.")
    logo = nodes.image(uri="logo.png", candidates={"*": "logo.png"})
    doc += [output, figure, nodes.paragraph("", "", logo)]

    class Transform(LegibleFigures):
        app = SimpleNamespace(srcdir=str(tmp_path))

    Transform(doc).run()
    opened = [n.astext() for n in doc.findall(nodes.raw) if "ntp-min-width" in n.astext()]
    assert opened[0] == '<div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: 706px">'
    assert opened[1].startswith('<div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: 504px">')
    assert opened[2] == '<div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: 177px">'
    assert len(opened) == 3  # the logo in a paragraph is no output figure
    assert [type(n).__name__ for n in output.children] == ["raw", "image", "raw", "raw"]
    assert output[2].astext() == "</div>" and output[3]["classes"] == ["output", "text_html"]
    assert [type(n).__name__ for n in figure.children] == ["raw", "image", "raw", "caption"]
