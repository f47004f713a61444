# Two entry points (see README): `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# What the run needs (pyproject.toml's dependencies); an extra on top of it per target that needs one
# (.installed-test: `make test`, .installed-report: `make report`), each reinstalled when pyproject.toml changes.
STAMP := $(VENV)/.installed

.PHONY: setup run report test check lint bench dynamic-emulated render-tools lab

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e "."
	touch $(STAMP)

$(VENV)/.installed-%: $(STAMP)
	$(PY) -m pip install --quiet -e ".[$*]"
	touch $@

# Main job: build the synthetic sample bundle and run static.ipynb on it, offline.
run: setup
	$(PY) -m neutrino_ae run static -p bundle sample

# The executed notebook (made by `make run` when there is none) as results/static/static.html, and
# static.pdf beside it when a headless Chromium (Debian's chromium, or Playwright's) is present; with
# chromium, the page's height at 1400 px and the smallest text in a figure on screen are printed.
report: $(VENV)/.installed-report
	test -f results/static/static.executed.ipynb || $(PY) -m neutrino_ae run static -p bundle sample
	$(PY) -m neutrino_ae.run.report results/static/static.executed.ipynb --render-check

# Jupyter for reviewers: JupyterLab (NOTEBOOK=1: Notebook 7) from .venv, so both notebooks' kernel (python3)
# is this project's interpreter. Foreground: it prints the URL with its token; bound to 127.0.0.1 (--allow-root
# as root, as in a container); Ctrl-C stops it. Its default settings (tools/lab-settings/overrides.json): Notebook 7
# shows tall outputs whole (the verdict, the figures; it folds anything over ~1,820 px into a 310 px box
# otherwise) and no news is fetched.
LAB_SETTINGS = --LabApp.app_settings_dir="$(CURDIR)/tools/lab-settings" \
	--JupyterNotebookApp.app_settings_dir="$(CURDIR)/tools/lab-settings"
lab: $(VENV)/.installed-lab
	$(PY) -m jupyter $(if $(NOTEBOOK),notebook,lab) --ServerApp.ip=127.0.0.1 $(LAB_SETTINGS) $(if $(filter 0,$(shell id -u)),--allow-root)

# The render tests (tests/run/test_notebook_report.py: the report printed to PDF by a headless Chromium, read
# back with poppler's pdftotext) need Debian's chromium and poppler-utils, the front-end tests (tests/frontend:
# JupyterLab driven through WebDriver) chromium-driver too: installed when missing where
# root can run apt-get (CI), quietly, in one line; elsewhere one line says the render tests will be skipped.
APT_GET ?= apt-get
render-tools:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  command -v google-chrome >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v pdftotext >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v $(APT_GET) >/dev/null 2>&1; then \
	  echo "render tests will be skipped:$$missing not installed (installing needs root and apt-get:" \
	       "apt-get install$$missing)"; exit 0; fi; \
	if { $(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq \
	     --no-install-recommends$$missing; } >/dev/null 2>&1; then \
	  echo "installed$$missing (Debian) for the render tests"; \
	else echo "render tests will be skipped: apt-get install$$missing failed"; fi

# --dist worksteal: a worker that runs out of tests takes half of another's queue (the default `load`
# hands out fixed chunks in collection order, and tests/conftest.py puts the slowest modules first).
# --hypothesis-profile ci: every property draws the same examples each run, no database (tests/conftest.py).
test: $(VENV)/.installed-test render-tools
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto --dist worksteal --hypothesis-profile ci

# The inner loop: ruff and the tests that start no process (about a minute on 2 cores; `make test` runs them all).
# --in-process (tests/conftest.py) leaves out the tests marked `process`, and fails any other that starts one.
check: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto --dist worksteal --hypothesis-profile ci --in-process

# dynamic.ipynb with the real Neutrino (built from $(NEUTRINO_SRC)/neutrino-artifact.tar.gz) over the emulated
# CUDA driver, the ptx workloads, into results/dynamic-emulated/ (labelled EMULATED); QUICK=1: the smallest set.
NEUTRINO_SRC ?= ../shared/neutrino-src
dynamic-emulated: $(VENV)/.installed-test
	NEUTRINO_SRC=$(NEUTRINO_SRC) $(PY) tools/real_neutrino/emulated.py $(if $(QUICK),--quick,)

bench: setup
	$(PY) -m benchmarks.bench
