"""The data-infeed study's analysis, report section, observation-4 finding and simulator term
on synthetic rows (fast; tests/test_infeed.py measures for real)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import infeed as I
from paradnn.analysis.findings import FAILS, HOLDS, NO_DATA, UNTESTABLE
from paradnn.errors import ConfigError
from paradnn.report.build import SECTIONS
from paradnn.report.sections.infeed import SECTION
from paradnn.report.writer import Writer
from paradnn.sim.chip import load as load_chip
from paradnn.sim.infeed_check import check
from paradnn.sim.model import input_step, predict

import synth

SPACE = {"blocks": [1], "filters": [4, 8], "image": [16], "output": [3], "batch": [4, 8]}
REAL = {"batch": 2, "image": 64}


def _fed(source: str, slower: float, share: float, *, family="cnn", space=SPACE, seed0=0):
    """Runs of `source`: examples/s `slower` times the device run's, the given infeed share."""
    out = []
    for i, c in enumerate(synth.grid(space) if space else [REAL]):
        r = synth.row(family, c, 0.1 / slower, n_samples=20, spread=0.02, seed=seed0 + i)
        extra = {} if source == "device" else {
            "infeed_share": share,
            "data_wait_s": share * r["step_time_s"],
            "data_copy_s": 0.0,
            "loader_examples_per_s": r["examples_per_s"] * (0.9 if share > 0.5 else 3),
            "model_only_examples_per_s": r["examples_per_s"] * slower,
            "input_bound": share > 0.5,
            "loader_workers": 2 if source == "pipeline" else None,
        }  # fmt: skip
        r.update(run_key=f"{r['run_key']}-{source}", data_source=source, **extra)
        out.append(r)
    return out


def test_the_gain_of_removing_the_infeed_is_device_over_the_fed_run_with_a_ci():
    data = A.from_frames(_fed("device", 1.0, 0.0) + _fed("pipeline", 2.0, 0.6, seed0=50))
    assert I.fed_sources(data) == ["pipeline"]
    st = I.study(data, "pipeline")
    p = st.comparison.pairs
    assert len(p) == 4 and p["speedup"].round(6).eq(2.0).all()
    assert (p["ci_low"] < 2.0).all() and (p["ci_high"] > 2.0).all()
    row = st.real.set_index("family").loc["cnn"]
    assert row["configs"] == 4 and row["input_bound"] == 4 and row["median_infeed_share"] == 0.6
    assert row["paired"] == 4  # configs with both a device and a fed run
    assert bool(row["real"]) is False and row["gain_geomean"] == pytest.approx(2.0)
    assert any("4 of 4 pipeline runs are input-bound" in n for n in st.notes)
    grid, y, x = I.share_map(st.runs, "cnn")
    assert (y, x) == ("filters", "batch") and grid.shape == (2, 2)
    assert (grid == 0.6).all().all()


def test_observation_4_holds_on_a_real_model_past_34_percent_and_fails_below():
    cnn = _fed("device", 1.0, 0.0) + _fed("pipeline", 1.1, 0.1, seed0=50)
    real = _fed("device", 1.0, 0.0, family="squeezenet1_1", space=None, seed0=80)
    fast = _fed("pipeline", 1.8, 0.45, family="squeezenet1_1", space=None, seed0=90)
    f = I.infeed_finding(A.from_frames(cnn + real + fast))
    assert f.verdict == HOLDS and "(real models)" in f.evidence and "1.80×" in f.evidence
    assert re.search(r"1\.80× \[1\.\d\d, 1\.\d\d\] over 1 configs", f.evidence), f.evidence
    assert "1.34×" in f.rule and "observation 4" in f.source
    slow = _fed("pipeline", 1.2, 0.2, family="squeezenet1_1", space=None, seed0=90)
    f = I.infeed_finding(A.from_frames(cnn + real + slow))
    assert f.verdict == FAILS and "1.20×" in f.evidence
    # no real model paired: every family decides, and says so
    f = I.infeed_finding(A.from_frames(cnn))
    assert f.verdict == FAILS and "(all families (no real model ran both))" in f.evidence


def test_each_loader_setting_is_its_own_pipeline_and_the_finding_takes_the_best_fed():
    w0 = [dict(r, loader_workers=0, run_key=r["run_key"] + "0")
          for r in _fed("pipeline", 3.0, 0.7, seed0=50)]  # fmt: skip
    w2 = _fed("pipeline", 1.1, 0.1, seed0=70)
    data = A.from_frames(_fed("device", 1.0, 0.0) + w0 + w2)
    assert I.variants(data) == [("pipeline", 0), ("pipeline", 2)]
    assert I.study(data, "pipeline", 0).real.iloc[0]["gain_geomean"] == pytest.approx(3.0)
    st = I.study(data, "pipeline", 2)
    assert st.source == "pipeline w2" and st.comparison.pairs["speedup"].round(6).eq(1.1).all()
    assert any("pooled" in n for n in I.study(data, "pipeline").notes)
    f = I.infeed_finding(data)
    assert f.verdict == FAILS and "over pipeline w2" in f.evidence and "1.10×" in f.evidence


def test_observation_4_is_untestable_without_fed_runs_and_short_of_data_without_pairs():
    assert I.infeed_finding(A.from_frames(_fed("device", 1.0, 0.0))).verdict == UNTESTABLE
    assert I.infeed_finding(A.from_frames([])).verdict == UNTESTABLE
    f = I.infeed_finding(A.from_frames(_fed("host", 1.5, 0.3)))
    assert f.verdict == NO_DATA and "no device-data runs" in f.evidence
    ids = [getattr(c, "__name__", "") for c in A.findings.CHECKS]
    assert ids.count("infeed_finding") == 1  # it took the placeholder's place
    got = [f.id for f in A.evaluate(A.from_frames([]))]
    assert got.count("infeed") == 1


def test_compare_by_data_source_pairs_configs_and_others_pair_within_a_source():
    data = A.from_frames(_fed("device", 1.0, 0.0) + _fed("host", 1.25, 0.2, seed0=50))
    c = A.compare(data, "data_source", "host", "device", include_noisy=True)
    assert len(c.pairs) == 4 and c.pairs["speedup"].round(6).eq(1.25).all()
    # grouping by anything else, a host-fed run never pairs with a device-data one
    bf16 = [dict(r, precision="bf16", run_key=r["run_key"] + "b") for r in _fed("host", 1, 0)]
    c = A.compare(A.from_frames(_fed("device", 1, 0) + bf16), "precision", "fp32", "bf16",
                  include_noisy=True)  # fmt: skip
    assert len(c.pairs) == 0


def test_rows_stored_before_the_study_read_as_device_data():
    rows = _fed("device", 1.0, 0.0)
    for r in rows:
        r.pop("data_source")
    runs = A.from_frames(rows).runs
    assert set(runs["data_source"]) == {"device"}


def test_the_report_section_shows_the_maps_the_gains_and_the_verdict(tmp_path):
    rows = _fed("device", 1.0, 0.0) + _fed("pipeline", 2.0, 0.6, seed0=50)
    rows += _fed("device", 1.0, 0.0, family="squeezenet1_1", space=None, seed0=80)
    rows += _fed("pipeline", 1.8, 0.45, family="squeezenet1_1", space=None, seed0=90)
    sec = SECTION.build(A.from_frames(rows), Writer(tmp_path / "out"))
    assert sec.empty is None
    assert len(sec.figures) == 3  # shares per config, the cnn map, the gains per model
    models = pd.read_csv(tmp_path / "out" / "tables" / "infeed-pipeline-w2-models.csv")
    assert list(models["family"]) == ["squeezenet1_1", "cnn"]  # real models first
    assert sec.notes[0].startswith("Observation 4 (holds)")
    assert any("simulator's input term over 5" in n for n in sec.notes)
    empty = SECTION.build(A.from_frames(_fed("device", 1, 0)), Writer(tmp_path / "e"))
    assert "--data pipeline" in empty.empty
    assert SECTION in SECTIONS


def test_the_simulator_predicts_an_input_bound_workload_as_input_bound():
    step, infeed, bound = input_step(0.010, 64, 3200.0)  # the loader needs 20 ms per batch
    assert (step, infeed, bound) == (pytest.approx(0.020), pytest.approx(0.020), True)
    step, _, bound = input_step(0.010, 64, 12800.0)  # 5 ms: hidden under the model
    assert step == pytest.approx(0.010) and bound is False
    step, _, _ = input_step(0.010, 64, 12800.0, overlapped=False)  # in-process: in series
    assert step == pytest.approx(0.015)
    with pytest.raises(ConfigError, match="loader_examples_per_s"):
        input_step(0.01, 64, 0.0)
    chip = load_chip("tpu-v2")
    cfg = {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 4}
    free = predict("cnn", cfg, chip, "bf16")
    starved = predict("cnn", cfg, chip, "bf16", loader_examples_per_s=100.0)
    assert free.input_s is None and free.bottleneck != "input"
    assert starved.bottleneck == "input" and starved.predicted_step_s == pytest.approx(0.04)
    assert starved.examples_per_s == pytest.approx(100.0)


def test_the_simulator_check_compares_predicted_and_measured_steps():
    rows = [
        # model alone 10 ms, infeed alone 20 ms, 2 workers: predicted 20 ms; measured 21 ms
        dict(family="cnn", config_key="a", data_source="pipeline", loader_workers=2,
             step_time_s=0.021, examples_per_s=4 / 0.021, loader_examples_per_s=200.0,
             model_only_examples_per_s=400.0, infeed_share=0.5, input_bound=True),
        dict(family="cnn", config_key="b", data_source="host", loader_workers=None,
             step_time_s=0.010, examples_per_s=400.0, loader_examples_per_s=None,
             model_only_examples_per_s=400.0, infeed_share=0.0, input_bound=False),
    ]  # fmt: skip
    c = check(rows)
    assert len(c.rows) == 1 and c.agree == 1  # the second has no loader rate: skipped
    assert c.rows[0]["predicted_step_s"] == pytest.approx(0.02)
    assert c.step_error == pytest.approx(0.021 / 0.02 - 1)
    assert c.share_error == pytest.approx(0.0)  # (20 - 10) / 20 = 0.5
    assert "over 1 host-fed runs" in c.summary()
    assert check([]).reason and "no host-fed run" in check([]).summary()


def test_the_simulator_rows_are_plain_values_of_each_fed_run():
    data = A.from_frames(_fed("device", 1.0, 0.0) + _fed("pipeline", 2.0, 0.6, seed0=50))
    rows = I.simulator_rows(I.host_fed(data, "pipeline"))
    assert len(rows) == 4
    assert set(rows[0]) == {
        "family", "config_key", "data_source", "loader_workers", "step_time_s",
        "examples_per_s", "loader_examples_per_s", "model_only_examples_per_s", "infeed_share",
        "input_bound",
    }  # fmt: skip
    keys = {r["config_key"] for r in rows}
    assert keys == set(data.runs[data.runs["data_source"] == "device"]["config_key"])
    assert {r["data_source"] for r in rows} == {"pipeline"} and rows[0]["infeed_share"] == 0.6
    bare = I.simulator_rows(pd.DataFrame([{"family": "cnn", "step_time_s": float("nan")}]))
    assert bare == [{"family": "cnn", "step_time_s": None}]  # a missing number is None


def test_the_results_table_names_the_data_source_and_the_infeed_share():
    from rich.console import Console

    from paradnn.cli import tables

    rows = _fed("device", 1.0, 0.0)[:1] + _fed("pipeline", 2.0, 0.6, seed0=50)[:1]
    console = Console(width=250, record=True)
    console.print(tables.rich_table(rows))
    text = console.export_text()
    assert "pipeline w2" in text and "60% input-bound" in text
    console.print(tables.rich_table(rows[:1]))  # device data only: no infeed columns
    assert "infeed" not in console.export_text()


def test_simulate_step_takes_a_measured_loader_rate(capsys):
    import json

    from conftest import run_cli

    args = ["simulate", "step", "cnn", "blocks=1", "filters=4", "image=16", "output=3",
            "batch=4", "--platform", "tpu-v2", "--format", "json"]  # fmt: skip
    code, out, _ = run_cli(capsys, *args, "--loader-rate", "100")
    row = json.loads(out)[0]
    assert code == 0 and row["bottleneck"] == "input" and row["input_s"] == pytest.approx(0.04)
    code, _, err = run_cli(capsys, *args, "--loader-rate", "0")
    assert code == 2 and "--loader-rate = 0.0: must be a number in (0" in err


def test_a_models_gain_carries_its_geomean_ci():
    data = A.from_frames(_fed("device", 1.0, 0.0) + _fed("pipeline", 2.0, 0.6, seed0=50))
    st = I.study(data, "pipeline")
    row = st.real.set_index("family").loc["cnn"]
    summ = st.comparison.summary.set_index("family").loc["cnn"]
    # the gain's CI is the comparison's geomean CI, around the 2× geomean
    assert row["gain_ci_low"] == summ["geomean_ci_low"] < 2.0
    assert row["gain_ci_high"] == summ["geomean_ci_high"] > 2.0


def test_observation_4_without_device_data_lists_every_note():
    f = I.infeed_finding(A.from_frames(_fed("host", 1.5, 0.3)))
    # two notes, joined by "; ": no device runs, and 0 of the 4 host runs input-bound (0.3)
    assert f.verdict == NO_DATA and f.evidence == (
        "no device-data runs: the gain of removing the host infeed needs them; "
        "0 of 4 host runs are input-bound "
        "(the infeed drained alone is slower than the model alone on device data)"
    )


def test_a_family_without_a_device_pair_has_a_numeric_null_gain():
    # pipeline runs only: no gain to compute, so the gain columns are NaN (numbers), not None
    st = I.study(A.from_frames(_fed("pipeline", 1.1, 0.1)), "pipeline")
    m = st.real
    assert m["paired"].tolist() == [0]
    for col in ("gain_geomean", "gain_ci_low", "gain_ci_high"):
        assert m[col].dtype.kind == "f" and m[col].isna().all(), col
