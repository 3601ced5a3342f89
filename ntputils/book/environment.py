"""Versions and git commit recorded with every executed chapter and shown on the status page."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

REPORTED_PACKAGES = ("torch", "numpy", "cvxpy", "scipy", "papermill", "jupyter-book")


def package_versions(names: tuple[str, ...] = REPORTED_PACKAGES) -> dict[str, str]:
    """``python`` and the installed versions of ``names`` (``"not installed"`` when missing)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_commit(root: Path) -> str:
    """Short commit of ``root`` plus ``+dirty`` when tracked files other than the committed results
    (``results/``: data, not code) changed; ``"none"`` without git/commits."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                              timeout=20).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return "none (no git commit)"
    try:
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"))
    except (OSError, subprocess.SubprocessError):
        dirty = False
    return commit + ("+dirty" if dirty else "")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere): float results of
    training can differ in their last digits between CPU models (other vector kernels)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def vector_isa(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The widest vector instruction set torch's and OpenBLAS's CPU kernels use here: ``"AVX-512"`` (the
    flags torch's AVX512 kernels need), ``"AVX2"`` or ``""`` (other or unknown). Two CPUs of one model
    name may differ in it (a VM's EPYC label), and trained values differ between the two kernel families."""
    try:
        flags = next((set(line.split(":", 1)[1].split()) for line in cpuinfo.read_text().splitlines()
                      if line.startswith("flags")), set())
    except OSError:
        return ""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "AVX-512"
    return "AVX2" if {"avx2", "fma"} <= flags else ""


def machine() -> str:
    """``Linux x86_64, 2 CPUs (AMD EPYC, AVX-512)`` style description."""
    cpu = ", ".join(filter(None, (cpu_model(), vector_isa())))
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu})"
