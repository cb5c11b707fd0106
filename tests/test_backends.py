"""Backends are known from one registry (paradnn.backends): a backend registered only through
PARADNN_BACKENDS, as docs/architecture.md says to, is a value of every backend option and runs
a bench end to end (issue 44); nothing else in paradnn names it."""

from __future__ import annotations

import pytest

from paradnn import api, backends
from paradnn.config import RunOptions
from paradnn.errors import ConfigError

from conftest import TINY, TINY_POLICY, run_cli


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setenv("PARADNN_BACKENDS", "toy=toy_backend")


def test_the_registry_holds_the_built_in_backends_and_the_environments(toy):
    assert backends.names() == ("torch", "jax", "toy")  # `ranks` is procs > 1, never named
    toy = backends.get("toy")
    assert (toy.module, toy.fresh_worker, toy.infeed, toy.package) == (
        "toy_backend", True, False, None,
    )  # fmt: skip
    assert backends.running("torch", 2) == "ranks" and backends.running("toy", 2) == "toy"
    with pytest.raises(ConfigError, match=r"backend = 'onnx': must be one of torch, jax, toy$"):
        RunOptions(backend="onnx")


def test_a_name_built_in_is_never_taken(monkeypatch):
    monkeypatch.setenv("PARADNN_BACKENDS", "torch=somewhere_else")
    assert backends.get("torch").module == "paradnn.runner.execute"


def test_a_backend_without_the_infeed_study_runs_on_device_data_only(toy):
    with pytest.raises(ConfigError, match="must be device with backend = toy"):
        RunOptions(backend="toy", data_source="host")


def test_a_backend_registered_only_by_environment_runs_a_bench_end_to_end(toy, tmp_path):
    db = str(tmp_path / "r.db")
    kw = {"device": "cpu", "threads": 1, "timing": TINY_POLICY, "db": db}
    rec = api.bench("fc", TINY["fc"], backend="toy", **kw)
    assert rec.status == "ok", rec.error
    assert rec.backend == "toy" and rec.flags["backend"] == "toy" and rec.step_time_s > 0
    assert rec.nulls["peak_mem_bytes"].startswith("the toy backend")
    (row,) = api.results(db)
    assert row["backend"] == "toy" and row["run_key"] == rec.run_key
    torch_run = api.bench("fc", TINY["fc"], **kw)
    assert torch_run.run_key != rec.run_key  # another backend is another measurement
    assert [r["backend"] for r in api.results(db, where={"backend": "toy"})] == ["toy"]


def test_the_command_line_takes_it_too(toy, capsys, tmp_path):
    db = str(tmp_path / "r.db")
    code, out, err = run_cli(
        capsys, "bench", "fc", "layers=1", "nodes=8", "batch=2", "--backend", "toy",
        "--device", "cpu", "--threads", "1", "--min-time", "0.1", "--max-time", "0.2", "--db", db,
    )  # fmt: skip
    assert code == 0, err
    code, out, err = run_cli(capsys, "results", "--db", db, "--backend", "toy", "-f", "json")
    assert code == 0 and '"backend": "toy"' in out
