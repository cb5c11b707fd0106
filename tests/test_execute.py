"""Every outcome of a run becomes a record with the right status; numbers are consistent."""

import pytest
import torch

from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.runner.execute import classify, execute

from conftest import TINY, TINY_POLICY


def _opts(**kw):
    return RunOptions(device="cpu", threads=1, timing=TINY_POLICY, **kw)


@pytest.mark.parametrize("family", ["fc", "cnn", "rnn"])
def test_ok_record_is_complete_and_consistent(family):
    rec = execute(RunSpec(family, TINY[family], _opts()))
    assert rec.status == "ok", rec.error
    assert rec.params == rec.params_analytic > 0
    assert rec.flops_per_step == rec.flops_analytic > 0
    assert rec.flops_count_device == "cpu"  # one extra untimed step, counted on the device
    assert rec.n_samples == len(rec.samples) >= TINY_POLICY.min_samples
    assert rec.step_time_ci_low_s <= rec.step_time_s <= rec.step_time_ci_high_s
    assert rec.examples_per_s == pytest.approx(TINY[family]["batch"] / rec.step_time_s)
    assert rec.achieved_flops == pytest.approx(rec.flops_per_step / rec.step_time_s)
    assert rec.threads == 1 and rec.env["threads"] == 1
    assert rec.env["torch"] == torch.__version__
    assert rec.flags["matmul_allow_tf32"] is False
    # what cannot be measured is null with a reason, never zero
    assert rec.peak_mem_bytes is None and "peak_mem_bytes" in rec.nulls
    assert rec.utilization_datasheet is None and "utilization_datasheet" in rec.nulls
    assert rec.started_at <= rec.finished_at


def test_run_key_is_stable_and_sensitive():
    a = execute(RunSpec("fc", TINY["fc"], _opts()))
    b = execute(RunSpec("fc", dict(TINY["fc"]), _opts()))
    c = execute(RunSpec("fc", {**TINY["fc"], "nodes": 17}, _opts()))
    d = execute(RunSpec("fc", TINY["fc"], _opts(precision="bf16")))
    assert a.run_key == b.run_key
    assert len({a.run_key, c.run_key, d.run_key}) == 3


def test_defaults_fill_the_config_before_keying():
    partial = {k: v for k, v in TINY["fc"].items() if k != "output"}
    rec = execute(RunSpec("fc", partial, _opts()))
    assert rec.config["output"] == 1000


def test_invalid_config_is_recorded_not_raised():
    rec = execute(RunSpec("fc", {"layers": 0}, _opts()))
    assert rec.status == "invalid"
    assert "fc.layers = 0" in rec.error


def test_unsupported_precision_is_recorded():
    rec = execute(RunSpec("fc", TINY["fc"], _opts(precision="tf32")))
    assert rec.status == "unsupported"
    assert "tf32" in rec.error
    assert rec.step_time_s is None


@pytest.mark.parametrize(
    ("fault", "status", "needle"),
    [
        ("oom", "oom", "out of memory"),
        ("build_oom", "oom", "out of memory"),
        ("crash", "crashed", "something broke"),
        ("unsupported", "unsupported", "not implemented"),
    ],
)
def test_failures_become_statuses(fault, status, needle):
    rec = execute(RunSpec("fault", {"fault": fault}, _opts()))
    assert rec.status == status
    assert needle in rec.error
    assert rec.step_time_s is None


def test_nan_loss_is_timed_and_flagged():
    rec = execute(RunSpec("fault", {"fault": "nan"}, _opts()))
    assert rec.status == "nan"
    assert rec.step_time_s is not None and rec.step_time_s > 0
    assert "non-finite" in rec.error


def test_classify():
    assert classify(torch.OutOfMemoryError("x")) == "oom"
    assert classify(MemoryError()) == "oom"
    assert classify(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried")) == "oom"
    assert classify(RuntimeError("CUDA error: out of memory")) == "oom"
    assert classify(NotImplementedError("x")) == "unsupported"
    assert classify(RuntimeError("\"addmm\" not implemented for 'Half'")) == "unsupported"
    assert classify(ValueError("boom")) == "crashed"


def test_bad_options_fail_at_construction():
    with pytest.raises(ConfigError, match="precision = 'fp8'"):
        RunOptions(precision="fp8")
    with pytest.raises(ConfigError, match="threads = 0"):
        RunOptions(threads=0)
    with pytest.raises(ConfigError, match="optimizer = 'lamb'"):
        RunOptions(optimizer="lamb")


def test_cudnn_benchmark_is_a_study_axis_the_torch_backend_applies(monkeypatch):
    """The sample axis of issue 44: declared in paradnn.axes, a RunOptions field, set by the
    torch backend on CUDA, stored in its column and in the run key only when off."""
    import torch

    from paradnn.runner.execute import on_cuda

    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device: None)
    saved = torch.backends.cudnn.benchmark
    try:
        for on in (False, True):
            on_cuda(_opts(cudnn_benchmark=on), torch.device("cuda", 0))
            assert torch.backends.cudnn.benchmark is on
    finally:
        torch.backends.cudnn.benchmark = saved
    off = execute(RunSpec("fc", TINY["fc"], _opts(cudnn_benchmark=False)))
    on = execute(RunSpec("fc", TINY["fc"], _opts()))
    assert (off.status, off.cudnn_benchmark, on.cudnn_benchmark) == ("ok", False, True)
    assert off.run_key != on.run_key and "cudnn_benchmark" not in _opts().key_fields()
