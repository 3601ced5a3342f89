"""What the learned geometry means: metrics (single and batched, :mod:`~ntputils.analysis.metrics`),
convergence series (paper A Fig. 6, :mod:`~ntputils.analysis.convergence`), network runs
(:mod:`~ntputils.analysis.network_runs`), the rate of learning (paper B Prop. 1,
:mod:`~ntputils.analysis.dynamics`), confusion during training (paper B Figs. 3, 9,
:mod:`~ntputils.analysis.confusion`), concepts/orthants/typicality (paper B sec. 4, App. F.2,
:mod:`~ntputils.analysis.concepts`), cluster purity (paper B sec. 5,
:mod:`~ntputils.analysis.purity`) and the chance levels of similarity claims
(:mod:`~ntputils.analysis.baselines`).
"""

from ntputils.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (see ntputils.lazy)
_LAZY = {
    "offdiagonal_sim": "ntputils.analysis.baselines",
    "random_sim": "ntputils.analysis.baselines",
    "shuffled_sim": "ntputils.analysis.baselines",
    "similarity_with_chance": "ntputils.analysis.baselines",
    "aligned_init": "ntputils.analysis.dynamics",
    "half_time": "ntputils.analysis.dynamics",
    "learning_times": "ntputils.analysis.dynamics",
    "predicted_learning_times": "ntputils.analysis.dynamics",
    "saxe_factors": "ntputils.analysis.dynamics",
    "saxe_logits": "ntputils.analysis.dynamics",
    "saxe_singular_values": "ntputils.analysis.dynamics",
    "SIM_C": "ntputils.analysis.metrics",
    "corr": "ntputils.analysis.metrics",
    "gram_distance": "ntputils.analysis.metrics",
    "group_contrast": "ntputils.analysis.metrics",
    "group_cosine_stats": "ntputils.analysis.metrics",
    "normalized_distance": "ntputils.analysis.metrics",
    "sim": "ntputils.analysis.metrics",
    "structural_similarity": "ntputils.analysis.metrics",
}

__all__ = [
    "offdiagonal_sim",
    "random_sim",
    "shuffled_sim",
    "similarity_with_chance",
    "aligned_init",
    "half_time",
    "learning_times",
    "predicted_learning_times",
    "saxe_factors",
    "saxe_logits",
    "saxe_singular_values",
    "SIM_C",
    "corr",
    "gram_distance",
    "group_contrast",
    "group_cosine_stats",
    "normalized_distance",
    "sim",
    "structural_similarity",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
