# The two commands of the README:
#   make lab   -- set up a virtual environment and open the course in JupyterLab
#   make test  -- set up a virtual environment and run the whole test suite
# Both only download packages through pip. CI (.ci/run) calls `make test`
# with GRADLAB_ORACLE=1 so that the PyTorch comparisons always run there.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
comma := ,
EXTRAS := dev,lab,data$(if $(GRADLAB_ORACLE),$(comma)oracle)

.PHONY: lab test venv bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip >/dev/null

venv: $(BIN)/python
	$(BIN)/pip install -e ".[$(EXTRAS)]"

lab: venv
	$(BIN)/jupyter lab notebooks/00_welcome.ipynb

test: venv
	$(BIN)/python -m pytest
	GRADLAB_FAST=1 $(BIN)/python -m pytest --nbval-lax notebooks -n 2 --dist loadfile -p no:cacheprovider

bench: venv
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis artifacts
