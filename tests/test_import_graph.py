"""The package's import graph (grimp, the library under import-linter): no two modules import each other.

A circle, even through an import inside a function, means two modules that are one job split badly
(issue "Redesign, step two"); `.importlinter` checks the layers, this test the circles they cannot see
inside one layer (``ntputils.book``).
"""

import grimp


def two_module_circles(package: str) -> list[tuple[str, str]]:
    graph = grimp.build_graph(package, cache_dir=None)
    return sorted((a, b) for a in graph.modules for b in graph.find_modules_directly_imported_by(a)
                  if a < b and a in graph.find_modules_directly_imported_by(b))


def test_no_two_module_circle():
    assert two_module_circles("ntputils") == []


def test_the_check_sees_a_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "circ"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circ.b import g\n    return g\n")
    (pkg / "b.py").write_text("from circ.a import f\n\ndef g():\n    return f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert two_module_circles("circ") == [("circ.a", "circ.b")]
