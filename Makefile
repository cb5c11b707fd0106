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
# The second pass of `make test`: what an AVX2-only CPU without native bf16 sees, rehearsed here
# by capping oneDNN and ATen and replacing the CPU flags paradnn reads. It repeats the tests whose
# outcome depends on the ISA (precision support, kernels, memory, calibrate, the CLI's runs) and
# the pinned outputs (golden report, golden rows, findings' words) on a second numerical path, so
# a last-bit dependence fails here, not on a user's CPU (README, Development): OpenBLAS's Haswell
# kernels instead of its AVX-512 ones (on a Zen 4 they turn a least-squares weight of 5.6e-17
# into 0.0: the symptom issue 41 saw on a Zen 5) and numpy's AVX2 loops instead of its AVX-512
# ones (exp and log, quicksort's order of ties). Thread counts are left alone: they changed no
# output of these tests.
AVX2_ENV   := ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
              PARADNN_CPU_FLAGS="fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c" \
              OPENBLAS_CORETYPE=Haswell NPY_DISABLE_CPU_FEATURES=X86_V4
AVX2_TESTS ?= tests/test_families.py tests/test_memory.py tests/test_calibrate_ops.py \
              tests/test_ceilings.py \
              tests/test_cuda_fakes.py tests/test_cli.py tests/test_cli_run.py \
              tests/test_execute.py tests/test_platforms.py tests/test_quality.py \
              tests/test_native.py tests/test_report_golden.py tests/test_golden_rows.py \
              tests/test_findings_text.py
DEMO_BUDGET ?= 20
# One what-if comparison in the demo's report (docs/report.md#what-if-measured-here-beside-predicted-there):
# this machine beside a predicted V100 and TPU v2, and the two against each other (seconds).
DEMO_WHAT_IF ?= v100,tpu-v2

.PHONY: demo test test-native test-avx2 lint setup chromium bench mutation gpu-check gpu-check-dry clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH)" ]; then $(BIN)/python -m pip install --quiet "$(TORCH)"; fi
	$(BIN)/python -m pip install --quiet -e '.[test,ray,slurm,jax]'
	@$(MAKE) --no-print-directory chromium
	@touch $@

# The report's browser test (tests/test_report_browser.py) needs a Chromium: installed with apt
# where this is root on a Debian/Ubuntu machine, skipped silently elsewhere (the test then skips
# and says why). Playwright drives it as is: it never downloads a browser of its own.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    { apt-get update -qq >/dev/null 2>&1; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	        chromium >/dev/null 2>&1 || true; }; } || true

demo: $(STAMP)
	$(BIN)/paradnn calibrate --if-missing --budget $(DEMO_BUDGET) --db $(DB)
	$(BIN)/paradnn run --db $(DB)
	$(BIN)/paradnn report --db $(DB) --out $(REPORT) --what-if $(DEMO_WHAT_IF)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports --no-cache  # the one-way layers and no cycles (docs/architecture.md)

test: $(STAMP) lint test-native test-avx2

test-native: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-avx2: $(STAMP)
	$(AVX2_ENV) $(BIN)/python -m pytest $(PYTEST_ARGS) $(AVX2_TESTS)

bench: $(STAMP)
	$(BIN)/python benchmarks/harness_overhead.py
	$(BIN)/python benchmarks/harness_wall.py

# Mutation testing of analysis/, sim/, the timer and statistics, the store and the memory model
# (benchmarks/mutation.py, [tool.mutmut] in pyproject.toml): hours on a 2-core machine, so it
# runs on purpose, never in `make test`. Writes benchmarks/results/mutation.json.
# MUTATION_ARGS e.g. `--group analysis --timeout 3600`, `--only survivors` after adding tests.
MUTATION_ARGS ?=
mutation: $(STAMP)
	@$(BIN)/python -c "import mutmut" 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[mutation]'
	$(BIN)/python benchmarks/mutation.py $(MUTATION_ARGS)

# The GPU acceptance run (docs/gpu.md): 6 minutes on one H100/H200 by its own accounting, each
# step's cap from its measured seconds (benchmarks/results/gpu/step_seconds.json, updated by every
# run), a Table 2 sample into benchmarks/data/gpu/; no network and no install — the machine's own
# python3 with torch, paradnn from src/. Results: benchmarks/results/gpu/<device>/ (summary.md).
# `gpu-check-dry` rehearses it on a CPU; GPU_CHECK_ARGS=--plan prints the plan only.
GPU_CHECK_ARGS ?=
gpu-check:
	PYTHONPATH=src $(PYTHON) benchmarks/gpu_check.py $(GPU_CHECK_ARGS)

gpu-check-dry:
	PYTHONPATH=src $(PYTHON) benchmarks/gpu_check.py --dry --out $${TMPDIR:-/tmp}/paradnn-gpu-check $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache $(REPORT)
