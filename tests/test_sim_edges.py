"""Edges of the step-time model that a sampled `make mutation` (group sim) left untested: where
mixed precision's master-weight kernels are charged, what an efficiency table without the asked
precision falls back to, the bounds every entry point checks, and the names of the fields a
caller reads. Torch-free like the simulator."""

from __future__ import annotations

import dataclasses

import pytest

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.sim import chip as C
from paradnn.sim import model, steptime, studies
from paradnn.sim.interconnect import MAX_CHIPS
from paradnn.sim.stepparams import defaults

FC = {"layers": 2, "nodes": 256, "batch": 32}


def _plan(platform: str, precision: str) -> steptime.Plan:
    ch = C.load(platform)
    cfg = families.get("fc").config(FC)
    return steptime.build_plan("fc", cfg, ch, precision, "rmsprop", steptime.params_of(ch))


def test_master_weight_kernels_only_for_unfused_low_precision():
    fp32, bf16 = _plan("h100-sxm", "fp32"), _plan("h100-sxm", "bf16")
    assert fp32.master_kernels == 0.0 and fp32.master_bytes == 0.0  # fp32 has no master copy
    assert bf16.master_kernels == 2 * 6 and bf16.master_bytes > 0  # cast down and up, 6 tensors
    tpu = _plan("tpu-v3", "bf16")  # XLA fuses the casts into the optimizer update
    assert tpu.master_kernels == 0.0 and tpu.master_bytes > 0


def test_an_efficiency_table_without_the_precision_falls_back_in_order():
    sp = defaults(C.load("h100-sxm").platform)
    assert dataclasses.replace(sp, efficiency={"fp32": 0.8, "default": 0.6}).eff("bf16") == 0.6
    assert dataclasses.replace(sp, efficiency={"fp32": 0.8}).eff("bf16") == 0.8  # the first
    assert dataclasses.replace(sp, efficiency={}).eff("bf16") == 1.0


def test_entry_points_bound_their_counts():
    h100 = C.load("h100-sxm")
    with pytest.raises(ConfigError, match="--chips"):
        steptime.predict_step("fc", FC, h100, "fp32", chips=MAX_CHIPS + 1)
    with pytest.raises(ConfigError, match="--batch"):
        studies.mxu_study(batch=(1 << 16) + 1)
    with pytest.raises(ConfigError) as e:
        model.input_step(0.01, 32, 0.0)
    assert e.value.field == "loader_examples_per_s"


def test_an_unknown_platform_names_what_is_allowed():
    with pytest.raises(ConfigError) as e:
        C.load("no-such-chip")
    assert e.value.field == "--platform" and e.value.allowed.endswith(" or a .toml file")
    assert "h100-sxm" in e.value.allowed


def test_a_predicted_step_row_names_its_communication_terms():
    row = steptime.predict_step("fc", FC, C.load("h100-sxm"), "fp32", chips=4).row()
    for k in ("allreduce_link_s", "allreduce_hbm_s", "allreduce_latency_s", "comm_s"):
        assert k in row, k
    assert row["allreduce_latency_s"] > 0
