"""Sweeps and committed tables: a chapter over many parameter values, and what becomes of the points.

Each point runs through the book runner's one executor (:func:`ntputils.book.execute.run_papermill`) on
Dask workers: a LocalCluster, a running scheduler or SLURM jobs (:mod:`~ntputils.sweeps.cluster`, the only
module that talks to Dask). The points live in ``sweeps/NAME/`` (:mod:`~ntputils.sweeps.store`); a table
of them is published to ``results/sweeps/NAME/`` (:mod:`~ntputils.sweeps.table`), re-certified under new
code (:mod:`~ntputils.sweeps.recertify`) and measured across CPU code paths
(:mod:`~ntputils.sweeps.spread`). Commands: ``sweep``, ``sweep-table``, ``sweep-status``,
``sweep-report``, ``recertify``, ``spread`` (:mod:`ntputils.cli`).
"""
