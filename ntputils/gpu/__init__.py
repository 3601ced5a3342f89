"""The GPU machine's path: a bundle made here, one command run there, its rows adopted here.

:mod:`~ntputils.gpu.bundle` writes what the machine's image lacks and prints the command;
:mod:`~ntputils.gpu.device_run` is that command (an in-process executor: the image has no papermill, so
it and what it imports may use only the image's packages and the bundle's wheels, a contract
``tests/test_import_graph.py`` holds); :mod:`~ntputils.gpu.speed` its TF32 and CUDA-graph settings;
:mod:`~ntputils.gpu.adopt` publishes what came back. What a paper run costs is
:mod:`ntputils.book.paper_cost`.
"""
