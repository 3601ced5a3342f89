"""What the learned geometry means: metrics (single and batched), convergence series (paper A Fig. 6),
learning dynamics (paper B Prop. 1), concepts/orthants/typicality and purity (paper B sec. 4-5).
"""

from ntputils.analysis.dynamics import (
    aligned_init,
    half_time,
    learning_times,
    saxe_factors,
    saxe_logits,
    saxe_singular_values,
)
from ntputils.analysis.metrics import (
    SIM_C,
    corr,
    gram_distance,
    group_cosine_stats,
    normalized_distance,
    sim,
    structural_similarity,
)

__all__ = [
    "aligned_init",
    "half_time",
    "learning_times",
    "saxe_factors",
    "saxe_logits",
    "saxe_singular_values",
    "SIM_C",
    "corr",
    "gram_distance",
    "group_cosine_stats",
    "normalized_distance",
    "sim",
    "structural_similarity",
]
