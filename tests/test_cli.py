"""The command line, end to end in-process: output, stored rows, and one-line errors."""

import json
import re

import pytest

from paradnn import presets

from conftest import TINY, export_rows, run_cli, write_sweep

FAST = ["--device", "cpu", "--threads", "1", "--min-time", "0", "--max-time", "0.2"]


def test_help_explains_the_commands(capsys):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    for cmd in ("run", "bench", "results", "families"):
        assert cmd in out


def test_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.startswith("paradnn ")


def test_families_lists_fields_and_paper_space(capsys):
    code, out, _ = run_cli(capsys, "families", "--json")
    assert code == 0
    info = {f["name"]: f for f in json.loads(out)}
    assert {"fc", "cnn", "rnn"} <= set(info)
    assert info["fc"]["paper_space"]["layers"] == [4, 8, 16, 32, 64, 128]
    assert info["rnn"]["fields"]["cell"] == "lstm"
    total = sum(info[f]["paper_configs"] for f in ("fc", "cnn", "rnn"))
    assert 13_000 < total < 15_000  # "about 14,000 configs"
    code, out, _ = run_cli(capsys, "families")
    assert code == 0 and "bottleneck" in out


def test_bench_stores_and_prints(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    args = ["bench", "fc", *[f"{k}={v}" for k, v in TINY["fc"].items()], "--db", db, *FAST]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "median" in out and "ms/step" in out and db in out
    code, out, _ = run_cli(capsys, "results", "--db", db, "--format", "json")
    (row,) = export_rows(out)
    assert row["status"] == "ok" and row["config"]["nodes"] == 16
    assert row["step_time_s"] > 0 and len(row["samples"]) == row["n_samples"]


def test_bench_json_output(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    code, out, _ = run_cli(
        capsys,
        "bench",
        "rnn",
        "embed=8",
        "vocab=5",
        "batch=2",
        "length=3",
        "--json",
        "--db",
        db,
        *FAST,
    )
    assert code == 0
    assert export_rows(out)[0]["family"] == "rnn"
    # a versioned object (no longer a bare list): the machine it was measured on, the store
    doc = json.loads(out)
    assert doc["store_schema"] >= 1 and doc["db"] == db and doc["table"] == "runs"
    (machine,) = doc["machines"]
    assert machine["rows"] == 1 and machine["torch"] and machine["hostname"]
    assert machine["fingerprint"] == doc["rows"][0]["fingerprint"]


def test_results_csv_and_filters(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    tiny = {"layers": 1, "nodes": 4, "input": 4, "output": 2, "batch": 2}
    code, _, err = run_cli(capsys, "bench", "fc", *[f"{k}={v}" for k, v in tiny.items()],
                           "--db", db, *FAST)  # fmt: skip
    assert code == 0, err
    # a sweep file's precision the CPU lacks is stored `unsupported` (and the sweep, having
    # measured nothing, exits 1); `bench -p tf32` would be refused before any work
    sweep = write_sweep(tmp_path / "t.toml", [("fc", tiny)], ("tf32",))
    code, _, err = run_cli(capsys, "run", "--preset", str(sweep), "--db", db, *FAST[:4])
    assert code == 1 and "nothing was measured: the run ended unsupported" in err, err
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].startswith("id,run_key")
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json", "--status", "unsupported")
    assert [r["precision"] for r in export_rows(out)] == ["tf32"]
    code, out, _ = run_cli(capsys, "results", "--db", db)
    assert code == 0 and "unsupported" in out and "ok" in out


def test_run_a_preset(capsys, tmp_path):
    # a preset is a sweep file: write one with the tiny configs and pass its path
    runs = [(f, TINY[f]) for f in ("fc", "cnn", "rnn")]
    sweep = write_sweep(tmp_path / "tiny.toml", runs, ("fp32", "bf16"))
    db = str(tmp_path / "r.db")
    code, out, err = run_cli(capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu",
                             "--threads", "1", "--quiet")  # fmt: skip
    assert code == 0, err
    assert "6 runs" in out
    # stored under the sweep's name, which defaults to the file stem
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json", "--sweep", "tiny")
    rows = export_rows(out)
    assert [(r["family"], r["precision"]) for r in rows] == [
        ("fc", "fp32"), ("cnn", "fp32"), ("rnn", "fp32"),
        ("fc", "bf16"), ("cnn", "bf16"), ("rnn", "bf16"),
    ]  # fmt: skip
    # bf16 runs where the CPU runs it natively; elsewhere it is unsupported, with the reason
    from paradnn.precisions import cpu_reason

    bf16 = "ok" if cpu_reason("bf16") is None else "unsupported"
    statuses = [r["status"] for r in rows]
    if bf16 == "ok" and statuses[4] == "nan":
        # The tiny CNN (batch 2) in bf16 with RMSProp diverges within 50-100 steps, so whether
        # its final loss is finite depends on how many steps the timer took: a `nan` run is
        # still measured and says so, never dropped.
        cnn = rows[4]
        assert cnn["step_time_s"] > 0 and cnn["error"].startswith("non-finite training loss")
        statuses[4] = "ok"
    assert statuses == ["ok"] * 3 + [bf16] * 3
    assert all((r["error"] is None) == (r["status"] == "ok") for r in rows)
    # --precision overrides the preset's precisions; one the CPU lacks is refused, before any
    # work, naming what it runs natively
    before = len(export_rows(run_cli(capsys, "results", "--db", db, "-f", "json")[1]))
    code, out, err = run_cli(capsys, "run", "--preset", str(sweep), "-p", "tf32", "--db", db,
                             "--device", "cpu", "--quiet")  # fmt: skip
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert "--precision = 'tf32': tf32 is a tensor-core mode" in err and "runs fp32" in err
    assert len(export_rows(run_cli(capsys, "results", "--db", db, "-f", "json")[1])) == before
    # a sweep file's own precision is stored `unsupported` (the sweep runs anywhere); having
    # measured nothing, it exits 1
    tf32 = write_sweep(tmp_path / "tf32.toml", runs, ("tf32",))
    code, out, err = run_cli(capsys, "run", "--preset", str(tf32), "--db", db, "--device", "cpu",
                             "--quiet")  # fmt: skip
    assert code == 1 and "nothing was measured: all 3 runs ended unsupported" in err, err
    # the three runs share their status: named once above the table, not in a column
    assert out.count("unsupported") == 1
    assert re.search(r"status\s+unsupported", out) and re.search(r"prec\s+tf32", out)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bench", "mlp"], "family = 'mlp': must be one of fc, cnn, rnn"),
        (["bench", "fc", "layers=0"], "fc.layers = 0: must be an integer in [1, 512]"),
        (["bench", "fc", "nodez=3"], "fc.nodez = '3': unknown key; allowed:"),
        (["bench", "fc", "layers"], "must be written key=value"),
        (["bench", "fc", "--precision", "fp8"], "precision = 'fp8': must be one of"),
        (["bench", "fc", "--device", "tpu"], "device = 'tpu': must be auto, cpu, cuda"),
        (["bench", "fc", "--threads", "0"], "threads = 0: must be an integer in [1, 4096]"),
        (["bench", "fc", "--max-time", "-1"], "--max-time = -1.0: must be a number in [0, 86400]"),
        (["run", "--preset", "nope"], "preset = 'nope': must be one of quick"),
        (["run", "-p", "fp64"], "precision = 'fp64'"),
        (["results", "--status", "fine"], "--status = 'fine': must be one of ok, oom"),
    ],
)
def test_bad_input_is_one_clear_line_before_any_work(capsys, tmp_path, args, needle):
    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, *args, "--db", str(db))
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists() or "results" in args  # nothing ran, nothing stored


def test_cuda_device_without_gpu_is_a_clear_error(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    code, _, err = run_cli(capsys, "bench", "fc", "--device", "cuda", "--db", str(tmp_path / "x"))
    assert code == 2 and "no CUDA device is visible" in err


def test_results_on_missing_db(capsys, tmp_path):
    code, _, err = run_cli(capsys, "results", "--db", str(tmp_path / "none.db"))
    assert code == 2 and "no such database" in err


def test_quick_preset_teaches_in_minutes():
    """Enough runs per family for a heat map (batch × width) and a regression fit (≥ 8 runs
    with two varying axes), few enough for about a minute per precision on 2 cores."""
    p = presets.get("quick")
    specs = p.specs()
    assert {s.precision for s in specs} == {"fp32", "native"}  # the device decides the rest
    fp32 = [s for s in specs if s.precision == "fp32"]
    assert 24 <= len(fp32) <= 40
    width = {"fc": "nodes", "cnn": "filters", "rnn": "embed"}
    for fam, axis in width.items():
        runs = [s for s in fp32 if s.family == fam]
        assert len(runs) >= 8
        assert len({s.config["batch"] for s in runs}) >= 3
        assert len({s.config[axis] for s in runs}) >= 2
    assert p.name == "quick" and p.timing.max_time_s <= 3.0  # short budgets: minutes, not hours


def test_families_lists_real_models_in_one_table_with_their_parameters(capsys):
    code, out, _err = run_cli(capsys, "families")
    assert code == 0
    assert "Real-world models" in out and "25,557,032" in out  # ResNet-50, exact
    assert "resnet50: " not in out  # not one table per real model


def test_the_cli_uses_no_private_typer_module():
    """Error handling goes through typer's public names, so a typer upgrade cannot break it."""
    from pathlib import Path

    from paradnn import cli

    for path in Path(cli.__file__).parent.glob("*.py"):
        assert "typer._" not in path.read_text(), path.name


def test_an_unknown_option_of_a_subcommand_is_one_line(capsys):
    code, out, err = run_cli(capsys, "simulate", "step", "--nope")
    assert code == 2 and not out
    assert err.count("\n") == 1 and "No such option: --nope" in err
