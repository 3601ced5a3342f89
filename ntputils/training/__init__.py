"""How embeddings are learned: NTP-UFM (paper A sec. 2), networks (``models/``), the training loop, run
history and pretrained-model loaders. Imports :mod:`ntputils.data`, :mod:`ntputils.geometry` and
:mod:`ntputils.device` only.
"""
