"""Chapter set-up: the parameters cell found in ``In``, papermill's injected values validated against its
literals, seeding, device, torch threads, value rules and memory before work, banner and check records;
then checks, pre-registered claims and recorded values."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from ntputils import chapter as runtime
from ntputils.chapter import ChapterRun, ParameterError, check, setup_chapter

# a chapter's parameters cell: the cpu values as literals, profile/seed/device first
PARAMS_CELL = '''profile = "cpu"  # these values; "paper": the values of toy.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "cpu"   # "auto", "cpu" or "cuda" ("cpu" here: the tests hold on a GPU machine too)
steps = 10       # training steps
lr = 0.5         # learning rate
sizes = [1, 2]   # widths
note = None      # anything
'''
DEFAULTS = {"profile": "cpu", "seed": 0, "device": "cpu",
            "steps": 10, "lr": 0.5, "sizes": [1, 2], "note": None}
PARAMS = {k: v for k, v in DEFAULTS.items() if k not in runtime.RESERVED}


def injected_cell(values):
    """The cell papermill writes right after the parameters cell for ``-p``/``-f`` values."""
    return "# Parameters\n" + "".join(f"{name} = {value!r}\n" for name, value in values.items())


def namespace(cell=PARAMS_CELL, **injected):
    """A chapter's globals() after its set-up cell started: IPython's ``In`` and the parameter globals
    (the cell's values, then papermill's injected ones when given)."""
    sources = ["", "# %matplotlib inline\nimport numpy as np", cell]
    if injected:
        sources.append(injected_cell(injected))
    sources.append("from ntputils.chapter import setup_chapter\nrun = setup_chapter(globals())")
    return {"In": sources, **runtime.literal_assignments(cell, "cell"), **injected}


@pytest.fixture(autouse=True)
def no_record_file(monkeypatch):
    monkeypatch.delenv(runtime.RECORD_ENV, raising=False)


@pytest.fixture
def banners(monkeypatch):
    """The bundles the set-up shows (``IPython.display.display`` replaced by a list)."""
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append((bundle, raw)))
    return shown


# ---- the parameters cell in In ---------------------------------------------------------------------
def test_the_parameters_cell_is_found_in_In_without_an_injected_cell():
    ns = namespace()
    assert runtime.parameters_cell(ns["In"]) == PARAMS_CELL
    assert runtime.injected_parameter_names(ns["In"]) == []
    before = json.dumps(ns)
    run = setup_chapter(ns)
    assert isinstance(run, ChapterRun)
    assert (run.profile, run.seed, run.device, run.params) == ("cpu", 0, "cpu", PARAMS)
    assert run.as_dict() == DEFAULTS and list(run.as_dict()) == list(DEFAULTS)  # the cell's order
    assert json.dumps(ns) == before  # the namespace is only read
    # an interactive session that edited and re-ran the parameters cell: its last execution counts
    edited = PARAMS_CELL.replace("steps = 10", "steps = 3")
    ns["In"].insert(-1, edited)
    assert runtime.parameters_cell(ns["In"]) == edited
    assert setup_chapter(ns).params["steps"] == 3
    # IPython also keeps the sources as _ih
    assert setup_chapter({"_ih": namespace()["In"]}).params == PARAMS


def test_the_parameters_cell_is_the_cell_before_papermills_injected_cell():
    ns = namespace(profile="paper", steps=5)
    ns["In"].insert(1, 'profile = "other"\nseed = 0\ndevice = "cpu"\n')  # an earlier look-alike
    assert runtime.parameters_cell(ns["In"]) == PARAMS_CELL
    assert runtime.injected_parameter_names(ns["In"]) == ["profile", "steps"]
    run = setup_chapter(ns)
    assert run.profile == "paper" and run.params == {**PARAMS, "steps": 5}
    # a cell after the injected one that assigns profile does not replace the parameters cell
    ns["In"].insert(-1, 'profile = "late"\nseed = 0\ndevice = "cpu"\n')
    assert runtime.parameters_cell(ns["In"]) == PARAMS_CELL


@pytest.mark.parametrize("sources", [[], ["", "import numpy as np", "x = 1"], ["", "# profile = 'cpu'"]])
def test_no_parameters_cell_is_an_error(sources):
    with pytest.raises(ParameterError, match="found no parameters cell"):
        setup_chapter({"In": sources, "profile": "cpu", "seed": 0, "device": "cpu"})


@pytest.mark.parametrize("cell, starts", [
    ('seed = 0\nprofile = "cpu"\ndevice = "cpu"\nsteps = 1\n', "seed, profile, device"),
    ('profile = "cpu"\nseed = 0\nsteps = 1\ndevice = "cpu"\n', "profile, seed, steps"),
    ('steps = 1\n', "steps"),
    ('# only a comment\n', "nothing"),
])
def test_a_parameters_cell_must_start_with_profile_seed_device(cell, starts):
    expected = f"must start with profile = ..., seed = ..., device = ...; it starts with {starts}$"
    with pytest.raises(ParameterError, match=expected):
        runtime.parameter_defaults(cell, "the parameters cell")
    # found before papermill's injected cell, the same cell is refused by setup_chapter
    ns = {"In": ["", cell, injected_cell({"steps": 2})], "profile": "cpu", "seed": 0, "device": "cpu",
          "steps": 2}
    with pytest.raises(ParameterError, match=expected):
        setup_chapter(ns)


@pytest.mark.parametrize("line, message", [
    ("steps = 2 * 5", r"steps \(line 4\) must be a literal"),
    ("import math", r"may only hold `name = literal` lines \(line 4\)"),
    ("steps: int = 10", r"may only hold `name = literal` lines \(line 4\)"),
    ("steps = (", "does not parse"),
    ("seed = -1", r"'seed' must be an int in \[0, 2\*\*63 - 1\], got -1 in the parameters cell"),
    ("device = 'tpu'", "unknown device 'tpu' in the parameters cell"),
])
def test_a_parameters_cell_holds_valid_literals_only(line, message):
    cell = 'profile = "cpu"\nseed = 0\ndevice = "cpu"\n' + line + "\n"
    with pytest.raises(ParameterError, match=message):
        setup_chapter(namespace(cell=cell))


# ---- injected values against the cell's literals ---------------------------------------------------
def test_an_injected_unknown_parameter_is_rejected_naming_it_and_the_valid_names():
    with pytest.raises(ParameterError) as err:
        setup_chapter(namespace(steps=3, stepz=4))
    msg = str(err.value)
    assert "unknown parameter 'stepz'" in msg and "papermill -p" in msg
    assert msg.endswith("valid parameters: profile, seed, device, steps, lr, sizes, note")
    with pytest.raises(ParameterError, match="unknown parameters 'foo', 'bar'"):
        setup_chapter(namespace(foo=1, bar=2))


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [("steps", "10", "'steps' must be of type int .*got str '10'"), ("steps", 2.5, "must be of type int"),
     ("lr", "fast", "'lr' must be of type float"), ("steps", True, "must be of type int"),
     ("sizes", 3, "'sizes' must be of type list"), ("seed", 1.5, "'seed' must be of type int"),
     ("profile", 1, "'profile' must be of type str")],
)
def test_ill_typed_injected_parameters_are_rejected(name, value, expected):
    with pytest.raises(ParameterError, match=expected):
        setup_chapter(namespace(**{name: value}))


def test_injected_values_are_coerced_to_the_cells_types():
    run = setup_chapter(namespace(profile="paper", steps=7, lr=1, sizes=(3,), note="x"))
    assert run.profile == "paper" and run.params["steps"] == 7
    assert run.params["lr"] == 1.0 and type(run.params["lr"]) is float  # an int where a float is expected
    assert run.params["sizes"] == [3] and type(run.params["sizes"]) is list  # tuple -> the cell's list type
    assert run.params["note"] == "x"  # None in the cell accepts anything


@pytest.mark.parametrize("values, message", [
    ({"device": "tpu"}, "unknown device 'tpu'"), ({"device": "cuda0"}, "unknown device"),
    ({"seed": 2**63}, "'seed' must be an int"), ({"seed": -3}, "'seed' must be an int"),
    ({"profile": "GPU"}, "profile name like 'cpu', got 'GPU'"), ({"profile": ""}, "profile name"),
])
def test_bad_profile_seed_and_device_are_rejected(values, message):
    with pytest.raises(ParameterError, match=message):
        setup_chapter(namespace(**values))


def test_resolve_parameters_returns_the_cell_updated_by_values_in_the_cells_order():
    resolved = runtime.resolve_parameters(DEFAULTS, {"lr": 2, "profile": "paper"})
    assert resolved == {**DEFAULTS, "profile": "paper", "lr": 2.0} and list(resolved) == list(DEFAULTS)
    assert type(resolved["lr"]) is float
    assert runtime.resolve_parameters(DEFAULTS, {}) == DEFAULTS
    with pytest.raises(ParameterError, match="unknown parameter 'stepz' in profile 'paper' of toy; valid"):
        runtime.resolve_parameters(DEFAULTS, {"stepz": 1}, where=" in profile 'paper' of toy")


def test_injected_returns_only_the_values_unlike_the_cells_type_aware():
    defaults = {**DEFAULTS, "n": 1, "x": 1.0, "flag": False}
    assert runtime.injected(defaults, dict(defaults)) == {}
    resolved = {**defaults, "profile": "paper", "steps": 10, "sizes": [1, 2], "n": 1.0, "x": 1, "flag": 0}
    assert runtime.injected(defaults, resolved) == {"profile": "paper", "n": 1.0, "x": 1, "flag": 0}
    assert runtime.injected(defaults, {**defaults, "lr": 0.25, "note": "x"}) == {"lr": 0.25, "note": "x"}


def test_a_profile_that_changes_no_value_prints_a_note_but_runs(capsys):
    run = setup_chapter(namespace(profile="paper"))
    out = capsys.readouterr().out
    assert "note: profile 'paper' changes no value of the parameters cell" in out
    assert "-f notebooks/<chapter>.paper.yaml" in out
    assert run.profile == "paper" and run.params == PARAMS
    setup_chapter(namespace(profile="paper", steps=10))  # injected, but equal to the cell's value
    assert "changes no value" in capsys.readouterr().out
    setup_chapter(namespace(profile="paper", steps=11))
    assert "changes no value" not in capsys.readouterr().out
    setup_chapter(namespace(steps=11))  # the cpu profile itself needs no values
    assert "changes no value" not in capsys.readouterr().out


# ---- the chapter's own rules and memory, before any work -------------------------------------------
def test_problems_raise_before_work_and_list_the_parameters(tmp_path, monkeypatch, banners):
    import torch

    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    shown = r"\(parameters: steps=10, lr=0.5, sizes=\[1, 2\], note=None\); nothing was computed$"
    with pytest.raises(ParameterError, match=r"^steps must be >= 100 " + shown):
        setup_chapter(namespace(), problems="steps must be >= 100", torch_threads=2)
    with pytest.raises(ParameterError, match=r"^steps must be >= 100; lr must be < 0.1 " + shown):
        setup_chapter(namespace(), problems=["steps must be >= 100", "lr must be < 0.1"])
    # nothing of the run happened: no record, no banner, torch's threads untouched
    assert not path.exists() and banners == [] and torch.get_num_threads() == 1
    for none in (None, []):
        assert setup_chapter(namespace(), problems=none).params == PARAMS
    assert path.exists() and len(banners) == 2


def test_a_memory_estimate_over_the_available_memory_raises_before_work(tmp_path, monkeypatch, banners):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    with pytest.raises(ParameterError, match=r"need about 1e\+21 GiB of memory, .* GiB are available "
                                             r"\(parameters: steps=5, .*\); nothing was computed"):
        setup_chapter(namespace(steps=5), memory_bytes=2.0**30 * 1e21)  # more than any machine has
    monkeypatch.setattr(runtime, "available_memory_bytes", lambda: 2.0**30)
    with pytest.raises(ParameterError, match="need about 2 GiB of memory, 1 GiB are available"):
        setup_chapter(namespace(), memory_bytes=2.0**31)
    for bad in (math.inf, math.nan):
        with pytest.raises(ParameterError, match="GiB of memory"):
            setup_chapter(namespace(), memory_bytes=bad)
    with pytest.raises(ParameterError, match="d must be <= V; these parameters need about 2 GiB"):
        setup_chapter(namespace(), problems=["d must be <= V"], memory_bytes=2.0**31)
    assert not path.exists() and banners == []
    assert setup_chapter(namespace(), memory_bytes=2.0**29).params == PARAMS
    assert path.exists() and len(banners) == 1
    assert 0 < runtime.available_memory_bytes() < math.inf


# ---- seeding, device, threads, timer ---------------------------------------------------------------
def test_seeding_makes_python_numpy_and_torch_reproducible():
    import torch

    def draw(seed):
        setup_chapter(namespace(seed=seed))
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    first = draw(123)
    assert draw(123) == first
    other = draw(124)
    assert all(a != b for a, b in zip(first, other, strict=True))
    setup_chapter(namespace())  # the cell's seed 0 without an injected cell
    assert random.random() == random.Random(0).random()


def test_device_resolution():
    import torch

    assert setup_chapter(namespace(device="cpu")).device == "cpu"
    assert setup_chapter(namespace(device="auto")).device == ("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        assert setup_chapter(namespace(device="cuda")).device.startswith("cuda")
    else:
        with pytest.raises(ParameterError, match="sees no CUDA device"):
            setup_chapter(namespace(device="cuda"))
    with pytest.raises(ParameterError, match="unknown device"):
        setup_chapter(namespace(device="tpu"))


def test_torch_threads_int_callable_of_the_device_or_left_alone():
    import torch

    torch.set_num_threads(2)  # the conftest fixture restores its own value afterwards
    run = setup_chapter(namespace(), torch_threads=1)
    assert torch.get_num_threads() == 1 and run.torch_threads == 1
    torch.set_num_threads(2)
    run = setup_chapter(namespace(), torch_threads=None)
    assert torch.get_num_threads() == 2 and run.torch_threads is None
    run = setup_chapter(namespace(), torch_threads=0)  # 0 = torch's default: left alone
    assert torch.get_num_threads() == 2 and run.torch_threads is None
    seen = []

    def per_device(device):
        seen.append(device)
        return 1 if device == "cpu" else None

    run = setup_chapter(namespace(device="auto"), torch_threads=per_device)  # the resolved device, not "auto"
    assert seen == [run.device] and run.device in ("cpu", "cuda")
    assert torch.get_num_threads() == (1 if run.device == "cpu" else 2)
    assert run.torch_threads == (1 if run.device == "cpu" else None)
    torch.set_num_threads(2)
    run = setup_chapter(namespace(), torch_threads=per_device)
    assert seen[-1] == "cpu" and torch.get_num_threads() == 1 and run.torch_threads == 1
    torch.set_num_threads(2)
    run = setup_chapter(namespace(), torch_threads=lambda device: 1 if device == "cuda" else None)
    assert torch.get_num_threads() == 2 and run.torch_threads is None
    for bad in (-1, True, 1.5, "steps", lambda device: -2):
        with pytest.raises(ParameterError, match="torch_threads must be a non-negative int"):
            setup_chapter(namespace(), torch_threads=bad)
    assert torch.get_num_threads() == 2


def test_chapter_timer_starts_at_setup_and_is_monotone():
    import time

    t0 = time.perf_counter()
    run = setup_chapter(namespace())
    t1 = time.perf_counter()
    first = run.elapsed()
    assert 0.0 <= first <= time.perf_counter() - t0
    assert t0 <= run.started_wall <= t1
    sum(range(200_000))  # burn a little CPU
    second = run.elapsed()
    assert second >= first and run.cpu_elapsed() >= 0.0


# ---- banner and record -----------------------------------------------------------------------------
def test_banner_shows_profile_device_and_parameters(banners):
    setup_chapter(namespace(steps=5))
    [(bundle, raw)] = banners
    assert raw is True
    assert bundle["text/plain"].splitlines() == [
        "profile=cpu  device=cpu  seed=0", "  steps = 5 (set for this run)", "  lr = 0.5", "  sizes = [1, 2]",
        "  note = None"]
    html = bundle["text/html"]
    assert 'class="ntpbook-run-banner"' in html
    assert "profile <code>cpu</code>, device <code>cpu</code>" in html
    assert "<code>steps</code></td><td><code>5</code> (set for this run)" in html
    assert "<code>lr</code></td><td><code>0.5</code></td>" in html


def test_record_file_for_the_status_page(tmp_path, monkeypatch):
    path = tmp_path / "records" / "a01.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(namespace(steps=4, lr=1))
    check("one", True, measured=np.arange(3))
    with pytest.raises(AssertionError):
        check("two", False, measured=float("nan"))
    record = json.loads(path.read_text())
    assert record["profile"] == "cpu" and record["device"] == "cpu" and record["seed"] == 0
    assert record["device_requested"] == "cpu"
    assert record["params"] == {"steps": 4, "lr": 1.0, "sizes": [1, 2], "note": None}
    assert record["injected"] == ["steps", "lr"]
    assert [c["claim"] for c in record["checks"]] == ["one", "two"]
    assert record["checks"][0]["measured"] == [0, 1, 2] and record["checks"][1]["measured"] == "nan"
    assert record["wall_s"] >= 0
    setup_chapter(namespace())  # a new run starts a new record
    record = json.loads(path.read_text())
    assert record["checks"] == [] and record["injected"] == [] and record["params"] == PARAMS


# ---- another profile's values: profile_values --------------------------------------------------------
TOY_CHAPTER = '''# %% [markdown]
# # A toy chapter

# %%
LIMITS = {"steps": (1, 10**6)}

# %% tags=["parameters"]
''' + PARAMS_CELL + '''
# %%
from ntputils.chapter import setup_chapter

run = setup_chapter(globals())
'''


def test_profile_values_reads_the_profile_yaml_over_the_parameters_cell(tmp_path):
    (tmp_path / "toy.py").write_text(TOY_CHAPTER)
    (tmp_path / "toy.paper.yaml").write_text("# the paper profile of toy\nprofile: paper\nsteps: 1000\n"
                                             "lr: 1\n")
    paper = runtime.profile_values("toy", "paper", tmp_path)
    assert paper == {**DEFAULTS, "profile": "paper", "steps": 1000, "lr": 1.0}
    assert list(paper) == list(DEFAULTS) and type(paper["lr"]) is float
    assert runtime.profile_values("toy", "cpu", tmp_path) == DEFAULTS  # the cell itself; no cpu yaml needed
    (tmp_path / "toy.paper.yaml").write_text("profile: paper\nstepz: 1000\n")
    with pytest.raises(ParameterError, match="unknown parameter 'stepz' in profile 'paper' of toy"):
        runtime.profile_values("toy", "paper", tmp_path)
    (tmp_path / "toy.paper.yaml").write_text("profile: paper\nsteps: many\n")
    with pytest.raises(ParameterError, match="'steps' must be of type int"):
        runtime.profile_values("toy", "paper", tmp_path)
    with pytest.raises(FileNotFoundError):
        runtime.profile_values("toy", "gpu", tmp_path)
    (tmp_path / "bare.py").write_text(TOY_CHAPTER.replace(' tags=["parameters"]', ""))
    with pytest.raises(ParameterError, match="chapter bare has no parameters cell"):
        runtime.profile_values("bare", "cpu", tmp_path)
    (tmp_path / "late.py").write_text(TOY_CHAPTER.replace("seed = 0 ", "seedx = 0"))
    with pytest.raises(ParameterError, match="the parameters cell of late must start with"):
        runtime.profile_values("late", "cpu", tmp_path)


# ---- checks ---------------------------------------------------------------------------------------
def test_check_records_and_raises_on_failure_and_the_claims_table_shows_it(capsys):
    setup_chapter(namespace())
    capsys.readouterr()  # the run banner
    gap = np.float64(1e-4)
    assert check("gap is small", gap < 1e-3, measured=gap, paper="~1e-3", tol=1e-3) is None
    assert capsys.readouterr().out == ""  # nothing printed: the page shows it in claims_table()
    shown = runtime.claims_table().data
    assert shown.to_dict("records") == [{"": "check", "statement": "gap is small", "rule": "tol 0.001",
                                         "measured": "0.0001", "control": "(a mathematical fact)",
                                         "chance": "", "paper": "~1e-3", "outcome": "pass"}]
    assert runtime.claims_table() is None  # nothing new since the last table
    assert len(runtime.claims_table(all_rows=True).data) == 1
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
    setup_chapter(namespace())
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
    table = runtime.claims_table().data
    assert list(table["outcome"]) == ["deviates", "reproduced", "not run"]
    assert table["statement"].iloc[0].startswith("proxy distance")
    setup_chapter(namespace())  # a new run starts with no rules
    with pytest.raises(KeyError):
        runtime.compare("dist", 0.2)


def test_record_glues_and_stores_values(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(namespace())
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

    setup_chapter(namespace())
    runtime.preregister_similarity({"simH": ("sim(H, S~) high", 0.1, "A:Fig 6")})
    rep = SimilarityWithChance(value=0.75, offdiagonal=0.5, random_mean=0.70, random_std=0.01,
                               random_offdiagonal_mean=0.0, random_offdiagonal_std=0.01,
                               shuffled_mean=0.3, shuffled_std=0.05, draws=20,
                               shuffled_offdiagonal_mean=0.0)
    assert runtime.compare_similarity("simH", rep) == ("deviates", "reproduced")
    rows = runtime.current_record()["comparisons"]
    assert [r["key"] for r in rows] == ["simH", "simH_offdiag"] and rows[1]["chance"] == 0.0
    assert rep.row("sim(H, S~)")["off-diag. chance"] == "0.000 ± 0.010"


def test_compare_unavailable_is_not_reproduced(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(namespace())
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
    setup_chapter(namespace())
    runtime.preregister({"t_nan": ("a claim", runtime.at_least(0.5)),
                         "t_chance": ("another", runtime.above_chance(0.1))})
    with pytest.raises(ValueError, match="'t_nan'.*NaN"):
        runtime.compare("t_nan", float("nan"))
    with pytest.raises(ValueError, match="'t_chance'.*chance level must be finite"):
        runtime.compare("t_chance", 0.9, chance=float("nan"))
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        runtime.record("t_tol", 1.0, tol=-1)


def test_a_learned_similarity_is_judged_against_the_untrained_model(capsys):
    """The baseline of a claim about a trained matrix is the larger of the Gaussian chance level and the
    untrained model's value: a value that beats only the Gaussian level deviates, with both numbers."""
    from ntputils.analysis.baselines import SimilarityWithChance

    setup_chapter(namespace())
    runtime.preregister_similarity({"simH": ("sim(H, S~) high", 0.1, "A:Fig 6")})
    rep = SimilarityWithChance(value=0.75, offdiagonal=0.6, random_mean=0.30, random_std=0.01,
                               random_offdiagonal_mean=0.0, random_offdiagonal_std=0.01,
                               shuffled_mean=0.3, shuffled_std=0.05, draws=20,
                               untrained=0.70, untrained_offdiagonal=0.2, shuffled_offdiagonal_mean=0.01)
    assert rep.baseline == 0.70 and rep.baseline_offdiagonal == 0.2
    assert runtime.compare_similarity("simH", rep) == ("deviates", "reproduced")
    value_row, off_row = runtime.current_record()["comparisons"]
    assert value_row["chance"] == 0.70 and value_row["baselines"] == {"Gaussian": 0.30, "untrained": 0.70}
    assert "not the untrained model's" in value_row["note"] and off_row["note"] == ""
    assert runtime.claims_table().data["chance"].iloc[0] == "Gaussian 0.3, untrained 0.7"
    assert rep.row("x")["untrained"] == "0.700"


def test_baselines_and_chance_are_exclusive():
    setup_chapter(namespace())
    runtime.preregister({"c": ("a claim", runtime.above_chance(0.1))})
    with pytest.raises(ValueError, match="either chance or"):
        runtime.compare("c", 0.5, chance=0.1, baselines={"Gaussian": 0.1})
    with pytest.raises(ValueError, match="baseline 'untrained'"):
        runtime.compare("c", 0.5, baselines={"Gaussian": 0.1, "untrained": float("nan")})
    assert runtime.compare("c", 0.5, baselines={"Gaussian": 0.1, "untrained": 0.45}) == "deviates"


def test_an_at_least_claim_the_untrained_model_already_meets_deviates():
    setup_chapter(namespace())
    runtime.preregister({"axis": ("all items on the caption's side", runtime.at_least(1.0, "all"))})
    runtime.preregister({"pc1": ("all items on PC 1's side", runtime.at_least(1.0, "all"))})
    assert runtime.compare("axis", 1.0, baselines={"coin flip": 0.5, "untrained": 1.0}) == "deviates"
    assert runtime.compare("pc1", 1.0, baselines={"coin flip": 0.5, "untrained": 0.55}) == "reproduced"
    axis, pc1 = runtime.current_record()["comparisons"]
    assert "does not test training" in axis["note"] and pc1["note"] == ""


def test_preregister_returns_claims_judged_by_name_with_the_paper_value_stated_once():
    setup_chapter(namespace())
    claims = runtime.preregister({
        "dist": ("distance to the proxy", runtime.within(0.163, abs_tol=0.05), "A:proxy"),
        "grow": ("norms grow", runtime.at_least(5.0), "A:Fig 6", "17.9 (TF STS)"),
    })
    assert claims.dist.paper == 0.163 and claims["grow"].paper == "17.9 (TF STS)"
    assert claims.dist.judge(0.2) == "reproduced" and claims.grow.judge(3.0) == "deviates"
    dist, grow = runtime.current_record()["comparisons"]
    assert dist["paper"] == 0.163 and grow["paper"] == "17.9 (TF STS)" and dist["items"] == ["A:proxy"]
    with pytest.raises(AttributeError, match="no claim 'dsit'.*registered: dist, grow"):
        claims.dsit.judge(0.2)
    assert runtime.compare("dist", 0.2, paper="overridden") == "reproduced"
    assert runtime.current_record()["comparisons"][-1]["paper"] == "overridden"


def test_unjudged_claims_are_the_registered_keys_never_compared():
    setup_chapter(namespace())
    claims = runtime.preregister({"a": ("a", runtime.at_least(0)), "b": ("b", runtime.at_least(0))})
    sims = runtime.preregister_similarity({"s": ("s", 0.1, None)})
    assert set(sims) == {"s", "s_offdiag"}
    claims.a.judge(1)
    assert runtime.unjudged_claims(runtime.current_record()) == ["b", "s", "s_offdiag"]
    claims.b.judge(1)
    runtime.compare("s", 1, chance=0, control=0.5)
    runtime.compare("s_offdiag", 1, chance=0, control=0.5)
    assert runtime.unjudged_claims(runtime.current_record()) == []


def test_similarity_claims_as_objects_with_the_paper_value_at_registration():
    from ntputils.analysis.baselines import SimilarityWithChance

    setup_chapter(namespace())
    sims = runtime.preregister_similarity({"simH": ("sim(H, S~) high", 0.1, "A:Fig 1", "near-identical")})
    rep = SimilarityWithChance(value=0.9, offdiagonal=0.8, random_mean=0.3, random_std=0.01,
                               random_offdiagonal_mean=0.0, random_offdiagonal_std=0.01,
                               shuffled_mean=0.3, shuffled_std=0.05, draws=20,
                               shuffled_offdiagonal_mean=0.0)
    assert runtime.compare_similarity(sims.simH, rep) == ("reproduced", "reproduced")
    assert [r["paper"] for r in runtime.current_record()["comparisons"]] == ["near-identical"] * 2


# ---- negative controls (issue "Every claim must be able to fail") and measurements that are numbers ----


def test_a_claim_whose_control_passes_the_same_rule_cannot_fail(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(namespace())
    claims = runtime.preregister(
        {"conv": ("final distance to L^mm below the untrained model's", runtime.at_most(0.3)),
         "grow": ("the norm keeps growing", runtime.at_least(1.0)),
         "sim": ("sim above chance", runtime.above_chance(0.05)),
         "bare": ("a claim without a control", runtime.at_least(0.5))},
        controls={"conv": "the untrained model", "grow": "a constant-rate path",
                  "sim": "supports shuffled"})
    assert claims.conv.control == "the untrained model" and claims.bare.control is None
    assert claims.conv.judge(0.1, control=0.9) == "reproduced"        # the control fails the rule
    assert claims.grow.judge(1.3, control=1.0) == runtime.CANNOT_FAIL  # ratio >= 1 holds for any path
    assert claims.sim.judge(0.2, chance=0.1, control=0.12) == "reproduced"  # same chance level for both
    assert claims.bare.judge(0.7) == "reproduced"
    rows = {r["key"]: r for r in json.loads(path.read_text())["comparisons"]}
    assert rows["grow"]["control_passes"] is True and "a constant-rate path" in rows["grow"]["note"]
    assert rows["conv"]["control_value"] == 0.9 and rows["conv"]["control_passes"] is False
    assert rows["bare"]["control"] is None
    shown = runtime.claims_table().data.set_index("statement")["control"]
    assert shown["the norm keeps growing"] == "a constant-rate path: 1 (passes)"
    assert shown["final distance to L^mm below the untrained model's"] == "the untrained model: 0.9 (fails)"
    assert shown["a claim without a control"] == runtime.NO_CONTROL


def test_a_deviating_claim_stays_deviating_whatever_its_control():
    setup_chapter(namespace())
    runtime.preregister({"c": ("x", runtime.at_least(1.0))}, controls={"c": "hierarchy inverted"})
    assert runtime.compare("c", 0.5, control=2.0) == "deviates"
    assert runtime.current_record()["comparisons"][0]["control_passes"] is True


def test_a_registered_control_must_be_measured_and_an_unregistered_one_is_refused():
    setup_chapter(namespace())
    runtime.preregister({"c": ("x", runtime.at_least(1.0)), "d": ("y", runtime.at_least(1.0))},
                        controls={"c": "labels permuted"})
    with pytest.raises(ValueError, match="registered with the control 'labels permuted'"):
        runtime.compare("c", 2.0)
    with pytest.raises(ValueError, match="'d' was registered without a control"):
        runtime.compare("d", 2.0, control=0.0)
    assert runtime.compare("c", None) == "not run"  # nothing measured: nothing to control
    with pytest.raises(ValueError, match="not registered here: 'e'"):
        runtime.preregister({"f": ("z", runtime.at_least(0))}, controls={"e": "x"})
    with pytest.raises(TypeError, match="in words"):
        runtime.preregister({"g": ("z", runtime.at_least(0))}, controls={"g": ""})


@pytest.mark.parametrize("value", [True, np.bool_(False), "1.0", b"1", [1.0], {"a": 1}, object()])
def test_compare_refuses_a_verdict_or_a_text_as_a_measurement_naming_the_claim(value):
    setup_chapter(namespace())
    runtime.preregister({"ratio": ("x", runtime.within(1.0, abs_tol=0.1))}, controls={"ratio": "random"})
    with pytest.raises(TypeError, match="claim 'ratio': the measured value must be a real number"):
        runtime.compare("ratio", value, control=0.0)
    with pytest.raises(TypeError, match="claim 'ratio': the control's value must be a real number"):
        runtime.compare("ratio", 1.0, control=value)


def test_compare_takes_numpy_and_torch_scalars_and_inf_as_values():
    import torch

    setup_chapter(namespace())
    runtime.preregister({"a": ("x", runtime.at_least(1.0)), "b": ("y", runtime.at_least(1.0)),
                         "t90": ("never reached", runtime.at_most(100.0))})
    assert runtime.compare("a", np.float32(2.0)) == "reproduced"
    assert runtime.compare("b", torch.tensor(0.5)) == "deviates"
    assert runtime.compare("t90", math.inf) == "deviates"  # a milestone never reached is a value


def test_recording_a_name_twice_is_an_error_naming_it(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    monkeypatch.setenv(runtime.RECORD_ENV, str(path))
    setup_chapter(namespace())
    runtime.record("ce_gap", 0.1)
    with pytest.raises(ValueError, match="record 'ce_gap' was already recorded"):
        runtime.record("ce_gap", 0.2)
    assert json.loads(path.read_text())["results"]["ce_gap"]["value"] == 0.1  # the first value is kept
    setup_chapter(namespace())  # a new run starts with no records
    runtime.record("ce_gap", 0.3)


def test_similarity_claims_judge_their_control_on_both_values():
    from ntputils.analysis.baselines import SimilarityWithChance

    def rep(value, off):
        return SimilarityWithChance(value=value, offdiagonal=off, random_mean=0.5, random_std=0.01,
                                    random_offdiagonal_mean=0.0, random_offdiagonal_std=0.01,
                                    shuffled_mean=0.3, shuffled_std=0.05, draws=20,
                               shuffled_offdiagonal_mean=0.0)

    setup_chapter(namespace())
    runtime.preregister_similarity({"simH": ("sim(H, S~) high", 0.1, "A:Fig 1")},
                                   controls={"simH": "S~ of shuffled supports"})
    outcomes = runtime.compare_similarity("simH", rep(0.8, 0.4), control=rep(0.7, 0.05))
    assert outcomes == (runtime.CANNOT_FAIL, "reproduced")
    rows = runtime.current_record()["comparisons"]
    assert [r["control_value"] for r in rows] == [0.7, 0.05]


def test_a_reference_value_of_our_own_run_is_never_printed_as_the_papers():
    rule = runtime.within(0.13, abs_tol=0.05, source="reference run")
    assert rule.text == "0.13 (reference run, not the paper) within 0.05" and rule.paper is None
    assert runtime.within(0.13, abs_tol=0.05).text == "paper's 0.13 within 0.05"
    with pytest.raises(ValueError, match="source must name"):
        runtime.within(0.13, abs_tol=0.05, source="")
    setup_chapter(namespace())
    claims = runtime.preregister({"c": ("c over lambda", rule)}, controls={"c": "random instance"})
    assert claims.c.paper is None
