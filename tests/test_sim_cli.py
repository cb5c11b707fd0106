"""`paradnn simulate`: every mode prints predictions; every bad argument is one line, exit 2."""

import csv
import json
from pathlib import Path

import pytest

from paradnn import presets
from test_sim_model import make_db

from conftest import run_cli


def test_one_config_on_a_tpu(capsys):
    code, out, err = run_cli(capsys, "simulate", "cnn", "filters=32", "--platform", "tpu-v2")
    assert code == 0, err
    assert "predicted on tpu-v2" in out and "predictions; chip figures from datasheet" in out


def test_json_and_csv(capsys, tmp_path):
    path = tmp_path / "p.csv"
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "fc",
        "batch=512",
        "--platform",
        "h100-sxm",
        "-f",
        "json",
        "--chips",
        "8",
        "--csv",
        str(path),
    )
    assert code == 0
    (row,) = json.loads(out.split("Wrote")[0])
    assert row["kind"] == "prediction" and row["chips"] == 8 and row["topology"] == "ring:8"
    assert row["predicted_step_s"] > row["step_lower_s"] > 0
    (written,) = list(csv.DictReader(path.open()))
    assert float(written["predicted_step_s"]) == pytest.approx(row["predicted_step_s"])


def test_preset_keeps_unpredictable_rows_with_a_reason(capsys):
    code, out, _ = run_cli(
        capsys, "simulate", "--platform", "tpu-v2", "--preset", "quick", "-f", "csv"
    )
    assert code == 0
    rows = list(csv.DictReader(out.splitlines()))
    configs = len(presets.get("quick").configs)
    # fp32 and `native`, which on a TPU v2 is bf16 (its only low precision with a dense peak)
    assert len(rows) == 2 * configs
    assert {r["precision"] for r in rows} == {"fp32", "bf16"}
    fp32 = [r for r in rows if r["precision"] == "fp32"]
    assert all(r["predicted_step_s"] == "" and "no dense fp32 peak" in r["reason"] for r in fp32)
    assert all(float(r["predicted_step_s"]) > 0 for r in rows if r["precision"] == "bf16")


def test_topology_sets_the_chip_count(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "cnn",
        "--platform",
        "tpu-v2",
        "--topology",
        "torus2d:16x16",
        "-f",
        "json",
    )
    assert code == 0
    assert json.loads(out)[0]["chips"] == 256


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "chips"


@pytest.mark.parametrize("name", ["tpu-v2-4x128.toml", "tpu-v2-256.toml"])
def test_what_if_chip_files(capsys, name):
    path = str(EXAMPLES / name)
    code, out, err = run_cli(capsys, "simulate", "cnn", "--platform", path, "-f", "json")
    assert code == 0, err
    assert json.loads(out)[0]["origin"] == f"file {path}"


def test_mxu_study(capsys):
    code, out, _ = run_cli(capsys, "simulate", "--mxu-study")
    assert code == 0
    assert "34.1%" in out and "46.2%" in out and "55.1%" in out


def test_scaling(capsys):
    code, out, _ = run_cli(
        capsys, "simulate", "cnn", "--platform", "tpu-v3", "--scaling", "64", "-f", "json"
    )
    assert code == 0
    rows = json.loads(out)
    assert [r["chips"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]


def test_precision_study(capsys):
    code, out, _ = run_cli(capsys, "simulate", "--precision-study", "-f", "json")
    assert code == 0
    assert {r["format"] for r in json.loads(out)} == {"fp32", "bf16", "fp16"}


def test_validate(capsys, tmp_path):
    db = make_db(tmp_path / "v.db")
    code, out, err = run_cli(capsys, "simulate", "--validate", "--db", db)
    assert code == 0, err
    assert "predicted vs measured" in out and "median absolute % error" in out
    code, out, _ = run_cli(capsys, "simulate", "--validate", "--db", db, "-f", "json")
    data = json.loads(out)
    assert len(data["rows"]) == 4 and {s["family"] for s in data["summary"]} == {"fc", "cnn"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["cnn"], "--platform = None: required"),
        (["cnn", "--platform", "tpu-v9"], "--platform = 'tpu-v9'"),
        (["cnn", "--platform", "nope.toml"], "platform file = 'nope.toml': cannot be read"),
        (["cnn", "--platform", "tpu-v2", "-p", "fp32"], "tpu-v2 has no dense fp32 peak"),
        (["cnn", "--platform", "tpu-v2", "-p", "fp64"], "--precision = 'fp64'"),
        (["cnn", "--platform", "tpu-v2", "--chips", "0"], "--chips = 0"),
        (["cnn", "--platform", "tpu-v2", "--topology", "mesh:4"], "--topology = 'mesh:4'"),
        (["cnn", "--platform", "tpu-v2", "--chips", "8", "--topology", "ring:4"], "ring:4"),
        (["cnn", "--platform", "tpu-v2", "--overlap", "2"], "--overlap = 2.0"),
        (["cnn", "filters=0", "--platform", "tpu-v2"], "cnn.filters = 0"),
        (["cnn", "colour=red", "--platform", "tpu-v2"], "cnn.colour"),
        (["mlp", "--platform", "tpu-v2"], "family = 'mlp'"),
        (["cnn", "--preset", "quick", "--platform", "tpu-v2"], "give either --preset or a FAMILY"),
        (["--platform", "tpu-v2"], "give either --preset or a FAMILY"),
        (["--platform", "tpu-v2", "--preset", "nope"], "preset = 'nope'"),
        (["--mxu-study", "--validate"], "choose one of them"),
        (["--mxu-study", "--dataflow", "xs"], "dataflow = 'xs'"),
        (["--mxu-study", "--batch", "0"], "--batch = 0"),
        (["--platform", "tpu-v2", "--scaling", "8"], "--scaling = 8: needs a FAMILY"),
        (["cnn", "--platform", "titan-x-pascal", "-p", "fp32", "--chips", "2"], "link_bw"),
        (["--validate", "--db", "/nonexistent/x.db"], "no such database"),
    ],
)
def test_bad_arguments_are_one_line(capsys, args, needle):
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2, out
    assert err.count("\n") == 1 and err.startswith("error:"), err
    assert needle in err
