"""What a failure was, pinned whole (issue 46, item 6): every pattern `classify` knows in
any letter case, `one_line`'s exact words and its 500-character cap, each way a worker dies
(`_death`), and a run unit's failure record with and without the worker's account."""

from __future__ import annotations

import signal

import pytest
import torch

from paradnn.config import RunOptions, RunSpec
from paradnn.measure import faults
from paradnn.measure.environment import prepare
from paradnn.records import Status
from paradnn.runner.start import start_record
from paradnn.runner.supervisor import _death
from paradnn.runner.units import RunUnit

from conftest import TINY, TINY_POLICY


@pytest.mark.parametrize(
    "text",
    [
        "CUDA error: OUT OF MEMORY",
        "DefaultCPUAllocator: Can't Allocate Memory: you tried 9 GB",
        "CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate",
        "Failed to allocate 3 bytes",
    ],
)
def test_each_allocation_failure_is_oom_in_any_case(text):
    assert faults.classify(RuntimeError(text)) == Status.OOM
    assert faults.classify(NotImplementedError(text)) == Status.OOM  # memory first


@pytest.mark.parametrize(
    "text",
    [
        "\"addmm\" NOT IMPLEMENTED FOR 'Half'",
        "oneDNN: Could not create a primitive descriptor",
        "bf16 matmul Not Supported on this ISA",
    ],
)
def test_each_missing_kernel_is_unsupported_in_any_case(text):
    assert faults.classify(RuntimeError(text)) == Status.UNSUPPORTED


def test_the_classes_decide_before_the_words():
    assert faults.classify(torch.OutOfMemoryError("")) == Status.OOM
    assert faults.classify(MemoryError("not supported")) == Status.OOM
    assert faults.classify(NotImplementedError("")) == Status.UNSUPPORTED
    assert faults.classify(RuntimeError("segfault-ish")) == Status.CRASHED
    assert faults.classify(KeyboardInterrupt()) == Status.CRASHED


def test_one_line_is_the_class_and_the_first_stripped_line_at_most_500_characters():
    assert faults.one_line(ValueError("  bad value\nsecond line\n")) == "ValueError: bad value"
    assert faults.one_line(RuntimeError()) == "RuntimeError: "
    assert faults.one_line(RuntimeError("  \n ")) == "RuntimeError: "
    assert faults.one_line(KeyError("k")) == "KeyError: 'k'"
    long = faults.one_line(RuntimeError("x" * 600))
    assert long == "RuntimeError: " + "x" * 486 and len(long) == 500
    assert faults.one_line(RuntimeError("y" * 486)) == "RuntimeError: " + "y" * 486


def test_each_way_a_worker_dies_is_named():
    assert _death(-signal.SIGKILL) == (
        Status.OOM,
        "worker killed by SIGKILL (exit -9): most likely the host's out-of-memory killer",
    )
    assert _death(-15) == (Status.CRASHED, "worker died with signal SIGTERM (-15)")
    assert _death(-1) == (Status.CRASHED, "worker died with signal SIGHUP (-1)")
    assert _death(0) == (Status.CRASHED, "worker exited with code 0 before returning a result")
    assert _death(1) == (Status.CRASHED, "worker exited with code 1 before returning a result")
    assert _death(None) == (
        Status.CRASHED,
        "worker exited with code None before returning a result",
    )


OPTS = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)


def _unit() -> RunUnit:
    _, env = prepare(OPTS.device, OPTS.threads)
    rec = start_record(RunSpec("fc", TINY["fc"], OPTS), env)
    return RunUnit(id=1, record=rec, spec=RunSpec("fc", TINY["fc"], OPTS))


def test_a_unit_never_sent_fails_with_its_prepared_record_and_no_worker_account():
    unit = _unit()
    rec = unit.failed(Status.CRASHED, "never started")
    assert (rec.status, rec.error) == (Status.CRASHED, "never started")
    assert rec.started_at == unit.record.started_at
    assert (rec.worker_pid, rec.worker_index) == (None, None)
    assert rec.run_key == unit.record.run_key and rec.config == unit.record.config
    assert unit.failed(Status.TIMEOUT, "x", pid=0).worker_pid == 0
    assert unit.failed(Status.TIMEOUT, "x", index=0).worker_index == 0
    assert unit.failed(Status.TIMEOUT, "x", pid=5).worker_index is None
    assert unit.failed(Status.TIMEOUT, "x", index=5).worker_pid is None
    sent = unit.sent()
    assert sent.started_at is not None
    assert sent.failed(Status.TIMEOUT, "late", pid=9, index=3).started_at == sent.started_at
