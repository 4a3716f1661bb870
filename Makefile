# The two commands of the README:
#   make lab   -- set up a virtual environment and open the course in JupyterLab
#                 (make lab PORT=8899 ARGS="--no-browser --ip=0.0.0.0"; works as root too)
#   make test  -- set up a virtual environment and run the whole test suite
# Both only download packages through pip, and only when the venv is new or
# pyproject.toml changed (a stamp file in the venv): a second run works offline.
# CI (.ci/run) calls `make test` with GRADLAB_ORACLE=1 so that the PyTorch comparisons always run there.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
comma := ,
EXTRAS := dev,lab,data$(if $(GRADLAB_ORACLE),$(comma)oracle)
# one stamp per set of extras: asking for the oracle later installs it once
STAMP := $(VENV)/.gradlab-installed-$(subst $(comma),-,$(EXTRAS))
PORT ?=
ARGS ?=

.PHONY: lab test venv bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip >/dev/null

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	@touch $@

venv: $(STAMP)

# rooted at the repository (notebooks/, exercises/, README), shipped notebooks trusted, URL printed
lab: venv
	$(BIN)/python -m gradlab lab $(if $(PORT),--port $(PORT)) $(ARGS)

test: venv
	@$(BIN)/python -c "import torch" 2>/dev/null || echo "make test: PyTorch (the oracle) is not installed, so the tests marked 'oracle' (comparisons with PyTorch) SKIP; run 'make test GRADLAB_ORACLE=1' to install it and run them"
	@test -x "$${GRADLAB_CHROMIUM:-/usr/bin/chromium}" || echo "make test: Chromium not found at $${GRADLAB_CHROMIUM:-/usr/bin/chromium}, so the real-browser tests (tests/browser) SKIP; install it with: apt-get install -y chromium"
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest
	# the teeth of every graded exercise: the share of its solution's mutants that lose points (>= 90%)
	$(BIN)/python -m gradlab course mutants -n 2 --min-score 0.9
	# the course notebooks as committed (a copy from git HEAD), not the working copies a student ran or autosaved
	d=$$($(BIN)/python scripts/pristine_copy.py notebooks) && \
	  GRADLAB_FAST=1 $(BIN)/python -m pytest --nbval-lax "$$d/notebooks" -n 2 --dist loadfile -p no:cacheprovider; \
	  rc=$$?; rm -rf "$$d"; exit $$rc

bench: venv
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts
