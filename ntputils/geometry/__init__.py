"""What the data predicts: S~, the subspace F and P_F, L^in, L^mm (the NTP-SVM) and concepts (SVD of S~).

Paper A sec. 3-4 (Eqs. for S~, L^in, the NTP-SVM), paper B Eqs. 2-3 (concepts). Imports only
:mod:`ntputils.data` and :mod:`ntputils.device`.
"""

from ntputils.geometry.logits import (
    MAX_MARGIN_SOLVERS,
    MaxMarginResult,
    centered_support,
    concepts,
    fix_signs,
    in_support_logits,
    margin_violation,
    max_margin_logits,
    mm_embeddings,
    nuclear_norm,
    project_F,
    svd_factors,
)

__all__ = [
    "MAX_MARGIN_SOLVERS",
    "MaxMarginResult",
    "centered_support",
    "concepts",
    "fix_signs",
    "in_support_logits",
    "margin_violation",
    "max_margin_logits",
    "mm_embeddings",
    "nuclear_norm",
    "project_F",
    "svd_factors",
]
