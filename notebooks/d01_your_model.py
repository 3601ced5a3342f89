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
# # Your model, your data: the papers' geometry for any corpus and any checkpoint
#
# Both papers ask one question: can the geometry of a model's context embeddings $\boldsymbol H$ and word
# embeddings $\boldsymbol W$ be predicted from the **support structure of its training data** alone? Paper A
# {cite}`zhao2024implicit` predicts that $\boldsymbol H$ correlates like the columns of the proxy
# $\widetilde{\boldsymbol S}=(\boldsymbol I-\tfrac1V\boldsymbol 1\boldsymbol 1^\top)\boldsymbol S$ (and of the
# theory's $\boldsymbol H^{\rm mm}$), and $\boldsymbol W$ like its rows (A, Figs. 1 and 3); Paper B
# {cite}`zhao2025semantics` reads concepts as the SVD factors of $\widetilde{\boldsymbol S}$ (B, eq. 2) and shows
# them as orthant clusters of words (B, Figs. 4 and 20-25).
#
# This page asks that question of **any** causal language model and **any** text: set `model` to a folder
# (a Hugging Face causal LM saved with `save_pretrained`, or one of this book's transformers), `corpus` to a text
# file or folder, and run it (`ntpbook geometry --model DIR --corpus PATH`, or papermill with `-p`). It
#
# 1. counts every window of the context length(s) inside each document of the corpus and its next token (exactly:
#    distinct windows are numbered by chained `np.unique` on packed integer keys, no hashing), keeps
#    `n_contexts` contexts and builds the sparse $V\times m$ support matrix $\boldsymbol S$;
# 2. reads $\boldsymbol H$ (the state the decoder reads after each kept context) and $\boldsymbol W$ (the
#    decoder) from the model, and from the **same architecture untrained** (the control of every claim that
#    training produced the geometry);
# 3. computes $\widetilde{\boldsymbol S}$'s geometry sparse (its column correlations through an $m\times m$ Gram
#    factor, so a 50,257-token vocabulary fits), and the theory's $\boldsymbol L^{\rm mm}$ with the certified
#    solver when $V\times m$ is at most `max_mm_entries`;
# 4. judges, with rules stated below before any number is computed, whether the model's geometry resembles the
#    data's, each against chance, the untrained model and a negative control.
#
# **This build's run** (the defaults): the model is chapter a07's `cpu`-profile transformer (2 layers, $d=64$)
# trained on the first 10 TinyStories stories with a 64-piece BPE, saved as a model folder in
# `results/models/a07-tinystories10/` at four steps of one run, from its initialization (step 0) to its end
# (`python -m ntputils.export_models` remakes them); the corpus is the same text. The page should then find
# what a07's page finds, and its last section checks that against a07's committed five-seed table. A sweep over
# the four folders gives the geometry against the training step (the committed table `d01-steps`, drawn on the
# sweeps page).
#
# **Choices where the papers say nothing (stated here).** Documents are the file's stories (split at
# `<|endoftext|>`), else its paragraphs (blank lines); whitespace inside a document is joined into single spaces.
# A SentencePiece tokenizer with `<s>`/`</s>` frames each document with them (a07's recipe); other tokenizers
# add nothing. The word claims are judged on the words that occur as a next token (the `n_words` most frequent
# when set), the context claims on the first `n_curve` kept contexts and on the heatmap contexts (a07's support
# groups).

# %%
LIMITS = {"unit": {"auto", "story", "paragraph", "line", "file"}, "selection": {"first", "frequent"},
          "max_documents": (0, None), "n_contexts": (0, None), "n_words": (0, None), "n_curve": (2, None),
          "n_heatmap": (2, None), "per_group": (1, None), "min_group": (1, None), "max_mm_entries": (0, None),
          "n_concepts": (1, 64), "grid_concepts": (1, 7), "top": (1, None), "batch_size": (1, None),
          "chance_draws": (2, None), "num_threads": (0, None)}  # checked by the runner before any work

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of d01_your_model.paper.yaml
seed = 0         # seeds random, numpy and torch (and the untrained control's initialization)
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
model = "results/models/a07-tinystories10/step-01500"  # a model folder (Hugging Face causal LM or this book's)
tokenizer = ""   # a tokenizer folder or file ("": the model folder's own)
corpus = "data:tinystories/tinystories_v1_train_head.txt.xz"  # a text file or folder (data:REL is under NTP_DATA_DIR)
unit = "auto"    # documents: "auto", "story", "paragraph", "line" or "file"
max_documents = 10  # the first documents of the corpus (0: all)
context_lengths = [6]  # tokens per context; several lengths: the contexts of each
n_contexts = 0   # contexts kept (0: every distinct context)
selection = "first"  # which contexts are kept: "first" (first appearance) or "frequent" (most frequent)
n_words = 0      # words of the word claims: the most frequent next tokens (0: every word that occurs)
n_curve = 1000   # first kept contexts of the context claims
n_heatmap = 100  # heatmap contexts (a07's support groups)
per_group = 10   # contexts per support group in the heatmap
min_group = 10   # smallest support group in the heatmap
max_mm_entries = 2_000_000  # compute L^mm when V x m is at most this (else the proxy only)
n_concepts = 4   # top concepts of S~ (paper B eq. 2) in the concept claim
grid_concepts = 3  # concepts whose 2^p orthant clusters are drawn (paper B Figs. 20-25: 4-7)
top = 40         # members per word cloud, by typicality (paper B: 40)
batch_size = 256  # contexts per forward pass
num_threads = 1  # torch CPU threads (0: leave torch's default)
sim_margin = 0.1  # pre-registered rule: every sim claim at least chance + this margin
concept_margin = 0.1  # pre-registered rule: concept sign agreement at least chance + this margin
a07_tolerance = 0.02  # pre-registered rule: this page's sims within this of a07's committed values
chance_draws = 20  # random matrices / permutations per chance level

# %%
# %matplotlib inline
import math
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from ntputils import plots
from ntputils.analysis.baselines import similarity_with_chance
from ntputils.analysis.concepts import orthant_clusters, sign_configurations, sign_string
from ntputils.analysis.convergence import word_order
from ntputils.analysis.metrics import corr
from ntputils.analysis.model_geometry import (
    agreement_with_chance,
    concept_coordinates_of_logits,
    frequent_next_tokens,
    proxy_context_matrix,
    proxy_word_matrix,
)
from ntputils.analysis.network_runs import geometry_reference, support_group_selection
from ntputils.chapter import (
    above_chance,
    check,
    claims_table,
    compare_similarity,
    preregister,
    preregister_similarity,
    record,
    recorded_values,
    setup_chapter,
    shown_committed,
    within,
)
from ntputils.data.corpora.user_corpus import (
    corpus_contexts,
    describe,
    load_tokenizer,
    read_documents,
)
from ntputils.geometry.spectral import centered_topk_svd
from ntputils.plots.wordclouds import CloudPanel, CloudRenderer
from ntputils.training.model_folder import (
    ModelFolderError,
    context_states,
    decoder,
    load_model_folder,
    untrained_twin,
)

lengths = [context_lengths] if isinstance(context_lengths, int) else list(context_lengths)


def limit_problem(name: str, limit: set | tuple) -> list[str]:
    """The chapter's ``LIMITS`` checked in the kernel too (a run without the runner: papermill, Jupyter)."""
    value = globals()[name]
    if isinstance(limit, set):
        return [] if value in limit else [f"{name} must be one of {sorted(limit)}, got {value!r}"]
    low, high = limit
    inside = (low is None or value >= low) and (high is None or value <= high)
    return [] if inside else [f"{name}={value!r} is outside [{low}, {high if high is not None else 'inf'}]"]


run = setup_chapter(globals(), torch_threads=num_threads, problems=[
    *[problem for name, limit in LIMITS.items() for problem in limit_problem(name, limit)],
    *([] if lengths and all(isinstance(T, int) and T >= 1 for T in lengths) else
      ["context_lengths must be a positive int or a list of them"]),
])

# %% [markdown]
# ## The model and its tokenizer
#
# Read before the corpus, so that a tokenizer that does not fit the model, or contexts longer than its window,
# stop the page before any long work.

# %%
fm = load_model_folder(model, device=run.device)
tok = load_tokenizer(tokenizer or model)
if tok.vocab_size > fm.vocab_size:
    raise ModelFolderError(f"the tokenizer ({tok.path}) has {tok.vocab_size:,} tokens, the model's decoder "
                           f"{fm.vocab_size:,} rows: the tokenizer does not match the model")
if fm.window is not None and max(lengths) > fm.window:
    raise ModelFolderError(f"context length {max(lengths)} is longer than the model's window of {fm.window} tokens")
strings = tok.strings + [f"<id {i}>" for i in range(tok.vocab_size, fm.vocab_size)]
print(fm.description)
print(f"tokenizer: {tok.kind} ({tok.path}), {tok.vocab_size:,} tokens"
      + (f"; documents framed by {strings[tok.bos]} ... {strings[tok.eos]}" if tok.bos is not None else ""))
if fm.meta:
    print("made by:", ", ".join(f"{k}={v}" for k, v in fm.meta.items()))
_ = record("d01_parameters", fm.parameters)

# %% [markdown]
# ## The corpus: contexts, supports and what counting them took

# %%
documents = read_documents(corpus, unit=unit, max_documents=max_documents)
seqs = tok.encode(documents)
cc = corpus_contexts(seqs, fm.vocab_size, lengths, n_contexts=n_contexts, selection=selection, strings=strings)
data = cc.data
facts = describe(cc)
facts["documents"] = len(documents)
display(pd.Series(facts, name="value").to_frame().style.format(lambda v: f"{v:,.4g}" if isinstance(v, float)
                                                                else f"{v:,}"))
record("d01_documents", len(documents))
record("d01_tokens", cc.tokens)
record("d01_windows", cc.windows)
record("d01_m", data.m)
record("d01_V", data.V)
record("d01_count_mib", cc.array_bytes / 2**20)
_ = record("d01_count_seconds", cc.seconds, tol=math.inf)  # a wall time

# %% [markdown]
# ## H and W: the model and the same architecture untrained
#
# $\boldsymbol H$ is read for every kept context (batched by length, no padding: positions start at 0 as in
# training); the untrained control is the same architecture initialized under `seed`.

# %%
t0 = time.perf_counter()
H = context_states(fm, data.contexts, batch_size=batch_size, progress=False)
W = decoder(fm)
twin = untrained_twin(fm, seed=seed)
H0 = context_states(twin, data.contexts, batch_size=batch_size, progress=False)
W0 = decoder(twin)
del twin
print(f"H: {H.shape[0]} x {H.shape[1]:,}, W: {W.shape[0]:,} x {W.shape[1]} (and the untrained twin's), read in "
      f"{time.perf_counter() - t0:.1f} s")

# %% [markdown]
# ## The data's geometry: the proxy, and the theory where it fits
#
# The proxy's context correlations come from an $m\times m$ Gram factor when $V>m$
# (`ntputils.analysis.model_geometry.proxy_context_matrix`); $\boldsymbol L^{\rm mm}$ (the NTP-SVM of paper A,
# solved by the certified first-order solver) only when $V\times m\le$ `max_mm_entries`
# ({glue:text}`d01_mm_limit:,` here), since the solver holds dense $V\times m$ iterates.

# %%
record("d01_mm_limit", max_mm_entries)
theory = data.V * data.m <= max_mm_entries
occ = frequent_next_tokens(data, n_words)
first = np.arange(min(n_curve, data.m))
if data.V * data.m <= 50_000_000:  # the support groups need the dense support patterns
    sel = support_group_selection(data, n_contexts=n_heatmap, per_group=per_group, min_group=min_group)
    heat, heat_group = sel.columns, sel.group
else:
    heat, heat_group = first[:n_heatmap], np.zeros(min(n_heatmap, first.size), dtype=int)
if heat.size < 2:
    heat, heat_group = first[:n_heatmap], np.zeros(min(n_heatmap, first.size), dtype=int)
    print(f"no support group has {min_group} contexts: the heatmap shows the first {heat.size} contexts")
S_ctx = {name: proxy_context_matrix(data.S[:, cols]) for name, cols in (("heat", heat), ("first", first))}
S_words = proxy_word_matrix(data.S, occ)  # m x |occ|: rows of S~, one column per word
ref = geometry_reference(data) if theory else None
if theory:
    lmm = ref.info["lmm"]
    print(f"L^mm of the {data.V} x {data.m:,} support matrix: {lmm['seconds']:.1f} s, relative gap "
          f"{lmm['rel_gap']:.2g}")
else:
    print(f"V x m = {data.V * data.m:,} > max_mm_entries = {max_mm_entries:,}: the theory is not computed, "
          "the proxy stands in for it (as paper A does for its Fig. 3)")
print(f"{occ.size} words occur as a next token{'' if not n_words else f' (the {n_words} most frequent)'}; "
      f"{heat.size} heatmap contexts in {len(set(heat_group.tolist()))} support group(s); first {first.size} contexts")

# %% [markdown]
# ## Claims, with rules fixed before the numbers below
#
# Each similarity claim is judged on its value and on its off-diagonal value (the diagonals of correlation
# matrices are 1 and inflate $\operatorname{sim}$), each **above the larger of two baselines by `sim_margin`**
# ($=0.1$): random Gaussian matrices of the model's matrix' shape (mean over `chance_draws`), and the **untrained
# model**'s value. Its negative control is the same similarity with the model's columns shuffled against the data
# (the supports shuffled), which the same rule must reject.
#
# 1. (A, Figs. 1 and 3) context geometry: $\operatorname{sim}(\boldsymbol H,\widetilde{\boldsymbol S})$ on the
#    heatmap contexts and on the first `n_curve` contexts;
# 2. (A, Figs. 1 and 3) word geometry: $\operatorname{sim}(\boldsymbol W^\top,\widetilde{\boldsymbol S}^\top)$ on
#    the words that occur as a next token;
# 3. (A, Thm. 1, when $\boldsymbol L^{\rm mm}$ is computed) the same against the theory:
#    $\operatorname{sim}(\boldsymbol H,\boldsymbol H^{\rm mm})$ and
#    $\operatorname{sim}(\boldsymbol W^\top,\boldsymbol W^{\rm mm\top})$;
# 4. (B, eq. 2 and Figs. 4, 20-25) **concepts**: read along the context analyzer $\boldsymbol v_k$ of
#    $\widetilde{\boldsymbol S}$'s $k$-th concept, the model's centered logits
#    $(\boldsymbol I-\tfrac1V\boldsymbol 1\boldsymbol 1^\top)\boldsymbol W\boldsymbol H\boldsymbol v_k$ put each
#    occurring word on the same side as the word analyzer $\boldsymbol u_k$ (since
#    $\widetilde{\boldsymbol S}\boldsymbol v_k=\sigma_k\boldsymbol u_k$): the share of (word, concept) pairs with
#    equal signs over the top `n_concepts` concepts is above the larger of the shuffled-words level (the words
#    permuted, mean over `chance_draws`) and the untrained model's share by `concept_margin` ($=0.1$). Control:
#    the same share with the model's context embeddings shuffled against the contexts (supports shuffled).
# 5. (this build's defaults only) **the page finds what a07 finds**: for a07's own model and corpus, each of
#    this page's similarities is within `a07_tolerance` ($=0.02$; trained values drift across CPU models by a
#    small fraction of that) of the value a07's committed five-seed table records at seed 0. Control: the
#    same difference against a07's value at seed 1, another model trained by the same recipe; a tolerance
#    that the other model meets too cannot tell this page's model apart, and the claim reads "cannot fail".

# %%
sim_specs = {"H_proxy_heat": "sim(H, S~) heatmap contexts", "H_proxy_first": f"sim(H, S~) first {first.size} contexts",
             "W_proxy_occ": "sim(W^T, S~^T) occurring words"}
if theory:
    sim_specs.update({"H_mm_heat": "sim(H, H^mm) heatmap contexts", "H_mm_first": f"sim(H, H^mm) first {first.size} contexts",
                      "W_mm_occ": "sim(W^T, W^mm^T) occurring words"})
sim_claims = preregister_similarity({f"d01_{key}": (f"{label} high", sim_margin, None, "resemblance (A, Figs. 1, 3)")
                                     for key, label in sim_specs.items()})
concept_claim = preregister({
    "d01_concept_signs": (f"concepts: sign agreement of W H v_k with u_k, top {n_concepts} concepts of S~",
                          above_chance(concept_margin), None, "concepts = SVD factors of S~ (B, eq. 2)")},
    controls={"d01_concept_signs": "the same agreement with H's columns shuffled against the contexts"})

# %%
targets = {"H_proxy_heat": (H[:, heat], S_ctx["heat"], H0[:, heat]),
           "H_proxy_first": (H[:, first], S_ctx["first"], H0[:, first]),
           "W_proxy_occ": (W[occ].T, S_words, W0[occ].T)}
if theory:
    targets.update({"H_mm_heat": (H[:, heat], ref.H_mm[:, heat], H0[:, heat]),
                    "H_mm_first": (H[:, first], ref.H_mm[:, first], H0[:, first]),
                    "W_mm_occ": (W[occ].T, ref.W_mm[occ].T, W0[occ].T)})
rows, sims = [], {}
for key, (A, B, A0) in targets.items():
    rep = similarity_with_chance(A, B, draws=chance_draws, seed=seed, untrained=A0)
    outcomes = compare_similarity(f"d01_{key}", rep)
    sims[key] = rep
    rows.append({**rep.row(sim_specs[key]), "value vs baseline + margin": outcomes[0],
                 "off-diag. vs baseline + margin": outcomes[1]})
    record(f"d01_{key}", rep.value)
    record(f"d01_{key}_offdiag", rep.offdiagonal)
pd.DataFrame(rows).set_index("claim").style.format("{:.3f}", subset=["value", "off-diagonal"])

# %%
p_concepts = min(n_concepts, data.V - 1, data.m - 1)
U, sigma, Vt = centered_topk_svd(data.S, p_concepts, seed=seed)
U_occ = U[occ]
coords = concept_coordinates_of_logits(W, H, Vt, occ)
coords0 = concept_coordinates_of_logits(W0, H0, Vt, occ)
shuffle = np.random.default_rng(seed).permutation(data.m)
coords_ctrl = concept_coordinates_of_logits(W, H[:, shuffle], Vt, occ)
agree = agreement_with_chance(coords, U_occ, draws=chance_draws, seed=seed)
agree0 = agreement_with_chance(coords0, U_occ, draws=chance_draws, seed=seed)
agree_ctrl = agreement_with_chance(coords_ctrl, U_occ, draws=chance_draws, seed=seed)
concept_claim.d01_concept_signs.judge(agree.value, baselines={"shuffled words": agree.chance,
                                                              "untrained": agree0.value},
                                      control=agree_ctrl.value)
record("d01_concept_agreement", agree.value)
record("d01_concept_agreement_untrained", agree0.value)
record("d01_concept_agreement_control", agree_ctrl.value)
print(f"sign agreement over {occ.size} words x {p_concepts} concepts: model {agree.value:.3f}, shuffled words "
      f"{agree.chance:.3f} ± {agree.chance_sd:.3f}, untrained {agree0.value:.3f}, control (H shuffled) "
      f"{agree_ctrl.value:.3f}; sigma_1..{p_concepts} = {np.round(sigma, 2).tolist()}")
claims_table()

# %% [markdown]
# ## Paper A, Figs. 1 and 3 for this model
#
# $\operatorname{corr}(\boldsymbol H)$ on the heatmap contexts (left) and $\operatorname{corr}(\boldsymbol W^\top)$
# on the occurring words (right), one row per source: the model, the same architecture untrained, the theory
# (when computed) and the proxy. Each panel below the first is annotated with its $\operatorname{sim}$ to the
# model's panel at the top of its column.

# %% mystnb={"figure": {"caption": "Context and word correlations of the model, of the same architecture untrained, of the theory and of the proxy: paper A, Figs. 1 and 3 drawn for the model and corpus of this page.", "name": "fig-d01-geometry"}, "image": {"alt": "Heatmaps of context and word correlations, one row per source."}}
panels = {"model": (H[:, heat], W[occ].T), "untrained": (H0[:, heat], W0[occ].T)}
if theory:
    panels["theory (mm)"] = (ref.H_mm[:, heat], ref.W_mm[occ].T)
panels["proxy (S~)"] = (S_ctx["heat"], S_words)
S_heat = (data.S[:, heat].toarray() > 0)
fig = plots.geometry_comparison(
    panels, context_labels=[data.context_str(j, sep="") for j in heat],
    word_labels=[data.token_str(z) for z in occ], word_order=word_order(S_heat[occ]),
    context_ticks=np.flatnonzero(np.r_[True, heat_group[1:] != heat_group[:-1]]), max_labels=32, panel_size=4.4,
    suptitle=f"{fm.path.name} on {Path(str(corpus)).name}: {heat.size} contexts (left), {occ.size} words (right)")
plt.show()

# %% [markdown]
# ## Paper B, Figs. 4 and 20-25 for this model: orthant clusters of the top concepts
#
# Each cloud is one orthant (sign configuration) of the top `grid_concepts` concepts: top, the words' orthants
# in the data (the word analyzers $\boldsymbol u_k$ of $\widetilde{\boldsymbol S}$); bottom, in the model (the
# signs of $\boldsymbol W\boldsymbol H\boldsymbol v_k$, centered). Font size is the typicality
# $\sum_k|\cdot_k|$ (B, Def. 1), at most `top` words per cloud. A model that learned the concepts puts the same
# words in the same orthant; the title of each model cloud gives the Jaccard overlap with the data's cloud of the
# same orthant (over all members, not only the drawn ones).

# %% mystnb={"figure": {"caption": "Orthant clusters of the top concepts of S~ among the occurring words: in the data (top grid) and in the model's centered logits read along the context analyzers (bottom grid); paper B, Figs. 4 and 20-25 drawn for this model.", "name": "fig-d01-orthants"}, "image": {"alt": "Two grids of word clouds, one per sign configuration."}}
p_grid = min(grid_concepts, p_concepts)
dims = list(range(p_grid))
cl_data = orthant_clusters(U_occ, dims, top=None)
cl_model = orthant_clusters(coords / np.linalg.norm(coords, axis=0), dims, top=None)
renderer = CloudRenderer(width=220, height=130)
names = [data.token_str(z) for z in occ]
grid_panels, overlaps = [], {}
for source, clusters in (("data", cl_data), ("model", cl_model)):
    for config in sign_configurations(p_grid):
        c = clusters.get(tuple(config))
        members = [] if c is None else c.indices
        label = sign_string(config)
        if source == "model":
            mine, theirs = set(np.asarray(members).tolist()), set(np.asarray(
                [] if cl_data.get(tuple(config)) is None else cl_data[tuple(config)].indices).tolist())
            overlaps[label] = len(mine & theirs) / len(mine | theirs) if mine | theirs else float("nan")
            label = f"{label} J={overlaps[label]:.2f}"
        weights = [] if c is None else c.typicality[:top]
        grid_panels.append(CloudPanel(f"{source} {label}", [names[i] for i in members[:top]], list(weights)))
fig = renderer.grid(grid_panels, ncols=2 ** p_grid,
                    title=f"orthants of the top {p_grid} concepts: data (top row(s)), model (bottom row(s))")
plt.show()

# %% [markdown]
# ## Checks
#
# Mathematical facts of this page's computation (their failure fails the build): the sparse Gram factor has the
# column correlations of the dense proxy (checked on the heatmap contexts), the count matrix holds every kept
# window once, and, when computed, $\boldsymbol L^{\rm mm}$ is certified.

# %%
record("d01_orthant_jaccard_mean", float(np.nanmean(list(overlaps.values()))))
S_dense_heat = data.S[:, heat].toarray().astype(float)
S_dense_heat -= S_dense_heat.mean(axis=0, keepdims=True)
check("the Gram factor's correlations equal the dense proxy's (heatmap contexts), max |difference| <= 1e-9",
      float(np.abs(corr(S_ctx["heat"]) - corr(S_dense_heat)).max()) <= 1e-9,
      measured=float(np.abs(corr(S_ctx["heat"]) - corr(S_dense_heat)).max()), tol=1e-9)
check("the count matrix holds every window of the kept contexts once",
      int(data.counts.sum()) == cc.kept_windows, measured=int(data.counts.sum()), paper=cc.kept_windows)
if theory:
    check("L^mm certified: relative duality gap <= 1e-5", lmm["rel_gap"] <= 1e-5, measured=lmm["rel_gap"], tol=1e-5)

# %% [markdown]
# ## Does this page find what a07 finds? (this build's defaults)
#
# When the model folder was made from a07's `cpu`-profile run (its `config.json` says so) and the corpus and
# context length are a07's, claim 5 compares this page's values with a07's committed five-seed table at seed 0
# (`results/sweeps/a07-seeds`; a stale table reads "not run"). With any other model this section says so and
# judges nothing.

# %%
a07_keys = ["H_proxy_heat", "H_proxy_first", "W_proxy_occ", "H_mm_heat", "H_mm_first"]
same_run = (fm.meta.get("chapter") == "a07_tinystories_transformer" and fm.meta.get("step") == fm.meta.get("steps")
            and str(corpus) == fm.meta.get("corpus") and max_documents == fm.meta.get("max_documents")
            and lengths == [fm.meta.get("context_length")] and n_contexts == 0 and selection == "first"
            and n_words == 0 and n_curve == 1000 and theory)
a07_claims = preregister({f"d01_a07_{key}": (f"{sim_specs.get(key, key)} equals a07's seed-0 value",
                                             within(0.0, abs_tol=a07_tolerance), None, "a07-seeds, seed 0")
                          for key in a07_keys},
                         controls={f"d01_a07_{key}": "the same difference against a07's seed-1 model"
                                   for key in a07_keys}) if same_run else {}
if same_run:
    pub = shown_committed("a07-seeds")
    values = recorded_values(pub["table"], "seed") if pub is not None and not pub["stale"] else None
    a07 = values if values is not None and {0, 1} <= set(values.index) else None
    table = []
    for key in a07_keys:
        theirs, other = (None, None) if a07 is None else (float(a07.loc[0, f"a07_{key}"]),
                                                          float(a07.loc[1, f"a07_{key}"]))
        outcome = a07_claims[f"d01_a07_{key}"].judge(None if theirs is None else sims[key].value - theirs,
                                                     paper=theirs,
                                                     control=None if other is None else sims[key].value - other)
        table.append({"similarity": sim_specs[key], "this page": sims[key].value, "a07 (seed 0)": theirs,
                      "a07 (seed 1, control)": other, "outcome": outcome})
    display(pd.DataFrame(table).set_index("similarity").style.format(
        "{:.4f}", subset=["this page", "a07 (seed 0)", "a07 (seed 1, control)"], na_rep="-"))
else:
    print("this model folder or corpus is not a07's cpu-profile run: nothing to compare with a07")

# %% [markdown]
# ## Geometry against the training step (a committed sweep)
#
# The same page run on a07's model folders at four steps of one run (the committed table `d01-steps`; its command
# is printed below). Step 0 is the initialization, which is also the untrained control of every point, so there
# every claim must deviate. Drawn: the off-diagonal similarities of the claims above, and the concept sign
# agreement, against the step. Nothing is drawn when the table is missing or stale, or when this page's model
# folder is not one of a07's (the sweep says nothing about another model).

# %% mystnb={"figure": {"caption": "The off-diagonal similarities of the model to the proxy and the theory, and the concept sign agreement, at four steps of a07's run (the committed sweep d01-steps); step 0 is the initialization.", "name": "fig-d01-steps"}, "image": {"alt": "Two line plots against the training step."}}
STEPS_SWEEP = "d01-steps"
a07_model = fm.meta.get("chapter") == "a07_tinystories_transformer"  # the sweep is of a07's folders only
pub_steps = shown_committed(STEPS_SWEEP) if a07_model else None
if not a07_model:
    print(f"this model folder is not one of a07's: the committed sweep {STEPS_SWEEP} of a07's folders is not drawn")
elif pub_steps is not None and not pub_steps["stale"]:
    wide = recorded_values(pub_steps["table"], "model")
    wide.index = [int(Path(str(m)).name.removeprefix("step-")) for m in wide.index]
    wide = wide.sort_index()
    print(f"command: `{pub_steps['provenance'].get('command', '')}`")
    x = np.maximum(wide.index.to_numpy(), 1)  # step 0 drawn at 1 on the log axis
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), layout="constrained")
    for key, color in (("H_proxy_heat", "steelblue"), ("H_proxy_first", "darkorange"), ("W_proxy_occ", "seagreen"),
                       ("H_mm_heat", "purple"), ("H_mm_first", "brown"), ("W_mm_occ", "gray")):
        if f"d01_{key}_offdiag" in wide:
            axes[0].plot(x, wide[f"d01_{key}_offdiag"], marker="o", color=color, label=sim_specs.get(key, key))
    axes[0].set(xscale="log", xlabel="training step (0 drawn at 1)", ylabel="off-diagonal sim", ylim=(0, 1),
                title="(a) similarity to the data's geometry")
    axes[1].plot(x, wide["d01_concept_agreement"], marker="o", color="steelblue", label="model")
    axes[1].plot(x, wide["d01_concept_agreement_control"], marker="s", ls="--", color="gray",
                 label="control: H shuffled against the contexts")
    axes[1].plot(x, wide["d01_concept_agreement_untrained"], ls=":", color="black", label="untrained")
    axes[1].set(xscale="log", xlabel="training step (0 drawn at 1)", ylabel="sign agreement",
                title=f"(b) concepts: sign agreement, top {n_concepts}")
    axes[1].legend(fontsize=9)
    axes[0].legend(fontsize=9)
    plt.show()
else:
    print(f"the committed table {STEPS_SWEEP} is {'missing' if pub_steps is None else 'stale'}: nothing drawn")

# %% [markdown]
# ## What differs from the papers, and the limits of this page
#
# * **The similarity claims are the papers' visual resemblances made numbers** (paper A's Figs. 1 and 3 show
#   heatmaps; the book's rule is the one of every similarity claim). The concept claim is ours: paper B shows orthant clusters of
#   $\widetilde{\boldsymbol S}$'s factors and of GPT-2's decoder separately; reading the model's logits along the
#   data's context analyzers ties the two, and has a chance level and a control.
# * **No training here.** The page measures a finished model; the untrained control is its architecture
#   re-initialized, not its own initialization (unknown for a downloaded model).
# * **Scale.** Counting is linear in the corpus (the measured time and index memory are in the corpus table);
#   the similarity claims use at most `n_curve` contexts and the occurring words ($O(m^2)$ and $O(|words|^2)$
#   memory), and $\boldsymbol L^{\rm mm}$ stops at `max_mm_entries`: beyond it the proxy stands in, as in paper A's
#   Fig. 3. The concept SVD is sparse (`centered_topk_svd`).
# * **GPT-2.** Chapter b07 reads GPT-2 from a folder through its `gpt2` parameter (the weights cannot be fetched
#   here; its labelled fallback stays); this page reads the same folder with `model=` and GPT-2's tokenizer with
#   `tokenizer=` (e.g. `data:gpt2-tokenizer`).

# %%
print(f"chapter: {run.elapsed():.1f} s wall, {run.cpu_elapsed():.1f} s CPU")
