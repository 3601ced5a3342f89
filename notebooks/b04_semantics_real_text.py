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
# # Semantics in real text: orthant clusters, k-means and context-word pairs
#
# Paper B {cite}`zhao2025semantics` builds two small next-token datasets from real text, **Simplified
# TinyStories** (STS) and **Simplified WikiText**, with $V=1{,}000$ next tokens and $m=10{,}000$ frequent
# contexts of lengths 2-6 (sec. 4.3, sec. 5, App. F), and reads the SVD of the centered support matrix
# $\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top$ as a list of *concepts*. Its
# claims, which this chapter reproduces figure by figure:
#
# * single concept dimensions are **not** interpretable (Fig. 14);
# * combining the top $p$ dimensions by **sign configuration** (Definition 1) gives interpretable clusters:
#   past-tense verbs, present-tense verbs, prepositions and proper names in STS; months, numbers, units and
#   prepositions/conjunctions in WikiText (Fig. 4; full grids Figs. 22-25);
# * the configurations form a **hierarchy**: adding dimensions refines verbs into past and present tense,
#   and present into action vs. *-ing* (Fig. 11);
# * **k-means** with $k=2^p$ clusters on the rows of $\boldsymbol U_{:,1:p}$ recovers similar clusters
#   (Fig. 5; all clusters Figs. 20-21);
# * **contexts and words** with the same sign pattern go together: "want/like/love/have to" $\leftrightarrow$
#   infinitive verbs, "was so/very" $\leftrightarrow$ adjectives (Fig. 6).
#
# **Definition 1** (paper B). For concept dimensions $\mathcal K=\{k_1,\dots,k_p\}$ and a sign configuration
# $C\in\{\pm1\}^p$, word $z$ is a member of $C$ iff $\mathrm{sign}(\boldsymbol u_{k_i}[z])=c_{k_i}$ for all
# $i$, with typicality $\mathrm{Typicality}(z;C)=\sum_i|\boldsymbol u_{k_i}[z]|$; contexts likewise with
# $\boldsymbol v_k[j]$. Every word cloud below shows the **top-40 members by typicality**, font size
# proportional to typicality, `#` marking a word start, as in the paper.
#
# **Beyond the paper: purity.** The paper reads the clouds by eye. We label the vocabulary with word classes
# from an offline lexicon (`ntputils.data.corpora.word_classes`: part of speech and verb form from the
# `lemminflect` lexicon, census given names from `names`, hand-listed closed classes: pronouns, determiners,
# prepositions/conjunctions, auxiliaries, months, number words, units; plus one tokenizer class, "no leading
# space": tokens without `#`, i.e. BPE pieces inside a word or words at the start of a line or quote) and
# measure, for every cluster $C$ shown (its top-40 words),
#
# $$\mathrm{purity}(C,c)=\frac{|C\cap c|}{|C|},\qquad
#   c^\star=\arg\max_c\big(\mathrm{purity}(C,c)-b(c)\big),\quad b(c)=|c|/V,$$
#
# unlabelled words counting in $|C|$. The best class maximizes the *excess* over the base rate $b(c)$,
# because "verb" would otherwise always beat "past-tense verb". A cluster **beats random** when its excess
# is above the 95th percentile of the best excess of random clusters of the same size (each random cluster
# also picks its own best class, so the test accounts for choosing among all classes).
#
# **One selection-aware score for "the paper's cluster is found"** (Figs. 4, 5). The paper shows the clusters it
# found among many: Fig. 4 draws from all $2^5+2^6+2^7=224$ orthants of $p=5,6,7$, Fig. 5 from all $k$
# k-means clusters. The purest of $N$ candidates is not a fair "found": random word sets would also give a
# pure-looking best one. We therefore compare the **best-of-$N$ purity** of the class with the
# **best-of-$N$ purity of $N$ random word sets with the same sizes** (`ntputils.analysis.purity.best_of_n`,
# 1,000 rounds) and call the class found when it beats that distribution's 95th percentile.
#
# **Reconstructed / unknown in the paper** (and our choices):
#
# | item | paper | ours |
# |---|---|---|
# | corpus size | "the entire datasets" | **all** the TinyStories text of our local sample: the three original-case files of `shared/data/tinystories` (a sample of {glue:text}`n_tinystories_stories` stories, not the whole dataset of about 2 million); WikiText-2 train |
# | tokenizer | subword tokenizer with `#` = token start (GPT-2's byte-level BPE marks word starts with `Ġ`) | **GPT-2's own byte-level BPE** (the shared tokenizer files, checksums verified; `ntputils.data.corpora.gpt2_tokenizer`); `Ġ` shown as `#`, newlines as `⏎`, incomplete UTF-8 pieces as hex bytes |
# | WikiText markup | not stated | WikiText's ` @-@ ` and spaces before punctuation undone; paragraphs cut at every `<unk>`, so no context spans an unknown word and `<unk>` is never a token |
# | next-token vocabulary, contexts | $V=1000$ tokens, $m=10^4$ frequent contexts of length $T\in\{2,\dots,6\}$ | the 1,000 most frequent tokens; the most frequent contexts of each length $T\in\{2,\dots,6\}$, $m$ split equally over the lengths; pairs with an out-of-vocabulary next token dropped |
# | newline tokens | not stated | kept as next tokens (they are in the text); left out of the word clouds, which show words (`⏎`, blank and `<unk>` tokens are listed in the tables) |
# | signs of $\boldsymbol u_k$ | arbitrary, not stated | largest-$|$entry$|$ of each $\boldsymbol u_k$ positive; the paper's configurations are therefore comparable to ours only up to flips of whole dimensions |
# | k-means | "pairwise distances of analyzer vectors" | Euclidean k-means on the **unscaled** rows of $\boldsymbol U_{:,1:p}$, k-means++ with 10 restarts, seed 0 |
# | k-means clouds | not stated | members ranked by typicality on $\mathcal K=\{1..p\}$, top 40 (`top`) |
# | exact configurations of Figs. 4-6 | only in the images | **selected by purity**: the cluster with the highest purity for the class named in the caption (at least 10 members), never by hand |
# | seeds | not stated | `seed` draws the random baselines, the shuffles and k-means' starts; with `data_sample` $<1$ it also draws the sample of documents (stories, paragraphs) that is counted. The page counts all of them (`data_sample = 1`); the five-seed table counts a different sample of each corpus per seed (its command sets `data_sample`), so its seed column also measures how much each claim depends on the corpus sample |

# **Profiles.** The data sizes ($V=1000$, $m=10^4$) and every figure are the paper's in both profiles;
# `cpu` draws smaller clouds and uses 1,000 random clusters per size for the baseline, `paper` larger clouds
# and 5,000. `wikitext_p6_grid=False` skips drawing the $2^6$ clouds of Fig. 25 (some
# seconds) if time is short; its purity numbers are computed either way.

# %%
# checked by the runner before any work: Fig. 4 reads p up to 7 concepts; a cluster is tested from 10 members
# (MIN_SIZE below), so fewer words per cloud test none; a 95th percentile needs 20 random draws; a cloud is
# [width, height] with its largest font height // 4 at least wordcloud's smallest font (4 px): height >= 16
LIMITS = {"top": (10, None), "n_concepts": (7, None), "n_draws": (20, None), "data_sample": (0.01, 1.0),
          "len(cloud_px)": (2, 2), "cloud_px": (16, None)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of b04_semantics_real_text.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
top = 40         # words per cloud (paper: top-40 by typicality)
n_concepts = 8   # concept dimensions computed (top-k SVD of S~); Fig. 4 uses p up to 7
n_draws = 1000   # random clusters per size for the purity baseline
cloud_px = [300, 190]  # [width, height] of one word cloud in pixels
wikitext_p6_grid = True  # draw Fig. 25 (64 clouds); the purity numbers are computed either way
data_sample = 1.0  # share of each corpus's documents counted, drawn with `seed` (1: all; the seeds table: 0.9)

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from sklearn.metrics import adjusted_rand_score

from ntputils.analysis.concepts import (
    kmeans_on_analyzers,
    matched_clusters,
    orthant_clusters,
    orthant_labels,
    orthant_purity,
    sign_configurations,
    sign_string,
    typicality,
)
from ntputils.analysis.purity import (
    NO_SPACE,
    RandomBaseline,
    best_cluster_for_class,
    best_of_n,
    block_support_density,
    cluster_purity,
    lexical_labels,
    partition_purity,
    purity_table,
    random_partition_purity,
    summarize_purity,
)
from ntputils.chapter import (
    above_chance,
    at_least,
    at_most,
    check,
    claims_table,
    current_record,
    preregister,
    record,
    setup_chapter,
)
from ntputils.data.corpora import paper_b_text, read_tinystories
from ntputils.data.corpora.paper_b_corpora import corpus_texts
from ntputils.geometry import concepts
from ntputils.plots.wordclouds import CloudPanel, CloudRenderer, cluster_panel, is_layout

run = setup_chapter(globals())
pd.set_option("display.max_colwidth", 80)
renderer = CloudRenderer(width=cloud_px[0], height=cloud_px[1], max_font_size=cloud_px[1] // 4, seed=seed)
MIN_SIZE = 10  # clusters with fewer members are listed but not tested (a random 5-word set is often "pure")

# %% [markdown]
# ## Pre-registered rules
#
# The paper reads its clouds by eye and gives no numbers, so every empirical claim below gets a rule fixed
# here, **before** any of the data is built, from the paper's statements or from chance:
#
# * **A class is found** (Figs. 4, 5: "past-tense verbs", "numbers", ...) when the purest candidate cluster
#   for it beats the selection-aware chance level: its purity is above the 95th percentile of the best-of-$N$
#   purity of random word sets with the candidates' sizes (introduction; $N$ = all orthants with $p=5,6,7$
#   for Fig. 4, all $k$ clusters for Fig. 5). Whether a majority of its top-40 words are in the class
#   (purity $\ge 0.5$, the paper naming it after the class) is shown next to it but is not the rule.
# * **A single half-dimension "is not interpretable"** (Fig. 14) when no lexical class holds at least half of
#   its top-40 words: its best lexical class (the one most enriched over its base rate) has **fewer than
#   half** of them. This is the naming criterion above negated (a cluster with exactly half of its words in
#   a class is named after it), judged on the word count, so no rounding decides the boundary. The rule was
#   revised after a first run, which judged the rounded purity by $\le 0.5$ and so counted exactly half as
#   not interpretable; the revision makes the paper's claim harder to reproduce.
#   *Control:* the same count for the purest $p=5$ orthant cluster of the same dataset (a combination of
#   dimensions, which the paper calls interpretable): if it too has fewer than half, the rule cannot tell an
#   interpretable cluster from an uninterpretable one.
# * **Combining dimensions adds purity** (Figs. 4, 14): the mean purity of the tested $p=5$ orthant clusters is
#   at least the mean purity of the single half-dimensions (the chance level of this claim) **+ 0.1**.
#   *Control:* the same mean for the $p=5$ orthants of the shuffled $\boldsymbol U$ (rows permuted: every word
#   gets another word's analyzer coordinates, so no concept structure is left), against the same level.
# * **Grids of interpretable clusters** (Figs. 20-25): a **majority** ($\ge 0.5$) of the tested clusters beat
#   random (95th percentile of the best excess of same-size random word sets); chance is 0.05 by construction
#   of the test. *Control* (issue #44): the **single half-dimensions** of the same dataset instead of the
#   combinations (orthants, k-means clusters), by the same rule: the paper's point is that *combining* concepts
#   makes clusters interpretable, so if a majority of single half-dimensions also beat random the rule cannot
#   show it. The **shuffled-$\boldsymbol U$** share (rows permuted) was a separate claim (at most the
#   test's nominal 5% plus a margin of 0.10); it is now shown beside each grid claim, not judged apart: one control per
#   claim, and the single half-dimensions are the stricter one.
# * **Hierarchy** (Fig. 11): at $p=5$ the size-weighted purity of the full orthants exceeds that of random
#   partitions with the same sizes (chance) by at least **0.1**, and the gap to random at $p=5$ is at least
#   the gap at $p=1$ (the refinement is more than cutting into smaller pieces). *Controls:* the same purity,
#   and the same gap, for the orthants of the shuffled $\boldsymbol U$, against the same levels.
# * **Context-word pairs** (Fig. 6): the share of the paired top-40 contexts that end in *to*
#   (infinitives) or *so/very* (adjectives) is above the **95th percentile** of the same share in random
#   same-size context sets; the mean density of the matched (diagonal) word x context blocks is above the
#   **95th percentile** of the same mean when the context configurations are randomly permuted (chance),
#   the plain off-diagonal mean shown next to it. *Controls:* the endings share of the same configuration's
#   top-40 contexts with the rows of $\boldsymbol V$ shuffled (contexts get other contexts' coordinates), and the
#   diagonal density with the rows of $\boldsymbol U$ shuffled (words get other words' coordinates), each against
#   the same level.
# * **Fig. 4, 5 classes found:** *control* = the same best-of-$N$ purity for the class among the clusters of the
#   shuffled $\boldsymbol U$ (same configurations, same $k$-means), against the same best-of-$N$ random level.
#
# A claim that fails its rule is reported as a deviation with its numbers; it does not stop the chapter.

# %%
FIG4_CLAIMS = {"STS": ["Past-tense verb", "Present-tense verb", "Preposition", "Proper names"],
               "WikiText": ["Month", "Number", "Unit", "Preposition/Conjunction"]}
FIG5_CLAIMS = {"Fig. 20": ("STS", ["Past-tense verbs", "Proper names"]), "Fig. 21": ("WikiText", ["Numbers", "Conjunctions"])}
FOUND = above_chance(0.0)  # best-of-N purity > p95 of the best-of-N purity of same-size random word sets
specs = {}
for key, captions in FIG4_CLAIMS.items():
    for caption in captions:
        specs[f"fig4 {key} {caption}"] = (f"Fig. 4 {key}: an orthant cluster '{caption}' (best-of-N purity; "
                                          "chance = p95 of best-of-N random)", FOUND, ["B:Fig 4", "B:orthant"])
for figname, (key, captions) in FIG5_CLAIMS.items():
    for caption in captions:
        specs[f"fig5 {key} {caption}"] = (f"Fig. 5 / {figname[5:]} {key}: a k-means cluster '{caption}' "
                                          "(best-of-k purity; chance = p95 of best-of-k random)",
                                          FOUND, ["B:Fig 5", f"B:Fig {figname[5:]}", "B:kmeans"])
for key, k, s in [("STS", 2, +1), ("STS", 6, -1), ("WikiText", 2, -1), ("WikiText", 4, +1)]:
    specs[f"fig14 {key} {'+' if s > 0 else '-'}u_{k}"] = (
        f"Fig. 14 {key} {'+' if s > 0 else '-'}u_{k}: single half-dimension not interpretable (no lexical "
        f"majority among its top-{top} words)",
        at_most(-(-top // 2) - 1, f"words of its best lexical class among its top-{top}: fewer than half"),
        "B:Fig 14")
for key in ("STS", "WikiText"):
    specs[f"fig14 {key} orthants vs singles"] = (
        f"{key}: p=5 orthant clusters purer than single half-dimensions (mean purity; chance = half-dimensions)",
        above_chance(0.1), ["B:Fig 14", "B:orthant"])
    specs[f"fig11 {key} p5 vs random"] = (f"Fig. 11 {key}: p=5 orthants purer than random partitions of the same sizes",
                                          above_chance(0.1), ["B:Fig 11", "B:orthant"])
    specs[f"fig11 {key} gap grows"] = (f"Fig. 11 {key}: gap to random at p=5 >= gap at p=1 (chance = gap at p=1)",
                                       above_chance(0.0), "B:Fig 11")
for figname, items in [("Fig. 20", ["B:Fig 20", "B:kmeans"]), ("Fig. 21", ["B:Fig 21", "B:kmeans"]),
                       ("Fig. 22", ["B:Fig 22", "B:orthant"]), ("Fig. 23", ["B:Fig 23", "B:orthant"]),
                       ("Fig. 24", ["B:Fig 24", "B:orthant"]), ("Fig. 25", ["B:Fig 25", "B:orthant"])]:
    specs[f"{figname} beat random"] = (f"{figname}: share of tested clusters (>= {MIN_SIZE} words) beating random",
                                       at_least(0.5, "a majority; chance 0.05"), items)
for cls, endings in [("base-form verb", "to"), ("adjective", "so/very")]:
    specs[f"fig6 {cls} endings"] = (f"Fig. 6: contexts paired with {cls}s end in {endings} (share; chance = random p95)",
                                    above_chance(0.0), "B:Fig 6")
specs["fig6 density"] = ("Fig. 6: matched sign patterns give denser word x context support blocks "
                         "(diagonal mean; chance = p95 under permuted context configurations)", above_chance(0.0), "B:Fig 6")
SHUFFLED_U = "the same with the rows of U shuffled (every word gets another word's analyzer coordinates)"
controls = {key: SHUFFLED_U for key in specs if key.startswith(("fig4 ", "fig5 ", "fig11 "))
            or key.endswith("orthants vs singles")}
controls.update({key: "the purest p=5 orthant cluster of the same dataset (a combination), same count"
                 for key in specs if key.startswith("fig14 ") and not key.endswith("orthants vs singles")})
controls.update({key: "the single half-dimensions of the same dataset instead of the combinations, same rule"
                 for key in specs if key.endswith("beat random")})
controls.update({key: "the same configuration's top contexts with the rows of V shuffled"
                 for key in specs if key.startswith("fig6 ") and key.endswith("endings")})
controls["fig6 density"] = "the same diagonal density with the rows of U shuffled (word configurations random)"
claims = preregister(specs, controls=controls)

# %% [markdown]
# ## The two datasets and their concepts
#
# `paper_b_text` builds the $V\times m$ count matrix with GPT-2's tokenizer (first build some seconds per
# corpus, then cached);
# `concepts` computes the top singular triplets of $\widetilde{\boldsymbol S}=(\mathbb I-\tfrac1V\mathbb 1
# \mathbb 1^\top)\boldsymbol S$ without forming the dense centered matrix.

# %%
DATASETS = {"STS": "tinystories", "WikiText": "wikitext"}
data, U, sigma, Vt, labels, baseline, ctx_names = {}, {}, {}, {}, {}, {}, {}
rows = []
for key, name in DATASETS.items():
    t0 = time.perf_counter()
    d = paper_b_text(name, V=1000, m=10000, context_lengths=(2, 3, 4, 5, 6), tokenizer="gpt2",
                     documents=data_sample, sample_seed=seed)
    t_data = time.perf_counter() - t0
    data[key] = d
    U[key], sigma[key], Vt[key] = concepts(d.S, n_concepts)
    labels[key] = lexical_labels(d.vocab)
    baseline[key] = RandomBaseline(labels[key], n_draws=n_draws, seed=seed)
    ctx_names[key] = [d.context_str(j) for j in range(d.m)]
    rows.append({"dataset": key, "V": d.V, "m": d.m, "n (pairs)": int(d.counts.sum()),
                 "density of S": round(float(d.S.sum()) / (d.V * d.m), 4),
                 "labelled words": f"{labels[key].coverage:.1%}", "build+SVD+labels (s)": round(time.perf_counter() - t0, 1),
                 "data (s)": round(t_data, 1), "sigma_1..8": np.round(sigma[key], 1).tolist()})
n_stories = len(read_tinystories())
n_wiki_pieces = len(corpus_texts("wikitext", "gpt2"))
record("n_tinystories_stories", n_stories)
record("n_wikitext_pieces", n_wiki_pieces)
layout_rows = {key: [d.vocab[i] for i in range(d.V) if is_layout(d.vocab[i])] for key, d in data.items()}
record("n_layout_sts", len(layout_rows["STS"]))
record("n_layout_wiki", len(layout_rows["WikiText"]))
print(f"TinyStories: {n_stories} stories (our local sample, not the whole dataset); WikiText-2 train: "
      f"{n_wiki_pieces} paragraph pieces between <unk> marks")
print("layout tokens among the next tokens (kept in S, left out of the clouds):",
      "; ".join(f"{k}: {' '.join(v) or 'none'}" for k, v in layout_rows.items()))
pd.DataFrame(rows).set_index("dataset")

# %% [markdown]
# Word classes of the two vocabularies (a word can be in several classes; "verb" contains every verb
# form). "no leading space" holds word-internal BPE pieces and words that open a line or follow a quote
# (GPT-2 gives them a token without `Ġ`).

# %%
class_sizes = pd.DataFrame({key: pd.Series(lab.member.sum(axis=0), index=lab.classes) for key, lab in labels.items()}
                           ).fillna(0).astype(int)
class_sizes.T

# %% [markdown]
# ## Fig. 14: single concept dimensions
#
# **Paper:** the top words of one half of one dimension are a mixture: +2nd and -6th dimension of STS,
# -2nd and +4th of WikiText are shown as examples of uninterpretable concepts.
#
# **Ours:** the same four half-dimensions in our sign convention, then the purity of *every* half-dimension
# among the top 8. The paper's signs are unknown, so its "+2nd" may be our "-2nd": the table shows both.


# %% mystnb={"figure": {"caption": "Word clouds of four single half-dimensions, top words by their coordinate; reproduces paper B, Fig. 14.", "name": "fig-b04-fig14"}, "image": {"alt": "Four word clouds, two per row, titled by dataset, dimension and best class."}}
def half_dimension(key: str, k: int, s: int):
    """Top members of the half-space sign(u_k) = s (paper's 1-based k), sorted by |u_k|."""
    return orthant_clusters(U[key], [k - 1], top=top)[(s,)]


FIG14 = [("STS", 2, +1), ("STS", 6, -1), ("WikiText", 2, -1), ("WikiText", 4, +1)]
panels = []
for key, k, s in FIG14:
    cl = half_dimension(key, k, s)
    panels.append(cluster_panel(f"{key}: {'+' if s > 0 else '-'}u_{k}", cl.indices, cl.typicality, data[key].vocab,
                                labels[key]))
fig = renderer.grid(panels, ncols=2, cell=(3.6, 2.5), fontsize=10,
                    title="Fig. 14 (ours): single half-dimensions, top-40 words by |u_k[z]| (title: best class, purity)")
plt.show()

# %%
single_rows = []
for key in DATASETS:
    lexical_only = labels[key].without(NO_SPACE)
    for k in range(1, n_concepts + 1):
        for s in (1, -1):
            cl = half_dimension(key, k, s)
            pur = cluster_purity(cl.indices, labels[key])
            lex = cluster_purity(cl.indices, lexical_only)
            single_rows.append({"dataset": key, "half-dim": f"{'+' if s > 0 else '-'}u_{k}", "best class": pur.best_class,
                                "purity": round(pur.purity, 2), "beats random": baseline[key].beats(pur),
                                "best lexical class": lex.best_class, "lexical purity": round(lex.purity, 2),
                                "best lexical class (words)": int(round(lex.purity * lex.size)),
                                "in Fig. 14": (key, k, s) in FIG14,
                                "top words": " ".join(data[key].vocab[i] for i in cl.indices[:10])})
single_table = pd.DataFrame(single_rows)
display(single_table)
fig14_rows = single_table[single_table["in Fig. 14"]]
record("fig14_lex_max_words", int(fig14_rows["best lexical class (words)"].max()))
record("fig14_fig_n_majority", int((2 * fig14_rows["best lexical class (words)"] >= top).sum()))
record("fig14_sts_u6_nospace", float(fig14_rows[(fig14_rows["dataset"] == "STS") & (fig14_rows["half-dim"] == "-u_6")]["purity"].iloc[0]))
record("fig14_n_beat", int(single_table["beats random"].sum()))
record("fig14_n_half", len(single_table))
record("fig14_n_majority", int((2 * single_table["best lexical class (words)"] >= top).sum()))
best_single = single_table.loc[single_table["lexical purity"].idxmax()]
record("fig14_best_half", f"{best_single['dataset']} {best_single['half-dim']}")
record("fig14_best_class", str(best_single["best lexical class"]))
record("fig14_best_purity", float(best_single["lexical purity"]))
lines = []
for key in DATASETS:
    t = single_table[single_table["dataset"] == key]
    f14 = ", ".join(f"{r['half-dim']} {r['purity']:.2f} ({r['best class']}; lexical: {r['best lexical class']} "
                    f"{r['lexical purity']:.2f})" for _, r in t[t["in Fig. 14"]].iterrows())
    best = t.loc[t["purity"].idxmax()]
    lines.append(f"* **{key}:** {int(t['beats random'].sum())} of {len(t)} half-dimensions beat random word sets; "
                 f"mean purity {t['purity'].mean():.2f}, max {best['purity']:.2f} ({best['half-dim']}, {best['best class']}); "
                 f"the half-dimensions of Fig. 14: {f14}.")
display(Markdown("\n".join(lines)))

# %% [markdown]
# **What we see.** Half-dimensions named by the paper with a lexical class holding at least half of their
# top-40 words in our data: {glue:text}`fig14_fig_n_majority` of the four, WikiText $+\boldsymbol u_4$, whose
# best lexical class (past-tense verb) holds {glue:text}`fig14_lex_max_words` of its top-40 words, the most of
# the four (each one's count is judged at the end). One of the four, $-\boldsymbol u_6$ of STS, is
# mostly tokens **without a leading space** (purity {glue:text}`fig14_sts_u6_nospace:.2f` for that tokenizer
# class): words that open a line or follow a quote, which GPT-2 spells without `Ġ`. That is a formatting
# feature of the text, not a semantic class, but it is not random.
#
# **Plainly: in our data single dimensions are not uninterpretable.** {glue:text}`fig14_n_beat` of
# {glue:text}`fig14_n_half` half-dimensions beat random word sets of the same size (the selection-aware test of
# the introduction), and {glue:text}`fig14_n_majority` of them have a lexical class holding at least half of
# their top-40 words; the purest is {glue:text}`fig14_best_half` ({glue:text}`fig14_best_class`, purity
# {glue:text}`fig14_best_purity:.2f`; table above). This contradicts the paper's "single dimensions are not
# interpretable" for those dimensions. For the half-dimensions the paper shows it agrees with the paper except
# WikiText $+\boldsymbol u_4$, which the claims table scores as a deviation. Whether the orthants add
# purity on average is a pre-registered claim judged at the end.
#
# ## Figs. 22-25: all orthants of the top $p$ concepts
#
# **Paper:** grids of all $2^p$ configurations, $p=4,5$ for STS (Figs. 22, 23) and $p=5,6$ for WikiText
# (Figs. 24, 25), "because we observe the most human-interpretable concepts" there.
#
# **Ours:** the same grids, titled with the configuration $C$ on $\mathcal K=\{1..p\}$, the best class and
# its purity; empty orthants are marked "empty". Below each pair of grids: the per-cluster purity table
# (collapsed) and a summary, with a **shuffled control**: the same statistics after permuting the rows of
# $\boldsymbol U$ (each word gets another word's analyzer coordinates), which must fall to the chance level.

# %%
shuffle = {key: np.random.default_rng(seed).permutation(data[key].V) for key in DATASETS}


def grid_panels(key: str, clusters) -> list[CloudPanel]:
    return [cluster_panel(f"C={sign_string(C)}", cl.indices, cl.typicality, data[key].vocab, labels[key])
            for C, cl in clusters.items()]


GRIDS = {"Fig. 22": ("STS", 4), "Fig. 23": ("STS", 5), "Fig. 24": ("WikiText", 5), "Fig. 25": ("WikiText", 6)}
grids, grid_tables, shuffled_tables, summary_rows = {}, {}, {}, []
for figname, (key, p) in GRIDS.items():
    grids[figname], grid_tables[figname] = orthant_purity(U[key], p, labels[key], baseline[key], top=top)
    _, shuffled = orthant_purity(U[key][shuffle[key]], p, labels[key], baseline[key], top=top)
    shuffled_tables[figname] = shuffled
    summary_rows.append({"figure": figname, "dataset": key, "clustering": f"orthants K={{1..{p}}}",
                         **summarize_purity(grid_tables[figname], MIN_SIZE),
                         "shuffled U: beat random": summarize_purity(shuffled, MIN_SIZE)["beat random"],
                         "single half-dims: beat random": float(single_table[single_table["dataset"] == key]
                                                                ["beats random"].mean())})

# %% mystnb={"figure": {"caption": "Orthant clusters of the top concepts on Simplified TinyStories, one word cloud per sign configuration; reproduces paper B, Figs. 22 and 23."}, "image": {"alt": "Grid of word clouds, one per sign configuration."}}
for figname in ("Fig. 22", "Fig. 23"):
    key, p = GRIDS[figname]
    renderer.grid(grid_panels(key, grids[figname]), ncols=8,
                  title=f"{figname} (ours): orthant clustering, K={{1..{p}}}, Simplified TinyStories, top-{top} words")
    plt.show()

# %% tags=["hide-output"]
for figname in ("Fig. 22", "Fig. 23"):
    display(Markdown(f"**{figname}: purity of every orthant** (random = same-size random word sets, {n_draws} draws)"))
    display(grid_tables[figname].round(3))

# %% mystnb={"figure": {"caption": "Orthant clusters of the top concepts on Simplified WikiText, one word cloud per sign configuration; reproduces paper B, Figs. 24 and 25."}, "image": {"alt": "Grid of word clouds, one per sign configuration."}}
for figname in ("Fig. 24", "Fig. 25"):
    key, p = GRIDS[figname]
    if figname == "Fig. 25" and not wikitext_p6_grid:
        print("Fig. 25 grid not drawn in this profile (wikitext_p6_grid=False); its purity table follows.")
        continue
    renderer.grid(grid_panels(key, grids[figname]), ncols=8,
                  title=f"{figname} (ours): orthant clustering, K={{1..{p}}}, Simplified WikiText, top-{top} words")
    plt.show()

# %% tags=["hide-output"]
for figname in ("Fig. 24", "Fig. 25"):
    display(Markdown(f"**{figname}: purity of every orthant**"))
    display(grid_tables[figname].round(3))

# %%
grid_shuffled = [r["shuffled U: beat random"] for r in summary_rows]
record("grid_shuffled_min", float(min(grid_shuffled)))
record("grid_shuffled_max", float(max(grid_shuffled)))
record("grid_beat_min", float(min(r["beat random"] for r in summary_rows)))
record("grid_beat_max", float(max(r["beat random"] for r in summary_rows)))
for key in DATASETS:
    record(f"singles_beat_{key}", float(single_table[single_table["dataset"] == key]["beats random"].mean()))
pd.DataFrame(summary_rows).set_index("figure").round(3)

# %% [markdown]
# **What we see.** In STS the orthants of the top $p=4,5$ concepts are mostly grammatical classes: past-tense
# verbs, base-form verbs, person names, nouns, adjectives, pronouns and sentence-initial tokens (titles of the
# clouds). In WikiText: prepositions, determiners, past-tense verbs, numbers, months and units. Between {glue:text}`grid_beat_min:.0%` and
# {glue:text}`grid_beat_max:.0%` of the orthants with at least 10 members beat random clusters (per grid in
# the table); after shuffling the rows of $\boldsymbol U$ the fraction is {glue:text}`grid_shuffled_min:.0%` to
# {glue:text}`grid_shuffled_max:.0%`, against the 5% that the 95th-percentile test lets through by chance.
# The grid claims' control, the single half-dimensions, beat random at {glue:text}`singles_beat_STS:.0%` (STS)
# and {glue:text}`singles_beat_WikiText:.0%` (WikiText): where that share is a majority too, the grid rule
# cannot show that combining concepts is what makes the clusters interpretable ("cannot fail" in the claims table).
# Many configurations of $p=5,6$ are empty or tiny (a few words), as the paper's grids also show.
#
# ## Fig. 11: the hierarchy from $p=1$ to $p=5$
#
# **Paper:** rows $p=1..5$ of STS word clouds; configurations get finer going down. Bottom: verb detail,
# $\mathcal K=\{1,2\}$, $C=(+,+)$ = verbs; the third dimension splits past $(+,+,+)$ from present
# $(+,+,-)$; the fifth splits present action verbs from *-ing* forms.
#
# **Ours:** the same tree for $p=1..4$ (each cloud splits into its two children below it; the $2^5$ clouds of
# $p=5$ are the grid of Fig. 23 above, not repeated here); the verb detail starts from the $p=2$ configuration
# with the highest purity of the class "verb" (not chosen by hand) and follows it to $p=5$.

# %% mystnb={"figure": {"caption": "The hierarchy of orthant clusters from one to four concepts (top; five concepts are the grid of Fig. 23) and the verb branch from two to five concepts (bottom); reproduces paper B, Fig. 11."}, "image": {"alt": "Word clouds arranged as a tree, each cluster above its two children."}}
tree_clusters = {p: orthant_clusters(U["STS"], range(p), top=top) for p in range(1, 6)}
levels = [grid_panels("STS", tree_clusters[p]) for p in range(1, 5)]
renderer.tree(levels, cell=(2.2, 1.9), fontsize=8, stack_last=True,
              title="Fig. 11 top (ours): orthant clusters of STS for K={1}, {1,2}, {1,2,3}, {1..4}; each cloud splits "
              "into the two below it\n(p=4: the two children of a p=3 cloud are stacked; p=5 is the grid of Fig. 23)")
plt.show()

verb_root, verb_root_purity = best_cluster_for_class(
    {C: cl.indices for C, cl in tree_clusters[2].items()}, labels["STS"], "verb", min_size=MIN_SIZE)
detail = []
for p in range(2, 6):
    configs = [C for C in sign_configurations(p) if C[:2] == verb_root]
    detail.append([cluster_panel(f"C={sign_string(C)}", tree_clusters[p][C].indices, tree_clusters[p][C].typicality,
                                 data["STS"].vocab, labels["STS"]) for C in configs])
renderer.tree(detail, cell=(2.3, 1.9), fontsize=9,
              title=f"Fig. 11 bottom (ours): the verb branch C={sign_string(verb_root)} on K={{1,2}} and its refinements to p=5")
plt.show()

# %% [markdown]
# Is the refinement more than cutting into smaller pieces? For every $p$ we take the **full** orthants (all
# members, not only the top 40 that a cloud shows, `top`), compute the size-weighted best-class purity, and compare it with random
# word sets of the same sizes (smaller random sets are also "purer" by chance, so only the gap counts).

# %%
hier_rows = []
for key in DATASETS:
    for p in range(1, 8):
        full = orthant_clusters(U[key], range(p), top=None)
        members = [cl.indices for cl in full.values() if len(cl.indices)]
        real = partition_purity(members, labels[key])
        rand = random_partition_purity([len(m) for m in members], baseline[key])
        shuf = [cl.indices for cl in orthant_clusters(U[key][shuffle[key]], range(p), top=None).values()
                if len(cl.indices)]  # control: the rows of U shuffled
        real_shuf = partition_purity(shuf, labels[key])
        rand_shuf = random_partition_purity([len(m) for m in shuf], baseline[key])
        hier_rows.append({"dataset": key, "p": p, "non-empty orthants": len(members), "purity (size-weighted)": real,
                          "random same sizes": rand, "gap": real - rand, "shuffled U: purity": real_shuf,
                          "shuffled U: gap": real_shuf - rand_shuf})
hierarchy = pd.DataFrame(hier_rows)
hierarchy.pivot(index="p", columns="dataset", values=["purity (size-weighted)", "random same sizes", "gap",
                                                     "shuffled U: purity", "shuffled U: gap"]).round(3)

# %%
verb_path = []
for p in range(1, 6):
    for C, cl in tree_clusters[p].items():
        if len(cl.indices) and (C[:2] == verb_root[: min(p, 2)]):
            pur = cluster_purity(cl.indices, labels["STS"])
            verb_path.append({"p": p, "C": sign_string(C), "size": len(cl.indices), "best class": pur.best_class,
                              "purity": round(pur.purity, 2),
                              "top words": " ".join(data["STS"].vocab[i] for i in cl.indices[:8])})
display(pd.DataFrame(verb_path))
split = {C[2]: cluster_purity(tree_clusters[3][C].indices, labels["STS"]) for C in tree_clusters[3]
         if C[:2] == verb_root and len(tree_clusters[3][C].indices)}
record("verb_root", sign_string(verb_root))
record("verb_root_purity", float(verb_root_purity.purity))
for sgn, name in ((1, "plus"), (-1, "minus")):
    if sgn in split:
        record(f"verb_split_{name}_class", split[sgn].best_class)
        record(f"verb_split_{name}_purity", float(split[sgn].purity))
    else:
        record(f"verb_split_{name}_class", "empty")
        record(f"verb_split_{name}_purity", float("nan"))
all_orthants = {(p, C): cl.indices for p in range(1, 8) for C, cl in orthant_clusters(U["STS"], range(p), top=top).items()}
(p_ing, C_ing), ing = best_cluster_for_class(all_orthants, labels["STS"], "-ing verb", min_size=MIN_SIZE)
print(f"-ing forms (the paper's aspect split): best orthant on K={{1..{p_ing}}}, C={sign_string(C_ing)}: purity "
      f"{ing.purity:.2f} (base rate {ing.base_rate:.3f}); members: "
      + " ".join(data["STS"].vocab[i] for i in all_orthants[(p_ing, C_ing)][:12]))
record("ing_n_forms", int(labels["STS"].member[:, labels["STS"].index("-ing verb")].sum()))
record("ing_best_p", int(p_ing))
_ = record("ing_best_purity", float(ing.purity))

# %% [markdown]
# **What we see.** The tree refines: the gap to random word sets of the same sizes grows with $p$ in both
# datasets from $p=1$ to $p=5$ (STS {glue:text}`fig11_STS_gap_p1:.2f` $\to$ {glue:text}`fig11_STS_gap_p5:.2f`,
# WikiText {glue:text}`fig11_WikiText_gap_p1:.2f` $\to$ {glue:text}`fig11_WikiText_gap_p5:.2f`; not
# necessarily monotonically in between, see the table). In WikiText the first dimension
# separates function words and punctuation from content words. The verb branch on $\mathcal K=\{1,2\}$ is
# $C=$ {glue:text}`verb_root` (verb purity {glue:text}`verb_root_purity:.2f`), already mostly past-tense verbs
# (table above). The third dimension splits it into {glue:text}`verb_split_plus_class` (purity
# {glue:text}`verb_split_plus_purity:.2f`, sign $+$) and {glue:text}`verb_split_minus_class` (purity
# {glue:text}`verb_split_minus_purity:.2f`, sign $-$). That is a weak version of the paper's tense split at
# the paper's dimension (signs are arbitrary): the $+$ child is small and its best class holds less than
# half of it, and the $-$ child keeps the past-tense bulk of the parent. Our corpus is a sample of
# {glue:text}`n_tinystories_stories` stories, so the singular vectors are not the paper's one to one. The
# aspect split (present vs. *-ing*) is weak here: only {glue:text}`ing_n_forms` *-ing* forms are among our 1,000
# tokens, and the best *-ing* orthant (printed above) needs $p=$ {glue:text}`ing_best_p` and has *-ing* purity
# {glue:text}`ing_best_purity:.2f`.
#
# ## Fig. 4: configurations that carry semantics
#
# **Paper:** STS: past-tense verbs, present-tense verbs, prepositions, proper names; WikiText: months,
# numbers, units, prepositions/conjunctions, each from some configuration on $\mathcal K=\{1..p\}$,
# $p=5$-$7$.
#
# **Ours:** for each caption class, the orthant cluster (top 40, at least 10 members) with the highest
# purity for that class among **all** configurations with $p=5,6,7$. Lexicon classes used for the paper's
# names: "present-tense verb" $\to$ `base-form verb` (VB/VBP: *play, go* after *to* or a subject; third-person
# *-s* forms are rare in TinyStories), "preposition" $\to$ `preposition/conjunction`, "proper names" $\to$
# `person name`. This picks the best of up to $2^5+2^6+2^7=$ {glue:text}`fig4_n_configurations` configurations, so the chance level is the
# **best-of-$N$** purity of random word sets with the sizes of the $N$ tested candidates (columns "best-of-N
# random mean / p95"; the pre-registered rule); the single-cluster columns "random mean / p95" are shown only
# to calibrate one class.

# %% mystnb={"figure": {"caption": "The orthant cluster with the highest purity for each class of the paper, STS on top and WikiText below; reproduces paper B, Fig. 4.", "name": "fig-b04-fig4"}, "image": {"alt": "Grid of word clouds titled by class, purity and chance level."}}
FIG4 = {"STS": {"Past-tense verb": "past-tense verb", "Present-tense verb": "base-form verb",
                "Preposition": "preposition/conjunction", "Proper names": "person name"},
        "WikiText": {"Month": "month", "Number": "number", "Unit": "unit",
                     "Preposition/Conjunction": "preposition/conjunction"}}
candidates = {key: {(p, C): cl for p in (5, 6, 7) for C, cl in orthant_clusters(U[key], range(p), top=top).items()}
              for key in DATASETS}
candidates_shuffled = {key: {(p, C): cl.indices for p in (5, 6, 7)
                             for C, cl in orthant_clusters(U[key][shuffle[key]], range(p), top=top).items()}
                       for key in DATASETS}  # control: the rows of U shuffled
record("fig4_n_configurations", sum(2**p for p in (5, 6, 7)))  # sign configurations searched per dataset
fig4_rows, panels, shown = [], [], {}
for key, targets in FIG4.items():
    for caption, cls in targets.items():
        (p, C), pur = best_cluster_for_class({k: cl.indices for k, cl in candidates[key].items()}, labels[key], cls,
                                             min_size=MIN_SIZE)
        cl = candidates[key][(p, C)]
        shown[f"Fig. 4 {key} {caption}"] = (key, cl.indices)
        mean, p95 = baseline[key].class_quantiles(pur.size, cls)
        bon = best_of_n({k: cl.indices for k, cl in candidates[key].items()}, baseline[key], cls, min_size=MIN_SIZE,
                        seed=seed)
        _, pur_shuf = best_cluster_for_class(candidates_shuffled[key], labels[key], cls, min_size=MIN_SIZE)
        fig4_rows.append({"dataset": key, "paper cluster": caption, "class": cls, "K": f"{{1..{p}}}", "C": sign_string(C),
                          "size": pur.size, "purity": pur.purity, "shuffled U: purity": pur_shuf.purity,
                          "N tested": bon.n_candidates,
                          "best-of-N random mean": bon.mean, "best-of-N random p95": bon.p95, "found": bon.beats,
                          "random mean": mean, "random p95": p95,
                          "top words": " ".join(data[key].vocab[i] for i in cl.indices[:10])})
        panels.append(CloudPanel(f"{key} {caption}: K={{1..{p}}}, C={sign_string(C)}\n{cls} purity {pur.purity:.2f}"
                                 f" (best-of-{bon.n_candidates} random p95 {bon.p95:.2f})",
                                 [data[key].vocab[i] for i in cl.indices], cl.typicality.tolist()))
renderer.grid(panels, ncols=4, cell=(4.0, 2.8), fontsize=9,
              title="Fig. 4 (ours): clusters with the highest purity for the paper's classes (top: STS, bottom: WikiText)")
plt.show()

# %%
fig4_table = pd.DataFrame(fig4_rows)
fig4_table.round(3)

# %% [markdown]
# **What we see.** {glue:text}`fig4_reproduced` of the paper's {glue:text}`fig4_total` classes are found by the
# selection-aware rule: the purest candidate is purer than the 95th percentile of the purest of as many random
# word sets of the same sizes (column "best-of-N random p95"); {glue:text}`fig4_majority` of the eight have a
# majority of their top-40 words in the class. The weakest is units (purity {glue:text}`fig4_unit_purity:.2f`):
# the purest unit orthant's top words (column "top words") mix the lexicon's unit words with other words and
# symbols.
#
# ## Figs. 5, 20, 21: k-means on the top-$p$ analyzer coordinates
#
# **Paper:** $k=32$ ($p=5$) on STS and $k=64$ ($p=6$) on WikiText; Fig. 5 shows past-tense verbs and proper
# names (STS), numbers and conjunctions (WikiText).
#
# **Ours:** k-means++ (10 restarts, seed 0) on the unscaled rows of $\boldsymbol U_{:,1:p}$. Clusters are
# ordered by the orthant of their centroid, so each grid reads like the orthant grid; each cloud shows the
# 40 most typical members (`top`). Frequent tokens (".", "the", "and") sit far from the rest and get singleton
# clusters.

# %% mystnb={"figure": {"caption": "k-means clusters on the top word-analyzer coordinates, STS and WikiText; reproduces paper B, Figs. 20 and 21."}, "image": {"alt": "Grids of word clouds, one per k-means cluster."}}
KMEANS = {"Fig. 20": ("STS", 5, 32), "Fig. 21": ("WikiText", 6, 64)}


def kmeans_grid(key: str, p: int, k: int, A: np.ndarray | None = None, n_init: int = 10):
    """k-means clusters (top members by typicality, ordered by centroid orthant), purity table, labels."""
    A = U[key] if A is None else A
    km_labels, centers = kmeans_on_analyzers(A, p, k, seed=seed, n_init=n_init)  # one thread: the same clusters
    typ = typicality(A, range(p))
    sizes = np.bincount(km_labels, minlength=k)
    order = np.lexsort((-sizes, orthant_labels(centers, range(p))))
    clusters = {}
    for c in order:
        members = np.flatnonzero(km_labels == c)
        members = members[np.argsort(-typ[members], kind="stable")][:top]
        clusters[f"#{c} n={sizes[c]} {sign_string(centers[c])}"] = (members, typ[members])
    table = purity_table({n: m for n, (m, _) in clusters.items()}, labels[key], baseline[key])
    return clusters, table, km_labels


km_clusters, km_tables, km_shuffled = {}, {}, {}
for figname, (key, p, k) in KMEANS.items():
    km_clusters[figname], km_tables[figname], km_labels = kmeans_grid(key, p, k)
    km_shuffled[figname], shuffled, _ = kmeans_grid(key, p, k, U[key][shuffle[key]], n_init=1)  # one restart
    summary_rows.append({"figure": figname, "dataset": key, "clustering": f"{k}-means on U[:, :{p}]",
                         **summarize_purity(km_tables[figname], MIN_SIZE),
                         "shuffled U: beat random": summarize_purity(shuffled, MIN_SIZE)["beat random"],
                         "single half-dims: beat random": float(single_table[single_table["dataset"] == key]
                                                                ["beats random"].mean()),
                         "ARI vs orthants": adjusted_rand_score(orthant_labels(U[key], range(p)), km_labels)})
    panels = [cluster_panel(name, m, w, data[key].vocab, labels[key]) for name, (m, w) in km_clusters[figname].items()]
    renderer.grid(panels, ncols=8, title=f"{figname} (ours): {k}-means on the top-{p} word-analyzer coordinates, "
                  f"Simplified {'TinyStories' if key == 'STS' else 'WikiText'} (title: cluster, size, centroid signs)")
    plt.show()

# %% tags=["hide-output"]
for figname in KMEANS:
    display(Markdown(f"**{figname}: purity of every k-means cluster** (top-{top} members)"))
    display(km_tables[figname].round(3))

# %% mystnb={"figure": {"caption": "The k-means cluster with the highest purity for each class of the paper; reproduces paper B, Fig. 5.", "name": "fig-b04-fig5"}, "image": {"alt": "Grid of word clouds titled by class and purity."}}
FIG5 = {"Fig. 20": {"Past-tense verbs": "past-tense verb", "Proper names": "person name"},
        "Fig. 21": {"Numbers": "number", "Conjunctions": "preposition/conjunction"}}
fig5_rows, panels = [], []
for figname, targets in FIG5.items():
    key, p, k = KMEANS[figname]
    for caption, cls in targets.items():
        name, pur = best_cluster_for_class({n: m for n, (m, _) in km_clusters[figname].items()}, labels[key], cls,
                                           min_size=MIN_SIZE)
        members, weights = km_clusters[figname][name]
        shown[f"Fig. 5 {key} {caption}"] = (key, members)
        mean, p95 = baseline[key].class_quantiles(pur.size, cls)
        bon = best_of_n({n: m for n, (m, _) in km_clusters[figname].items()}, baseline[key], cls, min_size=MIN_SIZE,
                        seed=seed)
        _, pur_shuf = best_cluster_for_class({n: m for n, (m, _) in km_shuffled[figname].items()}, labels[key], cls,
                                             min_size=MIN_SIZE)
        fig5_rows.append({"dataset": key, "paper cluster": caption, "class": cls, "k": k, "cluster": name, "size": pur.size,
                          "purity": pur.purity, "shuffled U: purity": pur_shuf.purity, "N tested": bon.n_candidates, "best-of-N random mean": bon.mean,
                          "best-of-N random p95": bon.p95, "found": bon.beats, "random mean": mean, "random p95": p95,
                          "top words": " ".join(data[key].vocab[i] for i in members[:10])})
        panels.append(CloudPanel(f"{key} {caption}: {k}-means {name}\n{cls} purity {pur.purity:.2f} "
                                 f"(best-of-{bon.n_candidates} random p95 {bon.p95:.2f})",
                                 [data[key].vocab[i] for i in members], weights.tolist()))
renderer.grid(panels, ncols=4, cell=(4.0, 2.8), fontsize=9,
              title="Fig. 5 (ours): k-means clusters with the highest purity for the paper's classes")
plt.show()

# %%
fig5_table = pd.DataFrame(fig5_rows)
fig5_table.round(3)

# %% [markdown]
# **What we see.** {glue:text}`fig5_found` of the paper's {glue:text}`fig5_total` k-means classes (past-tense
# verbs and names in STS, numbers and prepositions/conjunctions in WikiText) beat the best-of-$k$ chance level.
# The agreement with the orthant partition
# of the same $p$ (adjusted Rand index, ARI, in the summary table below) is partial.
#
# ## Fig. 6: context and word clusters with the same sign pattern
#
# **Paper:** on the top-5 concepts, contexts and words of the same configuration go together: contexts
# "want/like/love/have to" with infinitive verbs, "was so/very" with adjectives.
#
# **Why they should:** $\widetilde{\boldsymbol S}[z,j]=\sum_k\sigma_k\boldsymbol u_k[z]\boldsymbol v_k[j]$, so a word
# and a context with the same signs on the top concepts get positive contributions from each of them: the
# word tends to be an observed next token of the context.
#
# **Ours:** for the classes `base-form verb` (infinitives) and `adjective`, among the configurations whose
# word cluster has that best class, the one whose word x context block of $\boldsymbol S$ is densest
# (top-40 words x top-40 contexts by typicality). The heatmap shows the density of every such block, word
# configuration vs. context configuration: a bright diagonal means matching signs predict support.

# %% mystnb={"figure": {"caption": "Context clusters beside the word clusters with the same sign pattern on STS; reproduces paper B, Fig. 6.", "name": "fig-b04-fig6"}, "image": {"alt": "Pairs of clouds: contexts on the left, words on the right."}}
matched = matched_clusters(U["STS"], Vt["STS"].T, range(5), top=top, min_size=MIN_SIZE)
S_sts = data["STS"].S
density = {C: block_support_density(S_sts, mc.words.indices, mc.contexts.indices) for C, mc in matched.items()}
fig6_rows, panels = [], []
ENDINGS = {"base-form verb": ("#to",), "adjective": ("#so", "#very")}
last_all = np.array([data["STS"].context_vocab[c[-1]] for c in data["STS"].contexts])
rng6 = np.random.default_rng(seed)
ctx_shuffled = orthant_clusters(Vt["STS"].T[np.random.default_rng(seed).permutation(data["STS"].m)], range(5),
                                top=top)  # control: the rows of V shuffled (contexts get others' coordinates)
for cls, endings in ENDINGS.items():
    fitting = [C for C, mc in matched.items() if cluster_purity(mc.words.indices, labels["STS"]).best_class == cls]
    if not fitting:
        raise ValueError(f"no word orthant on K={{1..5}} has {cls!r} as its best class")
    C = max(fitting, key=lambda c: density[c])
    mc = matched[C]
    shown[f"Fig. 6 STS words {cls}"] = ("STS", mc.words.indices)
    pur = cluster_purity(mc.words.indices, labels["STS"], cls)
    last = [data["STS"].context_vocab[data["STS"].contexts[j][-1]] for j in mc.contexts.indices]
    ending_share = float(np.mean([t in endings for t in last]))
    last_shuf = [data["STS"].context_vocab[data["STS"].contexts[j][-1]] for j in ctx_shuffled[C].indices]
    ending_share_shuf = float(np.mean([t in endings for t in last_shuf])) if last_shuf else 0.0
    ends_all = np.isin(last_all, endings)
    random_share = np.array([ends_all[rng6.choice(data["STS"].m, len(last), replace=False)].mean()
                             for _ in range(n_draws)])
    fig6_rows.append({"class": cls, "C on K={1..5}": sign_string(C), "words": len(mc.words.indices),
                      "contexts": len(mc.contexts.indices), "word purity": pur.purity,
                      "endings": "/".join(endings), "share of contexts ending so": ending_share,
                      "shuffled V: share": ending_share_shuf,
                      "share among all contexts": float(ends_all.mean()),
                      "random p95 share": float(np.percentile(random_share, 95)),
                      "block density": density[C],
                      "top contexts": " | ".join(ctx_names["STS"][j] for j in mc.contexts.indices[:8]),
                      "top words": " ".join(data["STS"].vocab[i] for i in mc.words.indices[:8])})
    panels.append(CloudPanel(f"contexts C={sign_string(C)}\n{ending_share:.0%} end in {'/'.join(endings)}",
                             [ctx_names["STS"][j] for j in mc.contexts.indices], mc.contexts.typicality.tolist()))
    panels.append(CloudPanel(f"words C={sign_string(C)}\n{cls} purity {pur.purity:.2f}",
                             [data["STS"].vocab[i] for i in mc.words.indices], mc.words.typicality.tolist()))
renderer.grid(panels, ncols=4, cell=(4.2, 2.8), fontsize=10,
              title="Fig. 6 (ours): context cluster | word cluster with the same signs on K={1..5}, STS")
plt.show()

# %%
fig6_table = pd.DataFrame(fig6_rows)
for r, name in zip(fig6_rows, ("fig6_to", "fig6_sovery"), strict=True):
    record(f"{name}_share", r["share of contexts ending so"])
    record(f"{name}_base", r["share among all contexts"])
    record(f"{name}_p95", r["random p95 share"])
fig6_table.round(3)

# %% mystnb={"figure": {"caption": "Support density of every word-by-context block, word configuration against context configuration, on STS (a check of paper B, Fig. 6; our own figure).", "name": "fig-b04-fig6-density"}, "image": {"alt": "Heatmap of support densities with a bright diagonal for matching sign configurations."}}
configs = list(matched)
word_orth = orthant_clusters(U["STS"], range(5), top=top)
ctx_orth = orthant_clusters(Vt["STS"].T, range(5), top=top)
D = np.array([[block_support_density(S_sts, word_orth[a].indices, ctx_orth[b].indices) for b in configs] for a in configs])
overall_density = float(S_sts.sum()) / (data["STS"].V * data["STS"].m)
diag, off = D.diagonal().mean(), D[~np.eye(len(configs), dtype=bool)].mean()
perm_diag = np.array([D[np.arange(len(configs)), rng6.permutation(len(configs))].mean() for _ in range(n_draws)])
density_p95 = float(np.percentile(perm_diag, 95))
word_orth_shuffled = orthant_clusters(U["STS"][shuffle["STS"]], range(5), top=top)  # control: rows of U shuffled
diag_shuffled = float(np.mean([block_support_density(S_sts, word_orth_shuffled[C].indices, ctx_orth[C].indices)
                               for C in configs]))
record("fig6_diag_density_shuffled", diag_shuffled)
record("fig6_diag_density", float(diag))
record("fig6_off_density", float(off))
record("fig6_density_ratio", float(diag / off))
record("fig6_perm_p95", density_p95)
fig, ax = plt.subplots(figsize=(7.5, 6.5), layout="constrained")
im = ax.imshow(D, cmap="viridis", vmin=0, vmax=1)
ax.set_xticks(range(len(configs)), [sign_string(C) for C in configs], rotation=90, fontsize=7)
ax.set_yticks(range(len(configs)), [sign_string(C) for C in configs], fontsize=7)
ax.set_xlabel("context configuration (top-40 contexts)")
ax.set_ylabel("word configuration (top-40 words)")
ax.set_title(f"Support density of word x context blocks, STS, K={{1..5}}\n"
             f"diagonal mean {diag:.3f}, off-diagonal {off:.3f}, all of S {overall_density:.4f}")
fig.colorbar(im, ax=ax, label="fraction of (word, context) pairs observed")
plt.show()

# %%
pd.DataFrame({"value": [diag, off, perm_diag.mean(), perm_diag.std(), density_p95, overall_density, diag_shuffled]},
             index=["diagonal mean (matched configurations)", "off-diagonal mean (mismatched)",
                    "chance: permuted configurations, mean", "chance: permuted, std", "chance: permuted, p95",
                    "density of all of S", "control: diagonal mean, rows of U shuffled"]).round(4)

# %% [markdown]
# **What we see.** The adjective pair is the paper's: {glue:text}`fig6_sovery_share:.0%` of its 40 contexts end
# in *so/very* (all contexts: {glue:text}`fig6_sovery_base:.1%`; random same-size sets, 95th percentile:
# {glue:text}`fig6_sovery_p95:.1%`; top contexts and words in the table). The infinitive pair is only partly
# the paper's: the word cluster is base-form verbs, but {glue:text}`fig6_to_share:.0%` of its 40 contexts end
# in *to* (all contexts: {glue:text}`fig6_to_base:.1%`, random 95th percentile {glue:text}`fig6_to_p95:.1%`)
# and its most typical contexts are sentence starts (column "top contexts"). Matched sign patterns make blocks denser than mismatched ones: diagonal mean
# {glue:text}`fig6_diag_density:.3f` against {glue:text}`fig6_off_density:.3f` off the diagonal
# ({glue:text}`fig6_density_ratio:.1f` times) and {glue:text}`fig6_perm_p95:.3f` for the 95th percentile under
# permuted context configurations.
#
# ## The purity table
#
# Every cluster shown in Figs. 4, 5, 6 and 14 with its best class and the random baseline (same-size
# random word sets: mean and 95th percentile of the purity of that class; "beats random" uses the
# selection-aware test of the introduction).

# %%
for key, k, s in FIG14:
    shown[f"Fig. 14 {key} {'+' if s > 0 else '-'}u_{k}"] = (key, half_dimension(key, k, s).indices)
purity_rows = []
for name, (key, members) in shown.items():
    row = purity_table({name: members}, labels[key], baseline[key]).iloc[0].to_dict()
    purity_rows.append(row)
shown_table = pd.DataFrame(purity_rows).set_index("cluster")
shown_table.round(3)

# %% [markdown]
# Summary over **all** clusters of each grid (only clusters with at least 10 members are tested), with the
# shuffled-$\boldsymbol U$ control:

# %%
summary = pd.DataFrame(summary_rows).set_index("figure")
summary.round(3)

# %% [markdown]
# ## Paper vs. ours
#
# | figure | paper | ours |
# |---|---|---|
# | 14 | single dims uninterpretable | half-dimensions named by the paper with a lexical majority class (at least half of the top-40 words) in our sign convention: {glue:text}`fig14_fig_n_majority` of the four (WikiText $+\boldsymbol u_4$, a deviation); one of the four ($-\boldsymbol u_6$, STS) is a formatting feature (tokens that open a line or follow a quote). Other half-dimensions are already enriched; mean purity {glue:text}`fig14_STS_singles_mean:.2f` vs {glue:text}`fig14_STS_orthants_mean:.2f` for the $p=5$ orthants (STS, below the pre-registered margin: a deviation), {glue:text}`fig14_WikiText_singles_mean:.2f` vs {glue:text}`fig14_WikiText_orthants_mean:.2f` (WikiText) |
# | 4 | 8 semantic clusters | {glue:text}`fig4_reproduced` of {glue:text}`fig4_total` found by the selection-aware rule (purities {glue:text}`fig4_purity_min:.2f`-{glue:text}`fig4_purity_max:.2f`; best-of-N random 95th percentiles {glue:text}`fig4_random_p95_min:.2f`-{glue:text}`fig4_random_p95_max:.2f`); {glue:text}`fig4_majority` with a majority of the class |
# | 11 | verbs $\to$ tense $\to$ aspect | refinement measured (gap to random larger at $p=5$ than at $p=1$); the verb branch splits weakly into {glue:text}`verb_split_plus_class` and {glue:text}`verb_split_minus_class` at dimension 3; aspect (*-ing*) split weak |
# | 22-25 | grids for $p=4,5$ (STS), $p=5,6$ (WikiText) | same grids; {glue:text}`grid_beat_min:.0%`-{glue:text}`grid_beat_max:.0%` of tested orthant clusters beat random, shuffled control {glue:text}`grid_shuffled_min:.0%`-{glue:text}`grid_shuffled_max:.0%` |
# | 5, 20, 21 | k-means finds past tense, names, numbers, conjunctions | {glue:text}`fig5_found` of {glue:text}`fig5_total` found (best-of-$k$ rule) |
# | 6 | "want/like/love/have to" $\leftrightarrow$ infinitives; "was so/very" $\leftrightarrow$ adjectives | adjective pair found; the infinitive word cluster is found, {glue:text}`fig6_to_share:.0%` of its contexts end in *to* (above chance), its most typical contexts are sentence starts |
#
# Differences come from the data: the paper uses all of TinyStories; we use the {glue:text}`n_tinystories_stories`
# stories of our local sample (not the whole dataset) with GPT-2's tokenizer, so the singular vectors, their
# order and their signs differ, and which configuration holds which class cannot be compared index by index.
#
# ## Claims and checks
#
# One table: the sanity lines first (the data sizes are the builder's own parameters, so these lines cannot
# fail), then the pre-registered claims (rules at the top of the chapter) judged on the numbers above.

# %%
for key in DATASETS:
    check(f"{key}: V = 1000 next tokens, m = 10000 contexts (builder parameters)",
          (data[key].V, data[key].m) == (1000, 10000), measured=f"{data[key].V} x {data[key].m}",
          paper="1000 x 10000 (sec. 5.1)", sanity=True)

for figname in list(GRIDS) + list(KMEANS):
    row = summary.loc[figname]
    claims[f"{figname} beat random"].judge(
        row["beat random"], chance=0.05, control=row["single half-dims: beat random"],
        note=f"second control, rows of U shuffled: {row['shuffled U: beat random']:.3f} beat random "
             f"({'passes' if row['shuffled U: beat random'] >= 0.5 else 'fails'} the rule)")

for _, r in fig4_table.iterrows():
    note = (f"{r['class']}: best of {r['N tested']} orthants (p=5,6,7) vs best-of-N random mean "
            f"{r['best-of-N random mean']:.2f}")
    claims[f"fig4 {r['dataset']} {r['paper cluster']}"].judge(r["purity"], chance=r["best-of-N random p95"], note=note,
                                                              control=r["shuffled U: purity"])
for _, r in fig5_table.iterrows():
    note = (f"{r['class']}: best of {r['N tested']} k-means clusters vs best-of-N random mean "
            f"{r['best-of-N random mean']:.2f}")
    claims[f"fig5 {r['dataset']} {r['paper cluster']}"].judge(r["purity"], chance=r["best-of-N random p95"], note=note,
                                                              control=r["shuffled U: purity"])

purest_orthant_words = {}  # control of the Fig. 14 claims: the purest p=5 orthant, the same count
for key, figname in (("STS", "Fig. 23"), ("WikiText", "Fig. 24")):
    counts_p5 = [int(round(lex.purity * lex.size)) for lex in
                 (cluster_purity(cl.indices, labels[key].without(NO_SPACE)) for cl in grids[figname].values()
                  if len(cl.indices) >= MIN_SIZE)]
    purest_orthant_words[key] = record(f"fig14_{key}_purest_orthant_words", max(counts_p5))
for key, k, s in FIG14:
    half = f"{'+' if s > 0 else '-'}u_{k}"
    row = single_table[(single_table["dataset"] == key) & (single_table["half-dim"] == half)].iloc[0]
    claims[f"fig14 {key} {half}"].judge(int(row["best lexical class (words)"]), control=purest_orthant_words[key],
                                        note=f"of {top} words; best lexical class: {row['best lexical class']} "
                                             f"(purity {row['lexical purity']:.2f}); best class incl. tokenizer "
                                             f"class: {row['best class']} {row['purity']:.2f}")
for key in DATASETS:
    singles = float(single_table[single_table["dataset"] == key]["purity"].mean())
    grid = grid_tables["Fig. 23" if key == "STS" else "Fig. 24"]
    orth = float(grid[grid["size"] >= MIN_SIZE]["purity"].mean())
    shuf = shuffled_tables["Fig. 23" if key == "STS" else "Fig. 24"]
    orth_shuf = float(shuf[shuf["size"] >= MIN_SIZE]["purity"].mean())
    record(f"fig14_{key}_singles_mean", singles)
    record(f"fig14_{key}_orthants_mean", orth)
    record(f"fig14_{key}_orthants_shuffled_mean", orth_shuf)
    claims[f"fig14 {key} orthants vs singles"].judge(
        orth, chance=singles, control=orth_shuf, note=f"{key}: single half-dimensions are themselves fairly pure here (mean "
                                   f"{singles:.2f}; many beat random word sets), so the orthants' margin "
                                   "over them is smaller than the paper's Fig. 14 suggests")

for key in DATASETS:
    h = hierarchy[hierarchy["dataset"] == key].set_index("p")
    record(f"fig11_{key}_gap_p1", float(h.loc[1, "gap"]))
    record(f"fig11_{key}_gap_p5", float(h.loc[5, "gap"]))
    claims[f"fig11 {key} p5 vs random"].judge(float(h.loc[5, "purity (size-weighted)"]),
                                              chance=float(h.loc[5, "random same sizes"]),
                                              control=float(h.loc[5, "shuffled U: purity"]))
    claims[f"fig11 {key} gap grows"].judge(float(h.loc[5, "gap"]), chance=float(h.loc[1, "gap"]),
                                           control=float(h.loc[5, "shuffled U: gap"]))

for _, r in fig6_table.iterrows():
    claims[f"fig6 {r['class']} endings"].judge(r["share of contexts ending so"], chance=r["random p95 share"],
                                               control=r["shuffled V: share"],
                                               note=f"share among all contexts {r['share among all contexts']:.3f}")
claims["fig6 density"].judge(float(diag), chance=density_p95, control=diag_shuffled, note=f"off-diagonal mean {off:.4f}, ratio {diag / off:.1f}")

judged = {row["key"]: row["outcome"] for row in current_record()["comparisons"]}  # every claim, judged once
counts = pd.Series(judged).value_counts()
for outcome in ("reproduced", "deviates", "cannot fail", "not run"):
    record(f"n_{outcome.replace(' ', '_')}", int(counts.get(outcome, 0)))
fig4_ok = [judged[f"fig4 {r['dataset']} {r['paper cluster']}"] for _, r in fig4_table.iterrows()]
record("fig4_reproduced", sum(o == "reproduced" for o in fig4_ok))
record("fig4_total", len(fig4_ok))
fig4_found = fig4_table[[o == "reproduced" for o in fig4_ok]]
record("fig4_purity_min", float(fig4_found["purity"].min()) if len(fig4_found) else float("nan"))
record("fig4_purity_max", float(fig4_found["purity"].max()) if len(fig4_found) else float("nan"))
record("fig4_random_p95_min", float(fig4_table["best-of-N random p95"].min()))
record("fig4_random_p95_max", float(fig4_table["best-of-N random p95"].max()))
record("fig4_majority", int((fig4_table["purity"] >= 0.5).sum()))
record("fig5_found", int(fig5_table["found"].sum()))
record("fig5_total", len(fig5_table))
record("fig4_unit_purity", float(fig4_table[fig4_table["class"] == "unit"]["purity"].iloc[0]))
claims_table()

# %% [markdown]
# **Claims:** {glue:text}`n_reproduced` reproduced, {glue:text}`n_deviates` deviate, {glue:text}`n_cannot_fail`
# cannot fail (the rule also holds for the claim's negative control, so it is no evidence), {glue:text}`n_not_run`
# not run. The deviations are listed in the table with their numbers:
#
# * **Fig. 14, WikiText $+\boldsymbol u_4$.** The paper shows it as a single half-dimension that is not
#   interpretable. In our data its best lexical class (past-tense verb) holds
#   {glue:text}`fig14_lex_max_words` of its top-40 words, at least half, which the pre-registered rule
#   counts as a majority, so the claim deviates.
# * **Orthants vs. single half-dimensions, STS.** Mean purity of the $p=5$ orthant clusters vs. the single
#   half-dimensions: STS {glue:text}`fig14_STS_orthants_mean:.2f` vs {glue:text}`fig14_STS_singles_mean:.2f`,
#   WikiText {glue:text}`fig14_WikiText_orthants_mean:.2f` vs {glue:text}`fig14_WikiText_singles_mean:.2f` (rule:
#   a difference of at least 0.1). Single half-dimensions are already enriched in some class (tokenizer pieces,
#   punctuation, prepositions), so in STS the gain from combining dimensions is smaller than the
#   pre-registered margin, though the orthants are still the purer clusters on average. WikiText passes.
#
# Among the claims that reproduce, the weakest is **units (Fig. 4, WikiText)**: the best orthant cluster for
# our lexicon's `unit` class has unit purity {glue:text}`fig4_unit_purity:.2f`, the lowest of the
# {glue:text}`fig4_total` Fig. 4 classes, though above its best-of-N chance level (Fig. 4 table). That class
# is a hand list of measurement units, time units such as *hours* and *years* included
# (`ntputils.data.corpora.lexicon.UNITS`); the cluster's top words (Fig. 4 table, column "top words") mix the
# lexicon's unit words with other words.

# %%
print(f"chapter body: {run.elapsed():.1f} s wall, {time.process_time():.1f} s CPU of this kernel; "
      f"word clouds rendered: {renderer.n_rendered}")

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. The `paper` profile (the sizes and steps of
# `notebooks/b04_semantics_real_text.paper.yaml`) was run through the sweep runner, and its recorded values, claims and checks
# were committed under `results/sweeps/b04-paper/` with their provenance (commit, machine, date, wall
# time). Below they stand beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.

# %%
from ntputils.chapter import show_paper_profile  # noqa: E402

paper_view = show_paper_profile("b04", current_record(), profile)
