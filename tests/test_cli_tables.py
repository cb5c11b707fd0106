"""The CLI's tables show what differs (issue 37): the identity columns in which rows differ are
shown, the constant ones named once above the table; `results` filters on every axis; one CI
form (`±x.x%`, half the 95% interval over the value) in results, bench, compare and scale; the
simulator's commands tell one story (the step-time model by default, `--model roofline`
everywhere), with units in every header and several platforms in one table."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from paradnn import api
from paradnn.cli import tables
from test_sim_model import make_db

import synth
from conftest import run_cli

FC = {"layers": 2, "nodes": 64, "batch": 8}


def _row(mode="eager", batch=8, **kw):
    r = synth.row("fc", {**FC, "batch": batch}, 0.1 if mode == "eager" else 0.12, mode=mode, **kw)
    step = r["step_time_s"]
    return r | {"step_time_ci_low_s": 0.95 * step, "step_time_ci_high_s": 1.05 * step}


def _text(table, width=200):
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _header(text):
    return next(line for line in text.splitlines() if "config" in line and "┃" in line)


def test_only_the_identity_fields_that_differ_are_columns():
    rows = [_row("eager", 8), _row("compile", 8), _row("eager", 16), _row("compile", 16)]
    varying, shared = tables.split_identity(rows)
    assert varying == ["mode"]  # the config differs too, but it is always a column
    assert shared["precision"] == "fp32" and shared["threads"] == "2"
    assert shared["device_name"] == "SynthCPU" and "quality" not in shared  # unset: not named
    text = _text(tables.rich_table(rows, title="t"))
    header = _header(text)
    assert "mode" in header and "threads" not in header and "prec" not in header
    assert "all rows:" in text and "threads 2" in text and "prec fp32" in text
    # eager and compiled rows no longer look the same: each names its mode
    assert {ln.split("│")[2].strip() for ln in text.splitlines() if " b8 " in ln} == {
        "eager",
        "compile",
    }
    # the hyperparameters every row shares are named once; the config column keeps the rest,
    # compact (depth×width, `b` batch), and a line under the table reads it
    assert "input=2000 output=1000" in text and "│ 2x64 b8 " in text
    assert "config: fc layers×nodes, b batch" in text


def test_any_axis_is_picked_up_generically_and_shared_defaults_stay_quiet():
    from paradnn import axes

    rows = [_row(threads=1), _row(threads=4, procs=2), _row(backend="jax")]
    varying = tables.split_identity(rows)[0]
    assert {"threads", "procs", "backend"} <= set(varying) and "mode" not in varying
    # every axis of paradnn.axes with a record column is shown when it differs, with no table
    # code of its own
    assert {a.column for a in axes.AXES if a.column} <= set(tables.identity_fields())
    rows = [_row(precision_policy="amp"), _row(precision_policy="pure")]
    assert "precision_policy" in tables.split_identity(rows)[0]
    line = tables.shared_line({"procs": "1", "backend": "torch", "mode": "eager"})
    assert line == "all rows: mode eager"  # the ordinary single-process torch run goes unsaid


def test_compile_times_are_a_column_when_a_run_has_them():
    rows = [_row("eager"), _row("compile", compile_cold_s=3.2, compile_warm_s=1.1)]
    text = _text(tables.rich_table(rows))
    assert "compile s (cold / warm)" in text and "3.2 / 1.1" in text
    assert "compile s" not in _text(tables.rich_table([_row("eager"), _row("eager", 16)]))


def test_a_measured_column_empty_in_every_row_is_left_out_and_named():
    text = _text(tables.rich_table([_row(), _row(batch=16)]))
    assert "util" not in _header(text) and "no value in any row: util" in text


def test_results_filters_each_axis(tmp_path, capsys):
    rows = [
        _row("eager"),
        _row("compile", compile_cold_s=2.0),
        _row("eager", 16, threads=4),
        _row("eager", 16, backend="jax"),
        _row("eager", 32, data_source="host"),
        _row("eager", 64, procs=2),
    ]
    db = synth.write_db(tmp_path / "r.db", rows)

    def count(*args):
        code, out, err = run_cli(capsys, "results", "--db", db, "-f", "json", *args)
        assert code == 0, err
        return len(json.loads(out)["rows"])

    assert count() == 6
    assert count("--mode", "compile") == 1 and count("--mode", "eager") == 5
    assert count("--threads", "4") == 1 and count("--threads", "3") == 0
    assert count("--backend", "jax") == 1 and count("--backend", "torch") == 5
    assert count("--data", "host") == 1 and count("--data", "device") == 5
    assert count("--procs", "2") == 1 and count("--procs", "1") == 5
    assert count("--attempt", "1") == 6 and count("--attempt", "2") == 0
    assert count("--mode", "eager", "--threads", "2", "--limit", "2") == 2
    code, out, _ = run_cli(capsys, "results", "--db", db, "--mode", "compile")
    assert code == 0 and "1 runs" in out and "2 / —" not in out
    code, _, err = run_cli(capsys, "results", "--db", db, "--mode", "eagre")
    assert code == 2 and "--mode = 'eagre'" in err and err.count("\n") == 1


# One 95% CI form everywhere: `value ±x.x%`; never the interval's ends, never `[lo, hi]`.
ONE_FORM = re.compile(r"±\d+\.\d%")
OTHER_FORMS = re.compile(r"\d–\d|\[\d+\.\d+, \d+\.\d+\]|95% CI \d")


def _one_form(text):
    assert ONE_FORM.search(text), text
    assert not OTHER_FORMS.search(text), OTHER_FORMS.search(text)


def test_results_prints_the_one_ci_form(tmp_path, capsys):
    db = synth.write_db(tmp_path / "r.db", [_row(), _row(batch=16)])
    code, out, _ = run_cli(capsys, "results", "--db", db)
    assert code == 0 and "step ms (±95% CI)" in out and "±5.0%" in out
    _one_form(out)


def test_bench_prints_the_one_ci_form(capsys, monkeypatch):
    from paradnn.records import RunRecord
    from paradnn.store import DEFAULT_DB

    r = _row("compile", compile_cold_s=3.2, compile_warm_s=1.1)
    r |= {"n_samples": 30, "first_step_s": 0.5, "converged": True, "quality": "good"}
    r.pop("torch_version"), r.pop("hostname")
    monkeypatch.setattr(api, "bench", lambda *a, **kw: RunRecord.flat(**r))
    code, out, err = run_cli(capsys, "bench", "fc", "layers=2", "--mode", "compile")
    assert code == 0, err
    _one_form(out)
    assert "±5.0% (95% CI) over 30 samples" in out and "3.2 / 1.1" in out
    assert DEFAULT_DB in out


def test_compare_and_scale_print_the_one_ci_form(tmp_path, capsys):
    rows = [_row("eager", b, n_samples=20, seed=b) for b in (8, 16, 32)]
    rows += [_row("compile", b, n_samples=20, seed=b + 1) for b in (8, 16, 32)]
    db = synth.write_db(tmp_path / "c.db", rows)
    args = ("compare", "--db", db, "--by", "mode", "--a", "eager", "--b", "compile")
    code, out, err = run_cli(capsys, *args, "--fail-if-slower", "5")
    assert code == 0, err
    assert "geomean (±95% CI)" in out and "speedup (±95% CI)" in out
    _one_form(out)
    assert not OTHER_FORMS.search(err)

    import pandas as pd

    from paradnn.cli.scale import lines

    table = pd.DataFrame(
        [
            dict(procs=2, strategy="ddp", scaling="weak", speedup=1.8, speedup_low=1.7,
                 speedup_high=1.9, efficiency=0.9, karp_flatt=0.1, step_time_s=0.01,
                 compute_nosync_s=0.008, allreduce_bytes=1e6, allreduce_s=0.001,
                 allreduce_busbw=1e9, overlap_frac=0.5, compute_inflation=1.1,
                 comm_exposed_frac=0.1)
        ]
    )  # fmt: skip
    fits = pd.DataFrame([dict(serial_fraction=0.05, ci_low=0.03, ci_high=0.07, method="fit")])

    class Res:
        check = type("C", (), {"summary": lambda self: "checked"})()

    res = Res()
    res.table, res.fits = table, fits
    text = "\n".join(lines(res))
    assert "speedup 1.80× ±5.6% (95% CI)" in text and "f = 0.050 ±0.020 (95% CI)" in text
    assert not OTHER_FORMS.search(text)


# -- the simulator -------------------------------------------------------------------------


def test_scaling_uses_the_step_model_by_default_and_its_one_chip_time_is_steps(capsys):
    args = ("simulate", "scaling", "resnet50", "batch=32", "--platform", "tpu-v3")
    code, out, err = run_cli(capsys, *args, "--max-chips", "4", "-f", "json")
    assert code == 0, err
    curve = json.loads(out)
    assert {r["model"] for r in curve} == {"step"}
    (one,) = api.simulate("tpu-v3", "resnet50", {"batch": 32}, model="step")
    assert curve[0]["predicted_step_s"] == pytest.approx(one["predicted_step_s"])
    code, out, _ = run_cli(capsys, *args, "--max-chips", "4", "--model", "roofline", "-f", "json")
    roof = json.loads(out)
    (r1,) = api.simulate("tpu-v3", "resnet50", {"batch": 32}, model="roofline")
    assert code == 0 and {r["model"] for r in roof} == {"roofline"}
    assert roof[0]["predicted_step_s"] == pytest.approx(r1["predicted_step_s"])
    assert roof[0]["predicted_step_s"] != pytest.approx(curve[0]["predicted_step_s"])
    code, out, _ = run_cli(capsys, *args, "--max-chips", "4")
    assert code == 0 and "(step model)" in out and "predicted step (ms)" in out


@pytest.mark.parametrize("cmd", [["step"], ["scaling"]])
def test_overlap_is_the_rooflines_and_the_step_model_says_so(capsys, cmd):
    args = ["simulate", *cmd, "fc", "--platform", "tpu-v3", "--overlap", "0.5"]
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "--overlap = 0.5: applies to --model roofline only" in err
    code, _, err = run_cli(capsys, *args, "--model", "roofline", "-f", "json")
    assert code == 0, err


def test_validate_uses_the_step_model_by_default(tmp_path, capsys):
    db = make_db(tmp_path / "v.db")
    code, out, err = run_cli(capsys, "simulate", "validate", "--db", db, "-f", "json")
    assert code == 0, err
    step = json.loads(out)
    code, out, _ = run_cli(
        capsys, "simulate", "validate", "--db", db, "--model", "roofline", "-f", "json"
    )
    roof = json.loads(out)
    assert len(step["rows"]) == len(roof["rows"]) == 4
    assert [r["predicted_s"] for r in step["rows"]] != [r["predicted_s"] for r in roof["rows"]]
    from paradnn.sim import fidelity

    # the library, the CLI and the report share one default: the step model (issue 41)
    again = api.simulate_validate(db, model="roofline").rows
    assert [r["predicted_s"] for r in again] == [r["predicted_s"] for r in roof["rows"]]
    assert fidelity.validate_frame.__kwdefaults__["model"] == "step"
    assert [r["predicted_s"] for r in api.simulate_validate(db).rows] == [
        r["predicted_s"] for r in step["rows"]
    ]
    assert {r["model"] for r in step["rows"]} == {"step"}
    assert {r["model"] for r in roof["summary"]} == {"roofline"}
    code, out, _ = run_cli(capsys, "simulate", "validate", "--db", db)
    assert code == 0 and "(step model)" in out
    code, _, err = run_cli(capsys, "simulate", "validate", "--db", db, "--model", "rooflin")
    assert code == 2 and "--model = 'rooflin'" in err


def test_every_breakdown_and_table_header_carries_its_unit(capsys):
    code, out, err = run_cli(capsys, "simulate", "step", "fc", "--platform", "v100-sxm2")
    assert code == 0, err
    assert "predicted step (ms)" in out and "time (ms)" in out and "share of step" in out
    # the terms by name, not by their fields' `_s` (which printed milliseconds)
    assert not re.search(r"\b\w+_s\b", out), re.search(r"\b\w+_s\b", out)
    assert "│ overhead " in out and "│ predicted step " in out


def test_several_platforms_in_one_table_at_one_precision_policy(capsys):
    args = ("simulate", "step", "resnet50", "batch=64", "--platform", "tpu-v2,tpu-v3,v100-sxm2")
    code, out, err = run_cli(capsys, *args, "-f", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["platform"] for r in rows] == ["tpu-v2", "tpu-v3", "v100-sxm2"]
    assert [r["precision"] for r in rows] == ["bf16", "bf16", "fp16"]  # each one's native
    code, out, err = run_cli(capsys, *args, "-p", "fp16", "-f", "json")
    assert code == 0, err
    v2 = json.loads(out)[0]  # a row with the reason, not an error
    assert v2["predicted_step_s"] is None and v2["reason"] == "tpu-v2 has no dense fp16 peak"
    code, out, err = run_cli(capsys, *args, "-p", "fp16")
    assert code == 0 and "fp16 on every platform" in out
    assert "v100-sxm2 fp16 (ms)" in out  # the breakdown: a column per predicted platform
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "each platform at its native precision: tpu-v2 bf16, tpu-v3" in out
    assert "tpu-v2 bf16 (ms)" in out and "v100-sxm2 fp16 (ms)" in out
    # prefixes through the one resolver (platforms.datasheets.resolve), as report --what-if
    code, out, err = run_cli(capsys, *args[:-1], "v100,tpu-v2,tpu-v3", "-f", "json")
    assert code == 0, err
    assert [r["platform"] for r in json.loads(out)] == ["v100-sxm2", "tpu-v2", "tpu-v3"]
    for bad, needle in (
        ("tpu-v2,tpu-v2", "--platform = 'tpu-v2': is given twice"),
        ("v100,v100-sxm2", "--platform = 'v100-sxm2': is given twice (as v100 too"),
        ("tpu-v2,a100", "--platform = 'a100': is a prefix of a100-40gb-sxm, a100-80gb-sxm"),
        ("tpu-v2,nope", "--platform = 'nope'"),
        ("tpu-v2,", "comma-separated"),
    ):
        code, _, err = run_cli(capsys, "simulate", "step", "fc", "--platform", bad)
        assert code == 2 and needle in err and err.count("\n") == 1, err


def test_a_16_bit_policy_puts_a_tpu_in_bf16_beside_a_gpu_in_fp16(capsys):
    args = ("simulate", "step", "resnet50", "batch=64", "--platform", "tpu-v2,v100-sxm2")
    code, out, err = run_cli(capsys, *args, "--precision-policy", "16-bit", "-f", "json")
    assert code == 0, err
    assert [r["precision"] for r in json.loads(out)] == ["bf16", "fp16"]
    code, out, _ = run_cli(capsys, *args, "--precision-policy", "16-bit")
    assert code == 0 and "16-bit: each platform's bf16 else fp16" in out
    code, _, err = run_cli(capsys, *args, "--precision-policy", "16-bit", "-p", "fp16")
    assert code == 2 and "cannot be given with -p/--precision" in err and err.count("\n") == 1
