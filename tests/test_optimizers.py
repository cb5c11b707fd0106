"""Adam/AdamW, the optimizer implementations and the precision policy (issue 35, item 3)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

from paradnn import families, memory, optimizers
from paradnn.config import RunOptions, RunSpec
from paradnn.measure.saved_bytes import saved_tensor_bytes
from paradnn.measure.step import TrainStep, unsupported_implementation
from paradnn.runner.start import start_record

CPU = torch.device("cpu")
TINY = {"layers": 2, "nodes": 32, "input": 64, "output": 10, "batch": 16}
ENV = {"device": "cpu", "fingerprint": "f", "device_type": "cpu"}


def _step(optimizer, impl="auto", precision="fp32", policy="mixed", values=TINY, name="fc"):
    torch.manual_seed(0)
    fam = families.get(name)
    built = fam.build(fam.config(values), CPU, precision)
    return TrainStep(built, optimizer, precision, CPU, implementation=impl, policy=policy)


@pytest.mark.parametrize("impl", ["loop", "foreach", "fused"])
@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_adam_and_adamw_train_with_each_implementation(optimizer, impl):
    step = _step(optimizer, impl)
    losses = []
    for _ in range(15):
        step()
        losses.append(step.final_loss())
    assert losses[-1] < losses[0]
    assert step.implementation == impl
    p = next(step.module.parameters())
    assert {k for k in step.opt.state[p] if k != "step"} == {"exp_avg", "exp_avg_sq"}


def test_the_implementations_do_the_same_arithmetic():
    weights = []
    for impl in ("loop", "foreach", "fused"):
        step = _step("adamw", impl)
        for _ in range(3):
            step()
        weights.append(torch.cat([p.detach().flatten() for p in step.module.parameters()]))
    torch.testing.assert_close(weights[0], weights[1])
    torch.testing.assert_close(weights[0], weights[2], rtol=1e-4, atol=1e-6)


def test_auto_is_torchs_own_choice_and_told_explicitly():
    assert optimizers.resolve_implementation("auto", "cpu") == "loop"
    assert optimizers.resolve_implementation("auto", "cuda") == "foreach"
    step = _step("rmsprop")
    assert step.implementation == "loop" and step.opt.defaults["foreach"] is False


def test_fused_rmsprop_is_unsupported_before_any_work():
    reason = unsupported_implementation("rmsprop", "fused", CPU)
    assert reason is not None and "RMSprop has no fused" in reason
    assert unsupported_implementation("adam", "fused", CPU) is None  # torch 2.4+: CPU fused
    assert unsupported_implementation("sgd", "foreach", CPU) is None


def test_pure_policy_keeps_weights_grads_and_state_in_the_16_bit_type():
    step = _step("adam", "foreach", "bf16", "pure")
    for _ in range(5):
        step()
    p = next(step.module.parameters())
    assert p.dtype == p.grad.dtype == torch.bfloat16
    assert step.opt.state[p]["exp_avg_sq"].dtype == torch.bfloat16
    assert step.scaler is None and step.x.dtype == torch.bfloat16
    assert np.isfinite(step.final_loss())
    mixed = _step("adam", "foreach", "fp16", "mixed")  # fp32 master weights, loss scaled
    assert next(mixed.module.parameters()).dtype == torch.float32 and mixed.scaler is not None
    assert _step("adam", "loop", "fp32", "pure").policy == "mixed"  # fp32 has one policy


def test_the_record_and_key_hold_optimizer_implementation_and_policy():
    base = RunOptions(device="cpu", precision="bf16", optimizer="adam")
    pure = dataclasses.replace(base, precision_policy="pure")
    fused = dataclasses.replace(base, optimizer_impl="fused")
    recs = [start_record(RunSpec("fc", TINY, o), ENV) for o in (base, pure, fused)]
    assert len({r.run_key for r in recs}) == 3
    assert [r.precision_policy for r in recs] == ["mixed", "pure", "mixed"]
    assert recs[1].flags["weight_dtype"] == "bfloat16" and recs[1].flags["autocast_dtype"] is None
    # defaults leave every earlier key as it was; fp32's pure twin is its mixed run
    assert "optimizer_impl" not in base.key_fields() and "precision_policy" not in base.key_fields()
    f32 = RunOptions(precision="fp32")
    assert f32.key_fields() == dataclasses.replace(f32, precision_policy="pure").key_fields()


def test_a_run_records_the_implementation_that_ran_and_its_policy():
    from paradnn.runner.execute import execute

    from conftest import TINY_POLICY

    opts = RunOptions(device="cpu", threads=1, timing=TINY_POLICY, optimizer="adamw")
    rec = execute(RunSpec("fc", TINY, dataclasses.replace(opts, optimizer_impl="fused")))
    assert rec.status == "ok", rec.error
    assert rec.flags["optimizer_impl"] == "fused" and rec.precision_policy == "mixed"
    rec = execute(RunSpec("fc", TINY, opts))  # auto: torch's choice on a CPU
    assert rec.flags["optimizer_impl"] == "loop"
    bad = execute(
        RunSpec("fc", TINY, dataclasses.replace(opts, optimizer="rmsprop", optimizer_impl="fused"))
    )
    assert bad.status == "unsupported" and "no fused" in bad.error
    # pure bf16, emulated where the CPU lacks bf16 (the policy is what this test checks)
    pure = dataclasses.replace(opts, precision="bf16", precision_policy="pure", allow_emulated=True)
    rec = execute(RunSpec("fc", TINY, pure))
    assert rec.status in ("ok", "nan"), rec.error
    assert rec.precision_policy == "pure" and rec.flags["weight_dtype"] == "bfloat16"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--optimizer-impl", "vectorized"], "--optimizer-impl = 'vectorized': must be one of"),
        (["--precision-policy", "half"], "--precision-policy = 'half': must be one of"),
        (["--optimizer", "lamb"], "--optimizer = 'lamb': must be one of"),
    ],
)
def test_bad_values_are_one_line_exit_2(args, text, tmp_path):
    cmd = [sys.executable, "-m", "paradnn", "bench", "fc", "--db", str(tmp_path / "x.db"), *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert text in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_memory_model_counts_adam_state_and_no_master_copy_under_pure():
    fam = families.get("fc")
    cfg = fam.config(TINY)
    n = fam.params(cfg)
    mixed = memory.predict("fc", cfg, "bf16", "adam", device_type="cpu")
    pure = memory.predict("fc", cfg, "bf16", "adam", device_type="cpu", policy="pure")
    assert (mixed.weights, mixed.grads, mixed.optimizer_state) == (4 * n, 4 * n, 8 * n)
    assert (pure.weights, pure.grads, pure.optimizer_state) == (2 * n, 2 * n, 4 * n)
    sgd = memory.predict("fc", cfg, "fp32", "sgd", device_type="cpu", policy="pure")
    assert sgd.optimizer_state == 0 and sgd.weights == 4 * n  # fp32: no pure twin
    fused = memory.predict("fc", cfg, "fp32", "adam", device_type="cuda", implementation="fused")
    foreach = memory.predict("fc", cfg, "fp32", "adam", device_type="cuda")
    # foreach's sqrt(exp_avg_sq) for every parameter at once; fused allocates none
    assert foreach.peak_phase == "optimizer" and foreach.total > fused.total


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("fc", {"layers": 3, "nodes": 64, "input": 300, "output": 50, "batch": 64}),
        ("cnn", {"blocks": 1, "filters": 8, "image": 32, "output": 10, "batch": 4}),
    ],
)
@pytest.mark.parametrize(("precision", "policy"), [("bf16", "pure"), ("fp32", "mixed")])
def test_memory_model_matches_what_a_pure_adam_step_keeps(name, values, precision, policy):
    """Weights, gradients and optimizer state exactly; saved activations within 15 %."""
    cfg = families.get(name).config(values)
    measured = saved_tensor_bytes(_step("adam", "foreach", precision, policy, values, name))
    est = memory.predict(name, cfg, precision, "adam", device_type="cpu", policy=policy)
    assert est.grads == measured["grads"] and est.optimizer_state == measured["optimizer_state"]
    assert est.weights == pytest.approx(measured["weights"], abs=64)  # int64 BN counters
    assert est.activations == pytest.approx(measured["activations"], rel=0.15)
    assert est.activations_floor <= measured["activations"]


def test_jax_backend_refuses_what_it_cannot_run():
    from paradnn.runner.jax_execute import unsupported_reason

    opts = RunOptions(backend="jax", precision="bf16", precision_policy="pure")
    assert "precision_policy = pure" in unsupported_reason(opts)
    opts = RunOptions(backend="jax", optimizer_impl="fused")
    assert "optimizer_impl = fused" in unsupported_reason(opts)


def test_compare_pairs_a_pure_run_only_with_pure_runs():
    import pandas as pd

    from paradnn.analysis import speedup
    from paradnn.analysis.frames import from_frames

    ga = pd.DataFrame({"precision_policy": ["mixed"], "status": ["ok"]})
    assert "precision_policy" in speedup._key("precision", ga, ga)
    assert "precision_policy" not in speedup._key("precision_policy", ga, ga)
    old = from_frames([{"family": "fc", "config": {}, "status": "ok", "precision": "bf16"}])
    assert list(old.runs["precision_policy"]) == ["mixed"]  # rows stored before the policy
