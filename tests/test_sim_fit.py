"""`simulate fit` (sim.fit): the split is by config hash and stable; parameters used to make
synthetic step times are recovered; the held-out error is reported apart; a chip file is written
that loads back."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from paradnn.errors import ConfigError
from paradnn.records import RunRecord
from paradnn.sim import chip as sim_chip
from paradnn.sim import fit as sim_fit
from paradnn.sim.steptime import build_plan, evaluate, params_of
from paradnn.store import open_store
from test_sim_model import CEILINGS, CPU

from conftest import run_cli


def _configs():
    out = []
    for layers in (1, 2):
        for nodes in (32, 128, 512):
            for batch in (16, 64, 256):
                out.append(("fc", {"layers": layers, "nodes": nodes, "batch": batch}))
    for filters in (4, 8):
        for batch in (2, 8):
            out.append(("cnn", {"filters": filters, "batch": batch, "image": 16, "blocks": 1}))
    return out


def _truth(chip):
    base = params_of(chip)
    return replace(
        base, kernel_overhead_s=3e-5, efficiency={"fp32": 0.5}, k_half=40.0, bw_efficiency=0.6
    )


def _frame(chip, truth, noise=0.0):
    from paradnn import families

    rows = []
    for i, (fam, cfg) in enumerate(_configs()):
        full = dict(families.get(fam).config(cfg).__dict__)
        plan = build_plan(fam, families.get(fam).config(cfg), chip, "fp32", "sgd", truth)
        t = evaluate(plan, truth, chip.mem_bandwidth).total_s * (1 + noise * ((-1) ** i))
        rows.append(
            {
                "family": fam,
                "config": full,
                "precision": "fp32",
                "optimizer": "sgd",
                "status": "ok",
                "step_time_s": t,
                "step_time_min_s": t * 0.9,
                "device_name": CPU,
            }
        )
    return pd.DataFrame(rows)


def test_split_is_by_config_hash_and_stable():
    a = sim_fit.split_of("fc", "fp32", {"batch": 1, "nodes": 2}, 30)
    assert a == sim_fit.split_of("fc", "fp32", {"nodes": 2, "batch": 1}, 30)
    splits = [sim_fit.split_of("fc", "fp32", {"batch": b}, 30) for b in range(400)]
    assert 0.2 < splits.count("holdout") / 400 < 0.4
    assert sim_fit.split_of("fc", "fp32", {"batch": 1}, 0) == "fit"


def test_fit_recovers_known_parameters():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = _truth(chip)
    data = sim_fit.samples(_frame(chip, truth), chip)
    res = sim_fit.fit(chip, data)
    p = res.params
    assert p.kernel_overhead_s == pytest.approx(3e-5, rel=0.05)
    assert p.eff("fp32") == pytest.approx(0.5, rel=0.05)
    assert p.k_half == pytest.approx(40.0, rel=0.1)
    for key in ("kernel_overhead_s", "efficiency.fp32", "k_half"):
        rep = res.identified[key]
        assert rep.status == "identified" and rep.interval[0] <= rep.value <= rep.interval[1]
    # these runs hardly touch memory: the bandwidth efficiency is not identified, and stays
    # at its prior (0.7) instead of being bent to what the runs cannot show
    bw = res.identified["bw_efficiency"]
    assert bw.status == "not identified" and p.bw_efficiency == bw.prior == 0.7
    held = res.rows[res.rows["split"] == "holdout"]
    assert len(held) == res.holdout_runs > 0 and held["ape"].max() < 0.02
    assert set(sim_fit.summary(res.rows)["split"]) == {"fit", "holdout"}


def test_statistic_min_and_bad_values():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    frame = _frame(chip, _truth(chip))
    lo = sim_fit.samples(frame, chip, statistic="min")
    assert lo[0].measured_s == pytest.approx(0.9 * frame["step_time_s"][0])
    with pytest.raises(ConfigError, match="--statistic"):
        sim_fit.samples(frame, chip, statistic="mean")
    with pytest.raises(ConfigError, match="at least 5"):
        sim_fit.fit(chip, lo[:3])


def test_cli_fit_writes_a_chip_file_that_loads(capsys, tmp_path):
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    db = tmp_path / "r.db"
    with open_store(db) as store:
        for i, r in enumerate(_frame(chip, _truth(chip), noise=0.05).to_dict("records")):
            store.insert(RunRecord.flat(run_key=f"k{i}", device="cpu", **r))
        store.insert_rows(
            "ceilings",
            [
                {**c, "fingerprint": "f", "unit": "x", "measured_at": "2026-01-01T00:00:00"}
                for c in CEILINGS
            ],
        )
    out = tmp_path / "fitted.toml"
    code, text, err = run_cli(capsys, "simulate", "fit", "--db", str(db), "--out", str(out))
    assert code == 0, err
    assert "holdout" in text and "kernel_overhead_s" in text
    loaded = sim_chip.load(str(out))
    assert loaded.step is not None and loaded.step.source.startswith("fitted by")
    assert loaded.step.kernel_overhead_s == pytest.approx(3e-5, rel=0.3)
    code, text, _ = run_cli(capsys, "simulate", "fit", "--db", str(db), "-f", "json")
    assert code == 0 and json.loads(text)["holdout_runs"] > 0
    code, _, err = run_cli(capsys, "simulate", "fit", "--db", str(db), "--out", "x.txt")
    assert code == 2 and "--out = 'x.txt'" in err
    code, _, err = run_cli(capsys, "simulate", "fit", "--db", str(db), "--holdout", "95")
    assert code == 2 and "--holdout" in err


def test_heldout_data_for_the_report():
    from types import SimpleNamespace

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = SimpleNamespace(runs=_frame(chip, _truth(chip)), ceilings=pd.DataFrame(CEILINGS))
    df = sim_fit.heldout_data(data)
    assert set(df["split"]) == {"fit", "holdout"} and (df["device_name"] == CPU).all()
    assert (df["kind"] == "prediction").all() and df["mdape"].max() < 0.02
    empty = sim_fit.heldout_data(SimpleNamespace(runs=pd.DataFrame(), ceilings=None))
    assert empty.empty


def test_a_fitted_chip_file_keeps_the_unit_count_and_loads_back(tmp_path):
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    res = sim_fit.fit(chip, sim_fit.samples(_frame(chip, _truth(chip)), chip))
    res = replace(res, params=replace(res.params, units=80))
    text = sim_fit.chip_toml(chip, res, CPU)
    assert "\nunits = 80\n" in text
    path = tmp_path / "fitted.toml"
    path.write_text(text)
    assert sim_chip.load(str(path)).step.units == 80
    no_units = sim_fit.chip_toml(chip, replace(res, params=replace(res.params, units=None)), CPU)
    assert "units =" not in no_units


def test_the_fit_keeps_efficiencies_at_most_one():
    # step times made with an impossible efficiency of 2.5: the bounded fit stops at 1
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    fast = replace(_truth(chip), efficiency={"fp32": 2.5}, bw_efficiency=0.6)
    res = sim_fit.fit(chip, sim_fit.samples(_frame(chip, fast), chip))
    assert res.params.eff("fp32") <= 1.0 + 1e-9 and res.params.bw_efficiency <= 1.0 + 1e-9
    assert res.params.kernel_overhead_s >= 1e-8


def test_fit_inputs_name_the_flag_and_what_is_allowed():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    frame = _frame(chip, _truth(chip))
    with pytest.raises(ConfigError) as e:
        sim_fit.samples(frame, chip, statistic="mean")
    assert e.value.allowed == "must be one of " + ", ".join(sim_fit.STATISTICS)
    two = pd.concat([frame, frame.assign(device_name="Other CPU")], ignore_index=True)
    with pytest.raises(ConfigError) as e:
        sim_fit.device_chip(two, CEILINGS, None, None)
    assert e.value.field == "--device" and "required" in str(e.value)
    assert e.value.allowed == f"required: the database holds Other CPU, {CPU}"


def test_heldout_data_leaves_out_a_device_with_too_few_runs():
    from types import SimpleNamespace

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    few = _frame(chip, _truth(chip)).iloc[:3]
    df = sim_fit.heldout_data(SimpleNamespace(runs=few, ceilings=pd.DataFrame(CEILINGS)))
    assert df.empty and list(df.columns) == [
        "device_name", "family", "split", "runs", "mdape", "mape", "kind"
    ]  # fmt: skip


def test_five_runs_outside_the_held_out_part_are_enough_to_fit():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = sim_fit.samples(_frame(chip, _truth(chip)), chip)
    five = [s for s in data if s.split == "fit"][:5]
    assert len(five) == 5
    assert sim_fit.fit(chip, five).fitted_runs == 5
    with pytest.raises(ConfigError) as e:
        sim_fit.fit(chip, five[:4])
    assert str(e.value).startswith("--db: has 4 runs to fit; a fit needs at least 5 ok")


def _op_sample(name, seconds):
    from paradnn.sim import opfit

    row = {"op": "matmul", "name": name, "shape": {"a": [1024, 1024], "b": [1024, 1024]},
           "precision": "fp32", "pass": "fwd", "device_name": CPU, "time_s": seconds}  # fmt: skip
    return opfit.samples(pd.DataFrame([row]), sim_chip.from_ceilings(CEILINGS, CPU))[0]


def test_an_op_above_the_peak_shows_the_peak_in_gflops():
    from paradnn.sim import opfit

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    # 2 · 1024³ = 2.147e9 FLOP in 10 ms: 215 GFLOP/s, above the measured 2e11 FLOP/s peak
    (line,) = opfit.above_peak(chip, [_op_sample("m", 0.01)])
    assert line.startswith("fp32: m fwd ran at 215 GFLOP/s, above the peak used (200 GFLOP/s, ")
    assert opfit.above_peak(chip, [_op_sample("m", 0.02)]) == []  # 107 GFLOP/s


def test_one_outlying_op_barely_moves_the_fitted_efficiency():
    from paradnn.sim import opfit
    from test_sim_opfit import _rows
    from test_sim_opfit import _truth as op_truth

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = replace(op_truth(chip), k_half=params_of(chip).k_half)  # E alone is left to fit
    rows = _rows(chip, truth, scales=(1.0,))
    rows[0] = {**rows[0], "time_s": rows[0]["time_s"] * 10}  # one op 10× slow (a held-up run)
    data = opfit.samples(rows, chip)
    slow = [s for s in data if s.measured_s == rows[0]["time_s"]]
    assert len(slow) == 1 and slow[0].split == "fit" and len(data) == 12  # 8 fitted
    res = opfit.fit(chip, data)
    assert list(res.fitted) == ["efficiency.fp32"]
    # soft-L1 weighs the outlier's log-residual of ln 10 = 2.3 down ~23×; a plain least-squares
    # fit of 8 rows would pull E = 0.5 down to 0.5 · 10^(-1/8) = 0.375
    assert res.params.eff("fp32") == pytest.approx(0.5, rel=0.03)


def test_one_op_row_is_too_few_to_fit_and_the_error_says_what_to_do():
    from paradnn.sim import opfit

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    with pytest.raises(ConfigError) as e:
        opfit.fit(chip, [_op_sample("m", 0.02)])  # "m" is not held out: one row to fit
    assert str(e.value) == (
        "--db: has 1 op rows to fit; a fit needs at least 2 ok op rows outside the held-out ops: "
        "measure more (`paradnn ops --db ...`) or hold fewer out (--holdout-ops)"
    )


def test_op_rows_without_a_threads_column_keep_their_device_and_no_thread_count():
    from paradnn.sim import opfit

    row = {"op": "matmul", "name": "m", "shape": {"a": [64, 32], "b": [32, 16]}, "status": "ok",
           "precision": "fp32", "pass": "fwd", "device_name": CPU, "time_s": 0.01}  # fmt: skip
    assert opfit.ok_rows([row])["threads"].isna().all()
    (s,) = opfit.samples([row], sim_chip.from_ceilings(CEILINGS, CPU))
    assert s.threads is None and s.device_name == CPU


def test_a_matmul_row_becomes_a_gemm_named_after_the_op():
    from paradnn.families.shapes import Gemm
    from paradnn.sim import opfit

    row = {"op": "matmul", "name": "mm", "shape": {"a": [64, 32], "b": [32, 16]}}
    # a is m × k = 64 × 32, b is k × n = 32 × 16: Gemm(name, m=64, n=16, k=32)
    assert opfit.op_shape(row) == Gemm("mm", 64, 16, 32)


def test_op_summary_gives_median_and_mean_error_per_op_and_split():
    from paradnn.sim import opfit

    rows = pd.DataFrame(
        {"op": ["a", "a", "a", "b"], "split": ["fit", "fit", "fit", "holdout"],
         "ape": [0.1, 0.2, 0.6, 0.3]}
    )  # fmt: skip
    assert opfit.summary(rows).to_dict("records") == [
        # a: median of 0.1, 0.2, 0.6 is 0.2; mean (0.1 + 0.2 + 0.6) / 3 = 0.3
        {"op": "a", "split": "fit", "rows": 3, "mdape": pytest.approx(0.2),
         "mape": pytest.approx(0.3), "kind": "prediction"},
        {"op": "b", "split": "holdout", "rows": 1, "mdape": pytest.approx(0.3),
         "mape": pytest.approx(0.3), "kind": "prediction"},
    ]  # fmt: skip


def test_a_ceiling_row_without_a_value_is_no_ceiling():
    """calibrate stores a matmul whose budget stopped below a ceiling-sized n with value None;
    the chip built from the ceilings leaves it out instead of failing (found by gpu_check --dry)."""
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    stopped = {**CEILINGS[0], "kind": "matmul", "precision": "fp16", "value": None}
    again = sim_chip.from_ceilings([*CEILINGS, stopped], CPU)
    assert dict(again.platform.peak_dense) == dict(chip.platform.peak_dense) == {"fp32": 2e11}
    assert sim_chip.from_ceilings([stopped], CPU) is None


def test_a_fit_started_at_the_parameters_that_made_the_data_keeps_them():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = _truth(chip)
    res = sim_fit.fit(chip, sim_fit.samples(_frame(chip, truth), chip), base=truth)
    p = res.params
    assert p.eff("fp32") == pytest.approx(0.5, rel=1e-9)
    assert p.bw_efficiency == pytest.approx(0.6, rel=1e-9)
    assert p.kernel_overhead_s == pytest.approx(3e-5, rel=1e-9)
    assert p.k_half == pytest.approx(40.0, rel=1e-9)
    assert res.cost == pytest.approx(0.0, abs=1e-20)


def test_a_fit_reports_its_predictions_source_and_stop_reason():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = sim_fit.samples(_frame(chip, _truth(chip), noise=0.05), chip)
    res = sim_fit.fit(chip, data)
    assert res.params.source == f"fitted; {res.fitted_runs} runs fitted, split by config hash"
    assert sim_fit.fit(chip, data, source="report").params.source.startswith("report; ")
    want = [evaluate(s.plan, res.params, chip.mem_bandwidth).total_s for s in data]
    assert res.rows["predicted_s"].tolist() == pytest.approx(want, rel=1e-12)
    assert res.rows["ape"].tolist() == pytest.approx(
        [abs(p - s.measured_s) / s.measured_s for p, s in zip(want, data, strict=True)]
    )
    assert isinstance(res.status, str) and res.status  # scipy's reason for stopping
    assert {s.device_name for s in data} == {CPU} and set(res.rows["device_name"]) == {CPU}
    assert set(res.rows["kind"]) == {"prediction"}  # a prediction, never a measurement


def test_fitting_a_database_without_runs_names_the_database():
    with pytest.raises(ConfigError) as e:
        sim_fit.device_chip(pd.DataFrame(), CEILINGS, None, None)
    assert str(e.value) == "--db: holds no runs: run `paradnn run` first"


def test_heldout_data_skips_a_device_with_too_few_runs_and_goes_on_to_the_next():
    from types import SimpleNamespace

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    full = _frame(chip, _truth(chip))
    few = full.iloc[:3].assign(device_name="Tesla V100-SXM2-16GB")  # sorts first; a datasheet
    runs = pd.concat([few, full], ignore_index=True)
    df = sim_fit.heldout_data(SimpleNamespace(runs=runs, ceilings=pd.DataFrame(CEILINGS)))
    assert set(df["device_name"]) == {CPU} and set(df["split"]) == {"fit", "holdout"}


def test_a_fit_starts_inside_its_bounds_from_a_chip_files_extreme_parameters():
    # a chip file may say k_half = 1e6 and 10 s per kernel (stepparams' ranges), beyond the
    # fit's bounds (1e5, 0.1 s): the fit starts just inside them and still finds the truth
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    truth = _truth(chip)
    data = sim_fit.samples(_frame(chip, truth), chip)
    base = replace(truth, k_half=1e6, kernel_overhead_s=10.0)
    p = sim_fit.fit(chip, data, base=base).params
    assert p.k_half == pytest.approx(40.0, rel=0.05)
    assert p.kernel_overhead_s == pytest.approx(3e-5, rel=0.05)


def test_the_split_ignores_key_order_inside_nested_config_values_too():
    a = {"batch": 8, "extra": {"y": 1, "x": [2, 3]}}
    b = {"extra": {"x": [2, 3], "y": 1}, "batch": 8}
    assert sim_fit.config_hash("fc", "fp32", a) == sim_fit.config_hash("fc", "fp32", b)


def test_a_device_not_in_the_database_names_the_device_option():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    with pytest.raises(ConfigError) as e:
        sim_fit.device_chip(_frame(chip, _truth(chip)), CEILINGS, "Other CPU", None)
    assert e.value.field == "--device" and e.value.allowed == f"must be one of {CPU}"


def test_heldout_data_of_two_devices_is_numbered_once():
    from types import SimpleNamespace

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    full = _frame(chip, _truth(chip))
    twin = [{**c, "device_name": "Test CPU 9001"} for c in CEILINGS[:4]]
    runs = pd.concat([full, full.assign(device_name="Test CPU 9001")], ignore_index=True)
    df = sim_fit.heldout_data(SimpleNamespace(runs=runs, ceilings=pd.DataFrame(CEILINGS + twin)))
    assert set(df["device_name"]) == {CPU, "Test CPU 9001"}
    assert df.index.tolist() == list(range(len(df)))
