# Two commands set everything up on a machine with python3 and make:
#   make book   builds the course site into _build/html
#   make test   runs every test
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: book test install bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m benchmarks.harness

clean:
	rm -rf _build .pytest_cache .hypothesis
