"""The book runner: ``python -m ntputils.book build`` executes the chapters and builds the HTML.

Pipeline per chapter: jupytext ``notebooks/<chapter>.py`` -> ipynb -> papermill (parameters
injected, profile ``cpu`` or ``paper``) -> ``book/<chapter>.ipynb``; then the status page
``book/status.md`` is generated and ``jupyter-book build -W -n --keep-going`` renders the book with
``execute_notebooks: off`` (papermill is the only executor).

A chapter is re-executed only when its cache key -- the hash of (chapter source, resolved
parameters, pinned dependency versions, what its last run executed of ``ntputils``, the committed
tables it read) -- changed (see :mod:`ntputils.book.fingerprint`); the key is stored in the executed
notebook's metadata, so a notebook is current exactly when its stored key equals the recomputed one.

Modules: :mod:`~ntputils.book.project` (layout, chapter names, the toc),
:mod:`~ntputils.book.params` (static parameter checks), :mod:`~ntputils.book.fingerprint`,
:mod:`~ntputils.book.execute` (the papermill command line as a child process), :mod:`~ntputils.book.status`,
:mod:`~ntputils.book.html` (jupyter-book), :mod:`~ntputils.book.browser` (headless Chromium check),
:mod:`~ntputils.book.cli`; parameter sweeps on Dask: :mod:`~ntputils.book.sweep` (driver and worker
side), :mod:`~ntputils.book.sweep_spec` (axes, validation, point ids), :mod:`~ntputils.book.sweep_cluster`
(LocalCluster, scheduler, SLURM), :mod:`~ntputils.book.sweep_table` (the tidy table, publishing).
"""

from ntputils.book.cli import main
from ntputils.book.project import Chapter, Project

__all__ = ["Chapter", "Project", "main"]
