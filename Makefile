# The README's two commands. Each creates .venv itself and is idempotent.
# PYTHON: the interpreter that makes .venv (3.11 or newer), e.g. `make test PYTHON=python3.12`.
# TORCH_INDEX: a package index for torch alone; on Linux without a GPU,
# `make train TORCH_INDEX=https://download.pytorch.org/whl/cpu` fetches the CPU
# build (about 200 MB) instead of PyPI's, which pulls several GB of CUDA libraries.
PYTHON ?= python3
TORCH_INDEX ?=
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# A path-based editable install (not an import hook), so that type checkers such as mypy
# find the packages and their py.typed markers from code outside this checkout. It puts the
# checkout's root on the venv's path, so its other folders (tests, tools) import there too.
EDITABLE := --config-settings editable_mode=compat

.PHONY: train test lint install install-test clean

# Refuse an interpreter older than 3.11 before anything is installed, and say
# how to recover from a .venv made by one.
NEED_311 := import sys; sys.exit(sys.version_info < (3, 11))

$(PY):
	@$(PYTHON) -c '$(NEED_311)' || { echo "nardy needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Run: make $(MAKECMDGOALS) PYTHON=python3.12 (or another 3.11+)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch is installed first and pinned, so nothing later pulls a CUDA build.
$(STAMP): pyproject.toml Makefile | $(PY)
	@$(PY) -c '$(NEED_311)' || { echo "$(VENV) was made with $$($(PY) --version 2>&1); nardy needs 3.11 or newer. Run: make clean, then make $(MAKECMDGOALS) PYTHON=python3.12 (or another 3.11+)" >&2; exit 1; }
	$(PIP) install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PIP) install --quiet -e . $(EDITABLE)
	touch $@

$(TEST_STAMP): pyproject.toml Makefile $(STAMP)
	$(PIP) install --quiet torch==2.13.0 -e '.[test]' $(EDITABLE)
	touch $@

install: $(STAMP)

install-test: $(TEST_STAMP)

train: $(STAMP)
	$(VENV)/bin/nardy train --config configs/quick.yaml

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check nardy_env agents train tests examples tools
	$(VENV)/bin/mypy

# Two pytest-xdist workers, a test file each at a time: a file's module fixtures (an export, the
# numba-cache processes, mypy) are made once, and Ray is started by one worker only.
test: lint
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile tests

clean:
	rm -rf $(VENV) build *.egg-info
	rm -f nardy_env/__pycache__/*.nbi nardy_env/__pycache__/*.nbc  # numba's cache: a file per function and line, never pruned
