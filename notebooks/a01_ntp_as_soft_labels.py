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
# # NTP as sparse soft-label classification
#
# Both papers start from the same observation {cite}`zhao2024implicit,zhao2025semantics`: next-token
# prediction (NTP) on a finite corpus is a classification problem with **soft labels**. Group the
# $n$ training pairs $(\boldsymbol x_i, z_i)$ by their context: there are $m\le n$ distinct contexts
# $\bar{\boldsymbol x}_1,\dots,\bar{\boldsymbol x}_m$, context $j$ occurs with empirical probability
# $\hat\pi_j$, and the tokens that follow it form an empirical distribution
# $\hat{\boldsymbol p}_j\in\Delta^{V-1}$ over the vocabulary $[V]$. The NTP loss of logits
# $\boldsymbol L=[\boldsymbol\ell_1,\dots,\boldsymbol\ell_m]\in\mathbb R^{V\times m}$ is
#
# $$\mathcal L(\boldsymbol L)=\sum_{j\in[m]}\hat\pi_j\,\mathrm{CE}\big(\mathbb S(\boldsymbol\ell_j)\,\|\,\hat{\boldsymbol p}_j\big)
#   =-\sum_{j}\hat\pi_j\sum_{z\in\mathcal S_j}\hat p_{j,z}\log\mathbb S_z(\boldsymbol\ell_j)
#   \;\ge\;\mathcal H:=-\sum_j\hat\pi_j\sum_{z\in\mathcal S_j}\hat p_{j,z}\log\hat p_{j,z},$$
#
# with equality only when every softmax $\mathbb S(\boldsymbol\ell_j)$ equals $\hat{\boldsymbol p}_j$. The
# labels are **sparse**: the support $\mathcal S_j=\{z:\hat p_{j,z}>0\}$ of a context is a small part of
# the vocabulary, so matching $\hat{\boldsymbol p}_j$ needs logits $-\infty$ off the support, and the
# entropy $\mathcal H$ is reached only as $\|\boldsymbol L\|\to\infty$. The objects that organize
# everything in the rest of the book are
#
# * the soft-label matrix $\boldsymbol P=[\hat{\boldsymbol p}_1,\dots,\hat{\boldsymbol p}_m]$ (columns sum to 1),
# * the support matrix $\boldsymbol S\in\{0,1\}^{V\times m}$, $\boldsymbol S[z,j]=1\iff\hat p_{j,z}>0$,
# * the centered support ("data-sparsity") matrix of paper B eq. (2),
#   $\widetilde{\boldsymbol S}=(\mathbb I_V-\tfrac1V\mathbb 1\mathbb 1^\top)\boldsymbol S$, whose columns sum to 0.
#
# **Data.** Paper A's "Synthetic" dataset: 160 template sentences released with the authors' code
# ("Lily wants to try the cookies.", ...), 16 five-word prefixes with 10 endings each. Recipe
# (code-derived, from the authors' `Dataset.py` sampler): lower-case, strip punctuation, context = the first
# 5 words, next token = the 6th; keep 3 endings per context (the authors' prioritized words first,
# which makes supports overlap), each with a random count in $\{1,2\}$ (seed 1634).
#
# **RECONSTRUCTED / differences.** The selection rule and the seed are the authors'; our random
# draws follow their order with numpy's legacy generator but cannot reproduce their run exactly.
# The paper reports $m=16$, $V=30$, $n=72$, $\mathcal H=1.0166$. Note that $\mathcal H=1.0166$ lies
# *below* what this recipe can produce: every support has three tokens with counts in $\{1,2\}$, so every
# context has entropy at least $H(\tfrac14,\tfrac14,\tfrac12)=1.0397$. The published dataset therefore
# differs from the stated recipe in some detail we cannot recover; we print our numbers beside theirs.

# %%
# t_max: the check "CE(L_t) > H and decreasing to H" holds in this range only. From the softmax of
# L_in + t S~: CE(L_t) - H = sum_j pi_j log(1 + (V-|S_j|) G_j e^{-t}), G_j the geometric mean of p_j on
# its support (1/5 <= G_j <= 1/|S_j|, counts in {1,2}). It is <= (V-1) e^{-t}, below the check's 1e-6 for
# t >= 18 (V = 30), and >= 2.7 e^{-t} >= 2e-13 for t <= 30, a thousand times float64's rounding of H.
LIMITS = {"t_max": (18.0, 30.0)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of a01_ntp_as_soft_labels.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
data_seed = 1634  # seed of the count draws (the authors': 1634)
t_max = 20.0     # largest logit scale t in the CE -> H illustration

# %%
# %matplotlib inline
from ntputils.chapter import check, claims_table, preregister, record, setup_chapter, within

run = setup_chapter(globals())

# %%
import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from matplotlib.colors import TwoSlopeNorm

from ntputils.data.corpora import paper_a_synthetic, read_template_sentences
from ntputils.data.corpora.tokenize import words_stripped
from ntputils.geometry import centered_support, in_support_logits
from ntputils.plots import heatmap
from ntputils.training.ufm import ce_loss

# %% [markdown]
# ## From sentences to (context, next-token) pairs
#
# The template file is read from the project's data root (`NTP_DATA_DIR`, default `../shared/data`).

# %%
sentences = read_template_sentences()
print(f"{len(sentences)} template sentences, e.g.")
for s in sentences[:3] + sentences[20:22]:
    words = words_stripped(s)
    print(f"  {s!r:45} -> context {' '.join(words[:5])!r:32} next {words[5]!r}")

# %% [markdown]
# **Pre-registered comparison with the paper's dataset statistics** (rules fixed here, before the data are
# built). $m=16$ is fixed by the template file (16 prefixes) and is not a claim. The others:
#
# * $V=30$: exact, the paper's number.
# * $n$: the paper's 72 within $\pm7$. Under the recipe $n$ is a sum of $48$ counts drawn uniformly from
#   $\{1,2\}$: mean $72$, standard deviation $\sqrt{12}\approx3.5$; $\pm7$ is two standard deviations,
#   the spread a different random draw can produce.
# * $\mathcal H$: the paper's $1.0166$ within $0.01$ (about 1% of it). The bound above says in advance that
#   this recipe cannot get that close (every draw gives $\mathcal H\ge1.0397$), so a deviation is expected.
#
# **Negative control** (registered after these rules' first runs, before any control value was computed): the
# same statistics of the data with the recipe's random counts removed, every kept (context, ending) pair
# counted once. A statistic that this count-free data set matches as well says nothing about the counts; it
# is fixed by the template file alone, as $m$ is, and reads "cannot fail".

# %%
dataset = preregister({
    "a01_V": ("V = 30 next tokens (paper A, Synthetic)", within(30, abs_tol=0)),
    "a01_n": ("n = 72 training pairs (paper A, Synthetic), +-2 sd of the recipe's random counts",
              within(72, abs_tol=7)),
    "a01_H": ("empirical entropy H = 1.0166 (paper A, Synthetic)", within(1.0166, abs_tol=0.01)),
}, controls=dict.fromkeys(("a01_V", "a01_n", "a01_H"), "the same data with every kept pair counted once"))

# %%
data = paper_a_synthetic(seed=data_seed)
contexts = [data.context_str(j) for j in range(data.m)]
print(data)
counts = pd.DataFrame(data.counts.toarray(), index=data.vocab, columns=contexts)
counts.loc[:, (counts > 0).any(axis=0)].T.apply(
    lambda row: ", ".join(f"{w}x{c}" for w, c in row.items() if c), axis=1).to_frame("kept endings x count")

# %% [markdown]
# ## $\boldsymbol P$, $\boldsymbol S$, $\hat{\boldsymbol\pi}$ and $\widetilde{\boldsymbol S}$
#
# Rows are the $V$ next tokens, columns the $m$ contexts. Supports overlap (the prioritized endings
# "soup, game, movie" follow both "lily wants to try the" and "lily wants to start the"), and
# contexts with the same support have identical columns in $\boldsymbol S$ and $\widetilde{\boldsymbol S}$ --
# the structure that papers A and B show the trained embeddings inherit.

# %% mystnb={"figure": {"caption": "The soft labels P, the support S and the centered support S~ of paper A's Synthetic dataset, one heatmap per row (our own figure).", "name": "fig-a01-matrices"}, "image": {"alt": "Three heatmaps, contexts on the horizontal axis and next tokens on the vertical axis: soft labels, support and centered support."}}
P = data.P.toarray()
S = data.S.toarray().astype(float)
S_tilde = centered_support(data.S)
pi = data.pi

# one heatmap per row: at the page width the tick labels stay legible
fig, axes = plt.subplots(3, 1, figsize=(9, 17), constrained_layout=True)
heatmap(axes[0], P, cmap="Blues", vmin=0, vmax=1, title=r"soft labels $P$ (columns $\hat p_j$)",
        xlabel="context j", ylabel="next token z", xticklabels=contexts, yticklabels=data.vocab, fontsize=8,
        colorbar=r"$\hat p_{j,z}$")
heatmap(axes[1], S, cmap="Greys", vmin=0, vmax=1, title=r"support $S$", xlabel="context j",
        ylabel="next token z", xticklabels=contexts, yticklabels=data.vocab, fontsize=8, colorbar="in support")
# two slopes around 0: the off-support entries -|S_j|/V are small, and a symmetric scale would draw them
# almost white; here the most negative entry gets the full blue, the most positive the full red
heatmap(axes[2], S_tilde, cmap="RdBu_r", norm=TwoSlopeNorm(vmin=S_tilde.min(), vcenter=0.0, vmax=S_tilde.max()),
        title=r"centered support $\widetilde S$ (blue: $-|\mathcal{S}_j|/V$, red: $1-|\mathcal{S}_j|/V$)",
        xlabel="context j", ylabel="next token z", xticklabels=contexts, yticklabels=data.vocab, fontsize=8,
        colorbar=r"$\widetilde S[z,j]$ (two-slope scale around 0)")
plt.show()

# %% mystnb={"figure": {"caption": "The empirical context probabilities of the Synthetic dataset (our own figure).", "name": "fig-a01-context-probabilities"}, "image": {"alt": "Bar chart of the empirical probability of each context."}}
fig, ax = plt.subplots(figsize=(9, 3.2), constrained_layout=True)
ax.bar(np.arange(data.m), pi, color="tab:blue")
ax.set_xticks(np.arange(data.m), contexts, rotation=90, fontsize=7)
ax.set_ylabel(r"$\hat\pi_j$")
ax.set_title(r"empirical context probabilities $\hat\pi_j = n_j / n$")
plt.show()

# %% [markdown]
# ## The entropy lower bound is reached only at infinity
#
# With logits $\boldsymbol L_t=\boldsymbol L^{\rm in}+t\,\widetilde{\boldsymbol S}$ -- the in-support
# log-odds $\boldsymbol L^{\rm in}$ (log-probabilities centred on each support, zero elsewhere) plus a
# growing push of the support above the rest -- the softmax tends to $\hat{\boldsymbol p}_j$ and the loss
# decreases to $\mathcal H$, but $\mathcal L(\boldsymbol L_t)>\mathcal H$ for every finite $t$.

# %% mystnb={"figure": {"caption": "The cross-entropy of the logits L^in + t S~ approaches the empirical entropy only as t grows without bound (our own figure).", "name": "fig-a01-entropy"}, "image": {"alt": "Curves of the loss minus the entropy decreasing towards zero as the scale t grows."}}
L_in = in_support_logits(data.P)
P_t, pi_t = torch.from_numpy(P), torch.from_numpy(pi)
ts = np.linspace(0.0, t_max, 61)
losses = np.array([float(ce_loss(torch.from_numpy(L_in + t * S_tilde), P_t, pi_t)) for t in ts])
H = data.entropy

fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
ax.semilogy(ts, losses - H, color="tab:orange")
ax.set_xlabel(r"logit scale $t$ in $L^{in} + t\,\widetilde S$")
ax.set_ylabel(r"$\mathcal{L}(L_t) - \mathcal{H}$")
ax.set_title("CE approaches the empirical entropy only as the logits diverge")
plt.show()

# %% [markdown]
# ## Checks

# %%
col_sums = P.sum(axis=0)
ce_true = -float(np.sum(pi * np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0), axis=0)))

# %%
record("a01_m", int(data.m), paper=16)
record("a01_V", int(data.V), paper=30)
record("a01_n", int(data.n), paper=72)
record("a01_H", float(H), paper=1.0166)
once = dataclasses.replace(data, counts=sp.csc_array(data.S.astype(np.int64)))  # the negative control
dataset.a01_V.judge(data.V, control=once.V)
dataset.a01_n.judge(data.n, control=once.n,
                    note="our count draws follow the authors' seed but not their exact RNG stream")
dataset.a01_H.judge(H, control=once.entropy,
                    note="the stated recipe (3 endings, counts in {1,2}) cannot give H below 1.0397; the "
                         "published data differ from the recipe in a detail we cannot recover")

check("columns of P sum to 1", np.allclose(col_sums, 1.0), measured=float(np.abs(col_sums - 1).max()),
      paper="p_j in simplex", tol="1e-12", sanity=True)
check("columns of S~ sum to 0", np.allclose(S_tilde.sum(axis=0), 0.0), measured=float(np.abs(S_tilde.sum(0)).max()),
      paper="(I - 11^T/V) S", tol="1e-12", sanity=True)
check("S~ entries: 1-|S_j|/V on the support, -|S_j|/V off it",
      np.allclose(S_tilde, S - data.support_sizes / data.V), measured=float(np.abs(S_tilde - (S - data.support_sizes / data.V)).max()),
      paper="paper B eq. (2)", tol="1e-12")
check("CE of the true soft labels equals H", abs(ce_true - H) < 1e-12, measured=ce_true, paper=H, tol="1e-12")
check("CE(L_t) > H and decreasing to H", bool(np.all(losses > H) and np.all(np.diff(losses) <= 1e-14) and losses[-1] - H < 1e-6),
      measured=float(losses[-1] - H), paper="H reached only as ||L|| -> inf", tol="1e-6")
check("m = 16 contexts (one per template prefix, fixed by the template file)", data.m == 16, measured=data.m,
      paper=16, sanity=True)
check("H >= 1.0397, the recipe's minimum (every context has 3 tokens with counts in {1,2})", H >= 1.0397 - 1e-4,
      measured=H, paper=1.0166, tol="recipe bound")
claims_table()

# %% [markdown]
# Our reconstruction has $m=$ {glue:text}`a01_m`, $V=$ {glue:text}`a01_V`, $n=$ {glue:text}`a01_n` and
# $\mathcal H=$ {glue:text}`a01_H:.4f`, against the paper's $16$, $30$, $72$ and $1.0166$; the verdicts of the
# pre-registered rules are in the table above.
