"""Lazy re-exports of the subpackages (ntputils.lazy)."""


def test_lazy_exports_refuse_a_name_that_is_also_a_submodule(tmp_path, monkeypatch):
    import importlib
    import sys

    import pytest

    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "thing.py").write_text("def thing():\n    return 1\n")
    (pkg / "__init__.py").write_text(
        "from ntputils.lazy import lazy_exports\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'thing': 'lazypkg.thing'})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="also names of its submodules"):
        importlib.import_module("lazypkg")
    sys.modules.pop("lazypkg", None)
