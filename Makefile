# Two entry points (see README): `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# Main job: build the synthetic sample bundle and run static.ipynb on it, offline.
run: setup
	$(PY) -m neutrino_ae run static -p bundle sample

test: setup
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto

bench: setup
	$(PY) -m benchmarks.bench
