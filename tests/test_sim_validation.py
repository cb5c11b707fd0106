"""benchmarks/sim_validation.py (issue 35, item 5): the fit recovers known parameters, the split
is fixed by its seed, and the error-band file has the schema the what-if rows read."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from paradnn.sim import chip as sim_chip
from paradnn.sim import steptime

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sv():
    path = ROOT / "benchmarks" / "sim_validation.py"
    spec = importlib.util.spec_from_file_location("sim_validation", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def _cases(sv, device="dev-a", chip_id="v100-sxm2", n=20):
    chip = sim_chip.load(chip_id)
    out = []
    for i in range(n):
        # large enough that the device, not the GPU host's ~1.5 ms floor (issue 42), sets most
        # steps: the fit recovers device parameters only where they show
        cfg = {"layers": 1 + i % 4, "nodes": 256 << (i % 5), "batch": 256 << (i % 3)}
        out.append(
            sv.Case(
                dataset="synthetic",
                device=device,
                kind="gpu",
                family="fc",
                config=cfg,
                precision="fp32",
                measured_s=1.0,
                chip=chip,
            )
        )
    return out


def _truth(chip_id="v100-sxm2"):
    base = steptime.params_of(sim_chip.load(chip_id))
    return replace(
        base,
        kernel_overhead_s=20e-6,
        k_half=100.0,
        bw_efficiency=0.6,
        efficiency={**base.efficiency, "fp32": 0.55},
    )


def _measured(sv, cases, params):
    return [replace(c, measured_s=sv.predict(c, params)) for c in cases]


def test_known_parameters_are_recovered_and_the_held_out_error_is_near_zero(sv):
    truth = _truth()
    cases = _measured(sv, _cases(sv), truth)
    res = sv.evaluate_dataset(cases, roof=None)
    held = res["methods"]["fitted_holdout"]
    assert held["n"] == 6 and held["mdape"] < 0.01 and held["p90"] < 0.02
    # the defaults do not know the truth: datasheet-only is far off, so the check can fail
    assert res["methods"]["datasheet"]["mdape"] > 0.2
    fitted = res["fits"]["dev-a"]["fitted"]
    assert fitted["kernel_overhead_s"] == pytest.approx(20e-6, rel=0.05)
    assert res["methods"]["cross_device"] is None and res["methods"]["roofline"] is None


def test_cross_device_carries_the_fitted_values_to_the_other_chip(sv):
    truth_a, truth_b = _truth("v100-sxm2"), _truth("p100-sxm2")
    a = _measured(sv, _cases(sv, "A", "v100-sxm2"), truth_a)
    b = _measured(sv, _cases(sv, "B", "p100-sxm2"), truth_b)
    res = sv.evaluate_dataset(a + b, cross_pairs=[("A", "B")], roof=None)
    cross = res["methods"]["cross_device"]
    assert cross["n"] == 20 and cross["mdape"] < 0.01
    assert {r["to"] for r in res["cross_rows"]} == {"B"}


def test_the_split_is_fixed_by_its_seed_and_holds_out_thirty_percent(sv):
    cases = _cases(sv, n=20) + _cases(sv, device="dev-b", n=10)
    first = sv.split(cases)
    assert first == sv.split(cases)
    assert first.count("holdout") == 6 + 3
    # the order the rows come in does not move a row across the split
    order = list(range(len(cases)))
    random.Random(1).shuffle(order)
    again = sv.split([cases[i] for i in order])
    assert [first[i] for i in order] == again
    assert sv.split(cases, seed=36) != first


def test_a_row_the_model_refuses_is_reported_and_counted_nowhere(sv):
    truth = _truth()
    cases = _measured(sv, _cases(sv), truth)
    bad = cases[3].key

    def picky(case, params=None):
        if case.key == bad:
            raise ValueError("no such layer")
        return sv.predict(case, params)

    res = sv.evaluate_dataset(cases, predictor=picky, roof=None)
    assert [r["config"] for r in res["refused"]] == [res["rows"][3]["config"]]
    assert "ValueError: no such layer" in res["refused"][0]["refused"]
    assert res["methods"]["datasheet"]["n"] == 19
    assert res["rows"][3]["ape_datasheet"] is None


def test_stats_report_none_on_nothing(sv):
    assert sv.stats([]) == {"mdape": None, "p90": None, "mape": None, "n": 0}
    s = sv.stats([0.1, 0.2, 0.3, None])
    assert s["n"] == 3 and s["mdape"] == pytest.approx(0.2)


def test_bands_have_the_schema_and_leave_out_kinds_without_data(sv):
    truth = _truth()
    res = {
        "generated_at": "2026-11-26T00:00:00+00:00",
        "datasets": {
            "synthetic": {
                "kind": "gpu",
                **sv.evaluate_dataset(_measured(sv, _cases(sv), truth), roof=None),
            }
        },
    }
    b = sv.bands(res)
    assert b["schema"] == 1 and b["generated_by"] == "benchmarks/sim_validation.py"
    assert set(b["bands"]) == {"gpu"}
    g = b["bands"]["gpu"]
    assert set(g) == {"mdape", "p90", "n", "dataset", "method"}
    assert g["method"] == "datasheet-only" and g["n"] == 20 and g["dataset"] == "synthetic"
    assert 0 < g["mdape"] <= g["p90"]


def test_the_committed_bands_file_has_the_schema():
    b = json.loads((ROOT / "src" / "paradnn" / "sim" / "error_bands.json").read_text())
    assert b["schema"] == 1 and b["generated_by"] == "benchmarks/sim_validation.py"
    assert b["bands"] and set(b["bands"]) <= {"cpu", "gpu", "tpu"}
    for v in b["bands"].values():
        assert v["method"] == "datasheet-only" and v["n"] > 0 and 0 < v["mdape"] <= v["p90"]


def test_the_script_runs_on_the_committed_gpu_run(sv, tmp_path, capsys):
    bands = tmp_path / "bands.json"
    argv = ["--datasets", "h100-run", "--out-dir", str(tmp_path), "--write-bands"]
    assert sv.main([*argv, "--bands-out", str(bands)]) == 0
    res = json.loads((tmp_path / "sim_validation.json").read_text())
    d = res["datasets"]["h100-run"]
    assert d["n"] == 19 and d["split"]["holdout_rows"] == 6 and d["split"]["seed"] == sv.SEED
    assert d["methods"]["fitted_holdout"]["n"] == 6 and d["methods"]["cross_device"] is None
    assert "| h100-run | gpu | 19 |" in (tmp_path / "sim_validation.md").read_text()
    assert set(json.loads(bands.read_text())["bands"]) == {"gpu"}


def test_an_unknown_dataset_is_one_line_and_exit_2(sv, capsys):
    assert sv.main(["--datasets", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--datasets" in err and "nope" in err
