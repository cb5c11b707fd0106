"""`simulate fit --from ops` (sim.opfit): an op row lowers to the GEMMs whose FLOPs `paradnn ops`
counts; parameters used to make synthetic op times are recovered, those the ops do not constrain
are kept and said so; held out by op name; a chip file that loads back; bad input exits 2."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from paradnn.errors import ConfigError
from paradnn.ops.table4 import PASSES, TABLE4, spec
from paradnn.sim import chip as sim_chip
from paradnn.sim import opfit
from paradnn.sim.steptime import params_of
from paradnn.store import open_store
from test_sim_model import CEILINGS, CPU

from conftest import run_cli

SCALES = (1.0, 1 / 16, 1 / 64)


def _truth(chip):
    return replace(params_of(chip), kernel_overhead_s=3e-5, efficiency={"fp32": 0.5}, k_half=40.0)


def _rows(chip, truth, scales=SCALES, noise=0.0):
    rows = []
    for scale in scales:
        for i, name in enumerate(TABLE4):
            s = spec(name, scale)
            for pass_ in PASSES:
                row = {
                    "op": s.op,
                    "name": s.name,
                    "shape": s.shape(),
                    "precision": "fp32",
                    "pass": pass_,
                    "threads": 2,
                    "device": "cpu",
                    "device_name": CPU,
                    "fingerprint": "f",
                    "status": "ok",
                    "flops": s.flops(pass_),
                    "measured_at": "2026-11-25T09:00:00",
                }
                plan = opfit.op_plan(opfit.op_shape(row), pass_ == "fwd+bwd", chip, "fp32", truth)
                t = opfit.op_time(plan, truth, chip.mem_bandwidth) * (1 + noise * (-1) ** i)
                rows.append({**row, "time_s": t, "samples": [t, 0.9 * t, 1.1 * t]})
    return rows


def test_lowering_counts_the_flops_paradnn_ops_counts():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    for name in TABLE4:
        s = spec(name)
        for pass_ in PASSES:
            row = {"op": s.op, "name": name, "shape": json.dumps(s.shape())}
            plan = opfit.op_plan(
                opfit.op_shape(row), pass_ == "fwd+bwd", chip, "fp32", params_of(chip)
            )
            assert plan.flops == s.flops(pass_)
            assert len(plan.k) == (1 if pass_ == "fwd" else 3)
    with pytest.raises(ConfigError, match=r"ops\.shape"):
        opfit.op_shape({"op": "matmul", "name": "x", "shape": {"a": [2, 3], "b": [4, 5]}})
    with pytest.raises(ConfigError, match=r"ops\.op"):
        opfit.op_shape({"op": "lstm", "name": "x", "shape": {}})


def test_fit_recovers_known_parameters_and_holds_out_by_name():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = opfit.samples(_rows(chip, _truth(chip)), chip)
    res = opfit.fit(chip, data)
    p = res.params
    assert p.eff("fp32") == pytest.approx(0.5, rel=0.05)
    assert p.k_half == pytest.approx(40.0, rel=0.05)
    assert p.kernel_overhead_s == pytest.approx(3e-5, rel=0.05)
    assert {"efficiency.fp32", "k_half", "kernel_overhead_s"} <= set(res.fitted)
    held = res.rows[res.rows["split"] == "holdout"]
    assert set(held["op"].map(opfit.base_name)) == set(opfit.HOLDOUT_OPS)
    assert len(held) == res.holdout_rows == 2 * 2 * len(SCALES)
    assert held["ape"].max() < 0.02
    assert set(opfit.summary(res.rows)["split"]) == {"fit", "holdout"}


def test_what_the_ops_do_not_constrain_is_kept_and_said():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = _truth(chip)
    data = opfit.samples(_rows(chip, truth, scales=(1.0,), noise=0.01), chip)
    res = opfit.fit(chip, data)
    # Table 4 at full size: seconds of compute-bound GEMMs; 30 µs of overhead and the
    # bandwidth are invisible.
    assert {"bw_efficiency", "kernel_overhead_s"} <= set(res.kept)
    assert res.params.bw_efficiency == params_of(chip).bw_efficiency
    assert res.params.eff("fp32") == pytest.approx(0.5, rel=0.05)
    assert "bw_efficiency kept" in res.params.source and "fitted: " in res.params.source
    lo = opfit.samples(_rows(chip, truth, scales=(1.0,)), chip, statistic="min")
    assert lo[0].measured_s == pytest.approx(0.9 * data[0].measured_s, rel=0.02)
    with pytest.raises(ConfigError, match="--statistic"):
        opfit.samples([], chip, statistic="mean")
    with pytest.raises(ConfigError, match="at least 2"):
        opfit.fit(chip, data[:1])


def test_ok_rows_keeps_the_newest_at_the_most_threads():
    rows = [
        {"name": "a", "precision": "fp32", "pass": "fwd", "status": "ok", "time_s": 1.0,
         "threads": 1, "device_name": "d", "measured_at": "1"},
        {"name": "a", "precision": "fp32", "pass": "fwd", "status": "ok", "time_s": 2.0,
         "threads": 2, "device_name": "d", "measured_at": "1"},
        {"name": "a", "precision": "fp32", "pass": "fwd", "status": "ok", "time_s": 3.0,
         "threads": 2, "device_name": "d", "measured_at": "2"},
        {"name": "b", "precision": "fp32", "pass": "fwd", "status": "oom", "time_s": None,
         "threads": 2, "device_name": "d", "measured_at": "2"},
    ]  # fmt: skip
    ok = opfit.ok_rows(rows)
    assert list(ok["time_s"]) == [3.0]
    assert opfit.ok_rows([]).empty


def _db(tmp_path, rows):
    db = tmp_path / "ops.db"
    ceilings = [
        {**c, "fingerprint": "f", "unit": "x", "measured_at": "2026-01-01T00:00:00"}
        for c in CEILINGS
    ]
    with open_store(db) as store:
        store.insert_rows("ceilings", ceilings)
        if rows:
            store.insert_rows("ops", rows)
    return str(db)


def test_cli_fit_from_ops_writes_a_chip_file_that_loads(capsys, tmp_path):
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    db = _db(tmp_path, _rows(chip, _truth(chip), scales=(1.0, 1 / 16), noise=0.02))
    out = tmp_path / "fitted.toml"
    code, text, err = run_cli(
        capsys, "simulate", "fit", "--db", db, "--from", "ops", "--out", str(out)
    )
    assert code == 0, err
    assert "holdout" in text and "matmul-4096" in text and "kept at base" in text
    loaded = sim_chip.load(str(out))
    assert loaded.step is not None and "--from ops" in loaded.step.source
    assert loaded.step.eff("fp32") == pytest.approx(0.5, rel=0.1)
    assert "Kept at its base value: bw_efficiency" in out.read_text()
    code, text, _ = run_cli(
        capsys, "simulate", "fit", "--db", db, "--from", "ops", "--holdout-ops", "", "-f", "json"
    )
    res = json.loads(text)
    assert code == 0 and res["holdout_runs"] == 0 and res["source"] == "ops"
    code, _, err = run_cli(
        capsys, "simulate", "fit", "--db", db, "--from", "ops", "--holdout-ops", "matmul-9"
    )
    assert code == 2 and "--holdout-ops = 'matmul-9'" in err
    code, _, err = run_cli(capsys, "simulate", "fit", "--db", db, "--from", "flops")
    assert code == 2 and "--from = 'flops'" in err


def test_cli_fit_from_ops_without_op_rows_exits_2(capsys, tmp_path):
    db = _db(tmp_path, [])
    code, _, err = run_cli(capsys, "simulate", "fit", "--db", db, "--from", "ops")
    assert code == 2
    assert "holds no ok op micro-benchmarks" in err and "paradnn ops --db" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_ops_faster_than_the_peak_are_a_warning(capsys, tmp_path):
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    fast = replace(_truth(chip), efficiency={"fp32": 1.0})
    rows = [{**r, "time_s": r["time_s"] / 3} for r in _rows(chip, fast, scales=(1.0,))]
    res = opfit.fit(chip, opfit.samples(rows, chip))
    assert len(res.warnings) == 1 and "above the peak used" in res.warnings[0]
    assert "WARNING" in res.params.source
    code, text, err = run_cli(
        capsys, "simulate", "fit", "--db", _db(tmp_path, rows), "--from", "ops"
    )
    assert code == 0, err
    assert "Warning: fp32:" in text


def test_the_fitted_source_names_every_held_out_op():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = opfit.samples(_rows(chip, _truth(chip)), chip)
    assert {s.op for s in data} == {"matmul", "conv2d"}  # each sample keeps its op kind
    res = opfit.fit(chip, data)
    assert res.holdout_ops == ("conv2d-II", "matmul-4096")
    assert "held out by op name: conv2d-II, matmul-4096; fitted: " in res.params.source


def test_a_conv_op_the_fit_cannot_lower_says_why():
    row = {
        "op": "conv2d",
        "name": "x",
        "shape": {"input_nhwc": [1, 8, 8, 3], "kernel_hwio": [3, 3, 3, 4], "stride": [1, 2]},
    }
    with pytest.raises(ConfigError) as e:
        opfit.op_shape(row)
    assert e.value.field == "ops.shape"
    assert e.value.allowed == (
        "not a Table 4 op shape (square kernel, equal strides, valid padding only)"
    )


def test_a_3x3_conv_op_may_run_by_winograd_at_four_times_the_maps_traffic():
    from paradnn.families.shapes import Conv2d
    from paradnn.sim.stepparams import defaults

    chip = sim_chip.load("v100-sxm2")
    sp = replace(defaults(chip.platform), fast_conv=2.25)  # a chip file offering Winograd
    conv = Conv2d("c", 2, 8, 16, 12, 12, 3, 1)  # valid padding: 10×10 outputs
    plan = opfit.op_plan(conv, True, chip, "fp32", sp)
    # maps = 2 · (8 + 16) · 10 · 10 = 4800; 2 (read, write) · 4 (tile expansion) · 4 bytes
    assert (plan.fast_bytes - plan.bytes).tolist() == [2 * 4 * 4800 * 4] * len(plan.bytes)
    assert plan.fast_peak_s.tolist() == pytest.approx((plan.peak_s / sp.fast_conv).tolist())


def test_an_op_costs_its_gemms_and_one_launch_per_gemm():
    from paradnn.families.shapes import Gemm
    from paradnn.sim.steptime import evaluate

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    sp = replace(_truth(chip), host_s_per_step=0.0, host_s_per_example=0.0)
    for train, launches in ((False, 1), (True, 3)):  # fwd; fwd, dgrad and wgrad
        plan = opfit.op_plan(Gemm("m", 64, 64, 64), train, chip, "fp32", sp)
        t = evaluate(plan, sp, chip.mem_bandwidth)
        assert t.kernels == launches
        assert opfit.op_time(plan, sp, chip.mem_bandwidth) == pytest.approx(
            t.gemm_s + launches * 3e-5
        )


def test_op_fit_rows_keep_their_device_and_thread_count():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = opfit.samples(_rows(chip, _truth(chip)), chip)
    assert {s.threads for s in data} == {2}
    res = opfit.fit(chip, data)
    assert set(res.rows["threads"]) == {2} and set(res.rows["device_name"]) == {CPU}


def test_an_op_plan_carries_no_examples_to_charge_host_time_for():
    from paradnn.families.shapes import Gemm
    from paradnn.sim.steptime import evaluate

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    sp = replace(_truth(chip), host_s_per_step=0.0, host_s_per_example=1e-3)
    plan = opfit.op_plan(Gemm("m", 64, 64, 64), True, chip, "fp32", sp)
    assert evaluate(plan, sp, chip.mem_bandwidth).host_s == 0.0


def test_a_conv_op_without_a_padding_key_is_valid_padding():
    row = {"op": "conv2d", "name": "c", "shape": {"input_nhwc": [2, 12, 12, 8],
           "kernel_hwio": [3, 3, 8, 16], "stride": [1, 1]}}  # fmt: skip
    conv = opfit.op_shape(row)
    assert (conv.batch, conv.in_ch, conv.out_ch, conv.out_h, conv.out_w) == (2, 8, 16, 10, 10)
    with pytest.raises(ConfigError, match="valid padding only"):
        opfit.op_shape({**row, "shape": {**row["shape"], "padding": "same"}})


def test_an_op_fit_from_a_zero_k_half_base_starts_and_finds_the_truth():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = _truth(chip)
    data = opfit.samples(_rows(chip, truth), chip)
    res = opfit.fit(chip, data, base=replace(truth, k_half=0.0))  # a TPU-like default
    assert res.params.k_half == pytest.approx(40.0, rel=0.05)


def test_op_rows_the_fit_cannot_place_name_the_value():
    with pytest.raises(ConfigError) as e:
        opfit.op_shape({"op": "lstm", "name": "x", "shape": {}})
    assert str(e.value) == "ops.op = 'lstm': must be matmul or conv2d"
    rows = [
        {**r, "device_name": "Unknown CPU"}
        for r in _rows(
            sim_chip.from_ceilings(CEILINGS, CPU),
            _truth(sim_chip.from_ceilings(CEILINGS, CPU)),
            scales=(1.0,),
        )
    ]
    with pytest.raises(ConfigError) as e:
        opfit.device_chip(rows, [], None, None, db="r.db")
    assert str(e.value).startswith("--db = 'Unknown CPU': no chip describes this device")


def test_the_conv2d_ops_measure_the_convolutions_rate_beside_the_matmuls():
    """Issue 42: a convolution's rate comes from measurement (its conv2d ops against the matmul
    ops of the same precision), not a fixed Winograd discount."""
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = replace(_truth(chip), conv_efficiency={"fp32": 0.45})
    res = opfit.fit(chip, opfit.samples(_rows(chip, truth), chip))
    assert res.params.conv_eff("fp32") == pytest.approx(0.45, rel=0.05)
    assert res.params.eff("fp32") == pytest.approx(0.5, rel=0.05)
    assert "conv_efficiency.fp32" in res.fitted
    held = res.rows[res.rows["split"] == "holdout"]
    assert held["ape"].max() < 0.02  # conv2d-II held out: predicted at the measured conv rate
    # matmuls alone say nothing about convolutions: their efficiency is not fitted
    matmuls = [r for r in _rows(chip, truth) if r["op"] == "matmul"]
    alone = opfit.fit(chip, opfit.samples(matmuls, chip))
    assert "conv_efficiency.fp32" not in alone.fitted
    assert alone.params.conv_eff("fp32") == params_of(chip).conv_eff("fp32")
