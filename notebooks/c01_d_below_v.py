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
# # Beyond the paper: embeddings smaller than the vocabulary
#
# Paper A {cite}`zhao2024implicit` analyses the NTP unconstrained-features model with an embedding
# dimension $d\ge V$: then $\boldsymbol L=\boldsymbol W\boldsymbol H$ can be any $V\times m$ matrix, and
# as CE $\to\mathcal H$ the logits align in direction with the max-margin logits $\boldsymbol L^{\rm mm}$
# (whose SVD factors $\boldsymbol W^{\rm mm},\boldsymbol H^{\rm mm}$ give the geometry of words and
# contexts). Its reviewers called $d\ge V$ restrictive: real models have $d\ll V$. Paper B
# {cite}`zhao2025semantics` predicts what happens below: gradient descent learns the singular factors of
# the centered support matrix $\widetilde{\boldsymbol S}$ in the order of their singular values, so a
# model with $d<V$ should hold the **top-$d$ factors**, i.e. the geometry of the rank-$d$ truncation
# $\widetilde{\boldsymbol S}_d$ rather than of $\widetilde{\boldsymbol S}$.
#
# This chapter is not a reproduction: neither paper sweeps $d$. One run of the page trains NTP-UFM
# (the training recipe of the a05 chapter) at one $(\text{dataset}, d, \text{seed})$; the sweep runner
# (`python -m ntputils.book sweep`, see the README) ran the same page over
# $d\in\{2,4,\dots,256\}$ and seeds $\{0,\dots,4\}$ on both of paper A's datasets, and the page renders that committed
# table. Nothing below the table is re-run by the book build.
#
# **What we measure per run** (all at the end of training): CE $-\,\mathcal H$; `sim` (paper A Fig. 6d-e:
# the structural similarity of the column-correlation matrices) of $\boldsymbol H$ and $\boldsymbol W^\top$
# to the theory $\boldsymbol H^{\rm mm},\boldsymbol W^{\rm mm\top}$ and to the proxy
# $\widetilde{\boldsymbol S},\widetilde{\boldsymbol S}^\top$, each with its **off-diagonal** value (the
# diagonals are 1 for every matrix) and its two baselines: the **chance level** (`draws` Gaussian matrices of the
# same shape) and the **untrained** value (the same model at step 0, before any update); a claim about a
# learned matrix is judged against the larger of the two (the rule of chapters a05 and a06);
# and `sim` to the rank-$d$ truncations, each compared as its full matrix is: to the top-$d$ SVD factors
# $\boldsymbol H^{\rm mm}_d,\boldsymbol W^{\rm mm}_d$ of $\boldsymbol L^{\rm mm}$ (as to $\boldsymbol H^{\rm mm}$,
# $\boldsymbol W^{\rm mm}$) and to the matrix $\widetilde{\boldsymbol S}_d$ itself (as to $\widetilde{\boldsymbol S}$);
# for $d\ge$ rank they equal the full ones.

# %%
LIMITS = {"dataset": {"synthetic", "sts"}, "model": {"ufm", "transformer"}, "d": (1, 4096), "steps": (1, None),
          "draws": (2, 1000), "tf_steps": (1, None)}

# %% tags=["parameters"]
profile = "cpu"  # these values; "paper": the values of c01_d_below_v.paper.yaml
seed = 0         # seeds random, numpy and torch
device = "auto"  # "auto" (CUDA when present, else CPU), "cpu" or "cuda"
dataset = "sts"  # "synthetic" (paper A's Synthetic) or "sts" (Simplified TinyStories)
model = "ufm"    # "ufm" (NTP-UFM, free W and H) or "transformer" (the a06 transformer, decoder W)
d = 16           # embedding dimension (a05: 128 > V)
steps = 2000     # full-batch AdamW steps
lr = 1e-2        # initial learning rate
milestones = [1000, 1500]  # steps at which the learning rate is multiplied by gamma
gamma = 0.4      # learning-rate decay factor
weight_decay = 1e-6  # AdamW (decoupled) weight decay
init_scale = 0.1  # std of the i.i.d. normal initialization of W and H
draws = 20       # random matrices per chance level
tf_layers = 4    # transformer layers (model transformer; a06: 4)
n_heads = 6      # transformer heads (head width 2*floor(d/n_heads/2), at least 2)
tf_steps = 1000  # transformer full-batch AdamW steps (constant learning rate)
tf_lr = 2e-3     # transformer learning rate

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import display

from ntputils.analysis.baselines import similarity_with_chance
from ntputils.analysis.convergence import GeometryReference
from ntputils.analysis.metrics import normalized_distance
from ntputils.analysis.network_runs import train_and_compare
from ntputils.chapter import (
    ParameterError,
    at_least,
    at_most,
    check,
    claims_table,
    compare_similarity,
    preregister,
    preregister_similarity,
    record,
    setup_chapter,
)
from ntputils.data.corpora import paper_a_synthetic, paper_a_tinystories
from ntputils.geometry import max_margin_cached, mm_embeddings
from ntputils.training import ufm

run = setup_chapter(globals(), torch_threads=lambda device: 1 if device == "cpu" else None)
for _name in ("dataset", "model"):
    if globals()[_name] not in LIMITS[_name]:
        raise ParameterError(f"{_name} must be one of {sorted(LIMITS[_name])}, got {globals()[_name]!r}")

# %% [markdown]
# ## The data, the theory and the proxy, and their rank-$d$ truncations

# %%
data = {"synthetic": paper_a_synthetic, "sts": paper_a_tinystories}[dataset]()
L_mm, lmm_info = max_margin_cached(data.S, solver="fast", progress=False)
ref = GeometryReference.from_data(data, L_mm)
W_st, H_st = mm_embeddings(ref.S_tilde)  # S~ = W_st H_st, factors U Sigma^1/2, Sigma^1/2 V^T
rank_st, rank_mm = H_st.shape[0], ref.H_mm.shape[0]
k = min(d, rank_mm)
k_st = min(d, rank_st)
H_mm_d, W_mm_d = ref.H_mm[:k], ref.W_mm[:, :k]
H_st_d, W_st_d = H_st[:k_st], W_st[:, :k_st]
U, sv, Vt = np.linalg.svd(ref.S_tilde)
best_d = (U[:, :k_st] * sv[:k_st]) @ Vt[:k_st]  # the best rank-d approximation (Eckart-Young)
err = float(np.linalg.norm(W_st_d @ H_st_d - best_d) / np.linalg.norm(best_d))
S_d = best_d  # the proxy's rank-d truncation, compared as S~ itself is (columns of the V x m matrix)
print(f"{dataset}: V = {data.V}, m = {data.m}, H = {data.entropy:.4f}, rank S~ = {rank_st}, "
      f"rank L^mm = {rank_mm} (certified rel. gap {lmm_info['rel_gap']:.1e}); this run: d = {d}")

# %%
check("the rank-d factors of S~ multiply to its truncated SVD", err < 1e-10, measured=err, tol=1e-10)
if d >= rank_st:
    check("for d >= rank S~ the truncation is S~ itself", np.allclose(S_d, ref.S_tilde), sanity=True)
record("V", int(data.V))
record("m", int(data.m))
record("rank_S_tilde", int(rank_st))
record("rank_L_mm", int(rank_mm))
claims_table()

# %% [markdown]
# ## Pre-registered rules (fixed before any run of the sweep)
#
# **Per run** (this page's run and every point of the sweep):
#
# * (R1) *fit*: CE $-\,\mathcal H\le10^{-3}$ at the end (the rule of chapter a05).
# * (R2) *theory geometry*: the off-diagonal `sim` of $\boldsymbol H$ to $\boldsymbol H^{\rm mm}$ and of
#   $\boldsymbol W^\top$ to $\boldsymbol W^{\rm mm\top}$, each at least 0.1 above its own baseline, the larger
#   of its Gaussian chance level and its untrained value (the margin of a05); the values with the diagonals
#   are judged the same way.
# * (R3) *top-$d$ factors* (paper B), only for $d<\mathrm{rank}\,\widetilde{\boldsymbol S}$: the off-diagonal
#   `sim` of $\boldsymbol H$ to $\widetilde{\boldsymbol S}_d$ minus that to $\widetilde{\boldsymbol S}$ is at
#   least 0 (the run is closer to the truncation than to the full proxy). For $d\ge$ rank the two
#   coincide and the rule is `not run`.
#
# **Per dataset, over the sweep** ("the geometry holds at $d$" = R1 for every seed and R2 for the mean
# over seeds of the off-diagonal values against the larger of the mean chance level and the mean untrained
# value; a committed table that predates the untrained baseline is judged against the chance level only,
# and the page says so):
#
# * (S1) the geometry holds at every swept $d\ge V$ (paper A's regime): share of those $d$ at least 1.
# * (S2) the geometry holds at every swept $d$ with $\mathrm{rank}\,\widetilde{\boldsymbol S}\le d<V$
#   (our conjecture: the rank, not $V$, is what matters): share at least 1.
# * (S3) R3, on the mean over seeds, at every swept $d<\mathrm{rank}\,\widetilde{\boldsymbol S}$: share at least 1.
#
# A sweep-level claim reads `not run` when the committed table is missing or stale.
#
# **Negative controls** (registered with the rules above, which are unchanged, before any run that judges
# them; each is judged by its claim's own rule, and a claim whose control passes too reads *cannot fail*):
#
# * R1 and (T2 below): the **untrained** model, CE $-\,\mathcal H$ at step 0 of the same run.
# * R3 and S3: the untrained model, off-diagonal `sim` of $\boldsymbol H_0$ to $\widetilde{\boldsymbol S}_d$
#   minus that to $\widetilde{\boldsymbol S}$.
# * S1, S2 and (T1 below): the trained runs with the **theory's pairing broken**: R2 judged on the
#   shuffled-column `sim` ($\boldsymbol H$'s and $\boldsymbol W^\top$'s columns permuted against those of
#   $\boldsymbol H^{\rm mm}$ and $\boldsymbol W^{\rm mm\top}$, same spectrum; the control of every similarity
#   claim of the book), against the same baselines, with R1 as measured. It asks whether the rule would
#   pass a run that fits but whose context and word geometry is not the theory's.

# %%
UNTRAINED = "the same model untrained (step 0)"
PAIRING_BROKEN = "the trained runs with H's and W^T's columns shuffled against the theory's (R2), R1 as measured"
claims = preregister({
    "c01_ce": ("this run: final CE - H", at_most(1e-3, "R1, the a05 rule"), None, "not studied below d = V"),
    "c01_topd": ("this run: off-diag sim(H, S~_d) - off-diag sim(H, S~), d < rank S~",
                 at_least(0.0, "R3, paper B: top-d factors first"), None, "paper B: top-d singular factors first"),
}, controls={"c01_ce": UNTRAINED, "c01_topd": UNTRAINED})
sim_claims = preregister_similarity({
    "c01_sim_H_mm": ("this run: sim(H, H^mm) above chance (R2)", 0.1, None, "paper A (d >= V): high"),
    "c01_sim_W_mm": ("this run: sim(W^T, W^mm^T) above chance (R2)", 0.1, None, "paper A (d >= V): high"),
})
BEYOND = "not studied (beyond the paper)"  # the paper's value of every sweep claim
SWEEP_CLAIMS = {}
for ds in ("synthetic", "sts"):
    SWEEP_CLAIMS.update({
        f"c01_{ds}_S1": (f"{ds}: share of swept d >= V where the geometry holds", at_least(1.0, "S1"), None,
                         BEYOND),
        f"c01_{ds}_S2": (f"{ds}: share of swept rank(S~) <= d < V where the geometry holds", at_least(1.0, "S2"),
                         None, BEYOND),
        f"c01_{ds}_S3": (f"{ds}: share of swept d < rank(S~) where R3 holds (seed mean)", at_least(1.0, "S3"),
                         None, BEYOND),
    })
sweep_claims = preregister(SWEEP_CLAIMS, controls={
    key: UNTRAINED if key.endswith("_S3") else PAIRING_BROKEN for key in SWEEP_CLAIMS})

# %% [markdown]
# ## This page's run

# %%
if model == "ufm":
    hist = ufm.train(data, d=d, loss="ce", steps=steps, lr=lr, optimizer="adamw",
                     weight_decay=weight_decay, milestones=milestones, gamma=gamma,
                     init_scale=init_scale, dtype=torch.float64, device=run.device, log_steps=20,
                     seed=seed, progress=False)
else:  # the a06 transformer: H = last-layer context embeddings, W = decoder (no positional encoding)
    hist = train_and_compare(
        "transformer", data, model_config=dict(d=d, n_layers=tf_layers, n_heads=n_heads,
                                               pos_encoding="none"),
        train_config=dict(steps=tf_steps, lr=tf_lr, weight_decay=weight_decay, schedule="constant",
                          log_steps=20),
        seed=seed, label=f"c01-{dataset}-tf", device=run.device, progress=False).history
W, H = (np.asarray(hist.W[-1], dtype=np.float64), np.asarray(hist.H[-1], dtype=np.float64))
W0, H0 = (np.asarray(M, dtype=np.float64) for M in hist.at_initialization())  # the same model at step 0
ce_minus_H = float(hist.final["ce_minus_H"])
ce_steps, ce_curve = hist.curve("ce_minus_H")
if ce_steps[0] != 0:
    raise RuntimeError(f"the run logged CE - H first at step {ce_steps[0]}, not at step 0 (R1's control)")
untrained_ce_minus_H = float(ce_curve[0])  # R1's negative control: the same model before any update
pairs = {"H_mm": (H, ref.H_mm, H0), "W_mm": (W.T, ref.W_mm.T, W0.T), "H_proxy": (H, ref.S_tilde, H0),
         "W_proxy": (W.T, ref.S_tilde.T, W0.T), "H_mm_d": (H, H_mm_d, H0), "W_mm_d": (W.T, W_mm_d.T, W0.T),
         "H_proxy_d": (H, S_d, H0), "W_proxy_d": (W.T, S_d.T, W0.T)}
reps = {name: similarity_with_chance(A, B, draws=draws, seed=seed, untrained=A0)
        for name, (A, B, A0) in pairs.items()}
topd = reps["H_proxy_d"].offdiagonal - reps["H_proxy"].offdiagonal
untrained_topd = reps["H_proxy_d"].untrained_offdiagonal - reps["H_proxy"].untrained_offdiagonal  # R3's control
pd.DataFrame([rep.row(name) for name, rep in reps.items()]).set_index("claim")

# %%
record("ce_minus_H", ce_minus_H)
record("untrained_ce_minus_H", untrained_ce_minus_H)
record("dist_L_mm", normalized_distance(W @ H, ref.L_mm))
record("dist_L_mm_d", normalized_distance(W @ H, W_mm_d @ H_mm_d))
record("seconds_train", float(hist.meta["seconds"]), tol=math.inf)  # a wall time: any value recertifies
for name, rep in reps.items():
    record(f"sim_{name}", rep.value)
    record(f"sim_{name}_offdiag", rep.offdiagonal)
    record(f"chance_{name}", rep.random_mean)
    record(f"chance_{name}_offdiag", rep.random_offdiagonal_mean)
    record(f"untrained_{name}", rep.untrained)
    record(f"untrained_{name}_offdiag", rep.untrained_offdiagonal)
    record(f"control_{name}", rep.control.value)  # the shuffled-column control (pairs mismatched)
    record(f"control_{name}_offdiag", rep.control.offdiagonal)
record("topd_gain_offdiag", topd)
record("untrained_topd_gain_offdiag", untrained_topd)

claims.c01_ce.judge(ce_minus_H, control=untrained_ce_minus_H)
claims.c01_topd.judge(topd if d < rank_st else None, control=untrained_topd if d < rank_st else None)
compare_similarity(sim_claims.c01_sim_H_mm, reps["H_mm"])
compare_similarity(sim_claims.c01_sim_W_mm, reps["W_mm"])
claims_table()

# %% [markdown]
# ## The sweep over $d$ and seeds, on both datasets
#
# The table below is the committed result of
# `python -m ntputils.book sweep c01 -p dataset=synthetic,sts -p d=2,4,8,16,32,64,128,256 -p seed=0:5
# --name d-below-V --workers 2` (cpu profile) followed by `sweep-table d-below-V --publish`. Its
# provenance (commit, machine, date, wall time) is printed with it; if the code of this chapter or of
# the `ntputils` modules it imports changed since, the table is **stale** and the page says so, with the
# command that refreshes it.

# %%
from ntputils.chapter import provenance_text, published, recorded_values  # noqa: E402

try:
    pub = published("d-below-V")
except FileNotFoundError as err:
    pub = None
    print(f"no committed sweep: {err}")
NO_UNTRAINED = ("the committed sweep has no untrained baseline yet: judged against the Gaussian level only; "
                "re-run the sweep to include it")


def has_untrained(table: pd.DataFrame) -> bool:
    """Whether a committed sweep table records the untrained baseline (tables made before it do not)."""
    return "untrained_H_mm_offdiag" in set(table["metric"])


if pub is not None:
    print(provenance_text("d-below-V", pub))
    if not has_untrained(pub["table"]):
        print(NO_UNTRAINED[0].upper() + NO_UNTRAINED[1:] + ".")

# %%
def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of every recorded value, one row per (dataset, d)."""
    wide = recorded_values(table, ["dataset", "d", "seed"])
    return wide.groupby(level=["dataset", "d"]).agg(["mean", "std", "min", "max", "count"])


def baseline(summary: pd.DataFrame, metric: str) -> pd.Series:
    """The level R2 and T1 judge the mean ``sim_<metric>`` against: the larger of the mean Gaussian chance
    level and, when the table records it, the mean untrained value."""
    chance = summary[(f"chance_{metric}", "mean")]
    if (f"untrained_{metric}", "mean") not in summary.columns:
        return chance
    return np.maximum(chance, summary[(f"untrained_{metric}", "mean")])


def theory_above_chance(summary: pd.DataFrame, suffixes: tuple[str, ...], *, measured: str = "sim") -> pd.Series:
    """R2 (and T1) on the seed means: ``<measured>_<name><suffix>`` at least 0.1 above its baseline for
    H^mm and W^mm; ``measured="control"`` judges the shuffled-column control against the same baselines."""
    ok = True
    for name in ("H_mm", "W_mm"):
        for suffix in suffixes:
            ok = ok & (summary[(f"{measured}_{name}{suffix}", "mean")] >= baseline(summary, f"{name}{suffix}") + 0.1)
    return ok


def judge(summary: pd.DataFrame) -> pd.DataFrame:
    """The pre-registered per-(dataset, d) verdicts R1 (every seed), R2 and R3 (seed means), and, where the
    table records them, the same rules on their negative controls (columns ending in "control")."""
    out = pd.DataFrame(index=summary.index)
    out["V"] = summary[("V", "mean")].astype(int)
    out["rank S~"] = summary[("rank_S_tilde", "mean")].astype(int)
    out["seeds"] = summary[("ce_minus_H", "count")].astype(int)
    out["R1 fit"] = summary[("ce_minus_H", "max")] <= 1e-3
    out["R2 theory"] = theory_above_chance(summary, ("", "_offdiag"))
    out["holds"] = out["R1 fit"] & out["R2 theory"]
    out["R3 top-d"] = summary[("topd_gain_offdiag", "mean")] >= 0.0
    if ("control_H_mm", "mean") not in summary.columns:  # a table made before the controls were recorded
        return out
    out["R2 control"] = theory_above_chance(summary, ("", "_offdiag"), measured="control")
    out["holds control"] = out["R1 fit"] & out["R2 control"]
    out["R3 control"] = summary[("untrained_H_proxy_d_offdiag", "mean")] - summary[
        ("untrained_H_proxy_offdiag", "mean")] >= 0.0
    out["R1 control"] = summary[("untrained_ce_minus_H", "max")] <= 1e-3
    return out


def pm(summary: pd.DataFrame, metric: str) -> list[str]:
    """``mean ± std`` over seeds, as text."""
    return [f"{a:.3f} ± {b:.3f}" for a, b in zip(summary[(metric, "mean")], summary[(metric, "std")], strict=True)]


verdicts = None
fresh = pub is not None and not pub["stale"]
if pub is not None:  # a stale table is shown (marked) but judged by no claim
    summary = summarize(pub["table"])
    verdicts = judge(summary)
    shown = pd.DataFrame({
        "CE - H (mean)": summary[("ce_minus_H", "mean")],
        "CE - H (max)": summary[("ce_minus_H", "max")],
        "off-diag sim(H, H^mm)": pm(summary, "sim_H_mm_offdiag"),
        "chance": summary[("chance_H_mm_offdiag", "mean")].round(3),
        "off-diag sim(W^T, W^mm^T)": pm(summary, "sim_W_mm_offdiag"),
        "chance ": summary[("chance_W_mm_offdiag", "mean")].round(3),
        "off-diag sim(H, S~)": summary[("sim_H_proxy_offdiag", "mean")].round(3),
        "off-diag sim(H, S~_d)": summary[("sim_H_proxy_d_offdiag", "mean")].round(3),
        "off-diag sim(H, H^mm_d)": summary[("sim_H_mm_d_offdiag", "mean")].round(3),
    })
    display(pd.concat([shown, verdicts[[c for c in ("R1 fit", "R2 theory", "holds", "R3 top-d", "R1 control",
                                                    "R2 control", "R3 control") if c in verdicts]]], axis=1))

# %% [markdown]
# Mean $\pm$ one standard deviation over the seeds; the dotted vertical lines mark
# $d=\mathrm{rank}\,\widetilde{\boldsymbol S}$ and $d=V$, the dashed grey line the chance level of the
# off-diagonal `sim` (mean over seeds of `draws` random matrices each).

# %% mystnb={"figure": {"caption": "NTP-UFM with the embedding dimension below and above V: fit, theory geometry and proxy geometry over d (beyond the papers).", "name": "fig-c01-sweep"}, "image": {"alt": "Line plots against the embedding dimension d, one row per dataset, with mean and standard deviation over seeds."}}
if verdicts is not None:
    fig, axes = plt.subplots(2, 3, figsize=(12.8, 8.5), squeeze=False)  # 12.8 in: legible inline
    for row, ds in enumerate(("synthetic", "sts")):
        if ds not in summary.index.get_level_values("dataset"):
            continue
        s = summary.loc[ds]
        dd = s.index.to_numpy()
        ax = axes[row, 0]
        ax.errorbar(dd, s[("ce_minus_H", "mean")], yerr=s[("ce_minus_H", "std")], marker="o", capsize=3)
        ax.axhline(1e-3, color="k", lw=0.8, ls="--", label="R1: 1e-3")
        ax.set_yscale("log")
        ax.set_ylabel("CE - H")
        for col, (names, title) in enumerate([
                (("H_mm", "H_mm_d"), "contexts: off-diag sim(H, ·)"),
                (("H_proxy", "H_proxy_d"), "contexts: off-diag sim(H, ·), proxy")], start=1):
            ax = axes[row, col]
            for name, label in zip(names, ("full", "rank-d truncation"), strict=True):
                ax.errorbar(dd, s[(f"sim_{name}_offdiag", "mean")], yerr=s[(f"sim_{name}_offdiag", "std")],
                            marker="o", capsize=3, label=f"{name.split('_')[1]} {label}")
            ax.plot(dd, s[(f"chance_{names[0]}_offdiag", "mean")], color="0.5", ls="--", label="chance")
            ax.set_ylabel(title)
        for ax in axes[row]:
            ax.set_xscale("log", base=2)
            ax.axvline(int(s[("rank_S_tilde", "mean")].iloc[0]), color="tab:red", ls=":", label="d = rank S~")
            ax.axvline(int(s[("V", "mean")].iloc[0]), color="tab:purple", ls=":", label="d = V")
            ax.set_xlabel(f"d ({ds})")
            ax.legend(fontsize=8)
    fig.suptitle("NTP-UFM with d below and above V: fit, theory geometry, proxy geometry"
                 + ("" if fresh else "  [STALE TABLE: the chapter's code changed since the sweep]"),
                 color="black" if fresh else "tab:red")
    fig.tight_layout()
    plt.show()

# %%
for ds in ("synthetic", "sts"):
    shares = dict.fromkeys(("S1", "S2", "S3"))
    control_shares = dict.fromkeys(("S1", "S2", "S3"))
    if fresh and ds in verdicts.index.get_level_values("dataset"):
        v = verdicts.loc[ds]
        dd = v.index.to_numpy()
        masks = {"S1": dd >= v["V"].to_numpy(), "S2": (dd >= v["rank S~"].to_numpy()) & (dd < v["V"].to_numpy()),
                 "S3": dd < v["rank S~"].to_numpy()}
        cols = {"S1": ("holds", "holds control"), "S2": ("holds", "holds control"), "S3": ("R3 top-d", "R3 control")}
        for key, mask in masks.items():
            if mask.any():
                shares[key] = float(v[cols[key][0]].to_numpy()[mask].mean())
                record(f"{ds}_{key}_share", shares[key])
                holds_at = [int(x) for x in dd[mask & v[cols[key][0]].to_numpy()]]
                record(f"{ds}_{key}_d_where_true", holds_at)
                control_shares[key] = record(f"{ds}_{key}_control_share",
                                             float(v[cols[key][1]].to_numpy()[mask].mean()))
    for key, share in shares.items():
        uses_r2 = key in ("S1", "S2") and share is not None and not has_untrained(pub["table"])
        sweep_claims[f"c01_{ds}_{key}"].judge(share, control=control_shares[key],
                                              note=NO_UNTRAINED if uses_r2 else "")
claims_table()

# %% [markdown]
# ## The transformer over $d$ (a committed sweep)
#
# The same page with `model="transformer"` trains the transformer of chapter a06 (no positional encoding,
# `tf_layers` layers, `n_heads` heads, full batch, AdamW at the constant rate `tf_lr` for `tf_steps` steps;
# $\boldsymbol H$ = the last layer's context embeddings, $\boldsymbol W$ = the decoder) and measures exactly
# what it measures for NTP-UFM. The committed table is the result of
# `python -m ntputils.book sweep c01 -p model=transformer -p dataset=synthetic,sts -p d=12,24,48,128
# -p seed=0:3 --name d-below-V-tf --workers 1` and `sweep-table d-below-V-tf --publish`. The values of $d$
# start at the smallest width the six heads allow (a head width of at least two); they fall below the rank
# of $\widetilde{\boldsymbol S}$, between the rank and $V$, and above $V$ on at least one dataset each.
#
# **Rules, fixed before the sweep ran** (per dataset, on the means over seeds):
#
# * (T1) *theory geometry* at every swept $d\ge\mathrm{rank}\,\widetilde{\boldsymbol S}$: the off-diagonal
#   `sim` of $\boldsymbol H$ to $\boldsymbol H^{\rm mm}$ and of $\boldsymbol W^\top$ to
#   $\boldsymbol W^{\rm mm\top}$ at least 0.1 above the larger of chance and the untrained value (R2 above);
#   share of those $d$ at least 1.
# * (T2) *fit* at every swept $d\ge V$: CE $-\,\mathcal H\le10^{-2}$ at every seed (the cpu-profile rule of
#   chapter a06; the cpu budget of steps does not reach the $10^{-3}$ of NTP-UFM); share at least 1.
#
# Their negative controls are those of S1 (for T1: the shuffled-column `sim`, same baselines) and of R1
# (for T2: the untrained transformer's CE $-\,\mathcal H$), registered with the NTP-UFM's above.

# %%
TF_CLAIMS = {}
for ds in ("synthetic", "sts"):
    TF_CLAIMS.update({
        f"c01_tf_{ds}_T1": (f"transformer, {ds}: share of swept d >= rank(S~) where sim to the theory is above "
                            "chance + 0.1", at_least(1.0, "T1"), None, BEYOND),
        f"c01_tf_{ds}_T2": (f"transformer, {ds}: share of swept d >= V where CE - H <= 1e-2 at every seed",
                            at_least(1.0, "T2"), None, BEYOND),
    })
tf_claims = preregister(TF_CLAIMS, controls={
    key: PAIRING_BROKEN if key.endswith("_T1") else UNTRAINED for key in TF_CLAIMS})
try:
    pub_tf = published("d-below-V-tf")
except FileNotFoundError as err:
    pub_tf = None
    print(f"no committed sweep: {err}")
fresh_tf = pub_tf is not None and not pub_tf["stale"]
if pub_tf is not None:
    print(provenance_text("d-below-V-tf", pub_tf))
    if not has_untrained(pub_tf["table"]):
        print(NO_UNTRAINED[0].upper() + NO_UNTRAINED[1:] + ".")
    summary_tf = summarize(pub_tf["table"])
    tf_v = pd.DataFrame(index=summary_tf.index)
    tf_v["V"] = summary_tf[("V", "mean")].astype(int)
    tf_v["rank S~"] = summary_tf[("rank_S_tilde", "mean")].astype(int)
    tf_v["fit (T2)"] = summary_tf[("ce_minus_H", "max")] <= 1e-2
    tf_v["theory (T1)"] = theory_above_chance(summary_tf, ("_offdiag",))
    if ("control_H_mm", "mean") in summary_tf.columns:  # the controls (tables made before them lack them)
        tf_v["T2 control"] = summary_tf[("untrained_ce_minus_H", "max")] <= 1e-2
        tf_v["T1 control"] = theory_above_chance(summary_tf, ("_offdiag",), measured="control")
    display(pd.concat([pd.DataFrame({
        "seeds": summary_tf[("ce_minus_H", "count")].astype(int),
        "CE - H (mean)": summary_tf[("ce_minus_H", "mean")],
        "CE - H (max)": summary_tf[("ce_minus_H", "max")],
        "off-diag sim(H, H^mm)": pm(summary_tf, "sim_H_mm_offdiag"),
        "chance": summary_tf[("chance_H_mm_offdiag", "mean")].round(3),
        "off-diag sim(W^T, W^mm^T)": pm(summary_tf, "sim_W_mm_offdiag"),
        "chance ": summary_tf[("chance_W_mm_offdiag", "mean")].round(3),
        "off-diag sim(H, S~)": summary_tf[("sim_H_proxy_offdiag", "mean")].round(3),
        "off-diag sim(H, S~_d)": summary_tf[("sim_H_proxy_d_offdiag", "mean")].round(3),
    }), tf_v], axis=1))

# %% mystnb={"figure": {"caption": "The a06 transformer over the embedding dimension d: off-diagonal similarity to the theory and the proxy, mean and standard deviation over seeds, beside the NTP-UFM and the chance level (beyond the papers).", "name": "fig-c01-tf"}, "image": {"alt": "Line plots of off-diagonal similarity against the embedding dimension d for the transformer, one panel per dataset."}}
if pub_tf is not None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), squeeze=False)
    for col, ds in enumerate(("synthetic", "sts")):
        ax = axes[0, col]
        if ds not in summary_tf.index.get_level_values("dataset"):
            ax.set_visible(False)
            continue
        s_tf = summary_tf.loc[ds]
        dd = s_tf.index.to_numpy()
        for name, label in (("H_mm", "sim(H, H^mm)"), ("W_mm", "sim(W^T, W^mm^T)"), ("H_proxy", "sim(H, S~)")):
            ax.errorbar(dd, s_tf[(f"sim_{name}_offdiag", "mean")], yerr=s_tf[(f"sim_{name}_offdiag", "std")],
                        marker="o", capsize=3, label=f"transformer: off-diag {label}")
        if "summary" in globals() and ds in summary.index.get_level_values("dataset"):
            s_ufm = summary.loc[ds]
            ax.plot(s_ufm.index, s_ufm[("sim_H_mm_offdiag", "mean")], color="0.3", ls="-.",
                    label="NTP-UFM: off-diag sim(H, H^mm)")
        ax.plot(dd, s_tf[("chance_H_mm_offdiag", "mean")], color="0.5", ls="--", label="chance")
        ax.axvline(int(s_tf[("rank_S_tilde", "mean")].iloc[0]), color="tab:red", ls=":", label="d = rank S~")
        ax.axvline(int(s_tf[("V", "mean")].iloc[0]), color="tab:purple", ls=":", label="d = V")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"d ({ds})")
        ax.set_ylabel("off-diagonal sim")
        ax.legend(fontsize=7)
    fig.suptitle("The a06 transformer over d (mean ± std over seeds)"
                 + ("" if fresh_tf else "  [STALE TABLE: the chapter's code changed since the sweep]"),
                 color="black" if fresh_tf else "tab:red")
    fig.tight_layout()
    plt.show()

# %%
for ds in ("synthetic", "sts"):
    t1_share = t2_share = t1_control = t2_control = None
    if fresh_tf and ds in tf_v.index.get_level_values("dataset"):
        v = tf_v.loc[ds]
        dd = v.index.to_numpy()
        above_rank, above_V = dd >= v["rank S~"].to_numpy(), dd >= v["V"].to_numpy()
        if above_rank.any():
            t1_share = record(f"tf_{ds}_T1_share", float(v["theory (T1)"].to_numpy()[above_rank].mean()))
            t1_control = record(f"tf_{ds}_T1_control_share", float(v["T1 control"].to_numpy()[above_rank].mean()))
        if above_V.any():
            t2_share = record(f"tf_{ds}_T2_share", float(v["fit (T2)"].to_numpy()[above_V].mean()))
            t2_control = record(f"tf_{ds}_T2_control_share", float(v["T2 control"].to_numpy()[above_V].mean()))
    tf_claims[f"c01_tf_{ds}_T1"].judge(t1_share, control=t1_control, note=NO_UNTRAINED if t1_share is not None
                                       and not has_untrained(pub_tf["table"]) else "")
    tf_claims[f"c01_tf_{ds}_T2"].judge(t2_share, control=t2_control, note="the cpu budget of transformer steps")
claims_table()

# %% [markdown]
# ## Where the geometry holds and where it breaks
#
# The sentences below are generated from the committed table by the pre-registered rules above (they
# say nothing when the table is missing or stale). In the NTP-UFM sweep table (section *The sweep over
# $d$ and seeds, on both datasets*), the column "R3 top-d" is only meaningful for
# $d<\mathrm{rank}\,\widetilde{\boldsymbol S}$: for larger $d$ the truncation equals $\widetilde{\boldsymbol S}$,
# the difference is rounding noise of either sign, and no claim uses it.
#
# **Reading R3.** Paper B's statement is about the *order* in which gradient descent picks up the
# singular factors during training; R3 judges the *end* of training, after CE has come within the
# reach of $\mathcal H$ that a rank-$d$ model allows. Where R3 fails, the trained $\boldsymbol H$ is
# closer to the geometry of the full $\widetilde{\boldsymbol S}$ than to its top-$d$ part: the
# end point of a rank-$d$ model is not simply the top-$d$ truncation. A test of the learning order
# itself (`sim` to $\widetilde{\boldsymbol S}_d$ along training) is left for another sweep.

# %%
from IPython.display import Markdown  # noqa: E402

lines = []
if fresh:
    for ds in verdicts.index.get_level_values("dataset").unique():
        v = verdicts.loc[ds]
        dd = v.index.to_numpy()
        V_, r_ = int(v["V"].iloc[0]), int(v["rank S~"].iloc[0])
        holds = [int(x) for x in dd[v["holds"].to_numpy()]]
        fails = {int(x): ", ".join(n for n, ok in (("R1 fit", v.loc[x, "R1 fit"]), ("R2 theory", v.loc[x, "R2 theory"]))
                                   if not ok) for x in dd if not v.loc[x, "holds"]}
        topd = [int(x) for x in dd[(dd < r_) & v["R3 top-d"].to_numpy()]]
        below = [int(x) for x in dd[dd < r_]]
        lines.append(
            f"* **{ds}** (V = {V_}, rank S~ = {r_}): the geometry holds (R1 and R2) at d = {', '.join(map(str, holds)) or 'none'}; "
            f"it breaks at d = {', '.join(f'{x} ({why})' for x, why in fails.items()) or 'none'}. "
            f"Below the rank, the run is closer to the top-d truncation of S~ than to S~ (R3) at d = "
            f"{', '.join(map(str, topd)) or 'none'} of {', '.join(map(str, below)) or 'none'}.")
if fresh_tf:
    for ds in tf_v.index.get_level_values("dataset").unique():
        v = tf_v.loc[ds]
        dd = v.index.to_numpy()
        t1_at = [int(x) for x in dd[v["theory (T1)"].to_numpy()]]
        fit_at = [int(x) for x in dd[v["fit (T2)"].to_numpy()]]
        lines.append(f"* **transformer, {ds}**: its geometry is above chance + 0.1 (T1) at d = {', '.join(map(str, t1_at)) or 'none'}; "
                     f"it fits to CE - H <= 1e-2 at every seed (T2) at d = {', '.join(map(str, fit_at)) or 'none'} "
                     f"(of {', '.join(str(int(x)) for x in dd)}).")
display(Markdown("\n".join(lines) if lines else "*(no current committed sweep table)*"))
