"""Where and how computations run: the device, the seeds and the thread limits (one copy, used by all).

The bottom layer of the package: every layer above may import it, it imports nothing of
``ntputils``. Chapters reach it through :func:`ntputils.chapter.setup_chapter`.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import numpy as np
import torch

__all__ = ["resolve_device", "seed_everything", "limit_threads"]

DEVICE_CHOICES = "'auto', 'cpu', 'cuda' or 'cuda:N'"


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA when torch sees it, else the CPU; ``"cpu"``/``"cuda[:N]"`` as given.

    Raises ``ValueError`` for any other name and for a CUDA device that torch cannot see (a GPU run
    never silently falls back to the CPU). Used by every chapter (through ``setup_chapter``), by the
    NTP-UFM and network training loops, the L^mm solver and the pretrained-model loaders.
    """
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        if device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            dev = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"unknown device {device!r}; use {DEVICE_CHOICES}") from exc
    else:
        raise ValueError(f"unknown device {device!r}; use {DEVICE_CHOICES}")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; use {DEVICE_CHOICES}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={str(device)!r} was requested but torch {torch.__version__} sees no CUDA device; "
            "use device='auto' or 'cpu'"
        )
    return dev


def seed_everything(seed: int, device: str = "cpu") -> None:
    """Seed ``random``, ``numpy`` and ``torch`` and ask torch for deterministic algorithms.

    ``torch.use_deterministic_algorithms(True, warn_only=True)`` warns instead of failing for ops
    without a deterministic implementation; on CUDA it also needs ``CUBLAS_WORKSPACE_CONFIG``.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if str(device).startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.cuda.manual_seed_all(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


@contextlib.contextmanager
def limit_threads(torch_threads: int | None = None, blas_threads: int | None = 1) -> Iterator[None]:
    """Temporarily cap torch's intra-op threads and the BLAS/LAPACK pools (None: leave unchanged).

    Why: on a shared 2-core machine, multi-threaded OpenBLAS ``eigh``/``svd`` were measured
    10-15x *slower* than single-threaded ones (threads spin while the cores are busy elsewhere).
    """
    old = None
    if torch_threads is not None:
        old = torch.get_num_threads()
        torch.set_num_threads(torch_threads)
    try:
        ctx: contextlib.AbstractContextManager = contextlib.nullcontext()
        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            ctx = threadpool_limits(limits=blas_threads, user_api="blas")
        with ctx:
            yield
    finally:
        if old is not None:
            torch.set_num_threads(old)
