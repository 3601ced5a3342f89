"""ntputils: the helper package of the NTP Geometry Book.

Small modules, one concern each (see ``book/api.md`` for the formula each function computes):

* :mod:`ntputils.data`      -- NTP training data as a sparse V x m count matrix (``NTPData``).
* :mod:`ntputils.geometry`  -- S~, L^in, P_F, L^mm (nuclear-norm NTP-SVM), SVD factors, concepts.
* :mod:`ntputils.metrics`   -- corr(.), sim(.,.), normalized distances.
* :mod:`ntputils.ufm`       -- NTP-UFM training and the nuclear-norm regularization path.
* :mod:`ntputils.dynamics`  -- closed-form square-loss dynamics (Saxe et al.).
* :mod:`ntputils.synthetic` -- STEP-imbalanced and random support matrices.
* :mod:`ntputils.mode_dynamics` -- singular-value curves, learning times, 1/sigma fits.
* :mod:`ntputils.concept_analysis` -- orthant clusters, typicality, concept representations.
* :mod:`ntputils.semantics` -- word clouds, cluster purity against lexical classes and random baselines.
* :mod:`ntputils.history`   -- the snapshot format shared by UFM and network training.
* :mod:`ntputils.ufm_metrics` -- the metric series of paper A Fig. 6 from a History; cached L^mm.
* :mod:`ntputils.plots`     -- labelled heatmaps, Fig. 1/4 grids and Fig. 6 panels.
* :mod:`ntputils.lmm_fast`  -- a fast, certified first-order solver for L^mm (CPU or CUDA).
* :mod:`ntputils.spectral`  -- top-k SVD of S~ from sparse S (implicit centering), the sign rule.
* :mod:`ntputils.corpora`   -- the papers' datasets (Synthetic, Simplified TinyStories, organism, ...).
* :mod:`ntputils.models`    -- decoder-only transformer, LSTM and CNN with a common interface.
* :mod:`ntputils.train`     -- the one training loop (AdamW, schedules, snapshots, resume).
* :mod:`ntputils.pretrained` -- GPT-2 loading and its offline fallback.
* :mod:`ntputils.runtime`   -- chapter set-up (profiles, seeds, device) and check cells.
* :mod:`ntputils.paths`     -- where data and caches live.
"""

__version__ = "0.1.0"
