"""Shared pytest fixtures: make every test independent of the machine's state.

* torch runs single-threaded (the models are tiny; one thread is the fastest choice for them and
  immune to other processes competing for the two cores);
* the ``ntputils`` cache root (``NTP_CACHE_DIR``) is a fresh folder for the session, so no test reads
  a dataset, solver result or checkpoint left by an earlier run or by ``make book`` in ``.cache/``;
* matplotlib writes its font cache to a private config folder.
"""

import os

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _isolated_state(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NTP_CACHE_DIR", str(tmp_path_factory.mktemp("ntp-cache")))
        mp.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("mplconfig")))
        yield


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Print what the numbers depend on, so a failure report says which machine state produced it."""
    from threadpoolctl import threadpool_info

    blas = ", ".join(f"{i['internal_api']} {i.get('version')} {i.get('architecture')} x{i['num_threads']}"
                     for i in threadpool_info())
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")
           if k in os.environ}
    return [f"blas: {blas or 'none loaded yet'}; torch threads {torch.get_num_threads()}; env {env}"]


# 10 words: 4 past-tense verbs (also "verb"), 2 base-form verbs (also "verb"), 3 nouns, 1 unlabelled
TOY_WORDS = ["#said", "#ran", "#took", "#was", "#play", "#go", "#dog", "#cat", "#tree", "ing"]
TOY_CLASSES = {"past": {"#said", "#ran", "#took", "#was"},
               "verb": {"#said", "#ran", "#took", "#was", "#play", "#go"},
               "noun": {"#dog", "#cat", "#tree", "#play"}, "extra": {"not-in-vocab"}}


@pytest.fixture(scope="module")
def labels():
    """Lexical classes of the toy vocabulary (tests of purity and word clouds)."""
    from ntputils.analysis.purity import ClassLabels

    return ClassLabels.from_mapping(TOY_WORDS, TOY_CLASSES)
