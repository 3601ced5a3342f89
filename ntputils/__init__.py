"""ntputils: the helper package of the NTP Geometry Book, in layers that follow the data flow.

Each layer imports only the layers below it (enforced by ``lint-imports``, see ``.importlinter``):

* :mod:`ntputils.chapter`  -- what a chapter imports: set-up (parameters, seeds, device, threads, timer),
  checks, pre-registered claims, recorded values; its parameter contract is shared with the runner.
* :mod:`ntputils.plots`    -- every figure-drawing helper of both papers.
* :mod:`ntputils.analysis` -- metrics, convergence series (paper A Fig. 6), learning dynamics
  (paper B Prop. 1), concepts/orthants/typicality, purity.
* :mod:`ntputils.training` -- NTP-UFM, networks (``models/``), the training loop, pretrained loaders.
* :mod:`ntputils.geometry` -- S~, F, P_F, L^in, L^mm (NTP-SVM), concepts (SVD of S~).
* :mod:`ntputils.data`     -- NTP data, synthetic supports, the papers' corpora.
* :mod:`ntputils.device`, :mod:`ntputils.paths` -- the bottom: device/seeds/threads, data and cache
  folders;
  :mod:`ntputils.lazy` makes the subpackages' re-exports lazy (a name imports only its own module).

The book runner :mod:`ntputils.book` (``python -m ntputils.book``) imports none of the math layers and
is imported by none of them. ``book/notation.md`` lists every public function with its formula.
"""

__version__ = "0.1.0"
