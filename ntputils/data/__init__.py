"""What the text is: NTP data (contexts, next-token distributions, supports), synthetic supports, corpora.

The bottom math layer (``data`` < ``geometry`` < ``training`` < ``analysis`` < ``plots``): it imports
no other layer. Real corpora live in :mod:`ntputils.data.corpora` (imported on demand).
"""

from ntputils.data.ntp import OOV_POLICIES, NTPData, from_counts, from_pairs, from_sequences
from ntputils.data.synthetic import (
    all_subsets_support,
    one_hot_balanced_support,
    random_ntp_data,
    random_supports,
    step_closed_form,
    step_imbalanced_support,
    step_weights,
)

__all__ = [
    "OOV_POLICIES",
    "NTPData",
    "from_counts",
    "from_pairs",
    "from_sequences",
    "all_subsets_support",
    "one_hot_balanced_support",
    "random_ntp_data",
    "random_supports",
    "step_closed_form",
    "step_imbalanced_support",
    "step_weights",
]
