"""What the text is: NTP data (contexts, next-token distributions, supports), synthetic supports, corpora.

The bottom math layer (``data`` < ``geometry`` < ``training`` < ``analysis`` < ``plots``): it imports
no other layer. Real corpora live in :mod:`ntputils.data.corpora` (imported on demand).
"""

from ntputils.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (see ntputils.lazy)
_LAZY = {
    "OOV_POLICIES": "ntputils.data.ntp",
    "NTPData": "ntputils.data.ntp",
    "from_counts": "ntputils.data.ntp",
    "from_pairs": "ntputils.data.ntp",
    "from_sequences": "ntputils.data.ntp",
    "validate_support": "ntputils.data.ntp",
    "all_subsets_support": "ntputils.data.synthetic",
    "one_hot_balanced_support": "ntputils.data.synthetic",
    "random_ntp_data": "ntputils.data.synthetic",
    "random_supports": "ntputils.data.synthetic",
    "step_closed_form": "ntputils.data.synthetic",
    "step_imbalanced_support": "ntputils.data.synthetic",
    "step_weights": "ntputils.data.synthetic",
    "zipf_supports": "ntputils.data.synthetic",
}

__all__ = [
    "OOV_POLICIES",
    "NTPData",
    "from_counts",
    "from_pairs",
    "from_sequences",
    "validate_support",
    "all_subsets_support",
    "one_hot_balanced_support",
    "random_ntp_data",
    "random_supports",
    "step_closed_form",
    "step_imbalanced_support",
    "step_weights",
    "zipf_supports",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
