# The NTP Geometry Book. Two commands (see README.md):
#   make book   create .venv if missing, install the project, execute every changed chapter at the
#               cpu profile (papermill) and build the HTML into _build/html
#   make test   ruff + import layers + prose lint + the fast test suite
#   make lab    JupyterLab on the chapters (jupytext pairing; installs jupyterlab into .venv once)
# Knobs: PROFILE=cpu|paper  JOBS=N  BOOK_ARGS='--only a01 -p steps=100'  PYTHON=python3.11
#        DEVICE_ARGS='a06 --profile paper -p dataset=Synthetic,STS -p seed=0 -p device=cuda --name a06-paper'
#        CHAPTER_TIMEOUT=S (default 900 when CI is set, else none)

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= cpu
# two chapters at a time: each runs one torch thread and, with --jobs 2, one BLAS thread, so two fit two cores
# (measured on a 2-core machine: a01, a02, b01, b03 in 115 s of wall time against 207 s one by one)
JOBS ?= 2
BOOK_ARGS ?=
DEVICE_ARGS ?=
# in CI a hanging chapter fails after 15 minutes instead of eating the whole 90-minute job
CHAPTER_TIMEOUT ?= $(if $(CI),900,)
# re-install only when pyproject.toml changes (stamp named by its hash; no mtimes)
PYPROJECT_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP := $(VENV)/.ntpbook-installed-$(PYPROJECT_HASH)
# a PYTHON given on the command line must exist and be the Python of an existing $(VENV): else the
# install would go on with the venv's own interpreter, and the tables would be judged by another version
ifeq ($(origin PYTHON),command line)
PY_VERSION = import sys; print(*sys.version_info[:2], sep=".")
ASKED_VERSION := $(shell $(PYTHON) -c '$(PY_VERSION)' 2>/dev/null)
ifeq ($(ASKED_VERSION),)
$(error PYTHON=$(PYTHON) does not run: $(shell $(PYTHON) --version 2>&1 | head -1))
endif
VENV_VERSION := $(if $(wildcard $(PY)),$(shell $(PY) -c '$(PY_VERSION)'))
ifneq ($(VENV_VERSION),)
ifneq ($(VENV_VERSION),$(ASKED_VERSION))
$(error PYTHON=$(PYTHON) is Python $(ASKED_VERSION), but $(VENV) was made with Python $(VENV_VERSION): remove $(VENV) first, or give another VENV=folder)
endif
endif
endif

# MPLBACKEND=Agg in the environment silently drops every figure from papermill-run notebooks
unexport MPLBACKEND
export MPLCONFIGDIR ?= $(CURDIR)/.mplconfig
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: book test test-matrix lint pytest slow-test slurm-test browser-test paper-gpu device-bundle install status lab clean help

book: $(STAMP)
	$(PY) -m ntputils.book build --profile $(PROFILE) --jobs $(JOBS) \
	    $(if $(CHAPTER_TIMEOUT),--timeout $(CHAPTER_TIMEOUT)) $(BOOK_ARGS)

test: lint pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache   # the package's layers (.importlinter)
	$(PY) -m ntputils.prose_lint >/dev/null || $(PY) -m ntputils.prose_lint   # no typed number in the prose

# fixed test order here (pytest-randomly is installed for the matrix); 5 = no tests collected
pytest: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not slurm" -p no:randomly || test $$? -eq 5

# the slow tests (real builds, kills, a tiny book through jupyter-book and Chromium): about 2 minutes
slow-test: $(STAMP)
	$(PY) -m pytest -q -m slow -p no:randomly

# sweeps on a real SLURM cluster (tests/test_slurm.py): .ci/slurm-up starts one on this machine
slurm-test: $(STAMP)
	$(PY) -m pytest -q -m slurm -p no:randomly tests/test_slurm.py

# the fast suite under thread counts, random orders, repeats and other BLAS kernels (tests/matrix.py)
test-matrix: $(STAMP)
	$(PY) tests/matrix.py

# the network chapters' paper profiles on a machine with a CUDA GPU, as sweep points (a06: one per
# dataset; checkpointed, a rerun resumes), each published to results/sweeps/ with its provenance
paper-gpu: $(STAMP)
	@$(PY) -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'make paper-gpu: torch sees no CUDA device; install a CUDA build of torch 2.13.0 into $(VENV) first, or use the project GPU machine: make device-bundle')"
	$(PY) -m ntputils.book sweep a06 --profile paper -p dataset=Synthetic,STS -p seed=0 --name a06-paper --workers 2
	$(PY) -m ntputils.book sweep-table a06-paper --publish
	$(PY) -m ntputils.book sweep a07 --profile paper -p seed=0 --name a07-paper --workers 1
	$(PY) -m ntputils.book sweep-table a07-paper --publish

# the project's GPU machine (no papermill, no network): .device/ with the wheels, data and plan of a07's
# paper point, and the one command that runs it there (printed); `ntpbook adopt DIR` publishes what returns
device-bundle: $(STAMP)
	$(PY) -m ntputils.book device-bundle $(DEVICE_ARGS)

browser-test: $(STAMP)
	$(PY) -m tests.browser_check --screenshot a01

status: $(STAMP)
	$(PY) -m ntputils.book status

install: $(STAMP)

# open notebooks/<chapter>.py as a notebook ("Open With > Jupytext Notebook"); jupytext.toml pairs it
# with notebooks/<chapter>.ipynb. JupyterLab is not in .[dev]: installed here on first use only
LAB_PIN ?= jupyterlab==4.6.6
lab: $(STAMP)
	@$(PY) -c "import jupyterlab" 2>/dev/null || $(PY) -m pip install '$(LAB_PIN)'
	$(VENV)/bin/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root)   # from the root, where jupytext.toml is; as root, Jupyter needs --allow-root

$(STAMP):
	@test -x $(PY) || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -e '.[dev]'
	@rm -f $(VENV)/.ntpbook-installed-*
	@touch $@

clean:
	rm -rf _build .cache/book book/*.ipynb book/status.md

help:
	@sed -n '1,9p' Makefile
