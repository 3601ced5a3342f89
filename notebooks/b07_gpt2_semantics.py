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
# # Semantics in a pretrained model: orthant clusters of the decoder
#
# For a pretrained LM the data-sparsity matrix $\widetilde{\boldsymbol S}$ of its training corpus is out of reach,
# so paper B {cite}`zhao2025semantics` (sec. 5 "Semantics in pretrained models", App. F.2, **Figs. 7, 15-17**)
# reads the concepts from the model itself. The decoder of GPT-2 (124M), $\boldsymbol W\in\mathbb R^{50257\times768}$,
# has the thin SVD $\boldsymbol W=\boldsymbol U\boldsymbol\Sigma^{1/2}\mathbf R$; the columns of $\boldsymbol U$ are the
# **word concepts**. Orthant clustering (Definition 1) on the top $p=4,5,6$ concepts, with the top-40 members by
# typicality $\sum_{k\le p}|\boldsymbol u_k[z]|$ shown as word clouds, gives topical clusters: the paper names
# *Positive, Negative, Chemical, Medical, Cooperation, Digital entertainment, Cultural, Societal* (Fig. 7) and
# shows all $2^p$ orthants for $p=4,5,6$ (Figs. 15-17). For **contexts** the paper takes the last-layer states
# $\boldsymbol H$ (the decoder inputs) of the prefixes (lengths 1-10) of 50,000 random 11-token windows of
# OpenWebText and sets $\boldsymbol V=\boldsymbol H^\top\mathbf R^\top\boldsymbol\Sigma^{-1/2}$, so that the logits
# factor like the SVD of $\widetilde{\boldsymbol S}$: $\boldsymbol L=\boldsymbol W\boldsymbol H=\boldsymbol U\boldsymbol\Sigma
# \boldsymbol V^\top$ (paper B Sec. 5.1 prints $\mathbf R$ where its transpose is meant).
#
# **What we reproduce, and with which model.** The chapter loads GPT-2 through Hugging Face (`NTP_GPT2_PATH`, a
# local folder or the Hugging Face cache) when it is available, and labels all its tokens with **GPT-2's own
# tokenizer** (the shared tokenizer files, checksums verified; `#` = word start as in the paper, `⏎` = newline,
# hex bytes for an incomplete UTF-8 piece). **This build machine is offline and has no copy of GPT-2's
# weights**: the chapter then uses the offline fallback of `ntputils.training.pretrained` -- a transformer LM
# with {glue:text}`fallback_layers` layers and $d=$ {glue:text}`fallback_d` that we train on WikiText-2, read with
# GPT-2's tokenizer and restricted to its {glue:text}`fallback_vocab:,d` most frequent GPT-2 tokens plus one
# `<other>` token. Its trained weights are committed (`results/models/fallback-lm/`, made by
# `python -m ntputils.export_models --fallback` with the same code, and loaded only while the configuration, the
# text and the training code are those that made them; otherwise it is trained here, about two minutes of one
# core, and cached). The banner below says which model was used and where its weights came from. **With the
# fallback, every figure here is that small model's, not GPT-2's, and the paper's Figs. 7 and 15-17 are listed as not reproduced**; the pipeline (SVD of the decoder, orthant clusters, word
# clouds, context concepts) is the same for both.
#
# **Beyond the paper: measuring the clusters.** The paper reads the clouds by eye. We label every token with
# lexical classes (part of speech, verb form, number, month, name, punctuation, "no leading space" = BPE
# continuation piece; `ntputils.analysis.purity`, chapter b04) and count how many orthant clusters are purer than random
# token sets of the same size (95th percentile), with a control that shuffles the rows of $\boldsymbol U$. On the
# context side we test the coupling of word and context concepts: is the observed next token of a context in the
# word orthant of the context's own sign configuration more often than chance?
#
# **cpu profile.** 2,000 windows of 11 tokens, whose prefixes are the contexts, from WikiText-2 (the fallback's
# training corpus; with GPT-2 it stands in for OpenWebText, which we do not have); the paper profile uses the
# paper's 50,000 windows (500,000 contexts).

# %%
# checked by the runner before any work: at least one p of 1-8 top concepts (2^p orthants); a cloud is
# [width, height] with its largest font height // 4 at least wordcloud's smallest font (4 px): height >= 16
LIMITS = {"len(ps)": (1, None), "ps": (1, 8), "len(cloud_px)": (2, 2), "cloud_px": (16, None)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of b07_gpt2_semantics.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
gpt2 = "auto"    # "auto": $NTP_GPT2_PATH, else the hub name "gpt2"; or a local folder / hub name
allow_download = False  # let Hugging Face download GPT-2 (False: cache and local folders only)
n_windows = 2000  # random 11-token windows; contexts are their prefixes of lengths 1..10
window = 11      # window length (paper: 11)
ps = [4, 5, 6]   # numbers of top concepts for the orthant grids (paper: 4, 5, 6)
top = 40         # members per word cloud, by typicality (paper: 40)
min_size = 10    # clusters with fewer members are shown but not tested against random
n_draws = 1000   # random token sets per cluster size for the purity baseline
cloud_px = [220, 130]  # word-cloud size in pixels (width, height)
min_contexts = 50  # configurations with fewer contexts get no enrichment value

# %%
# %matplotlib inline
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ntputils.analysis.concepts import (
    context_concepts,
    decoder_concepts,
    orthant_agreement,
    orthant_clusters,
    orthant_labels,
    orthant_purity,
    sign_configurations,
    sign_string,
)
from ntputils.analysis.purity import NO_SPACE, RandomBaseline, best_of_n, lexical_labels, summarize_purity
from ntputils.chapter import (
    above_chance,
    at_least,
    check,
    claims_table,
    preregister,
    record,
    setup_chapter,
)
from ntputils.data.corpora.paper_b_corpora import corpus_texts
from ntputils.plots.wordclouds import CloudPanel, CloudRenderer, cluster_panel
from ntputils.training.pretrained import (
    FallbackConfig,
    load_pretrained_lm,
    prefix_context_embeddings,
    prefix_contexts,
    sample_windows,
)

# One thread: the fallback LM (2 layers, d=128, 32 x 32-token batches) trains at ~0.11 s CPU per step on one
# thread; two threads on a shared 2-core machine can spin for seconds per step.
run = setup_chapter(globals(), torch_threads=1)
renderer = CloudRenderer(width=cloud_px[0], height=cloud_px[1], max_font_size=cloud_px[1] // 4,
                         seed=seed)

# %% [markdown]
# ## Pre-registered rules
#
# The paper reads GPT-2's clouds by eye and gives no numbers. The rules, fixed here before the model is loaded,
# follow chapter b04:
#
# * **Interpretable grids** (Figs. 15-17): at every $p$ a **majority** ($\ge 0.5$) of the tested clusters
#   ($\ge$ `min_size` members) beat random (95th percentile of the best excess of same-size random token sets;
#   chance 1/20 by construction of the test).
# * **Fig. 7** shows eight named clusters: over $p=4,5,6$, **at least 8** word classes are *found* by the
#   selection-aware rule of chapter b04: the purest of the $N$ tested clusters for the class beats the 95th
#   percentile of the purest of $N$ random token sets of the same sizes (`best_of_n`).
# * **Negative controls** (issue #44): every claim is judged on the same measurement with the **rows of
#   $\boldsymbol U$ shuffled** (every token gets another token's analyzer coordinates: the concept structure of the
#   model is gone, the spectrum kept). Where the rule also holds on it, the claim reads "cannot fail". This folds
#   the former separate "shuffled" claims (rule: at most the test's nominal 1/20 plus a margin) into the
#   grid claims as their control; their share stays in the summary table.
# * **Coupled word and context concepts** (App. F.2; our measure): the rate at which a context and its observed
#   next token share the configuration on $\mathcal K=\{1..p\}$ is above the **95th percentile** of the same
#   rate when the next tokens are randomly permuted among the contexts (chance).
#
# Each claim is registered twice: **about GPT-2** (the paper's claim, on the scorecard), judged only when GPT-2
# itself is loaded and otherwise reported as **not reproduced** (the weights are not available to this build);
# and **about the fallback LM**, judged when the fallback is used, labelled as such and not counted as evidence
# for the paper's GPT-2 figures.

# %%
FIGNAME = {4: "Fig. 15", 5: "Fig. 16", 6: "Fig. 17"}
specs = {}


def items(who, *ids):
    """Scorecard items of a claim: only the GPT-2 claims are evidence for the paper's GPT-2 figures."""
    return list(ids) if who == "GPT-2" else None


for who in ("GPT-2", "fallback LM"):
    for p in ps:
        figlabel = FIGNAME.get(p, f"p={p}")
        fig_item = f"B:Fig {figlabel[5:]}" if p in FIGNAME else "B:GPT-2"
        specs[f"{who} grid p={p}"] = (f"{who}, {figlabel}: share of tested orthant clusters (p={p}) beating random",
                                       at_least(0.5, "a majority; chance 0.05"), items(who, fig_item, "B:GPT-2"))
        specs[f"{who} agreement p={p}"] = (f"{who}: context and next token share the orthant on K={{1..{p}}} "
                                            "(chance = p95 with permuted next tokens)", above_chance(0.0),
                                            items(who, "B:GPT-2"))
    specs[f"{who} fig7"] = (f"{who}, Fig. 7: word classes found over p = {ps} (best-of-N rule)",
                            at_least(8, "Fig. 7 names eight clusters"), items(who, "B:Fig 7", "B:GPT-2"))
claims = preregister(specs, controls={key: "the same with the rows of U shuffled (tokens get other tokens' "
                                          "analyzer coordinates)" for key in specs})

# %% [markdown]
# ## The model

# %%
if not allow_download:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no network here: fail fast instead of retrying downloads
t0 = time.process_time()
lm = load_pretrained_lm(None if gpt2 == "auto" else gpt2, device=run.device, progress=False)
model_cpu = time.process_time() - t0
is_gpt2 = lm.source == "gpt2"
banner = "GPT-2" if is_gpt2 else "THE OFFLINE FALLBACK LM -- NOT GPT-2: the figures below are NOT GPT-2's"
print("=" * 100)
print(f"MODEL USED: {banner}\n{lm.description}\n(loaded or trained in {model_cpu:.1f} s CPU)")
print("=" * 100)
model_name = "GPT-2" if is_gpt2 else "fallback LM, NOT GPT-2"
tokens = lm.tokens
W = lm.W.astype(np.float64)
print(f"decoder W: {W.shape[0]} tokens x d = {W.shape[1]}")
fallback_cfg = FallbackConfig()  # the offline fallback LM's configuration (used when GPT-2 is not available)
record("fallback_layers", fallback_cfg.n_layers)
record("fallback_d", fallback_cfg.d)
_ = record("fallback_vocab", fallback_cfg.bpe_vocab - 1)  # GPT-2 tokens kept; one more id is <other>

# %% [markdown]
# ## Word concepts: the SVD of the decoder
#
# $\boldsymbol W=\boldsymbol U\boldsymbol\Sigma^{1/2}\mathbf R$ (signs: the largest entry of every $\boldsymbol u_k$ is
# positive). The first singular value is far above the others ($\sqrt{\sigma_1}/\sqrt{\sigma_2}=$
# {glue:text}`sv_ratio_12:.1f` here): the rows of a trained decoder share a common direction (the paper does not
# center $\boldsymbol W$, and neither do we).

# %% mystnb={"figure": {"caption": "Singular values of the decoder (our own figure).", "name": "fig-b07-spectrum"}, "image": {"alt": "Line plot of the decoder's singular values against k, on a logarithmic y axis."}}
dc = decoder_concepts(W)
U = dc.U
fig, ax = plt.subplots(figsize=(7, 3))
ax.semilogy(np.arange(1, dc.sqrt_sigma.size + 1), dc.sqrt_sigma, ".-")
ax.set_xlabel("k")
ax.set_ylabel(r"singular value of $W$ ($\sqrt{\sigma_k}$)")
ax.set_title(f"Spectrum of the decoder of the {model_name}")
plt.show()
print("top singular values of W:", np.round(dc.sqrt_sigma[:8], 2))
record("sv_ratio_12", float(dc.sqrt_sigma[0] / dc.sqrt_sigma[1]))

labels = lexical_labels(tokens)
lexical = labels.without(NO_SPACE)
baseline = RandomBaseline(labels, n_draws=n_draws, seed=seed)
baseline_lex = RandomBaseline(lexical, n_draws=n_draws, seed=seed)
shuffled_U = U[np.random.default_rng(seed).permutation(U.shape[0])]
print(f"tokens with a lexical class: {lexical.coverage:.1%}; with any class (incl. '{NO_SPACE}'): {labels.coverage:.1%}")

# %% [markdown]
# ## Figs. 15-17: all orthants of the top $p=4,5,6$ word concepts
#
# One word cloud per configuration $C$ on $\mathcal K=\{1..p\}$ (title: $C$, then the cluster's best class and its
# purity among the top-40 members); font size $\propto$ typicality; "#" marks a token that starts a word.


# %% mystnb={"figure": {"caption": "Orthant clusters of the top word concepts, one word cloud per sign configuration; reproduces paper B, Figs. 15 to 17."}, "image": {"alt": "Grids of word clouds, one per sign configuration."}}
word_clusters, summary_rows, tables, shuffled_clusters, shuffled_tables = {}, [], {}, {}, {}
for p in ps:
    clusters, table = orthant_purity(U, p, labels, baseline, top=top)
    word_clusters[p], tables[p] = clusters, table
    panels = [cluster_panel(f"C={sign_string(C)}", cl.indices, cl.typicality, tokens, labels)
              for C, cl in clusters.items()]
    figname = {4: "Fig. 15", 5: "Fig. 16", 6: "Fig. 17"}.get(p, "Grid")
    renderer.grid(panels, ncols=8, cell=(2.3, 1.7), fontsize=7,
                  title=f"{figname} (ours, {model_name}): orthant clusters on K={{1..{p}}}")
    plt.show()
    lex_table = orthant_purity(U, p, lexical, baseline_lex, top=top)[1]
    shuffled_clusters[p], shuf_table = orthant_purity(shuffled_U, p, labels, baseline, top=top)
    shuffled_tables[p] = shuf_table
    row = {"p": p, **{f"{k}": v for k, v in summarize_purity(table, min_size).items()}}
    row["beat random (lexical classes only)"] = summarize_purity(lex_table, min_size)["beat random"]
    row["shuffled U: beat random"] = summarize_purity(shuf_table, min_size)["beat random"]
    summary_rows.append(row)

# %%
summary = pd.DataFrame(summary_rows).set_index("p")
display(summary.round(3))

# %% [markdown]
# "tested" = clusters with at least 10 members; "beat random" = share of tested clusters whose best-class excess
# over the base rate is above the 95th percentile of random token sets of the same size (each random set picking
# its own best class). "lexical classes only" drops the tokenizer class "no leading space"; the shuffled control
# gives every token the analyzer row of another token.
#
# ## Fig. 7 analogue (ours): word classes found by the selection-aware rule
#
# The paper picks eight topical clusters by eye. Picking the purest of many clusters finds "pure" clusters by
# chance, so we show a class only when it is **found**: the purest of the $N$ tested clusters (all $p=4,5,6$) for
# that class beats the 95th percentile of the purest of $N$ random token sets of the same sizes. Up to eight found
# classes are drawn, by margin over that chance level (title: $p$, $C$, class, purity, chance p95).

# %% mystnb={"figure": {"caption": "The word classes found by the selection-aware rule; an analogue of paper B, Fig. 7, not the paper's figure.", "name": "fig-b07-fig7"}, "image": {"alt": "Grid of word clouds titled by class, purity and chance level."}}
def tested_clusters(tables_: dict, clusters_: dict) -> tuple[pd.DataFrame, dict]:
    """The clusters tested for Fig. 7 (>= min_size members, all p) and their members, by (p, cluster)."""
    cand = pd.concat([t.assign(p=p) for p, t in tables_.items()])
    cand = cand[cand["size"] >= min_size]
    return cand, {(r["p"], r["cluster"]): clusters_[r["p"]][tuple(1 if ch == "+" else -1 for ch in
                                                                  r["cluster"].strip("()").split(","))].indices
                  for _, r in cand.iterrows()}


def n_classes_found(tables_: dict, clusters_: dict) -> int:
    """How many best classes of the tested clusters the best-of-N rule finds (the Fig. 7 claim's measure)."""
    cand, tested_ = tested_clusters(tables_, clusters_)
    return int(sum(best_of_n(tested_, baseline, cls, min_size=min_size, seed=seed).beats
                   for cls in sorted(set(cand["best class"]))))


candidates, tested = tested_clusters(tables, word_clusters)
found_rows = []
for cls in sorted(set(candidates["best class"])):
    bon = best_of_n(tested, baseline, cls, min_size=min_size, seed=seed)
    best_key = max(tested, key=lambda k: (labels.member[tested[k], labels.index(cls)].mean(), len(tested[k])))
    found_rows.append({"class": cls, "p": best_key[0], "cluster": best_key[1], "purity": bon.observed,
                       "N tested": bon.n_candidates, "best-of-N random p95": bon.p95, "found": bon.beats,
                       "margin": bon.observed - bon.p95,
                       "members": " ".join(tokens[i] for i in tested[best_key][:8])})
fig7 = pd.DataFrame(found_rows).sort_values("margin", ascending=False)
n_found = int(fig7["found"].sum())
panels = []
for _, r in fig7[fig7["found"]].head(8).iterrows():
    C = tuple(1 if ch == "+" else -1 for ch in r["cluster"].strip("()").split(","))
    cl = word_clusters[r["p"]][C]
    panels.append(CloudPanel(f"p={r['p']} C={r['cluster']}\n{r['class']} {r['purity']:.2f} (chance p95 "
                             f"{r['best-of-N random p95']:.2f})", [tokens[i] for i in cl.indices],
                             cl.typicality.tolist()))
if panels:
    renderer.grid(panels, ncols=4, cell=(3.4, 2.5), fontsize=9,
                  title=f"Fig. 7 analogue ({model_name}; not the paper's Fig. 7): classes found by the best-of-N rule")
    plt.show()

# %%
n_found_shuffled = n_classes_found(shuffled_tables, shuffled_clusters)  # control: rows of U shuffled
print(f"{n_found} of {len(fig7)} classes (best class of some tested cluster) are found by the best-of-N rule; "
      f"with the rows of U shuffled: {n_found_shuffled}")
display(fig7.round(3))

# %% [markdown]
# ## Context concepts (App. F.2)
#
# Random windows of 11 tokens (`window`; never crossing a paragraph of WikiText-2), their prefixes of lengths 1-10 as
# contexts, the last-layer states $\boldsymbol H$ of all prefixes (one forward pass per window, by causality), and
# $\boldsymbol V=\boldsymbol H^\top\mathbf R^\top\boldsymbol\Sigma^{-1/2}$.

# %%
t0 = time.process_time()
docs = lm.encode(corpus_texts("wikitext", "gpt2"))  # detokenized WikiText-2, cut at <unk>
windows = sample_windows(docs, n_windows, window, seed=seed)
contexts, next_tokens = prefix_contexts(windows)
record("n_contexts", len(contexts))
H = prefix_context_embeddings(lm.model, windows, progress=False).astype(np.float64)
V_ctx = context_concepts(H, dc)
sample = np.random.default_rng(seed).choice(H.shape[1], size=min(500, H.shape[1]), replace=False)
L_sample = W @ H[:, sample]
factor_err = float(np.abs(L_sample - (U * dc.sigma) @ V_ctx[sample].T).max() / np.abs(L_sample).max())
print(f"{len(windows)} windows -> {len(contexts)} contexts; H: {H.shape}; {time.process_time() - t0:.1f} s CPU; "
      f"relative error of L = U Sigma V^T on 500 contexts: {factor_err:.1e}")


def context_text(j: int, last: int = 4) -> str:
    """The last ``last`` tokens of context j as text ("..." if cut)."""
    ids = contexts[j]
    return ("..." if len(ids) > last else "") + " ".join(tokens[i] for i in ids[-last:])


# %% [markdown]
# **Do word and context orthants match?** For every context we compare its sign configuration on $\mathcal K=\{1..p\}$
# with the configuration of its *observed* next token. Under independence the two would agree with probability
# $\sum_C P(\text{context}\in C)\,P(\text{next token}\in C)$ ("chance").

# %%
agreement, agree_rows, agree_p95, agreement_shuffled = {}, [], {}, {}
rng_perm = np.random.default_rng(seed)
for p in ps:
    word_codes, ctx_codes = orthant_labels(U, range(p)), orthant_labels(V_ctx, range(p))
    ag = orthant_agreement(word_codes, ctx_codes, next_tokens, 2**p, min_contexts)
    agreement[p] = ag
    agreement_shuffled[p] = orthant_agreement(orthant_labels(shuffled_U, range(p)), ctx_codes, next_tokens, 2**p,
                                              min_contexts).rate  # control: rows of U shuffled
    next_codes = word_codes[np.asarray(next_tokens)]
    perm_rates = np.array([np.mean((ctx_codes >= 0) & (ctx_codes == next_codes[rng_perm.permutation(next_codes.size)]))
                           for _ in range(200)])
    agree_p95[p] = float(np.percentile(perm_rates, 95))
    enr = ag.enrichment[np.isfinite(ag.enrichment)]
    agree_rows.append({"p": p, "agreement": ag.rate, "chance (independence)": ag.chance,
                       "permuted: mean": perm_rates.mean(), "permuted: std": perm_rates.std(),
                       "permuted: p95": agree_p95[p], "ratio": ag.ratio,
                       "control: rows of U shuffled": agreement_shuffled[p],
                       "configurations with >= min contexts": enr.size, "enriched (> 1)": int((enr > 1).sum()),
                       "median enrichment": float(np.median(enr)) if enr.size else np.nan})
display(pd.DataFrame(agree_rows).set_index("p").round(3))

# %% [markdown]
# **Context and word clusters with the same configuration** (as paper B Fig. 6 does for TinyStories): for $p=4$, the
# four configurations with the largest enrichment among those whose word orthant has at least 10 members; left the
# top contexts by typicality (last 4 tokens), right the top words.

# %% mystnb={"figure": {"caption": "Matched context and word orthants, top contexts on the left and top words on the right (App. F.2; as paper B, Fig. 6 does for TinyStories).", "name": "fig-b07-contexts"}, "image": {"alt": "Pairs of clouds: contexts on the left, words on the right."}}
p_pair = min(ps)
ctx_clusters = orthant_clusters(V_ctx, range(p_pair), top=top)
configs = sign_configurations(p_pair)
enr = agreement[p_pair].enrichment
big_enough = np.array([word_clusters[p_pair][C].indices.size >= min_size for C in configs]) & np.isfinite(enr)
best = [configs[i] for i in np.argsort(-np.where(big_enough, enr, -1.0))[:4] if big_enough[i]]
pair_panels = []
for C in best:
    cc, wc = ctx_clusters[C], word_clusters[p_pair][C]
    texts = [context_text(j) for j in cc.indices]
    i = configs.index(C)
    pair_panels.append(CloudPanel(f"contexts C={sign_string(C)} (enrichment {enr[i]:.1f})", texts,
                                  cc.typicality.tolist()))
    pair_panels.append(cluster_panel(f"words C={sign_string(C)}", wc.indices, wc.typicality, tokens, labels))
renderer.grid(pair_panels, ncols=4, cell=(3.2, 2.2), fontsize=8,
              title=f"Matched context / word orthants on K={{1..{p_pair}}} ({model_name})")
plt.show()
print(f"chapter so far: {run.cpu_elapsed():.1f} s CPU, {run.elapsed():.1f} s wall")

# %% [markdown]
# ## Claims and checks
#
# * Math (sanity): the context concepts factor the logits, $\boldsymbol W\boldsymbol H=\boldsymbol U\boldsymbol\Sigma
#   \boldsymbol V^\top$, by construction of $\boldsymbol V$; and the banner states which model was used.
# * The pre-registered claims: about GPT-2 (*not reproduced* when GPT-2 cannot be loaded) and, separately labelled,
#   about the fallback LM.

# %%
beat = summary["beat random"]
check("V = H^T R^T Sigma^-1/2 factors the logits: W H = U Sigma V^T (relative error)", factor_err < 1e-6,
      measured=factor_err, paper="by construction (App. F.2)", tol=1e-6, sanity=True)
check("The model used is stated; a fallback is flagged as not GPT-2",
      is_gpt2 or lm.description.startswith("fallback (not GPT-2)"), measured=lm.description[:60] + "...",
      paper="GPT-2 124M", sanity=True)
record("is_gpt2", bool(is_gpt2))
record("n_classes_found", n_found)
record("n_classes_tested", len(fig7))
record("n_classes_found_shuffled", n_found_shuffled)
for p in ps:
    record(f"beat_random_p{p}", float(beat.loc[p]))
    record(f"shuffled_beat_random_p{p}", float(summary.loc[p, "shuffled U: beat random"]))
    record(f"agreement_p{p}", float(agreement[p].rate))
    record(f"agreement_chance_p{p}", float(agreement[p].chance))
    record(f"agreement_perm_p95_p{p}", agree_p95[p])
    record(f"agreement_shuffled_p{p}", float(agreement_shuffled[p]))

rows = []
NOT_GPT2 = "GPT-2 weights not available offline (the figures of this page are the fallback LM's)"
for who in ("GPT-2", "fallback LM"):
    ran = is_gpt2 == (who == "GPT-2")
    # a GPT-2 claim without GPT-2 is not reproduced; a fallback claim when GPT-2 ran is simply not run
    missing = {"unavailable": NOT_GPT2} if (who == "GPT-2" and not ran) else {}
    note = "" if ran or missing else "GPT-2 was loaded: no fallback run"
    for p in ps:
        for kind, measured, chance, ctrl in [
                ("grid", beat.loc[p], 0.05, summary.loc[p, "shuffled U: beat random"]),
                ("agreement", agreement[p].rate, agree_p95[p], agreement_shuffled[p])]:
            key = f"{who} {kind} p={p}"
            rows.append((key, claims[key].judge(float(measured) if ran else None, chance=chance if ran else None,
                                                control=float(ctrl) if ran else None, note=note, **missing)))
    rows.append((f"{who} fig7", claims[f"{who} fig7"].judge(n_found if ran else None, note=note,
                                                           control=n_found_shuffled if ran else None, **missing)))
outcomes = pd.DataFrame(rows, columns=["claim", "outcome"]).set_index("claim")
for who in ("GPT-2", "fallback LM"):
    counts = outcomes[outcomes.index.str.startswith(who)]["outcome"].value_counts()
    for outcome in ("reproduced", "deviates", "cannot fail", "not run", "not reproduced"):
        record(f"{who.split()[0].replace('-', '')}_{outcome.replace(' ', '_')}", int(counts.get(outcome, 0)))
print(f"chapter: {run.cpu_elapsed():.1f} s CPU, {run.elapsed():.1f} s wall")
claims_table()

# %% [markdown]
# **Outcome.** About GPT-2: {glue:text}`GPT2_reproduced` reproduced, {glue:text}`GPT2_deviates` deviate,
# {glue:text}`GPT2_not_reproduced` not reproduced (without the GPT-2 weights every GPT-2 claim is *not
# reproduced*, and the scorecard lists Figs. 7 and 15-17 so). About the fallback LM, the same rules, **not
# evidence for the paper's GPT-2 figures**: {glue:text}`fallback_reproduced` reproduced,
# {glue:text}`fallback_deviates` deviate, {glue:text}`fallback_cannot_fail` cannot fail (the rule also holds with
# the rows of $\boldsymbol U$ shuffled), {glue:text}`fallback_not_run` not run; {glue:text}`n_classes_found` of
# {glue:text}`n_classes_tested` word classes are found by the best-of-N rule ({glue:text}`n_classes_found_shuffled`
# with the rows of $\boldsymbol U$ shuffled).
#
# ## What differs from the paper and why
#
# * **The model.** Without network access and without a local copy of GPT-2's weights the chapter runs on our
#   fallback LM ({glue:text}`fallback_layers` layers, $d=$ {glue:text}`fallback_d`, GPT-2's tokenizer restricted to
#   its most frequent tokens; trained on WikiText-2 for `steps` batches of `batch_size` x `context` tokens, the
#   defaults of `ntputils.training.pretrained.FallbackConfig`, about 1M tokens in all; validation CE in the
#   banner). Its vocabulary is far smaller than GPT-2's and its
#   training is tiny, so the classes it separates are grammatical and orthographic (the Fig. 7 analogue table),
#   like those of the simplified datasets of chapter b04, not the topical clusters of Fig. 7 (*Positive,
#   Chemical, Medical ...*). The paper itself ties topical semantics to richer data and models ("richer sparsity
#   patterns yield richer semantics"). With `NTP_GPT2_PATH` set (or GPT-2 in the Hugging Face cache) the same
#   cells run on GPT-2, and the GPT-2 claims are judged.
# * **Fig. 7 selection.** The paper chose its eight clusters by eye and named them; we show only classes that beat
#   the selection-aware chance level, judged by a lexical measure that cannot see topics (no offline topical
#   lexicon), so our labels are classes such as "number" or "past-tense verb".
# * **Contexts.** WikiText-2 windows instead of OpenWebText; 2,000 windows at the cpu profile
#   ({glue:text}`n_contexts:,d` contexts in this run) instead of the paper's 50,000 (500,000 contexts). The paper shows no context figure for GPT-2 in v1; our agreement test is ours.
# * **$\mathbf R$ vs $\mathbf R^\top$.** We use $\boldsymbol V=\boldsymbol H^\top\mathbf R^\top\boldsymbol\Sigma^{-1/2}$ with
#   $\mathbf R$ the $r\times d$ right factor of the SVD; this is the reading under which $\boldsymbol L=\boldsymbol U
#   \boldsymbol\Sigma\boldsymbol V^\top$ holds (checked above).
