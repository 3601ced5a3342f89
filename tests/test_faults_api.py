"""Issue 16, API inputs: degenerate similarity (a constant similarity matrix is similar to nothing),
overflow-safe ``corr``, non-finite/complex/overflowing/non-integer counts and tokens, NaN or non-binary
supports, the all-ones support of the NTP-SVM, ``ufm.train`` argument types, and a chapter's own value
rules and memory budget in ``setup_chapter``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ntputils.analysis import metrics as M
from ntputils.analysis.baselines import offdiagonal_sim
from ntputils.chapter import ParameterError, setup_chapter
from ntputils.data import from_counts, from_pairs, from_sequences
from ntputils.geometry.logits import centered_support, in_support_logits, project_F
from ntputils.geometry.maxmargin import max_margin_logits
from ntputils.geometry.maxmargin_admm import solve_max_margin
from ntputils.training import ufm


@pytest.fixture
def St() -> np.ndarray:
    S = (np.random.default_rng(0).random((16, 16)) < 0.3).astype(float)
    S[0] = 1.0
    return centered_support(S)


# ---------------------------------------------------------------- sim / corr
@pytest.mark.parametrize("A", [np.zeros((16, 16)), np.ones((16, 16)),
                               np.outer(np.arange(1, 17), np.ones(16))])
def test_constant_similarity_matrix_is_similar_to_nothing(A, St):
    """corr of a zero matrix (all 0) or of parallel columns (all 1) is constant: SIM would be C/C = 1."""
    with pytest.raises(M.DegenerateSimilarityError, match="constant similarity matrix"):
        M.sim(A, St)
    with pytest.raises(M.DegenerateSimilarityError):
        M.sim(St, A)
    with pytest.raises(M.DegenerateSimilarityError, match=r"snapshots \[1\]"):
        M.batched_sim([St + 0.01, A], St)
    with pytest.raises(M.DegenerateSimilarityError):
        offdiagonal_sim(A, St)
    assert issubclass(M.DegenerateSimilarityError, ValueError)


def test_collapsed_ufm_scores_no_similarity(St):
    """The issue's case: NTP-UFM started at W = H = 0 stays there; ufm.train now refuses init_scale=0,
    and the collapsed embedding itself is not "similar" (no perfect score)."""
    H_dead = np.zeros((4, 16))
    with pytest.raises(M.DegenerateSimilarityError):
        M.sim(H_dead, St)
    assert M.sim(St, St) == pytest.approx(1.0)  # a real, non-constant pair is unaffected


def test_corr_is_overflow_safe_and_rejects_non_finite():
    A = np.random.default_rng(1).standard_normal((5, 7))
    np.testing.assert_allclose(M.corr(A * 1e200), M.corr(A), atol=1e-14)
    np.testing.assert_allclose(M.corr(A * 1e-200), M.corr(A), atol=1e-14)
    np.testing.assert_allclose(M.batched_corr((A * 1e200)[None])[0], M.corr(A), atol=1e-14)
    assert M.sim(A * 1e200, A) == pytest.approx(1.0)
    bad = A.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        M.corr(bad)
    with pytest.raises(ValueError, match="complex"):
        M.corr(A + 1j)


# ---------------------------------------------------------------- counts and tokens
@pytest.mark.parametrize("counts, message", [
    (np.array([[1.0, np.inf], [1.0, 1.0]]), "finite"),
    (np.array([[1.0, np.nan], [1.0, 1.0]]), "finite"),
    (np.array([[2**62, 1], [2**62, 1]], dtype=np.int64), "too large"),
    (np.array([[1 + 1j, 1], [1, 1]]), "real"),
    (np.array([[1.5, 1.0], [1.0, 1.0]]), "integers"),
    (sp.csc_array(np.array([[1.0, np.inf], [1.0, 1.0]])), "finite"),
])
def test_from_counts_rejects_bad_counts(counts, message):
    with pytest.raises(ValueError, match=message):
        from_counts(counts)


def test_from_counts_rejects_non_integer_context_tokens():
    with pytest.raises(ValueError, match="integer token ids"):
        from_counts(np.ones((2, 2)), contexts=[(0.5,), (1,)])


@pytest.mark.parametrize("seq", [[0, 1.5, 2], [0, np.nan, 1], [0, 1 + 0j, 1], [True, False, True]])
def test_from_sequences_rejects_non_integer_tokens(seq):
    with pytest.raises(ValueError, match="integer token ids"):
        from_sequences([seq], 3, 1)


def test_from_sequences_accepts_integral_floats_and_checks_vocab_size():
    data = from_sequences([np.array([0.0, 1.0, 2.0])], 3, 1)
    assert data.n == 2
    with pytest.raises(ValueError, match="vocab_size"):
        from_sequences([[0, 1]], True, 1)
    with pytest.raises(ValueError, match="integer token ids"):
        from_pairs([(0,), (1,)], [0.5, 1], 2)


# ---------------------------------------------------------------- supports and logits
@pytest.mark.parametrize("S, message", [
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "non-finite"),
    (np.array([[1.0, 2.0], [0.0, 1.0]]), "binary"),
    (np.array([[0.5, 1.0], [1.0, 0.0]]), "binary"),
])
def test_centered_support_and_project_F_reject_bad_supports(S, message):
    with pytest.raises(ValueError, match=message):
        centered_support(S)
    with pytest.raises(ValueError, match=message):
        project_F(np.zeros((2, 2)), S)


def test_project_F_and_in_support_logits_reject_non_finite():
    S = np.array([[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="non-finite"):
        project_F(np.array([[np.nan, 0.0], [1.0, 1.0]]), S)
    with pytest.raises(ValueError, match="non-finite"):
        in_support_logits(np.array([[np.nan, 0.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="real"):
        in_support_logits(np.array([[0.5 + 1j, 0.0], [0.5, 1.0]]))
    # off-support entries never leak into the projection, even when huge
    L = np.array([[1.0, 1e300], [3.0, 5.0]])
    np.testing.assert_allclose(project_F(L, S), [[-1.0, 0.0], [1.0, 0.0]])


def test_all_ones_support_raises_in_both_solvers():
    with pytest.raises(ValueError, match="full support"):
        solve_max_margin(np.ones((4, 3)), progress=False)
    with pytest.raises(ValueError, match="full support"):
        max_margin_logits(np.ones((4, 3)))


# ---------------------------------------------------------------- ufm.train argument checks
@pytest.fixture
def data4():
    counts = np.array([[2, 0, 1, 0], [1, 1, 0, 0], [0, 2, 1, 1], [0, 0, 0, 3]])
    return from_counts(counts)


@pytest.mark.parametrize("kw, message", [
    ({"steps": 1.5}, "steps must be an integer"),
    ({"steps": True}, "steps must be an integer"),
    ({"d": True}, "d must be an integer"),
    ({"lam": -1.0}, "lam must be a finite real number >= 0"),
    ({"lam": float("nan")}, "lam must be"),
    ({"init_scale": 0.0}, "init_scale must be a finite real number > 0"),
    ({"init_scale": -0.1}, "init_scale"),
    ({"lr": float("inf")}, "learning rate"),
    ({"seed": 1.0}, "seed must be an integer"),
    ({"d": 10**9}, "GiB"),
])
def test_ufm_train_rejects_bad_arguments(data4, kw, message):
    args = {"d": 2, "steps": 2, "progress": False, **kw}
    with pytest.raises(ValueError, match=message):
        ufm.train(data4, **args)


def test_ufm_train_still_trains_with_valid_arguments(data4):
    hist = ufm.train(data4, d=3, steps=3, lam=0.0, init_scale=0.1, progress=False)
    assert len(hist.snap_steps) >= 2


# ---------------------------------------------------------------- setup_chapter value rules
PARAMS_CELL = 'profile = "cpu"\nseed = 0\ndevice = "cpu"\nd = 8  # embedding dimension\nV = 4  # vocabulary\n'


def chapter_globals(**injected):
    """A chapter's globals(): IPython's ``In`` (parameters cell, papermill's injected cell when given)
    and the parameter values the chapter reads."""
    sources = ["", PARAMS_CELL]
    if injected:
        sources.append("# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in injected.items()))
    return {"In": [*sources, "run = setup_chapter(globals())"],
            "profile": "cpu", "seed": 0, "device": "cpu", "d": 8, "V": 4, **injected}


def test_setup_chapter_checks_value_rules_and_memory_before_work():
    ns = chapter_globals()
    d, V = ns["d"], ns["V"]  # the chapter computes its rules from its globals, before setup_chapter
    run = setup_chapter(ns, problems=[] if d >= V else ["d must be >= V"])
    assert run.params == {"d": 8, "V": 4}
    with pytest.raises(ParameterError,
                       match=r"d must be <= V \(parameters: d=8, V=4\); nothing was computed"):
        setup_chapter(ns, problems=None if d <= V else "d must be <= V")
    big = chapter_globals(d=100000)
    with pytest.raises(ParameterError, match=r"GiB of memory.*\(parameters: d=100000, V=4\)"):
        setup_chapter(big, memory_bytes=8.0 * big["d"] ** 3 * 1e6)  # 8e21 bytes: more than any machine


@pytest.mark.parametrize("override, message", [
    ({"device": "tpu"}, "unknown device"), ({"seed": 2**70}, "seed"), ({"seed": -3}, "seed"),
    ({"d": 8.5}, "'d' must be of type int"), ({"dim": 8}, "unknown parameter 'dim'"),
])
def test_setup_chapter_rejects_bad_injected_values(override, message):
    with pytest.raises(ParameterError, match=message):
        setup_chapter(chapter_globals(**override))


@pytest.mark.parametrize("line, message", [
    ("seed = -1", r"'seed' must be an int in \[0, 2\*\*63 - 1\], got -1 in the parameters cell"),
    ("device = 'tpu'", "unknown device 'tpu' in the parameters cell"),
])
def test_setup_chapter_rejects_bad_values_in_the_parameters_cell(line, message):
    name = line.split()[0]
    ns = chapter_globals()
    ns["In"][1] = PARAMS_CELL.replace({"seed": "seed = 0", "device": 'device = "cpu"'}[name], line)
    with pytest.raises(ParameterError, match=message):
        setup_chapter(ns)
