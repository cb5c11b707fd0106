"""The measuring core (runner/core.py) and the unit of work (runner/units.py), in process: one
prologue and one epilogue around any backend, and a unit's failure built from the record the
supervisor prepared (its prediction kept)."""

from __future__ import annotations

import math
import sys
import types

import pytest

from paradnn import backends
from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.measure.environment import prepare
from paradnn.records import Prediction, Status, StepTimes
from paradnn.runner import core
from paradnn.runner.start import start_record
from paradnn.runner.tasks import op_units
from paradnn.runner.units import RunUnit

from conftest import TINY, TINY_POLICY

OPTS = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)


class Fake:
    """A backend that does what it is told, and says what the core asked of it."""

    calls: list[str] = []
    reason: str | None = None
    loss: float = 1.0
    fail: BaseException | None = None

    def start(self, run):
        Fake.calls.append("start")

    def unsupported(self, run):
        Fake.calls.append("unsupported")
        return Fake.reason

    def measure(self, run):
        Fake.calls.append("measure")
        run.rec = run.rec.replace(params=7)  # measured before a failure: kept
        if Fake.fail is not None:
            raise Fake.fail
        run.rec = run.rec.with_part(StepTimes(step_time_s=0.5, final_loss=Fake.loss))

    def failure(self, run, exc, status, error):
        Fake.calls.append(f"failure {status}")
        return run.rec.replace(status=status, error=error)

    def cleanup(self, run):
        Fake.calls.append("cleanup")


@pytest.fixture
def fake(monkeypatch):
    module = types.ModuleType("paradnn_fake_backend")
    module.BACKEND = Fake
    monkeypatch.setitem(sys.modules, "paradnn_fake_backend", module)
    faked = {**backends.registry(), "torch": backends.Backend("torch", "paradnn_fake_backend")}
    monkeypatch.setattr(backends, "registry", lambda: faked)
    monkeypatch.setattr(Fake, "calls", [])
    return Fake


def _record(values=None, options=OPTS):
    _, env = prepare(options.device, options.threads)
    return start_record(RunSpec("fc", values or TINY["fc"], options), env)


def test_the_core_runs_a_backend_between_one_prologue_and_one_epilogue(fake):
    rec = core.measure_run(_record(), OPTS)
    assert fake.calls == ["start", "unsupported", "measure", "cleanup"]
    assert rec.status == Status.OK and rec.step_time_s == 0.5 and rec.params == 7
    assert rec.started_at and rec.finished_at and rec.started_at <= rec.finished_at


def test_a_non_finite_loss_is_nan_with_its_timings_kept(fake, monkeypatch):
    monkeypatch.setattr(Fake, "loss", math.inf)
    rec = core.measure_run(_record(), OPTS)
    assert rec.status == Status.NAN and rec.error == "non-finite training loss (inf); timings kept"
    assert rec.step_time_s == 0.5 and rec.finished_at


def test_a_failure_is_classified_and_keeps_what_was_measured_before_it(fake, monkeypatch):
    monkeypatch.setattr(Fake, "fail", MemoryError("no room"))
    rec = core.measure_run(_record(), OPTS)
    assert fake.calls == ["start", "unsupported", "measure", "failure oom", "cleanup"]
    assert rec.status == Status.OOM and rec.error == "MemoryError: no room"
    assert rec.params == 7 and rec.finished_at and rec.step_time_s is None


def test_unsupported_and_invalid_are_decided_before_any_work(fake, monkeypatch):
    monkeypatch.setattr(Fake, "reason", "no such unit here")
    rec = core.measure_run(_record(), OPTS)
    assert (rec.status, rec.error) == (Status.UNSUPPORTED, "no such unit here")
    assert "measure" not in fake.calls and "cleanup" not in fake.calls and rec.finished_at
    bad = RunOptions(device="cpu", threads=1, timing=TINY_POLICY, procs=2, scaling="strong")
    monkeypatch.setitem(
        backends.registry(), "ranks", backends.Backend("ranks", "paradnn_fake_backend")
    )
    fake.calls.clear()
    rec = core.measure_run(_record({**TINY["fc"], "batch": 3}, bad), bad)
    assert rec.status == Status.INVALID and fake.calls == ["start"] and rec.finished_at


def test_backends_are_found_by_name_and_an_unknown_one_is_refused():
    assert core.backend_name(OPTS) == "torch"
    assert core.backend_name(RunOptions(procs=2)) == "ranks"
    assert core.backend_name(RunOptions(backend="jax")) == "jax"
    with pytest.raises(ConfigError, match=r"backend = 'tpu-v9': must be one of torch, jax$"):
        core.get("tpu-v9")  # `ranks` is chosen by procs > 1, never named


def test_a_run_units_failure_is_its_prepared_record_with_the_workers_account():
    rec = _record().with_part(Prediction(1000, 900))
    unit = RunUnit(id=3, record=rec, spec=RunSpec("fc", TINY["fc"], OPTS))
    assert unit.settled() is None and unit.answer == "run" and unit.options is OPTS
    sent = unit.sent()
    failed = sent.failed(Status.TIMEOUT, "no result within 5 s", pid=42, index=2)
    assert (failed.status, failed.error, failed.worker_pid, failed.worker_index) == (
        Status.TIMEOUT, "no result within 5 s", 42, 2,
    )  # fmt: skip
    assert failed.predicted_mem_bytes == 1000 and failed.started_at == sent.started_at
    assert failed.run_key == rec.run_key and unit.status(failed) == Status.TIMEOUT
    oom = rec.replace(status=Status.PREDICTED_OOM, error="needs more")
    assert RunUnit(record=oom, spec=unit.spec).settled() is oom  # stored without a worker


def test_a_kernel_units_failure_is_its_template_row():
    _, env = prepare(OPTS.device, OPTS.threads)
    (unit,) = op_units(env, ["fp32"], names=["matmul-2048"], passes=["fwd"], scale=0.01)
    row = unit.failed(Status.CRASHED, "worker died with signal SIGSEGV (-11)", pid=1)
    assert row["status"] == Status.CRASHED and row["error"].startswith("worker died")
    assert row["task_key"] == unit.key and row["measured_at"] and unit.status(row) == "crashed"
    assert unit.settled() is None and unit.answer == "kernel"
    assert (unit.family, unit.precision, unit.config) == ("ops", "fp32", {"task": unit.label})


def test_a_run_is_described_by_the_environment_it_ran_in(fake):
    rec = _record().with_part(Prediction(1000, 900))
    planned = rec.replace(env={**rec.env, "planned": True})  # same fingerprint, other words
    got = core.measure_run(planned, OPTS)
    assert "planned" not in got.env and got.run_key == rec.run_key
    elsewhere = rec.replace(fingerprint="0" * 16, run_key="k" * 20)  # another machine's plan
    got = core.measure_run(elsewhere, OPTS)
    assert got.fingerprint == rec.fingerprint and got.run_key == rec.run_key  # keyed here
    assert got.predicted_mem_bytes == 1000 and got.status == Status.OK
