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
# # Beyond the papers: theory vs proxy at paper B's scale
#
# Paper B {cite}`zhao2025semantics` reads concepts off the SVD of the centered support matrix
# $\widetilde{\boldsymbol S}=(\mathbb I-\tfrac1V\mathbb 1\mathbb 1^\top)\boldsymbol S$ of real text (the
# Simplified TinyStories and Simplified WikiText of chapter b04). Paper A {cite}`zhao2024implicit` says
# what the logits of a model trained to the entropy floor converge to in direction: the max-margin logits
# $\boldsymbol L^{\rm mm}$, the solution of the nuclear-norm program (paper A, Eq. (NTP-SVM))
#
# $$\boldsymbol L^{\rm mm}=\arg\min_{\boldsymbol L}\|\boldsymbol L\|_*\quad\text{s.t.}\quad
#   (\boldsymbol e_z-\boldsymbol e_{z'})^\top\boldsymbol L\boldsymbol e_j\ge1\ \ \text{and}\ \
#   (\boldsymbol e_z-\boldsymbol e_{z''})^\top\boldsymbol L\boldsymbol e_j=0
#   \quad\forall j,\ z,z''\in\mathcal S_j,\ z'\notin\mathcal S_j,$$
#
# whose SVD factors are the theory's geometry of words and contexts; $\widetilde{\boldsymbol S}$ is its
# cheap **proxy** (paper A, Sec. 5). Paper B never computes $\boldsymbol L^{\rm mm}$ at its own scale
# ($V=1{,}000$ next tokens, $m=10{,}000$ contexts), because a generic conic solver cannot. The certified
# first-order solver of this package can (`ntputils.geometry.maxmargin_admm`, relative duality gap at most
# $10^{-6}$), so this chapter asks the question neither paper answers: **are the proxy's concepts the
# theory's concepts on real text?**
#
# **Profiles.** The `cpu` profile (the book) uses the `V` most frequent next tokens and `m` contexts of
# the same recipe at a reduced size; the `paper` profile uses paper B's sizes. Its table is committed
# (the last section shows it beside this run).
#
# **What we compare**, per dataset, with $\widetilde{\boldsymbol S}=\boldsymbol U_s\boldsymbol\Sigma_s
# \boldsymbol V_s^\top$ and $\boldsymbol L^{\rm mm}=\boldsymbol U_{\rm mm}\boldsymbol\Sigma_{\rm mm}
# \boldsymbol V_{\rm mm}^\top$:
#
# * **principal angles** between the top-$k$ word subspaces (columns of $\boldsymbol U$) and between the
#   top-$k$ context subspaces (rows of $\boldsymbol V^\top$), $k=1,\dots,$ `k_max`, summarized by
#   $\mathrm{overlap}_k=\frac1k\|\boldsymbol U_{s,k}^\top\boldsymbol U_{{\rm mm},k}\|_F^2$ (the mean squared
#   cosine; 1 = the same subspace). Chance: a random $k$-dimensional subspace has expected overlap $k/n$
#   ($n=V-1$ for words, orthogonal to $\mathbb 1$ as both $\boldsymbol U$'s are; $n=m$ for contexts)
#   (`ntputils.analysis.subspaces`);
# * the **direction distance** $\|\widetilde{\boldsymbol S}/\|\widetilde{\boldsymbol S}\|_F-\boldsymbol
#   L^{\rm mm}/\|\boldsymbol L^{\rm mm}\|_F\|_F$ (paper A's proxy distance) and how the **nuclear norm**
#   spreads over the spectrum (effective rank $\|\cdot\|_*/\|\cdot\|_2$);
# * the **orthant clusters** of the words (paper B, Definition 1) and the **k-means** clusters ($k=2^p$)
#   built from $\boldsymbol U_s$ and from $\boldsymbol U_{\rm mm}$ on the top $p$ dimensions: their adjusted
#   Rand index (ARI), against the ARI of shuffled labels (same cluster sizes);
# * the **purity tables** of chapter b04 (best word class of each orthant cluster's `top` most typical
#   words) computed from both.

# %%
# checked by the runner before any work; ps: 1-8 top dimensions (2^p orthants), at least one
LIMITS = {"V": (20, 5000), "m": (100, 100000), "k_max": (9, 256), "top": (5, 1000), "n_draws": (20, 100000),
          "len(ps)": (1, None), "ps": (1, 8)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of c02_proxy_at_scale.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
V = 300          # next tokens kept (the most frequent; paper B: 1,000)
m = 3000         # contexts of lengths 2-6 (paper B: 10,000)
k_max = 64       # largest k of the principal-angle curves
ps = [4, 5, 6]   # numbers of top dimensions p of the orthant / k-means clusterings
top = 40         # cluster members shown and scored (by typicality; paper B: 40)
n_draws = 200    # random draws per chance level (shuffled labels, random word sets)
min_size = 10    # smallest cluster whose purity is tested (as in b04)

# %%
# what LIMITS (one parameter at a time) cannot say, checked before any work
problems = [text for text, bad in (
    (f"k_max = {k_max} must be below V = {V} (the word subspaces live in V - 1 dimensions)", k_max > V - 1),
    (f"2**max(ps) = {2 ** max(ps)} k-means clusters need V >= that many words (V = {V})", 2 ** max(ps) > V),
    (f"top = {top} is below min_size = {min_size}: no cluster would be tested", top < min_size)) if bad]
if problems:
    raise ValueError("; ".join(problems))

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ntputils.analysis.concepts import kmeans_on_analyzers, orthant_labels, orthant_purity, sign_string
from ntputils.analysis.controls import spectrum_matched_random
from ntputils.analysis.metrics import normalized_distance
from ntputils.analysis.purity import RandomBaseline, lexical_labels, summarize_purity
from ntputils.analysis.subspaces import clustering_agreement, subspace_overlap
from ntputils.chapter import (
    ParameterError,
    at_least,
    check,
    claims_table,
    current_record,
    preregister,
    record,
    setup_chapter,
)
from ntputils.data.corpora import paper_b_text
from ntputils.geometry import centered_support, max_margin_cached

run = setup_chapter(globals())
if max(ps) > 8 or min(ps) < 1:
    raise ParameterError(f"ps must be in 1..8 (2^p orthants), got {ps}")
if 5 not in ps:
    raise ParameterError(f"ps must include 5: the rules P3-P5 are stated at p = 5 (Fig. 4 of paper B), got {ps}")
if k_max >= min(V, m):
    raise ParameterError(f"k_max={k_max} must be below min(V, m) = {min(V, m)}")

# %% [markdown]
# ## Pre-registered rules (fixed before any run of this chapter)
#
# "The proxy is a good stand-in for the theory" means, per dataset:
#
# * (P1) *word concepts*: $\mathrm{overlap}_k\ge0.8$ for every $k\le8$ (paper B's orthant clusters use
#   the top $p\le7$ dimensions), i.e. the smallest such overlap is at least 0.8;
# * (P2) *context concepts*: the same for the context subspaces;
# * (P3) *orthant clusters*: the ARI of the $p=5$ orthant clusterings (Fig. 4 of paper B uses $p=5$) at
#   least 0.5, and above the 95th percentile of the shuffled-label ARI;
# * (P4) *k-means clusters*: the ARI of the 32-means clusterings on the top 5 dimensions at least 0.5 (and
#   above chance, as P3);
# * (P5) *purity*: the mean purity of the tested $p=5$ orthant clusters built from $\boldsymbol L^{\rm mm}$
#   is at most 0.05 below that built from $\widetilde{\boldsymbol S}$ (the proxy's clusters are not purer
#   than the theory's by more than that; measured: theory minus proxy).
#
# The thresholds 0.8, 0.5 and 0.05 were written down before anything below was computed; they are not
# from the papers (neither computes these quantities).
#
# **Negative control of every rule** (registered with the rules, after their first runs but before any
# control value was computed): the proxy $\widetilde{\boldsymbol S}$ replaced by a random matrix of its shape
# and spectrum (its singular values, Haar-random singular vectors: `spectrum_matched_random`, seed `seed`),
# everything else unchanged, and each rule judged on it the same way. A proxy with nothing of the theory in it
# should fail every rule; a rule that the random matrix passes too reads "cannot fail" and is no evidence that
# the proxy stands in for the theory.

# %%
DATASETS = {"STS": "tinystories", "WikiText": "wikitext"}
NOT_IN_PAPERS = "not computed by either paper"  # the paper's value of every claim below
CLAIMS = {}
for key in DATASETS:
    CLAIMS.update({
        f"c02_{key}_P1": (f"{key}: smallest word-subspace overlap over k <= 8 (chance k/(V-1))", at_least(0.8, "P1"),
                          None, NOT_IN_PAPERS),
        f"c02_{key}_P2": (f"{key}: smallest context-subspace overlap over k <= 8 (chance k/m)", at_least(0.8, "P2"),
                          None, NOT_IN_PAPERS),
        f"c02_{key}_P3": (f"{key}: ARI of the p=5 orthant clusterings (chance: shuffled labels)", at_least(0.5, "P3"),
                          None, NOT_IN_PAPERS),
        f"c02_{key}_P3_chance": (f"{key}: ARI of the p=5 orthant clusterings minus the shuffled p95",
                                 at_least(0.0, "P3, above chance"), None, NOT_IN_PAPERS),
        f"c02_{key}_P4": (f"{key}: ARI of the 32-means clusterings (chance: shuffled labels)", at_least(0.5, "P4"),
                          None, NOT_IN_PAPERS),
        f"c02_{key}_P4_chance": (f"{key}: ARI of the 32-means clusterings minus the shuffled p95",
                                 at_least(0.0, "P4, above chance"), None, NOT_IN_PAPERS),
        f"c02_{key}_P5": (f"{key}: mean purity of the p=5 orthant clusters, theory minus proxy", at_least(-0.05, "P5"),
                          None, NOT_IN_PAPERS),
    })
RANDOM_PROXY = "S~ replaced by a random matrix of its shape and spectrum"
claims = preregister(CLAIMS, controls={k: RANDOM_PROXY for k in CLAIMS})

# %% [markdown]
# ## The data and the two geometries
#
# `paper_b_text` builds the $V\times m$ support of chapter b04 (GPT-2 tokenizer, contexts of lengths 2-6)
# at this profile's size; `max_margin_cached` solves the nuclear-norm program and certifies it (cached on
# disk: the second build reads it back and re-verifies feasibility). Both matrices are dense here
# ($V m$ entries), and both SVDs are exact (`numpy.linalg.svd`). The ranks count the singular values above
# $10^{-9}\sigma_1$: for $\widetilde{\boldsymbol S}$ the rest is rounding; for $\boldsymbol L^{\rm mm}$ the
# cut lies below the solver's accuracy (certified to the relative gap in the table), so its rank also counts
# directions that the certificate does not resolve.

# %%
geo, rows = {}, []
for key, name in DATASETS.items():
    t0 = time.perf_counter()
    d = paper_b_text(name, V=V, m=m, context_lengths=(2, 3, 4, 5, 6), tokenizer="gpt2")
    S_t = centered_support(d.S)
    L_mm, info = max_margin_cached(d.S, solver="fast", progress=False)
    Us, ss, Vts = np.linalg.svd(S_t, full_matrices=False)
    Um, sm, Vtm = np.linalg.svd(L_mm, full_matrices=False)
    geo[key] = {"data": d, "S_t": S_t, "L_mm": L_mm, "info": info, "U": {"proxy": Us, "theory": Um},
                "Vt": {"proxy": Vts, "theory": Vtm}, "sigma": {"proxy": ss, "theory": sm}}
    rows.append({"dataset": key, "V": d.V, "m": d.m, "rank S~": int((ss > 1e-9 * ss[0]).sum()),
                 "rank L^mm": int((sm > 1e-9 * sm[0]).sum()), "relative gap": f"{info['rel_gap']:.1e}",
                 "solve (s)": round(float(info["seconds"]), 1), "cached": bool(info.get("cached", False)),
                 "total (s)": round(time.perf_counter() - t0, 1)})
pd.DataFrame(rows).set_index("dataset")

# %%
for key, g in geo.items():
    info, L_mm, sm = g["info"], g["L_mm"], g["sigma"]["theory"]
    check(f"{key}: L^mm certified (relative duality gap <= 1e-6)", info["rel_gap"] <= 1e-6,
          measured=info["rel_gap"], tol=1e-6)
    check(f"{key}: L^mm has centered columns (1^T L^mm = 0, as every optimum of the program)",
          float(np.abs(L_mm.sum(axis=0)).max()) <= 1e-6 * float(np.abs(L_mm).max()),
          measured=float(np.abs(L_mm.sum(axis=0)).max()), tol="1e-6 of the largest entry")
    check(f"{key}: the nuclear norm of the SVD equals the solver's", abs(sm.sum() - info["nuclear_norm"])
          <= 1e-6 * info["nuclear_norm"], measured=float(sm.sum()), paper=info["nuclear_norm"], tol="1e-6 relative")
    record(f"{key}_V", int(g["data"].V))
    record(f"{key}_m", int(g["data"].m))
    record(f"{key}_rel_gap", float(info["rel_gap"]))
claims_table()

# %% [markdown]
# ## Principal angles between the concept subspaces
#
# For every $k\le$ `k_max`: $\mathrm{overlap}_k$ of the word subspaces (left) and of the context subspaces
# (right), with the chance level of a random subspace (dashed) and the cosine of the largest principal
# angle (dotted: the worst direction of the $k$).

# %% mystnb={"figure": {"caption": "Overlap of the top-k concept subspaces of S~ and L^mm, words and contexts, with the chance level (beyond the papers).", "name": "fig-c02-overlaps"}, "image": {"alt": "Line plots of subspace overlap against k, with dashed chance levels."}}
ks = np.arange(1, k_max + 1)
overlaps = {}
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for key, g in geo.items():
    V_, m_ = g["data"].V, g["data"].m
    ow = subspace_overlap(g["U"]["proxy"][:, : k_max], g["U"]["theory"][:, : k_max], ks, ambient_dim=V_ - 1)
    oc = subspace_overlap(g["Vt"]["proxy"][: k_max].T, g["Vt"]["theory"][: k_max].T, ks, ambient_dim=m_)
    overlaps[key] = {"words": ow, "contexts": oc}
    for ax, o in zip(axes, (ow, oc), strict=True):
        (line,) = ax.plot(o.k, o.overlap, marker=".", label=f"{key}: overlap_k")
        ax.plot(o.k, o.worst, color=line.get_color(), ls=":", lw=0.9, alpha=0.6,
                label=f"{key}: cosine of the largest angle")
        ax.plot(o.k, o.chance, color=line.get_color(), ls="--", lw=0.8, label=f"{key}: chance k/n")
for ax, side in zip(axes, ("words (columns of U)", "contexts (rows of V^T)"), strict=True):
    ax.axvline(8, color="0.6", lw=0.8)
    ax.axhline(0.8, color="k", lw=0.6, ls="-.")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (top-k concepts; grey line: k = 8, dash-dot: the 0.8 of P1/P2)")
    ax.set_ylabel("overlap of the top-k subspaces")
    ax.set_title(f"S~ vs L^mm: {side}")
    ax.set_ylim(-0.02, 1.02)
handles, names = axes[0].get_legend_handles_labels()
fig.legend(handles, names, loc="lower center", ncol=3, fontsize=8, frameon=False)
fig.tight_layout(rect=(0, 0.12, 1, 1))
plt.show()

# %%
table = []
for key, o in overlaps.items():
    for side in ("words", "contexts"):
        oo = o[side]
        for k in (1, 2, 4, 8, 16, 32, 64):
            if k <= k_max:
                table.append({"dataset": key, "side": side, "k": k, "overlap": round(float(oo.overlap[k - 1]), 4),
                              "worst cosine": round(float(oo.worst[k - 1]), 4), "chance": round(float(oo.chance[k - 1]), 4)})
display(pd.DataFrame(table).pivot_table(index=["dataset", "side"], columns="k", values="overlap"))

# %% [markdown]
# A dip of the overlap at one $k$ that recovers at $k+1$ marks a near-tie $\sigma_k\approx\sigma_{k+1}$: the
# top-$k$ subspace is then ill-defined (a small perturbation swaps the two directions), while the top-$(k+1)$
# subspace is not. The table gives, per dataset and side, the $k\le8$ of the smallest overlap and the
# relative gaps $(\sigma_k-\sigma_{k+1})/\sigma_k$ of both matrices there.

# %%
dips = []
for key, o in overlaps.items():
    for side in ("words", "contexts"):
        k_min = int(o[side].k[np.argmin(o[side].overlap[:8])])
        gap = {w: float((geo[key]["sigma"][w][k_min - 1] - geo[key]["sigma"][w][k_min]) / geo[key]["sigma"][w][k_min - 1])
               for w in ("proxy", "theory")}
        dips.append({"dataset": key, "side": side, "k of the smallest overlap (k <= 8)": k_min,
                     "overlap there": round(float(o[side].overlap[k_min - 1]), 4),
                     "overlap at k + 1": round(float(o[side].overlap[k_min]), 4),
                     "relative gap, S~": round(gap["proxy"], 4), "relative gap, L^mm": round(gap["theory"], 4)})
pd.DataFrame(dips).set_index(["dataset", "side"])

# %% [markdown]
# ## Direction distance and the spread of the spectrum
#
# The two matrices are compared as paper A compares them on its Simplified TinyStories (its proxy
# distance); the effective rank $\|\cdot\|_*/\|\cdot\|_2$ says over how many directions each spreads its
# nuclear norm, and the last column gives the share of the nuclear norm in the top 8 singular values.

# %%
spec = []
for key, g in geo.items():
    dist = record(f"{key}_direction_distance", normalized_distance(g["S_t"], g["L_mm"]))
    row = {"dataset": key, "distance(S~, L^mm)": round(dist, 4)}
    for which in ("proxy", "theory"):
        s = g["sigma"][which]
        eff = record(f"{key}_{which}_effective_rank", float(s.sum() / s[0]))
        row[f"effective rank, {which}"] = round(eff, 1)
        row[f"top-8 share of ||.||_*, {which}"] = round(float(s[:8].sum() / s.sum()), 3)
    spec.append(row)
pd.DataFrame(spec).set_index("dataset")

# %% mystnb={"figure": {"caption": "Spectra of S~ and L^mm, each over its nuclear norm (beyond the papers).", "name": "fig-c02-spectra"}, "image": {"alt": "Line plots of normalized singular values for each dataset."}}
fig, axes = plt.subplots(1, len(geo), figsize=(6 * len(geo), 3.8), squeeze=False)
for ax, (key, g) in zip(axes[0], geo.items(), strict=True):
    for which, style in (("proxy", "-"), ("theory", "--")):
        s = g["sigma"][which]
        s = s[s > 1e-9 * s[0]]  # cut < 1e-9 s_1: rounding (S~), below the solver's accuracy (L^mm)
        ax.plot(np.arange(1, s.size + 1), s / s.sum(), ls=style, label=f"{which}: sigma_i / ||.||_*")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("i")
    ax.set_ylabel("share of the nuclear norm")
    ax.set_title(f"{key}: spectra of S~ and L^mm (each over its nuclear norm)")
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Orthant clusters and k-means from each
#
# For each $p$ of `ps`: the ARI of the word clusterings built from the proxy and from the theory, the
# orthant clustering of Definition 1 (a word with a zero coordinate is its own label $-1$) and k-means with
# $k=2^p$ on the rows of $\boldsymbol U_{:,1:p}$ (paper B's spectral variant, the chapter's `seed`). Chance: the ARI
# with the theory's labels shuffled over the words, `n_draws` times.

# %%
agree, agreement = [], {}  # agreement: the unrounded values the verdicts read
for key, g in geo.items():
    for p in ps:
        lab = {w: orthant_labels(g["U"][w], range(p)) for w in ("proxy", "theory")}
        km = {w: kmeans_on_analyzers(g["U"][w], p, seed=seed)[0] for w in ("proxy", "theory")}
        for method, (a, b) in (("orthant", (lab["proxy"], lab["theory"])), ("k-means", (km["proxy"], km["theory"]))):
            ag = agreement[key, p, method] = clustering_agreement(a, b, draws=n_draws, seed=seed)
            agree.append({"dataset": key, "p": p, "method": method, "ARI": round(ag.ari, 4),
                          "shuffled mean": round(ag.chance_mean, 4), "shuffled p95": round(ag.chance_p95, 4)})
            record(f"{key}_{method.replace('-', '')}_ari_p{p}", ag.ari)
            record(f"{key}_{method.replace('-', '')}_ari_p{p}_chance_p95", ag.chance_p95)
agree_df = pd.DataFrame(agree)
agree_df.set_index(["dataset", "method", "p"])

# %% [markdown]
# ## The purity tables of b04, from both
#
# Chapter b04's purity: for each orthant cluster on the top $p$ dimensions, the best word class of its
# top-`top` words by typicality (the class with the largest excess over its base rate), and whether it beats
# same-size random word sets (95th percentile of `n_draws`). Summaries over the clusters with at least
# `min_size` members.

# %%
purity_rows, purity_clusters, mean_purity = [], {}, {}  # mean_purity: unrounded, for the verdicts
for key, g in geo.items():
    labels = lexical_labels(g["data"].vocab)
    baseline = RandomBaseline(labels, n_draws=n_draws, seed=seed)
    for p in ps:
        for which in ("proxy", "theory"):
            clusters, tab = orthant_purity(g["U"][which], p, labels, baseline, top=top)
            purity_clusters[key, p, which] = (clusters, tab.set_index("cluster"))
            s = summarize_purity(tab, min_size=min_size)
            mean_purity[key, p, which] = float(s["mean purity"])
            purity_rows.append({"dataset": key, "p": p, "from": which, **{k_: (round(v, 3) if isinstance(v, float)
                                                                                 else v) for k_, v in s.items()}})
            record(f"{key}_purity_p{p}_{which}", s["mean purity"])
            record(f"{key}_beat_random_p{p}_{which}", s["beat random"])
purity_df = pd.DataFrame(purity_rows)
display(purity_df.set_index(["dataset", "p", "from"]))

# %% [markdown]
# Cluster by cluster at $p=5$: every tested orthant cluster of the proxy (its top-`top` words) next to the
# theory's cluster that shares the most of those words (Jaccard index of the two top-`top` sets; the sign
# of a singular vector is arbitrary, so the two clusterings' sign strings need not match).

# %%
def _members(clusters: dict, name: str) -> list[int]:
    """The cluster's members, by decreasing typicality."""
    return [int(i) for C, cl in clusters.items() if sign_string(C) == name for i in cl.indices]


for key, g in geo.items():
    (cl_p, tab_p), (cl_t, tab_t) = purity_clusters[key, 5, "proxy"], purity_clusters[key, 5, "theory"]
    theory_sets = {sign_string(C): {int(i) for i in cl.indices} for C, cl in cl_t.items()}
    rows_ = []
    for name, row in tab_p[tab_p["size"] >= min_size].sort_values("size", ascending=False).iterrows():
        ordered = _members(cl_p, name)
        mine = set(ordered)
        jac = {other: len(mine & ws) / len(mine | ws) for other, ws in theory_sets.items()}
        best = max(jac, key=jac.get)
        rows_.append({"S~ cluster": name, "size": int(row["size"]), "S~ best class": row["best class"],
                      "S~ purity": round(float(row["purity"]), 3), "L^mm cluster": best,
                      "shared words (Jaccard)": round(jac[best], 3), "L^mm best class": tab_t.loc[best, "best class"],
                      "L^mm purity": round(float(tab_t.loc[best, "purity"]), 3),
                      "words of S~ cluster": " ".join(g["data"].vocab[i] for i in ordered[:8])})
    display(Markdown(f"**{key}, p = 5**"))
    display(pd.DataFrame(rows_))

# %% [markdown]
# ## The negative control: a random matrix in place of the proxy
#
# Each quantity of the rules P1-P5 measured once more with $\widetilde{\boldsymbol S}$ replaced by a random
# matrix $\boldsymbol R$ of its shape and singular values (Haar-random singular vectors): its top singular
# subspaces against the theory's, its $p=5$ orthant and 32-means clusterings against the theory's (with their
# own shuffled-label chance), and the theory's purity minus the purity of $\boldsymbol R$'s clusters.

# %%
control = {}
for key, g in geo.items():
    R = spectrum_matched_random(g["S_t"], seed=seed)
    Ur, _, Vtr = np.linalg.svd(R, full_matrices=False)
    k8 = ks[ks <= 8]
    cw = subspace_overlap(Ur[:, : k8.max()], g["U"]["theory"][:, : k8.max()], k8, ambient_dim=g["data"].V - 1)
    cc = subspace_overlap(Vtr[: k8.max()].T, g["Vt"]["theory"][: k8.max()].T, k8, ambient_dim=g["data"].m)
    c = {"P1": float(cw.overlap.min()), "P2": float(cc.overlap.min())}
    lab_r, lab_t = orthant_labels(Ur, range(5)), orthant_labels(g["U"]["theory"], range(5))
    km_r, km_t = kmeans_on_analyzers(Ur, 5, seed=seed)[0], kmeans_on_analyzers(g["U"]["theory"], 5, seed=seed)[0]
    for claim, (a, b) in (("P3", (lab_r, lab_t)), ("P4", (km_r, km_t))):
        ag_r = clustering_agreement(a, b, draws=n_draws, seed=seed)
        c[claim], c[f"{claim}_chance"] = ag_r.ari, ag_r.ari - ag_r.chance_p95
    labels = lexical_labels(g["data"].vocab)
    _, tab_r = orthant_purity(Ur, 5, labels, RandomBaseline(labels, n_draws=n_draws, seed=seed), top=top)
    c["P5"] = mean_purity[key, 5, "theory"] - float(summarize_purity(tab_r, min_size=min_size)["mean purity"])
    control[key] = {k: record(f"{key}_control_{k}", v) for k, v in c.items()}
pd.DataFrame(control).T.round(4)

# %% [markdown]
# ## The verdicts

# %%
for key in geo:
    ow, oc, ctl = overlaps[key]["words"], overlaps[key]["contexts"], control[key]
    first8 = ks <= 8
    claims[f"c02_{key}_P1"].judge(record(f"{key}_min_word_overlap_k8", float(ow.overlap[first8].min())),
                                  chance=float(ow.chance[first8].max()), control=ctl["P1"])
    claims[f"c02_{key}_P2"].judge(record(f"{key}_min_context_overlap_k8", float(oc.overlap[first8].min())),
                                  chance=float(oc.chance[first8].max()), control=ctl["P2"])
    for claim, method in (("P3", "orthant"), ("P4", "k-means")):
        ag = agreement[key, 5, method]
        claims[f"c02_{key}_{claim}"].judge(ag.ari, chance=ag.chance_p95, control=ctl[claim])
        claims[f"c02_{key}_{claim}_chance"].judge(ag.ari - ag.chance_p95, control=ctl[f"{claim}_chance"])
    gap_p5 = mean_purity[key, 5, "theory"] - mean_purity[key, 5, "proxy"]
    if np.isfinite(gap_p5):
        claims[f"c02_{key}_P5"].judge(record(f"{key}_purity_gap_p5", gap_p5), control=ctl["P5"])
    else:  # a small V: no p = 5 orthant cluster has min_size members, so no purity to compare
        claims[f"c02_{key}_P5"].judge(None, note=f"no p = 5 orthant cluster has {min_size} members "
                                                 f"(V = {geo[key]['data'].V})")
claims_table()

# %% [markdown]
# ## Where the proxy stands in for the theory, and where it does not
#
# The sentences below are generated from this run's recorded values by the rules above. How to read a
# split verdict: the subspace rules (P1, P2) ask whether the top concepts span the same space; the
# clustering rules (P3, P4) ask whether individual singular vectors, and the signs of their small
# coordinates, are the same. A rotation inside a subspace leaves the overlap at 1 and can still move many
# words across orthant boundaries, so P3 and P4 are the stricter test. P5 asks whether the proxy's clusters
# would mislead a reader of the word clouds.
#
# **P3-P5 sit close to what the certificate resolves.** $\boldsymbol L^{\rm mm}$ is an iterate certified to a
# small relative duality gap, not the exact optimum, and a direction of its SVD that the certificate does not
# resolve can still move a word across an orthant boundary. At the paper profile a fresh certified solve, in
# place of the cached one the committed run had used, moved the theory's purities (and P5) in the third decimal
# while P1 and P2 stayed put; no outcome changed. P4 on WikiText is close to its rule at seed 0, and its
# outcome there has followed the machine: the five-seed table first committed recorded it above the rule, a
# re-run under the code of that day on another machine below, and the latest re-run under the current code (a
# machine of the same description, AMD EPYC with AVX-512; a fresh L^mm solve whose certified duality gap
# differs from the earlier one's in the second digit) above again. At the other seeds only the solver's
# residuals moved, and no seed's move changed the five-seed verdict (the seeds table below). The line above the
# five-seed table says whether this page's run agrees with it. A verdict near a rule's threshold here is as
# fragile as the seeds table says it is; no single run decides it.

# %%
lines = []
for key in geo:
    out = {c["key"]: c for c in current_record()["comparisons"] if c["key"].startswith(f"c02_{key}_")}
    held = [k.split("_")[-1] for k, c in out.items() if not k.endswith("_chance") and c["outcome"] == "reproduced"]
    failed = [k.split("_")[-1] for k, c in out.items() if not k.endswith("_chance") and c["outcome"] == "deviates"]
    no_test = [k.split("_")[-1] for k, c in out.items() if not k.endswith("_chance") and c["outcome"] == "cannot fail"]
    p5 = out[f"c02_{key}_P5"]["measured"]
    p5_text = ("no p = 5 orthant cluster is large enough to compare purities" if p5 is None else
               f"the theory's p = 5 orthant clusters are {abs(p5):.3f} {'less' if p5 < 0 else 'more'} "
               "pure on average than the proxy's")
    ari = {c_: float(agree_df[(agree_df.dataset == key) & (agree_df.p == 5) & (agree_df.method == c_)]["ARI"].iloc[0])
           for c_ in ("orthant", "k-means")}
    lines.append(
        f"* **{key}** ($V$ = {geo[key]['data'].V}, $m$ = {geo[key]['data'].m}): the rules hold for "
        f"{', '.join(held) or 'none'} and fail for {', '.join(failed) or 'none'}; "
        f"{', '.join(no_test) or 'none'} cannot fail (the random matrix passes too). The top-8 word subspaces "
        f"overlap at least {out[f'c02_{key}_P1']['measured']:.3f} (chance at most {out[f'c02_{key}_P1']['chance']:.3f}), "
        f"the context subspaces at least {out[f'c02_{key}_P2']['measured']:.3f}; the p = 5 orthant clusterings "
        f"agree with ARI {ari['orthant']:.3f} and the 32-means clusterings with {ari['k-means']:.3f} "
        f"(shuffled labels: 95th percentile at most {agree_df[agree_df.dataset == key]['shuffled p95'].max():.3f}); "
        f"{p5_text}; the direction distance of the two matrices is "
        f"{current_record()['results'][f'{key}_direction_distance']['value']:.3f}.")
display(Markdown("\n".join(lines)))
print(f"chapter wall time: {run.elapsed():.1f} s")

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (paper B's sizes, in
# `notebooks/c02_proxy_at_scale.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks were
# committed under `results/sweeps/c02-paper/` with their provenance (commit, machine, date, wall time).
# Below they stand beside this run's values. A committed table whose producing code has changed since is
# marked STALE, with the command that refreshes it.

# %%
from ntputils.chapter import show_paper_profile  # noqa: E402

paper_view = show_paper_profile("c02", current_record(), profile)
