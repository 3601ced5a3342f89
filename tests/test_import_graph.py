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


# ------------------------------------------------ the contracts of the packages beside the runner (#48)
def _imported_top_names(path) -> set[str]:
    """Top-level names of every module imported anywhere in the file (functions included)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_cluster_module_talks_to_dask():
    """Dask, distributed and dask-jobqueue are imported by :mod:`ntputils.sweeps.cluster` alone: the
    runner, the GPU path and everything else reach a cluster through its functions."""
    from pathlib import Path

    import ntputils

    package = Path(ntputils.__file__).parent
    dask = {"dask", "distributed", "dask_jobqueue"}
    users = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py")
                   if _imported_top_names(p) & dask)
    assert users == ["sweeps/cluster.py"]


def _image_lacks() -> set[str]:
    """Import names of the project's dependencies that the GPU image does not have and the bundle does
    not carry (:data:`ntputils.gpu.bundle.IMAGE_PACKAGES`, :data:`~ntputils.gpu.bundle.WHEELS`)."""
    import re
    import tomllib
    from importlib import metadata
    from pathlib import Path

    from ntputils.gpu.bundle import IMAGE_PACKAGES, WHEELS

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    deps = {norm(re.split(r"[=<>!~\[ ;]", d, maxsplit=1)[0]) for d in pyproject["project"]["dependencies"]}
    lacking = deps - {norm(n) for n in IMAGE_PACKAGES + WHEELS}
    return {module for module, dists in metadata.packages_distributions().items()
            if any(norm(d) in lacking for d in dists) and not module.startswith("_")}


def test_the_gpu_executor_imports_only_what_the_gpu_image_has():
    """The GPU machine runs ``python -m ntputils.gpu.device_run`` with the image's packages and the
    bundle's wheels only: importing it (and everything it imports at module level) must not need
    papermill, Jupyter, Dask, cvxpy or any other dependency the image lacks."""
    import subprocess
    import sys

    lacking = _image_lacks()
    assert {"papermill", "dask", "distributed", "cvxpy", "jupytext", "nbformat"} <= lacking
    blocker = (
        "import sys\n"
        f"LACKING = {sorted(lacking)!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in LACKING:\n"
        "            raise ImportError(f'{name} is not on the GPU image')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import ntputils.gpu.device_run\n"
    )
    run = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-2000:]


def test_the_image_check_sees_a_lacking_import():
    """The blocker above fails an import of papermill (so the test can fail)."""
    import subprocess
    import sys

    code = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in {'papermill'}:\n            raise ImportError(name)\n"
            "sys.meta_path.insert(0, Block())\nimport ntputils.book.execute\nimport papermill\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "ImportError: papermill" in run.stderr
