"""The API table of book/notation.md is generated from the code and must be current."""

from pathlib import Path

from ntputils import apidoc


def test_notation_page_api_table_is_current():
    text = apidoc.PAGE.read_text()
    assert apidoc.render(text) == text, "book/notation.md is stale: run python -m ntputils.apidoc --write"


def test_usage_is_computed_from_the_chapters_imports(tmp_path: Path):
    (tmp_path / "x01_demo.py").write_text(
        "from ntputils.chapter import check, setup_chapter\n"
        "from ntputils import geometry\n"
        "L = geometry.centered_support([[1]])\n"
    )
    (tmp_path / "x02_other.py").write_text("from ntputils.geometry import centered_support\n")
    usage = apidoc.chapter_usage(tmp_path)
    assert usage[("ntputils.chapter", "setup_chapter")] == ["x01"]
    owner = apidoc.importlib.import_module("ntputils.geometry").centered_support.__module__
    assert usage[(owner, "centered_support")] == ["x01", "x02"]


def test_every_public_function_has_a_docstring():
    missing = [f"{m}.{n}" for m in apidoc.modules() for n, obj in apidoc.public_objects(m).items()
               if apidoc.summary(obj) == "(no docstring)"]
    assert not missing, missing



