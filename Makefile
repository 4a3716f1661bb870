# The two commands of the README:
#   make lab   -- set up a virtual environment with the LAB stack (JupyterLab, widgets, data) and open the
#                 course in JupyterLab, on your own copies in workspace/ (git-ignored; see gradlab/lab.py)
#                 (make lab PORT=8899 ARGS="--no-browser --ip=0.0.0.0"; works as root too)
#   make test  -- add the TEST stack (pytest, ruff, playwright...) and run the whole test suite, as a student
#                 has it: without PyTorch, so the comparisons with PyTorch (the oracle) SKIP, saying why
# Both only download packages through pip, and only when the venv is new or pyproject.toml changed
# (one stamp file per stack in the venv): a second run works offline and runs no pip.
# CI (.ci/run) runs `make test` on a fresh clone AND `make test-oracle`: the tests that skipped there for
# want of PyTorch (listed by tests/conftest.py in $(TORCH_SKIPS)), run again in a venv with the oracle.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# test workers (pytest-xdist): 2 keeps a 2-core machine busy; `make test JOBS=auto` uses every core
JOBS ?= 2
# the suite's own workers: one more than JOBS, because a good part of its time is waiting, not computing
# (the browser tests sit through JupyterLab's 2-minute autosave, sandboxed kernels start, time-outs run
# out), so a third worker on 2 cores fills what would idle (docs/benchmarks.md, "The test suite's time")
PYTEST_JOBS ?= $(if $(filter auto,$(JOBS)),auto,$(shell expr $(JOBS) + 1))
TORCH_SKIPS ?= artifacts/torch-skipped.txt
LAB_STAMP := $(VENV)/.gradlab-installed-lab
TEST_STAMP := $(VENV)/.gradlab-installed-test
ORACLE_STAMP := $(VENV)/.gradlab-installed-oracle
PORT ?=
ARGS ?=

.PHONY: lab test test-oracle venv venv-test venv-oracle bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip >/dev/null

# the lab stack only: what `make lab` needs (the course's notebooks use the data extra)
$(LAB_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[lab,data]"
	@touch $@

# the test stack includes the lab stack (the notebook and browser tests run JupyterLab): one pip call
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev,lab,data]"
	@touch $@ $(LAB_STAMP)

$(ORACLE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev,lab,data,oracle]"
	@touch $@ $(TEST_STAMP) $(LAB_STAMP)

venv: $(LAB_STAMP)
venv-test: $(TEST_STAMP)
venv-oracle: $(ORACLE_STAMP)

# rooted at your workspace (workspace/notebooks, workspace/exercises: your copies, filled on first start),
# shipped notebooks never opened, workspace copies trusted, URL printed
lab: venv
	$(BIN)/python -m gradlab lab $(if $(PORT),--port $(PORT)) $(ARGS)

test: venv-test
	@$(BIN)/python -c "import torch" 2>/dev/null || echo "make test: PyTorch (the oracle) is not installed, so the tests comparing with it SKIP (CI runs them: make test-oracle)"
	@test -x "$${GRADLAB_CHROMIUM:-/usr/bin/chromium}" || echo "make test: Chromium not found at $${GRADLAB_CHROMIUM:-/usr/bin/chromium}, so the real-browser tests (tests/browser) SKIP; install it with: apt-get install -y chromium"
	$(BIN)/python -m ruff check .
	# gradlab's bytecode written once, beside the sources (git-ignored): the sandboxed grading kernels see
	# the sources read-only and would otherwise compile gradlab again in each of their hundreds of starts
	# (about 0.6 CPU-s each), also where PYTHONDONTWRITEBYTECODE is set
	$(BIN)/python -m compileall -q gradlab
	@mkdir -p $(dir $(TORCH_SKIPS)) && rm -f $(TORCH_SKIPS)
	# Three parts, all must pass:
	# - the teeth of every graded exercise, the share of its solution's mutants that lose points (>= 90%; its
	#   log follows), started first, in the background, at a lower priority (nice 5): it takes what pytest
	#   leaves idle (its last files, waits on kernels and on JupyterLab's autosave) and yields the rest; its
	#   limits are CPU time (a wall-clock one of 3x + 10 s only catches a variant that waits: beside three
	#   busy loops, at about a tenth of a core, every verdict was the same as alone), and what is left of it
	#   when pytest ends runs beside the notebooks on both cores;
	# - pytest: each file whole on one worker (its module fixtures once), the longest files first
	#   (tests/conftest.py); the slowest tests are listed at the end (README, "Running the tests")
	#   (-p no:nbval: the suite runs nbval only in the grader's own subprocesses; loading it in each worker
	#   imports nbformat and jsonschema, about 2 CPU-s per worker);
	# - then the course notebooks as committed (a copy from git HEAD, never the student's copies in
	#   workspace/), with the machine to themselves but for what is left of the mutants (notebook 25 times
	#   its KV cache)
	d=$$($(BIN)/python scripts/pristine_copy.py notebooks) || exit 1; \
	  nice -n 5 $(BIN)/python -m gradlab course mutants -n $(JOBS) --min-score 0.9 > "$$d/mutants.log" 2>&1 & m=$$!; \
	  GRADLAB_TORCH_SKIPS=$(TORCH_SKIPS) $(BIN)/python -m pytest -n $(PYTEST_JOBS) --dist loadfile \
	    --no-loadscope-reorder -p no:nbval --durations=15 --durations-min=20; prc=$$?; rc=1; \
	  [ $$prc -ne 0 ] || { GRADLAB_FAST=1 $(BIN)/python -m pytest --nbval-lax "$$d/notebooks" -n $(JOBS) \
	    --dist loadfile -p no:cacheprovider; rc=$$?; }; \
	  wait $$m; mrc=$$?; echo "--- gradlab course mutants (exit $$mrc):"; cat "$$d/mutants.log"; \
	  rm -rf "$$d"; [ $$prc -eq 0 ] && [ $$rc -eq 0 ] && [ $$mrc -eq 0 ]

# the comparisons with PyTorch: every test that `make test` skipped for want of it ($(TORCH_SKIPS); or every
# `oracle`-marked test when there is no such list) and the notebooks that need it (notebooks/conftest.py)
test-oracle: venv-oracle
	$(BIN)/python scripts/run_oracle_tests.py --skipped $(TORCH_SKIPS) -n $(JOBS)

bench: venv
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts
