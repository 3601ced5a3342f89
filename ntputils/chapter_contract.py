"""What a chapter and the book runner agree on: parameter names, types and profiles, and the record file.

A chapter declares literal ``PROFILES`` (one dict of sizes and steps per profile) and a papermill
``parameters`` cell (``profile``, ``seed``, ``device`` and one name per profile key, ``None``
meaning "take the profile's value"). The runner (:mod:`ntputils.book`) validates ``-p`` overrides
with these functions *before* any kernel starts, and :func:`ntputils.runtime.setup_chapter` repeats
the check inside the kernel, so a bare papermill run is checked too. Pure Python: importing this
module imports no numerics, so the runner stays independent of the math layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

RESERVED = ("profile", "seed", "device")
DEFAULT_PROFILE = "cpu"
RECORD_ENV = "NTPBOOK_RECORD"
INJECTED_MARKER = "# Parameters"
#: device names a chapter accepts (checked before any kernel starts; CUDA availability is checked in it)
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")
#: seeds must fit every generator seeded by :func:`ntputils.device.seed_everything` (torch: < 2**63)
SEED_MAX = 2**63 - 1


class ParameterError(ValueError):
    """A chapter parameter is unknown, ill-typed or inconsistent with the chapter's profiles.

    Used in: a05, c01, c02.
    """


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
    if not 0 <= seed <= SEED_MAX:
        raise ParameterError(f"parameter 'seed' must be in [0, 2**63 - 1], got {seed!r}")
    device = values.get("device", "auto")
    device = "auto" if device is None else device
    if not isinstance(device, str):
        raise ParameterError(f"parameter 'device' must be of type str, got {_type_name(device)} {device!r}")
    if not DEVICE_PATTERN.fullmatch(device):
        raise ParameterError(f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'")
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
