"""The NTP unconstrained-features model (NTP-UFM) and its nuclear-norm regularization path.

NTP-UFM (paper A Def. 1; paper B eq. NTP-UFM): the word embeddings ``W`` (V x d) and the context
embeddings ``H`` (d x m) are free parameters, trained on

    CE:              sum_j pi_j CE(softmax(W h_j), p_j) + lam/2 (||W||_F^2 + ||H||_F^2)
    square:          1/2 ||S~ - W H||_F^2                     (paper B eq. 5, halved)
    weighted_square: 1/2 ||(S~ - W H) Omega||_F^2             (paper B eq. 10, halved)

The halved square losses make the gradient-flow time of :mod:`ntputils.analysis.dynamics` equal to
``lr * steps`` for plain gradient descent.

Lemma 1 (paper A): for d >= rank, NTP-UFM with ridge ``lam`` is equivalent to the convex program
``min_L CE(L) + lam ||L||_*`` (``||L||_* = min_{WH=L} (||W||^2 + ||H||^2)/2``), whose solutions
``L_lam`` form the regularization path (Def. 2) solved here by accelerated proximal gradient.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm  # the text bar: tqdm.auto warns "IProgress not found" in a kernel without ipywidgets

from ntputils.data.ntp import NTPData
from ntputils.device import resolve_device
from ntputils.geometry.logits import centered_support
from ntputils.training.history import History, log_spaced_steps

LOSSES = ("ce", "square", "weighted_square")
OPTIMIZERS = ("gd", "adamw", "adam")
INITS = ("normal", "aligned")


def _real(name: str, value: object, positive: bool = False) -> None:
    """Raise unless ``value`` is a finite real number ``>= 0`` (``> 0`` if ``positive``)."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or float(value) < 0 or (positive and float(value) == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite real number {bound}, got {value!r}")


def _available_memory() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return math.inf


def _check_memory(V: int, m: int, d: int, n_snapshots: int, itemsize: int) -> None:
    """Refuse, before any work, a run whose factors, optimizer state and snapshots (W, H, L = WH per
    snapshot, float64 on the host) cannot fit in the available memory."""
    params = V * d + d * m
    need = itemsize * (4 * params + 4 * V * m) + 8 * n_snapshots * (params + V * m)
    have = _available_memory()
    if need > have:
        raise ValueError(f"NTP-UFM with V={V}, m={m}, d={d} and {n_snapshots} snapshots needs about "
                         f"{need / 2**30:.3g} GiB, only {have / 2**30:.3g} GiB are available; lower d "
                         "or the number of snapshots")


def ce_loss(L: torch.Tensor, P: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``sum_j pi_j CE(softmax(l_j), p_j) = -sum_j pi_j sum_z P[z,j] log softmax(l_j)_z``.

    The NTP objective of Paper B, Eq. (1) in the logit domain; Paper A, Def. 1.
    """
    return -(pi * (P * torch.log_softmax(L, dim=0)).sum(dim=0)).sum()


def _init_factors(kind: str, V: int, m: int, d: int, scale: float, gen: torch.Generator,
                  dtype: torch.dtype, target: np.ndarray | None, delta: float
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    if kind == "normal":
        W = torch.randn(V, d, generator=gen, dtype=dtype) * scale
        H = torch.randn(d, m, generator=gen, dtype=dtype) * scale
        return W, H
    # aligned (paper B Prop. 1): W = e^{-delta} U R^T, H = e^{-delta} R V^T
    from ntputils.geometry.logits import svd_factors

    U, _, Vt = svd_factors(target)
    r = U.shape[1]
    if d < r:
        raise ValueError(f"aligned initialization needs d >= rank {r}, got d={d}")
    R, _ = torch.linalg.qr(torch.randn(d, r, generator=gen, dtype=torch.float64))
    e = math.exp(-delta)
    W = e * torch.from_numpy(U) @ R.T
    H = e * R @ torch.from_numpy(Vt)
    return W.to(dtype), H.to(dtype)


def train(
    data: NTPData,
    d: int,
    loss: str = "ce",
    lam: float = 0.0,
    steps: int = 1000,
    lr: float = 1.0,
    optimizer: str = "gd",
    init: str | tuple[np.ndarray, np.ndarray] = "normal",
    init_scale: float = 0.1,
    delta: float = 4.0,
    dtype: torch.dtype = torch.float64,
    device: str = "cpu",
    log_steps: int | Sequence[int] = 60,
    snapshot_steps: int | Sequence[int] | None = None,
    seed: int = 0,
    weight_decay: float = 0.0,
    milestones: Sequence[int] = (),
    gamma: float = 1.0,
    omega: np.ndarray | None = None,
    target: np.ndarray | None = None,
    progress: bool = True,
) -> History:
    r"""NTP-UFM of Paper A, Def. 1 and Paper B, Eq. (NTP-UFM): $\sum_j\hat\pi_j\mathrm{CE}+\frac\lambda2(
    \lVert\boldsymbol W\rVert_F^2+\lVert\boldsymbol H\rVert_F^2)$, or $\frac12\lVert\widetilde{\boldsymbol
    S}-\boldsymbol W\boldsymbol H\rVert_F^2$, Paper B, Eq. (5); or $\frac12\lVert(\widetilde{\boldsymbol
    S}-\boldsymbol W\boldsymbol H)\boldsymbol\Omega\rVert_F^2$, Paper B, Eq. (10).

    Trains full batch and returns a :class:`~ntputils.training.history.History` with snapshots of W, H, L.

    Parameters
    ----------
    data: the NTP data (``P``, ``pi``, ``S``, entropy ``H`` are taken from it).
    d: embedding dimension (>= 1).
    loss: ``"ce"`` (pi-weighted soft-label CE + ``lam/2`` ridge), ``"square"`` (``1/2||T - WH||^2``
        with target ``T = S~`` unless ``target`` is given) or ``"weighted_square"``
        (``1/2||(T - WH) Omega||^2`` with ``omega`` the diagonal of Omega, length m).
    optimizer: ``"gd"`` (plain gradient descent with step ``lr``), ``"adamw"`` (decoupled
        ``weight_decay``, as the authors) or ``"adam"``; ``milestones``/``gamma`` give a
        MultiStepLR schedule.
    init: ``"normal"`` (i.i.d. N(0, init_scale^2)), ``"aligned"`` (paper B Prop. 1:
        ``W = e^{-delta} U R^T``, ``H = e^{-delta} R V^T`` from the SVD of the square-loss target)
        or an explicit ``(W0, H0)`` pair.
    log_steps / snapshot_steps: an int ``k`` means ``k`` log-spaced steps in ``[0, steps]``; or
        explicit step lists. Snapshots (W, H, L) default to the log steps.

    Logged scalars: ``loss``, ``norm_W``, ``norm_H``, ``norm_L`` and, for CE, ``ce`` and
    ``ce_minus_H`` (CE minus the empirical entropy).
    """
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; valid: {LOSSES}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; valid: {OPTIMIZERS}")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"embedding dimension d must be an integer >= 1, got {d!r}")
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    _real("learning rate lr", lr, positive=True)
    _real("lam", lam)
    _real("weight_decay", weight_decay)
    _real("gamma", gamma, positive=True)
    if isinstance(init, str) and init not in INITS:
        raise ValueError(f"unknown init {init!r}; valid: {INITS} or a (W0, H0) pair")
    if isinstance(init, str) and init == "normal":
        _real("init_scale", init_scale, positive=True)  # 0 would start (and stay) at W = H = 0
    dev = resolve_device(device)
    V, m = data.V, data.m
    snap_spec = log_steps if snapshot_steps is None else snapshot_steps
    n_snap = (len(log_spaced_steps(int(steps), snap_spec)) if isinstance(snap_spec, int | np.integer)
              else len(snap_spec) if hasattr(snap_spec, "__len__") else 0)
    _check_memory(V, m, int(d), n_snap, torch.finfo(dtype).bits // 8)
    gen = torch.Generator().manual_seed(seed)

    P = torch.from_numpy(data.P.toarray()).to(dev, dtype)
    pi = torch.from_numpy(data.pi).to(dev, dtype)
    T_np = centered_support(data.S) if target is None else np.asarray(target, dtype=np.float64)
    if T_np.shape != (V, m):
        raise ValueError(f"shape mismatch: target is {T_np.shape}, data is {(V, m)}")
    T = torch.from_numpy(T_np).to(dev, dtype)
    if loss == "weighted_square":
        if omega is None:
            raise ValueError("loss='weighted_square' needs omega (the diagonal of Omega, length m)")
        om = torch.as_tensor(np.asarray(omega, dtype=np.float64)).to(dev, dtype)
        if om.shape != (m,):
            raise ValueError(f"shape mismatch: omega has shape {tuple(om.shape)}, expected ({m},)")
    else:
        om = None

    if isinstance(init, str):
        W0, H0 = _init_factors(init, V, m, d, init_scale, gen, dtype,
                               T_np if loss != "weighted_square" else T_np * np.asarray(omega), delta)
    else:
        W0 = torch.as_tensor(np.asarray(init[0]), dtype=dtype)
        H0 = torch.as_tensor(np.asarray(init[1]), dtype=dtype)
        if W0.shape != (V, d) or H0.shape != (d, m):
            raise ValueError(f"shape mismatch: init W {tuple(W0.shape)} / H {tuple(H0.shape)}, "
                             f"expected ({V}, {d}) / ({d}, {m})")
    W = W0.to(dev).clone().requires_grad_(True)
    H = H0.to(dev).clone().requires_grad_(True)

    if optimizer == "gd":
        opt: torch.optim.Optimizer = torch.optim.SGD([W, H], lr=lr)
    elif optimizer == "adamw":
        opt = torch.optim.AdamW([W, H], lr=lr, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam([W, H], lr=lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(milestones), gamma=gamma)

    log_at = set(log_spaced_steps(steps, log_steps) if isinstance(log_steps, int) else log_steps)
    if snapshot_steps is None:
        snap_at = log_at
    else:
        snap_at = set(log_spaced_steps(steps, snapshot_steps) if isinstance(snapshot_steps, int)
                      else snapshot_steps)
    entropy = data.entropy

    def objective() -> tuple[torch.Tensor, torch.Tensor | None]:
        L = W @ H
        if loss == "ce":
            ce = ce_loss(L, P, pi)
            obj = ce + 0.5 * lam * (W.square().sum() + H.square().sum()) if lam else ce
            return obj, ce
        R = T - L
        if om is not None:
            R = R * om
        return 0.5 * R.square().sum(), None

    hist = History(meta=dict(loss=loss, d=d, lam=lam, steps=steps, lr=lr, optimizer=optimizer,
                             init=init if isinstance(init, str) else "given", seed=seed, device=str(dev),
                             dtype=str(dtype), entropy=entropy))
    t0 = time.perf_counter()
    for step in tqdm(range(steps + 1), desc=f"NTP-UFM ({loss})", disable=not progress, mininterval=2.0):
        obj, ce = objective()
        if step in log_at:
            with torch.no_grad():
                row = dict(loss=obj.item(), norm_W=W.norm().item(), norm_H=H.norm().item(),
                           norm_L=(W @ H).norm().item())
                if ce is not None:
                    row.update(ce=ce.item(), ce_minus_H=ce.item() - entropy)
            hist.log(step, **row)
        if step in snap_at:
            hist.snapshot(step, W.detach().cpu().numpy(), H.detach().cpu().numpy())
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        obj.backward()
        opt.step()
        sched.step()
        if not math.isfinite(obj.item()):
            raise FloatingPointError(f"NTP-UFM training diverged at step {step} (loss {obj.item()}); "
                                     "lower the learning rate")
    hist.meta["seconds"] = time.perf_counter() - t0
    return hist


# ---------------------------------------------------------------------------------------------
# regularization path: min_L CE(L) + lam ||L||_*
# ---------------------------------------------------------------------------------------------
def _ce_and_grad(L: np.ndarray, P: np.ndarray, pi: np.ndarray) -> tuple[float, np.ndarray]:
    Z = L - L.max(axis=0, keepdims=True)
    logsm = Z - np.log(np.exp(Z).sum(axis=0, keepdims=True))
    ce = -float(np.sum(pi * np.sum(P * logsm, axis=0)))
    grad = pi * (np.exp(logsm) - P)
    return ce, grad


def _svt(A: np.ndarray, tau: float) -> tuple[np.ndarray, float]:
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    s = np.maximum(s - tau, 0.0)
    return (U * s) @ Vt, float(s.sum())


def nuclear_prox_gradient(
    data: NTPData, lam: float, L0: np.ndarray | None = None, tol: float = 1e-7,
    max_iter: int = 200_000,
) -> tuple[np.ndarray, dict]:
    """Solve ``min_L CE(L) + lam ||L||_*`` by FISTA with adaptive restart.

    The CE gradient ``G = (softmax(L) - P) diag(pi)`` is Lipschitz with constant
    ``<= max_j pi_j / 2`` (a softmax Hessian ``diag(s) - s s^T`` has norm <= 1/2); we take the safe
    step ``t = 1/max_j pi_j``. The prox of
    ``t lam ||.||_*`` is singular-value soft-thresholding. Stops when the proximal-gradient
    residual ``||L - prox(L - t G)|| / t`` (zero exactly at the optimum: ``-G in lam d||L||_*``)
    falls below ``tol``. Returns ``(L, info)`` with ``info = {"iterations", "residual",
    "objective", "ce", "nuclear_norm", "converged"}``.

    The regularization path of Paper A, Def. 2 and Lemma 1.
    """
    if lam <= 0:
        raise ValueError(f"lam must be > 0 (lam = 0 has no finite minimizer), got {lam}")
    P = data.P.toarray()
    pi = data.pi
    step = 1.0 / pi.max()
    X = np.zeros_like(P) if L0 is None else np.array(L0, dtype=np.float64)
    Y, tk = X.copy(), 1.0
    obj_prev = np.inf
    residual = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        _, G = _ce_and_grad(Y, P, pi)
        X_new, nuc = _svt(Y - step * G, step * lam)
        ce, Gx = _ce_and_grad(X_new, P, pi)
        obj = ce + lam * nuc
        if obj > obj_prev and tk > 1.0:  # adaptive restart (O'Donoghue & Candes)
            # (never twice in a row: the step after a restart is a plain proximal-gradient step,
            # a descent step up to rounding; restarting again would repeat it forever at the optimum)
            Y, tk = X.copy(), 1.0
            continue
        t_next = 0.5 * (1 + math.sqrt(1 + 4 * tk * tk))
        Y = X_new + ((tk - 1) / t_next) * (X_new - X)
        X, tk, obj_prev = X_new, t_next, obj
        if it % 25 == 0:
            Xp, _ = _svt(X - step * Gx, step * lam)
            residual = float(np.linalg.norm(X - Xp) / step)
            if residual < tol:
                break
    ce, _ = _ce_and_grad(X, P, pi)
    nuc = float(np.linalg.svd(X, compute_uv=False).sum())
    return X, dict(iterations=it, residual=residual, objective=ce + lam * nuc, ce=ce, nuclear_norm=nuc,
                   converged=residual < tol)


def lambda_max(data: NTPData) -> float:
    r"""The smallest :math:`\lambda` with :math:`\boldsymbol L_\lambda = 0`, namely
    :math:`\|\nabla\mathcal L(\boldsymbol 0)\|_{op}`.

    :math:`\boldsymbol L_\lambda` minimizes :math:`\mathcal L(\boldsymbol L)+\lambda\|\boldsymbol L\|_*`
    (Paper A, Lemma 1, the convex problem solved by :func:`nuclear_prox_gradient`). Zero is optimal iff
    :math:`-\nabla\mathcal L(\boldsymbol 0)\in\lambda\,\partial\|\boldsymbol 0\|_*`, the op-norm ball of
    radius :math:`\lambda`, i.e. iff

    .. math:: \lambda\ \ge\ \lambda_{\max}=\big\|(\tfrac1V\mathbb 1\mathbb 1^\top-\hat{\boldsymbol P})
              \operatorname{diag}(\hat{\boldsymbol\pi})\big\|_{op},

    the gradient of the CE at :math:`\boldsymbol L=\boldsymbol 0` (uniform softmax :math:`\tfrac1V`). Below it
    :math:`\boldsymbol L_\lambda\ne0` (the top end of the regularization path of Paper A, Theorem 1).
    """
    return np.linalg.norm((1.0 / data.V - data.P.toarray()) * data.pi, 2)


def regularization_path(
    data: NTPData, lams: Sequence[float], tol: float = 1e-7, max_iter: int = 200_000, progress: bool = True,
) -> list[tuple[float, np.ndarray, dict]]:
    r"""$\boldsymbol L_\lambda=\arg\min_{\boldsymbol L}\mathcal L(\boldsymbol L)+\lambda\lVert\boldsymbol
    L\rVert_*$ for each $\lambda$, Paper A, Def. 2, Lemma 1; by accelerated proximal gradient with the
    optimality residual.

    Solutions ``L_lam`` of ``min_L CE(L) + lam ||L||_*`` for each ``lam``.

    Solved from the largest to the smallest ``lam`` with warm starts; returns ``(lam, L_lam, info)``
    in the order of ``lams``. ``info`` holds the optimality residual (see
    :func:`nuclear_prox_gradient`); a path point that misses ``tol`` has ``converged = False``.
    """
    lams = [float(x) for x in lams]
    if not lams:
        raise ValueError("lams is empty")
    order = np.argsort(lams)[::-1]
    out: dict[int, tuple[float, np.ndarray, dict]] = {}
    L = None
    for i in tqdm(order, desc="regularization path", disable=not progress):
        L, info = nuclear_prox_gradient(data, lams[i], L0=L, tol=tol, max_iter=max_iter)
        out[int(i)] = (lams[i], L.copy(), info)
    return [out[i] for i in range(len(lams))]
