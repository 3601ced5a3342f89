"""Chapter set-up and check cells: the runtime side of the chapter contract.

Every chapter (``notebooks/<a|b><NN>_<name>.py``) declares literal ``PROFILES`` (one dict of sizes
and steps per profile), a papermill ``parameters`` cell (``profile``, ``seed``, ``device`` and one
name per profile key, ``None`` meaning "take the profile's value") and then calls::

    cfg = setup_chapter(PROFILES, globals())

which merges the named profile with the non-``None`` parameters, rejects unknown or ill-typed
parameters (papermill itself only warns about unknown ones), seeds ``random``/``numpy``/``torch``,
resolves ``device="auto"`` and shows a banner with the resolved run. Claims of the papers are then
asserted with :func:`check`, which prints one row per claim, records it for the book's status page
and raises ``AssertionError`` when the claim fails (so a failing claim fails the chapter and the
build).

Records reach the status page through a JSON side-car file whose path the book runner
(:mod:`ntputils.book`) puts into the environment variable ``NTPBOOK_RECORD``; without it the record
is only kept in memory (:func:`current_record`).
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RESERVED = ("profile", "seed", "device")
DEFAULT_PROFILE = "cpu"
RECORD_ENV = "NTPBOOK_RECORD"
INJECTED_MARKER = "# Parameters"


class ParameterError(ValueError):
    """A chapter parameter is unknown, ill-typed or inconsistent with the chapter's profiles."""


# ----------------------------------------------------------------------------------------------
# pure parameter logic (shared with the book runner, which validates before executing anything)
# ----------------------------------------------------------------------------------------------


def validate_profiles(profiles: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Check the shape of a chapter's ``PROFILES`` and return its parameter names (sorted).

    ``profiles`` must map profile names to dicts with identical keys and must contain ``"cpu"``;
    keys may not shadow the reserved names ``profile``, ``seed``, ``device``.
    """
    if not isinstance(profiles, Mapping) or not profiles:
        raise ParameterError("PROFILES must be a non-empty dict {profile name: {parameter: value}}")
    if DEFAULT_PROFILE not in profiles:
        raise ParameterError(f"PROFILES must define the {DEFAULT_PROFILE!r} profile; got {sorted(profiles)}")
    reference = profiles[DEFAULT_PROFILE]
    for name, values in profiles.items():
        if not isinstance(values, Mapping):
            raise ParameterError(f"PROFILES[{name!r}] must be a dict, got {type(values).__name__}")
        if set(values) != set(reference):
            missing = sorted(set(reference) - set(values))
            extra = sorted(set(values) - set(reference))
            raise ParameterError(
                f"all profiles must have the same keys; PROFILES[{name!r}] lacks {missing} and adds {extra}"
            )
    clash = sorted(set(reference) & set(RESERVED))
    if clash:
        raise ParameterError(f"profile keys {clash} clash with the reserved parameters {list(RESERVED)}")
    return sorted(reference)


def valid_parameter_names(profiles: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``profile``, ``seed``, ``device`` followed by the (sorted) profile keys."""
    return list(RESERVED) + validate_profiles(profiles)


def _type_name(value: Any) -> str:
    return type(value).__name__


def coerce_parameter(name: str, value: Any, reference: Any) -> Any:
    """Return ``value`` converted to the type of the profile value ``reference``, or raise.

    Rules: ``None`` in the profile accepts anything; ``bool`` only matches ``bool``; an ``int`` is
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
        f"parameter {name!r} must be of type {_type_name(reference)} (like the profile value "
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


def resolve_parameters(
    profiles: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``values`` (parameters-cell values, ``None`` = profile default) with the named profile.

    Returns a dict with ``profile``, ``seed``, ``device`` and every profile key. ``device`` is *not*
    resolved here (see :func:`resolve_device`). Raises :class:`ParameterError` for unknown names,
    an unknown profile, or values whose type differs from the profile's.
    """
    valid = valid_parameter_names(profiles)
    check_names(list(values), valid)
    profile = values.get("profile", DEFAULT_PROFILE)
    if profile is None:
        profile = DEFAULT_PROFILE
    if not isinstance(profile, str) or profile not in profiles:
        raise ParameterError(f"unknown profile {profile!r}; this chapter defines {sorted(profiles)}")
    seed = values.get("seed", 0)
    seed = 0 if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ParameterError(f"parameter 'seed' must be of type int, got {_type_name(seed)} {seed!r}")
    device = values.get("device", "auto")
    device = "auto" if device is None else device
    if not isinstance(device, str):
        raise ParameterError(f"parameter 'device' must be of type str, got {_type_name(device)} {device!r}")
    resolved: dict[str, Any] = {"profile": profile, "seed": seed, "device": device}
    for key, default in profiles[profile].items():
        given = values.get(key)
        resolved[key] = default if given is None else coerce_parameter(key, given, default)
    return resolved


def injected_parameter_names(sources: Sequence[str]) -> list[str]:
    """Names assigned in the last papermill-injected cell (source starting with ``# Parameters``)."""
    for source in reversed(list(sources)):
        if isinstance(source, str) and source.lstrip().startswith(INJECTED_MARKER):
            try:
                tree = ast.parse(source)
            except SyntaxError as err:  # pragma: no cover - papermill writes valid Python
                raise ParameterError(f"cannot parse the injected parameters cell: {err}") from err
            names: list[str] = []
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else []
                names += [t.id for t in targets if isinstance(t, ast.Name)]
            return names
    return []


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` if available else ``"cpu"``; ``"cuda[:N]"`` requires CUDA."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ParameterError(
                f"device={device!r} was requested but torch {torch.__version__} sees no CUDA device; "
                "use device='auto' or 'cpu'"
            )
        return device
    if device == "cpu":
        return device
    raise ParameterError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'")


def seed_everything(seed: int, device: str = "cpu") -> None:
    """Seed ``random``, ``numpy`` and ``torch`` and ask torch for deterministic algorithms.

    ``torch.use_deterministic_algorithms(True, warn_only=True)`` warns instead of failing for ops
    without a deterministic implementation; on CUDA it also needs ``CUBLAS_WORKSPACE_CONFIG``.
    """
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if device.startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.cuda.manual_seed_all(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


# ----------------------------------------------------------------------------------------------
# chapter configuration and records
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChapterConfig:
    """The resolved run of one chapter: ``cfg.profile``, ``cfg.seed``, ``cfg.device``, ``cfg.<key>``."""

    profile: str
    seed: int
    device: str
    params: dict[str, Any] = field(default_factory=dict)

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


def setup_chapter(profiles: Mapping[str, Mapping[str, Any]], namespace: dict[str, Any]) -> ChapterConfig:
    """Validate and resolve a chapter's parameters; seed; resolve the device; show a banner.

    Parameters
    ----------
    profiles:
        the chapter's literal ``PROFILES`` dict, e.g. ``{"cpu": {"steps": 2000}, "paper": {"steps": 30000}}``.
    namespace:
        the chapter's ``globals()``: holds the parameters-cell values (``None`` = profile default) and,
        in IPython, ``In`` (the executed cell sources), used to find names injected by papermill.

    Returns the :class:`ChapterConfig` and writes the resolved values back into ``namespace`` (so
    ``steps`` is usable directly after the call). Raises :class:`ParameterError` (a ``ValueError``)
    naming unknown or ill-typed parameters and listing the valid ones.
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
    namespace.update(cfg.as_dict())

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
    return cfg


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
