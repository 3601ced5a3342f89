"""Chapter set-up and check cells: the runtime side of the chapter contract.

Every chapter (``notebooks/<a|b><NN>_<name>.py``) declares literal ``PROFILES`` (one dict of sizes
and steps per profile), a papermill ``parameters`` cell (``profile``, ``seed``, ``device`` and one
name per profile key, ``None`` meaning "take the profile's value") and then calls::

    cfg = setup_chapter(PROFILES, globals(), torch_threads=1)

which merges the named profile with the non-``None`` parameters, rejects unknown or ill-typed
parameters (papermill itself only warns about unknown ones), seeds ``random``/``numpy``/``torch``,
resolves ``device="auto"``, sets the chapter's torch thread count, starts the chapter timer and shows a
banner with the resolved run. The chapter then reads every parameter as ``cfg.<name>`` (the globals of the
parameters cell are left as papermill set them: ``None`` means "profile default") and reports its run
time with ``cfg.elapsed()`` / ``cfg.cpu_elapsed()``. Claims of the papers are then
asserted with :func:`check`, which prints one row per claim, records it for the book's status page
and raises ``AssertionError`` when the claim fails (so a failing claim fails the chapter and the
build).

Records reach the status page through a JSON side-car file whose path the book runner
(:mod:`ntputils.book`) puts into the environment variable ``NTPBOOK_RECORD``; without it the record
is only kept in memory (:func:`current_record`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ntputils import device as _device
from ntputils.chapter_contract import (  # noqa: F401  (re-exported: the chapter-facing names)
    DEFAULT_PROFILE,
    INJECTED_MARKER,
    RECORD_ENV,
    RESERVED,
    ParameterError,
    check_names,
    coerce_parameter,
    injected_parameter_names,
    resolve_parameters,
    valid_parameter_names,
    validate_profiles,
)


def resolve_device(device: str) -> str:
    """The device a chapter runs on (see :func:`ntputils.device.resolve_device`), as a string;
    a bad name raises :class:`ParameterError`."""
    try:
        return str(_device.resolve_device(device))
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


seed_everything = _device.seed_everything


# ----------------------------------------------------------------------------------------------
# chapter configuration and records
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChapterConfig:
    """The resolved run of one chapter: ``cfg.profile``, ``cfg.seed``, ``cfg.device``, ``cfg.<key>``.

    ``torch_threads`` is the torch intra-op thread count the chapter runs with (``None``: torch's
    default, left untouched); ``started_wall`` / ``started_cpu`` the ``time.perf_counter()`` /
    ``time.process_time()`` readings at the end of :func:`setup_chapter`, the origin of
    :meth:`elapsed` and :meth:`cpu_elapsed`.
    """

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

    def __getattr__(self, name: str) -> Any:
        params = object.__getattribute__(self, "params")
        if name in params:
            return params[name]
        raise AttributeError(f"chapter has no parameter {name!r}; parameters: {', '.join(params)}")

    def __getitem__(self, name: str) -> Any:
        return self.as_dict()[name]

    def as_dict(self) -> dict[str, Any]:
        """``profile``, ``seed``, ``device`` and every profile parameter, in that order."""
        return {"profile": self.profile, "seed": self.seed, "device": self.device, **self.params}


_RECORD: dict[str, Any] = {"checks": []}


def current_record() -> dict[str, Any]:
    """The record of the chapter running in this process (config, checks, wall time so far).

    Used in: a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, c02.
    """
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


def _banner(cfg: ChapterConfig, defaults: Mapping[str, Any]) -> None:
    """Show the resolved run at the top of the chapter (HTML for the book, text for terminals)."""
    from html import escape

    rows = []
    text = [f"profile={cfg.profile}  device={cfg.device}  seed={cfg.seed}"]
    for key, value in cfg.params.items():
        changed = value != defaults.get(key)
        note = " (overridden)" if changed else ""
        rows.append(f"<tr><td><code>{escape(key)}</code></td><td><code>{escape(repr(value))}</code>{note}</td></tr>")
        text.append(f"  {key} = {value!r}{note}")
    html = (
        '<div class="ntpbook-run-banner"><p><b>Run:</b> profile <code>'
        f"{escape(cfg.profile)}</code>, device <code>{escape(cfg.device)}</code>, "
        f"seed <code>{cfg.seed}</code></p>"
        f'<table class="ntpbook-params"><tbody>{"".join(rows)}</tbody></table></div>'
    )
    try:
        from IPython.display import display

        display({"text/html": html, "text/plain": "\n".join(text)}, raw=True)
    except ImportError:  # pragma: no cover - IPython is a dependency
        print("\n".join(text))


def _torch_threads(spec: int | str | Callable[[ChapterConfig], int | None] | None,
                   cfg: ChapterConfig) -> int | None:
    """The thread count asked for by ``setup_chapter(..., torch_threads=spec)`` (``None``: torch's own)."""
    if callable(spec):
        spec = spec(cfg)
    elif isinstance(spec, str):
        spec = getattr(cfg, spec)
    if spec is None or spec == 0:
        return None
    if isinstance(spec, bool) or not isinstance(spec, int) or spec < 0:
        raise ParameterError(f"torch_threads must be a non-negative int, got {spec!r}")
    return spec


def setup_chapter(profiles: Mapping[str, Mapping[str, Any]], namespace: Mapping[str, Any], *,
                  torch_threads: int | str | Callable[[ChapterConfig], int | None] | None = None,
                  rules: Callable[[ChapterConfig], Sequence[str] | str | None] | None = None,
                  memory_bytes: Callable[[ChapterConfig], float] | None = None,
                  ) -> ChapterConfig:
    """Validate and resolve a chapter's parameters; seed; resolve the device; set threads; start the timer.

    Parameters
    ----------
    profiles:
        the chapter's literal ``PROFILES`` dict, e.g. ``{"cpu": {"steps": 2000}, "paper": {"steps": 30000}}``.
    namespace:
        the chapter's ``globals()``: holds the parameters-cell values (``None`` = profile default) and,
        in IPython, ``In`` (the executed cell sources), used to find names injected by papermill. It is
        only read, never modified: the chapter reads the resolved values from the returned config.
    torch_threads:
        the torch intra-op thread count of the chapter (``torch.set_num_threads``): an int, the name of
        an int parameter (e.g. ``"num_threads"``) or a function of the resolved config; ``None`` or 0
        leaves torch's default.
    rules:
        the chapter's own value rules, checked before any work: a function of the resolved config
        returning the problems (a string or a list of strings; empty/``None`` = fine), e.g.
        ``lambda c: [] if c.d <= c.V else ["d must be <= V"]``.
    memory_bytes:
        an estimate (bytes) of the chapter's peak memory as a function of the resolved config; above
        :func:`available_memory_bytes` the call raises before any work (instead of a ``MemoryError``
        minutes later).

    Returns the :class:`ChapterConfig` (every resolved parameter, ``profile``, ``seed``, ``device``, the
    thread count and the chapter timer started at the end of the call). Raises :class:`ParameterError`
    (a ``ValueError``) naming unknown or ill-typed parameters and listing the valid ones, or a value
    that breaks ``rules`` or the memory budget.

    Used in: a01, a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, b07, c01, c02.
    """
    valid = valid_parameter_names(profiles)
    injected = injected_parameter_names(namespace.get("In") or namespace.get("_ih") or [])
    check_names(injected, valid, where=" (passed with papermill -p / ntputils.book -p)")
    values = {name: namespace.get(name) for name in valid if name in namespace}
    resolved = resolve_parameters(profiles, values)
    device = resolve_device(resolved["device"])
    seed_everything(resolved["seed"], device)
    params = {k: v for k, v in resolved.items() if k not in RESERVED}
    cfg = ChapterConfig(profile=resolved["profile"], seed=resolved["seed"], device=device, params=params)
    check_values(cfg, rules, memory_bytes)
    threads = _torch_threads(torch_threads, cfg)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)

    _RECORD.clear()
    _RECORD.update(
        started=time.time(),
        profile=cfg.profile,
        seed=cfg.seed,
        device=cfg.device,
        device_requested=resolved["device"],
        params={k: _jsonable(v) for k, v in params.items()},
        injected=injected,
        checks=[],
        comparisons=[],
        results={},
    )
    _RULES.clear()
    _write_record()
    _banner(cfg, profiles[cfg.profile])
    return replace(cfg, torch_threads=threads, started_wall=time.perf_counter(),
                   started_cpu=time.process_time())


def available_memory_bytes() -> float:
    """Memory this process may still allocate: ``MemAvailable`` of ``/proc/meminfo`` (else total RAM).

    Used in: a05.
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


def check_values(cfg: ChapterConfig,
                 rules: Callable[[ChapterConfig], Sequence[str] | str | None] | None = None,
                 memory_bytes: Callable[[ChapterConfig], float] | None = None) -> None:
    """Raise :class:`ParameterError` listing the broken value ``rules`` and a memory estimate above
    :func:`available_memory_bytes` (see :func:`setup_chapter`)."""
    problems: list[str] = []
    if rules is not None:
        found = rules(cfg)
        problems += [found] if isinstance(found, str) else list(found or [])
    if memory_bytes is not None:
        need, have = float(memory_bytes(cfg)), available_memory_bytes()
        if not math.isfinite(need) or need > have:
            problems.append(f"these parameters need about {need / 2**30:.3g} GiB of memory, "
                            f"{have / 2**30:.3g} GiB are available")
    if problems:
        params = ", ".join(f"{k}={v!r}" for k, v in cfg.params.items())
        raise ParameterError("; ".join(problems) + f" (parameters: {params}); nothing was computed")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def check(claim: str, passed: Any, measured: Any = None, paper: Any = None, tol: Any = None, *,
          sanity: bool = False, item: str | Sequence[str] | None = None) -> None:
    """Assert a mathematical fact (identity, closed form, certificate): print, record, raise if false.

    ``passed`` is the outcome: a ``bool`` or a numpy bool, nothing else (``bool(nan)`` is true, so a
    number is refused with a ``TypeError`` rather than read as a pass); ``measured`` our number,
    ``paper`` what the paper reports or predicts, ``tol`` the tolerance used (all optional, shown as given).
    ``sanity=True`` marks a line that cannot fail by construction (e.g. a feasible point's norm bounds
    the optimum): it still fails the build when false, but is listed apart and not counted as
    evidence. ``item`` names the paper result(s) the check is evidence for on the reproduction
    scorecard, e.g. ``"A:Thm 1"`` or ``["B:Fig 13", "B:STEP"]`` (see :mod:`ntputils.book.scorecard`).
    Empirical claims of a paper use :func:`preregister` and :func:`compare` instead.
    Returns ``None`` (nothing is echoed in the notebook); raises ``AssertionError`` (after recording)
    when ``passed`` is false.

    Used in: a01, a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, b07, c01, c02.
    """
    if not isinstance(passed, (bool, np.bool_)):
        raise TypeError(f"check({claim!r}): 'passed' must be a boolean (a comparison's result), got "
                        f"{type(passed).__name__} {passed!r}: a number or NaN is not a verdict")
    ok = bool(passed)
    row = {"claim": str(claim), "passed": ok, "measured": _jsonable(measured), "paper": _jsonable(paper),
           "tol": _jsonable(tol), "sanity": bool(sanity), "items": _items(item)}
    _RECORD.setdefault("checks", []).append(row)
    _write_record()
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict} | {claim} | measured: {_fmt(measured)} | paper: {_fmt(paper)} | tol: {_fmt(tol)}")
    if not ok:
        raise AssertionError(
            f"check failed: {claim} (measured {_fmt(measured)}, paper {_fmt(paper)}, tol {_fmt(tol)})"
        )


# ----------------------------------------------------------------------------------------------
# results as data: recorded values and pre-registered empirical claims
# ----------------------------------------------------------------------------------------------
OUTCOMES = ("reproduced", "deviates", "not run", "not reproduced")


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


def within(paper: float, *, abs_tol: float | None = None, rel_tol: float | None = None) -> Rule:
    """``|measured - paper| <= abs_tol`` (or ``<= rel_tol * |paper|``): the paper's number, a tolerance.

    The paper's value and the tolerance must be finite and the tolerance ``>= 0`` (``0``: exactly the
    paper's value, e.g. a count); anything else raises ``ValueError`` at registration.

    Used in: a01, a03, a04, a05.
    """
    if (abs_tol is None) == (rel_tol is None):
        raise ValueError("within() needs exactly one of abs_tol, rel_tol")
    paper = _finite(paper, "within(): the paper's value")
    given = _finite(abs_tol if abs_tol is not None else rel_tol, "within(): the tolerance")
    if given < 0:
        raise ValueError(f"within(): the tolerance must be >= 0 (0: exactly the paper's value), got "
                         f"{given!r} (a claim that can never pass)")
    tol = abs_tol if abs_tol is not None else rel_tol * abs(paper)
    what = f"{abs_tol:g}" if abs_tol is not None else f"{100 * rel_tol:g}% of it"
    return Rule("within", f"paper's {paper:g} within {what}", low=paper - tol, high=paper + tol)


def at_least(bound: float, why: str = "") -> Rule:
    """``measured >= bound``.

    Used in: a03, a04, a05, a06, a07, b01, b02, b04, b05, b06, b07, c01, c02.
    """
    bound = _finite(bound, "at_least(): the bound")
    return Rule("at_least", f">= {bound:g}" + (f" ({why})" if why else ""), low=bound)


def at_most(bound: float, why: str = "") -> Rule:
    """``measured <= bound``.

    Used in: a03, a05, a06, a07, b01, b02, b04, b05, b06, b07, c01.
    """
    bound = _finite(bound, "at_most(): the bound")
    return Rule("at_most", f"<= {bound:g}" + (f" ({why})" if why else ""), high=bound)


def between(low: float, high: float, why: str = "") -> Rule:
    """``low <= measured <= high``.

    Used in: a04, a05, b05.
    """
    low, high = _finite(low, "between(): low"), _finite(high, "between(): high")
    if low > high:
        raise ValueError(f"between(): low {low:g} > high {high:g} (a claim that can never pass)")
    return Rule("between", f"in [{low:g}, {high:g}]" + (f" ({why})" if why else ""), low=low, high=high)


def above_chance(margin: float) -> Rule:
    """``measured > chance + margin`` (strictly above), the chance level measured alongside (e.g. random
    matrices); ``margin`` is finite and ``>= 0`` (a negative margin would pass values below chance).

    Used in: a04, a07, b04, b05, b07.
    """
    margin = _finite(margin, "above_chance(): the margin")
    if margin < 0:
        raise ValueError(f"above_chance(): the margin must be >= 0, got {margin:g} (it would pass values "
                         "below chance)")
    return Rule("above_chance", f"> chance + {margin:g}", margin=margin)


_RULES: dict[str, tuple[str, Rule, list[str]]] = {}


def _items(item: str | Sequence[str] | None) -> list[str]:
    """Scorecard item ids as a list (``None`` -> ``[]``)."""
    if item is None:
        return []
    return [item] if isinstance(item, str) else [str(i) for i in item]


def preregister(claims: Mapping[str, tuple]) -> None:
    """Register empirical claims *before* computing them: ``{key: (claim text, rule[, item])}``.

    ``item``: the scorecard item(s) the claim is evidence for (e.g. ``"A:Fig 6"``).
    Call it in a cell above the computation; :func:`compare` refuses keys that were not registered
    (the rule cannot be chosen after the number is seen). Registering a key twice is an error.

    Used in: a01, a03, a04, a05, a06, a07, b01, b02, b04, b05, b06, b07, c01, c02.
    """
    for key, spec in claims.items():
        if key in _RULES:
            raise ValueError(f"claim {key!r} is already registered")
        if not isinstance(spec, tuple) or len(spec) not in (2, 3):
            raise TypeError(f"claim {key!r}: expected (claim text, rule[, item]), got {spec!r}")
        claim, rule, item = (*spec, None) if len(spec) == 2 else spec
        if not isinstance(rule, Rule):
            raise TypeError(f"claim {key!r}: the rule must be a Rule (within/at_least/...), got {rule!r}")
        _RULES[key] = (str(claim), rule, _items(item))
    _RECORD.setdefault("preregistered", []).extend(claims)
    _write_record()


def compare(key: str, measured: Any, *, chance: Any = None, paper: Any = None, note: str = "",
            unavailable: str | None = None) -> str:
    """Judge a pre-registered empirical claim: ``reproduced``, ``deviates``, ``not run``, ``not reproduced``.

    ``measured=None`` means the claim needs a run this profile does not do (``not run``).
    ``unavailable`` (with ``measured=None``) names what no profile of this build can supply (e.g. "GPT-2
    weights are not available offline"): the outcome is ``not reproduced`` and the reason is its note. A
    deviation is recorded and shown, not raised: the page says how the number differs and why
    (``note``). Returns the outcome. Raises ``KeyError`` for a claim that was not pre-registered.

    Used in: a01, a03, a04, a05, a06, a07, b01, b02, b04, b05, b06, b07, c01, c02.
    """
    if key not in _RULES:
        raise KeyError(f"claim {key!r} was not pre-registered: call preregister() above its computation")
    claim, rule, items = _RULES[key]
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
    row = {"key": key, "claim": claim, "rule": rule.text, "outcome": outcome, "measured": _jsonable(measured),
           "chance": _jsonable(chance), "paper": _jsonable(paper), "note": note, "items": items}
    _RECORD.setdefault("comparisons", []).append(row)
    _write_record()
    extra = f" | chance: {_fmt(chance)}" if chance is not None else ""
    print(f"{outcome.upper()} | {claim} | measured: {_fmt(measured)}{extra} | rule: {rule.text}"
          + (f" | {note}" if note else ""))
    return outcome


OFFDIAG = "_offdiag"


def preregister_similarity(claims: Mapping[str, tuple[str, float, Any]]) -> None:
    """Register ``sim`` claims judged against chance: ``{key: (claim text, margin, item)}``.

    Each key registers two claims, both ``above_chance(margin)``: ``key`` for the value with the
    diagonals and ``key + "_offdiag"`` for the off-diagonal value (the diagonals of two correlation
    matrices are 1 and inflate ``sim``). Judge them with :func:`compare_similarity`.

    Used in: a04, a05, a06, a07, c01.
    """
    preregister({k: spec for key, (claim, margin, item) in claims.items()
                 for k, spec in ((key, (claim, above_chance(margin), item)),
                                 (key + OFFDIAG, (f"{claim} (off-diagonal)", above_chance(margin), item)))})


def compare_similarity(key: str, rep: Any, **kw: Any) -> tuple[str, str]:
    """:func:`compare` a claim of :func:`preregister_similarity` with a
    :class:`~ntputils.analysis.baselines.SimilarityWithChance`: the value against the random chance
    level, the off-diagonal value against its own. Returns both outcomes.

    Used in: a04, a05, a06, a07, c01.
    """
    return (compare(key, rep.value, chance=rep.random_mean, **kw),
            compare(key + OFFDIAG, rep.offdiagonal, chance=rep.random_offdiagonal_mean, **kw))


def record(name: str, value: Any, *, paper: Any = None, unit: str | None = None,
           tol: float | None = None) -> Any:
    """Record a measured value: glue it for the page (``{glue:text}`name` `` in prose) and store it.

    The value is stored JSON-serializable with the executed notebook (``results`` of its record), so
    prose never types a measured number and the status page, scorecard and sweeps read it.
    ``tol``: how far the value may move between two runs of the same code (``math.inf`` for a wall
    time); ``python -m ntputils.book recertify`` accepts a re-run within it. Returns ``value``.

    Used in: a01, a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, b07, c01, c02.
    """
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"record name must be letters, digits, '_' or '-', got {name!r}")
    try:
        from myst_nb import glue

        glue(name, value, display=False)
    except ImportError:  # pragma: no cover - myst-nb is a dependency
        pass
    if tol is not None and not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"record {name!r}: tol must be a number >= 0 (math.inf: any value), got {tol!r}")
    entry = {"value": _jsonable(value), "paper": _jsonable(paper), "unit": unit}
    if tol is not None:
        entry["tol"] = _jsonable(float(tol))
    _RECORD.setdefault("results", {})[name] = entry
    _write_record()
    return value
