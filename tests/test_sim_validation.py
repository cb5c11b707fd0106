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
    """FCs large enough to be device-bound on a V100 (the GEMMs set the step, not the host)."""
    chip = sim_chip.load(chip_id)
    out = []
    for i in range(n):
        cfg = {"layers": 1 + i % 4, "nodes": 2048 << (i % 3), "batch": 1024 + 256 * i}
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
    fit = res["fits"]["dev-a"]
    assert fit["fitted"]["efficiency"]["fp32"] == pytest.approx(0.55, rel=0.02)
    assert fit["regimes"] == {"host-bound": 0, "device-bound": 14, "mixed": 0}
    # every other parameter: identified around the truth, or not identified and at its prior
    for key, want in (("kernel_overhead_s", 20e-6), ("bw_efficiency", 0.6)):
        rep = fit["identified"][key]
        if rep["status"] == "identified":
            assert rep["low"] <= want <= rep["high"], key
        else:
            assert rep["value"] == rep["prior"] and rep["reason"], key
    assert res["methods"]["cross_device"] is None and res["methods"]["roofline"] is None


def test_cross_device_carries_the_fitted_values_to_the_other_chip(sv):
    truth_a, truth_b = _truth("v100-sxm2"), _truth("p100-sxm2")
    a = _measured(sv, _cases(sv, "A", "v100-sxm2"), truth_a)
    b = _measured(sv, _cases(sv, "B", "p100-sxm2"), truth_b)
    res = sv.evaluate_dataset(a + b, cross_pairs=[("A", "B")], roof=None)
    cross = res["methods"]["cross_device"]
    assert cross["n"] == 20 and cross["mdape"] < 0.02
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


def _gpu_db(path, sweep, configs, *, device="NVIDIA H100 80GB HBM3", profile=None):
    """A paradnn database of runs whose step times the model makes with ``_truth`` on the
    H100 datasheet: a GPU loan's results, as sim_validation finds them in a folder."""
    from paradnn.records import RunRecord
    from paradnn.store import open_store

    chip = sim_chip.load("h100-sxm")
    truth = _truth("h100-sxm")
    with open_store(str(path)) as store:
        for i, (prec, cfg) in enumerate(configs):
            t = steptime.predict_step("fc", cfg, chip, prec, params=truth).predicted_step_s
            store.insert(
                RunRecord.flat(
                    run_key=f"{sweep}{i}",
                    sweep=sweep,
                    family="fc",
                    config=cfg,
                    precision=prec,
                    optimizer="rmsprop",
                    status="ok",
                    device="cuda",
                    device_name=device,
                    env={"hostname": "gpu-box"},
                    step_time_s=t,
                    flags={"optimizer_impl": "foreach"},
                    precision_policy="mixed",
                )
            )
        if profile is not None:
            store.insert_rows("host_profile", [profile])


def test_sim_validation_takes_every_gpu_database_in_its_folder(sv, tmp_path):
    folder = tmp_path / "gpu"
    folder.mkdir()
    small = [
        (p, {"layers": 2, "nodes": w, "batch": 64})
        for p in ("fp32", "bf16")
        for w in (64, 128, 256, 512)
    ]
    big = [
        (p, {"layers": 2, "nodes": w, "batch": 4096})
        for p in ("fp32", "bf16")
        for w in (2048, 4096, 8192)
    ]
    big += [("fp32", {"layers": 4, "nodes": 4096, "batch": 2048 + 512 * i}) for i in range(4)]
    profile = {
        "device": "cuda:0",
        "device_type": "cuda",
        "device_name": "NVIDIA H100 80GB HBM3",
        "hostname": "gpu-box",
        "fingerprint": "f",
        "forward_op_s": 30e-6,
        "autograd_node_s": 30e-6,
        "optimizer_foreach_s": 5e-6,
        "optimizer_step_s": 50e-6,
        "sync_s": 20e-6,
        "kernel_launch_s": 6e-6,
        "measured_at": "2026-11-27T00:00:00",
    }
    _gpu_db(folder / "h100-quick-x.sqlite", "quick", small)
    _gpu_db(folder / "h100-big-x.sqlite", "gpu-sweep", big, profile=profile)
    _gpu_db(folder / "mystery.sqlite", "quick", small[:2], device="Mystery Accelerator 9000")
    (folder / "notes.txt").write_text("not a database")
    assert sorted(sv.gpu_databases(folder)) == ["h100-big-x", "h100-quick-x", "mystery"]
    cases = sv.db_cases("h100-big-x", folder / "h100-big-x.sqlite")
    assert len(cases) == len(big) and {c.chip.id for c in cases} == {"h100-sxm"}
    assert {c.optimizer_impl for c in cases} == {"foreach"} and {c.policy for c in cases} == {
        "mixed"
    }
    assert all(c.host is not None and c.host.source == "measured" for c in cases)
    assert sv.is_quick(sv.db_cases("h100-quick-x", folder / "h100-quick-x.sqlite"))
    assert not sv.is_quick(cases)

    out = tmp_path / "out"
    code = sv.main(
        [
            "--gpu-dir",
            str(folder),
            "--out-dir",
            str(out),
            "--datasets",
            "h100-quick-x",
            "h100-big-x",
            "mystery",
        ]
    )
    assert code == 0
    res = json.loads((out / "sim_validation.json").read_text())
    assert set(res["datasets"]) == {"h100-quick-x", "h100-big-x"}  # mystery: no chip
    assert any(s.get("device") == "Mystery Accelerator 9000" for s in res["skipped"])
    quick, bigger = res["datasets"]["h100-quick-x"], res["datasets"]["h100-big-x"]
    # each held out from the other, both ways
    assert set(bigger["other_dataset"]) == {"h100-quick-x"}
    assert set(quick["other_dataset"]) == {"h100-big-x"}
    assert bigger["other_dataset"]["h100-quick-x"]["from_quick_sweep"]
    assert bigger["methods"]["other_dataset"]["n"] == len(big)
    assert bigger["host_profile"] == "measured host profile"
    assert quick["host_profile"] == "default host profile"
    text = (out / "sim_validation.md").read_text()
    assert "| h100-big-x | gpu |" in text and "quick sweep → bigger configurations" in text
    assert "datasheet-only + measured host profile" in text
    assert sv.main(["--gpu-dir", str(tmp_path / "nowhere")]) == 2


def test_table8_maps_the_tpu_models_as_their_code_ran_them(sv):
    # tensor2tensor on a TPU: the batch is tokens per core; the chip runs both cores' and the
    # paper counts one core's (its throughput = the batch it set ÷ the step)
    assert sv._t8_config("transformer_base", 4096, 4, 2, per_core=True) == (
        {"batch": 16, "length": 512},
        4096,
    )
    # elsewhere a global batch over the chips, counted whole
    assert sv._t8_config("transformer_base", 4096, 1) == ({"batch": 8, "length": 512}, 4096)
    assert sv._t8_config("resnet50", 128, 4, 2) == ({"batch": 32}, 128)
    cases = {
        (c.device, c.family, c.config["batch"]): c for c in sv.table8_cases("seed002-t8-tpu-bf16")
    }
    tr = cases[("TPU V2", "transformer_base", 16)]
    assert tr.policy == "fp32-storage" and tr.chips == 4
    assert tr.measured_s == pytest.approx(4096 / tr.paper)  # 192 ms for 4096 tokens a core
    assert cases[("TPU V3", "inception_v3", 32)].policy == "fp32-storage"  # its float32 default
    r50 = cases[("TPU V2", "resnet50", 16)]  # 64 images over the board, bfloat16
    assert r50.policy == "mixed" and r50.measured_s == pytest.approx(64 / r50.paper)
    # the GPUs keep the global mapping and their precision's default policy
    gpu = sv.table8_cases("seed002-t8-v100-fp16")
    assert {c.policy for c in gpu} == {"mixed"}
    t = next(c for c in gpu if c.family == "transformer_base" and c.config["batch"] == 8)
    assert t.measured_s == pytest.approx(4096 / t.paper)
