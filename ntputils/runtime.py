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
from collections.abc import Callable, Mapping
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

    Returns the :class:`ChapterConfig` (every resolved parameter, ``profile``, ``seed``, ``device``, the
    thread count and the chapter timer started at the end of the call). Raises :class:`ParameterError`
    (a ``ValueError``) naming unknown or ill-typed parameters and listing the valid ones.

    Used in: a01, a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, b07.
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
    )
    _write_record()
    _banner(cfg, profiles[cfg.profile])
    return replace(cfg, torch_threads=threads, started_wall=time.perf_counter(),
                   started_cpu=time.process_time())


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def check(claim: str, passed: Any, measured: Any = None, paper: Any = None, tol: Any = None) -> None:
    """Assert one claim of a paper: print a row, record it for the status page, raise if it fails.

    ``passed`` is the outcome (a bool or a numpy bool); ``measured`` our number, ``paper`` what the
    paper reports or predicts, ``tol`` the tolerance used (all optional, shown as given).
    Returns ``None`` (nothing is echoed in the notebook); raises ``AssertionError`` (after recording)
    when ``passed`` is false.

    Used in: a01, a02, a03, a04, a05, a06, a07, b01, b02, b03, b04, b05, b06, b07.
    """
    try:
        ok = bool(passed)
    except ValueError as err:
        raise ValueError(f"check({claim!r}): 'passed' must be a single boolean, got {passed!r}") from err
    row = {"claim": str(claim), "passed": ok, "measured": _jsonable(measured), "paper": _jsonable(paper),
           "tol": _jsonable(tol)}
    _RECORD.setdefault("checks", []).append(row)
    _write_record()
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict} | {claim} | measured: {_fmt(measured)} | paper: {_fmt(paper)} | tol: {_fmt(tol)}")
    if not ok:
        raise AssertionError(
            f"check failed: {claim} (measured {_fmt(measured)}, paper {_fmt(paper)}, tol {_fmt(tol)})"
        )
