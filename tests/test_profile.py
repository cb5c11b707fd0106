"""Per-op profile of one training step (CPU; tiny models). Never asserts speed."""

import pytest
import torch

from paradnn import families
from paradnn.measure.flops import count_step
from paradnn.measure.opcount import OpCount, tensor_bytes
from paradnn.measure.profile import COLUMNS, profile_config, profile_step_full
from paradnn.measure.step import TrainStep
from paradnn.records import RunRecord

from conftest import TINY

F32 = 4


def _ops(fn):
    with OpCount() as oc:
        fn()
    return {s.op: s for s in oc.stats}


def test_matmul_bytes_are_inputs_plus_output():
    m, k, n = 3, 5, 7
    a, b = torch.randn(m, k), torch.randn(k, n)
    st = _ops(lambda: torch.mm(a, b))["aten::mm"]
    assert st.bytes == (m * k + k * n + m * n) * F32
    assert st.flops == 2 * m * k * n and st.calls == 1
    assert st.shapes == ((m, k), (k, n)) and st.dtype == "torch.float32"


def test_views_move_nothing():
    a = torch.randn(4, 6)
    stats = _ops(lambda: (a.view(6, 4), a.t(), a[1:], a.expand(2, 4, 6)))
    assert stats and all(s.bytes == 0 and s.flops == 0 for s in stats.values())


def test_in_place_op_reads_and_writes_its_tensor():
    a = torch.randn(8, 8)
    st = _ops(lambda: a.mul_(2.0))["aten::mul_"]
    assert st.bytes == 2 * 64 * F32


def test_a_tensor_read_twice_counts_once():
    a = torch.randn(10)
    assert _ops(lambda: a + a)["aten::add"].bytes == (10 + 10) * F32  # one read, one write
    b = torch.randn(10, 10)
    assert _ops(lambda: b @ b)["aten::mm"].bytes == 2 * 100 * F32


def test_expanded_tensor_counts_its_distinct_elements():
    bias = torch.randn(5)
    assert tensor_bytes(bias.expand(100, 5)) == 5 * F32


def test_meta_and_cpu_count_the_same_bytes_for_a_matmul():
    def go(dev):
        a, b = torch.empty(3, 4, device=dev), torch.empty(4, 2, device=dev)
        return _ops(lambda: a @ b)["aten::mm"].bytes

    assert go("meta") == go("cpu") == (12 + 8 + 6) * F32


def _step(family, device="cpu"):
    fam = families.get(family)
    cfg = fam.config(TINY[family])
    dev = torch.device(device)
    with dev:
        built = fam.build(cfg, dev, "fp32")
    return TrainStep(built, "rmsprop", "fp32", dev)


@pytest.mark.parametrize("family", ["fc", "cnn", "rnn"])
def test_profile_rows(family):
    step = _step(family)
    prof = profile_step_full(step, "cpu", warmup=1)
    rows = prof.rows
    assert rows and all(tuple(r) == COLUMNS for r in rows)
    assert sum(r["flops"] for r in rows) == count_step(step, "cpu").total == prof.total_flops
    for r in rows:
        assert r["calls"] >= 1 and r["bytes"] >= 0
        if r["bytes"]:
            assert r["intensity"] == pytest.approx(r["flops"] / r["bytes"])
        else:
            assert r["intensity"] is None
        t = r["device_time_s"]
        assert t is None or t >= 0
        if t:
            assert r["achieved_flops"] == pytest.approx(r["flops"] / t)
    heavy = [r for r in rows if r["op"] in ("aten::mm", "aten::addmm", "aten::convolution")]
    heavy += [r for r in rows if "rnn" in r["op"] or "convolution_backward" in r["op"]]
    assert heavy and all(r["device_time_s"] and r["device_time_s"] > 0 for r in heavy)
    assert prof.unattributed_s >= 0
    assert set(prof.join) <= {"shapes", "name", "none"}


def test_opcount_works_on_meta_and_matches_the_counter():
    step = _step("cnn", "meta")
    step()
    with OpCount() as oc:
        step()
    assert oc.total_flops == count_step(step, "meta").total > 0


def test_rows_insert_into_the_store(store):
    rows = profile_config("fc", TINY["fc"])
    rid = store.insert(
        RunRecord.flat(
            run_key="k",
            family="fc",
            config=TINY["fc"],
            precision="fp32",
            optimizer="rmsprop",
            device="cpu",
            status="ok",
        )
    )
    ids = store.insert_rows("op_profile", [{**r, "run_id": rid} for r in rows])
    assert len(ids) == len(rows)
    back = store.rows("op_profile", {"run_id": rid})
    assert sum(r["flops"] for r in back) == sum(r["flops"] for r in rows)
    assert any(r["op"] == "aten::addmm" and r["shapes"][1] == [4, 12] for r in back)


def test_profile_averages_several_steps_after_a_profiler_warm_up(monkeypatch):
    """Per-op time is the mean over PROFILED_STEPS steps, not one (issue 22)."""
    from torch import profiler as tp

    from paradnn.measure import profile as prof_mod

    calls = {"n": 0}
    step = _step("fc")

    def counting():
        calls["n"] += 1
        return step()

    seen = {}
    real = tp.schedule

    def spy(**kw):
        seen.update(kw)
        return real(**kw)

    monkeypatch.setattr(prof_mod, "schedule", spy)
    prof = profile_step_full(counting, "cpu", warmup=1, steps=3)
    # warm-up 1, profiler warm-up 1, 3 profiled, 1 counted
    assert calls["n"] == 1 + 1 + 3 + 1
    assert seen == {"wait": 0, "warmup": 1, "active": 3, "repeat": 1}
    assert prof.extra["profiled_steps"] == 3
    # calls are per step (the counted step's), not summed over the profiled steps
    assert all(r["calls"] == 1 for r in prof.rows if r["op"] == "aten::addmm")


def test_profiling_prints_no_kineto_lines(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from paradnn.measure.profile import profile_config\n"
        "rows = profile_config('fc', {'layers': 1, 'nodes': 8, 'input': 8, 'output': 4, "
        "'batch': 4})\n"
        "print(len(rows))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) > 0
    assert "USDT" not in p.stderr and "profiler_start" not in p.stderr, p.stderr
