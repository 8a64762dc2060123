# The two commands of the quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/odradek broker --config config/server.properties --override log.dirs=./data

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) lint typecheck
	@bash scripts/install-system-deps.sh
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	$(BIN)/python bench/protocol_bench.py
	$(BIN)/python bench/protocol_ceiling.py
	$(BIN)/python bench/run_broker_bench.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
