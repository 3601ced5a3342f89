"""What a chapter imports: set-up, mathematical checks, pre-registered claims, recorded values.

A chapter's papermill ``parameters`` cell holds its cpu values as literals (``profile``, ``seed`` and
``device`` first, one comment per line); another profile is the sibling file
``notebooks/<chapter>.<profile>.yaml`` of the values that differ, which the runner (or ``papermill -f``)
injects. ``run = setup_chapter(globals())`` validates, seeds, resolves the device and starts the timer;
the chapter reads its parameters as globals (``steps``, not ``cfg.steps``).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ntputils.committed import (  # noqa: F401 - for chapters
    CANNOT_FAIL,
    NO_CONTROL,
    control_text,
    provenance_text,
    published,
    recorded_values,
    show_paper_profile,
    shown_committed,
    sweep_command,
)

RESERVED = ("profile", "seed", "device")
DEFAULT_PROFILE = "cpu"
RECORD_ENV = "NTPBOOK_RECORD"
INJECTED_MARKER = "# Parameters"
#: device names a chapter accepts (checked before any kernel starts; CUDA availability is checked in it)
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")
#: seeds must fit every generator seeded by :func:`ntputils.device.seed_everything` (torch: < 2**63)
SEED_MAX = 2**63 - 1
PROFILE_PATTERN = re.compile(r"[a-z][a-z0-9_]*")


class ParameterError(ValueError):
    """A chapter parameter is unknown, ill-typed or breaks one of the chapter's rules."""


# ----------------------------------------------------------------------------------------------
# the contract with the runner: pure Python, shared with ntputils.book (which checks before running)
# ----------------------------------------------------------------------------------------------


def literal_assignments(code: str, what: str) -> dict[str, Any]:
    """``{name: value}`` of a cell of ``name = literal`` lines (the parameters cell, a profile's values)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise ParameterError(f"{what} does not parse (line {err.lineno}: {err.msg})") from None
    out: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            raise ParameterError(f"{what} may only hold `name = literal` lines (line {node.lineno})")
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise ParameterError(f"{what}: {node.targets[0].id} (line {node.lineno}) must be a literal "
                                 "(number, string, None, list, dict)") from None
    return out


def parameter_defaults(code: str, what: str) -> dict[str, Any]:
    """The parameters cell's values; it must start with ``profile``, ``seed``, ``device`` and be valid."""
    defaults = literal_assignments(code, what)
    if tuple(defaults)[:3] != RESERVED:
        raise ParameterError(f"{what} must start with {', '.join(f'{n} = ...' for n in RESERVED)}; "
                             f"it starts with {', '.join(list(defaults)[:3]) or 'nothing'}")
    resolve_parameters(defaults, {}, where=f" in {what}")
    return defaults


def _type_name(value: Any) -> str:
    return type(value).__name__


def coerce_parameter(name: str, value: Any, reference: Any) -> Any:
    """Return ``value`` converted to the type of the parameters-cell value ``reference``, or raise.

    Rules: ``None`` in the cell accepts anything; ``bool`` only matches ``bool``; an ``int`` is
    accepted (and converted) where a ``float`` is expected; lists and tuples are interchangeable.
    """
    if reference is None:
        return value
    if isinstance(reference, bool) or isinstance(value, bool):
        if isinstance(reference, bool) and isinstance(value, bool):
            return value
    elif isinstance(reference, float) and isinstance(value, (int, float)):
        return float(value)
    elif isinstance(reference, int) and isinstance(value, int):
        return value
    elif isinstance(reference, (list, tuple)) and isinstance(value, (list, tuple)):
        return type(reference)(value)
    elif isinstance(value, type(reference)):
        return value
    raise ParameterError(
        f"parameter {name!r} must be of type {_type_name(reference)} (like the parameters cell's "
        f"{reference!r}), got {_type_name(value)} {value!r}"
    )


def check_names(names: Sequence[str], valid: Sequence[str], where: str = "") -> None:
    """Raise :class:`ParameterError` naming every entry of ``names`` not in ``valid``."""
    unknown = [n for n in names if n not in valid]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ParameterError(
            f"unknown parameter{plural} {', '.join(repr(n) for n in unknown)}{where}; "
            f"valid parameters: {', '.join(valid)}"
        )


def resolve_parameters(defaults: Mapping[str, Any], values: Mapping[str, Any],
                       where: str = "") -> dict[str, Any]:
    """The parameters cell's ``defaults`` updated by ``values`` (a profile's and ``-p`` values), type-checked.

    Returns every parameter in the cell's order. ``device`` is checked, not resolved (see
    :func:`setup_chapter`). Raises :class:`ParameterError` for unknown names and ill-typed values.
    """
    check_names(list(values), list(defaults), where)
    resolved = {name: coerce_parameter(name, values[name], default) if name in values else default
                for name, default in defaults.items()}
    profile, seed, device = (resolved.get(n) for n in RESERVED)
    if not isinstance(profile, str) or not PROFILE_PATTERN.fullmatch(profile):
        raise ParameterError(f"parameter 'profile' must be a profile name like 'cpu', got {profile!r}{where}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ParameterError(f"parameter 'seed' must be an int in [0, 2**63 - 1], got {seed!r}{where}")
    if not isinstance(device, str) or not DEVICE_PATTERN.fullmatch(device):
        raise ParameterError(f"unknown device {device!r}{where}; use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    return resolved


def injected(defaults: Mapping[str, Any], resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``resolved`` that papermill must inject: those unlike the parameters cell's."""
    return {k: v for k, v in resolved.items()
            if not (type(v) is type(defaults.get(k)) and v == defaults.get(k))}


def injected_parameter_names(sources: Sequence[str]) -> list[str]:
    """Names assigned in the last papermill-injected cell (source starting with ``# Parameters``)."""
    index = _injected_index(sources)
    if index is None:
        return []
    return list(literal_assignments(sources[index], "the injected parameters cell"))


def _injected_index(sources: Sequence[str]) -> int | None:
    for i in range(len(sources) - 1, -1, -1):
        if isinstance(sources[i], str) and sources[i].lstrip().startswith(INJECTED_MARKER):
            return i
    return None


def parameters_cell(sources: Sequence[str]) -> str:
    """The parameters cell among the executed cell sources (IPython's ``In``): the cell before papermill's
    injected one, else the last cell whose first line assigns ``profile``."""
    index = _injected_index(sources)
    if index is not None and index > 0:
        return sources[index - 1]
    for source in reversed(list(sources)):
        if isinstance(source, str) and re.match(r"\s*profile\s*=", source):
            return source
    raise ParameterError("setup_chapter found no parameters cell (`profile = ...`, `seed = ...`, "
                         "`device = ...` lines) among the executed cells")


def profile_values(chapter: str, profile: str, notebooks: Path | None = None) -> dict[str, Any]:
    """Every parameter of ``chapter`` (e.g. ``"a07_tinystories_transformer"``) at ``profile``: its
    parameters cell updated by ``<chapter>.<profile>.yaml`` (a page quoting another profile's size)."""
    import yaml

    from ntputils.paths import REPO_ROOT

    folder = notebooks or REPO_ROOT / "notebooks"
    source = (folder / f"{chapter}.py").read_text()
    cell = re.search(r'^# %% tags=\["parameters"\]\n(.*?)(?=^# %%)', source, re.S | re.M)
    if cell is None:
        raise ParameterError(f"chapter {chapter} has no parameters cell")
    defaults = parameter_defaults(cell.group(1), f"the parameters cell of {chapter}")
    values = ({} if profile == defaults["profile"]
              else yaml.safe_load((folder / f"{chapter}.{profile}.yaml").read_text()))
    return resolve_parameters(defaults, values, where=f" in profile {profile!r} of {chapter}")


# ----------------------------------------------------------------------------------------------
# the chapter's run: set-up, banner and record
# ----------------------------------------------------------------------------------------------


def resolve_device(device: str) -> str:
    """The device a chapter runs on (see :func:`ntputils.device.resolve_device`), as a string;
    a bad name raises :class:`ParameterError`."""
    from ntputils import device as _device

    try:
        return str(_device.resolve_device(device))
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


@dataclass(frozen=True)
class ChapterRun:
    """The resolved run of one chapter: ``profile``, ``seed``, the resolved ``device``, the other
    ``params``, the torch thread count (``None``: torch's default) and the chapter's timer."""

    profile: str
    seed: int
    device: str
    params: dict[str, Any] = field(default_factory=dict)
    torch_threads: int | None = field(default=None, compare=False)
    started_wall: float = field(default_factory=time.perf_counter, compare=False, repr=False)
    started_cpu: float = field(default_factory=time.process_time, compare=False, repr=False)

    def elapsed(self) -> float:
        """Wall-clock seconds since the chapter's set-up (``time.perf_counter``)."""
        return time.perf_counter() - self.started_wall

    def cpu_elapsed(self) -> float:
        """CPU seconds of this process since the chapter's set-up (``time.process_time``)."""
        return time.process_time() - self.started_cpu

    def as_dict(self) -> dict[str, Any]:
        """``profile``, ``seed``, ``device`` and every other parameter, in the cell's order."""
        return {"profile": self.profile, "seed": self.seed, "device": self.device, **self.params}


_RECORD: dict[str, Any] = {"checks": []}


def current_record() -> dict[str, Any]:
    """The record of the chapter running in this process (config, checks, wall time so far)."""
    return _RECORD


def _jsonable(value: Any) -> Any:
    """A JSON-friendly version of a measured value (numpy scalars -> Python, big arrays -> text)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and len(value) <= 20:
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping) and len(value) <= 20:
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.size <= 20:
        return _jsonable(value.tolist())
    return str(value)


def _write_record() -> None:
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    _RECORD["wall_s"] = round(time.time() - _RECORD.get("started", time.time()), 3)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(_RECORD, indent=1, default=str))
    tmp.replace(target)


def _banner(run: ChapterRun, changed: Sequence[str]) -> None:
    """Show the resolved run at the top of the chapter (HTML for the book, text for terminals)."""
    from html import escape

    rows = []
    text = [f"profile={run.profile}  device={run.device}  seed={run.seed}"]
    for key, value in run.params.items():
        note = " (set for this run)" if key in changed else ""
        rows.append(f"<tr><td><code>{escape(key)}</code></td><td><code>{escape(repr(value))}</code>{note}</td></tr>")
        text.append(f"  {key} = {value!r}{note}")
    html = (
        '<div class="ntpbook-run-banner"><p><b>Run:</b> profile <code>'
        f"{escape(run.profile)}</code>, device <code>{escape(run.device)}</code>, "
        f"seed <code>{run.seed}</code></p>"
        f'<table class="ntpbook-params"><tbody>{"".join(rows)}</tbody></table></div>'
    )
    try:
        from IPython.display import display

        display({"text/html": html, "text/plain": "\n".join(text)}, raw=True)
    except ImportError:  # pragma: no cover - IPython is a dependency
        print("\n".join(text))


def setup_chapter(namespace: Mapping[str, Any], *,
                  torch_threads: int | Callable[[str], int | None] | None = None,
                  problems: Sequence[str] | str | None = None,
                  memory_bytes: float | None = None) -> ChapterRun:
    """Validate the chapter's parameters; seed; resolve the device; set threads; start the timer.

    ``namespace`` is the chapter's ``globals()``: its parameter values and IPython's ``In`` (the executed
    cells, where the parameters cell and papermill's injected cell are found); it is only read.
    ``torch_threads``: the torch intra-op thread count, or a function of the resolved device (``None``
    or 0: torch's default). ``problems``: the chapter's own value rules, computed from its parameters
    before any work (e.g. ``[] if d <= V else ["d must be <= V"]``). ``memory_bytes``: an estimate of the
    chapter's peak memory; above :func:`available_memory_bytes` the call raises before any work.

    Raises :class:`ParameterError` (a ``ValueError``) naming unknown or ill-typed injected parameters,
    a profile set without its values, a broken rule or an over-budget memory estimate.
    """
    sources = list(namespace.get("In") or namespace.get("_ih") or [])
    defaults = parameter_defaults(parameters_cell(sources), "the parameters cell")
    names = injected_parameter_names(sources)
    check_names(names, list(defaults), " (passed with papermill -p / ntputils.book -p)")
    resolved = resolve_parameters(defaults, {name: namespace[name] for name in names if name in namespace})
    changed = [k for k in names if k not in RESERVED and k in injected(defaults, resolved)]
    if resolved["profile"] != defaults["profile"] and not changed:
        print(f"note: profile {resolved['profile']!r} changes no value of the parameters cell; with "
              f"papermill, pass its values with -f notebooks/<chapter>.{resolved['profile']}.yaml")
    device = resolve_device(resolved["device"])
    from ntputils.device import seed_everything

    seed_everything(resolved["seed"], device)
    params = {k: v for k, v in resolved.items() if k not in RESERVED}
    found = [problems] if isinstance(problems, str) else list(problems or [])
    if memory_bytes is not None:
        need, have = float(memory_bytes), available_memory_bytes()
        if not math.isfinite(need) or need > have:
            found.append(f"these parameters need about {need / 2**30:.3g} GiB of memory, "
                         f"{have / 2**30:.3g} GiB are available")
    if found:
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise ParameterError("; ".join(found) + f" (parameters: {shown}); nothing was computed")
    threads = torch_threads(device) if callable(torch_threads) else torch_threads
    if isinstance(threads, bool) or not (threads is None or isinstance(threads, int)) or (threads or 0) < 0:
        raise ParameterError(f"torch_threads must be a non-negative int, got {threads!r}")
    if threads:
        import torch

        torch.set_num_threads(threads)

    _RECORD.clear()
    _RECORD.update(started=time.time(), profile=resolved["profile"], seed=resolved["seed"], device=device,
                   device_requested=resolved["device"], params={k: _jsonable(v) for k, v in params.items()},
                   injected=names, checks=[], comparisons=[], results={})
    _RULES.clear()
    _SHOWN.update(checks=0, comparisons=0)
    _write_record()
    run = ChapterRun(resolved["profile"], resolved["seed"], device, params, threads or None)
    _banner(run, changed)
    return run


def available_memory_bytes() -> float:
    """Memory this process may still allocate: ``MemAvailable`` of ``/proc/meminfo`` (else total RAM).
    """
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - exotic platforms
        return math.inf


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def check(claim: str, passed: Any, measured: Any = None, paper: Any = None, tol: Any = None, *,
          sanity: bool = False, item: str | Sequence[str] | None = None) -> None:
    """Assert a mathematical fact (identity, closed form, certificate): record it, raise if false; the
    page shows it in the next :func:`claims_table`.

    ``passed`` is the outcome: a ``bool`` or a numpy bool, nothing else (``bool(nan)`` is true, so a
    number is refused with a ``TypeError`` rather than read as a pass); ``measured`` our number,
    ``paper`` what the paper reports or predicts, ``tol`` the tolerance used (all optional, shown as given).
    ``sanity=True`` marks a line that cannot fail by construction (e.g. a feasible point's norm bounds
    the optimum): it still fails the build when false, but is listed apart and not counted as
    evidence. ``item`` names the paper result(s) the check is evidence for on the reproduction
    scorecard, e.g. ``"A:Thm 1"`` or ``["B:Fig 13", "B:STEP"]`` (see :mod:`ntputils.reports.scorecard`).
    Empirical claims of a paper use :func:`preregister` and :func:`compare` instead.
    Returns ``None`` (nothing is echoed in the notebook); raises ``AssertionError`` (after recording)
    when ``passed`` is false.
    """
    if not isinstance(passed, (bool, np.bool_)):
        raise TypeError(f"check({claim!r}): 'passed' must be a boolean (a comparison's result), got "
                        f"{type(passed).__name__} {passed!r}: a number or NaN is not a verdict")
    ok = bool(passed)
    row = {"claim": str(claim), "passed": ok, "measured": _jsonable(measured), "paper": _jsonable(paper),
           "tol": _jsonable(tol), "sanity": bool(sanity), "items": _items(item)}
    _RECORD.setdefault("checks", []).append(row)
    _write_record()
    if not ok:
        raise AssertionError(
            f"check failed: {claim} (measured {_fmt(measured)}, paper {_fmt(paper)}, tol {_fmt(tol)})"
        )


# ----------------------------------------------------------------------------------------------
# results as data: recorded values and pre-registered empirical claims
# ----------------------------------------------------------------------------------------------
OUTCOMES = ("reproduced", "deviates", CANNOT_FAIL, "not run", "not reproduced")
UNTRAINED = "untrained"  # the baseline name of the same model at initialization (compare(baselines=...))


@dataclass(frozen=True)
class Rule:
    """A pass rule for an empirical claim, fixed *before* the measurement it judges.

    Built with :func:`within`, :func:`at_least`, :func:`at_most`, :func:`between` or
    :func:`above_chance` and registered with :func:`preregister` in a cell above the computation;
    :func:`compare` then judges the measured value by it. ``text`` is how the rule reads on the page.
    """

    kind: str
    text: str
    low: float = -math.inf
    high: float = math.inf
    margin: float = 0.0
    paper: float | None = None  # the paper's number, for a within() rule

    def holds(self, measured: float, chance: float | None = None) -> bool:
        """Whether ``measured`` satisfies the rule (``chance``: the chance level, for above_chance).

        A NaN measurement raises ``ValueError`` (a failed computation, not a deviation); ``inf`` is a
        value (e.g. the step of a milestone never reached) and is judged like any other. The chance level
        must be finite. ``above_chance`` is strict: ``measured > chance + margin``."""
        x = _real(measured, "the measured value")
        if self.kind == "above_chance":
            if chance is None:
                raise ValueError(f"rule {self.text!r} needs the chance level: compare(..., chance=...)")
            return x > _finite(chance, "the chance level") + self.margin
        return self.low <= x <= self.high


def _real(value: Any, what: str) -> float:
    """``float(value)``; ``ValueError`` naming ``what`` when it is NaN or not a real number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a real number, got {value!r}") from None
    if math.isnan(x):
        raise ValueError(f"{what} is NaN: a failed computation is not a deviation")
    return x


def _finite(value: Any, what: str) -> float:
    """``float(value)``; ``ValueError`` naming ``what`` when it is not a finite real number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return x


def within(paper: float, *, abs_tol: float | None = None, rel_tol: float | None = None,
           source: str = "paper") -> Rule:
    """``|measured - paper| <= abs_tol`` (or ``<= rel_tol * |paper|``): the paper's number, a tolerance.

    The paper's value and the tolerance must be finite and the tolerance ``>= 0`` (``0``: exactly the
    paper's value, e.g. a count); anything else raises ``ValueError`` at registration. ``source`` names
    where the number comes from when it is not the paper's: ``"reference run"`` (one of our own runs) or
    ``"authors' logs"``; the rule then reads "0.13 (reference run, not the paper) within 0.05", and the
    number is not shown as the paper's.
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"within(): source must name where the number comes from, got {source!r}")
    if (abs_tol is None) == (rel_tol is None):
        raise ValueError("within() needs exactly one of abs_tol, rel_tol")
    paper = _finite(paper, "within(): the paper's value")
    given = _finite(abs_tol if abs_tol is not None else rel_tol, "within(): the tolerance")
    if given < 0:
        raise ValueError(f"within(): the tolerance must be >= 0 (0: exactly the paper's value), got "
                         f"{given!r} (a claim that can never pass)")
    tol = abs_tol if abs_tol is not None else rel_tol * abs(paper)
    what = f"{abs_tol:g}" if abs_tol is not None else f"{100 * rel_tol:g}% of it"
    text = f"paper's {paper:g}" if source == "paper" else f"{paper:g} ({source}, not the paper)"
    return Rule("within", f"{text} within {what}", low=paper - tol, high=paper + tol,
                paper=paper if source == "paper" else None)


def at_least(bound: float, why: str = "") -> Rule:
    """``measured >= bound``.
    """
    bound = _finite(bound, "at_least(): the bound")
    return Rule("at_least", f">= {bound:g}" + (f" ({why})" if why else ""), low=bound)


def at_most(bound: float, why: str = "") -> Rule:
    """``measured <= bound``.
    """
    bound = _finite(bound, "at_most(): the bound")
    return Rule("at_most", f"<= {bound:g}" + (f" ({why})" if why else ""), high=bound)


def between(low: float, high: float, why: str = "") -> Rule:
    """``low <= measured <= high``.
    """
    low, high = _finite(low, "between(): low"), _finite(high, "between(): high")
    if low > high:
        raise ValueError(f"between(): low {low:g} > high {high:g} (a claim that can never pass)")
    return Rule("between", f"in [{low:g}, {high:g}]" + (f" ({why})" if why else ""), low=low, high=high)


def above_chance(margin: float) -> Rule:
    """``measured > chance + margin`` (strictly above), the chance level measured alongside (e.g. random
    matrices); ``margin`` is finite and ``>= 0`` (a negative margin would pass values below chance).
    """
    margin = _finite(margin, "above_chance(): the margin")
    if margin < 0:
        raise ValueError(f"above_chance(): the margin must be >= 0, got {margin:g} (it would pass values "
                         "below chance)")
    return Rule("above_chance", f"> chance + {margin:g}", margin=margin)


@dataclass(frozen=True)
class Claim:
    """A pre-registered empirical claim, returned by :func:`preregister` and judged by name later.

    ``key`` names it in records and sweep tables; ``paper`` is the paper's value or wording, stated once
    here (a ``within`` rule's number by default) and shown beside every measurement.
    """

    key: str
    text: str
    rule: Rule
    items: tuple[str, ...] = ()
    paper: Any = None
    control: str | None = None  # the negative control, in words (e.g. "supports shuffled"); see preregister

    def judge(self, measured: Any, **kw: Any) -> str:
        """:func:`compare` this claim with ``measured`` (keywords as there); returns the outcome."""
        return compare(self.key, measured, **kw)


class Claims(dict):
    """The claims of one :func:`preregister` call by key; also by attribute (``claims.ce_final``), so a
    misspelt claim is an error at the line that judges it."""

    def __getattr__(self, key: str) -> Claim:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"no claim {key!r} was pre-registered here; registered: "
                                 f"{', '.join(self)}") from None


_RULES: dict[str, Claim] = {}


def _items(item: str | Sequence[str] | None) -> list[str]:
    """Scorecard item ids as a list (``None`` -> ``[]``)."""
    if item is None:
        return []
    return [item] if isinstance(item, str) else [str(i) for i in item]


def preregister(claims: Mapping[str, tuple], *, controls: Mapping[str, str] | None = None) -> Claims:
    """Register empirical claims *before* computing them: ``{key: (claim text, rule[, item[, paper]])}``.

    ``item``: the scorecard item(s) the claim is evidence for (e.g. ``"A:Fig 6"``); ``paper``: the
    paper's value or wording (default: a ``within`` rule's number), shown beside the measurement.
    ``controls``: ``{key: what the control is}``, the claim's **negative control** in words: the same
    measurement where the paper's mechanism is absent (supports shuffled, the untrained model, the
    hierarchy inverted, single dimensions instead of combinations, a random matrix of the same spectrum).
    :func:`compare` then needs the control's value (``control=``) and judges the same rule on it: a claim
    whose control passes too reads :data:`CANNOT_FAIL` (no evidence). A claim registered without a
    control is judged as before and shown as "no control" (the scorecard counts it apart).
    Call it in a cell above the computation; it returns the :class:`Claims`, judged later with
    ``claim.judge(measured)`` (or :func:`compare` by key, which refuses keys that were not registered:
    the rule cannot be chosen after the number is seen). Registering a key twice is an error; a claim
    registered and never judged fails the chapter's build (:func:`unjudged_claims`).
    """
    controls = dict(controls or {})
    stray = [k for k in controls if k not in claims]
    if stray:
        raise ValueError(f"controls name claims that are not registered here: {', '.join(map(repr, stray))}")
    for key, what in controls.items():
        if not isinstance(what, str) or not what.strip():
            raise TypeError(f"claim {key!r}: a control is described in words (a non-empty str), got {what!r}")
    out = Claims()
    for key, spec in claims.items():
        if key in _RULES:
            raise ValueError(f"claim {key!r} is already registered")
        if not isinstance(spec, tuple) or len(spec) not in (2, 3, 4):
            raise TypeError(f"claim {key!r}: expected (claim text, rule[, item[, paper]]), got {spec!r}")
        text, rule, item, paper = (*spec, None, None)[:4]
        if not isinstance(rule, Rule):
            raise TypeError(f"claim {key!r}: the rule must be a Rule (within/at_least/...), got {rule!r}")
        out[key] = _RULES[key] = Claim(key, str(text), rule, tuple(_items(item)),
                                       rule.paper if paper is None else paper, controls.get(key))
    _RECORD.setdefault("preregistered", []).extend(claims)
    _write_record()
    return out


def unjudged_claims(record: Mapping[str, Any]) -> list[str]:
    """The keys a chapter's record pre-registered and never judged (the build fails on them: a claim
    silently left out of the evidence is a bug, like a misspelt key)."""
    judged = {row.get("key") for row in record.get("comparisons", [])}
    return [key for key in record.get("preregistered", []) if key not in judged]


def _measurement(key: str, value: Any, what: str) -> Any:
    """``value`` unless it is a bool, a string or another non-number (``TypeError`` naming the claim):
    a verdict or a text is not a measurement (``compare(key, True)`` and ``compare(key, "1.0")`` passed)."""
    if value is None:
        return None
    if not isinstance(value, (bool, np.bool_, str, bytes)):
        try:
            float(value)
            return value
        except (TypeError, ValueError):
            pass
    raise TypeError(f"claim {key!r}: {what} must be a real number, got {type(value).__name__} {value!r}")


def compare(key: str, measured: Any, *, chance: Any = None, paper: Any = None, note: str = "",
            unavailable: str | None = None, baselines: Mapping[str, float] | None = None,
            control: Any = None) -> str:
    """Judge a pre-registered empirical claim: ``reproduced``, ``deviates``, ``cannot fail``, ``not run``,
    ``not reproduced``.

    ``measured`` and ``control`` are real numbers (int, float, numpy number; ``inf`` is a value, e.g. the
    step of a milestone never reached): a bool, a string or NaN raises, naming the claim.
    ``control``: the value of the claim's negative control (registered with :func:`preregister`'s
    ``controls``), judged by the same rule and chance level: if the rule holds for the measurement and for
    the control, the outcome is :data:`CANNOT_FAIL`. A claim registered with a control must be given one.

    ``measured=None`` means the claim needs a run this profile does not do (``not run``).
    ``unavailable`` (with ``measured=None``) names what no profile of this build can supply (e.g. "GPT-2
    weights are not available offline"): the outcome is ``not reproduced`` and the reason is its note. A
    deviation is recorded and shown, not raised: the page says how the number differs and why
    (``note``). Returns the outcome. Raises ``KeyError`` for a claim that was not pre-registered.

    ``baselines``: several chance levels by name (e.g. ``{"Gaussian": 0.09, "untrained": 0.61}``, the
    same metric for random matrices and for the untrained model); the claim is judged against the largest
    (``chance``), and all are stored and shown. A claim about what training produced must beat the
    untrained model: with an ``"untrained"`` baseline an ``at_least`` rule also needs
    ``measured > untrained``, else the claim deviates (it would have held at step 0).
    """
    if baselines is not None:
        if chance is not None or not baselines:
            raise ValueError(f"claim {key!r}: give either chance or a non-empty baselines mapping")
        baselines = {str(k): _finite(v, f"claim {key!r}: baseline {k!r}") for k, v in baselines.items()}
        chance = max(baselines.values())
    if key not in _RULES:
        raise KeyError(f"claim {key!r} was not pre-registered: call preregister() above its computation")
    measured = _measurement(key, measured, "the measured value")
    control = _measurement(key, control, "the control's value")
    registered = _RULES[key]
    claim, rule, items = registered.text, registered.rule, list(registered.items)
    if control is not None and registered.control is None:
        raise ValueError(f"claim {key!r} was registered without a control: name it in preregister(..., "
                         "controls={...}) before the measurement")
    if registered.control is not None and control is None and measured is not None:
        raise ValueError(f"claim {key!r} was registered with the control {registered.control!r}: pass its "
                         "value (control=...)")
    paper = registered.paper if paper is None else paper
    if unavailable is not None:
        if measured is not None:
            raise ValueError(f"claim {key!r}: 'unavailable' is for claims without a measurement "
                             "(measured=None)")
        outcome, note = "not reproduced", (f"{unavailable}; {note}" if note else unavailable)
    elif measured is None:
        outcome = "not run"
    else:
        try:
            outcome = "reproduced" if rule.holds(measured, chance) else "deviates"
        except ValueError as err:
            raise ValueError(f"claim {key!r} ({claim}): {err}") from None
        untrained = (baselines or {}).get(UNTRAINED)
        if outcome == "reproduced" and rule.kind == "at_least" and untrained is not None \
                and not float(measured) > untrained:
            outcome = "deviates"  # the rule holds, but so it did before training: no evidence of learning
            why = f"the untrained model already scores {_fmt(untrained)}: this claim does not test training"
            note = f"{why}; {note}" if note else why
    control_passes = None
    if control is not None and measured is not None and unavailable is None:
        try:
            control_passes = bool(rule.holds(control, chance))
        except ValueError as err:
            raise ValueError(f"claim {key!r} ({claim}), its control: {err}") from None
        if outcome == "reproduced" and control_passes:
            outcome = CANNOT_FAIL
            why = (f"the control ({registered.control}: {_fmt(control)}) passes the same rule, so this rule "
                   "cannot tell the paper's mechanism from its absence")
            note = f"{why}; {note}" if note else why
    low, high = _rule_bounds(rule, chance, (baselines or {}).get(UNTRAINED))
    row = {"key": key, "claim": claim, "rule": rule.text, "outcome": outcome, "measured": _jsonable(measured),
           "chance": _jsonable(chance), "paper": _jsonable(paper), "note": note, "items": items,
           "control": registered.control, "control_value": _jsonable(control),
           "control_passes": control_passes, "low": low, "high": high}
    if baselines is not None:
        row["baselines"] = baselines
    _RECORD.setdefault("comparisons", []).append(row)
    _write_record()
    return outcome


def _rule_bounds(rule: Rule, chance: Any = None, untrained: float | None = None
                ) -> tuple[float | None, float | None]:
    """The numbers where ``rule``'s outcome changes, as recorded beside a judged claim (``low``, ``high``;
    ``None``: open): an ``above_chance`` rule's threshold is ``chance + margin`` (``None`` without a chance
    level), an ``at_least`` rule judged against an untrained baseline also needs more than it."""
    low = (float(chance) + rule.margin if chance is not None else None) if rule.kind == "above_chance" \
        else rule.low
    if rule.kind == "at_least" and untrained is not None:
        low = max(low, float(untrained))
    shown = [b if b is not None and math.isfinite(b) else None for b in (low, rule.high)]
    return shown[0], shown[1]


def _chance_text(row: Mapping[str, Any]) -> str:
    levels = row.get("baselines")
    if levels and len(levels) > 1:
        return ", ".join(f"{k} {_fmt(v)}" for k, v in levels.items())
    return _fmt(row.get("chance")) if row.get("chance") is not None else ""


_SHOWN = {"checks": 0, "comparisons": 0}  # how many of each the last claims_table() showed


def claims_table(*, all_rows: bool = False) -> Any:
    """The checks and judged claims of this chapter since the previous call (``all_rows``: all of them)
    as one table, the page's view of its evidence: statement, rule (a check: its tolerance), measured
    value, the negative control (what it is, its value, whether the rule holds for it), chance level(s),
    the paper's value and the outcome (a deviation with its reason).

    A chapter computes in its cells and ends a section with ``claims_table()``; :func:`check` and
    :func:`compare` print nothing themselves. Returns a pandas ``Styler`` (shown as a cell's last
    expression); ``None`` when there is nothing new to show.
    """
    import pandas as pd

    checks = _RECORD.get("checks", [])
    judged = _RECORD.get("comparisons", [])
    start_c, start_j = (0, 0) if all_rows else (_SHOWN["checks"], _SHOWN["comparisons"])
    _SHOWN.update(checks=len(checks), comparisons=len(judged))
    rows = [{"": "check" + (" (sanity)" if r.get("sanity") else ""), "statement": r["claim"],
             "rule": f"tol {_fmt(r['tol'])}" if r.get("tol") is not None else "",
             "measured": _fmt(r["measured"]), "control": "(a mathematical fact)",
             "chance": "", "paper": _fmt(r["paper"]) if r.get("paper") is not None else "",
             "outcome": "pass" if r["passed"] else "FAIL", "note": ""} for r in checks[start_c:]]
    rows += [{"": "claim", "statement": r["claim"], "rule": r["rule"], "measured": _fmt(r["measured"]),
              "control": control_text(r),
              "chance": _chance_text(r), "paper": _fmt(r["paper"]) if r.get("paper") is not None else "",
              "outcome": r["outcome"], "note": r.get("note", "")} for r in judged[start_j:]]
    if not rows:
        return None
    table = pd.DataFrame(rows)
    if not table["note"].astype(bool).any():
        table = table.drop(columns="note")
    colour = {"reproduced": "#1b7837", "pass": "#1b7837", "deviates": "#b2182b", "FAIL": "#b2182b",
              CANNOT_FAIL: "#b35806"}

    def mark(value: str) -> str:
        return f"color: {colour[value]}; font-weight: bold" if value in colour else ""

    return (table.style.hide(axis="index").map(mark, subset=["outcome"])
            .set_properties(**{"text-align": "left"}))


OFFDIAG = "_offdiag"
#: the default negative control of a similarity claim (:func:`preregister_similarity`)
SHUFFLED_CONTROL = "columns shuffled (same spectrum, pairs mismatched)"


def preregister_similarity(claims: Mapping[str, tuple], *, controls: Mapping[str, str] | None = None
                           ) -> Claims:
    """Register ``sim`` claims judged against chance: ``{key: (claim text, margin, item[, paper])}``.

    Each key registers two claims, both ``above_chance(margin)``: ``key`` for the value with the
    diagonals and ``key + "_offdiag"`` for the off-diagonal value (the diagonals of two correlation
    matrices are 1 and inflate ``sim``). Judge them with :func:`compare_similarity`; for a learned
    matrix the chance level is the larger of the Gaussian one and the untrained model's value.
    Every such claim has a negative control: by default :data:`SHUFFLED_CONTROL`, the same similarity
    with the learned matrix's columns permuted (the ``SimilarityWithChance``'s shuffled-column values,
    which :func:`compare_similarity` takes); ``controls``: ``{key: what the control is}`` for another one,
    for both claims of the key (its values then go to ``compare_similarity(..., control=)``).
    """
    out, both = {}, {}
    for key, (claim, margin, item, *paper) in claims.items():
        out[key] = (claim, above_chance(margin), item, *paper)
        out[key + OFFDIAG] = (f"{claim} (off-diagonal)", above_chance(margin), item, *paper)
        both[key] = both[key + OFFDIAG] = SHUFFLED_CONTROL
    for key, what in (controls or {}).items():
        if key not in claims:
            raise ValueError(f"controls name a claim that is not registered here: {key!r}")
        both[key] = both[key + OFFDIAG] = what
    return preregister(out, controls=both)


def compare_similarity(key: str | Claim, rep: Any, *, control: Any = None, **kw: Any) -> tuple[str, str]:
    """:func:`compare` a claim of :func:`preregister_similarity` with a
    :class:`~ntputils.analysis.baselines.SimilarityWithChance`: the value against its baseline (the random
    chance level, or the untrained model's value when larger), the off-diagonal value against its own.
    A value that clears the Gaussian level but not the untrained model's deviates, and its note says so.
    ``key``: the claim's key or the :class:`Claim` (of :func:`preregister_similarity`). ``control``: the
    same similarity for the claim's negative control (a ``SimilarityWithChance`` or anything with
    ``value`` and ``offdiagonal``), judged against the same chance levels; default: ``rep.control``, the
    shuffled-column values (:data:`SHUFFLED_CONTROL`). Returns both outcomes.
    """
    key = key.key if isinstance(key, Claim) else key
    if control is None and key in _RULES and _RULES[key].control == SHUFFLED_CONTROL:
        control = rep.control
    outcomes = []
    for k, value, offdiagonal in ((key, rep.value, False), (key + OFFDIAG, rep.offdiagonal, True)):
        if control is not None:
            kw["control"] = control.offdiagonal if offdiagonal else control.value
        levels = rep.baselines(offdiagonal)
        margin = _RULES[k].rule.margin if k in _RULES else 0.0
        args = dict(kw)
        if "untrained" in levels and levels["Gaussian"] + margin < value <= levels["untrained"] + margin:
            why = (f"clears the Gaussian chance level ({levels['Gaussian']:.3f}) but not the untrained "
                   f"model's value ({levels['untrained']:.3f}) by the margin: training did not add this "
                   "similarity")
            args["note"] = f"{why}; {args['note']}" if args.get("note") else why
        outcomes.append(compare(k, value, baselines=levels, **args))
    return outcomes[0], outcomes[1]


def record(name: str, value: Any, *, paper: Any = None, unit: str | None = None,
           tol: float | None = None) -> Any:
    """Record a measured value: glue it for the page (``{glue:text}`name` `` in prose) and store it.

    The value is stored JSON-serializable with the executed notebook (``results`` of its record), so
    prose never types a measured number and the status page, scorecard and sweeps read it.
    ``tol``: how far the value may move between two runs of the same code (``math.inf`` for a wall
    time); ``python -m ntputils.book recertify`` accepts a re-run within it. Returns ``value``. Recording
    a name twice in one run raises ``ValueError`` naming it (the last value used to win silently).
    """
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"record name must be letters, digits, '_' or '-', got {name!r}")
    if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"record {name!r}: tol must be a number >= 0 (math.inf: any value), got {tol!r}")
    if name in _RECORD.setdefault("results", {}):
        raise ValueError(f"record {name!r} was already recorded in this run (a second value would silently "
                         "replace the first): give each value its own name, or re-run the chapter from "
                         "setup_chapter")
    try:
        from myst_nb import glue

        glue(name, value, display=False)
    except ImportError:  # pragma: no cover - myst-nb is a dependency
        pass
    entry = {"value": _jsonable(value), "paper": _jsonable(paper), "unit": unit}
    if tol is not None:
        entry["tol"] = _jsonable(float(tol))
    _RECORD.setdefault("results", {})[name] = entry
    _write_record()
    return value
