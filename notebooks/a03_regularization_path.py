# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The regularization path: sparse plus low-rank logits (Theorems 1–2, Fig. 2)
#
# By {prf:ref}`lemma-ufm-nuclear`, NTP-UFM with ridge $\lambda$ and $d\ge V$ has the logits
#
# $$\boldsymbol L_\lambda=\arg\min_{\boldsymbol L}\ \mathcal L(\boldsymbol L)+\lambda\|\boldsymbol L\|_*,$$
#
# and paper A {cite}`zhao2024implicit` studies this *regularization path* (its Definition 2) as
# $\lambda\to0$, as a stand-in for gradient descent run for ever more iterations. Two objects organise
# the limit (paper A, Definition 2 and Thm. 1):
#
# * $\mathcal F=\operatorname{span}\{(\boldsymbol e_z-\boldsymbol e_{z'})\boldsymbol e_j^\top: z,z'\in\mathcal S_j\}$,
#   the logit directions that change in-support log-odds, and the **in-support logits**
#   $\boldsymbol L^{\rm in}\in\mathcal F$, whose in-support differences are
#   $\log(\hat p_{j,z}/\hat p_{j,z'})$ — a sparse matrix carrying the soft labels;
# * the **max-margin logits** $\boldsymbol L^{\rm mm}=\arg\min\|\boldsymbol L\|_*$ subject to equal logits on
#   every support ($\boldsymbol L\in\mathcal F^\perp$) and a margin of at least 1 between every in-support
#   and every off-support logit — a low-rank matrix that depends on the support pattern $\boldsymbol S$ only.
#
# The statements below are **RECONSTRUCTED**: the paper's body could not be retrieved; the content is
# confirmed by the Fig. 2 caption ("in the limit of vanishing regularization, … $\boldsymbol L_\lambda$
# decomposes into two orthogonal components. $\boldsymbol L^{\rm in}$ inherits the sparsity of
# $\boldsymbol P$. In the orthogonal complement, $\boldsymbol L_\lambda$ diverges in norm but converges in
# direction to $\boldsymbol L^{\rm mm}$") and by paper B's recap {cite}`zhao2025semantics`; the wording and
# the exact assumptions are ours (the full statement of paper A, Thm. 1 is not available to us).
#
# ```{prf:theorem} Regularization path of the logits (RECONSTRUCTED)
# :label: thm-reg-path-logits
#
# Let $d\ge V$ and let some support be a proper subset of $[V]$. As $\lambda\to0$:
# (i) $\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)\to\boldsymbol L^{\rm in}$;
# (ii) $\|\boldsymbol L_\lambda\|\to\infty$ and
# $\boldsymbol L_\lambda/\|\boldsymbol L_\lambda\|\to\boldsymbol L^{\rm mm}/\|\boldsymbol L^{\rm mm}\|$
# (equivalently for the $\mathcal F^\perp$ component $\boldsymbol L_\lambda-\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$);
# (iii) $\mathcal L(\boldsymbol L_\lambda)\to\mathcal H$, the empirical entropy.
# ```
#
# ```{prf:theorem} Regularization path of the embeddings (RECONSTRUCTED)
# :label: thm-reg-path-embeddings
#
# With $\boldsymbol L^{\rm mm}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top$, let
# $\boldsymbol W^{\rm mm}=\boldsymbol U\boldsymbol\Sigma^{1/2}$ and $\boldsymbol H^{\rm mm}=\boldsymbol\Sigma^{1/2}\boldsymbol V^\top$.
# The NTP-UFM minimizers $\boldsymbol W_\lambda,\boldsymbol H_\lambda$ diverge in norm and converge in
# direction to $\boldsymbol W^{\rm mm}\boldsymbol R^\top,\ \boldsymbol R\boldsymbol H^{\rm mm}$ for a partial
# rotation $\boldsymbol R$; rotation-free: the normalized Gram matrices
# $\boldsymbol W_\lambda\boldsymbol W_\lambda^\top$ and $\boldsymbol H_\lambda^\top\boldsymbol H_\lambda$ converge to
# those of $(\boldsymbol L^{\rm mm}\boldsymbol L^{\rm mm\top})^{1/2}$ and
# $(\boldsymbol L^{\rm mm\top}\boldsymbol L^{\rm mm})^{1/2}$.
# ```
#
# **What we compute.** We solve the convex problem on a grid of $\lambda$ from $10^{-1}$ (`log10_lam_max`) down to
# $10^{-5}$ at the `cpu` profile, $10^{-7}$ at the `paper` profile (`log10_lam_min`) (certified proximal gradient
# with warm starts, `ntputils.training.ufm.regularization_path`),
# $\boldsymbol L^{\rm mm}$ with cvxpy/SCS (`ntputils.geometry.max_margin_cached`), and track:
# $\|\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)-\boldsymbol L^{\rm in}\|_F$; $\|\boldsymbol L_\lambda\|_F$;
# the normalized distances $\big\|\tfrac{\boldsymbol A}{\|\boldsymbol A\|_F}-\tfrac{\boldsymbol L^{\rm mm}}{\|\boldsymbol L^{\rm mm}\|_F}\big\|_F$
# for $\boldsymbol A=\boldsymbol L_\lambda-\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$ and $\boldsymbol A=\boldsymbol L_\lambda$
# ("direction error"); $\mathcal L(\boldsymbol L_\lambda)-\mathcal H$; and the normalized distances of the
# Gram matrices, using the balanced factors $\boldsymbol W_\lambda=\boldsymbol U_\lambda\boldsymbol\Sigma_\lambda^{1/2}$
# of Lemma 1. Then we train NTP-UFM without regularization by gradient descent and follow the same
# quantities along the iterations.
#
# **Data.** Paper A's Synthetic dataset (`ntputils.data.corpora.paper_a.paper_a_synthetic`, $V=30$ next
# tokens, $m=16$ contexts of 5 words, 3 next tokens each) for Fig. 2 and all checks; the spec's $V=8$,
# $m=10$ random instance (`ntputils.data.synthetic.random_ntp_data`) to compare with reference numbers
# measured on another $V=8$ instance when the theorem was reconstructed (*these are not numbers from the paper*,
# which prints none for the path).
#
# **What to expect.** Convergence in direction is *logarithmically slow*: near the limit
# $\boldsymbol L_\lambda\approx t_\lambda\boldsymbol L^{\rm mm}+\boldsymbol L^{\rm in}+\boldsymbol L^{\rm rest}$ with
# $t_\lambda\approx\log(1/\lambda)$ and a bounded remainder, so the direction error decays like
# $1/\log(1/\lambda)$. Balancing the two terms of the objective along the ray also predicts (our
# derivation, not the paper's): $\|\boldsymbol L_\lambda\|_F$ grows with slope $\|\boldsymbol L^{\rm mm}\|_F$
# in $\log(1/\lambda)$, and $\mathcal L(\boldsymbol L_\lambda)-\mathcal H\approx\lambda\|\boldsymbol L^{\rm mm}\|_*$
# (the excess loss $\propto e^{-t}$ must equal the marginal nuclear-norm cost $\lambda\|\boldsymbol L^{\rm mm}\|_*$).

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of a03_regularization_path.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
log10_lam_max = -1.0  # largest lambda of the path grid, log10
log10_lam_min = -5.0  # smallest lambda of the path grid, log10
n_lams = 9       # number of log-spaced lambdas
path_tol = 1e-9  # optimality-residual tolerance of the prox-gradient solver
d = 32           # NTP-UFM embedding dimension of the gradient-descent run (d ≥ V, which is 30)
gd_steps = 5000  # gradient-descent iterations at lambda 0
gd_lr = 1.0      # gradient-descent step size
gd_init_scale = 0.1  # std of the Gaussian initialization of W and H
fit_below = 1e-2  # lambdas ≤ fit_below enter the 1/log(1/lambda) fit

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np

from ntputils import geometry, plots
from ntputils.analysis.controls import random_f_target, spectrum_matched_random
from ntputils.analysis.regularization_path import direction_error, logit_geometry, path_quantities
from ntputils.chapter import (
    at_least,
    at_most,
    check,
    claims_table,
    preregister,
    record,
    setup_chapter,
    within,
)
from ntputils.data.corpora.paper_a import paper_a_synthetic
from ntputils.data.synthetic import random_ntp_data
from ntputils.geometry import max_margin_cached
from ntputils.training import ufm

# one torch thread: 30 x 16 matrices: intra-op threads only add overhead on a shared CPU
run = setup_chapter(globals(), torch_threads=1)

# %% [markdown]
# ## Data, $\boldsymbol L^{\rm in}$ and $\boldsymbol L^{\rm mm}$

# %%
data = paper_a_synthetic()
S = data.S.toarray()
P = data.P.toarray()
L_in = geometry.in_support_logits(data.P)
L_mm, mm_info = max_margin_cached(data.S)
W_mm, H_mm = geometry.mm_embeddings(L_mm)
words = [data.token_str(z) for z in range(data.V)]
contexts = [data.context_str(j) for j in range(data.m)]
print(data, "| paper: V = 30, m = 16, n = 72, H = 1.0166")
record("a03_n", int(data.n), paper=72)
record("a03_H", float(data.entropy), paper=1.0166)
print(f"L^mm: ||.||_* = {mm_info['nuclear_norm']:.4f}, ||.||_F = {np.linalg.norm(L_mm):.4f}, rank {W_mm.shape[1]}, "
      f"max constraint violation {mm_info['max_violation']:.1e} ({mm_info['solver']})")

# the spec's small random instance (V = 8, m = 10, supports of 1-4 tokens, counts 1-4)
small = random_ntp_data(8, 10, min_size=1, max_size=4, max_count=4, seed=seed)
L_mm_small, _ = max_margin_cached(small.S)
print(small)

# %% [markdown]
# ## The path
#
# **Pre-registered rules** (fixed here, before the path is solved). The paper prints no numbers for the path,
# so the quantitative claims are judged against (a) our first-order asymptotics above, whose corrections are
# of relative order $1/\log(1/\lambda)$ (about $0.1$ at $\lambda=10^{-5}$), hence a tolerance of $0.1$ on ratios
# that should be 1; and (b) the spec's reference values for *another* random $V=8$, $m=10$ instance, recorded when
# the theorem was reconstructed (projection error $1.33, 0.11, 0.007, 0.001, 0.000$ and direction error
# $0.77, 0.31, 0.21, 0.16, 0.13$ at $\lambda=10^{-1},\dots,10^{-5}$, i.e. $c=$ err$\cdot\log(1/\lambda)\approx1.46$
# for $\lambda\le10^{-2}$, varying by $5\%$); a different random draw, hence generous tolerances.
#
# **Negative controls, fixed before the path is solved** (the same rule on each; a control that passes makes its claim
# read "cannot fail"). Slope and loss gap: the same ratio with $\boldsymbol L^{\rm mm}$ replaced by the proxy
# $\widetilde{\boldsymbol S}$, which also separates every support with margin 1 but is not the minimum-norm solution:
# a rule it also meets cannot tell the max-margin solution from another separator. In-support error: the distance of
# $\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$ to a random matrix in $\mathcal F$ with the norm of
# $\boldsymbol L^{\rm in}$ (`ntputils.analysis.controls.random_f_target`), a target the path has no reason to reach.
# Direction error, its constant $c$ and its spread: the same quantities measured against a random matrix with the
# singular values of $\boldsymbol L^{\rm mm}$ and random singular vectors (`spectrum_matched_random`), a direction the
# theorem does not point to.

# %%
PROXY = "the same ratio with L^mm replaced by the proxy S~ (a margin-1 separator, not the minimum-norm one)"
RANDOM_F = "the distance of P_F(L_λ) to a random F matrix of the norm of L^in"
RANDOM_MM = "measured against a random matrix with L^mm's singular values (random singular vectors)"
path_claims = preregister({
    "a03_slope": ("||L_λ||_F grows with slope ||L^mm||_F in log(1/λ): slope / ||L^mm||_F (Synthetic; our asymptotics)",
                  within(1.0, abs_tol=0.1), "A:Thm 1"),
    "a03_ce_ratio": ("CE − H ≈ λ ||L^mm||_* at the smallest λ: ratio (Synthetic; our asymptotics)", within(1.0, abs_tol=0.1),
                     "A:Thm 1"),
    "a03_proj_syn": ("Thm 1(i): ||P_F(L_λ) − L^in||_F at the smallest λ (Synthetic)",
                     at_most(1e-3, "reference run: 0.000 at λ = 1e-5"), "A:Thm 1"),
    "a03_proj_small": ("Thm 1(i): ||P_F(L_λ) − L^in||_F at λ = 1e-5 (V=8 instance)",
                       at_most(1e-3, "reference run: 0.000"), "A:Thm 1", "reference run: 0.000"),
    "a03_dir_small": ("direction error of the F^perp part at λ = 1e-5 (V=8 instance): slow, not ~0 (rule from the reference run, not the paper)",
                      within(0.13, abs_tol=0.05, source="reference run"), "A:Thm 1"),
    "a03_c_small": ("direction error ≈ c / log(1/λ): c over λ ≤ fit_below (V=8 instance; rule from the reference run, not the paper)",
                    within(1.46, rel_tol=0.25, source="reference run"), "A:Thm 1"),
    "a03_spread": ("err·log(1/λ) constant over λ ≤ fit_below (Synthetic): range / mean",
                   at_most(0.3, "a Θ(1/log(1/λ)) rate; the reference run gives 0.05"), "A:Thm 1",
                   "reference run: 0.05"),
}, controls={"a03_slope": PROXY, "a03_ce_ratio": PROXY, "a03_proj_syn": RANDOM_F, "a03_proj_small": RANDOM_F,
             "a03_dir_small": RANDOM_MM, "a03_c_small": RANDOM_MM, "a03_spread": RANDOM_MM})

# %%
lams = np.logspace(log10_lam_max, log10_lam_min, n_lams)
t0 = time.perf_counter()
path = ufm.regularization_path(data, lams, tol=path_tol, progress=False)
pq = path_quantities(data, path, L_mm)
path_small = ufm.regularization_path(small, lams, tol=path_tol, progress=False)
pq_small = path_quantities(small, path_small, L_mm_small)
print(f"paths solved in {time.perf_counter() - t0:.1f} s")

# lambda_max: the smallest lambda with L_lambda = 0 is the operator norm of the CE gradient at L = 0
lam_zero = ufm.lambda_max(data)
print(f"Synthetic: L_lambda = 0 exactly for lambda >= ||grad CE(0)||_op = {lam_zero:.4f}")
print(f"{'lambda':>8} {'iters':>6} {'||P_F L - L^in||':>16} {'||L||_F':>8} {'dir(L_perp)':>11} {'dir(L)':>7} "
      f"{'CE - H':>9} {'gram W':>7} {'gram H':>7}")
for i, lam in enumerate(lams):
    print(f"{lam:8.1e} {pq['iterations'][i]:6d} {pq['proj_error'][i]:16.2e} {pq['norm_L'][i]:8.3f} "
          f"{pq['dir_perp'][i]:11.4f} {pq['dir_L'][i]:7.4f} {pq['ce_gap'][i]:9.2e} {pq['gram_W'][i]:7.4f} "
          f"{pq['gram_H'][i]:7.4f}")

# %% [markdown]
# ## Figure 2: the decomposition on the Synthetic dataset
#
# Eight panels, two per row, words by contexts. First row: the soft labels $\boldsymbol P$ and the support
# $\boldsymbol S$. Second row: the two limits the theory predicts, the sparse $\boldsymbol L^{\rm in}$ and the
# low-rank $\boldsymbol L^{\rm mm}$. Third row: the path solution $\boldsymbol L_\lambda$ at the smallest $\lambda$
# and its $\mathcal F$ component $\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$. Fourth row: its $\mathcal F^\perp$
# component $\boldsymbol L_\lambda-\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$, rescaled to the Frobenius norm of
# $\boldsymbol L^{\rm mm}$ so the two can share a colour scale, and the difference of that rescaled component and
# $\boldsymbol L^{\rm mm}$ (the panel title gives its largest absolute entry).

# %% mystnb={"figure": {"caption": "The soft labels P and the support S; the in-support logits L^in and the max-margin logits L^mm; the path solution L_λ at the smallest λ and its F component P_F(L_λ); its F-perp component rescaled to the Frobenius norm of L^mm, and that component minus L^mm. Our heatmap version of the schematic of paper A, Fig. 2.", "name": "fig-a03-decomposition"}, "image": {"alt": "Four-by-two grid of heatmaps, words by contexts: P, S, L^in, L^mm, the path solution, its F component, its rescaled F-perp component and that component minus L^mm."}}
i_min = len(lams) - 1
L_lam = path[i_min][1]
L_lam_F = geometry.project_F(L_lam, S)
L_lam_perp = L_lam - L_lam_F
perp_rescaled = L_lam_perp * np.linalg.norm(L_mm) / np.linalg.norm(L_lam_perp)
in_lim = np.abs(L_in).max()
mm_lo, mm_hi = L_mm.min(), L_mm.max()
diff_lim = np.abs(perp_rescaled - L_mm).max()
fig, axes = plt.subplots(4, 2, figsize=(12, 22), layout="constrained")
panels = [
    (P, "P: next-token probabilities", "hot", 0.0, 1.0, "probability"),
    (S, "S: support", "hot", 0.0, 1.0, "in support"),
    (L_in, "L^in (in-support log-odds, sparse)", "RdBu_r", -in_lim, in_lim, "logit"),
    (L_mm, "L^mm (max-margin, low rank)", "hot", mm_lo, mm_hi, "logit"),
    (L_lam, f"L_λ at λ = {lams[i_min]:.0e}", "hot", None, None, "logit"),
    (L_lam_F, "P_F(L_λ)  ≈ L^in", "RdBu_r", -in_lim, in_lim, "logit"),
    (perp_rescaled, "L_λ − P_F(L_λ), rescaled to ||L^mm||_F  ≈ L^mm", "hot", mm_lo, mm_hi, "logit"),
    (perp_rescaled - L_mm, f"difference of the two (max |entry| {diff_lim:.2f})", "RdBu_r", -diff_lim, diff_lim,
     "logit"),
]
for ax, (M, title, cmap, lo, hi, bar) in zip(axes.ravel(), panels, strict=True):
    plots.heatmap(ax, M, cmap=cmap, vmin=lo, vmax=hi, title=title, xlabel="context j", ylabel="word z",
                  xticklabels=contexts, yticklabels=words, fontsize=7, colorbar=bar)
plt.show()

# %% [markdown]
# $\mathcal P_{\mathcal F}(\boldsymbol L_\lambda)$ is indistinguishable from $\boldsymbol L^{\rm in}$ at the
# smallest $\lambda$; the rescaled $\mathcal F^\perp$ component shows the block pattern of
# $\boldsymbol L^{\rm mm}$ (contexts with the same support share a column), with a visible residual — the slow
# directional convergence quantified next.
#
# ## The path as $\lambda\to0$, against $\log(1/\lambda)$

# %% mystnb={"figure": {"caption": "The quantities of Thm. 1 along the regularization path against log(1/λ): in-support error, logit norm, loss gap and direction error (our own figure).", "name": "fig-a03-path"}, "image": {"alt": "Line plots of the path's quantities against log of one over lambda."}}
x = np.log(1.0 / lams)
# the spec's reconstruction-time measurements on its own V=8, m=10 random instance (not paper numbers)
spec_lams = np.logspace(-1, -5, 5)
spec_proj = [1.33, 0.11, 0.007, 0.001, 0.000]
spec_dir = [0.77, 0.31, 0.21, 0.16, 0.13]
fit = (lams <= fit_below) & np.isfinite(pq["dir_perp"])
c_fit = float(np.mean(pq["dir_perp"][fit] * x[fit]))  # least-squares-free estimate of err ~ c / log(1/lambda)
nz = pq["norm_L"] > 0
slope, intercept = np.polyfit(x[fit], pq["norm_L"][fit], 1)

fig, grid = plt.subplots(3, 2, figsize=(12, 12), layout="constrained")
axes = grid.ravel().reshape(2, 3)  # six panels in reading order: axes[r, c] is panel 3 r + c + 1
for q, label, style in ((pq, "Synthetic (V=30, m=16)", "o-"), (pq_small, "random (V=8, m=10)", "s--")):
    axes[0, 0].semilogy(x, q["proj_error"], style, label=label)
    axes[0, 1].plot(x, q["norm_L"], style, label=label)
    axes[0, 2].semilogy(x, q["ce_gap"], style, label=label)
    axes[1, 0].plot(x, q["dir_perp"], style, label=f"{label}: L_λ − P_F(L_λ)")
    axes[1, 2].plot(x, q["dir_perp"] * x, style, label=label)
axes[1, 0].plot(x, pq["dir_L"], "o:", color="C0", alpha=0.6, label="Synthetic: L_λ itself")
xx = np.linspace(x[fit].min(), x.max() * 1.05, 100)
axes[1, 0].plot(xx, c_fit / xx, "k-", lw=0.8, label=f"fit {c_fit:.2f} / log(1/λ) (Synthetic)")
axes[1, 0].plot(np.log(1 / spec_lams), spec_dir, "rx", ms=9, label="reference: another V=8, m=10 instance")
axes[0, 1].plot(xx, slope * xx + intercept, "k-", lw=0.8, label=f"slope {slope:.2f} (||L^mm||_F = {np.linalg.norm(L_mm):.2f})")
axes[0, 2].semilogy(x, lams * mm_info["nuclear_norm"], "k-", lw=0.8, label="λ ||L^mm||_* (Synthetic)")
axes[1, 1].plot(x, pq["gram_W"], "o-", label="W_λ W_λ^T vs W^mm W^mm^T")
axes[1, 1].plot(x, pq["gram_H"], "s-", label="H_λ^T H_λ vs H^mm^T H^mm")
axes[1, 2].axhline(c_fit, color="k", lw=0.8, label=f"mean over λ ≤ {fit_below:g}: {c_fit:.2f}")
titles = [("||P_F(L_λ) − L^in||_F", "Thm 1(i): in-support part → L^in"),
          ("||L_λ||_F", "Thm 1(ii): the norm diverges, linearly in log(1/λ)"),
          ("CE(L_λ) − H", "Thm 1(iii): loss → entropy"),
          ("normalized distance to L^mm", "Thm 1(ii): direction → L^mm (slowly)"),
          ("normalized Gram distance", "Thm 2: Gram matrices → those of W^mm, H^mm (Synthetic)"),
          ("direction error × log(1/λ)", "≈ constant: error = Θ(1 / log(1/λ))")]
for ax, (ylabel, title) in zip(axes.ravel(), titles, strict=True):
    ax.set(xlabel="log(1/λ)", ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
plt.show()

# %%
idx_spec = [int(np.argmin(np.abs(np.log(lams) - np.log(lam)))) for lam in spec_lams]
print("V=8, m=10 random instance: ours vs the spec's sanity-check instance (a different random draw)")
print(f"{'lambda':>8} {'proj ours':>10} {'proj spec':>10} {'dir ours':>9} {'dir spec':>9}")
for lam, i, sp_, sd_ in zip(spec_lams, idx_spec, spec_proj, spec_dir, strict=True):
    print(f"{lam:8.0e} {pq_small['proj_error'][i]:10.4f} {sp_:10.3f} {pq_small['dir_perp'][i]:9.3f} {sd_:9.2f}")
fit_small = fit & np.isfinite(pq_small["dir_perp"])
c_small = float(np.mean(pq_small["dir_perp"][fit_small] * x[fit_small]))
DIR_TARGET = 0.01  # an illustrative direction error: how small must λ be to reach it?
needed_log = c_fit / DIR_TARGET  # log(1/λ) at which c / log(1/λ) = DIR_TARGET
print(f"extrapolating err ≈ {c_fit:.2f}/log(1/λ): a direction error of {DIR_TARGET} needs log(1/λ) ≈ {needed_log:.0f}, "
      f"i.e. λ ≈ 1e-{needed_log / np.log(10):.0f}")

# %%
record("a03_c_fit", c_fit)
record("a03_c_small", c_small, paper=1.46)
record("a03_lam_min", float(lams[-1]))
record("a03_dir_min", float(pq["dir_perp"][-1]))
record("a03_dir_target", DIR_TARGET)
record("a03_needed_log", float(needed_log))
record("a03_needed_log10", float(needed_log / np.log(10)))
record("a03_proj_first", float(pq["proj_error"][nz][0]))
_ = record("a03_proj_last", float(pq["proj_error"][-1]))

# %% [markdown]
# **Reading.** The in-support component converges fast (on the Synthetic data its error falls from
# {glue:text}`a03_proj_first:.2g` at the first non-zero path point to {glue:text}`a03_proj_last:.1e` at the
# smallest $\lambda$), and so does the loss gap, compared with the predicted line $\lambda\|\boldsymbol L^{\rm mm}\|_*$.
# The norm grows linearly in $\log(1/\lambda)$, compared with the predicted slope $\|\boldsymbol L^{\rm mm}\|_F$:
# the path moves out along the $\boldsymbol L^{\rm mm}$ ray (the verdicts of these two pre-registered claims
# are in the table of the checks below). The *direction*, however, converges only like $c/\log(1/\lambda)$
# ($c=$ {glue:text}`a03_c_fit:.2f` on the Synthetic data, {glue:text}`a03_c_small:.2f` on the $V=8$ instance):
# at $\lambda=$ {glue:text}`a03_lam_min:.0e` it is still {glue:text}`a03_dir_min:.2f` away, and extrapolating
# the fit, a direction error of {glue:text}`a03_dir_target` would need $\log(1/\lambda)\approx$
# {glue:text}`a03_needed_log:.0f`, i.e.
# $\lambda\approx10^{-k}$ with $k=$ {glue:text}`a03_needed_log10:.0f`. This is the honest picture behind
# "converges in direction": a true but logarithmically slow statement.
#
# ## Gradient descent with growing iterations
#
# Paper A uses the path as a proxy for unregularized gradient descent run for longer and longer. We train
# NTP-UFM ($\lambda=0$, $d=32\ge V$) by plain gradient descent from a Gaussian initialization and compute the
# same quantities on the snapshots ($\boldsymbol W_k,\boldsymbol H_k$ are the trained factors, not a
# re-factorization).
#
# **Pre-registered rule for gradient descent** (before the run): the path is a proxy for gradient descent, so
# after the initial transient (the first 100 steps) every quantity should move the way the path moves. Each
# is judged by the ratio of its final value to its value at step 100: at most 1 for the loss gap, the
# in-support error, the direction error and the Gram distances; at least 1 for the logit norm.
#
# **Negative controls, fixed before the run.** For the loss gap, the norm and the Gram distances: the same run held
# at its step-100 state, which does not move at all (ratio 1): the inclusive rules hold for it, so we expect these
# three claims to read "cannot fail" (a ratio against 1 cannot tell movement from standing still). For the in-support
# error: the distance of $\mathcal P_{\mathcal F}(\boldsymbol L_k)$ to a random matrix in $\mathcal F$ of the norm of
# $\boldsymbol L^{\rm in}$; for the direction error: the direction error against a random matrix with the singular
# values of $\boldsymbol L^{\rm mm}$ (the same random matrices as for the path).

# %%
HELD = "the run held at its step-100 state (no movement: ratio 1)"
gd_claims = preregister({
    "a03_gd_ce": ("GD: CE − H, final / at step 100", at_most(1.0, "decreases")),
    "a03_gd_norm": ("GD: ||L_k||_F, final / at step 100", at_least(1.0, "grows")),
    "a03_gd_proj": ("GD: ||P_F(L_k) − L^in||_F, final / at step 100", at_most(1.0, "decreases")),
    "a03_gd_dir": ("GD: direction error of the F^perp part, final / at step 100", at_most(1.0, "decreases")),
    "a03_gd_gram": ("GD: Gram distances (worse of W, H), final / at step 100", at_most(1.0, "decrease")),
}, controls={"a03_gd_ce": HELD, "a03_gd_norm": HELD, "a03_gd_gram": HELD, "a03_gd_proj": RANDOM_F,
             "a03_gd_dir": RANDOM_MM})

# %% mystnb={"figure": {"caption": "Gradient descent without regularization: in-support part, loss gap, logit norm and normalized distances to the theory, and the path and GD compared at equal logit norm (our own figure).", "name": "fig-a03-gd"}, "image": {"alt": "Four line plots over gradient-descent steps and logit norm."}}
hist = ufm.train(data, d=d, loss="ce", lam=0.0, steps=gd_steps, lr=gd_lr, optimizer="gd",
                 init_scale=gd_init_scale, log_steps=30, seed=seed, device=run.device, progress=False)
gd_steps_arr = np.asarray(hist.snap_steps)
gq: dict[str, list] = {k: [] for k in ("proj_error", "norm_L", "dir_perp", "dir_L", "gram_W", "gram_H", "ce_gap")}
ce_at = dict(zip(hist.steps, hist.scalars["ce_minus_H"], strict=True))
for k, W, H, L in zip(hist.snap_steps, hist.W, hist.H, hist.L, strict=True):
    for key, value in logit_geometry(L, S, L_in, L_mm, W_mm, H_mm, W=W, H=H).items():
        gq[key].append(value)
    gq["ce_gap"].append(ce_at[k])
gq = {k: np.asarray(v) for k, v in gq.items()}
print(f"GD: {gd_steps} steps in {hist.meta['seconds']:.1f} s; final CE - H = {gq['ce_gap'][-1]:.2e}, "
      f"||L|| = {gq['norm_L'][-1]:.1f}, direction error {gq['dir_perp'][-1]:.3f}")

fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), layout="constrained")
axes = axes.ravel()
kk = gd_steps_arr + 1
axes[0].loglog(kk, gq["proj_error"], "o-", ms=3, label="||P_F(L_k) − L^in||_F")
axes[0].loglog(kk, gq["ce_gap"], "s-", ms=3, label="CE(L_k) − H")
axes[0].set(title="GD: in-support part and loss gap", ylabel="distance to L^in / CE − H (log scale)")
axes[1].semilogx(kk, gq["norm_L"], "o-", ms=3, label="||L_k||_F")
axes[1].set(title="GD: logit norm grows like log k", ylabel="||L_k||_F")
axes[2].semilogx(kk, gq["dir_perp"], "o-", ms=3, label="L_k − P_F(L_k) vs L^mm")
axes[2].semilogx(kk, gq["dir_L"], ":", label="L_k vs L^mm")
axes[2].semilogx(kk, gq["gram_W"], "s-", ms=3, label="W_k W_k^T (Gram)")
axes[2].semilogx(kk, gq["gram_H"], "^-", ms=3, label="H_k^T H_k (Gram)")
axes[2].set(title="GD: normalized distances to the theory", ylabel="normalized distance", ylim=(0, 1.5))
axes[3].plot(pq["norm_L"][nz], pq["dir_perp"][nz], "o-", label="regularization path")
axes[3].plot(gq["norm_L"], gq["dir_perp"], "s-", ms=3, label="gradient descent")
axes[3].set(title="at equal logit norm: path vs GD", xlabel="||L||_F", ylabel="direction error of L − P_F(L)",
            ylim=(0, 1.5))
for ax in axes[:3]:
    ax.set_xlabel("GD step k + 1")
for ax in axes:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# **Reading.** Gradient descent reproduces the qualitative picture: the loss gap and
# $\|\mathcal P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol L^{\rm in}\|$ fall by orders of magnitude, the norm grows
# like $\log k$ and all distances to the $\boldsymbol L^{\rm mm}$ geometry decrease. But the last panel shows
# that, *at equal logit norm*, gradient descent is markedly farther from the $\boldsymbol L^{\rm mm}$ direction
# than the regularization path. Whether gradient descent on the factorized model reaches the same limit is
# exactly what the path is a proxy for; within any affordable number of steps the two are not
# interchangeable quantitatively, only qualitatively.
#
# ## Checks
#
# The paper prints no path values. The checks are the monotone trends along the path that the theorems
# predict, asserted over the non-zero path points; the quantitative claims are judged by the rules
# pre-registered above the path and the gradient-descent run.

# %%
check("path: every λ solved to the optimality tolerance", bool(pq["converged"].all() and pq_small["converged"].all()),
      measured=int(pq["iterations"].max()), paper="(certified solver)", tol=f"residual {path_tol:g}",
      item="A:Thm 1")
proj = pq["proj_error"][nz]
check("Thm 1(i): ||P_F(L_λ) − L^in|| decreases monotonically", bool(np.all(np.diff(proj) < 0)),
      measured=[round(float(v), 5) for v in proj], paper="→ 0", item=["A:Thm 1", "A:Fig 2"])
check("Thm 1(ii): ||L_λ|| increases monotonically", bool(np.all(np.diff(pq["norm_L"][nz]) > 0)),
      measured=[round(float(v), 2) for v in pq["norm_L"][nz]], paper="→ ∞", item=["A:Thm 1", "A:Fig 2"])
check("Thm 1(iii): CE(L_λ) − H decreases monotonically (loss is monotone along a penalized path)",
      bool(np.all(np.diff(pq["ce_gap"]) < 0)), measured=[f"{v:.1e}" for v in pq["ce_gap"]], paper="→ 0",
      item="A:Thm 1")
dirs = pq["dir_perp"][nz]
check("Thm 1(ii): direction error of the F^perp part decreases monotonically", bool(np.all(np.diff(dirs) < 0)),
      measured=[round(float(v), 4) for v in dirs], paper="→ 0", item=["A:Thm 1", "A:Fig 2"])
check("Thm 1(ii): direction error of L_λ itself decreases monotonically",
      bool(np.all(np.diff(pq["dir_L"][nz]) < 0)), measured=pq["dir_L"][-1], paper="→ 0", item="A:Thm 1")
check("V=8 instance: direction error decreases monotonically",
      bool(np.all(np.diff(pq_small["dir_perp"][np.isfinite(pq_small["dir_perp"])]) < 0)),
      measured=[round(float(pq_small["dir_perp"][i]), 3) for i in idx_spec], paper="→ 0", item="A:Thm 1")
for name, label in (("gram_W", "W_λ W_λ^T"), ("gram_H", "H_λ^T H_λ")):
    g = pq[name][nz]
    record(f"a03_{name}_min", float(g[-1]))
    check(f"Thm 2: normalized Gram distance of {label} decreases monotonically", bool(np.all(np.diff(g) < 0)),
          measured=g[-1], paper="→ 0", item="A:Thm 2")

# pre-registered quantitative claims (rules above the path computation)
# the controls (rules above the path computation): the proxy in place of L^mm, random targets
S_tilde = geometry.centered_support(S)
S_small, L_in_small = small.S.toarray(), geometry.in_support_logits(small.P)
R_mm, R_mm_small = spectrum_matched_random(L_mm, seed=seed), spectrum_matched_random(L_mm_small, seed=seed)
T_in, T_in_small = random_f_target(L_in, S, seed=seed), random_f_target(L_in_small, S_small, seed=seed)
pq_ctrl = path_quantities(data, path, R_mm)  # the same path, the direction measured against R_mm
pq_small_ctrl = path_quantities(small, path_small, R_mm_small)
L_small_last = path_small[idx_spec[-1]][1]
slope_ratio = record("a03_slope_ratio", float(slope / np.linalg.norm(L_mm)))
slope_ctrl = record("a03_slope_ratio_proxy", float(slope / np.linalg.norm(S_tilde)))
path_claims.a03_slope.judge(slope_ratio, control=slope_ctrl)
ratio = record("a03_ce_ratio", float(pq["ce_gap"][-1] / (lams[-1] * mm_info["nuclear_norm"])))
ratio_ctrl = record("a03_ce_ratio_proxy", float(pq["ce_gap"][-1] / (lams[-1] * geometry.nuclear_norm(S_tilde))))
path_claims.a03_ce_ratio.judge(ratio, control=ratio_ctrl)
path_claims.a03_proj_syn.judge(float(pq["proj_error"][-1]),
                               control=float(np.linalg.norm(geometry.project_F(L_lam, S) - T_in)))
path_claims.a03_proj_small.judge(float(pq_small["proj_error"][idx_spec[-1]]),
                                 control=float(np.linalg.norm(geometry.project_F(L_small_last, S_small) - T_in_small)))
path_claims.a03_dir_small.judge(float(pq_small["dir_perp"][idx_spec[-1]]), note="reference is another random V=8 instance",
                                control=float(pq_small_ctrl["dir_perp"][idx_spec[-1]]))
c_small_ctrl = float(np.mean(pq_small_ctrl["dir_perp"][fit_small] * x[fit_small]))
path_claims.a03_c_small.judge(c_small, note="reference is another random V=8 instance", control=c_small_ctrl)
spread = record("a03_spread", float(np.ptp(pq["dir_perp"][fit] * x[fit]) / c_fit))
err_x_ctrl = pq_ctrl["dir_perp"][fit] * x[fit]
spread_ctrl = record("a03_spread_control", float(np.ptp(err_x_ctrl) / np.mean(err_x_ctrl)))
path_claims.a03_spread.judge(spread, control=spread_ctrl)
claims_table()

# %%
late = gd_steps_arr >= 100
i100 = int(np.argmax(late))
gd_ratio = {k: float(gq[k][-1] / gq[k][i100]) for k in ("ce_gap", "norm_L", "proj_error", "dir_perp", "gram_W", "gram_H")}
record("a03_gd_ce_final", float(gq["ce_gap"][-1]))
record("a03_gd_dir_final", float(gq["dir_perp"][-1]))
held = 1.0  # the control of three GD claims: the run held at its step-100 state, every ratio exactly 1


def gd_control(L: np.ndarray) -> tuple[float, float]:
    """(distance of P_F(L) to the random F target, direction error of L's F-perp part to R_mm)."""
    L_F = geometry.project_F(L, S)
    return float(np.linalg.norm(L_F - T_in)), float(direction_error(L - L_F, R_mm))


(proj_100, dir_100), (proj_end, dir_end) = gd_control(hist.L[i100]), gd_control(hist.L[-1])
gd_claims.a03_gd_ce.judge(gd_ratio["ce_gap"], control=held)
gd_claims.a03_gd_norm.judge(gd_ratio["norm_L"], control=held)
gd_claims.a03_gd_proj.judge(gd_ratio["proj_error"], control=proj_end / proj_100)
gd_claims.a03_gd_dir.judge(gd_ratio["dir_perp"], control=dir_end / dir_100)
gd_claims.a03_gd_gram.judge(max(gd_ratio["gram_W"], gd_ratio["gram_H"]), control=held)
print(f"chapter wall time: {run.elapsed():.1f} s")
claims_table()

# %% [markdown]
# ## What differs from the paper and why
#
# * **Statements reconstructed.** Theorems 1–2 are stated from the Fig. 2 caption, the abstract and paper
#   B's recap; their exact assumptions (e.g. $d\ge V$ versus $d\ge\operatorname{rank}$) are unknown.
# * **Fig. 2** is a schematic in the paper; we draw it as heatmaps of the actual matrices on the Synthetic
#   dataset, as the spec proposes. Our Synthetic data follow the authors' recipe with their seed but are
#   not identical to theirs ($n=$ {glue:text}`a03_n`, $\mathcal H=$ {glue:text}`a03_H:.4f` vs. the paper's
#   $n=72$, $\mathcal H=1.0166$; see the data chapter).
# * **Numbers.** The paper gives none for the path. The spec's sanity-check values were measured on a
#   different random $V=8$, $m=10$ instance; at this page's seed ours follow the same decay law with constant
#   $c=$ {glue:text}`a03_c_small:.2f` against the reference's $1.46$ (claim `a03_c_small`, in the claims table).
#   The constant depends on the random instance: the five-seed table at the end of the page rates this claim
#   fragile (it holds at fewer than four of the five seeds), so the match at this seed is not robust.
# * **Our additions** (labelled as such): the slope $\|\boldsymbol L^{\rm mm}\|_F$ of the norm growth, the
#   loss gap $\lambda\|\boldsymbol L^{\rm mm}\|_*$, and the explicit $1/\log(1/\lambda)$ rate of the direction.
# * **Gradient descent** is run for a few thousand steps at the `cpu` profile; it shows the same trends but
#   lags the path at equal norm, which we report rather than hide.

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (the sizes and steps of
# `notebooks/a03_regularization_path.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks
# were committed under `results/sweeps/a03-paper/` with their provenance (commit, machine, date, wall
# time). Below they stand beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.

# %%
from ntputils.chapter import (
    current_record,  # noqa: E402
    show_paper_profile,  # noqa: E402
)

paper_view = show_paper_profile("a03", current_record(), profile)
