"""Chapter runtime: profile merging, parameter validation, seeding, device, banner and check records."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ntputils import chapter as runtime
from ntputils.chapter import ChapterConfig, ParameterError, check, setup_chapter

PROFILES = {"cpu": {"steps": 10, "lr": 0.5, "sizes": [1, 2], "note": None},
            "paper": {"steps": 1000, "lr": 0.1, "sizes": [8, 16], "note": None}}


def namespace(**values):
    ns = {"profile": "cpu", "seed": 0, "device": "auto"}
    ns.update(dict.fromkeys(PROFILES["cpu"]))
    ns.update(values)
    return ns


@pytest.fixture(autouse=True)
def no_record_file(monkeypatch):
    monkeypatch.delenv(runtime.RECORD_ENV, raising=False)


def test_profile_values_fill_none_parameters_in_cfg_and_globals_are_not_modified():
    ns = namespace(lr=0.25)
    before = dict(ns)
    cfg = setup_chapter(PROFILES, ns)
    assert isinstance(cfg, ChapterConfig)
    assert (cfg.steps, cfg.lr, cfg.sizes, cfg.note) == (10, 0.25, [1, 2], None)
    assert cfg.as_dict() == {"profile": "cpu", "seed": 0, "device": "cpu", "steps": 10, "lr": 0.25,
                             "sizes": [1, 2], "note": None}
    assert ns == before  # one way: the chapter reads cfg.<name>; its globals keep papermill's values
    assert ns["steps"] is None and ns["device"] == "auto"
    assert cfg["lr"] == 0.25


def test_torch_threads_int_parameter_name_callable_or_left_alone():
    import torch

    old = torch.get_num_threads()
    try:
        cfg = setup_chapter(PROFILES, namespace(), torch_threads=1)
        assert torch.get_num_threads() == 1 and cfg.torch_threads == 1
        torch.set_num_threads(2)
        cfg = setup_chapter(PROFILES, namespace(), torch_threads=None)
        assert torch.get_num_threads() == 2 and cfg.torch_threads is None
        cfg = setup_chapter(PROFILES, namespace(steps=0), torch_threads="steps")  # 0 = torch's default
        assert torch.get_num_threads() == 2 and cfg.torch_threads is None
        cfg = setup_chapter(PROFILES, namespace(steps=1), torch_threads="steps")
        assert torch.get_num_threads() == 1 and cfg.torch_threads == 1
        torch.set_num_threads(2)
        cfg = setup_chapter(PROFILES, namespace(), torch_threads=lambda c: 1 if c.device == "cuda" else None)
        assert torch.get_num_threads() == 2 and cfg.torch_threads is None
        with pytest.raises(ParameterError, match="torch_threads"):
            setup_chapter(PROFILES, namespace(), torch_threads=-1)
    finally:
        torch.set_num_threads(old)


def test_chapter_timer_starts_at_setup_and_is_monotone():
    import time

    t0 = time.perf_counter()
    cfg = setup_chapter(PROFILES, namespace())
    t1 = time.perf_counter()
    first = cfg.elapsed()
    assert 0.0 <= first <= time.perf_counter() - t0
    assert t0 <= cfg.started_wall <= t1
    sum(range(200_000))  # burn a little CPU
    second = cfg.elapsed()
    assert second >= first and cfg.cpu_elapsed() >= 0.0


def test_named_profile_and_overrides():
    cfg = setup_chapter(PROFILES, namespace(profile="paper", steps=7, lr=1, sizes=(3,), note="x"))
    assert cfg.profile == "paper"
    assert cfg.steps == 7
    assert cfg.lr == 1.0 and isinstance(cfg.lr, float)  # int accepted where a float is expected
    assert cfg.sizes == [3]  # tuple -> the profile's list type
    assert cfg.note == "x"  # None-valued profile entries accept anything


def test_unknown_attribute_names_the_valid_parameters():
    cfg = setup_chapter(PROFILES, namespace())
    with pytest.raises(AttributeError, match="steps"):
        _ = cfg.stepz


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [("steps", "10", "must be of type int"), ("steps", 2.5, "must be of type int"),
     ("lr", "fast", "must be of type float"), ("steps", True, "must be of type int"),
     ("sizes", 3, "must be of type list"), ("seed", 1.5, "'seed' must be of type int")],
)
def test_ill_typed_parameters_are_rejected(name, value, expected):
    with pytest.raises(ParameterError, match=expected):
        setup_chapter(PROFILES, namespace(**{name: value}))


def test_unknown_profile_is_rejected():
    with pytest.raises(ParameterError, match="unknown profile 'gpu'.*cpu.*paper"):
        setup_chapter(PROFILES, namespace(profile="gpu"))


def test_injected_unknown_parameter_is_rejected_with_valid_names():
    # papermill injects a cell starting with "# Parameters"; IPython keeps the sources in `In`
    ns = namespace(foo=1, In=["", "import x", "# Parameters\nprofile = \"cpu\"\nfoo = 1\n", "cfg = ..."])
    with pytest.raises(ParameterError) as err:
        setup_chapter(PROFILES, ns)
    msg = str(err.value)
    assert "'foo'" in msg
    for valid in ("profile", "seed", "device", "steps", "lr", "sizes", "note"):
        assert valid in msg


def test_injected_known_parameters_pass():
    ns = namespace(steps=3, In=["# Parameters\nprofile = \"cpu\"\nsteps = 3\n"])
    assert setup_chapter(PROFILES, ns).steps == 3


def test_inconsistent_profiles_are_rejected():
    with pytest.raises(ParameterError, match="same keys"):
        setup_chapter({"cpu": {"steps": 1}, "paper": {"steps": 2, "d": 3}}, namespace())
    with pytest.raises(ParameterError, match="'cpu' profile"):
        setup_chapter({"paper": {"steps": 2}}, {})
    with pytest.raises(ParameterError, match="reserved"):
        setup_chapter({"cpu": {"seed": 2}}, {})


def test_seeding_makes_python_numpy_and_torch_reproducible():
    import torch

    def draw():
        setup_chapter(PROFILES, namespace(seed=123))
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    assert draw() == draw()
    setup_chapter(PROFILES, namespace(seed=124))
    assert float(np.random.rand()) != draw()[1]


def test_device_resolution():
    import torch

    assert setup_chapter(PROFILES, namespace(device="cpu")).device == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="no CUDA"):
            setup_chapter(PROFILES, namespace(device="cuda"))
    with pytest.raises(ParameterError, match="unknown device"):
        setup_chapter(PROFILES, namespace(device="tpu"))


def test_banner_shows_profile_device_and_parameters(capsys):
    setup_chapter(PROFILES, namespace(steps=5))
    out = capsys.readouterr().out  # outside IPython, display() prints the text/plain form
    assert "profile=cpu" in out and "device=cpu" in out and "seed=0" in out
    assert "steps = 5 (overridden)" in out and "lr = 0.5" in out


def test_check_prints_records_and_raises_on_failure(capsys):
    setup_chapter(PROFILES, namespace())
    gap = np.float64(1e-4)
    assert check("gap is small", gap < 1e-3, measured=gap, paper="~1e-3", tol=1e-3) is None
    assert "PASS | gap is small | measured: 0.0001 | paper: ~1e-3 | tol: 0.001" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="check failed: rank is 2"):
        check("rank is 2", False, measured=3, paper=2)
    checks = runtime.current_record()["checks"]
    assert [c["passed"] for c in checks] == [True, False]
    assert checks[0]["measured"] == pytest.approx(1e-4) and checks[1]["paper"] == 2
    for not_a_verdict in (np.array([True, False]), np.nan, 1.0, 0, None, "yes", np.float64(1.0)):
        with pytest.raises(TypeError, match="must be a boolean"):
            check("ambiguous", not_a_verdict)
    n = len(runtime.current_record()["checks"])
    check("a numpy verdict", np.bool_(True))
    assert len(runtime.current_record()["checks"]) == n + 1


def test_record_file_for_the_status_page(tmp_path, monkeypatch):
    path = tmp_path / "records" / "a01.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(PROFILES, namespace(steps=4))
    check("one", True, measured=np.arange(3))
    with pytest.raises(AssertionError):
        check("two", False, measured=float("nan"))
    record = json.loads(path.read_text())
    assert record["profile"] == "cpu" and record["device"] == "cpu" and record["seed"] == 0
    assert record["params"] == {"steps": 4, "lr": 0.5, "sizes": [1, 2], "note": None}
    assert [c["claim"] for c in record["checks"]] == ["one", "two"]
    assert record["checks"][0]["measured"] == [0, 1, 2] and record["checks"][1]["measured"] == "nan"
    assert record["wall_s"] >= 0


# ---- results as data: record, preregister, compare -----------------------------------------------
def test_rules_judge_measured_values():
    near = runtime.within(0.163, abs_tol=0.05)
    assert near.holds(0.2) and not near.holds(0.224)
    assert runtime.within(10.0, rel_tol=0.1).holds(10.9) and not runtime.within(10.0, rel_tol=0.1).holds(11.1)
    assert runtime.at_least(0.5).holds(0.5) and not runtime.at_least(0.5).holds(0.49)
    assert runtime.at_most(1e-3).holds(0.0)
    with pytest.raises(ValueError, match="NaN"):  # NaN is a failed computation, not a deviation
        runtime.at_most(1e-3).holds(float("nan"))
    assert not runtime.at_most(60).holds(float("inf"))  # a milestone never reached
    assert runtime.between(1, 2).holds(1.5) and not runtime.between(1, 2).holds(2.5)
    rule = runtime.above_chance(0.1)
    assert rule.holds(0.85, chance=0.70) and not rule.holds(0.75, chance=0.70)
    with pytest.raises(ValueError, match="chance"):
        rule.holds(0.9)
    with pytest.raises(ValueError, match="exactly one"):
        runtime.within(1.0)


def test_compare_needs_a_preregistered_rule_and_records_outcomes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(PROFILES, namespace())
    with pytest.raises(KeyError, match="not pre-registered"):
        runtime.compare("dist", 0.2)
    runtime.preregister({"dist": ("proxy distance near the paper's", runtime.within(0.163, abs_tol=0.05)),
                         "sim": ("sim(H, S~) above chance", runtime.above_chance(0.1)),
                         "big": ("paper-profile only", runtime.at_least(0.9))})
    with pytest.raises(ValueError, match="already registered"):
        runtime.preregister({"dist": ("again", runtime.at_least(0))})
    assert runtime.compare("dist", 0.224, paper=0.163, note="data differ") == "deviates"  # no raise
    assert runtime.compare("sim", 0.93, chance=0.70) == "reproduced"
    assert runtime.compare("big", None) == "not run"
    rec = json.loads(path.read_text())
    assert [c["outcome"] for c in rec["comparisons"]] == ["deviates", "reproduced", "not run"]
    assert rec["comparisons"][0]["rule"].startswith("paper's 0.163")
    assert rec["comparisons"][1]["chance"] == 0.7
    assert rec["preregistered"] == ["dist", "sim", "big"]
    assert "DEVIATES | proxy distance" in capsys.readouterr().out
    setup_chapter(PROFILES, namespace())  # a new run starts with no rules
    with pytest.raises(KeyError):
        runtime.compare("dist", 0.2)


def test_record_glues_and_stores_values(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(PROFILES, namespace())
    assert runtime.record("proxy_distance", np.float64(0.224), paper=0.163) == 0.224
    runtime.record("n_contexts", 380, unit="contexts")
    check("a feasible point bounds the optimum", True, sanity=True)
    rec = json.loads(path.read_text())
    assert rec["results"]["proxy_distance"] == {"value": 0.224, "paper": 0.163, "unit": None}
    assert rec["results"]["n_contexts"]["unit"] == "contexts" and rec["checks"][0]["sanity"] is True
    with pytest.raises(ValueError, match="record name"):
        runtime.record("bad name!", 1)


def test_similarity_claims_are_judged_with_and_without_the_diagonal(capsys):
    from ntputils.analysis.baselines import SimilarityWithChance

    setup_chapter(PROFILES, namespace())
    runtime.preregister_similarity({"simH": ("sim(H, S~) high", 0.1, "A:Fig 6")})
    rep = SimilarityWithChance(value=0.75, offdiagonal=0.5, random_mean=0.70, random_std=0.01,
                               random_offdiagonal_mean=0.0, random_offdiagonal_std=0.01,
                               shuffled_mean=0.3, shuffled_std=0.05, draws=20)
    assert runtime.compare_similarity("simH", rep) == ("deviates", "reproduced")
    rows = runtime.current_record()["comparisons"]
    assert [r["key"] for r in rows] == ["simH", "simH_offdiag"] and rows[1]["chance"] == 0.0
    assert rep.row("sim(H, S~)")["off-diag. chance"] == "0.000 ± 0.010"


def test_compare_unavailable_is_not_reproduced(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(PROFILES, namespace())
    runtime.preregister({"gpt2": ("GPT-2 clusters beat random", runtime.at_least(0.5))})
    outcome = runtime.compare("gpt2", None, unavailable="GPT-2 weights not available offline")
    assert outcome == "not reproduced"
    row = json.loads(path.read_text())["comparisons"][0]
    assert row["outcome"] == "not reproduced" and row["note"] == "GPT-2 weights not available offline"
    with pytest.raises(ValueError, match="without a measurement"):
        runtime.compare("gpt2", 0.7, unavailable="x")


@pytest.mark.parametrize("make, message", [
    (lambda: runtime.above_chance(-0.1), "margin must be >= 0"),
    (lambda: runtime.above_chance(float("nan")), "must be finite"),
    (lambda: runtime.within(1.0, abs_tol=-0.1), "must be >= 0"),
    (lambda: runtime.within(1.0, rel_tol=-1e-9), "must be >= 0"),
    (lambda: runtime.within(1.0, rel_tol=float("nan")), "must be finite"),
    (lambda: runtime.within(float("inf"), abs_tol=0.1), "must be finite"),
    (lambda: runtime.at_least(float("nan")), "must be finite"),
    (lambda: runtime.at_most(float("-inf")), "must be finite"),
    (lambda: runtime.between(2.0, 1.0), "can never pass"),
])
def test_rules_that_could_say_yes_or_never_pass_are_refused_at_registration(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_zero_tolerance_is_an_exact_match():
    assert runtime.within(30, abs_tol=0).holds(30) and not runtime.within(30, abs_tol=0).holds(31)


def test_above_chance_is_strict_and_a_non_finite_measurement_is_an_error_naming_the_claim():
    rule = runtime.above_chance(0.0)
    assert not rule.holds(0.5, chance=0.5) and rule.holds(0.5000001, chance=0.5)
    assert not runtime.above_chance(0.1).holds(0.6, chance=0.5)  # equal to chance + margin: not above
    setup_chapter(PROFILES, namespace())
    runtime.preregister({"t_nan": ("a claim", runtime.at_least(0.5)),
                         "t_chance": ("another", runtime.above_chance(0.1))})
    with pytest.raises(ValueError, match="'t_nan'.*NaN"):
        runtime.compare("t_nan", float("nan"))
    with pytest.raises(ValueError, match="'t_chance'.*chance level must be finite"):
        runtime.compare("t_chance", 0.9, chance=float("nan"))
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        runtime.record("t_tol", 1.0, tol=-1)
