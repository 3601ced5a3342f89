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
# # Transformer and LSTM on paper A's datasets (Figs. 1 and 6, network rows)
#
# Paper A {cite}`zhao2024implicit` asks whether the geometry of a *trained network's* representations can
# be predicted from the data alone. Its Fig. 1 shows, for a **four-layer transformer (TF)** trained on
# *Simplified TinyStories* "long enough for the NTP loss to converge to its empirical entropy lower-bound",
# the cosine similarities of the context embeddings $\operatorname{corr}(\boldsymbol H)$ and of the word
# embeddings $\operatorname{corr}(\boldsymbol W^\top)$, next to
#
# * (b) the same matrices for the analysis model NTP-UFM trained on the same data,
# * (c) the theory: $\operatorname{corr}(\boldsymbol H^{\rm mm})$, $\operatorname{corr}(\boldsymbol W^{\rm mm\top})$
#   with $\boldsymbol W^{\rm mm}=\boldsymbol U\boldsymbol\Sigma^{1/2}$, $\boldsymbol H^{\rm mm}=\boldsymbol\Sigma^{1/2}\boldsymbol V^\top$
#   from the SVD of the max-margin logits $\boldsymbol L^{\rm mm}$ (the nuclear-norm NTP-SVM, which depends
#   only on the support pattern $\boldsymbol S$ of the next-token distributions),
# * (d) the proxy $\operatorname{corr}(\widetilde{\boldsymbol S})$, $\operatorname{corr}(\widetilde{\boldsymbol S}^\top)$ with
#   $\widetilde{\boldsymbol S}=(\mathbb I-\tfrac1V\mathbb 1\mathbb 1^\top)\boldsymbol S$.
#
# Its Fig. 6 follows four runs ({Synthetic, Simplified TinyStories} $\times$ {UFM, TF}) through training:
# (a) $\mathrm{CE}-\mathcal H$, (b) the norms $\|\boldsymbol W_k\|_F$, $\|\boldsymbol H_k\|_F$, (c) the distance of
# the projection of the logits on the data subspace $\mathcal F$ to the in-support component,
# $\|\mathcal P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol L^{\rm in}\|_F$, and (d, e) the similarities
# $\operatorname{sim}(\boldsymbol H_k,\widetilde{\boldsymbol S})$, $\operatorname{sim}(\boldsymbol W_k^\top,\widetilde{\boldsymbol S}^\top)$ and the same
# against $\boldsymbol H^{\rm mm}$, $\boldsymbol W^{\rm mm}$. The camera-ready code also trains a **2-layer LSTM** on both
# datasets (candidate appendix figures); we add it as a second network.
#
# Here a "network" enters the theory exactly like the UFM: its context embedding $\boldsymbol h_j$ is the final
# normalized hidden state at the last position of context $j$ and $\boldsymbol W$ its (untied, bias-free) output
# layer, so $\boldsymbol L=\boldsymbol W\boldsymbol H$ and every metric of the UFM chapter applies unchanged
# (`ntputils.analysis.network_runs.train_and_compare`, `ntputils.analysis.convergence.convergence_curves`).
#
# **Setup (paper A Fig. 1, from the authors' code).** TF, as in the authors' code: Llama-2-style decoder,
# $d=128$, 4 layers, 6 heads (width 20 each), **no positional encoding** (order is visible only through the
# causal mask), pre-RMSNorm, SwiGLU width $4d$, fixed 5-token contexts, only the last position scored
# (`ntputils.training.models.NTPTransformer`). LSTM, as in the authors' code: 2 layers, hidden size $d=128$,
# RMSNorm on the last hidden state (`ntputils.training.models.NTPLSTM`). Training: full batch over the $m$ distinct contexts with soft labels (the mean NTP loss), AdamW.
#
# **What the `cpu` profile reduces, and why.** The authors' code trains every model with AdamW (lr $10^{-4}$,
# weight decay $10^{-6}$, learning rate $\times0.4$ every 5,000 steps) for up to 30,000 full-batch steps, its
# default; the authors' console log of their STS transformer, quoted below, runs on to 49,000 steps. That is
# hours of CPU time for the 4-layer TF on Simplified TinyStories alone. At the `cpu` profile we
# keep the data and the architectures (4-layer TF, $d=128$; 2-layer LSTM) and shorten training instead: a
# **much larger constant learning rate (`tf_lr`, `lstm_lr`) without weight decay** and a few hundred to a
# thousand steps (`tf_steps_synthetic`, `tf_steps_sts`, `lstm_steps_synthetic`, `lstm_steps_sts`), aimed at
# $\mathrm{CE}-\mathcal H$ below `ce_gap_max` (the authors' TF log passes $10^{-2}$ between its steps 1,000 and 5,000;
# whether ours gets there is a pre-registered claim below). At the `cpu` profile the
# NTP-UFM is trained with AdamW at lr `ufm_lr` for `ufm_steps` steps (chapter a05 studies the UFM itself).
# The `paper` profile restores the authors' optimizer, schedule and 30,000 steps everywhere; it runs one
# dataset per sweep point (`dataset`), and its results for both datasets are committed (see "The paper
# profile, recorded" at the end of the page).
#
# **Threads.** The `cpu` profile trains with one torch thread (`num_threads=1`). On a 2-core machine that is
# otherwise idle, two threads made the largest model here somewhat faster per step, but as soon as
# anything else runs (another chapter with `make book JOBS=2`, a test) two spinning threads made every step several
# times slower; one thread per chapter is the robust choice. Set `num_threads=2` (or 0 for torch's default) to change it.
#
# **Data.** Both datasets are rebuilt from the authors' recipes (`ntputils.data.corpora.paper_a_synthetic`,
# `ntputils.data.corpora.paper_a_tinystories`). Synthetic: $m=${glue:text}`a06_syn_m`, $V=${glue:text}`a06_syn_V`
# (paper: 16, 30), $\mathcal H=${glue:text}`a06_syn_H:.4f` (paper 1.0166, see chapter a01). Simplified TinyStories:
# $m=${glue:text}`a06_sts_m`, $V=${glue:text}`a06_sts_V`, $\mathcal H=${glue:text}`a06_sts_H:.4f`
# (paper: $m=403$, $V=104$, $\mathcal H=1.6597$ or 1.6156): the authors' text excerpt is not public, so the
# context set differs in detail but has the same construction (tense, hand-table and WordNet synonym variants
# that share a support; chapter a05 compares the two datasets with the paper's).

# %%
LIMITS = {"dataset": {"both", "Synthetic", "STS"}}  # checked by the runner before a build or sweep starts

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of a06_transformer_lstm.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
dataset = "both"  # "both", "Synthetic" or "STS": the datasets to train on (the paper profile runs one per sweep point)
d = 128          # embedding width of every model (TF, LSTM, UFM)
tf_layers = 4    # transformer blocks (paper: 4)
n_heads = 6      # attention heads (paper: 6, head width 2*floor(d/12), i.e. 20)
lstm_layers = 2  # stacked LSTM layers (authors' code: 2)
tf_steps_synthetic = 1000  # full-batch AdamW steps of the TF on Synthetic
tf_steps_sts = 200  # ... of the TF on Simplified TinyStories
lstm_steps_synthetic = 1000  # ... of the LSTM on Synthetic
lstm_steps_sts = 300  # ... of the LSTM on Simplified TinyStories
ufm_steps = 500  # AdamW steps of the NTP-UFM column
tf_lr = 2e-3     # AdamW learning rate of the TF
lstm_lr = 3e-3   # AdamW learning rate of the LSTM
ufm_lr = 1e-2    # AdamW learning rate of the UFM
weight_decay = 0.0  # decoupled weight decay (paper: 1e-6)
schedule = "constant"  # "constant" or "multistep" (lr x gamma at each milestone)
milestones = []  # steps at which the learning rate is multiplied by gamma
gamma = 1.0      # multistep factor (paper: 0.4)
log_steps = 30   # number of log-spaced steps with scalars and W/H/L snapshots
num_threads = 1  # torch CPU threads (0: leave torch's default)
ce_gap_max = 1e-2  # pre-registered rule: final CE - H of every network at most this (Fig. 6a)
norm_growth_min = 5.0  # pre-registered rule: ||L_final||_F / ||L_0||_F of every network at least this (Fig. 6b)
sim_margin = 0.1  # pre-registered rule: every sim claim at least chance + this margin (Figs. 1, 6d-e)
direction_margin = 0.1  # pre-registered rule: dist(L_k, L^mm) falls by at least this over training (Thm. 1)
chance_draws = 20  # random matrices per chance level of a sim claim

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ntputils import plots
from ntputils.analysis.baselines import shuffled_sim, similarity_with_chance
from ntputils.analysis.controls import (
    distance_curve,
    random_f_target,
    residual_ratio_control,
    spectrum_matched_random,
)
from ntputils.analysis.convergence import convergence_curves, residual_ratio, support_group_order, word_order
from ntputils.analysis.metrics import normalized_distance, sim
from ntputils.analysis.network_runs import geometry_reference, train_and_compare
from ntputils.chapter import (
    at_least,
    at_most,
    check,
    claims_table,
    compare_similarity,
    preregister,
    preregister_similarity,
    record,
    setup_chapter,
    within,
)
from ntputils.data.corpora import paper_a_synthetic, paper_a_tinystories
from ntputils.training import ufm

run = setup_chapter(globals(), torch_threads=num_threads)  # 0: torch's default
print(f"torch threads: {torch.get_num_threads()}")

# %% [markdown]
# ## Data and the data-determined targets
#
# For each dataset we compute the proxy $\widetilde{\boldsymbol S}$, the in-support logits $\boldsymbol L^{\rm in}$
# and the max-margin logits $\boldsymbol L^{\rm mm}$ (certified first-order solver `ntputils.geometry.maxmargin_admm`;
# relative duality gap below $10^{-6}$, cached on disk).

# %%
LOADERS = {"Synthetic": paper_a_synthetic, "STS": paper_a_tinystories}
if dataset not in LIMITS["dataset"]:  # for a run without the runner (papermill, Jupyter)
    raise ValueError(f"dataset must be one of {sorted(LIMITS['dataset'])}, got {dataset!r}")
datasets = {name: load() for name, load in LOADERS.items() if dataset in ("both", name)}
refs = {}
for name, data in datasets.items():
    refs[name] = geometry_reference(data)
    info = refs[name].info["lmm"]
    print(f"{name:9s} {data}  ||L^mm||_* = {info['nuclear_norm']:.3f} (certified gap {info['rel_gap']:.1e}, "
          f"rank {refs[name].info['rank_mm']}), ||L^in||_F = {np.linalg.norm(refs[name].L_in):.2f}, "
          f"sim(H^mm, S~) = {sim(refs[name].H_mm, refs[name].S_tilde):.3f}")

# %%
for name, data in datasets.items():
    info = refs[name].info["lmm"]
    tag = {"Synthetic": "syn", "STS": "sts"}[name]
    record(f"a06_{tag}_m", data.m)
    record(f"a06_{tag}_V", data.V)
    record(f"a06_{tag}_H", refs[name].entropy)
    check(f"{name}: L^mm certified (relative duality gap <= 1e-6)", info["rel_gap"] <= 1e-6,
          measured=info["rel_gap"], tol=1e-6, item="A:Fig 1")
claims_table()

# %% [markdown]
# ## Training the networks and the NTP-UFM
#
# Every run is checkpointed under `.cache/runs/<label>-<key>` (key = model, training arguments, seed and
# data), so re-executing the chapter with unchanged parameters reloads the finished runs instead of
# training again; on CPU a run is deterministic for a given seed.

# %%
train_common = dict(weight_decay=weight_decay, schedule=schedule, milestones=milestones,
                    gamma=gamma, log_steps=log_steps)
network_plan = {
    ("Synthetic", "TF"): ("transformer", tf_steps_synthetic, tf_lr),
    ("STS", "TF"): ("transformer", tf_steps_sts, tf_lr),
    ("Synthetic", "LSTM"): ("lstm", lstm_steps_synthetic, lstm_lr),
    ("STS", "LSTM"): ("lstm", lstm_steps_sts, lstm_lr),
}
model_configs = {
    "transformer": dict(d=d, n_layers=tf_layers, n_heads=n_heads, pos_encoding="none"),
    "lstm": dict(d=d, n_layers=lstm_layers),
}
runs = {}
network_plan = {key: plan for key, plan in network_plan.items() if key[0] in datasets}
for (name, model_name), (kind, steps_, lr_) in network_plan.items():
    label = f"a06-{name}-{model_name}"
    runs[name, model_name] = train_and_compare(
        kind, datasets[name], refs[name], model_config=model_configs[kind],
        train_config=dict(steps=steps_, lr=lr_, **train_common), seed=seed, label=label,
        device=run.device, num_threads=num_threads or None, progress=False)
    r = runs[name, model_name]
    print(f"{label:20s} {r.history.meta['parameters']:>9,d} parameters, {steps_:6d} steps: "
          f"CE - H = {r.final['ce_minus_H']:.2e}, "
          f"{'reloaded from checkpoint' if r.cached else f'trained in {r.cpu_seconds:.1f} s CPU'}")

ufm_runs, ufm_series, ufm_cpu = {}, {}, {}
for name, data in datasets.items():
    c0 = time.process_time()
    ufm_runs[name] = ufm.train(data, d=d, loss="ce", optimizer="adamw", lr=ufm_lr,
                               weight_decay=weight_decay,
                               milestones=milestones if schedule == "multistep" else (),
                               gamma=gamma, steps=ufm_steps, log_steps=log_steps, seed=seed,
                               device=run.device, progress=False)
    ufm_series[name] = convergence_curves(ufm_runs[name], refs[name], label=f"{name} UFM")
    ufm_cpu[name] = time.process_time() - c0
    print(f"{name} UFM: CE - H = {ufm_runs[name].final['ce_minus_H']:.2e} ({ufm_cpu[name]:.1f} s CPU)")

# %% [markdown]
# ## Fig. 1 with the networks
#
# One figure per dataset, one row per source (the paper sets them side by side; rows keep the labels legible):
# TF, LSTM, NTP-UFM, theory ($\boldsymbol H^{\rm mm}$, $\boldsymbol W^{\rm mm}$) and proxy
# ($\widetilde{\boldsymbol S}$); left $\operatorname{corr}$ of the context embeddings, right of the word embeddings,
# at the end of training. Contexts with identical supports are placed next to each other and
# words are ordered by the first such group that contains them, so *subspace collapse* shows as blocks. Every
# panel below the first row is annotated with its $\operatorname{sim}$ to the TF panel at the top of its column
# (the first row).

# %% mystnb={"figure": {"caption": "Context (left) and word (right) correlations at the end of training for the transformer, LSTM, NTP-UFM, theory and proxy, one figure per dataset; reproduces paper A, Fig. 1 with the networks, one row per source. Each panel below the first row is annotated with its sim to the transformer's panel at the top of its column."}, "image": {"alt": "Heatmaps of context and word correlations, one row per model, theory and proxy."}}
def fig1_panels(name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Columns of Fig. 1: (context matrix, word matrix), each with the items as columns."""
    ref = refs[name]
    tf, lstm = runs[name, "TF"].history, runs[name, "LSTM"].history
    return {"TF": (tf.H[-1], tf.W[-1].T), "LSTM": (lstm.H[-1], lstm.W[-1].T),
            "NTP-UFM": (ufm_runs[name].H[-1], ufm_runs[name].W[-1].T),
            "theory (mm)": (ref.H_mm, ref.W_mm.T), "proxy (S~)": (ref.S_tilde, ref.S_tilde.T)}


for name, data in datasets.items():
    ctx_order, _ = support_group_order(data.S)
    w_order = word_order(data.S, ctx_order)
    fig = plots.geometry_comparison(
        fig1_panels(name), context_labels=[data.context_str(j) for j in range(data.m)],
        word_labels=[data.token_str(z) for z in range(data.V)], context_order=ctx_order, word_order=w_order,
        max_labels=40 if data.m <= 40 else 20, panel_size=3.6 if data.m <= 40 else 4.4,
        suptitle=f"{name} (m = {data.m}, V = {data.V}): corr(H) (left) and corr(W^T) (right) at the end of training")
    plt.show()

# %% [markdown]
# ## The logits: transformer beside NTP-UFM (Fig. 4, bottom row, for the networks)
#
# Paper A Fig. 4's third row shows the NTP-UFM logits $\boldsymbol L_k$ approaching the direction of
# $\boldsymbol L^{\rm mm}$. Here the final logits $\boldsymbol L=\boldsymbol W\boldsymbol H$ of the transformer and of
# NTP-UFM on each dataset, each divided by its Frobenius norm, beside $\boldsymbol L^{\rm mm}$ and
# $\widetilde{\boldsymbol S}$ (also normalized); rows are words, columns contexts, in the support-group order of
# Fig. 1, on one shared colour scale per dataset. The title gives the normalized distance of each panel to
# $\boldsymbol L^{\rm mm}$ (0 = the same direction).

# %% mystnb={"figure": {"caption": "Final normalized logits of the transformer beside NTP-UFM, the theory and the proxy, one figure per dataset; the networks' version of the bottom row of paper A, Fig. 4."}, "image": {"alt": "Heatmaps of logits, words by contexts: transformer, NTP-UFM, theory and proxy."}}
for name, data in datasets.items():
    ref = refs[name]
    ctx_order, _ = support_group_order(data.S)
    w_order = word_order(data.S, ctx_order)
    mats = {"TF": runs[name, "TF"].history.L[-1], "NTP-UFM": ufm_runs[name].L[-1], "theory L^mm": ref.L_mm,
            "proxy S~": ref.S_tilde}
    mats = {k: v / np.linalg.norm(v) for k, v in mats.items()}
    lo, hi = np.percentile(np.concatenate([v.ravel() for v in mats.values()]), [1, 99])
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.6), layout="constrained")
    for ax, (label, L) in zip(axes.ravel(), mats.items(), strict=True):
        dist = normalized_distance(L, ref.L_mm)
        plots.logit_heatmap(ax, L, word_labels=[data.token_str(z) for z in range(data.V)] if data.V <= 40 else None,
                            word_order=w_order, context_order=ctx_order, vmin=lo, vmax=hi,
                            colorbar="L / ||L||_F" if label == "proxy S~" else None,
                            title=f"{label}\ndist to L^mm {dist:.3f}")
        record(f"a06_{'syn' if name == 'Synthetic' else 'sts'}_logit_dist_{label.split()[0].replace('-', '')}",
               float(dist))
    fig.suptitle(f"{name}: final logits (normalized), transformer | NTP-UFM | theory | proxy")
    plt.show()

# %% [markdown]
# On Simplified TinyStories the transformer's logits are at normalized distance
# {glue:text}`a06_sts_logit_dist_TF:.3f` from the direction of $\boldsymbol L^{\rm mm}$, the NTP-UFM's at
# {glue:text}`a06_sts_logit_dist_NTPUFM:.3f` and the proxy at {glue:text}`a06_sts_logit_dist_proxy:.3f` (Synthetic:
# {glue:text}`a06_syn_logit_dist_TF:.3f`, {glue:text}`a06_syn_logit_dist_NTPUFM:.3f`,
# {glue:text}`a06_syn_logit_dist_proxy:.3f`). The proxy is not trained: its distance is the fixed gap between
# $\widetilde{\boldsymbol S}$ and $\boldsymbol L^{\rm mm}$ on each dataset. The trained models are all far from 0,
# and the panels show where the mass of their logits sits (in-support entries high, the rest low) rather than the
# limit. Convergence in direction is logarithmically slow, but training length alone does not explain these
# distances: the paper-profile table at the end of the page records them after the paper's schedule, and there
# the Synthetic transformer ends *farther* from $\boldsymbol L^{\rm mm}$ than here, while the NTP-UFM and the
# STS transformer end only somewhat closer.
#
# **Corollary 1 of paper A.** Its statement is not in any text available to this book (only its name appears in the
# paper's list of results), and nothing in the authors' code labels it; it is listed on the scorecard as not
# reproduced, with that reason, rather than reconstructed by guess.

# %% [markdown]
# ## Fig. 6: training curves of the networks
#
# One figure per dataset (the paper's Fig. 6 overlays UFM and TF of both datasets; here each dataset has its own
# figure so a panel holds at most six curves): NTP-UFM, transformer and LSTM, against step $k+1$ on log axes.
# At the `cpu` profile the runs have different lengths; the legend gives each run's number of steps, and each
# curve ends at its run's last step (compare values at equal steps, not the curves' ends). A dashed curve
# (word embeddings) carries open circles, so it stays visible where it lies on the solid one.

# %% mystnb={"figure": {"caption": "Training curves of NTP-UFM, the transformer and the LSTM, one figure per dataset; reproduces the network rows of paper A, Fig. 6."}, "image": {"alt": "Grid of training curves over steps, one colour per model."}}
series = {f"{name} {model}": r.series for (name, model), r in runs.items()}
for name in datasets:
    steps_of = {m: int(runs[name, m].history.steps[-1]) for m in ("TF", "LSTM")}
    steps_of["UFM"] = int(ufm_runs[name].steps[-1])
    fig_runs = {f"UFM ({steps_of['UFM']} steps)": ufm_series[name], f"TF ({steps_of['TF']} steps)": series[f"{name} TF"],
                f"LSTM ({steps_of['LSTM']} steps)": series[f"{name} LSTM"]}
    fig = plots.convergence_panels(fig_runs, panels=("ce", "norms", "proj", "sim_proxy", "sim_mm"), panel_size=4.0, ncols=3,
                            colors=dict(zip(fig_runs, ("goldenrod", "steelblue", "purple"), strict=True)),
                            suptitle=f"Fig. 6 on {name}: NTP-UFM, 4-layer transformer and 2-layer LSTM "
                                     "(each run ends at its own last step)")
    plots.legend_below(fig, ncol=3)
    plt.show()

# %% [markdown]
# ## Measured numbers
#
# Final values of every run (the UFM rows for comparison). "CE$_0$" and "$\|\boldsymbol L_0\|_F$" are at
# initialization; "proj" is $\|\mathcal P_{\mathcal F}(\boldsymbol L)-\boldsymbol L^{\rm in}\|_F$. Its value at
# initialization ("proj_0") is close to $\|\boldsymbol L^{\rm in}\|_F$ on Simplified TinyStories but clearly larger
# than it on Synthetic (compare with the $\|\boldsymbol L^{\rm in}\|_F$ printed in the data section).

# %%
def summary_row(name: str, model: str, hist, s) -> dict:
    return {"dataset": name, "model": model, "steps": hist.steps[-1], "H": refs[name].entropy,
            "CE_0": hist.scalars["ce"][0], "CE": hist.scalars["ce"][-1], "CE - H": hist.scalars["ce_minus_H"][-1],
            "||L_0||_F": hist.scalars["norm_L"][0], "||L||_F": hist.scalars["norm_L"][-1],
            "proj_0": s.proj_error[0], "proj": s.proj_error[-1],
            "sim(H,S~)": s.sim_H_proxy[-1], "sim(W^T,S~^T)": s.sim_W_proxy[-1],
            "sim(H,H^mm)": s.sim_H_mm[-1], "sim(W^T,W^mm^T)": s.sim_W_mm[-1]}


rows = [summary_row(name, model, r.history, r.series) for (name, model), r in runs.items()]
rows += [summary_row(name, "UFM", ufm_runs[name], ufm_series[name]) for name in datasets]
summary = pd.DataFrame(rows).set_index(["dataset", "model"]).sort_index()
summary.style.format("{:.4g}")

# %% [markdown]
# **Against the paper.** The only numbers the paper's material gives for the networks are the authors' console
# log of the 4-layer TF on Simplified TinyStories (shipped with their code): CE 4.68 at initialization, 1.6623 after 1,000
# steps, 1.6168 after 5,000 and 1.6156 (= $\mathcal H$ of that re-run) from 27,000 steps on; $\|\boldsymbol L\|_F$
# 46.7 at initialization, 349.5 after 1,000 steps and 835.2 after 49,000. The final sim values of Fig. 6(d, e)
# are not given (UNKNOWN); the caption says the embeddings "exhibit high similarity with the proxy".

# %%
if "STS" not in datasets:
    print("the authors' console log is of the STS transformer, which this run (dataset = "
          f"{dataset!r}) does not train")
else:
    tf = summary.loc[("STS", "TF")]
    display(pd.DataFrame({
        "paper (4-layer TF, STS, 30k-50k steps)": ["4.68", "1.6156 (1.6597 in the plots)", "< 1e-4", "46.7",
                                                  "835.2 (49k steps)", "high (UNKNOWN)", "high (UNKNOWN)"],
        f"ours ({profile} profile, {int(tf['steps'])} steps)": [
            f"{tf['CE_0']:.3f}", f"{tf['H']:.4f}", f"{tf['CE - H']:.1e}", f"{tf['||L_0||_F']:.1f}",
            f"{tf['||L||_F']:.1f}", f"{tf['sim(H,S~)']:.3f}", f"{tf['sim(W^T,S~^T)']:.3f}"],
    }, index=["CE at init", "H", "final CE - H", "||L_0||_F", "final ||L||_F", "sim(H, S~)", "sim(W^T, S~^T)"]))

# %% [markdown]
# ## Pre-registered claims
#
# The paper's claims for the networks are qualitative ("approaches", "grow", "converges", "high similarity"), so
# each gets a rule fixed here, before the numbers below are computed; a claim that misses its rule is shown as a
# deviation with its numbers and does not fail the build.
#
# 1. (Fig. 6a) the NTP loss of every network approaches the entropy lower bound: final
#    $\mathrm{CE}-\mathcal H\le$ `ce_gap_max` (cpu $10^{-2}$, paper profile $10^{-3}$). The bound comes from the
#    authors' console log of the STS transformer: $\mathrm{CE}-\mathcal H=0.047$ after 1,000 steps and 0.0012 after
#    5,000; the cpu runs (200-1,000 steps at a larger learning rate) are asked for the $10^{-2}$ decade, the paper
#    profile (30,000 steps) for the $10^{-3}$ decade the authors' run had passed by step 5,000.
# 2. (Fig. 6b) the logit norm keeps growing: $\|\boldsymbol L_{\rm final}\|_F/\|\boldsymbol L_0\|_F\ge$
#    `norm_growth_min` (cpu 5, paper profile 10), below the authors' TF ratios $349.5/46.7=7.5$ after 1,000
#    steps and $529.1/46.7=11.3$ after 5,000.
# 3. (Fig. 6c) the projection of the logits on $\mathcal F$ *converges* to $\boldsymbol L^{\rm in}$, i.e. its distance
#    decreases toward 0 on the figure's log axis. Two rules per run, for the networks and the NTP-UFM alike:
#    (i) the final distance is at most $0.1\times$ its value at initialization (at least one decade down), and
#    (ii) the curve is still decreasing at the end: the final distance is at most $1.05\times$ the smallest value of
#    the run.
# 4. (Figs. 1, 6d-e) the networks' context and word geometry is highly similar to the proxy $\widetilde{\boldsymbol S}$
#    and to the theory ($\boldsymbol H^{\rm mm}$, $\boldsymbol W^{\rm mm}$). $\operatorname{sim}$ compares correlation
#    matrices *including their diagonals*, so an unrelated matrix already scores high; every $\operatorname{sim}$ claim
#    is therefore judged against its chance level, the larger of two baselines: the mean $\operatorname{sim}$ of
#    `chance_draws` random Gaussian matrices of the same shape (`ntputils.analysis.baselines.similarity_with_chance`),
#    and the $\operatorname{sim}$ of the same network at initialization (same seed, step 0: an untrained transformer's
#    contexts share tokens, so it scores far above a Gaussian matrix before any training). Rule, with the margin
#    `sim_margin` $=0.1$: value $>$ baseline $+\,0.1$. The same rule is registered separately for the off-diagonal
#    value (SIM over the entries $i\neq k$ only) against the off-diagonal baselines. A value that clears only the
#    Gaussian level deviates: training did not add it.
# 5. (Fig. 1, a vs b) the transformer and the NTP-UFM learn the same context geometry:
#    $\operatorname{sim}(\boldsymbol H_{\rm TF},\boldsymbol H_{\rm UFM})$ and its off-diagonal value $>$ baseline $+\,0.1$
#    (the untrained baseline: the TF at step 0 against the trained UFM); and
#    (Fig. 6d) the TF's similarity to the proxy *rose* during training: final minus initial
#    $\operatorname{sim}(\boldsymbol H_k,\widetilde{\boldsymbol S})\ge0.1$ (the same margin).
# 6. (Thm. 1, Fig. 4's bottom row) the logits move toward the direction of $\boldsymbol L^{\rm mm}$: the normalized
#    distance $\lVert\boldsymbol L_k/\lVert\boldsymbol L_k\rVert_F-\boldsymbol L^{\rm mm}/\lVert\boldsymbol L^{\rm mm}\rVert_F\rVert_F$
#    at the last snapshot is at least `direction_margin` $=0.1$ below its value at the first (initialization), for
#    every network and the NTP-UFM. The theorem is a limit and the paper gives no distance for networks, so the rule
#    asks for a fall, not for a value near 0. (It replaces no earlier rule: until issue #44 the page showed these
#    distances without judging them.)
#
# **Negative controls, fixed before the numbers below** (each judged by its claim's rule; a control that passes
# makes its claim read "cannot fail"):
#
# * claims 1 and 2: the same network untrained (step 0): its $\mathrm{CE}-\mathcal H$, and its norm ratio, which is 1
#   without a step;
# * claim 3: the same two ratios for the distance of $\mathcal P_{\mathcal F}(\boldsymbol L_k)$ to a random matrix in
#   $\mathcal F$ with the norm of $\boldsymbol L^{\rm in}$ (`ntputils.analysis.controls.random_f_target`), an
#   in-support target unrelated to the data's log-odds that training has no reason to approach;
# * the rise of claim 5: the same rise with the contexts' columns shuffled against $\widetilde{\boldsymbol S}$ (the
#   mean over `chance_draws` permutations, the same permutations at both ends), which keeps the embeddings'
#   spectrum and breaks which context has which support;
# * the residual ratio $\|\boldsymbol L_k-\boldsymbol L^{\rm in}\|_F/\|\boldsymbol L_k\|_F$ (authors' log 0.9997, rule
#   within 0.01): $\boldsymbol L^{\rm in}$ plus a random $\mathcal F^\perp$ matrix with the norm of the trained
#   $\boldsymbol L_k-\boldsymbol L^{\rm in}$ (`residual_ratio_control`), the same norms without any direction toward
#   $\boldsymbol L^{\rm mm}$. The ratio depends on the norms alone, so we expect this control to pass whenever the
#   network does.
# * claim 6: the same fall of the normalized distance to a random matrix with the singular values of
#   $\boldsymbol L^{\rm mm}$ and random singular vectors (`spectrum_matched_random`): a target of the same shape
#   and spectrum that the theory does not point to. Logits that merely grow in norm, or drift, fall toward it too.

# %%
SIMS = (("H", "proxy"), ("W", "proxy"), ("H", "theory"), ("W", "theory"))
specs, sim_specs = {}, {}
for (name, model) in runs:
    run_name = f"{name} {model}"
    specs[f"ce_{name}_{model}"] = (f"{run_name}: final CE - H approaches 0 (Fig. 6a)",
                                   at_most(ce_gap_max, "decade of the authors' TF log"), "A:Fig 6",
                                   "-> 0 (TF STS: 4.68 -> 1.6156 = H)")
    specs[f"norm_{name}_{model}"] = (f"{run_name}: ||L||_F grows (Fig. 6b)",
                                     at_least(norm_growth_min, "below the authors' TF ratios"), "A:Fig 6",
                                     "835.2 / 46.7 = 17.9 (TF STS, 49k steps)")
    for emb, target in SIMS:
        sim_specs[f"sim_{emb}_{target}_{name}_{model}"] = (
            f"{run_name}: sim({emb}, {target}) high (Figs. 1, 6d-e)", sim_margin, ["A:Fig 1", "A:Fig 6"])
for name in datasets:
    for model in ("TF", "LSTM", "UFM"):
        specs[f"proj_ratio_{name}_{model}"] = (
            f"{name} {model}: ||P_F(L) - L^in||_F ends a decade below its initial value (Fig. 6c)",
            at_most(0.1, "converges toward 0"), "A:Fig 6", "decreases toward 0")
        specs[f"proj_trend_{name}_{model}"] = (
            f"{name} {model}: ||P_F(L) - L^in||_F still decreasing at the end (final / run minimum, Fig. 6c)",
            at_most(1.05, "monotone decrease"), "A:Fig 6", "decreases monotonically")
        specs[f"direction_{name}_{model}"] = (
            f"{name} {model}: the normalized distance of L_k to L^mm fell by >= {direction_margin} over training "
            "(Thm. 1: L_k / ||L_k|| -> L^mm / ||L^mm||)",
            at_most(-direction_margin, "moves toward L^mm's direction"), ["A:Fig 4", "A:Thm 1"],
            "converges in direction (no value for networks)")
    sim_specs[f"tf_vs_ufm_{name}"] = (f"{name}: sim(H_TF, H_UFM) high (Fig. 1 a vs b)", sim_margin, "A:Fig 1",
                                      "near-identical panels")
    specs[f"rise_{name}"] = (f"{name} TF: sim(H_k, S~) rose during training (Fig. 6d)",
                             at_least(sim_margin, "rises to high values"), "A:Fig 6", "rises to high values")
if "STS" in datasets:
    specs["residual_ratio_STS_TF"] = ("||L_k - L^in||_F / ||L_k||_F at the end, STS TF (authors' TF log: 0.9997)",
                                      within(0.9997, abs_tol=0.01), "A:Fig 6")
CONTROLS = {"ce": "the same network untrained (step 0)", "norm": "the same network untrained (ratio 1: no step)",
            "proj_ratio": "the distance of P_F(L_k) to a random F matrix of the norm of L^in",
            "proj_trend": "the distance of P_F(L_k) to a random F matrix of the norm of L^in",
            "rise": "the same rise with the contexts shuffled against S~",
            "residual_ratio": "L^in plus a random F-perp matrix of the norm of L_k - L^in",
            "direction": "the same fall toward a random matrix with L^mm's singular values"}
claims = preregister(specs, controls={key: CONTROLS[prefix] for key in specs
                                      for prefix in CONTROLS if key.startswith(prefix + "_")})
sims = preregister_similarity(sim_specs)

# %% [markdown]
# ### Loss, norms and projection (Fig. 6a-c)

# %%
proj_rows = []
for name in datasets:
    for model in ("TF", "LSTM", "UFM"):
        proj = np.asarray(ufm_series[name].proj_error if model == "UFM" else runs[name, model].series.proj_error)
        ratio, trend = proj[-1] / proj[0], proj[-1] / proj.min()
        hist_ = ufm_runs[name] if model == "UFM" else runs[name, model].history
        cols = hist_.meta.get("snapshot_contexts")
        sub = refs[name].restrict(cols) if cols is not None else refs[name]
        ctrl = distance_curve(hist_.L, sub.support, random_f_target(sub.L_in, sub.support, seed=seed))
        note = ("at this training length the logits' projection on F has not converged to L^in "
                f"(init {proj[0]:.3g}, min {proj.min():.3g}, final {proj[-1]:.3g})")
        out_ratio = claims[f"proj_ratio_{name}_{model}"].judge(ratio, note=note if ratio > 0.1 else "",
                                                               control=float(ctrl[-1] / ctrl[0]))
        out_trend = claims[f"proj_trend_{name}_{model}"].judge(trend, note=note if trend > 1.05 else "",
                                                               control=float(ctrl[-1] / ctrl.min()))
        tag = f"{name}_{model}".lower()
        record(f"a06_proj_final_{tag}", float(proj[-1]))
        # Thm. 1's direction: the fall of dist(L_k, L^mm) from the first to the last snapshot; its control is
        # the same fall toward a matrix of L^mm's spectrum with random singular vectors (no reason to approach it)
        decoy = spectrum_matched_random(sub.L_mm, seed=seed)
        fall = normalized_distance(hist_.L[-1], sub.L_mm) - normalized_distance(hist_.L[0], sub.L_mm)
        fall_ctrl = normalized_distance(hist_.L[-1], decoy) - normalized_distance(hist_.L[0], decoy)
        record(f"a06_dist_mm_final_{tag}", normalized_distance(hist_.L[-1], sub.L_mm))
        claims[f"direction_{name}_{model}"].judge(float(fall), control=float(fall_ctrl))
        proj_rows.append({"dataset": name, "model": model, "proj at init": proj[0], "min over the run": proj.min(),
                          "final": proj[-1], "final / init": ratio, "final / min": trend,
                          "rule (i) final/init <= 0.1": out_ratio, "rule (ii) final/min <= 1.05": out_trend})
pd.DataFrame(proj_rows).set_index(["dataset", "model"]).style.format("{:.4g}", subset=[
    "proj at init", "min over the run", "final", "final / init", "final / min"])

# %%
for (name, model), r in runs.items():
    claims[f"ce_{name}_{model}"].judge(r.final["ce_minus_H"],
                                       control=float(r.history.scalars["ce_minus_H"][0]))  # step 0
for (name, model), r in runs.items():
    norm_L = r.history.scalars["norm_L"]
    claims[f"norm_{name}_{model}"].judge(norm_L[-1] / norm_L[0], control=norm_L[0] / norm_L[0])
if "STS" in datasets:
    L_k = runs["STS", "TF"].history.L[-1]  # the final STS TF logits
    residual = record("a06_sts_tf_residual_ratio", residual_ratio(L_k, refs["STS"].L_in), paper=0.9997)
    residual_ctrl = record("a06_sts_tf_residual_ratio_control",
                           residual_ratio_control(L_k, refs["STS"].L_in, refs["STS"].support, seed=seed))
    claims.residual_ratio_STS_TF.judge(
        residual, control=residual_ctrl, note="" if claims.residual_ratio_STS_TF.rule.holds(residual) else
        f"||L_k||_F = {np.linalg.norm(L_k):.1f} after {tf_steps_sts} steps (the authors': 835 after 49k): "
        "the F-perp part grows only like log k")
claims_table()

# %% [markdown]
# So the NTP-UFM's distance $\|\mathcal P_{\mathcal F}(\boldsymbol L)-\boldsymbol L^{\rm in}\|_F$ ends at
# {glue:text}`a06_proj_final_synthetic_ufm:.3g` (Synthetic) and {glue:text}`a06_proj_final_sts_ufm:.3g` (STS), the
# transformer's at {glue:text}`a06_proj_final_synthetic_tf:.3g` and {glue:text}`a06_proj_final_sts_tf:.3g`, the LSTM's at
# {glue:text}`a06_proj_final_synthetic_lstm:.3g` and {glue:text}`a06_proj_final_sts_lstm:.3g`; the table says which of them
# meet the two rules of claim 3. Where a network deviates, a possible reason: the in-support component of the logits is
# fitted only as well as the loss is ($\mathrm{CE}-\mathcal H$ is small but not zero), and in a network the logits'
# $\mathcal F$-part is coupled to the growing $\mathcal F^\perp$-part through shared parameters, so it keeps moving.
# The `paper` profile was run with the authors' decaying schedule and 30,000 steps, and rule (ii) still deviates
# there for the Synthetic transformer, the Synthetic LSTM and the STS transformer (the paper-profile table at the
# end of the page): a longer, decaying schedule alone does not explain the deviation, and its cause is not
# established here.
# The authors' console log ends their STS transformer with $\|\boldsymbol L_k-\boldsymbol L^{\rm in}\|_F/\|\boldsymbol L_k\|_F=0.9997$
# (logits dominated by the $\mathcal F^\perp$ part); our STS transformer ends at {glue:text}`a06_sts_tf_residual_ratio:.4f`
# (claim `residual_ratio_STS_TF`, rule `within(0.9997, abs_tol=0.01)`, in the table above); its control, the same
# norms with a random $\mathcal F^\perp$ direction, gives {glue:text}`a06_sts_tf_residual_ratio_control:.4f`.
#
# ### Similarities with their chance levels (Figs. 1, 6d-e)
#
# For every network, embedding and target: $\operatorname{sim}$ (with diagonals), its off-diagonal value, the random
# chance level (mean $\pm$ std over random matrices of the same shape) and the untrained network's value for both,
# and the shuffled-column control.

# %%
targets = {("H", "proxy"): lambda ref: ref.S_tilde, ("W", "proxy"): lambda ref: ref.S_tilde.T,
           ("H", "theory"): lambda ref: ref.H_mm, ("W", "theory"): lambda ref: ref.W_mm.T}
sim_rows = []
for (name, model), r in runs.items():
    W0, H0 = r.history.at_initialization()  # the same network before its first step
    emb = {"H": r.history.H[-1], "W": r.history.W[-1].T}
    emb0 = {"H": H0, "W": W0.T}
    for e, target in SIMS:
        rep = similarity_with_chance(emb[e], targets[e, target](refs[name]), draws=chance_draws, seed=seed,
                                     untrained=emb0[e])
        out, out_off = compare_similarity(sims[f"sim_{e}_{target}_{name}_{model}"], rep)
        label = f"sim({e}{'^T' if e == 'W' else ''}, {'S~' if target == 'proxy' else e + '^mm'})"
        sim_rows.append({"dataset": name, "model": model, **rep.row(label),
                         "value vs baseline+0.1": out, "off-diag. vs baseline+0.1": out_off})
sim_table = pd.DataFrame(sim_rows).set_index(["dataset", "model", "claim"])
sim_table.style.format("{:.3f}", subset=["value", "off-diagonal"])

# %%
claims_table()

# %% [markdown]
# ### The transformer against the NTP-UFM, and the rise of its similarity (Fig. 1 a vs b, Fig. 6d)

# %%
tf_ufm_rows = []
for name in datasets:
    tf_hist, s = runs[name, "TF"].history, runs[name, "TF"].series
    rep = similarity_with_chance(tf_hist.H[-1], ufm_runs[name].H[-1], draws=chance_draws, seed=seed,
                                 untrained=tf_hist.at_initialization()[1])
    out, out_off = compare_similarity(sims[f"tf_vs_ufm_{name}"], rep)
    rise = s.sim_H_proxy[-1] - s.sim_H_proxy[0]
    cols = tf_hist.meta.get("snapshot_contexts")
    S_t = (refs[name].restrict(cols) if cols is not None else refs[name]).S_tilde
    rise_ctrl = (shuffled_sim(tf_hist.H[-1], S_t, draws=chance_draws, seed=seed)[0]  # same permutations at
                 - shuffled_sim(tf_hist.H[0], S_t, draws=chance_draws, seed=seed)[0])  # both ends (same seed)
    out_rise = claims[f"rise_{name}"].judge(rise, note=f"{s.sim_H_proxy[0]:.3f} -> {s.sim_H_proxy[-1]:.3f}",
                                            control=float(rise_ctrl))
    tf_ufm_rows.append({"dataset": name, **rep.row("sim(H_TF, H_UFM)"),
                        "outcome": f"{out} / {out_off} (off-diag.)", "sim(H_0, S~)": s.sim_H_proxy[0],
                        "sim(H_final, S~)": s.sim_H_proxy[-1], "rise >= 0.1": out_rise})
pd.DataFrame(tf_ufm_rows).set_index("dataset").style.format(
    "{:.3f}", subset=["value", "off-diagonal", "sim(H_0, S~)", "sim(H_final, S~)"])

# %%
claims_table()

# %% [markdown]
# ## What differs from the paper and why
#
# * **Training length and optimizer (cpu profile only).** A few hundred to a thousand steps with a much larger
#   constant learning rate and no weight decay instead of the authors' 30,000 steps and decaying schedule: the CPU
#   budget of the book. The final $\mathrm{CE}-\mathcal H$ of each run is in the table above (the authors' run ends below
#   $10^{-4}$). The paper-profile table at the end of the page shows what the longer schedule changes: the
#   projection on $\mathcal F$ ends much closer to $\boldsymbol L^{\rm in}$ there, but rule (ii) of claim 3 deviates
#   at both profiles for the same three networks.
# * **Data.** Our Simplified TinyStories has $m=${glue:text}`a06_sts_m`, $V=${glue:text}`a06_sts_V` (paper 403, 104)
#   because the authors' text excerpt is not available; the recipe (WordNet step included) is the same. The Synthetic
#   entropy differs ({glue:text}`a06_syn_H:.4f` vs the paper's 1.0166, chapter a01).
# * **Metrics.** $\operatorname{sim}$ uses `ddof=0` throughout (the authors' code mixes ddof 0 and 1; the difference
#   is below $1/N$). In Fig. 6(d) we compare with $\widetilde{\boldsymbol S}$ as the caption says (one of the
#   authors' plotting functions actually loads $\boldsymbol L^{\rm mm}$ there).
# * **Models.** No output bias in the LSTM (the authors' `nn.Linear` has one) so that $\boldsymbol L=\boldsymbol W\boldsymbol H$
#   exactly; the authors' plotting script instantiates an 8-layer TF with an extra pre-output layer while loading
#   results named "4 layer" — we follow the paper's text (4 layers).
# * **$\boldsymbol L^{\rm mm}$** comes from a certified first-order solver instead of SCS (same program; the
#   duality gap is certified below $10^{-6}$).

# %%
cpu_total = run.cpu_elapsed()
wall_total = run.elapsed()
print(f"chapter: {wall_total:.1f} s wall, {cpu_total:.1f} s CPU (this process); training CPU per run: "
      + ", ".join(f"{n} {m} {r.cpu_seconds:.1f} s" for (n, m), r in runs.items()))
for (n, m), r in runs.items():  # the wall time its training took, from the checkpoint (a reload costs ~0 s)
    record(f"a06_train_wall_{n}_{m}".lower(), r.train_seconds, tol=float("inf"))
print("training wall time per run (from its checkpoint, whichever run trained it): "
      + ", ".join(f"{n} {m} {r.train_seconds:.0f} s" for (n, m), r in runs.items()))

# %% [markdown]
# ## The paper profile, recorded
#
# The book builds this page at the `cpu` profile. A run of the `paper` profile (the sizes and steps of
# `notebooks/a06_transformer_lstm.paper.yaml`) through the sweep runner commits its recorded values, claims and checks under
# `results/sweeps/a06-paper/` with their provenance (commit, machine, date, wall time), and they stand below
# beside this run's values. The claims are judged by the same pre-registered rules;
# where a profile sets its own tolerance, that tolerance is a parameter of the profile. A committed table
# whose producing code has changed since is marked STALE, with the command that refreshes it.
#
# **Committed for both datasets.** The paper profile trains two networks and an NTP-UFM per dataset for the
# paper's 30,000 steps each, one sweep point per dataset (parameter `dataset`), on the 2-core CPU of this
# project with one torch thread per run. The Synthetic point takes minutes. The Simplified TinyStories
# transformer sees many more contexts per step: it took hours of CPU, more than one sitting of this project,
# so it was trained across sittings, each resuming from the last checkpoint (a resumed run ends bit-identical
# to an uninterrupted one: `tests/test_train.py` kills a training process with SIGKILL at a random step, in
# the middle of a step or of writing a checkpoint, reruns it and compares its end with an uninterrupted
# run's, bit for bit). The wall time each network's training took, summed over its sittings, comes from its checkpoint (the `a06_train_wall_*` rows below).
# `make paper-gpu` runs both points on a CUDA machine and publishes the table; on a CPU,
# `python -m ntputils.book sweep a06 --profile paper -p dataset=Synthetic,STS -p seed=0 --name a06-paper` does
# the same (an interrupted point resumes from its last checkpoints while `.cache/runs/` survives; a checkpoint
# written by other training code is refused).

# %%
from ntputils.chapter import (
    current_record,  # noqa: E402
    show_paper_profile,  # noqa: E402
)

paper_view = show_paper_profile("a06", current_record(), profile)
