"""Measured ceilings (`measure.calibrate`) and the Table 4 op micro-benchmarks (`ops`).

CPU only, tiny sizes; nothing here asserts speed."""

from __future__ import annotations

import pytest
import torch

from paradnn.errors import ConfigError
from paradnn.measure import calibrate as cal
from paradnn.measure.stats import summarize
from paradnn.measure.timer import Timing
from paradnn.ops import PAPER_FLOPS, TABLE4, default_threads_list, run_ops, spec, thread_sweep

KiB = 1024

# Seed 002 (the accelerator study), §3.2 "Operators", Table 4 "Input tensor sizes for ops":
# the FLOPs row as printed, and the exact integers that 2N³ / 2·B·Ho·Wo·Cout·Cin·k² (valid
# padding) give.
EXACT_FWD = {
    "matmul-2048": 17_179_869_184,  # 1.72E+10
    "matmul-4096": 137_438_953_472,  # 1.37E+11
    "matmul-8192": 1_099_511_627_776,  # 1.10E+12
    "conv2d-I": 57_229_541_376,  # 5.72E+10: 256·109·109·64·3·7²·2
    "conv2d-II": 228_379_852_800,  # 2.28E+11: 128·110·110·128·64·3²·2
    "conv2d-III": 440_301_256_704,  # 4.40E+11: 256·54·54·256·128·3²·2
}


# --- Table 4 shapes and FLOPs ------------------------------------------------------------------


def test_table4_flops_match_the_paper_exactly():
    assert set(TABLE4) == set(PAPER_FLOPS) == set(EXACT_FWD)
    for name, s in TABLE4.items():
        assert s.flops("fwd") == EXACT_FWD[name]
        assert f"{s.flops('fwd'):.2E}" == f"{PAPER_FLOPS[name]:.2E}"  # the paper's printed value
        assert s.flops("fwd+bwd") == 3 * EXACT_FWD[name]


def test_table4_shapes_are_the_papers():
    assert [TABLE4[f"matmul-{n}"].n for n in (2048, 4096, 8192)] == [2048, 4096, 8192]
    c1, c2, c3 = TABLE4["conv2d-I"], TABLE4["conv2d-II"], TABLE4["conv2d-III"]
    assert c1.shape()["input_nhwc"] == [256, 224, 224, 3]
    assert c1.shape()["kernel_hwio"] == [7, 7, 3, 64] and c1.stride == 2
    assert c2.shape()["input_nhwc"] == [128, 112, 112, 64]
    assert c2.shape()["kernel_hwio"] == [3, 3, 64, 128] and c2.stride == 1
    assert c3.shape()["input_nhwc"] == [256, 56, 56, 128]
    assert c3.shape()["kernel_hwio"] == [3, 3, 128, 256] and c3.stride == 1
    assert (c1.out_hw, c2.out_hw, c3.out_hw) == ((109, 109), (110, 110), (54, 54))
    assert all(c.shape()["padding"] == "valid" for c in (c1, c2, c3))


def test_conv_flops_match_torch_output_shape_on_a_scaled_spec():
    s = spec("conv2d-I", 0.05)
    assert s.name == "conv2d-I@0.05" and s.kernel == 7 and s.stride == 2
    x = torch.zeros(s.batch, s.in_channels, s.height, s.width)
    w = torch.zeros(s.out_channels, s.in_channels, s.kernel, s.kernel)
    y = torch.nn.functional.conv2d(x, w, stride=s.stride)
    assert tuple(y.shape[2:]) == s.out_hw
    assert s.flops() == 2 * y.numel() * s.in_channels * s.kernel**2


def test_scale_names_and_errors():
    assert spec("matmul-2048", 0.0625).name == "matmul-2048@0.0625"
    assert spec("matmul-2048", 0.0625).n == 128
    assert spec("matmul-2048").name == "matmul-2048"
    with pytest.raises(ConfigError):
        spec("matmul-2048", 0.0)
    with pytest.raises(ConfigError):
        spec("conv2d-IV")


# --- ops rows ----------------------------------------------------------------------------------


def test_run_ops_rows_insert_and_read_back(store, tiny_policy):
    rows = run_ops(
        "cpu",
        precisions=("fp32", "tf32"),
        names=("matmul-2048", "conv2d-II"),
        threads=1,
        policy=tiny_policy,
        scale=0.02,
    )
    assert len(rows) == 2 * 2 * 2
    ok = [r for r in rows if r["precision"] == "fp32"]
    assert {(r["name"], r["pass"]) for r in ok} == {
        ("matmul-2048@0.02", "fwd"),
        ("matmul-2048@0.02", "fwd+bwd"),
        ("conv2d-II@0.02", "fwd"),
        ("conv2d-II@0.02", "fwd+bwd"),
    }
    for r in ok:
        assert r["status"] == "ok", r["error"]
        assert r["time_s"] > 0 and r["achieved_flops"] == pytest.approx(r["flops"] / r["time_s"])
        assert r["threads"] == 1 and r["device"] == "cpu" and r["samples"]
        assert r["utilization_datasheet"] is None and "utilization_datasheet" in r["nulls"]
        assert r["flops"] == spec(r["name"].split("@")[0], 0.02).flops(r["pass"])
    tf32 = [r for r in rows if r["precision"] == "tf32"]
    assert all(r["status"] == "unsupported" and "tf32" in r["error"] for r in tf32)
    assert all(r["time_s"] is None and "time_s" in r["nulls"] for r in tf32)

    ids = store.insert_rows("ops", rows)
    assert len(ids) == len(rows)
    back = store.rows("ops", {"precision": "fp32"})
    assert len(back) == 4
    assert back[0]["shape"] == ok[0]["shape"] and back[0]["nulls"] == ok[0]["nulls"]
    assert back[0]["fingerprint"] == ok[0]["fingerprint"]


def test_run_ops_bf16_and_thread_restore(tiny_policy):
    before = torch.get_num_threads()
    from paradnn.precisions import cpu_reason

    rows = run_ops(
        "cpu", ("bf16",), ("matmul-4096",), ("fwd",), threads=2, policy=tiny_policy, scale=0.01
    )
    assert torch.get_num_threads() == before
    native = cpu_reason("bf16") is None
    assert rows[0]["status"] == ("ok" if native else "unsupported")
    heard = []
    rows = run_ops(
        "cpu", ("bf16",), ("matmul-4096",), ("fwd",), threads=2, policy=tiny_policy, scale=0.01,
        allow_emulated=True, progress=heard.append,
    )  # fmt: skip
    assert rows[0]["status"] == "ok" and rows[0]["precision"] == "bf16"
    assert ("emulated" in rows[0]["nulls"]) == (not native)
    assert heard and all(m.startswith("matmul-4096@0.01 bf16 fwd") for m in heard)


def test_thread_sweep_records_thread_counts(tiny_policy):
    assert default_threads_list(12) == [1, 2, 4, 8, 12]
    assert default_threads_list(2) == [1, 2]
    assert default_threads_list(1) == [1]
    rows = thread_sweep(["matmul-2048"], [1, 2], policy=tiny_policy, scale=0.01)
    assert [r["threads"] for r in rows] == [1, 2]
    assert [r["env"]["threads"] for r in rows] == [1, 2]
    assert all(r["status"] == "ok" and r["pass"] == "fwd" for r in rows)
    with pytest.raises(ConfigError):
        thread_sweep(["matmul-2048"], [0])


def test_run_ops_rejects_bad_arguments():
    with pytest.raises(ConfigError):
        run_ops("cpu", passes=("bwd",))
    with pytest.raises(ConfigError):
        run_ops("cpu", precisions=("fp64",))


# --- calibrate ---------------------------------------------------------------------------------


def test_calibrate_tiny_rows(store, tiny_policy):
    rows = cal.calibrate(
        "cpu",
        ("fp32", "tf32", "bf16"),
        sizes=(16, 32),
        policy=tiny_policy,
        threads=1,
        stream_bytes=64 * KiB,
    )
    kinds = [(r["kind"], r["precision"]) for r in rows]
    from paradnn.precisions import cpu_reason

    if cpu_reason("bf16"):  # not native here: skipped with the reason (no row)
        assert kinds == [("matmul", "fp32"), ("copy", None), ("triad", None)]
        assert "bf16" in rows[0]["detail"]["skipped"]
        return
    assert kinds == [("matmul", "fp32"), ("matmul", "bf16"), ("copy", None), ("triad", None)]
    for r in rows:
        assert (
            r["value"] > 0 and r["device"] == "cpu" and r["fingerprint"] == r["env"]["fingerprint"]
        )
        assert r["device_name"] == r["env"]["cpu_model"]
        assert r["measured_at"].endswith("+00:00")
        assert "tf32" in r["detail"]["skipped"]  # unsupported on CPU: no row, reason kept
        assert r["detail"]["threads"] == 1
    for r in rows[:2]:
        d = r["detail"]
        assert r["unit"] == "FLOP/s"
        assert set(d["sizes"]) == {"16", "32"} and d["best_size"] in (16, 32)
        for n, s in d["sizes"].items():
            assert s["median_s"] > 0 and s["n_samples"] >= tiny_policy.min_samples
            assert s["flops"] == 2 * int(n) ** 3
            assert {"ci_low_s", "ci_high_s"} <= set(s)
        best = d["sizes"][str(d["best_size"])]
        assert r["value"] == pytest.approx(best["flops"] / best["median_s"])
        assert r["value"] == max(s["flop_per_s"] for s in d["sizes"].values())
    assert rows[0]["detail"]["dtype"] == "float32" and rows[1]["detail"]["dtype"] == "bfloat16"
    for r in rows[2:]:
        assert r["unit"] == "B/s" and r["detail"]["elements"] == 16 * KiB
        assert r["value"] == pytest.approx(r["detail"]["bytes_moved"] / r["detail"]["median_s"])

    store.insert_rows("ceilings", rows)
    back = store.rows("ceilings")
    assert [(r["kind"], r["precision"]) for r in back] == kinds
    assert back[0]["detail"]["best_size"] == rows[0]["detail"]["best_size"]


def _fake_measure(times: dict[int, float]):
    """A timing function that reports a fixed per-step time per matmul size (read off the
    step's default arguments) and 1 ms for the stream kernels."""

    def fake(step, clock, policy, progress=None) -> Timing:
        step()
        defaults = step.__defaults__ or ()
        n = defaults[0].shape[0] if defaults else None
        t = times.get(n, 1e-3)
        samples = [t] * 10
        return Timing(t, 0, 0.0, True, 1, samples, summarize(samples), True, "ci_target", 0.0, t)

    return fake


def test_sizes_grow_only_within_the_budget():
    # n=8 takes 1 s a step; n=16 would take ~8 s a step, ≥ 8 + 80 + 80 s in all: over 60 s.
    fake = _fake_measure({8: 1.0, 16: 8.0})
    heard = []
    (r,) = cal.calibrate(
        "cpu",
        ("fp32",),
        sizes=(16, 8),
        threads=1,
        kinds=("matmul",),
        measure_fn=fake,
        budget_s=60,
        progress=heard.append,
    )
    d = r["detail"]
    assert set(d["sizes"]) == {"8"} and d["size_reached"] == 8 and d["budget_s"] == 60
    assert "n=16 would take ~168 s" in d["stopped"]
    assert any("fp32 matmul n=8:" in m and "GFLOP/s" in m for m in heard)
    assert any("stopping before n=16" in m for m in heard)
    est = cal.size_estimate_s(16, 8, 1.0, cal.CALIBRATE_POLICY)
    assert est == pytest.approx(8 + 80 + 8 * cal.CALIBRATE_POLICY.min_samples)
    # with room for it, the larger size is measured
    (r,) = cal.calibrate(
        "cpu", ("fp32",), sizes=(8, 16), threads=1, kinds=("matmul",), measure_fn=fake,
        budget_s=1000,
    )  # fmt: skip
    assert set(r["detail"]["sizes"]) == {"8", "16"} and "stopped" not in r["detail"]
    with pytest.raises(ConfigError, match="budget"):
        cal.calibrate("cpu", ("fp32",), budget_s=0.0, measure_fn=fake)


def test_default_precisions_follow_the_device(monkeypatch):
    fake = _fake_measure({8: 1e-3})
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PARADNN_CPU_FLAGS", "avx2 fma")  # what an AVX2-only CPU reports
    from paradnn.runner.execute import run_environment

    run_environment.cache_clear()
    try:
        rows = cal.calibrate("cpu", sizes=(8,), threads=1, kinds=("matmul",), measure_fn=fake)
        assert [r["precision"] for r in rows] == ["fp32"]
        # asked for by name: skipped with the reason, unless emulation is allowed
        rows = cal.calibrate(
            "cpu", ("fp32", "bf16"), sizes=(8,), threads=1, kinds=("matmul",), measure_fn=fake
        )
        assert [r["precision"] for r in rows] == ["fp32"]
        assert "no native bf16" in rows[0]["detail"]["skipped"]["bf16"]
        rows = cal.calibrate(
            "cpu", ("bf16",), sizes=(8,), threads=1, kinds=("matmul",), measure_fn=fake,
            allow_emulated=True,
        )  # fmt: skip
        assert [r["precision"] for r in rows] == ["bf16"]
        assert "no native bf16" in rows[0]["detail"]["emulated"]
    finally:
        run_environment.cache_clear()


def test_best_size_is_the_highest_flop_rate():
    # n=8: 1024 FLOP in 1 s; n=16: 8192 FLOP in 2 s (the winner); n=32: 65536 FLOP in 64 s.
    fake = _fake_measure({8: 1.0, 16: 2.0, 32: 64.0})
    rows = cal.calibrate(
        "cpu",
        ("fp32",),
        sizes=(8, 16, 32),
        threads=1,
        kinds=("matmul",),
        measure_fn=fake,
        budget_s=10_000,
    )
    (r,) = rows
    assert r["detail"]["best_size"] == 16
    assert r["value"] == pytest.approx(2 * 16**3 / 2.0)
    assert r["detail"]["sizes"]["32"]["flop_per_s"] == pytest.approx(2 * 32**3 / 64.0)
    assert cal.best_size({1: {"flop_per_s": 5.0}, 2: {"flop_per_s": 5.0}}) == 1
    with pytest.raises(ValueError):
        cal.best_size({})


def test_bandwidth_byte_accounting():
    assert cal.copy_bytes(1000, 4) == 8000
    assert cal.triad_bytes(1000, 4) == 12000
    assert cal.matmul_flops(1024) == 2 * 1024**3
    fake = _fake_measure({})
    rows = cal.calibrate(
        "cpu", (), threads=1, stream_bytes=4 * KiB, kinds=("copy", "triad"), measure_fn=fake
    )
    copy, triad = rows
    assert copy["detail"]["elements"] == triad["detail"]["elements"] == 1024
    assert copy["detail"]["bytes_moved"] == 2 * 1024 * 4 and copy["detail"]["arrays"] == 2
    assert triad["detail"]["bytes_moved"] == 3 * 1024 * 4 and triad["detail"]["arrays"] == 3
    assert copy["value"] == pytest.approx(8192 / 1e-3)
    assert triad["value"] == pytest.approx(12288 / 1e-3)


def test_triad_computes_a_equals_b_plus_s_c():
    b, c, a = torch.ones(4), torch.full((4,), 2.0), torch.zeros(4)
    torch.add(b, c, alpha=cal.TRIAD_SCALAR, out=a)
    assert torch.equal(a, torch.full((4,), 1.0 + cal.TRIAD_SCALAR * 2.0))


def test_calibrate_skips_unsupported_precisions_without_rows(tiny_policy):
    rows = cal.calibrate(
        "cpu",
        ("tf32",),
        sizes=(8,),
        policy=tiny_policy,
        threads=1,
        stream_bytes=4 * KiB,
        kinds=("matmul", "copy"),
    )
    assert [r["kind"] for r in rows] == ["copy"]
    assert "CPUs have none" in rows[0]["detail"]["skipped"]["tf32"]


def test_calibrate_rejects_bad_arguments():
    with pytest.raises(ConfigError):
        cal.calibrate("cpu", ("fp64",))
    with pytest.raises(ConfigError):
        cal.calibrate("cpu", kinds=("scale",))


def test_a_budget_that_stops_below_a_large_matmul_gives_no_ceiling(monkeypatch):
    """The best of small sizes is no ceiling: a run would be measured against a fraction of what
    the device can do (utilization in the thousands of percent)."""
    fake = _fake_measure({8: 1.0})  # n=2048 would take ~8.6e6 s: the budget stops there
    (r,) = cal.calibrate(
        "cpu", ("fp32",), sizes=(8, 2048), threads=1, kinds=("matmul",), measure_fn=fake,
        budget_s=60,
    )  # fmt: skip
    d = r["detail"]
    assert d["size_reached"] == 8 and "n=2048 would take" in d["stopped"]
    assert d["too_small"].startswith("the budget stopped at n=8, below the n=1024 a ceiling needs")
    assert d["too_small"].endswith("raise --budget")
    # what the worker stores: the measurement kept, no value, a status that is not ok
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: [r])
    from paradnn.runner import tasks

    row = tasks.run_kernel("ceiling", {"precision": "fp32", "kind": "matmul"}, "x", "cpu", 1)
    assert row["status"] == "too_small" and row["value"] is None
    assert row["error"] == d["too_small"] and row["detail"]["sizes"]["8"]


@pytest.mark.parametrize(
    ("reached", "stopped", "sizes", "short"),
    [
        (1024, "n=2048 would take ~90 s", (512, 1024, 2048), False),  # a large size was measured
        (512, None, (256, 512), False),  # nothing larger asked for: the caller's choice
        (512, "n=1024 would take ~90 s", (256, 512, 1024), True),
        (16, "n=32 would take ~9 s", (8, 16, 32), False),  # no size ≥ 1024 asked for
    ],
)
def test_what_counts_as_too_small_for_a_ceiling(reached, stopped, sizes, short):
    detail = {"size_reached": reached, **({"stopped": stopped} if stopped else {})}
    assert (cal.too_small(detail, sizes, 1024) is not None) is short
