"""CLI for the platform work: platforms, profiles with runs, side tables, utilization in runs."""

import json

from conftest import TINY, export_rows, run_cli

FAST = ["--device", "cpu", "--threads", "1", "--min-time", "0", "--max-time", "0.2"]


def test_platforms_lists_the_database_and_this_machine(capsys):
    code, out, err = run_cli(capsys, "platforms", "--json")
    assert code == 0, err
    data = json.loads(out)
    ids = {p["id"] for p in data["platforms"]}
    assert {"v100-sxm2", "h100-sxm", "tpu-v3", "mi300x"} <= ids
    local = data["local"].get("cpu", data["local"])  # a GPU machine adds a "cuda" part
    assert local["device type"] == "cpu"
    code, out, _ = run_cli(capsys, "platforms")
    assert code == 0 and "h100-sxm" in out and "989.4" in out


def test_bench_with_profile_stores_per_op_rows_keyed_by_run(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    args = ["bench", "fc", *[f"{k}={v}" for k, v in TINY["fc"].items()], "--profile", "--db", db]
    code, out, err = run_cli(capsys, *args, *FAST)
    assert code == 0, err
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json")
    (run,) = export_rows(out)
    code, out, _ = run_cli(
        capsys,
        "results",
        "--db",
        db,
        "--table",
        "op_profile",
        "-f",
        "json",
        "--run",
        str(run["id"]),
    )
    rows = export_rows(out)
    assert rows and {r["run_id"] for r in rows} == {run["id"]}
    assert sum(r["flops"] for r in rows) == run["flops_per_step"]
    assert any(r["op"] == "aten::addmm" for r in rows)
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "op_profile")
    assert code == 0 and "aten::addmm" in out


def test_runs_carry_utilization_with_reasons(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    args = ["bench", "fc", *[f"{k}={v}" for k, v in TINY["fc"].items()], "--db", db]
    assert run_cli(capsys, *args, *FAST)[0] == 0
    _code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json")
    (run,) = export_rows(out)
    # no datasheet entry for a generic CPU, and nothing calibrated yet: null with the reason
    assert (
        run["utilization_datasheet"] is None
        and "no datasheet entry" in run["nulls"]["utilization_datasheet"]
    )
    assert "paradnn calibrate" in run["nulls"]["utilization_measured"]


def test_side_tables_of_an_empty_database(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    assert run_cli(capsys, "run", "--dry-run", "--db", db)[0] == 0  # creates nothing
    for table in ("ceilings", "ops"):
        code, _, err = run_cli(capsys, "results", "--db", db, "--table", table)
        assert code == 2 and "no such database" in err


def _tiny_measurements(monkeypatch):
    """The real calibrate/ops code, at sizes a CI machine measures in a second. The sizes are
    planned in this process (runner/kernels.py) and travel to the workers with each unit: a
    patch of the measuring functions themselves would not reach the workers."""
    import functools

    from paradnn.runner import kernels

    monkeypatch.setattr(
        kernels,
        "calibrate",
        functools.partial(kernels.calibrate, sizes=(32, 64), stream_bytes=1 << 20),
    )
    monkeypatch.setattr(kernels, "ops", functools.partial(kernels.ops, scale=1 / 32))


def test_calibrate_then_ops_report_measured_utilization(capsys, tmp_path, monkeypatch):
    _tiny_measurements(monkeypatch)
    db = str(tmp_path / "r.db")
    code, out, err = run_cli(
        capsys, "calibrate", "--device", "cpu", "-p", "fp32", "--no-host", "--db", db
    )
    assert code == 0, err
    assert "matmul" in out and "triad" in out
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "ceilings", "-f", "json")
    ceilings = {r["kind"]: r for r in export_rows(out)}
    assert set(ceilings) == {"matmul", "copy", "triad"}
    assert ceilings["matmul"]["unit"] == "FLOP/s" and ceilings["copy"]["value"] > 0
    code, out, err = run_cli(capsys, "ops", "--device", "cpu", "--name", "matmul-2048", "--db", db)
    assert code == 0, err
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "ops", "-f", "json")
    rows = export_rows(out)
    assert {r["pass"] for r in rows} == {"fwd", "fwd+bwd"}
    for r in rows:
        assert r["status"] == "ok" and r["utilization_measured"] > 0
        assert (
            r["utilization_datasheet"] is None
            and "no datasheet entry" in r["nulls"]["utilization_datasheet"]
        )


def test_calibrate_if_missing_measures_once_per_environment(capsys, tmp_path, monkeypatch):
    _tiny_measurements(monkeypatch)
    db = str(tmp_path / "r.db")
    args = ("calibrate", "--device", "cpu", "-p", "fp32", "--no-host", "--db", db, "--if-missing")
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and "already in the database" not in out, err
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and "already in the database" in out, err
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "ceilings", "-f", "json")
    assert len(export_rows(out)) == 3  # matmul, copy, triad: measured once


def test_ops_rejects_unknown_names_and_gpu_thread_sweeps(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    code, _, err = run_cli(capsys, "ops", "--name", "matmul-3", "--db", db)
    assert code == 2 and "matmul-3" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "ops", "--thread-sweep", "--device", "cuda", "--db", db)
    assert code == 2 and "use --device cpu" in err
