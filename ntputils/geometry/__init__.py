"""What the data predicts: S~, the subspace F and P_F, L^in, L^mm (the NTP-SVM) and concepts (SVD of S~).

Paper A sec. 3-4 (Eqs. for S~, L^in, the NTP-SVM), paper B Eqs. 2-3 (concepts). Imports only
:mod:`ntputils.data`, :mod:`ntputils.device`, :mod:`ntputils.paths` and :mod:`ntputils.hashing`.
``L^mm`` has one entry point, :func:`max_margin_logits` (:mod:`ntputils.geometry.maxmargin`), one
result type, :class:`MaxMarginSolution`, and one disk cache, :func:`max_margin_cached`; the ADMM
solver behind ``solver="fast"`` is :mod:`ntputils.geometry.maxmargin_admm`.
"""

from ntputils.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (see ntputils.lazy)
_LAZY = {
    "centered_support": "ntputils.geometry.logits",
    "concepts": "ntputils.geometry.logits",
    "constraint_violations": "ntputils.geometry.logits",
    "fix_signs": "ntputils.geometry.logits",
    "in_support_logits": "ntputils.geometry.logits",
    "margin_violation": "ntputils.geometry.logits",
    "mm_embeddings": "ntputils.geometry.logits",
    "nuclear_norm": "ntputils.geometry.logits",
    "project_F": "ntputils.geometry.logits",
    "svd_factors": "ntputils.geometry.logits",
    "MAX_MARGIN_SOLVERS": "ntputils.geometry.maxmargin",
    "MaxMarginSolution": "ntputils.geometry.maxmargin",
    "max_margin_cached": "ntputils.geometry.maxmargin",
    "max_margin_logits": "ntputils.geometry.maxmargin",
    "support_key": "ntputils.geometry.maxmargin",
}

__all__ = [
    "MAX_MARGIN_SOLVERS",
    "MaxMarginSolution",
    "centered_support",
    "concepts",
    "constraint_violations",
    "fix_signs",
    "in_support_logits",
    "margin_violation",
    "max_margin_cached",
    "max_margin_logits",
    "mm_embeddings",
    "nuclear_norm",
    "project_F",
    "support_key",
    "svd_factors",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
