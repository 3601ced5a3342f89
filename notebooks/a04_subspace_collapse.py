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
# # Subspace collapse and the centered-support proxy (Proposition 1, symmetric cases)
#
# {prf:ref}`thm-reg-path-logits` says that the diverging part of the logits points along
# $\boldsymbol L^{\rm mm}$, which depends on the support matrix $\boldsymbol S$ only. Two consequences are
# drawn in paper A {cite}`zhao2024implicit`:
#
# * **subspace collapse** (its Proposition 1): contexts followed by the *same set* of next tokens get the
#   same max-margin logits and embeddings, so in trained models their representations, "projected onto an
#   appropriate subspace", collapse to one direction (abstract);
# * **the proxy** ("P proxy", Fig. 1d): $\boldsymbol L^{\rm mm}$ is close to the centered support matrix
#   $\widetilde{\boldsymbol S}=(\mathbb I-\tfrac1V\mathbb 1\mathbb 1^\top)\boldsymbol S$, which is always
#   feasible for the max-margin program (so $\|\boldsymbol L^{\rm mm}\|_*\le\|\widetilde{\boldsymbol S}\|_*$)
#   and equal to it in symmetric cases (paper B {cite}`zhao2025semantics`, footnote: "formally proven in
#   symmetric cases and supported by extensive empirical evidence").
#
# The exact statements are not available (only paper A's abstract and summary are): Proposition 1 is **RECONSTRUCTED** from the
# abstract and paper B's recap; the statements of Propositions 2–3 are **UNKNOWN** — we test the two
# symmetric families the spec proposes, and label the claim as ours.
#
# ```{prf:proposition} Subspace collapse (RECONSTRUCTED)
# :label: prop-subspace-collapse
#
# If $\mathcal S_j=\mathcal S_{j'}$ then (a minimizer) $\boldsymbol L^{\rm mm}$ has identical columns $j$ and
# $j'$, hence $\boldsymbol h^{\rm mm}_j=\boldsymbol h^{\rm mm}_{j'}$. (Proof idea: swapping the two columns keeps
# feasibility and the nuclear norm; by convexity the average of the two solutions is optimal and has equal
# columns.) Consequently, along the regularization path the $\mathcal F^\perp$ components of the logits
# of such contexts, and the corresponding parts of their embeddings, align in direction.
# ```
#
# ```{prf:proposition} Symmetric cases (RECONSTRUCTED; the paper's Propositions 2–3 are UNKNOWN)
# :label: prop-symmetric-proxy
#
# $\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$ exactly when (i) the supports are one-hot and
# STEP-imbalanced (paper B App. A.4) or (ii) the supports are all $k$-subsets of $[V]$, one context each.
# ```
#
# **What "projected" means here (our choice).** The paper's subspace is not recoverable (UNKNOWN). We
# report three views of the trained context embeddings of NTP-UFM:
#
# 1. the raw $\boldsymbol h_j$ (what Fig. 1 plots);
# 2. $\boldsymbol h_j$ projected orthogonally onto $\operatorname{span}(\boldsymbol W_k^\top\boldsymbol U^{\rm mm})$, where
#    $\boldsymbol U^{\rm mm}$ holds the left singular vectors of $\boldsymbol L^{\rm mm}$: the embedding directions
#    through which the model produces the low-rank $\boldsymbol L^{\rm mm}$-component of its logits;
# 3. the $\mathcal F^\perp$ components of the logits, $\boldsymbol\ell_j-\mathcal P_{\mathcal F}(\boldsymbol\ell_j)$,
#    which remove the in-support log-odds — the only part in which same-support contexts *must* differ.

# %%
# checked by the runner before any work: the random-support claims compare at least one random size
LIMITS = {"len(random_sizes)": (1, None), "max_support": (1, None)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of a04_subspace_collapse.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
toy_V = 10       # vocabulary of the toy support matrix with duplicated columns
toy_distinct = 8 # number of distinct supports in the toy (each used twice)
ufm_d = 128      # NTP-UFM embedding dimension for the collapse run on Simplified TinyStories
ufm_steps = 2000  # gradient-descent steps of that run
ufm_lr = 10.0    # its step size
random_sizes = [[10, 20], [20, 50], [40, 100], [60, 200], [100, 300], [200, 600]]  # [V, m] of the random support matrices
max_support = 5  # random supports have 1..max_support tokens
zipf = 1.0       # Zipf exponent of the token frequencies of random supports
sts_solver = "fast"  # L^mm solver for Simplified TinyStories: "cvxpy" or "fast"
large_solver = "fast"  # L^mm solver for random sizes with V + m ≥ large_from
large_from = 150  # V + m from which large_solver is used (cvxpy/SCS below)

# %%
# %matplotlib inline

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

from ntputils import geometry, plots
from ntputils.analysis import metrics
from ntputils.analysis.baselines import offdiagonal_sim, random_sim, similarity_with_chance
from ntputils.analysis.controls import permuted_labels
from ntputils.analysis.convergence import support_group_labels, support_group_order, word_order
from ntputils.chapter import (
    above_chance,
    at_least,
    between,
    check,
    claims_table,
    compare_similarity,
    preregister,
    preregister_similarity,
    record,
    setup_chapter,
    within,
)
from ntputils.data.corpora.paper_a import paper_a_synthetic, paper_a_tinystories
from ntputils.data.synthetic import all_subsets_support, random_supports, step_imbalanced_support
from ntputils.geometry import max_margin_cached
from ntputils.training import ufm

# one torch thread: small matrices: intra-op threads only add overhead on a shared CPU
run = setup_chapter(globals(), torch_threads=1)
# what LIMITS cannot say, checked before any work: each random support matrix is [V, m], supports of 1 to
# max_support tokens of V (random_supports needs max_support < V)
bad_sizes = [size for size in random_sizes if not (isinstance(size, list) and len(size) == 2
                                                   and all(isinstance(v, int) for v in size)
                                                   and size[0] > max_support and size[1] >= 1)]
if not random_sizes or bad_sizes:
    raise ValueError(f"random_sizes entries must be [V, m] with V > max_support = {max_support} and m >= 1, "
                     f"got {bad_sizes or random_sizes}")


def lmm(S_case, solver: str) -> tuple[np.ndarray, dict]:
    """L^mm from the disk cache or the solver (the fast solver runs on the chapter's device)."""
    opts = {"device": run.device, "progress": False} if solver == "fast" else {}
    return max_margin_cached(S_case, solver=solver, **opts)


def max_duplicate_gap(A: np.ndarray, labels: np.ndarray) -> float:
    """Largest |entry| difference between a column of A and the first column of its group, relative to max|A|."""
    first = np.unique(labels, return_index=True)[1]
    return float(np.abs(A - A[:, first[labels]]).max() / np.abs(A).max())


# %% [markdown]
# ## 1. Identical supports give identical $\boldsymbol L^{\rm mm}$ columns
#
# We solve the max-margin program with cvxpy/SCS, which knows nothing about duplicated columns (the fast
# solver of the package merges them by construction, so it cannot be used as evidence here), on a toy
# support matrix built from `toy_distinct` random supports, each used by two contexts in shuffled order
# (random draws can coincide: the toy has {glue:text}`toy_groups` distinct supports among
# {glue:text}`toy_contexts` contexts), and on paper A's Synthetic dataset ({glue:text}`synthetic_groups`
# distinct supports among {glue:text}`synthetic_contexts` contexts).

# %% mystnb={"figure": {"caption": "A toy support matrix grouped by support, its max-margin logits L^mm with equal columns within groups, and corr(H^mm) with blocks of exact ones (Proposition 1; our own figure).", "name": "fig-a04-equal-columns"}, "image": {"alt": "Three heatmaps: a toy support matrix, its max-margin logits, and the correlation of the max-margin context embeddings."}}
rng = np.random.default_rng(seed)
S_distinct = random_supports(toy_V, toy_distinct, 1, 3, seed=seed)
S_toy = S_distinct[:, rng.permutation(np.repeat(np.arange(toy_distinct), 2))]
synthetic = paper_a_synthetic()
dup_cases = {"toy (duplicated random supports)": S_toy, "Synthetic dataset": synthetic.S.toarray()}
dup_results = {}
for name, S_case in dup_cases.items():
    L_case, info = lmm(S_case, "cvxpy")
    labels = support_group_labels(S_case)
    _, H_case = geometry.mm_embeddings(L_case)
    dup_results[name] = {"labels": labels, "L": L_case, "gap_L": max_duplicate_gap(L_case, labels),
                         "gap_H": max_duplicate_gap(H_case, labels), "info": info}
    print(f"{name}: V x m = {S_case.shape}, {labels.max() + 1} distinct supports, "
          f"max column gap within groups: L^mm {dup_results[name]['gap_L']:.1e}, H^mm {dup_results[name]['gap_H']:.1e}"
          f" ({info['solver']}, violation {info['max_violation']:.1e})")

toy = dup_results["toy (duplicated random supports)"]
record("toy_groups", int(toy["labels"].max() + 1))
record("toy_contexts", int(S_toy.shape[1]))
record("synthetic_groups", int(dup_results["Synthetic dataset"]["labels"].max() + 1))
record("synthetic_contexts", int(synthetic.S.shape[1]))
order_toy = np.argsort(toy["labels"], kind="stable")
fig, axes = plt.subplots(1, 3, figsize=(12.8, 4.0), layout="constrained")
plots.heatmap(axes[0], S_toy[:, order_toy], cmap="hot", vmin=0, vmax=1, title="toy S (contexts grouped by support)",
              xlabel="context j", ylabel="word z", colorbar="in support")
plots.logit_heatmap(axes[1], toy["L"][:, order_toy], title="L^mm (cvxpy): equal columns within groups")
plots.corr_heatmap(axes[2], geometry.mm_embeddings(toy["L"])[1], order=order_toy,
                   title="corr(H^mm): blocks of exact 1s", kind="context")
plt.show()

# %% [markdown]
# ## 2. Collapse in a trained NTP-UFM (Simplified TinyStories)
#
# Paper A's Simplified TinyStories (`ntputils.data.corpora.paper_a.paper_a_tinystories`) is built so that
# every corpus context has tense and synonym variants that inherit its next-token support: many groups of
# contexts with identical supports but different next-token counts. We train NTP-UFM ($d=128\ge V$,
# $\lambda=0$, plain gradient descent, float64) and follow the within-group cosine similarities.
#
# **Rules, fixed before the run.** The paper gives no number for the collapse, only that same-support
# contexts end at cosine $\approx 1$ (the blocks of Fig. 1). We read "$\approx 1$" as a within-group mean
# cosine of at least 0.9, for the $\mathcal F^\perp$ logits (the view in which Proposition 1 predicts
# collapse) and for the projected embeddings. As a chance level for the blocks we take the mean cosine
# between contexts of *different* groups, which must stay at least 0.5 below the within-group mean (half
# the range of a cosine). Collapse must also be monotone late in training: no decrease of the
# within-group mean cosine of the $\mathcal F^\perp$ logits between logged steps $\ge 50$.
#
# **Negative control, fixed before the run.** Every collapse claim is measured a second time on the same trained
# model with the support-group labels permuted over the contexts (one seeded permutation, every group keeps its
# size): the groups then no longer share a support, so Proposition 1 predicts nothing for them. The same rule
# (and, for the block claims, the same between-group chance level) is judged on that value; a rule the permuted
# groups also pass cannot tell collapse by support from any other grouping and reads "cannot fail".

# %%
PERMUTED = "support-group labels permuted over the contexts (group sizes kept, same trained model)"
collapse = preregister({
    "a04_perp_within": ("trained NTP-UFM: within-group mean cosine of F^perp logits ≈ 1",
                        at_least(0.9, "Fig. 1: same-support contexts at cosine ≈ 1"), "A:Prop 1",
                        "≈ 1 (Fig. 1 blocks)"),
    "a04_perp_blocks": ("F^perp logits: within-group mean exceeds the between-group mean (chance) by 0.5",
                        above_chance(0.5), "A:Prop 1"),
    "a04_perp_monotone": ("collapse increases late in training: smallest change of the within-group mean "
                          "between logged steps >= 50", at_least(0.0, "monotone"), "A:Prop 1", "-> 1"),
    "a04_proj_within": ("embeddings projected on span(W^T U^mm): within-group mean cosine ≈ 1",
                        at_least(0.9, "Fig. 1: same-support contexts at cosine ≈ 1"), "A:Prop 1",
                        "≈ 1 (subspace UNKNOWN)"),
    "a04_proj_blocks": ("projected embeddings: within-group mean exceeds the between-group mean (chance) by 0.5",
                        above_chance(0.5), "A:Prop 1"),
}, controls={key: PERMUTED for key in ("a04_perp_within", "a04_perp_blocks", "a04_perp_monotone",
                                       "a04_proj_within", "a04_proj_blocks")})

# %% mystnb={"figure": {"caption": "Collapse of same-support contexts in NTP-UFM trained on Simplified TinyStories: mean cosine within and between support groups per step, and the final correlation heatmaps (our own figure).", "name": "fig-a04-collapse"}, "image": {"alt": "A line plot of cosine similarity over training and two correlation heatmaps of the context embeddings."}}
sts = paper_a_tinystories()
S_sts = sts.S.toarray()
labels_sts = support_group_labels(sts.S)
order_sts, _ = support_group_order(sts.S)
print(sts, f"| {labels_sts.max() + 1} distinct supports; paper: V = 104, m = 403, n = 5110, H = 1.6597")
record("sts_V", int(sts.V), paper=104)
record("sts_m", int(sts.m), paper=403)
hist = ufm.train(sts, d=ufm_d, loss="ce", lam=0.0, steps=ufm_steps, lr=ufm_lr, optimizer="gd",
                 log_steps=12, seed=seed, device=run.device, progress=False)
L_mm_sts, _ = lmm(S_sts, sts_solver)
U_mm_sts, _, _ = geometry.svd_factors(L_mm_sts, rank_tol=1e-6)
labels_ctrl = permuted_labels(labels_sts, seed=seed)  # the negative control: groups not defined by support
views = {"raw h_j": [], "h_j projected on span(W^T U^mm)": [], "F^perp logits l_j − P_F(l_j)": []}
views_ctrl = {"h_j projected on span(W^T U^mm)": [], "F^perp logits l_j − P_F(l_j)": []}
for W, H, L in zip(hist.W, hist.H, hist.L, strict=True):
    views["raw h_j"].append(metrics.group_cosine_stats(H, labels_sts))
    Q, _ = np.linalg.qr(W.T @ U_mm_sts)  # orthonormal basis of the embedding directions that make L^mm
    for name, A in (("h_j projected on span(W^T U^mm)", Q @ (Q.T @ H)),
                    ("F^perp logits l_j − P_F(l_j)", L - geometry.project_F(L, S_sts))):
        views[name].append(metrics.group_cosine_stats(A, labels_sts))
        views_ctrl[name].append(metrics.group_cosine_stats(A, labels_ctrl))
print(f"NTP-UFM: {ufm_steps} GD steps in {hist.meta['seconds']:.1f} s, final CE - H = {hist.final['ce_minus_H']:.2e}")
for name, stats in views.items():
    print(f"  {name:32s} within-group mean cos {stats[-1]['within_mean']:.4f}, min {stats[-1]['within_min']:.4f}; "
          f"between groups {stats[-1]['between_mean']:.4f}")
pd.DataFrame({name: {"within-group mean": st[-1]["within_mean"], "within-group min": st[-1]["within_min"],
                     "between-group mean (chance)": st[-1]["between_mean"]} for name, st in views.items()}).T

fig, panels = plt.subplot_mosaic([[0, 0], [1, 2]], figsize=(12, 10.5), layout="constrained",
                                 height_ratios=[0.8, 1])
axes = [panels[i] for i in range(3)]
steps_axis = np.asarray(hist.snap_steps) + 1
for i, (name, stats) in enumerate(views.items()):
    axes[0].semilogx(steps_axis, [s["within_mean"] for s in stats], "o-", color=f"C{i}", ms=3,
                     label=f"{name}: within-group mean")
    axes[0].semilogx(steps_axis, [s["within_min"] for s in stats], ":", color=f"C{i}", label="   within-group min")
    axes[0].semilogx(steps_axis, [s["between_mean"] for s in stats], "--", color=f"C{i}", alpha=0.5,
                     label="   between-group mean")
axes[0].set(xlabel="GD step k + 1", ylabel="cosine similarity", title="same-support contexts collapse", ylim=(-0.7, 1.02))
axes[0].legend(fontsize=6.5, ncol=1)
axes[0].grid(alpha=0.3)
W_fin, H_fin, L_fin = hist.W[-1], hist.H[-1], hist.L[-1]
Q_fin, _ = np.linalg.qr(W_fin.T @ U_mm_sts)
plots.corr_heatmap(axes[1], H_fin, order=order_sts, title="corr(H_k), raw, final step (grouped by support)")
plots.corr_heatmap(axes[2], Q_fin.T @ H_fin, order=order_sts,
                   title="corr of h_j projected on span(W^T U^mm), final step")
plt.show()

# %% [markdown]
# The table above gives, for each view, the within-group and between-group mean cosines at the final step;
# the pre-registered rules are judged in the comparisons at the end of the page. Where the raw embeddings
# show weaker blocks than the other two views, two reasons apply: they also carry (i) the in-support log-odds, which differ between
# same-support contexts and stay bounded while the $\boldsymbol L^{\rm mm}$ part grows only like $\log k$, and
# (ii) with $d>V$, the part of the random initialization outside the row space of $\boldsymbol W$, which no
# gradient ever moves. This is our concrete reading of "when projected onto an appropriate subspace".
#
# ## 3. Symmetric cases: $\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$

# %%
symmetric = {
    "STEP one-hot V=6, R=3": step_imbalanced_support(6, 3),
    "STEP one-hot V=10, R=5": step_imbalanced_support(10, 5),
    "all 2-subsets of [5]": all_subsets_support(5, 2),
    "all 2-subsets of [8]": all_subsets_support(8, 2),
    "all 3-subsets of [6] (beyond the spec)": all_subsets_support(6, 3),
}
sym_rows = []
for name, S_case in symmetric.items():
    L_case, info = lmm(S_case, "cvxpy")
    St = geometry.centered_support(S_case)
    sym_rows.append({"case": name, "shape": S_case.shape, "dist": metrics.normalized_distance(L_case, St),
                     "rel_frob": np.linalg.norm(L_case - St) / np.linalg.norm(St),
                     "nuc_mm": info["nuclear_norm"], "nuc_S": geometry.nuclear_norm(St)})
print(f"{'case':40s} {'V x m':>8} {'norm. dist':>11} {'||L-S~||/||S~||':>15} {'||L^mm||_*':>11} {'||S~||_*':>9}")
for r in sym_rows:
    print(f"{r['case']:40s} {str(r['shape']):>8} {r['dist']:11.1e} {r['rel_frob']:15.1e} {r['nuc_mm']:11.5f} "
          f"{r['nuc_S']:9.5f}")

# %% [markdown]
# ## 4. Random and real supports: how good is the proxy?
#
# Away from symmetry $\widetilde{\boldsymbol S}$ is feasible but not optimal. We measure the normalized
# distance $\big\|\tfrac{\boldsymbol L^{\rm mm}}{\|\boldsymbol L^{\rm mm}\|_F}-\tfrac{\widetilde{\boldsymbol S}}{\|\widetilde{\boldsymbol S}\|_F}\big\|_F$,
# the nuclear norms, the ranks and the `sim` of the induced geometries, for random supports with Zipf-like
# token frequencies (sizes 1–`max_support`) of growing size and for the two real datasets. Ranks count
# singular values above $10^{-6}\sigma_{\max}$. Beside each `sim` (H: `sim(H^mm, S~)`, W:
# `sim(W^mm^T, S~^T)`) the table gives its off-diagonal value (`off`) and the mean `sim` of 10 random Gaussian
# matrices of the same shape (`rnd`, the chance level).
#
# **Rules, fixed before the computation.** The authors' console logs (not the paper's text) report on their
# Simplified TinyStories ($m=403$, $V=104$) the normalized distance 0.163, $\|\boldsymbol L^{\rm mm}\|_*=197.88$
# against $\|\widetilde{\boldsymbol S}\|_*=199.14$ (ratio 0.9937), and ranks 30–31 against 31. Our corpus is a rebuild
# ($m$, $V$ differ by a few percent: a different TinyStories excerpt), so we allow a tolerance of about 20% of the
# authors' distance, `abs_tol=0.03`: the authors' own re-run of their data recipe (a different random draw
# of the counts) moved the entropy from 1.6597 to 1.6156, i.e. by 3%, and a different corpus excerpt should
# move a support-structure quantity by more than a redrawing of counts. For the nuclear-norm ratio, which is
# at most 1 by feasibility, we allow `abs_tol=0.01`, about the size of the authors' own gap between the two
# norms (0.6%): a ratio off by more would change the conclusion that the norms nearly coincide.
# The rank deficit $\mathrm{rank}\,\widetilde{\boldsymbol S}-\mathrm{rank}\,\boldsymbol L^{\rm mm}$ must be 0 or 1 as in the
# authors' logs. For random supports the paper's statement "close but not exact" becomes: the distance is at
# least 0.01 (far above the solvers' $10^{-5}$ certified precision), and $\mathrm{rank}\,\boldsymbol L^{\rm mm}
# \le\mathrm{rank}\,\widetilde{\boldsymbol S}$ at every size (smallest rank deficit $\ge 0$).
#
# **Negative controls, fixed before the computation.** The three STS claims are measured again on the random
# support matrix of this page whose size $V+m$ is nearest to that of our STS (chosen by that rule, whatever its
# values): Zipf-random supports have none of the corpus's structure, so if the same rule holds there, it cannot
# tell whether the proxy's closeness on STS is a property of the data. "Not exact" on random supports is
# measured again on the symmetric cases above (their smallest normalized distance), where the proxy is
# exact by {prf:ref}`prop-symmetric-proxy`. The rank claim is measured again with a Gaussian matrix of each
# size in place of $\boldsymbol L^{\rm mm}$ (smallest $\mathrm{rank}\,\widetilde{\boldsymbol S}-\mathrm{rank}\,\boldsymbol G$):
# a matrix that is not the solution of the nuclear-norm program has no reason to keep the proxy's rank.

# %%
NEAREST = "the same quantity for the random support matrix nearest to STS in size V + m"
proxy_claims = preregister({
    "a04_sts_dist": ("STS: normalized distance(L^mm, S~)", within(0.163, abs_tol=0.03), "A:proxy"),
    "a04_sts_nuc_ratio": ("STS: ||L^mm||_* / ||S~||_*", within(197.88 / 199.14, abs_tol=0.01), "A:proxy"),
    "a04_sts_rank_deficit": ("STS: rank(S~) - rank(L^mm) (paper: 31 - 30..31)",
                             between(0, 1, "paper: 30-31 vs 31"), "A:proxy", "31 - (30..31)"),
    "a04_random_not_exact": ("random supports: the proxy is not exact (smallest normalized distance)",
                             at_least(0.01, "far above the 1e-5 solver precision"), "A:proxy", "close but not exact"),
    "a04_random_rank": ("random supports: rank(L^mm) <= rank(S~) (smallest rank deficit over sizes)",
                        at_least(0, "paper: rank(L^mm) <= rank(S~)"), "A:proxy"),
}, controls={"a04_sts_dist": NEAREST, "a04_sts_nuc_ratio": NEAREST, "a04_sts_rank_deficit": NEAREST,
             "a04_random_not_exact": "the smallest normalized distance of the symmetric cases (proxy exact there)",
             "a04_random_rank": "a Gaussian matrix of each size in place of L^mm (smallest rank(S~) - rank(G))"})


# %%
def proxy_report(S_case, solver: str) -> dict:
    """L^mm vs the proxy S~ for one support matrix."""
    L_case, info = lmm(S_case, solver)
    St = geometry.centered_support(S_case)
    W_case, H_case = geometry.mm_embeddings(L_case)
    s_S = np.linalg.svd(St, compute_uv=False)
    return {"V": S_case.shape[0], "m": S_case.shape[1], "dist": metrics.normalized_distance(L_case, St),
            "nuc_mm": info["nuclear_norm"], "nuc_S": float(s_S.sum()), "rank_mm": W_case.shape[1],
            "rank_S": int((s_S > 1e-6 * s_S[0]).sum()), "sim_H": metrics.sim(H_case, St),
            "sim_W": metrics.sim(W_case.T, St.T), "off_H": offdiagonal_sim(H_case, St),
            "off_W": offdiagonal_sim(W_case.T, St.T),
            "chance_H": random_sim(H_case.shape, St, draws=10, seed=seed)[0],
            "chance_W": random_sim(W_case.T.shape, St.T, draws=10, seed=seed)[0], "solver": info["solver"], "seconds": info["seconds"],
            "cached": info["cached"], "violation": info["max_violation"], "gap": info["rel_gap"],
            "converged": info["converged"],
            "L": L_case, "W": W_case, "H": H_case, "S_tilde": St}


proxy = {}
for V_case, m_case in random_sizes:
    S_case = random_supports(V_case, m_case, 1, max_support, seed=seed, zipf_exponent=zipf)
    solver = large_solver if V_case + m_case >= large_from else "cvxpy"
    proxy[f"random {V_case}x{m_case}"] = proxy_report(S_case, solver)
proxy["Synthetic (paper A)"] = proxy_report(synthetic.S.toarray(), "cvxpy")
proxy["Simplified TinyStories (paper A)"] = proxy_report(S_sts, sts_solver)

print(f"{'support matrix':34s} {'V':>5} {'m':>5} {'dist':>6} {'||L^mm||_*':>10} {'||S~||_*':>9} {'rk L^mm':>7} "
      f"{'rk S~':>5} {'sim H':>6} {'off H':>6} {'rnd H':>6} {'sim W':>6} {'off W':>6} {'rnd W':>6} {'solver':>10} {'s':>6}")
for name, r in proxy.items():
    print(f"{name:34s} {r['V']:5d} {r['m']:5d} {r['dist']:6.3f} {r['nuc_mm']:10.2f} {r['nuc_S']:9.2f} {r['rank_mm']:7d} "
          f"{r['rank_S']:5d} {r['sim_H']:6.3f} {r['off_H']:6.3f} {r['chance_H']:6.3f} {r['sim_W']:6.3f} "
          f"{r['off_W']:6.3f} {r['chance_W']:6.3f} {r['solver']:>10} "
          f"{'cached' if r['cached'] else round(r['seconds'], 1):>6}")
print("paper (STS, m=403, V=104): ||L^mm||_* = 197.88, ||S~||_* = 199.14, rank 30-31 vs 31, distance 0.163")

# %% mystnb={"figure": {"caption": "How close the proxy S~ is to L^mm on random and real supports: normalized distance, ratio of nuclear norms and ranks against the matrix size (our own figure).", "name": "fig-a04-proxy-quality"}, "image": {"alt": "Three scatter plots against the support-matrix size: distance, nuclear-norm ratio and ranks."}}
rand_names = [n for n in proxy if n.startswith("random")]
size = np.array([proxy[n]["V"] + proxy[n]["m"] for n in rand_names])
fig, axes = plt.subplots(1, 3, figsize=(12.8, 4.4), layout="constrained")
axes[0].semilogx(size, [proxy[n]["dist"] for n in rand_names], "o-", label="random (Zipf) supports")
axes[1].semilogx(size, [proxy[n]["nuc_mm"] / proxy[n]["nuc_S"] for n in rand_names], "o-", label="random")
axes[2].semilogx(size, [proxy[n]["rank_mm"] / proxy[n]["V"] for n in rand_names], "o-", label="rank(L^mm) / V")
axes[2].semilogx(size, [proxy[n]["rank_S"] / proxy[n]["V"] for n in rand_names], "s--", label="rank(S~) / V")
for name, marker in (("Synthetic (paper A)", "^"), ("Simplified TinyStories (paper A)", "*")):
    r = proxy[name]
    axes[0].plot(r["V"] + r["m"], r["dist"], marker, ms=11, label=name)
    axes[1].plot(r["V"] + r["m"], r["nuc_mm"] / r["nuc_S"], marker, ms=11, label=name)
    axes[2].plot(r["V"] + r["m"], r["rank_mm"] / r["V"], marker, ms=11, label=f"{name}: rank(L^mm) / V")
axes[0].plot(104 + 403, 0.163, "rx", ms=10, label="paper: STS")
axes[1].plot(104 + 403, 197.88 / 199.14, "rx", ms=10, label="paper: STS")
axes[0].set(ylabel="normalized distance(L^mm, S~)", title="distance of the proxy from L^mm")
axes[1].set(ylabel="||L^mm||_* / ||S~||_*", title="nuclear norms (S~ is feasible: ratio ≤ 1)")
axes[2].set(ylabel="rank / V", title="ranks")
# one labelled tick per random support matrix (V x m, at x = V + m on a log axis), matching the table rows
size_labels = [f"{proxy[n]['V']}×{proxy[n]['m']}" for n in rand_names]
for ax in axes:
    ax.set_xticks(size, size_labels, rotation=35, fontsize=7)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("random support matrix V × m (log axis: position V + m)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# ## 5. Geometry of theory vs. proxy on Simplified TinyStories (Fig. 1c vs 1d)
#
# Contexts are ordered by support group, words by the first group that uses them.
#
# **Rule, fixed before the computation.** Fig. 1 (c) and (d) look near-identical; the paper gives no
# number. `sim` includes the diagonals of both correlation matrices, which are 1 for any matrix, so a random
# matrix of the same shape already scores well above 0. We require `sim` to exceed the mean of 20 random
# Gaussian matrices of the same shape by 0.1, and the off-diagonal `sim` (diagonals removed) to exceed its
# own random mean by 0.1. Every word of the STS vocabulary occurs as a next token (no all-zero row of
# $\boldsymbol S$), so no word needs to be excluded.

# %%
sim_claims = preregister_similarity({f"a04_sts_sim_{side}": (f"STS: {label} above chance", 0.1, ["A:proxy", "A:Fig 1"],
                                                            "near-identical (Fig. 1c vs 1d)")
                                     for side, label in (("H", "sim(H^mm, S~)"), ("W", "sim(W^mm^T, S~^T)"))})

# %%
r = proxy["Simplified TinyStories (paper A)"]
sim_reps = {"H": similarity_with_chance(r["H"], r["S_tilde"], draws=20, seed=seed),
            "W": similarity_with_chance(r["W"].T, r["S_tilde"].T, draws=20, seed=seed)}
pd.DataFrame([sim_reps["H"].row("sim(H^mm, S~)"), sim_reps["W"].row("sim(W^mm^T, S~^T)")]).set_index("claim")

# %% mystnb={"figure": {"caption": "Correlations of contexts (left) and words (right) for the theory (top row) and the proxy (bottom row) on Simplified TinyStories; reproduces paper A, Fig. 1 (c) and (d), one row per source.", "name": "fig-a04-theory-vs-proxy"}, "image": {"alt": "Heatmaps of context and word correlations for the max-margin theory and the proxy."}}
words_sts = word_order(sts.S, order_sts)
fig = plots.geometry_comparison(
    {"theory: H^mm, W^mm": (r["H"], r["W"].T), "proxy: S~": (r["S_tilde"], r["S_tilde"].T)},
    context_order=order_sts, word_order=words_sts, word_labels=[sts.token_str(z) for z in range(sts.V)],
    max_labels=60, panel_size=5.5, suptitle="Simplified TinyStories: corr of contexts (left) and words (right)")
plt.show()

# %% [markdown]
# ## Checks (mathematical facts) and comparisons (the paper's empirical claims)
#
# Checks fail the build; comparisons report `reproduced` or `deviates` by the rules registered above.

# %%
for name, res in dup_results.items():
    check(f"Prop. 1 ({name}): identical supports -> identical L^mm columns", res["gap_L"] < 1e-6,
          measured=res["gap_L"], paper="identical", tol="1e-6 of max|L^mm|", item="A:Prop 1")
    check(f"Prop. 1 ({name}): identical supports -> identical H^mm columns", res["gap_H"] < 1e-6,
          measured=res["gap_H"], paper="identical", tol="1e-6 of max|H^mm|", item="A:Prop 1")
final = {name: stats[-1] for name, stats in views.items()}
perp = final["F^perp logits l_j − P_F(l_j)"]
proj = final["h_j projected on span(W^T U^mm)"]
record("perp_within", perp["within_mean"])
record("perp_between", perp["between_mean"])
record("proj_within", proj["within_mean"])
record("raw_within", final["raw h_j"]["within_mean"])
perp_ctrl = record("perp_within_control", views_ctrl["F^perp logits l_j − P_F(l_j)"][-1]["within_mean"])
proj_ctrl = record("proj_within_control", views_ctrl["h_j projected on span(W^T U^mm)"][-1]["within_mean"])
collapse.a04_perp_within.judge(perp["within_mean"], control=perp_ctrl)
collapse.a04_perp_blocks.judge(perp["within_mean"], chance=perp["between_mean"], control=perp_ctrl)
perp_curve = np.asarray([s["within_mean"] for s in views["F^perp logits l_j − P_F(l_j)"]])
perp_curve_ctrl = np.asarray([s["within_mean"] for s in views_ctrl["F^perp logits l_j − P_F(l_j)"]])
late = np.asarray(hist.snap_steps) >= 50
if late.sum() >= 2:
    collapse.a04_perp_monotone.judge(float(np.diff(perp_curve[late]).min()),
                                     control=float(np.diff(perp_curve_ctrl[late]).min()))
else:  # a run too short for the rule's window (e.g. -p ufm_steps=10): nothing to judge, said so
    collapse.a04_perp_monotone.judge(None, note=f"needs two logged steps >= 50; this run logged "
                                                f"{int(late.sum())} (ufm_steps = {ufm_steps})")
collapse.a04_proj_within.judge(proj["within_mean"], note=f"raw embeddings: {final['raw h_j']['within_mean']:.3f}",
                               control=proj_ctrl)
collapse.a04_proj_blocks.judge(proj["within_mean"], chance=proj["between_mean"], control=proj_ctrl)
claims_table()

# %%
for r_sym in sym_rows:
    check(f"L^mm = S~ exactly: {r_sym['case']}", r_sym["rel_frob"] < 1e-6, measured=r_sym["rel_frob"],
          paper="L^mm = S~ (symmetric case)", tol="1e-6 relative", item="A:Prop 1")
for name, r_case in proxy.items():
    check(f"{name}: ||L^mm||_* <= ||S~||_* (S~ is feasible)", r_case["nuc_mm"] <= r_case["nuc_S"] * (1 + 1e-6),
          measured=f"{r_case['nuc_mm']:.3f} vs {r_case['nuc_S']:.3f}", paper="always", sanity=True)
gaps = {n: r_case["gap"] for n, r_case in proxy.items() if np.isfinite(r_case["gap"])}
check("every L^mm solve converged and is feasible (SCS optimal / fast solver duality gap < 1e-5; violation < 1e-6)",
      all(r_case["converged"] and r_case["violation"] < 1e-6 for r_case in proxy.values())
      and all(g < 1e-5 for g in gaps.values()),
      measured={n: f"{g:.1e}" for n, g in gaps.items()}, paper="(cvxpy/SCS in the paper)", tol="gap 1e-5",
      item="A:proxy")
rand_d = [proxy[n]["dist"] for n in rand_names]
sym_min = record("sym_min_dist", float(min(r_sym["dist"] for r_sym in sym_rows)))
proxy_claims.a04_random_not_exact.judge(float(min(rand_d)), control=sym_min,
                                        note="distances per size: " + ", ".join(f"{v:.3f}" for v in rand_d))
rng_ctrl = np.random.default_rng(seed)
gauss_deficit = min(proxy[n]["rank_S"] - int(np.linalg.matrix_rank(rng_ctrl.standard_normal((proxy[n]["V"], proxy[n]["m"]))))
                    for n in rand_names)
proxy_claims.a04_random_rank.judge(int(min(proxy[n]["rank_S"] - proxy[n]["rank_mm"] for n in rand_names)),
                                   control=int(gauss_deficit),
                                   note=", ".join(f"{proxy[n]['rank_mm']}/{proxy[n]['rank_S']}" for n in rand_names))
r = proxy["Simplified TinyStories (paper A)"]
# the control of the three STS claims: the random support matrix nearest to STS in V + m (rule fixed above)
near = min(rand_names, key=lambda n: abs(proxy[n]["V"] + proxy[n]["m"] - (r["V"] + r["m"])))
r_near = proxy[near]
record("near_V", int(r_near["V"]))
record("near_m", int(r_near["m"]))
record("near_dist", r_near["dist"])
record("near_nuc_ratio", r_near["nuc_mm"] / r_near["nuc_S"])
ratio = record("sts_nuc_ratio", r["nuc_mm"] / r["nuc_S"], paper=197.88 / 199.14)
record("sts_dist", r["dist"], paper=0.163)
record("sts_rank_mm", int(r["rank_mm"]))
record("sts_rank_S", int(r["rank_S"]))
REASON = (f"our Simplified TinyStories has m={sts.m}, V={sts.V} (paper: 403, 104): the authors' recipe, "
          "WordNet step included, on a different TinyStories excerpt (theirs is not public; see a05)")
proxy_claims.a04_sts_nuc_ratio.judge(ratio, note=REASON, control=r_near["nuc_mm"] / r_near["nuc_S"])
proxy_claims.a04_sts_dist.judge(r["dist"], note=REASON, control=r_near["dist"])
proxy_claims.a04_sts_rank_deficit.judge(int(r["rank_S"] - r["rank_mm"]), note=REASON,
                                        control=int(r_near["rank_S"] - r_near["rank_mm"]))
for side in ("H", "W"):
    rep_s = sim_reps[side]
    record(f"sts_sim_{side}", rep_s.value)
    record(f"sts_sim_{side}_off", rep_s.offdiagonal)
    record(f"sts_sim_{side}_chance", rep_s.random_mean)
    compare_similarity(sim_claims[f"a04_sts_sim_{side}"], rep_s)
print(f"chapter wall time: {run.elapsed():.1f} s")
claims_table()

# %% [markdown]
# ## What differs from the paper and why
#
# * **Statements.** Proposition 1 is reconstructed; what "appropriate subspace" means is UNKNOWN, so we
#   show three views and say which one collapses. The paper's Propositions 2–3 are UNKNOWN; the symmetric
#   families tested are the spec's proposal (plus 3-subsets, which also give $\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$).
# * **Data.** Our Simplified TinyStories follows the authors' recipe on the TinyStories excerpt we have
#   ($V=$ {glue:text}`sts_V`, $m=$ {glue:text}`sts_m` vs. the paper's $104$, $403$): the authors' 2,000-line file is not
#   available (the recipe, WordNet step included, runs on our excerpt; see a05). Our proxy distance is {glue:text}`sts_dist:.3f` against the authors' logged 0.163 (rule: within 0.03),
#   our nuclear-norm ratio {glue:text}`sts_nuc_ratio:.4f` against the authors' logged 0.9937, and our ranks
#   {glue:text}`sts_rank_mm` against {glue:text}`sts_rank_S` (authors' logs: 30–31 against 31); a comparison that
#   misses its rule is reported above as `deviates`, with this reason.
# * **Controls.** With the support-group labels permuted, the within-group mean cosine of the final
#   $\mathcal F^\perp$ logits is {glue:text}`perp_within_control:.3f` and that of the projected embeddings
#   {glue:text}`proj_within_control:.3f` (support groups: {glue:text}`perp_within:.3f` and {glue:text}`proj_within:.3f`).
#   The random support matrix nearest to STS in size ({glue:text}`near_V` × {glue:text}`near_m`) has proxy distance
#   {glue:text}`near_dist:.3f` and nuclear-norm ratio {glue:text}`near_nuc_ratio:.4f`; the symmetric cases' smallest
#   distance is {glue:text}`sym_min_dist:.1e`. Where a control passes the same rule, the claims table reads
#   "cannot fail": that rule does not distinguish the paper's mechanism from its absence, and the claim is no
#   evidence for it.
# * **Solvers.** The paper used cvxpy/SCS throughout. At the `cpu` profile the STS problem goes to the
#   package's certified first-order solver (cvxpy/SCS needs minutes here); results are cached on disk by a hash
#   of $\boldsymbol S$. The duplicated-support check uses cvxpy only, because the fast solver merges equal
#   columns by construction.
# * **Training.** NTP-UFM is trained by plain gradient descent (the authors used AdamW with a tiny weight
#   decay) for `ufm_steps` steps; the collapse is measured, not assumed.

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (the sizes and steps of
# `notebooks/a04_subspace_collapse.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks
# were committed under `results/sweeps/a04-paper/` with their provenance (commit, machine, date, wall
# time). Below they stand beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.

# %%
from ntputils.chapter import (
    current_record,  # noqa: E402
    show_paper_profile,  # noqa: E402
)

paper_view = show_paper_profile("a04", current_record(), profile)
