"""Compiled execution modes, for real on the CPU (inductor's C++ backend): the few compiles
these tests can afford on a 2-core machine (tiny FC, one compile each plus one warm compile).
The analysis of stored mode runs is tests/test_modes_analysis.py (synthetic, fast)."""

from __future__ import annotations

import pytest

from paradnn.api import runs as api_runs
from paradnn.config import TimingPolicy
from paradnn.measure.compile import FAULT_RECOMPILE, recompile_error
from paradnn.store import open_store

TINY = {"layers": 1, "nodes": 16, "input": 32, "output": 8, "batch": 4}
FAST = TimingPolicy(
    min_samples=3, max_samples=10, min_time_s=0.05, max_time_s=0.3,
    warmup_min_steps=2, warmup_min_time_s=0.0, warmup_max_time_s=1.0, target_ci_rel=0.5,
)  # fmt: skip
SWEEP = """name = "modes-test"
modes = ["eager", "compile"]
[[runs]]
family = "fc"
config = {{ layers = 1, nodes = 16, input = 32, output = 8, batch = {batch} }}
"""


@pytest.fixture(autouse=True)
def _one_compile_thread(monkeypatch):
    # one compile thread: no pool of compile workers to start on a 2-core machine (the workers
    # inherit it); the recorded detail says which value a run used
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")


def _rows(db):
    with open_store(db, readonly=True) as s:
        return s.runs()


@pytest.mark.slow  # a compile and a warm compile: ~40 s idle on 2 cores
def test_a_sweep_in_eager_and_compile_stores_both_with_compile_costs(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(SWEEP.format(batch=4))
    db = str(tmp_path / "m.db")
    api_runs.run(str(path), db=db, device="cpu", timing=FAST, energy_idle_s=0.0)
    rows = {r["mode"]: r for r in _rows(db)}
    assert set(rows) == {"eager", "compile"}
    eager, comp = rows["eager"], rows["compile"]
    assert eager["status"] == comp["status"] == "ok", (eager["error"], comp["error"])
    assert eager["run_key"] != comp["run_key"]
    assert eager["compile_cold_s"] is None and eager["graph_count"] is None
    assert comp["compile_cold_s"] > 0 and comp["compile_warm_s"] > 0
    assert comp["graph_count"] == 1 and comp["graph_breaks"] == 0
    assert comp["graph_break_reasons"] == [] and comp["recompiles"] == 0
    assert comp["cudagraphs"] is False and comp["quality"] in ("good", "noisy")
    assert comp["step_time_s"] > 0 and comp["n_samples"] >= 3
    detail = comp["compile_detail"]
    assert detail["torch_mode"] == "default" and detail["compile_threads"] == 1
    assert detail["cold"]["counters"]["inductor"].get("fxgraph_cache_miss", 0) >= 1
    assert detail["warm"]["counters"]["inductor"].get("fxgraph_cache_hit", 0) >= 1
    # a compiled run gets a fresh worker of its own
    assert comp["worker_index"] == 0 and comp["worker_pid"] != eager["worker_pid"]
    assert "peak_mem_bytes" in comp["nulls"] and "cudagraphs" not in comp["nulls"]


@pytest.mark.slow  # one compile
def test_a_recompiling_config_is_stored_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_RECOMPILE, "1")
    db = str(tmp_path / "r.db")
    rec = api_runs.bench(
        "fc", TINY, device="cpu", timing=FAST, db=db, mode="compile", energy_idle_s=0.0
    )
    assert rec.status == "crashed"
    assert rec.error.startswith("recompiled while timed (fail_on_recompile): ")
    assert "n" in rec.error.split(":", 1)[1]  # dynamo's guard failure names the changed int
    [row] = _rows(db)
    assert row["status"] == "crashed" and row["recompiles"] == 1
    assert row["compile_cold_s"] is None and row["compile_warm_s"] is None
    assert "failed" in row["nulls"]["compile_warm_s"]


def test_reduce_overhead_on_a_cpu_is_unsupported_before_any_work(tmp_path):
    db = str(tmp_path / "u.db")
    rec = api_runs.bench(
        "fc", TINY, device="cpu", timing=FAST, db=db, mode="reduce-overhead", energy_idle_s=0.0
    )
    assert rec.status == "unsupported" and "CUDA graphs" in rec.error
    assert rec.step_time_s is None and rec.compile_cold_s is None


def test_a_recompile_error_keeps_dynamo_s_reason_and_others_are_not_recompiles():
    text = (
        "Detected recompile when torch.compile stance is 'fail_on_recompile'. filename: 'x.py'\n"
        "    triggered by the following guard failure(s):\n"
        "    - 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 2"
    )
    err = recompile_error(RuntimeError(text))
    assert err == (
        "recompiled while timed (fail_on_recompile): 0/0: tensor 'x' size mismatch at index 0. "
        "expected 4, actual 2"
    )
    assert recompile_error(RuntimeError("something else")) is None


def test_cuda_graph_modes_on_fakes(monkeypatch):
    """The GPU side without a GPU: which modes a device can run, and how CUDA graphs engaging is
    read from inductor's skip counter (measure/compile.py)."""
    import torch

    from paradnn.measure import compile as C

    assert C.unsupported_reason("reduce-overhead", torch.device("cuda", 0)) is None
    assert "CUDA device" in C.unsupported_reason("reduce-overhead", torch.device("cpu"))
    assert C.unsupported_reason("compile", torch.device("cpu")) is None
    assert C.TORCH_MODES["max-autotune"] == "max-autotune-no-cudagraphs"

    def run(mode, device, skips):
        r = C.CompileRun.__new__(C.CompileRun)
        r.mode, r.device = mode, torch.device(device)
        monkeypatch.setattr(C, "_counters", lambda: {"inductor": {"cudagraph_skips": skips}})
        return r._cudagraphs()

    assert run("reduce-overhead", "cuda", 0) == (
        True,
        "inductor recorded no CUDA graph skip",
    )
    engaged, why = run("reduce-overhead", "cuda", 2)
    assert engaged is False and "skipped CUDA graphs 2" in why
    assert run("reduce-overhead", "cpu", 0)[0] is None
    assert run("compile", "cuda", 0)[0] is False


def test_a_compile_past_the_timeout_is_stored_as_timeout_with_its_phase(tmp_path):
    db = str(tmp_path / "t.db")
    rec = api_runs.bench(
        "fc", TINY, device="cpu", timing=FAST, db=db, mode="compile", timeout_s=3.0,
        energy_idle_s=0.0,
    )  # fmt: skip
    assert rec.status == "timeout" and rec.mode == "compile"
    assert "no result within 3 s" in rec.error and "(last phase: " in rec.error
    [row] = _rows(db)
    assert row["status"] == "timeout"


def test_the_warm_compile_child_uses_the_threads_the_run_used(monkeypatch):
    """With no --threads the supervisor chooses the count from the load; the warm child must
    compile with that count, not its own default, or inductor's cache (keyed on the thread
    count) misses and the warm compile time is a cold one."""
    from types import SimpleNamespace

    import torch

    from paradnn.config import RunOptions
    from paradnn.measure import compile as compile_mod
    from paradnn.runner.execute import _compile

    monkeypatch.setattr(compile_mod, "CompileRun", lambda step, run, device: run)
    rec = SimpleNamespace(family="fc", config={"layers": 1}, threads=1)
    run = _compile(None, rec, RunOptions(device="auto", mode="compile"), torch.device("cpu"))
    assert run.options.threads == 1 and run.options.mode == "compile"
    assert run.options.device == "cpu" and run.family == "fc"  # where this run ran
    given = RunOptions(device="cpu", mode="compile", threads=2)
    run = _compile(None, SimpleNamespace(**{**vars(rec), "threads": 2}), given, torch.device("cpu"))
    assert run.options.threads == 2
