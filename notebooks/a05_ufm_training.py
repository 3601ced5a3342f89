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
# # Training NTP-UFM: convergence to the predicted geometry (Figs. 1, 4, 5, 6)
#
# The previous chapters derived what paper A {cite}`zhao2024implicit` predicts for the NTP
# unconstrained-features model (NTP-UFM) as its loss approaches the empirical entropy $\mathcal H$:
# the logits $\boldsymbol L_k=\boldsymbol W_k\boldsymbol H_k$ after $k$ steps split into
#
# * an **in-support part** that converges: $\mathcal P_{\mathcal F}(\boldsymbol L_k)\to\boldsymbol L^{\rm in}$
#   (the soft-label log-odds inside every support set), and
# * a **diverging part** in $\mathcal F^\perp$ whose *direction* tends to the max-margin logits
#   $\boldsymbol L^{\rm mm}$ (nuclear-norm NTP-SVM; a function of the support matrix $\boldsymbol S$ only),
#
# so that the embeddings take the geometry of the SVD factors
# $\boldsymbol W^{\rm mm}=\boldsymbol U\boldsymbol\Sigma^{1/2}$, $\boldsymbol H^{\rm mm}=\boldsymbol\Sigma^{1/2}\boldsymbol V^\top$
# of $\boldsymbol L^{\rm mm}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top$ (contexts with the same support
# collapse onto one direction: *subspace collapse*), and approximately that of the proxy
# $\widetilde{\boldsymbol S}=(\mathbb I-\tfrac1V\mathbb 1\mathbb 1^\top)\boldsymbol S$.
#
# This chapter trains NTP-UFM on paper A's two datasets and reproduces
#
# * **Fig. 6, UFM rows** ("Experiments on Synthetic and Simplified TinyStories datasets"):
#   (a) CE $-\,\mathcal H$ on log-log axes, (b) growth of $\|\boldsymbol W_k\|_F$ (dashed) and $\|\boldsymbol H_k\|_F$
#   (solid), (c) $\|\mathcal P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol L^{\rm in}\|_F$, (d)
#   $\mathrm{sim}(\boldsymbol H_k,\widetilde{\boldsymbol S})$ and $\mathrm{sim}(\boldsymbol W_k^\top,\widetilde{\boldsymbol S}^\top)$,
#   (e) $\mathrm{sim}(\boldsymbol H_k,\boldsymbol H^{\rm mm})$ and $\mathrm{sim}(\boldsymbol W_k^\top,{\boldsymbol W^{\rm mm}}^\top)$;
# * **Fig. 4**: snapshots of $\mathrm{corr}(\boldsymbol H_k)$, $\mathrm{corr}(\boldsymbol W_k^\top)$ and $\boldsymbol L_k$
#   during training, beside the theory ($\mathrm{corr}(\boldsymbol H^{\rm mm})$, $\mathrm{corr}({\boldsymbol W^{\rm mm}}^\top)$,
#   $\boldsymbol L^{\rm mm}$) and the proxy ($\mathrm{corr}(\widetilde{\boldsymbol S})$, $\mathrm{corr}(\widetilde{\boldsymbol S}^\top)$);
# * **Fig. 5** (training curves of the same run) and **Fig. 1 (b)–(d)**: NTP-UFM, theory and proxy
#   geometry on Simplified TinyStories, with word and context labels.
#
# $\mathrm{corr}(\boldsymbol A)$ is the cosine similarity of the columns of $\boldsymbol A$ and
# $\mathrm{sim}(\boldsymbol A,\boldsymbol B)=\mathrm{SIM}(\mathrm{corr}\,\boldsymbol A,\mathrm{corr}\,\boldsymbol B)$ the
# structure term of SSIM (the Pearson correlation of the entries of the two similarity matrices, the
# authors' code; paper A Fig. 6d-e). The metrics are computed by `ntputils.analysis.convergence` from the
# training history, the figures drawn by `ntputils.plots`; the transformer chapters reuse both.
#
# **UNKNOWN / RECONSTRUCTED / PROPOSED.**
#
# * The paper's text for Figs. 4–5 (Sec. "ufmexp") is not available: the caption of Fig. 5 and the dataset
#   and sizes behind Fig. 4 are **UNKNOWN**. We draw Fig. 4 for the Synthetic data (**PROPOSED**)
#   and also for Simplified TinyStories; Fig. 5 is **PROPOSED** as the curves of the Fig. 4 run.
# * Both datasets are rebuilt from the authors' recipe (`ntputils.data.corpora`). The
#   authors' exact Simplified-TinyStories file is not public and their random counts come from a
#   different generator draw, so $V$, $m$, $n$ and $\mathcal H$ differ from the paper's (table below).
# * Optimizer (authors' code): full-batch AdamW, lr $10^{-4}$, weight decay $10^{-6}$,
#   lr $\times0.4$ every 5,000 steps, 30,000 steps, $d=128$ — the `paper` profile. The `cpu` profile
#   keeps AdamW, $d=128$, the weight decay and the decay factor `gamma`, but takes **far fewer steps (`steps`)
#   at a far larger initial learning rate (`lr`)**, decayed at the steps `milestones`. Whether the two
#   schedules end at the same place is answered by the table of the last section, which sets the committed
#   `paper`-profile run beside this one: every claim has the same outcome at both profiles except
#   `a05_STS_norms` (discussed there), and the paper profile ends somewhat closer to the direction of
#   $\boldsymbol L^{\rm mm}$ on both datasets.
#   The initialization (i.i.d. $\mathcal N(0,0.1^2)$ entries) is ours; the authors use PyTorch's default
#   `nn.Linear` initialization.
# * $\boldsymbol L^{\rm mm}$: the authors solve the program with cvxpy/SCS. We use the certified first-order
#   solver `ntputils.geometry.maxmargin_admm.solve_max_margin` (its duality gap is printed; SCS takes minutes at
#   the Simplified-TinyStories size), and check it against cvxpy on the Synthetic data.

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of a05_ufm_training.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
d = 128          # embedding dimension (paper: 128 > V)
steps = 2000     # full-batch AdamW steps
lr = 1e-2        # initial learning rate
milestones = [1000, 1500]  # steps at which the learning rate is multiplied by gamma
gamma = 0.4      # learning-rate decay factor
weight_decay = 1e-6  # AdamW (decoupled) weight decay
init_scale = 0.1  # std of the i.i.d. normal initialization of W and H
n_log = 40       # number of log-spaced steps with logged curves and W, H, L snapshots
lmm_solver = "fast"  # "fast" (certified ADMM) or "cvxpy" (SCS) for L^mm
dtype = "float64"  # "float64" or "float32"

# %%
# %matplotlib inline

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import display

from ntputils import plots
from ntputils.analysis.baselines import similarity_with_chance
from ntputils.analysis.controls import (
    distance_curve,
    random_f_target,
    residual_ratio_control,
    spectrum_matched_random,
)
from ntputils.analysis.convergence import (
    GeometryReference,
    convergence_curves,
    residual_ratio,
    support_group_order,
    word_order,
)
from ntputils.analysis.metrics import normalized_distance
from ntputils.analysis.ufm_memory import ufm_runs_bytes
from ntputils.chapter import (
    ParameterError,
    at_least,
    at_most,
    available_memory_bytes,
    between,
    check,
    claims_table,
    compare_similarity,
    preregister,
    preregister_similarity,
    published,
    record,
    recorded_values,
    setup_chapter,
    within,
)
from ntputils.data.corpora import paper_a_synthetic, paper_a_tinystories, paper_a_tinystories_details
from ntputils.data.corpora.paper_a import (
    SEARCH_MAX_COUNTS,
    SEARCH_SUPPORT_SIZES,
    synthetic_entropy_floor,
    synthetic_recipe_search,
)
from ntputils.data.corpora.variants import SYNONYMS
from ntputils.data.synthetic import random_supports
from ntputils.geometry import (
    centered_support,
    in_support_logits,
    max_margin_cached,
    max_margin_logits,
    mm_embeddings,
    nuclear_norm,
)
from ntputils.training import ufm
from ntputils.training.history import log_spaced_steps

# one torch thread on the CPU: 100 x 400 matrices, intra-op threads only add overhead on a shared CPU
run = setup_chapter(globals(), torch_threads=lambda device: 1 if device == "cpu" else None)

# %% [markdown]
# ## The two datasets
#
# *Synthetic*: {glue:text}`a05_syn_m` five-word template contexts ("lily wants to try the"), each keeping 3 of
# its possible endings with counts 1–2, with overlapping supports. *Simplified TinyStories* (STS): frequent 5-word contexts
# of TinyStories, expanded by tense variants, a hand synonym table and up to 10 WordNet synonyms of their other
# adjectives and nouns (WordNet 3.0 read offline with NLTK, `ntputils.data.corpora.wordnet`), every variant
# inheriting the original's next-token support; counts re-sampled in $\{1,\dots,4\}$ — so groups of contexts share
# a support set. The authors' STS rests on an excerpt they call "the first 2,000 lines" of TinyStories; their file
# is not public. We read those lines (`n_lines=2000`) as a one-story-per-line dump with blank lines between stories
# (the first 1,000 stories of the training file; `layout="stories"`, the default) and show the literal reading, the
# same number of lines of the official `TinyStories-train.txt` from its start (one paragraph per line;
# `layout="paragraphs"`), beside it.
#
# **Rules, fixed before the datasets are built** (STS against the paper's $m=403$, $V=104$, $n=5{,}110$,
# $\mathcal H=1.6597$): $m$, $V$ and $n$ within 5% of the paper's values (the tolerance of the rule, fixed before
# the data were built; it is not a target the rebuild was tuned to); $\mathcal H$ within 0.05 of 1.6597 — the authors' own re-run of their recipe gave 1.6156, 0.044 lower, from a
# different draw of the counts alone. These judge the default reading.
#
# **Negative control, fixed before the datasets are built.** Each of the four statistics is measured again on
# the literal reading of the excerpt's lines (the paragraphs reading below: the same recipe on another excerpt).
# If that reading also met a rule, the rule could not tell the authors' reading of their excerpt from another
# one, and the claim reads "cannot fail".

# %%
PARAGRAPHS = "the same statistic for the paragraphs reading of the 2,000 lines (the recipe on another excerpt)"
sts_claims = preregister({
    "a05_sts_m": ("STS: number of distinct contexts m (paper 403)", within(403, rel_tol=0.05), "A:Fig 6"),
    "a05_sts_V": ("STS: next-token vocabulary V (paper 104)", within(104, rel_tol=0.05), "A:Fig 6"),
    "a05_sts_n": ("STS: number of samples n (paper 5,110)", within(5110, rel_tol=0.05), "A:Fig 6"),
    "a05_sts_H": ("STS: empirical entropy H (paper 1.6597, re-run 1.6156)", within(1.6597, abs_tol=0.05),
                  "A:Fig 6"),
}, controls={key: PARAGRAPHS for key in ("a05_sts_m", "a05_sts_V", "a05_sts_n", "a05_sts_H")})

# %%
sts_details = paper_a_tinystories_details()
datasets = {"Synthetic": paper_a_synthetic(), "STS": sts_details.data}
LOG_STEPS = sorted(set(log_spaced_steps(steps, n_log)) | {10, 100})  # the steps each run keeps W, H, L at

# Both runs keep their snapshots to the end, so the chapter's peak memory is checked here, before the solves and
# the training: parameters that cannot fit fail now, not after the first run (`ntputils.analysis.ufm_memory`).
need = ufm_runs_bytes([(x.V, x.m) for x in datasets.values()], d, len(LOG_STEPS))
if need > (have := available_memory_bytes()):
    raise ParameterError(f"d={d} with n_log={n_log} ({len(LOG_STEPS)} snapshots per run, both runs kept) "
                         f"needs about {need / 2**30:.3g} GiB, only {have / 2**30:.3g} GiB are available; "
                         "lower d or n_log")
variants = {"STS, paragraphs reading": paper_a_tinystories(layout="paragraphs"),
            "STS without the WordNet step": paper_a_tinystories(wordnet=False)}
PAPER_DATA = {"Synthetic": {"V": 30, "m": 16, "n": 72, "H": 1.0166},
              "STS": {"V": 104, "m": 403, "n": 5110, "H": "1.6597 (re-run 1.6156)"}}


def n_groups(data) -> int:
    """Distinct support sets (groups of contexts with the same support)."""
    return len(np.unique(data.S.toarray().T, axis=0))


rows = []
for name, data in {**datasets, **variants}.items():
    paper = PAPER_DATA["Synthetic" if name == "Synthetic" else "STS"]
    rows.append({"dataset": name, "m": data.m, "m (paper)": paper["m"], "V": data.V, "V (paper)": paper["V"],
                 "n": data.n, "n (paper)": paper["n"], "H": round(data.entropy, 4), "H (paper)": paper["H"],
                 "support groups": n_groups(data), "d >= V": d >= data.V})
display(pd.DataFrame(rows).set_index("dataset"))
sts = datasets["STS"]
kinds = pd.Series(sts_details.kind).value_counts()
WN = [sts.context_str(j) for j in range(sts.m) if sts_details.kind[j] == "wordnet"]
print(f"contexts by origin: {', '.join(f'{k} {n}' for k, n in kinds.items())}; WordNet variants: {' | '.join(WN)}")

# %% [markdown]
# Our STS has {glue:text}`a05_sts_base` base contexts from the corpus, expanded into {glue:text}`a05_sts_m` contexts
# ({glue:text}`a05_sts_kind_tense` tense, {glue:text}`a05_sts_kind_synonym` hand-table and
# {glue:text}`a05_sts_kind_wordnet` WordNet variants) in {glue:text}`a05_sts_groups` support groups, with
# $V=$ {glue:text}`a05_sts_V`, $n=$ {glue:text}`a05_sts_n` and $\mathcal H=$ {glue:text}`a05_sts_H:.4f`. The WordNet
# step adds the variants of the one noun outside the hand table that sits in a changeable position ("friends"
# in "friends . they like to"); the authors' tokenizer vocabulary shows the same WordNet words (ally,
# acquaintance, supporter, protagonist, champion, admirer, booster, quaker: the senses of "friend"), so their
# excerpt, too, had a single such context. The literal reading of the paper's "2,000 lines" gives far fewer
# frequent contexts ($m=$ {glue:text}`a05_sts_par_m`, $V=$ {glue:text}`a05_sts_par_V`). What remains of the gap in $m$ and $n$ is
# the excerpt: which 5-grams are frequent decides how many base contexts there are, how many of them carry a
# hand-table word (little, girl, boy, day, lily, tim/timmy, loved/liked, big) in one of their first three
# positions — each such word adds {glue:text}`a05_sts_table_min`–{glue:text}`a05_sts_table_max` variants, the
# length of its row of the table — and how large their supports are ($n/m$ is the mean support size times the
# mean count, $\tfrac52$ for counts uniform in $\{1,\dots,4\}$). The authors' vocabulary contains next tokens
# such as "motorcycles", "rockets" and "winter" after names and "loved", which none of the shared TinyStories files yields at these frequencies.

# %%
record("a05_sts_m", sts.m, paper=403)
record("a05_sts_V", sts.V, paper=104)
record("a05_sts_n", sts.n, paper=5110)
record("a05_sts_H", float(sts.entropy), paper=1.6597)
record("a05_sts_base", len(sts_details.base_contexts))
record("a05_sts_groups", n_groups(sts))
for kind in ("original", "tense", "synonym", "wordnet"):
    record(f"a05_sts_kind_{kind}", int(kinds.get(kind, 0)))
record("a05_sts_par_m", variants["STS, paragraphs reading"].m)
record("a05_sts_par_V", variants["STS, paragraphs reading"].V)
record("a05_sts_nown_m", variants["STS without the WordNet step"].m)
record("a05_syn_m", datasets["Synthetic"].m)
record("a05_sts_table_min", min(len(row) for row in SYNONYMS.values()))  # variants a hand-table word adds
record("a05_sts_table_max", max(len(row) for row in SYNONYMS.values()))
par = variants["STS, paragraphs reading"]  # the control: the same recipe on the literal reading
record("a05_sts_par_n", par.n)
record("a05_sts_par_H", float(par.entropy))
for claim, value, control in ((sts_claims.a05_sts_m, sts.m, par.m), (sts_claims.a05_sts_V, sts.V, par.V),
                              (sts_claims.a05_sts_n, sts.n, par.n),
                              (sts_claims.a05_sts_H, float(sts.entropy), float(par.entropy))):
    claim.judge(value, control=control,
                note="a different TinyStories excerpt (the authors' file is not public); see the text above")
claims_table()

# %% [markdown]
# ### Synthetic: can the recipe give the paper's $n=72$, $\mathcal H=1.0166$?
#
# The authors' sampler keeps 3 endings per context with counts in $\{1,2\}$ (their `repeat_range=3`). Every
# context then has entropy at least $H(\tfrac14,\tfrac14,\tfrac12)=\tfrac32\ln 2$, so no draw reaches the
# paper's 1.0166; among the draws with exactly $n=72$ the smallest possible $\mathcal H$ is a knapsack over the per-context count
# vectors, solved exactly (`ntputils.data.corpora.paper_a.synthetic_entropy_floor`). The recipe's other free choices
# are the number of endings kept (one of {glue:text}`a05_search_sizes`; "random" is a size uniform in 1..#endings:
# the sampler's `set_s` options), the count range ($\{1..2\}$, $\{1..3\}$, $\{1..4\}$) and the random state (the
# first 300 seeds here; the authors' seed 1634 is set at import, after which other code may draw). The table
# lists, per choice, how many seeds give $n=72$ and, among them, the $\mathcal H$ closest to 1.0166, with that seed and its $V$.

# %%
search = synthetic_recipe_search(seeds=300)
floor_any = synthetic_entropy_floor(3, 2)
floor_72 = synthetic_entropy_floor(3, 2, n=72)
floor_72_c3 = synthetic_entropy_floor(3, 3, n=72)
rows = []
for size in SEARCH_SUPPORT_SIZES:
    for mc in SEARCH_MAX_COUNTS:
        sel_ = (search["support_size"] == str(size)) & (search["max_count"] == mc)
        hit = sel_ & (search["n"] == 72)
        row = {"endings kept": size, "counts": f"1..{mc}", "n range": f"{search['n'][sel_].min()}-"
               f"{search['n'][sel_].max()}", "seeds with n = 72": int(hit.sum())}
        if hit.any():
            i = np.flatnonzero(hit)[np.argmin(np.abs(search["H"][hit] - 1.0166))]
            row.update({"closest H": round(float(search["H"][i]), 4), "seed": int(search["seed"][i]),
                        "V": int(search["V"][i])})
        rows.append(row)
display(pd.DataFrame(rows).set_index(["endings kept", "counts"]))
at72 = search["n"] == 72
best = np.flatnonzero(at72)[np.argmin(np.abs(search["H"][at72] - 1.0166))]

# %%
record("a05_syn_floor", floor_any)
record("a05_search_sizes", ", ".join(str(size) for size in SEARCH_SUPPORT_SIZES))
# n = 72 over m contexts with 3 endings each: the mean count a draw must reach
record("a05_syn_mean_count72", 72 / (3 * datasets["Synthetic"].m))
record("a05_syn_floor72", floor_72)
record("a05_syn_floor72_c3", floor_72_c3)
record("a05_syn_search_best_H", float(search["H"][best]), paper=1.0166)
record("a05_syn_search_best_seed", int(search["seed"][best]))
record("a05_syn_search_best_size", str(search["support_size"][best]))
record("a05_syn_search_best_counts", int(search["max_count"][best]))
check("Synthetic: no searched draw with 3 endings and counts {1,2} and n = 72 lies below the exact floor",
      bool(np.all(search["H"][at72 & (search["support_size"] == "3") & (search["max_count"] == 2)]
                  >= floor_72 - 1e-12)), measured=floor_72, tol="exact floor", sanity=True)
claims_table()

# %% [markdown]
# With 3 endings and counts $\{1,2\}$ (the authors' setting) $\mathcal H\ge$ {glue:text}`a05_syn_floor:.4f` for any
# draw and $\ge$ {glue:text}`a05_syn_floor72:.4f` for a draw with $n=72$. Over all searched choices the draw with
# $n=72$ closest to the paper has $\mathcal H=$ {glue:text}`a05_syn_search_best_H:.4f` (seed
# {glue:text}`a05_syn_search_best_seed`, {glue:text}`a05_syn_search_best_size` endings, counts up to
# {glue:text}`a05_syn_search_best_counts`): no choice reproduces $n=72$ together with $\mathcal H=1.0166$. Counts in
# $\{1,2,3\}$ could reach it in principle (their floor at $n=72$ is {glue:text}`a05_syn_floor72_c3:.4f`), but
# $n=72$ then needs an average count of {glue:text}`a05_syn_mean_count72:.2g` where the mean is 2, and no
# searched seed draws it. The published $\mathcal H$ therefore comes from a variant of the recipe we cannot identify (e.g. another template file or
# sampler version); our Synthetic data keep the stated recipe with the authors' seed.

# %% [markdown]
# ## Theory and proxy: $\boldsymbol L^{\rm in}$, $\boldsymbol L^{\rm mm}$, $\widetilde{\boldsymbol S}$
#
# $\boldsymbol L^{\rm mm}$ is cached on disk by a hash of $\boldsymbol S$
# (`ntputils.geometry.max_margin_cached`). The paper's text gives no numbers for it; the authors' console logs
# report, on their Simplified TinyStories, $\|\boldsymbol L^{\rm mm}\|_*=197.88$ against $\|\widetilde{\boldsymbol S}\|_*=199.14$
# (the proxy is feasible, so always $\|\boldsymbol L^{\rm mm}\|_*\le\|\widetilde{\boldsymbol S}\|_*$), ranks 30–31
# against 31, and a normalized distance 0.163 between the two: the proxy is close but not exact. The same logs
# give $\|\boldsymbol L^{\rm in}\|_F=21.15$ (ours: {glue:text}`a05_sts_Lin_norm:.2f`) and, at the end of their
# transformer's training, $\|\boldsymbol L_k-\boldsymbol L^{\rm in}\|_F/\|\boldsymbol L_k\|_F=0.9997$: the logits are
# dominated by their $\mathcal F^\perp$ part (ours, for the STS UFM at the end of training:
# {glue:text}`a05_sts_residual_ratio:.4f`, judged after training below).
#
# **Rules, fixed before the computation** (Simplified TinyStories; neither the paper nor the authors' logs give
# these quantities for the Synthetic data). Our corpus is a rebuild from another excerpt (above); the authors' own re-run of their recipe moved the entropy by 3% (1.6597 to 1.6156), and a
# different excerpt should move a support-structure quantity by more. We therefore allow about 20% of the
# authors' logged distance, `within(0.163, abs_tol=0.03)`; for the ratio of nuclear norms (at most 1 by feasibility)
# `within(0.9937, abs_tol=0.01)`, about the authors' logged gap between the norms; for the ranks a deficit
# $\mathrm{rank}\,\widetilde{\boldsymbol S}-\mathrm{rank}\,\boldsymbol L^{\rm mm}$ of 0 or 1, as in the authors' logs. For the
# authors' logged numbers: $\|\boldsymbol L^{\rm in}\|_F$ within 5% of 21.15, and the residual ratio of the trained UFM
# within 0.01 of 0.9997.
#
# **Negative controls, fixed before the computation.** The distance, the nuclear-norm ratio and the rank deficit
# are measured again on a random support matrix of the shape of our STS (Zipf-random supports, sizes
# as on the subspace-collapse page): it has none of the corpus's structure, so a rule it also meets cannot tell
# whether the proxy's closeness is a property of the data. $\|\boldsymbol L^{\rm in}\|_F$ is measured again on the
# paragraphs reading (the recipe on another excerpt). The residual ratio is measured again for
# $\boldsymbol L^{\rm in}+\boldsymbol R$, $\boldsymbol R$ a random $\mathcal F^\perp$ matrix with the norm of the trained
# $\boldsymbol L_k-\boldsymbol L^{\rm in}$ (`ntputils.analysis.controls.residual_ratio_control`): the same norms, no
# direction toward $\boldsymbol L^{\rm mm}$. The ratio depends on the norms alone, so we expect this control to pass
# whenever the trained model does: the claim then reads "cannot fail", which is what it is.

# %%
RANDOM_SUPPORT = "the same quantity for a random (Zipf) support matrix of STS's shape"
proxy = preregister({
    "a05_sts_dist": ("STS: normalized distance(L^mm, S~)", within(0.163, abs_tol=0.03), "A:proxy"),
    "a05_sts_nuc_ratio": ("STS: ||L^mm||_* / ||S~||_*", within(197.88 / 199.14, abs_tol=0.01), "A:proxy"),
    "a05_sts_rank_deficit": ("STS: rank(S~) - rank(L^mm) (paper: 31 - 30..31)",
                             between(0, 1, "paper: 30-31 vs 31"), "A:proxy", "31 - (30..31)"),
    "a05_sts_Lin_norm": ("||L^in||_F on STS (authors' log)", within(21.15, rel_tol=0.05), "A:Fig 6"),
    "a05_sts_residual_ratio": ("||L_k - L^in||_F / ||L_k||_F at the end, STS UFM (authors' TF log: 0.9997)",
                               within(0.9997, abs_tol=0.01), "A:Fig 6"),
}, controls={"a05_sts_dist": RANDOM_SUPPORT, "a05_sts_nuc_ratio": RANDOM_SUPPORT,
             "a05_sts_rank_deficit": RANDOM_SUPPORT,
             "a05_sts_Lin_norm": "||L^in||_F of the paragraphs reading (the recipe on another excerpt)",
             "a05_sts_residual_ratio": "L^in plus a random F-perp matrix of the norm of L_k - L^in"})

# %%
refs, lmm_info = {}, {}
for name, data in datasets.items():
    L_mm, info = max_margin_cached(data.S, solver=lmm_solver, **({"progress": False} if lmm_solver == "fast"
                                                                      else {}))
    refs[name] = GeometryReference.from_data(data, L_mm)
    lmm_info[name] = info

PAPER_LMM = {"STS": {"||L^in||_F": 21.15, "||L^mm||_*": 197.88, "||S~||_*": 199.14, "rank L^mm": "30-31",
                     "rank S~": 31, "dist(L^mm, S~)": 0.163}}
rows = []
for name, ref in refs.items():
    info = lmm_info[name]
    ours = {"||L^in||_F": np.linalg.norm(ref.L_in), "||L^mm||_*": info["nuclear_norm"],
            "||S~||_*": nuclear_norm(ref.S_tilde), "rank L^mm": ref.W_mm.shape[1],
            "rank S~": int(np.linalg.matrix_rank(ref.S_tilde)), "dist(L^mm, S~)": normalized_distance(ref.L_mm,
                                                                                                   ref.S_tilde)}
    for key, value in ours.items():
        rows.append({"dataset": name, "quantity": key, "ours": value,
                     "paper": PAPER_LMM.get(name, {}).get(key, "not reported")})
    print(f"{name}: L^mm by {info['solver']}, {info['seconds']:.2f} s, certified rel. gap {info['rel_gap']:.1e}, "
          f"max constraint violation {info['max_violation']:.1e}, from cache: {info['cached']}")
pd.DataFrame(rows).set_index(["dataset", "quantity"])

# %% [markdown]
# A cross-check of the solver: on the (small) Synthetic data, cvxpy/SCS — the authors' method — gives the
# same $\boldsymbol L^{\rm mm}$.

# %%
syn = datasets["Synthetic"]
L_scs = max_margin_logits(syn.S, solver="cvxpy", eps=1e-9)
lmm_agreement = normalized_distance(L_scs, refs["Synthetic"].L_mm)
print(f"Synthetic: ||L^mm||_* = {nuclear_norm(L_scs):.5f} (cvxpy/SCS) vs {lmm_info['Synthetic']['nuclear_norm']:.5f} "
      f"({lmm_info['Synthetic']['solver']}); normalized distance {lmm_agreement:.1e}")

# %%
for name, ref in refs.items():
    info = lmm_info[name]
    check(f"{name}: L^mm certified (relative duality gap < 1e-5, feasible)",
          (info["rel_gap"] < 1e-5 or lmm_solver == "cvxpy") and info["max_violation"] < 1e-6,
          measured=info["rel_gap"], tol=1e-5, item="A:proxy")
    ratio = info["nuclear_norm"] / nuclear_norm(ref.S_tilde)
    check(f"{name}: ||L^mm||_* <= ||S~||_* (S~ is feasible)", ratio <= 1 + 1e-6, measured=ratio, paper="always",
          sanity=True)
check("Synthetic: fast L^mm solver agrees with cvxpy/SCS", lmm_agreement < 1e-4, measured=lmm_agreement, tol=1e-4,
      item="A:Fig 6")
ref, info = refs["STS"], lmm_info["STS"]
REASON = (f"our Simplified TinyStories has m={datasets['STS'].m}, V={datasets['STS'].V} (paper: 403, 104): a "
          "different TinyStories excerpt (other base contexts and supports)")
# the control of the three proxy claims: a random support matrix of STS's shape (supports of 1-5 tokens, Zipf)
S_rand = random_supports(ref.V, ref.m, 1, 5, seed=seed, zipf_exponent=1.0)
L_rand, info_rand = max_margin_cached(S_rand, solver=lmm_solver, **({"progress": False} if lmm_solver == "fast"
                                                                      else {}))
St_rand = centered_support(S_rand)
rand_nuc_ratio = record("a05_rand_nuc_ratio", info_rand["nuclear_norm"] / nuclear_norm(St_rand))
rand_dist = record("a05_rand_dist", normalized_distance(L_rand, St_rand))
rand_rank = int(np.linalg.matrix_rank(St_rand)) - mm_embeddings(L_rand)[0].shape[1]  # as rank L^mm above
proxy.a05_sts_nuc_ratio.judge(info["nuclear_norm"] / nuclear_norm(ref.S_tilde), note=REASON, control=rand_nuc_ratio)
record("a05_sts_proxy_dist", normalized_distance(ref.L_mm, ref.S_tilde), paper=0.163)
proxy.a05_sts_dist.judge(normalized_distance(ref.L_mm, ref.S_tilde), note=REASON, control=rand_dist)
proxy.a05_sts_rank_deficit.judge(int(np.linalg.matrix_rank(ref.S_tilde) - ref.W_mm.shape[1]), note=REASON,
                                 control=rand_rank)
Lin_norm = record("a05_sts_Lin_norm", float(np.linalg.norm(ref.L_in)), paper=21.15)
Lin_norm_par = record("a05_sts_par_Lin_norm", float(np.linalg.norm(in_support_logits(par.P))))
proxy.a05_sts_Lin_norm.judge(Lin_norm, note="" if proxy.a05_sts_Lin_norm.rule.holds(Lin_norm) else REASON,
                             control=Lin_norm_par)
claims_table()

# %% [markdown]
# ## Training NTP-UFM
#
# Full-batch AdamW on $\sum_j\hat\pi_j\,\mathrm{CE}(\mathbb S(\boldsymbol W\boldsymbol h_j)\,\|\,\hat{\boldsymbol p}_j)$
# (no ridge term; the decoupled weight decay is the authors'), with $\boldsymbol W$, $\boldsymbol H$ and
# $\boldsymbol L$ stored at `n_log` log-spaced steps (`ntputils.training.ufm.train`).
#
# **Rules, fixed before training.** Paper A Fig. 6 gives curves, not end values, and the final similarities
# are described only as "high". We judge each run by:
#
# * (a) CE $-\,\mathcal H\le 10^{-3}$ at the end (the authors' own transformer run on their STS ends with CE
#   equal to $\mathcal H$ to four decimals, 1.6156; the UFM has no architecture constraint) and a fall by
#   at least two orders of magnitude from the initialization ("orders of magnitude" on the log-log axes);
# * (b) $\|\boldsymbol W_k\|_F$ and $\|\boldsymbol H_k\|_F$ grow: no decrease between logged steps after step 10;
# * (c) $\|\mathcal P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol L^{\rm in}\|_F\to0$: at the end at most $10^{-2}$ times its
#   largest value (two orders of magnitude, as in (a));
# * (d), (e) every final `sim` more than 0.1 above its chance level, the larger of two baselines: the mean `sim`
#   of 20 random Gaussian matrices of the same shape, and the `sim` of the same UFM at initialization (step 0:
#   what the claim would score without training); and the off-diagonal `sim` (diagonals removed, since they
#   are 1 for every matrix) more than 0.1 above its own baseline. Every vocabulary word of both datasets occurs as a next
#   token (no all-zero row of $\boldsymbol S$), so no word is excluded from the word-side similarities;
# * directional convergence (Thm. reg path): the normalized distance of $\boldsymbol L_k$ to
#   $\boldsymbol L^{\rm mm}$ at the end is no larger than at step 10.
#
# **Negative controls, fixed before training** (same rule, same chance level):
#
# * (a) the untrained UFM (step 0): its $\mathrm{CE}-\mathcal H$, and its fall, which is 1 without a step;
# * (b) the untrained UFM's norms held over the logged steps, a path that does not grow: it has no decrease, so
#   we expect the "no decrease" rule to hold for it, and the claim to read "cannot fail" (the rule cannot tell
#   growing norms from constant ones);
# * (c) the same ratio for the distance of $\mathcal P_{\mathcal F}(\boldsymbol L_k)$ to a random matrix in
#   $\mathcal F$ with the norm of $\boldsymbol L^{\rm in}$ (`ntputils.analysis.controls.random_f_target`): an
#   in-support target unrelated to the data's log-odds, which training has no reason to approach;
# * directional convergence: the same difference for the distance to a random matrix with the singular values
#   of $\boldsymbol L^{\rm mm}$ and random singular vectors (`spectrum_matched_random`): a target of the same shape
#   and spectrum that the theory does not point to. If the logits drift toward it too, or the rule holds by a
#   fluctuation, the rule cannot tell convergence to $\boldsymbol L^{\rm mm}$ from drift.

# %%
SIM_NAMES = {("H", "proxy"): "sim(H_k, S~)", ("W", "proxy"): "sim(W_k^T, S~^T)",
             ("H", "mm"): "sim(H_k, H^mm)", ("W", "mm"): "sim(W_k^T, W^mm^T)"}
specs, sim_specs = {}, {}
for name in datasets:
    fig5 = ["A:Fig 6", "A:Fig 5"] if name == "Synthetic" else ["A:Fig 6"]
    geo = ["A:Fig 6", "A:Fig 4"] + (["A:Fig 1"] if name == "STS" else [])
    specs[f"a05_{name}_ce_final"] = (f"{name} UFM: final CE - H", at_most(1e-3, "Fig. 6a: CE approaches H"), fig5,
                                     "-> 0 (Fig. 6a)")
    specs[f"a05_{name}_ce_drop"] = (f"{name} UFM: CE - H at init / at the end",
                                    at_least(100, "orders of magnitude, Fig. 6a"), fig5,
                                    "orders of magnitude (Fig. 6a)")
    specs[f"a05_{name}_norms"] = (f"{name} UFM: logged intervals after step 10 where ||W_k|| or ||H_k|| decreases",
                                  at_most(0, "Fig. 6b: norms grow"), fig5, "grow (Fig. 6b)")
    specs[f"a05_{name}_proj"] = (f"{name} UFM: final / largest ||P_F(L_k) - L^in||_F",
                                 at_most(1e-2, "Fig. 6c: -> 0"), fig5, "-> 0 (Fig. 6c)")
    specs[f"a05_{name}_direction"] = (f"{name} UFM: dist(L_k, L^mm) at the end minus at step 10",
                                      at_most(0.0, "directional convergence"), fig5,
                                      "directional convergence (Thm. reg path)")
    sim_specs.update({f"a05_{name}_sim_{side}_{target}": (f"{name} UFM: final {label} above chance", 0.1, geo,
                                                          "high (Fig. 6d/e; value UNKNOWN)")
                      for (side, target), label in SIM_NAMES.items()})
FIG6_CONTROLS = {"ce_final": "the untrained UFM (step 0)", "ce_drop": "the untrained UFM (step 0: no fall)",
                 "norms": "the untrained UFM's norms held over the logged steps (no growth)",
                 "proj": "the distance of P_F(L_k) to a random F matrix of the norm of L^in",
                 "direction": "the distance to a random matrix with L^mm's singular values"}
fig6 = preregister(specs, controls={f"a05_{name}_{claim}": what for name in datasets
                                    for claim, what in FIG6_CONTROLS.items()})
fig6_sims = preregister_similarity(sim_specs)

# %%
histories = {}
for name, data in datasets.items():
    histories[name] = ufm.train(
        data, d=d, loss="ce", steps=steps, lr=lr, optimizer="adamw", weight_decay=weight_decay,
        milestones=milestones, gamma=gamma, init_scale=init_scale, dtype=getattr(torch, dtype),
        device=run.device, log_steps=LOG_STEPS,
        seed=seed)
    print(f"{name}: {steps} steps in {histories[name].meta['seconds']:.1f} s, "
          f"final CE - H = {histories[name].final['ce_minus_H']:.2e}")

series = {f"{name} UFM": convergence_curves(hist, refs[name], label=f"{name} UFM") for name, hist in histories.items()}

# %% [markdown]
# ## Fig. 6 (UFM rows): convergence to the entropy, norm growth, $\mathcal P_{\mathcal F}(\boldsymbol L_k)\to\boldsymbol L^{\rm in}$, similarity to proxy and theory
#
# Colours as in the authors' plots (Synthetic UFM gold, Simplified TinyStories UFM deep sky blue); the
# horizontal axis is step $k+1$ so the initialization is visible. The last panel (not in Fig. 6) is the
# normalized distance of $\boldsymbol L_k$ to $\boldsymbol L^{\rm mm}$ and to $\widetilde{\boldsymbol S}$.

# %% mystnb={"figure": {"caption": "NTP-UFM training on both datasets: loss gap to the entropy, norms, in-support convergence and similarity to proxy and theory; reproduces the NTP-UFM rows of paper A, Fig. 6.", "name": "fig-a05-fig6"}, "image": {"alt": "Grid of training curves over steps, one colour per dataset."}}
fig = plots.convergence_panels(series, panels=plots.CONVERGENCE_PANELS, ncols=3, panel_size=4.4,
                        suptitle="Paper A Fig. 6, NTP-UFM rows (ours)")
plots.legend_below(fig, ncol=4)
plt.show()

# %%
PAPER_FINAL = {"ce_minus_H": "-> 0 (log-log decay)", "norm_W": "grows", "norm_H": "grows",
               "proj_error": "-> 0", "sim_H_proxy": "high (value UNKNOWN)", "sim_W_proxy": "high (value UNKNOWN)",
               "sim_H_mm": "high (value UNKNOWN)", "sim_W_mm": "high (value UNKNOWN)",
               "dist_L_mm": "not reported", "dist_L_proxy": "not reported"}
final = pd.DataFrame({name: s.final for name, s in series.items()})
final["paper"] = pd.Series(PAPER_FINAL)
final

# %% [markdown]
# End points of this page's run beside those of the committed `paper`-profile table (`results/sweeps/a05-paper`,
# whose provenance and currency the last section prints; a build executes one profile, so the other column is
# read from that table, never re-run here):

# %%
END_KEYS = ("ce_minus_H", "sim_H_proxy", "sim_W_proxy", "sim_H_mm", "sim_W_mm", "dist_L_mm")
for name, s in series.items():
    for key in END_KEYS[1:-1]:  # ce_minus_H and dist_L_mm are recorded with the figure's numbers below
        record(f"{name.split()[0].lower()}_end_{key}", float(s.final[key]))
try:
    paper_end = recorded_values(published("a05-paper")["table"], "seed").iloc[0] if profile != "paper" else None
except FileNotFoundError:  # none committed, or this run is a sweep point
    paper_end = None
profile_rows = {}
for name, s in series.items():
    ds = name.split()[0].lower()
    for key in END_KEYS:
        metric = f"{ds}_{key}" if key in ("ce_minus_H", "dist_L_mm") else f"{ds}_end_{key}"
        shown = ("(this run)" if paper_end is None else
                 paper_end.get(metric, "not in the committed table (made before it was recorded)"))
        profile_rows[(key, name)] = {f"`{profile}` (this run)": s.final[key], "`paper` (committed table)": shown}
pd.DataFrame(profile_rows).T

# %% [markdown]
# ### The final similarities against their chance levels
#
# For every `sim` of Fig. 6 (d)–(e) at the last step: its value, its off-diagonal value, the random baseline
# (20 Gaussian matrices of the shape of the trained factor; mean ± std, for `sim` and for its off-diagonal),
# the untrained baseline (the same UFM at step 0, before any update) and the shuffled-column control. A claim
# must clear the larger of the two baselines by the margin.

# %%
TARGETS = {("H", "proxy"): lambda W, H, r: (H, r.S_tilde), ("W", "proxy"): lambda W, H, r: (W.T, r.S_tilde.T),
           ("H", "mm"): lambda W, H, r: (H, r.H_mm), ("W", "mm"): lambda W, H, r: (W.T, r.W_mm.T)}
sim_reps, sim_rows = {}, []
for name, hist in histories.items():
    for (side, target), pick in TARGETS.items():
        A, B = pick(hist.W[-1], hist.H[-1], refs[name])
        A0, _ = pick(*hist.at_initialization(), refs[name])  # the same UFM before its first step
        rep_s = similarity_with_chance(A, B, draws=20, seed=seed, untrained=A0)
        sim_reps[name, side, target] = rep_s
        sim_rows.append({"dataset": name, **rep_s.row(SIM_NAMES[side, target])})
pd.DataFrame(sim_rows).set_index(["dataset", "claim"])

# %% [markdown]
# ## Fig. 4: evolution of $\mathrm{corr}(\boldsymbol H_k)$, $\mathrm{corr}(\boldsymbol W_k^\top)$ and $\boldsymbol L_k$
#
# One row per snapshot: initialization, steps 10 and 100, the end of training, then the theory
# ($\boldsymbol H^{\rm mm}$, $\boldsymbol W^{\rm mm}$, $\boldsymbol L^{\rm mm}$) and the proxy ($\widetilde{\boldsymbol S}$).
# Columns: $\mathrm{corr}(\boldsymbol H_k)$, $\mathrm{corr}(\boldsymbol W_k^\top)$ and $\boldsymbol L_k$.
# Contexts are ordered so that those with the same support are adjacent, words by the first context
# whose support contains them (`ntputils.analysis.convergence.support_group_order`, `ntputils.analysis.convergence.word_order`).

# %% mystnb={"figure": {"caption": "Snapshots of corr(H_k), corr(W_k^T) and L_k during NTP-UFM training on the Synthetic dataset, beside the theory and the proxy; reproduces paper A, Fig. 4, one row per snapshot.", "name": "fig-a05-fig4-synthetic"}, "image": {"alt": "Grid of heatmaps: columns are context correlations, word correlations and logits; rows are training steps, theory and proxy."}}
snap_steps = [0, 10, 100, steps]
orders = {}
for name, data in datasets.items():
    ctx_order, _ = support_group_order(data.S)
    orders[name] = (ctx_order, word_order(data.S, ctx_order))
data = datasets["Synthetic"]
fig = plots.snapshot_grid(histories["Synthetic"], refs["Synthetic"], snap_steps, context_order=orders["Synthetic"][0],
                          word_order=orders["Synthetic"][1], word_labels=data.vocab,
                          context_labels=[data.context_str(j) for j in range(data.m)], panel_size=3.0,
                          suptitle="Fig. 4 (Synthetic): NTP-UFM snapshots | theory | proxy")
plt.show()

# %% mystnb={"figure": {"caption": "The same snapshots on Simplified TinyStories; reproduces paper A, Fig. 4, one row per snapshot.", "name": "fig-a05-fig4-sts"}, "image": {"alt": "Grid of heatmaps: columns are context correlations, word correlations and logits; rows are training steps, theory and proxy."}}
fig = plots.snapshot_grid(histories["STS"], refs["STS"], snap_steps, context_order=orders["STS"][0],
                          word_order=orders["STS"][1], panel_size=3.0,
                          suptitle="Fig. 4 (Simplified TinyStories): NTP-UFM snapshots | theory | proxy")
plt.show()

# %% [markdown]
# ## Fig. 5 (PROPOSED): the training curves of the Fig. 4 run

# %% mystnb={"figure": {"caption": "The training curves of the Synthetic run shown in Fig. 4; our proposed content for paper A, Fig. 5.", "name": "fig-a05-fig5"}, "image": {"alt": "Four training-curve panels over steps."}}
fig = plots.convergence_panels({"Synthetic UFM": series["Synthetic UFM"]}, panels=("ce", "norms", "proj", "direction"),
                        ncols=2, panel_size=4.4, suptitle="Fig. 5 (PROPOSED content): NTP-UFM on Synthetic")
plots.legend_below(fig, ncol=3)
plt.show()

# %% [markdown]
# ## Fig. 1 (b)–(d) on Simplified TinyStories: NTP-UFM, theory, proxy
#
# Panel (a) of Fig. 1 (the four-layer transformer) is drawn in the transformer chapter. A context tick label
# marks the first context of a support group (a block), for groups far enough apart that labels do not overlap;
# every tick sits on the row it names. Word labels are thinned the same way (every tick on its row).

# %% mystnb={"figure": {"caption": "Context and word correlations of the trained NTP-UFM, the theory and the proxy on Simplified TinyStories; reproduces paper A, Fig. 1 (b) to (d), one row per source.", "name": "fig-a05-fig1"}, "image": {"alt": "Heatmaps of context correlations (left) and word correlations (right), one row each for NTP-UFM, theory and proxy."}}
data, ref, hist = datasets["STS"], refs["STS"], histories["STS"]
ctx_order, w_order = orders["STS"]
_, group = support_group_order(data.S)
group_starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
# label a group start only when it is at least m/25 rows below the previous label, so labels never overlap
min_gap, kept = int(np.ceil(data.m / 25)), []
for start in group_starts:
    if not kept or start - kept[-1] >= min_gap:
        kept.append(int(start))
fig = plots.geometry_comparison(
    {"(b) NTP-UFM": (hist.H[-1], hist.W[-1].T), "(c) theory H^mm, W^mm": (ref.H_mm, ref.W_mm.T),
     "(d) proxy S~": (ref.S_tilde, ref.S_tilde.T)},
    context_labels=[data.context_str(j) for j in range(data.m)], word_labels=data.vocab,
    context_order=ctx_order, word_order=w_order, context_ticks=kept, max_labels=len(kept), panel_size=6.0,
    suptitle="Fig. 1 (b)-(d), Simplified TinyStories")
plt.show()

# %% [markdown]
# ## Comparisons (the paper's empirical claims about training)
#
# The claims registered before training, judged by their rules (`reproduced` or `deviates`; the checks of the
# solver and the proxy are in the theory section). On Simplified TinyStories $\boldsymbol L_k$ ends at normalized distance
# {glue:text}`sts_dist_L_mm:.2f` from the direction of $\boldsymbol L^{\rm mm}$ (Synthetic:
# {glue:text}`synthetic_dist_L_mm:.2f`): convergence in direction is logarithmically slow. For scale: the untrained
# UFM starts at {glue:text}`sts_dist_L_mm_init:.2f` (Synthetic: {glue:text}`synthetic_dist_L_mm_init:.2f`), and the
# proxy $\widetilde{\boldsymbol S}$ itself sits at {glue:text}`a05_sts_proxy_dist:.3f` from $\boldsymbol L^{\rm mm}$. The
# residual ratio $\|\boldsymbol L_k-\boldsymbol L^{\rm in}\|_F/\|\boldsymbol L_k\|_F$ of the STS UFM ends at
# {glue:text}`a05_sts_residual_ratio:.4f` (the authors' transformer log: 0.9997); its control, with the
# $\mathcal F^\perp$ part replaced by a random one of the same norm, gives {glue:text}`a05_sts_residual_ratio_control:.4f`.
# A claim whose control meets its rule reads "cannot fail" in the table below: its rule does not distinguish the
# paper's mechanism from its absence.

# %%
def decreases(curve: np.ndarray) -> int:
    """Logged intervals in which ``curve`` decreases (by more than 1e-9 of its value)."""
    return int(np.sum(np.diff(curve) < -1e-9 * curve[:-1]))


for name, s in series.items():
    ds = name.removesuffix(" UFM")
    hist, ref = histories[ds], refs[ds]
    record(f"{ds.lower()}_ce_minus_H", float(s.ce_minus_H[-1]))
    record(f"{ds.lower()}_dist_L_mm", float(s.dist_L_mm[-1]))
    record(f"{ds.lower()}_dist_L_mm_init", float(s.dist_L_mm[0]))  # the untrained UFM's distance
    fig6[f"a05_{ds}_ce_final"].judge(float(s.ce_minus_H[-1]), control=float(s.ce_minus_H[0]))
    fig6[f"a05_{ds}_ce_drop"].judge(float(s.ce_minus_H[0] / s.ce_minus_H[-1]),
                                    control=float(s.ce_minus_H[0] / s.ce_minus_H[0]))
    late = s.steps >= 10
    too_short = f"this run logged {int(late.sum())} steps >= 10 (steps = {steps}, n_log = {n_log})"
    if late.sum() >= 2:
        drops = sum(decreases(getattr(s, key)[late]) for key in ("norm_W", "norm_H"))
        held = sum(decreases(np.full(int(late.sum()), getattr(s, key)[0])) for key in ("norm_W", "norm_H"))
        fig6[f"a05_{ds}_norms"].judge(
            drops, control=held,
            note=f"||W|| {s.norm_W[0]:.1f} -> {s.norm_W[-1]:.1f}, ||H|| {s.norm_H[0]:.1f} -> {s.norm_H[-1]:.1f}")
    else:  # a run too short for the rule's window (e.g. -p steps=5): nothing to judge, said so
        fig6[f"a05_{ds}_norms"].judge(None, note=f"needs two logged steps >= 10; {too_short}")
    target = random_f_target(ref.L_in, ref.support, seed=seed)
    proj_ctrl = distance_curve(hist.L, ref.support, target)
    fig6[f"a05_{ds}_proj"].judge(float(s.proj_error[-1] / s.proj_error.max()), note=f"final {s.proj_error[-1]:.2e}",
                                 control=float(proj_ctrl[-1] / proj_ctrl.max()))
    R_mm = spectrum_matched_random(ref.L_mm, seed=seed)
    if np.any(s.snap_steps >= 10):
        at10 = int(np.flatnonzero(s.snap_steps >= 10)[0])
        dir_ctrl = normalized_distance(hist.L[-1], R_mm) - normalized_distance(hist.L[at10], R_mm)
        fig6[f"a05_{ds}_direction"].judge(float(s.dist_L_mm[-1] - s.dist_L_mm[at10]), control=float(dir_ctrl),
                                          note=f"final distance {s.dist_L_mm[-1]:.3f}")
    else:
        fig6[f"a05_{ds}_direction"].judge(None, note=f"needs a snapshot at step >= 10; this run has none "
                                                     f"(steps = {steps}, n_log = {n_log})")
    for side, target in SIM_NAMES:
        rep_s = sim_reps[ds, side, target]
        compare_similarity(fig6_sims[f"a05_{ds}_sim_{side}_{target}"], rep_s)
L_k = histories["STS"].L[-1]  # the final STS UFM logits
residual = record("a05_sts_residual_ratio", residual_ratio(L_k, refs["STS"].L_in), paper=0.9997)
residual_ctrl = record("a05_sts_residual_ratio_control",
                       residual_ratio_control(L_k, refs["STS"].L_in, refs["STS"].support, seed=seed))
proxy.a05_sts_residual_ratio.judge(
    residual, control=residual_ctrl, note="" if proxy.a05_sts_residual_ratio.rule.holds(residual) else
    f"||L_k||_F = {np.linalg.norm(L_k):.1f} after {steps} steps (the authors' transformer: 835 after 49k): "
    "the F-perp part grows only like log k")
claims_table()

# %%
print(f"chapter wall time: {run.elapsed():.1f} s (profile {profile})")

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (the sizes and steps of
# `notebooks/a05_ufm_training.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks
# were committed under `results/sweeps/a05-paper/` with their provenance (commit, machine, date, wall
# time). Below they stand beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.
#
# **One claim deviates at the paper profile only.** `a05_STS_norms` ("norms grow", Fig. 6b) holds at the `cpu`
# profile, and at all five seeds of the five-seed table, but deviates in the paper-profile run: there
# $\|\boldsymbol W_k\|_F$ or $\|\boldsymbol H_k\|_F$ of the STS UFM decreases in some logged intervals after
# step 10 (the count is in the table). The rule counts every decrease, however small, and this page shows
# neither the paper-profile curves nor the size of the decreases, so the cause is not established here. Every
# other claim has the same outcome at both profiles; the paper profile ends somewhat closer to the direction of
# $\boldsymbol L^{\rm mm}$ on both datasets (`synthetic_dist_L_mm`, `sts_dist_L_mm` in the recorded values).

# %%
from ntputils.chapter import (
    current_record,  # noqa: E402
    show_paper_profile,  # noqa: E402
)

paper_view = show_paper_profile("a05", current_record(), profile)
