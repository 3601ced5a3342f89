"""The browser check (Playwright + Chromium) on hand-written pages: a broken page is flagged with every
problem it has, a good page passes, the screenshot is capped, and a missing Chromium is a clear error."""

from __future__ import annotations

import base64
import struct

import pytest

from ntputils.book.browser import ChromiumError, check_book, find_chromium, run_browser_check
from ntputils.book.project import Project

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
                       "AAAABJRU5ErkJggg==")

GOOD = """<html><body><article><p>fine</p><img src="data:image/png;base64,{b64}"><img src="../pic.png">
<div style="height: 20000px">a long page</div></article></body></html>"""

BROKEN = """<html><body><article>
<img src="missing.png"><img src="http://example.invalid/x.png">
<div class="cell_output"><pre>Traceback (most recent call last):
  File "x.py", line 1
ValueError: bad</pre></div>
<div class="output error">an error output</div>
<span class="math">x^2</span>
<script>fetch("https://example.invalid/data.json").catch(() => null); throw new Error("boom");</script>
</article></body></html>"""


def have_chromium() -> bool:
    try:
        find_chromium()
    except ChromiumError:
        return False
    return True


needs_chromium = pytest.mark.skipif(not have_chromium(), reason="chromium not installed")


def make_site(root, broken: bool) -> Project:
    html = root / "_build" / "html"
    (html / "book").mkdir(parents=True)
    (html / "pic.png").write_bytes(PNG)
    (html / "book" / "a01_good.html").write_text(GOOD.format(b64=base64.b64encode(PNG).decode()))
    (html / "index.html").write_text('<meta http-equiv="refresh" content="0; url=book/a01_good.html">')
    if broken:
        (html / "book" / "a00_broken.html").write_text(BROKEN)  # loaded just before the good page
        (html / "gone.html").write_text('<meta http-equiv="refresh" content="0; url=book/nowhere.html">')
    return Project(root)


@needs_chromium
def test_broken_page_is_flagged_good_page_passes(tmp_path):
    pytest.importorskip("playwright")
    project = make_site(tmp_path, broken=True)
    lines: list[str] = []
    results, shot = check_book(project, screenshot="a01", out=lines.append)
    by_name = {r.page.name: r for r in results}
    assert set(by_name) == {"a01_good.html", "index.html", "a00_broken.html", "gone.html"}
    assert by_name["a01_good.html"].problems == [] and by_name["a01_good.html"].images == 2
    assert by_name["index.html"].problems == []
    assert by_name["gone.html"].problems[0].startswith("redirect target missing:")
    problems = by_name["a00_broken.html"].problems
    expected = ["image file missing: missing.png", "image from the network: http://example.invalid/x.png",
                "1 math element(s) not typeset, e.g. 'x^2'", "page has math but MathJax typeset nothing",
                "error shown: output error: an error output",
                "network request: http://example.invalid/x.png", "network request: https://example.invalid/data.json",
                "resource failed to load: net::ERR_FILE_NOT_FOUND (image)"]
    for problem in expected:
        assert problem in problems, (problem, problems)
    assert any(p.startswith("traceback in output: Traceback (most recent call last)") for p in problems)
    assert any(p.startswith("JavaScript exception: Error: boom") for p in problems)
    assert "[FAIL] book/a00_broken.html: 2 image(s), 0 typeset math" in lines
    # the screenshot of the 20000 px page is capped at 12000 px (PNG IHDR: width, height)
    assert shot == project.build_dir / "screenshots" / "a01.png"
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert width == 1280 and height == 12000

    assert run_browser_check(project, screenshot="a01") == 1
    (project.html_dir / "book" / "a00_broken.html").unlink()
    (project.html_dir / "gone.html").unlink()
    assert run_browser_check(project, screenshot="a01") == 0


def test_missing_chromium_or_pages_is_a_clear_error(tmp_path, monkeypatch, capsys):
    project = make_site(tmp_path, broken=False)
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_browser_check(project, screenshot="a01") == 1
    assert "browser check error: no Chromium found" in capsys.readouterr().out
    assert run_browser_check(project, screenshot="b07") == 1
    assert "no built page for chapter 'b07'" in capsys.readouterr().out
