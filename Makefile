# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
# GPU machines bring their own torch: `make TORCH= demo` skips the CPU pin and keeps what is there.
PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.paradnn-installed
DB     ?= paradnn.db
REPORT ?= report
PYTEST_ARGS ?= -n 2

.PHONY: demo test lint setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH)" ]; then $(BIN)/python -m pip install --quiet "$(TORCH)"; fi
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

demo: $(STAMP)
	$(BIN)/paradnn calibrate --if-missing --db $(DB)
	$(BIN)/paradnn run --db $(DB)
	$(BIN)/paradnn report --db $(DB) --out $(REPORT)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

test: $(STAMP) lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/harness_overhead.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache $(REPORT)
