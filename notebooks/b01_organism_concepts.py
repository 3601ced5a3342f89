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
# # Concepts on the organism dataset
#
# Paper B {cite}`zhao2025semantics` starts with a toy corpus built on one template, *"The organism
# that [attribute] is [subject]"*. The contexts are the attributes, the next tokens are the subjects.
# From this data alone it shows that
#
# 1. the SVD of the centered support matrix
#    $\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top$ (rank 6) reads like a list
#    of **concepts**: the first singular dimension separates plants from animals, the second separates mammals
#    from the other animals, and so on (**Fig. 1**);
# 2. word and context embeddings trained by next-token prediction (NTP) with $d>V$ group by semantic
#    category (**Fig. 2A**);
# 3. sign patterns on a few concept dimensions give nested clusters: on the context-analyzer dims
#    $\mathcal K=\{1,2,4\}$ the orthants form animal $\supset$ mammal $\supset$ feline (**Fig. 2B**,
#    Definition 1);
# 4. the *concept representations* $\boldsymbol u^{\rm d}_k=\boldsymbol W^\top\boldsymbol u_k$ and
#    $\boldsymbol v^{\rm d}_k=\boldsymbol H\boldsymbol v_k$ coincide, and projecting embeddings on them
#    gives a plant-animal axis and a mammal axis (App. B, eq. 4, **Fig. 10**).
#
# The paper shows the dataset only as a heatmap (Fig. 2C) and names 10 subjects and 8 attributes.
# **The full table is RECONSTRUCTED** (`ntputils.data.corpora.organism_templates`): {glue:text}`b01_n_subjects`
# subjects, {glue:text}`b01_n_attributes` attributes in {glue:text}`b01_n_classes` support classes, chosen so that rank$(\widetilde{\boldsymbol S})=6$ and every sign statement of the
# paper holds. We print it at the end as our Fig. 2C.
#
# **Sign rule.** Singular vectors are defined up to a joint sign flip of $(\boldsymbol u_k,\boldsymbol v_k)$.
# We use `ntputils.geometry.fix_signs`: the largest-magnitude entry of every $\boldsymbol u_k$ is
# positive. With this rule our dims 1 and 2 have the signs described in the caption of Fig. 1 (animals
# and mammals positive). Fig. 2B of the paper labels "animal" as $c_{k_1}=-1$, the opposite sign:
# the paper's two figures cannot share one sign convention (a flip of $\boldsymbol u_1$ flips
# $\boldsymbol v_1$ with it), so we state every configuration in our convention and give the paper's
# beside it.

# %%
LIMITS = {"steps": (1, None)}  # checked by the runner before any work (d >= rank(S~): below, once r is known)

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of b01_organism_concepts.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
d = 32           # embedding dimension of the NTP-UFM (paper: d > V; UNKNOWN value, we take 2V)
steps = 3000     # gradient-descent steps on the CE loss
lr = 5.0         # GD step size (the CE loss is pi-weighted, i.e. an average over the n samples)
init_scale = 0.01  # std of the i.i.d. normal initialization of W and H

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from ntputils.analysis.concepts import (
    clusters_table,
    concept_coordinates,
    concept_representations,
    cosine_columns,
    orthant_clusters,
    orthant_hierarchy,
    paper_dims,
)
from ntputils.analysis.metrics import normalized_distance
from ntputils.chapter import at_least, at_most, check, claims_table, preregister, record, setup_chapter
from ntputils.data.corpora.organism_templates import (
    organism,
    organism_attribute_classes,
    organism_classes,
    organism_table,
)
from ntputils.geometry import centered_support, max_margin_logits, svd_factors
from ntputils.plots.concepts import (
    ORGANISM_GROUP_COLORS,
    concept_plane_figure,
    organism_data_figure,
    organism_embeddings_figure,
    organism_orthants_figure,
    organism_svd_figure,
)
from ntputils.training.ufm import train

# one torch thread: 16 x 17 matrices: thread start-up costs more than it saves
run = setup_chapter(globals(), torch_threads=1)

# %% [markdown]
# ## The data
#
# Every (attribute, subject) pair of the table occurs once, so each $\hat{\boldsymbol p}_j$ is uniform on
# its support and $\hat\pi_j\propto|\mathcal S_j|$. Rows of $\boldsymbol S$ are subjects (animals first),
# columns are attributes.

# %%
data = organism()
table = organism_table()
classes = organism_classes()
attributes = list(table)
attr_class = organism_attribute_classes()
words = list(data.vocab)
S = data.S.toarray()
S_tilde = centered_support(S)
U, sigma, Vt = svd_factors(S_tilde)
r = sigma.size
if d < r:  # the NTP-UFM limit of Sec. 3 (W = U sqrt(Sigma) R^T) needs d >= rank(S~)
    raise ValueError(f"d = {d} is below rank(S~) = {r} of the organism data: pass -p d={r} or more")
print(data)
print(f"rank(S~) = {r};  singular values: {np.round(sigma, 4)}")
record("b01_n_subjects", int(data.V))
record("b01_n_attributes", int(data.m))
record("b01_n_classes", len(classes))

animal_classes = {"Animals", "Mammals", "Felines", "Birds", "Fish"}
is_animal_word = np.array([w in classes["Animals"] for w in words])
is_animal_ctx = np.array([c in animal_classes for c in attr_class])


def word_group(w: str) -> str:
    """Finest category of a subject among the support classes."""
    for name in ("Felines", "Mammals", "Birds", "Fish", "Trees", "Flowers"):
        if w in classes[name]:
            return name
    return "Animals" if w in classes["Animals"] else "Plants"


word_colors = [ORGANISM_GROUP_COLORS[word_group(w)] for w in words]
ctx_colors = [ORGANISM_GROUP_COLORS[c] for c in attr_class]


def grouped_labels(keys: list, names: list[str]) -> dict[int, str]:
    """One label per group of items with equal keys (first index -> "a / b / c"): items with the same
    support pattern have (nearly) the same embedding and would print on top of each other."""
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return {idx[0]: " / ".join(names[i] for i in idx) for idx in groups.values()}


word_labels = grouped_labels([tuple(row) for row in S], words)
ctx_labels = grouped_labels([tuple(col) for col in S.T], attributes)

# %% [markdown]
# ## Fig. 1: the SVD of $\widetilde{\boldsymbol S}$
#
# Rows of $\boldsymbol U$ are the words' coordinates on the concept dimensions (*word analyzer vectors*
# $\boldsymbol u_k$ are its columns); rows of $\boldsymbol V$ are the attributes' coordinates (*context
# analyzer vectors* $\boldsymbol v_k$).

# %% mystnb={"figure": {"caption": "The SVD of the centered support S~ of the organism data: word and attribute coordinates on the concept dimensions; reproduces paper B, Fig. 1.", "name": "fig-b01-fig1"}, "image": {"alt": "Heatmaps of the singular vectors with words and attributes labelled, and the singular values."}}
organism_svd_figure(U, sigma, Vt, words, attributes)
plt.show()

# %% [markdown]
# The statements of the caption of Fig. 1, read off our factors (the caption gives no sign for
# $\boldsymbol v_1$; "implied" = the sign forced by $\boldsymbol u_1$ through
# $\widetilde{\boldsymbol S}\approx\sigma_1\boldsymbol u_1\boldsymbol v_1^\top$):

# %%
w_idx = {w: i for i, w in enumerate(words)}
a_idx = {a: j for j, a in enumerate(attributes)}
fig1_claims = [
    ("u", 1, "apple", -1, "stated"), ("u", 1, "tulip", -1, "stated"), ("u", 1, "dog", +1, "stated"),
    ("u", 1, "shark", +1, "stated"), ("u", 2, "dog", +1, "stated"), ("u", 2, "cat", +1, "stated"),
    ("u", 2, "trout", -1, "stated"), ("u", 2, "eagle", -1, "stated"),
    ("v", 1, "uses sunlight for food", -1, "implied"), ("v", 1, "hunts in groups", +1, "implied"),
    ("v", 2, "stays warm-blooded", +1, "stated"), ("v", 2, "lives in water", -1, "stated"),
    ("v", 2, "grows roots", +1, "stated"), ("v", 2, "reproduces with pollen", -1, "stated"),
]
rows = []
for side, k, item, paper_sign, how in fig1_claims:
    value = U[w_idx[item], k - 1] if side == "u" else Vt[k - 1, a_idx[item]]
    rows.append({"vector": f"{side}_{k}", "item": item, "ours": round(float(value), 3),
                 "paper sign": f"{paper_sign:+d} ({how})", "match": bool(np.sign(value) == paper_sign)})
fig1_table = pd.DataFrame(rows)
fig1_table

# %% [markdown]
# ## Is $\widetilde{\boldsymbol S}$ the right matrix? $\boldsymbol L^{\rm mm}$ for this data
#
# Paper A shows that CE-trained logits converge in direction to $\boldsymbol L^{\rm mm}$ (the
# nuclear-norm NTP-SVM solution) and that $\widetilde{\boldsymbol S}$ is a proxy for it. For this
# dataset the proxy is exact: solving the NTP-SVM with cvxpy gives $\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$
# up to solver precision, so the concepts of $\widetilde{\boldsymbol S}$ are exactly those the trained
# embeddings converge to.

# %%
L_mm = max_margin_logits(S)
lmm_gap = normalized_distance(L_mm, S_tilde)
print(f"|| L^mm/||L^mm|| - S~/||S~|| ||_F = {lmm_gap:.2e}")

# %% [markdown]
# ## Fig. 2A: NTP-trained embeddings, 3-D PCA
#
# Training details of Fig. 2A are **UNKNOWN** beyond $d>V>\mathrm{rank}(\widetilde{\boldsymbol S})=6$. We
# train the NTP-UFM (free $\boldsymbol W$, $\boldsymbol H$) on the CE loss with $d=2V=32$, plain gradient
# descent from a small random initialization, no regularization. Word embeddings (rows of
# $\boldsymbol W$, dots) and context embeddings (columns of $\boldsymbol H$, triangles) are projected
# together on the top-3 principal components of the joint point cloud. Colors: mammals blue, other
# animals green (and their attributes likewise), trees red, flowers and other plants orange/red.

# **Pre-registered rules for the trained embeddings** (fixed here, before training). Figs. 2A and 10 are
# qualitative; we read them as statements about every word and context, so the rule is "all of them":
#
# * Fig. 2A: the fraction of words and contexts on the correct side of PC 1 (animal vs plant) is 1 (chance: 1/2
#   per item);
# * Fig. 10 axis 1 (animal +, plant −) and axis 2 (mammal +, other animals −, and the four named items): the
#   fraction of items with the caption's sign is 1 (chance: 1/2 per item);
# * Fig. 10 "the concept representations coincide": $\cos(\boldsymbol u^{\rm d}_k,\boldsymbol v^{\rm d}_k)\ge0.9$
#   for $k=1,2$ (our reading of "coincide"); chance is the cosine of two random directions in
#   $\mathbb R^d$ (mean $0$, standard deviation $1/\sqrt d$), shown beside the off-diagonal
#   $\max_{k\ne l}|\cos(\boldsymbol u^{\rm d}_k,\boldsymbol v^{\rm d}_l)|$;
# * the training itself: CE − H at the end at most $1\%$ of $\mathcal H$ (the run has reached the entropy).
#
# * Fig. 1: the fraction of the caption's sign statements (the table above) that hold is 1; Fig. 2B: the
#   fraction of the three nested orthants on $\mathcal K=\{1,2,4\}$ whose members are exactly the attributes of
#   their class (animal, mammal, feline) is 1. Both were sanity lines (our table was *built* to satisfy them);
#   they are judged here with their negative control (issue #44) so the page shows whether they can fail.
#
# **Negative controls** (issue #44), the same measurement where the paper's mechanism is absent:
#
# * `b01_fig1_signs`, `b01_nesting`: the **same table with the subjects' names permuted** (a random
#   permutation of the {glue:text}`b01_n_subjects` subjects; the supports keep their shape, but the semantic
#   classes are no longer the nested sets of the table). If a rule still holds on it, it reads "cannot fail".
# * `b01_pc1`, `b01_cos`, `b01_axis1`, `b01_axis2`: the **trained embeddings with the words' labels permuted**
#   (word $i$ gets the embedding of another word; the same permutation): the geometry is the trained one, its
#   correspondence with the concepts is gone.
# * `b01_ce_gap`: the **untrained UFM** (step 0): CE $-\,\mathcal H$ relative to $\mathcal H$ before any update.
#
# Each rule is absolute ("all of them"); beside its chance level the table shows the same measure for the
# same UFM at initialization (step 0, before any update): what the claim would read without training. A claim
# about the trained embeddings must also beat that untrained value: where the trained value does not exceed
# it, the claim counts as a deviation even if its rule holds (it held before training). The judging code
# applies this (`ntputils.chapter.compare` with an `untrained` baseline). The untrained baseline and this rule
# were added after a first run, which judged the claims against chance only; the two axis-sign claims of
# Fig. 10 then turned out to hold already at initialization.

# %%
claims = preregister({
    "b01_ce_gap": ("NTP-UFM (CE, d > V) reaches the entropy: (CE − H) / H", at_most(0.01, "1% of H"), "B:Fig 2",
                   "-> 0"),
    "b01_pc1": ("Fig. 2A: fraction of words and contexts on the correct side of PC 1", at_least(1.0, "all"),
                "B:Fig 2", "animals left, plants right"),
    "b01_cos": ("Fig. 10: u^d_k and v^d_k coincide in direction, min cos over k = 1, 2",
                at_least(0.9, "our reading of 'coincide'"), "B:Fig 10", "coincide"),
    "b01_axis1": ("Fig. 10 axis 1: fraction of words and contexts with sign animal + / plant −",
                  at_least(1.0, "all"), "B:Fig 10", "dog + / apple -"),
    "b01_axis2": ("Fig. 10 axis 2: fraction of animal words and named items with sign mammal + / other −",
                  at_least(1.0, "all"), "B:Fig 10", "cat + / trout -"),
    "b01_fig1_signs": ("Fig. 1: fraction of the caption's sign statements on u_1, u_2, v_1, v_2 that hold "
                       "(the table was built to satisfy them)", at_least(1.0, "all"), "B:Fig 1", "all"),
    "b01_nesting": ("Fig. 2B: fraction of the orthants [+1], [+1,+1], [+1,+1,-1] on K={1,2,4} equal to the "
                    "animal, mammal, feline attributes (the table was built to satisfy it)",
                    at_least(1.0, "all"), ["B:Fig 2", "B:orthant"], "nested [-1],[-1,-1],[-1,-1,-1]"),
}, controls={
    "b01_ce_gap": "the untrained UFM (step 0)",
    **{key: "the trained embeddings with the words' labels permuted (each word gets another word's embedding)"
       for key in ("b01_pc1", "b01_cos", "b01_axis1", "b01_axis2")},
    **{key: "the same table with the subjects' names permuted (the hierarchy of the named classes removed)"
       for key in ("b01_fig1_signs", "b01_nesting")},
})

# %%
hist = train(data, d=d, loss="ce", steps=steps, lr=lr, optimizer="gd", init="normal",
             init_scale=init_scale, seed=seed, device=run.device, log_steps=40,
             snapshot_steps=[0, steps])  # step 0: the untrained baseline of every claim below
W, H = hist.W[-1], hist.H[-1]
ce_gap = hist.final["ce_minus_H"]
print(f"after {steps} GD steps: CE - H = {ce_gap:.2e},  ||W||_F = {hist.final['norm_W']:.2f}, "
      f"||H||_F = {hist.final['norm_H']:.2f},  direction error to S~: {normalized_distance(W @ H, S_tilde):.3f}")

# %% mystnb={"figure": {"caption": "NTP-trained word and context embeddings in a 3-D PCA; reproduces paper B, Fig. 2A.", "name": "fig-b01-fig2a"}, "image": {"alt": "3-D scatter plot of word and context embeddings."}}
pca3 = PCA(n_components=3).fit(np.vstack([W, H.T]))
Pw, Ph = pca3.transform(W), pca3.transform(H.T)
organism_embeddings_figure(Pw, Ph, word_colors, ctx_colors, word_labels, ctx_labels,
                           f"Fig. 2A: NTP-UFM embeddings (CE, d={d}, {steps} GD steps), 3-D PCA")
plt.show()

pc1_words, pc1_ctx = Pw[:, 0], Ph[:, 0]
side = np.sign(np.median(pc1_words[is_animal_word]))  # PCA signs are arbitrary: orient by the animals
pc1_frac = float(np.mean(np.r_[side * pc1_words * np.where(is_animal_word, 1, -1) > 0,
                               side * pc1_ctx * np.where(is_animal_ctx, 1, -1) > 0]))

# %% [markdown]
# ## Fig. 2B: nested orthants in context-analyzer space, $\mathcal K=\{1,2,4\}$
#
# Definition 1: a context $j$ belongs to the configuration $C=[c_{k_1},\dots,c_{k_p}]$ iff
# $\mathrm{sign}(\boldsymbol v_{k_i}[j])=c_{k_i}$ for all $i$; its typicality is
# $\sum_i|\boldsymbol v_{k_i}[j]|$. `ntputils.analysis.concepts` takes 0-based dims, so
# $\mathcal K=\{1,2,4\}$ is `dims=(0, 1, 3)`. The paper's nested configurations
# $[-1]\supset[-1,-1]\supset[-1,-1,-1]$ are, in our sign convention, $[+1]\supset[+1,+1]\supset[+1,+1,-1]$
# (our $\boldsymbol u_1,\boldsymbol u_2$ have the opposite sign of the paper's Fig. 2B and the same sign as its
# Fig. 1; $\boldsymbol u_4$ agrees).

# %%
dims = paper_dims([1, 2, 4])
paper_config = (-1, -1, -1)
our_config = (+1, +1, -1)
A_ctx = Vt.T  # rows: attributes, columns: concepts
levels = orthant_hierarchy(A_ctx, dims, our_config)
level_names = ["animal", "mammal", "feline"]
expected_sets = [
    {a for a in attributes if table[a][0] in classes["Animals"]},
    {a for a in attributes if set(table[a]) <= set(classes["Mammals"])},
    {a for a in attributes if set(table[a]) <= set(classes["Felines"])},
]
nest_rows = []
for p, (name, members, expected) in enumerate(zip(level_names, levels, expected_sets, strict=True), start=1):
    got = {attributes[j] for j in members}
    nest_rows.append({"p": p, "K": "{" + ",".join(str(k + 1) for k in dims[:p]) + "}",
                      "ours C": str(list(our_config[:p])), "paper C": str(list(paper_config[:p])),
                      "semantic": name, "members": ", ".join(attributes[j] for j in members),
                      "= attributes of that class": got == expected})
nesting = pd.DataFrame(nest_rows)
nesting

# %% mystnb={"figure": {"caption": "Nested orthants in context-analyzer space on the dimensions 1, 2 and 4; reproduces paper B, Fig. 2B.", "name": "fig-b01-fig2b"}, "image": {"alt": "3-D scatter plot of context-analyzer coordinates with the nested orthants marked."}}
X = A_ctx[:, list(dims)]
organism_orthants_figure(X, levels, grouped_labels([tuple(np.round(x, 9)) for x in X], attributes))
plt.show()

# %% [markdown]
# All $2^3$ configurations on $\mathcal K=\{1,2,4\}$, for contexts and for words (members sorted by
# typicality; empty configurations omitted):

# %%
display(clusters_table(orthant_clusters(A_ctx, dims, top=None), attributes, dims))
display(clusters_table(orthant_clusters(U, dims, top=None), words, dims))

# %% [markdown]
# ## Fig. 10: concept representations (App. B, eq. 4)
#
# $\boldsymbol u^{\rm d}_k=\mathbb P_{\boldsymbol W}\boldsymbol W^\top\boldsymbol u_k=\boldsymbol W^\top\boldsymbol u_k$
# and $\boldsymbol v^{\rm d}_k=\mathbb P_{\boldsymbol H}\boldsymbol H\boldsymbol v_k=\sum_j\boldsymbol v_k[j]\boldsymbol h_j$.
# For the limit geometry $\boldsymbol W=\boldsymbol U\sqrt{\boldsymbol\Sigma}\mathbf R^\top$,
# $\boldsymbol H=\mathbf R\sqrt{\boldsymbol\Sigma}\boldsymbol V^\top$ both equal
# $\sqrt{\sigma_k}\,\mathbf R\boldsymbol e_k$ (the paper prints $\sigma_k\mathbf R\boldsymbol e_k$ and then
# $\mathbf R\boldsymbol e_k$; only the direction matters). We check the identity on that geometry to machine
# precision, then measure how well it holds for the trained embeddings.
#
# For the figure, the paper projects the embeddings on their top-2 principal components and draws the
# concept axes in that plane. In our run the PCA plane holds only a small part of $\boldsymbol u^{\rm d}_2$,
# so its projected axis points almost anywhere (a PCA plane need not contain the concept directions). We
# therefore project on the plane spanned by the two concept representations themselves: axis 1 is drawn
# exactly, axis 2 at its true angle to axis 1, and every point's coordinate along an axis is its projection
# on that concept.

# %%
R_rot, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, r)))
W_lim, H_lim = (U * np.sqrt(sigma)) @ R_rot.T, R_rot @ (np.sqrt(sigma)[:, None] * Vt)
u_lim, v_lim = concept_representations(W_lim, H_lim, U, Vt, project=True)
limit_err = max(np.abs(u_lim - R_rot * np.sqrt(sigma)).max(), np.abs(v_lim - R_rot * np.sqrt(sigma)).max())

u_d, v_d = concept_representations(W, H, U, Vt)
cos_uv = cosine_columns(u_d, v_d)
u_dir = u_d / np.linalg.norm(u_d, axis=0)
v_dir = v_d / np.linalg.norm(v_d, axis=0)
cross = np.abs(u_dir[:, :2].T @ v_dir[:, :2])
cos_off = float(max(cross[0, 1], cross[1, 0]))  # max_{k != l} |cos(u^d_k, v^d_l)|, k, l in {1, 2}
rand_cos = np.array([cosine_columns(a, b)[0] for a, b in
                     (np.random.default_rng(seed + i).standard_normal((2, d, 1)) for i in range(200))])
cos_table = pd.DataFrame({"value": [float(cos_uv[:2].min())], "off-diagonal max |cos|": [cos_off],
                          "chance mean": [float(rand_cos.mean())], "chance std": [float(rand_cos.std())]},
                         index=["min_k<=2 cos(u^d_k, v^d_k)"]).round(3)
display(cos_table)
print(f"limit geometry: max |u^d_k - sqrt(sigma_k) R e_k|, |v^d_k - ...| = {limit_err:.1e}")
pd.DataFrame({"k": np.arange(1, r + 1), "sigma_k": sigma.round(3), "cos(u^d_k, v^d_k)": cos_uv.round(4),
              "||u^d_k|| / ||v^d_k||": (np.linalg.norm(u_d, axis=0) / np.linalg.norm(v_d, axis=0)).round(3),
              "max_l!=k |cos(u^d_k, u^d_l)|": np.abs(u_dir.T @ u_dir - np.eye(r)).max(axis=1).round(3)})

# %% mystnb={"figure": {"caption": "Context (left) and word (right) embeddings projected on the plane of two concept representations; reproduces paper B, Fig. 10 (App. B).", "name": "fig-b01-fig10"}, "image": {"alt": "Two scatter plots of embeddings on the plane of two concept directions."}}
panels = [("Left: context embeddings (columns of H)", H.T, v_d, ctx_labels, ctx_colors, "^"),
          ("Right: word embeddings (rows of W)", W, u_d, word_labels, word_colors, "o")]
plane_share = {}
plane_panels = []
for title, X, reps, labels, colors, marker in panels:
    Q, _ = np.linalg.qr(reps[:, :2])  # orthonormal basis of span{rep_1, rep_2}
    Q *= np.sign(np.diag(Q.T @ reps[:, :2]))  # 1st vector along rep_1, 2nd on the side of rep_2
    P2 = X @ Q
    plane_share[title.split(":")[0]] = np.linalg.norm(P2) ** 2 / np.linalg.norm(X) ** 2
    plane_panels.append((title, P2, [Q.T @ reps[:, k] for k in (0, 1)], labels, colors, marker))
concept_plane_figure(plane_panels)
plt.show()
print("share of the embeddings' squared norm in that plane:", ", ".join(f"{k} {float(v):.3f}" for k, v in plane_share.items()))

# %% [markdown]
# Projections on the concept axes (Fig. 10 caption: animals positive and plants negative on axis 1;
# mammals positive and other animals negative on axis 2):

# %%
coord_w = concept_coordinates(W, u_d[:, :2])
coord_h = concept_coordinates(H.T, v_d[:, :2])
mammal_words = np.array([w in classes["Mammals"] for w in words])
axis2_named = {"cat": coord_w[w_idx["cat"], 1], "trout": coord_w[w_idx["trout"], 1],
               "stays warm-blooded": coord_h[a_idx["stays warm-blooded"], 1],
               "has feathers": coord_h[a_idx["has feathers"], 1]}
axis1_frac = float(np.mean(np.r_[np.sign(coord_w[:, 0]) == np.where(is_animal_word, 1, -1),
                                 np.sign(coord_h[:, 0]) == np.where(is_animal_ctx, 1, -1)]))
axis2_frac = float(np.mean(np.r_[coord_w[mammal_words, 1] > 0, coord_w[is_animal_word & ~mammal_words, 1] < 0,
                                 [axis2_named["cat"] > 0, axis2_named["trout"] < 0,
                                  axis2_named["stays warm-blooded"] > 0, axis2_named["has feathers"] < 0]]))
print("second coordinate:", ", ".join(f"{k} {float(v):.3f}" for k, v in axis2_named.items()))

# %% [markdown]
# ## Fig. 2C: the training data
#
# $\boldsymbol P^\top$ (attributes are rows, subjects are columns), and the table itself.

# %% mystnb={"figure": {"caption": "The training data P transposed: attributes as rows, subjects as columns; reproduces paper B, Fig. 2C.", "name": "fig-b01-fig2c"}, "image": {"alt": "Heatmap of the organism training data, attributes by subjects."}}
P = data.P.toarray()
organism_data_figure(P, words, attributes)
plt.show()

# %%
pd.DataFrame({"attribute (context)": attributes, "support class": attr_class,
              "subjects (next tokens)": [", ".join(table[a]) for a in attributes]})

# %% [markdown]
# ## Checks
#
# Paper numbers: rank$(\widetilde{\boldsymbol S})=6$ (Figs. 1, 2); everything else in these figures is
# qualitative. The rank, the sign statements of Fig. 1 and the nesting of Fig. 2B are properties of
# $\widetilde{\boldsymbol S}$ alone, and our table was *constructed* to have them: the rank is a sanity line, not
# evidence; the signs and the nesting are judged with their control (the subjects' names permuted: on that table
# the signs hold for a fraction {glue:text}`b01_fig1_permuted:.2f` and the nesting for
# {glue:text}`b01_nesting_permuted:.2f`), and remain statements about a table built to satisfy them. The mathematical facts ($\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$, eq. 4) are
# checks; the statements about trained embeddings are judged by the rules pre-registered before training,
# against chance and against the same measures for the UFM at initialization (computed first).

# %%
def concept_fractions(W_: np.ndarray, H_: np.ndarray) -> dict[str, float]:
    """The measures of the claims above for embeddings (W_, H_): Fig. 2A's PC 1 fraction, Fig. 10's min
    cos(u^d_k, v^d_k) over k = 1, 2 and its axis 1 / axis 2 sign fractions (the cells above, as one function)."""
    pca = PCA(n_components=3).fit(np.vstack([W_, H_.T]))
    pw, ph = pca.transform(W_)[:, 0], pca.transform(H_.T)[:, 0]
    o = np.sign(np.median(pw[is_animal_word]))
    u_, v_ = concept_representations(W_, H_, U, Vt)
    cw, ch = concept_coordinates(W_, u_[:, :2]), concept_coordinates(H_.T, v_[:, :2])
    named = [cw[w_idx["cat"], 1] > 0, cw[w_idx["trout"], 1] < 0, ch[a_idx["stays warm-blooded"], 1] > 0,
             ch[a_idx["has feathers"], 1] < 0]
    return {"b01_pc1": float(np.mean(np.r_[o * pw * np.where(is_animal_word, 1, -1) > 0,
                                           o * ph * np.where(is_animal_ctx, 1, -1) > 0])),
            "b01_cos": float(cosine_columns(u_, v_)[:2].min()),
            "b01_axis1": float(np.mean(np.r_[np.sign(cw[:, 0]) == np.where(is_animal_word, 1, -1),
                                             np.sign(ch[:, 0]) == np.where(is_animal_ctx, 1, -1)])),
            "b01_axis2": float(np.mean(np.r_[cw[mammal_words, 1] > 0, cw[is_animal_word & ~mammal_words, 1] < 0,
                                             named]))}


trained_fractions = concept_fractions(W, H)
assert trained_fractions == {"b01_pc1": pc1_frac, "b01_cos": float(cos_uv[:2].min()), "b01_axis1": axis1_frac,
                             "b01_axis2": axis2_frac}, "concept_fractions must repeat the cells above"
untrained = concept_fractions(*hist.at_initialization())  # the same UFM before its first GD step
perm = np.random.default_rng(seed).permutation(data.V)  # the control's permutation of the subjects
permuted = concept_fractions(W[perm], H)  # control: word i gets the trained embedding of word perm[i]
display(pd.DataFrame({"trained": trained_fractions, "untrained (step 0)": untrained,
                      "control: word labels permuted": permuted}).round(3))


def nesting_fraction(U_: np.ndarray, Vt_: np.ndarray, table_: dict[str, list[str]]) -> float:
    """Fig. 2B's measure: the fraction of the three orthants [+1], [+1,+1], [+1,+1,-1] on K={1,2,4} (of the
    context analyzers ``Vt_.T``) that are non-empty and equal to the attributes whose subjects (``table_``)
    are all animals, all mammals, all felines."""
    found = orthant_hierarchy(Vt_.T, dims, our_config)
    expected = [{a for a in attributes if set(table_[a]) <= set(classes[c])} for c in ("Animals", "Mammals",
                                                                                        "Felines")]
    return float(np.mean([len(f) > 0 and {attributes[j] for j in f} == e
                          for f, e in zip(found, expected, strict=True)]))


# control of Figs. 1 and 2B: the same table with the subjects' names permuted (same supports, other names)
table_permuted = {a: [words[perm[w_idx[w]]] for w in subjects] for a, subjects in table.items()}
S_perm = np.zeros_like(S)
for j, a in enumerate(attributes):
    S_perm[[w_idx[w] for w in table_permuted[a]], j] = 1
U_perm, sigma_perm, Vt_perm = svd_factors(centered_support(S_perm))
fig1_table_permuted = pd.DataFrame(
    [{"match": bool(np.sign(U_perm[w_idx[item], k - 1] if side == "u" else Vt_perm[k - 1, a_idx[item]])
                    == paper_sign)} for side, k, item, paper_sign, _ in fig1_claims])
record("b01_fig1_permuted", float(fig1_table_permuted["match"].mean()))
record("b01_nesting_permuted", nesting_fraction(U_perm, Vt_perm, table_permuted))
if nesting_fraction(U, Vt, table) != float(nesting["= attributes of that class"].all() and all(map(len, levels))):
    raise ValueError("nesting_fraction must repeat the Fig. 2B cell above")

# %%
check("rank(S~) of the organism data (the table was built to have it)", r == 6, measured=r, paper=6, tol="exact",
      sanity=True, item="B:Fig 1")
check("L^mm = S~ (proxy exact for this data): normalized distance", lmm_gap < 1e-5, measured=lmm_gap,
      paper="S~ ~ L^mm (proxy)", tol="1e-5 (solver precision)", item="B:Fig 1")
check("App. B eq. 4: u^d_k = v^d_k = sqrt(sigma_k) R e_k for W = U Sigma^1/2 R^T, H = R Sigma^1/2 V^T",
      limit_err < 1e-10, measured=limit_err, paper="equal", tol="1e-10", item="B:Fig 10")

record("b01_axis1_untrained", untrained["b01_axis1"])
record("b01_axis2_untrained", untrained["b01_axis2"])
record("b01_ce_gap", float(ce_gap))
record("b01_dir_err", float(normalized_distance(W @ H, S_tilde)))
record("b01_cos_min", float(cos_uv[:2].min()))
record("b01_cos_off", cos_off)
record("b01_cos_chance", float(rand_cos.mean()))
ce_steps, ce_curve = hist.curve("ce_minus_H")
if ce_steps[0] != 0:
    raise ValueError("the CE - H curve must start at step 0 (the untrained control)")
ce_gap_untrained = record("b01_ce_gap_untrained", float(ce_curve[0] / data.entropy))
claims.b01_ce_gap.judge(float(ce_gap / data.entropy), control=ce_gap_untrained)
claims.b01_pc1.judge(pc1_frac, baselines={"coin flip": 0.5, "untrained": untrained["b01_pc1"]},
                     control=permuted["b01_pc1"])
claims.b01_cos.judge(float(cos_uv[:2].min()), baselines={"random directions": float(rand_cos.mean()),
                                                         "untrained": untrained["b01_cos"]},
                     control=permuted["b01_cos"], note=f"off-diagonal max |cos| = {cos_off:.3f}")
claims.b01_axis1.judge(axis1_frac, baselines={"coin flip": 0.5, "untrained": untrained["b01_axis1"]},
                       control=permuted["b01_axis1"])
claims.b01_axis2.judge(axis2_frac, baselines={"coin flip": 0.5, "untrained": untrained["b01_axis2"]},
                       control=permuted["b01_axis2"])
claims.b01_fig1_signs.judge(float(fig1_table["match"].mean()), control=float(fig1_table_permuted["match"].mean()),
                            note="our table was built to satisfy these signs")
claims.b01_nesting.judge(nesting_fraction(U, Vt, table), control=nesting_fraction(U_perm, Vt_perm, table_permuted),
                         note="our table was built to satisfy the nesting")
claims_table()

# %% [markdown]
# ## What differs from the paper and why
#
# * **The dataset is reconstructed.** The paper names 10 subjects and 8 attributes; the remaining entries of
#   Fig. 2C are our design (`ntputils.data.corpora.organism_templates`), chosen so that rank$(\widetilde{\boldsymbol S})=6$
#   and every sign statement of Figs. 1, 2B and 10 holds. Our singular values are therefore not the paper's
#   (its Fig. 1B shows the bars without numbers).
# * **Signs.** Our rule (largest $|$entry$|$ of $\boldsymbol u_k$ positive) reproduces Fig. 1's signs. Fig. 2B
#   of the paper uses the opposite sign on dims 1 and 2 ("animal" $=c_{k_1}=-1$): the two figures of the paper
#   use different sign conventions, which singular vectors allow. Our nested configurations are
#   $[+1]\supset[+1,+1]\supset[+1,+1,-1]$; the sets are the same.
# * **Training (Figs. 2A, 10) is UNKNOWN in the paper.** We use the NTP-UFM with CE, $d=2V$, plain GD from a
#   small random initialization. The CE-trained logits converge to the direction of
#   $\boldsymbol L^{\rm mm}=\widetilde{\boldsymbol S}$ only logarithmically slowly (the direction error at the
#   end of this run is {glue:text}`b01_dir_err:.2f`), so the concept representations coincide most closely for
#   the dominant concepts (min cos {glue:text}`b01_cos_min:.3f` for $k=1,2$, against an off-diagonal
#   {glue:text}`b01_cos_off:.3f` and a chance level of {glue:text}`b01_cos_chance:.3f`) and less for the weak
#   ones; the table above lists all six. In the limit geometry they coincide exactly.
# * Fig. 10 uses the plane spanned by $\boldsymbol u^{\rm d}_1,\boldsymbol u^{\rm d}_2$ (resp.
#   $\boldsymbol v^{\rm d}_1,\boldsymbol v^{\rm d}_2$) instead of the top-2 PCA plane, which in our run hides the second
#   concept axis (see the note above the figure); the quantitative statements of its caption are checked in
#   the full $d$-dimensional space.
# * **At the shown seed the axis signs of Fig. 10 do not test training.** The same UFM at initialization already
#   puts a fraction {glue:text}`b01_axis1_untrained:.2f` (axis 1) and {glue:text}`b01_axis2_untrained:.2f` (axis 2)
#   of the items on the caption's side. The coordinate of word $i$ along
#   $\boldsymbol u^{\rm d}_k=\boldsymbol W^\top\boldsymbol u_k$ is $(\boldsymbol W\boldsymbol W^\top\boldsymbol u_k)_i$
#   up to a positive factor, and for a random $\boldsymbol W$ with $d>V$, $\boldsymbol W\boldsymbol W^\top$ is roughly
#   a multiple of the identity, so the coordinates tend to carry the signs of $\boldsymbol u_k$, a property of
#   $\widetilde{\boldsymbol S}$ alone. At this seed that holds for every item, so by the pre-registered rule these
#   two claims are scored as deviations here. This is seed-specific: in the per-seed table of the paper profile
#   below, the initialization misses some items at most other seeds, so there the claims do test training;
#   across seeds axis 1 is reproduced and axis 2 is fragile. What training adds at every seed of that table is
#   the alignment of $\boldsymbol u^{\rm d}_k$ with $\boldsymbol v^{\rm d}_k$ (the cosine claim) and Fig. 2A's
#   PC 1 split.

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (the sizes and steps of
# `notebooks/b01_organism_concepts.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks
# were committed under `results/sweeps/b01-paper/` with their provenance (commit, machine, date, wall
# time). Below they stand beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.

# %%
from ntputils.chapter import (
    current_record,  # noqa: E402
    show_paper_profile,  # noqa: E402
)

paper_view = show_paper_profile("b01", current_record(), profile)
