# The README's two commands. Each creates .venv itself and is idempotent.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: train test lint install install-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch is installed first and pinned, so nothing later pulls a CUDA build.
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml $(STAMP)
	$(PIP) install --quiet torch==2.13.0 -e '.[test]'
	touch $@

install: $(STAMP)

install-test: $(TEST_STAMP)

train: $(STAMP)
	$(VENV)/bin/nardy train --config configs/quick.yaml

test: $(TEST_STAMP)
	$(VENV)/bin/ruff check nardy_env agents train tests examples tools
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q tests

clean:
	rm -rf $(VENV) build *.egg-info
