"""`paradnn simulate`: every subcommand prints predictions; every bad argument is one line, exit 2;
an old (pre-subcommand) form is one line naming the new one."""

import csv
import json
from pathlib import Path

import pytest

from paradnn import presets
from test_sim_model import make_db

from conftest import run_cli


def test_one_config_on_a_tpu(capsys):
    code, out, err = run_cli(
        capsys, "simulate", "step", "cnn", "filters=32", "--platform", "tpu-v2"
    )
    assert code == 0, err
    assert "predicted on tpu-v2" in out and "predictions; chip figures from datasheet" in out


def test_json_and_csv(capsys, tmp_path):
    path = tmp_path / "p.csv"
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "step",
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


def test_a_preset_is_predicted_at_the_chips_native_precision_unless_p_is_given(capsys):
    """The README's `--preset quick` on tpu-v2: every config predicted (in bf16, the TPU's
    native precision), where it left half the rows blank ("no dense fp32 peak") before."""
    args = ("simulate", "step", "--platform", "tpu-v2", "--preset", "quick", "-f", "csv")
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    rows = list(csv.DictReader(out.splitlines()))
    configs = len(presets.get("quick").configs)
    assert len(rows) == configs  # each config once, at the chip's precision
    assert {r["precision"] for r in rows} == {"bf16"}
    assert all(float(r["predicted_step_s"]) > 0 and not r.get("reason") for r in rows)
    code, out, _ = run_cli(capsys, *args, "-p", "fp32")  # asked for: a row with the reason
    assert code == 0
    fp32 = list(csv.DictReader(out.splitlines()))
    assert len(fp32) == configs and {r["precision"] for r in fp32} == {"fp32"}
    assert all(r["predicted_step_s"] == "" and "no dense fp32 peak" in r["reason"] for r in fp32)


def test_topology_sets_the_chip_count(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "step",
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
    code, out, err = run_cli(capsys, "simulate", "step", "cnn", "--platform", path, "-f", "json")
    assert code == 0, err
    assert json.loads(out)[0]["origin"] == f"file {path}"


def test_mxu_study(capsys):
    code, out, _ = run_cli(capsys, "simulate", "mxu-study")
    assert code == 0
    assert "34.1%" in out and "46.2%" in out and "55.1%" in out


def test_scaling(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "scaling",
        "cnn",
        "--platform",
        "tpu-v3",
        "--max-chips",
        "64",
        "-f",
        "json",
    )
    assert code == 0
    rows = json.loads(out)
    assert [r["chips"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]


def test_precision_study(capsys):
    code, out, _ = run_cli(capsys, "simulate", "precision-study", "-f", "json")
    assert code == 0
    assert {r["format"] for r in json.loads(out)} == {"fp32", "bf16", "fp16"}


def test_validate(capsys, tmp_path):
    db = make_db(tmp_path / "v.db")
    code, out, err = run_cli(capsys, "simulate", "validate", "--db", db)
    assert code == 0, err
    assert "predicted vs measured" in out and "median absolute % error" in out
    code, out, _ = run_cli(capsys, "simulate", "validate", "--db", db, "-f", "json")
    data = json.loads(out)
    assert len(data["rows"]) == 4 and {s["family"] for s in data["summary"]} == {"fc", "cnn"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["step", "cnn"], "--platform: required"),
        (["step", "cnn", "--platform", "tpu-v9"], "--platform = 'tpu-v9'"),
        (["step", "cnn", "--platform", "nope.toml"], "platform file = 'nope.toml': cannot be read"),
        (["step", "cnn", "--platform", "tpu-v2", "-p", "fp32"], "tpu-v2 has no dense fp32 peak"),
        (["step", "cnn", "--platform", "tpu-v2", "-p", "fp64"], "--precision = 'fp64'"),
        (["step", "cnn", "--platform", "tpu-v2", "--chips", "0"], "--chips = 0"),
        (["step", "cnn", "--platform", "tpu-v2", "--topology", "mesh:4"], "--topology = 'mesh:4'"),
        (["step", "cnn", "--platform", "tpu-v2", "--chips", "8", "--topology", "ring:4"], "ring:4"),
        (["step", "cnn", "--platform", "tpu-v2", "--overlap", "2"], "--overlap = 2.0"),
        (["step", "cnn", "filters=0", "--platform", "tpu-v2"], "cnn.filters = 0"),
        (["step", "cnn", "colour=red", "--platform", "tpu-v2"], "cnn.colour"),
        (["step", "mlp", "--platform", "tpu-v2"], "family = 'mlp'"),
        (
            ["step", "cnn", "--preset", "quick", "--platform", "tpu-v2"],
            "--preset = 'quick': cannot be given with a FAMILY (cnn)",
        ),
        (["step", "--platform", "tpu-v2"], "FAMILY: required (or --preset"),
        (["step", "--platform", "tpu-v2", "--preset", "nope"], "preset = 'nope'"),
        (["step", "cnn", "--platform", "titan-x-pascal", "-p", "fp32", "--chips", "2"], "link_bw"),
        (["scaling", "cnn"], "--platform: required"),
        (["scaling", "--platform", "tpu-v2"], "Missing argument 'family'"),
        (["scaling", "cnn", "--platform", "tpu-v2", "--max-chips", "0"], "--max-chips = 0"),
        (["scaling", "cnn", "--platform", "titan-x-pascal", "-p", "fp32"], "link_bw"),
        (["mxu-study", "--dataflow", "xs"], "--dataflow = 'xs': must be one of"),
        (["mxu-study", "--batch", "0"], "--batch = 0"),
        (["fit", "--statistic", "mean"], "--statistic = 'mean': must be one of median, min"),
        (["fit", "--from", "logs"], "--from = 'logs': must be one of runs, ops"),
        (["mxu-study", "--chips", "2"], "No such option: --chips"),
        (["validate", "--db", "/nonexistent/x.db"], "no such database"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
)
def test_bad_arguments_are_one_line(capsys, args, needle):
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2, out
    assert err.count("\n") == 1 and err.startswith("error:"), err
    assert needle in err


@pytest.mark.parametrize(
    ("args", "new"),
    [
        (
            ["cnn", "filters=32", "--platform", "tpu-v2"],
            "`paradnn simulate cnn` moved: use `paradnn simulate step cnn filters=32 "
            "--platform tpu-v2`",
        ),
        (
            ["--platform", "tpu-v2", "--preset", "quick"],
            "use `paradnn simulate step --platform tpu-v2 --preset quick`",
        ),
        (
            ["cnn", "--platform", "tpu-v3", "--scaling", "64"],
            "--scaling moved: use `paradnn simulate scaling cnn --platform tpu-v3 --max-chips 64`",
        ),
        (["cnn", "--platform=tpu-v3", "--scaling=8"], "simulate scaling cnn --platform=tpu-v3"),
        (["--mxu-study"], "--mxu-study moved: use `paradnn simulate mxu-study`"),
        (["--mxu-study", "--batch", "4"], "use `paradnn simulate mxu-study --batch 4`"),
        (["--precision-study"], "--precision-study moved: use `paradnn simulate precision-study`"),
        (["--validate", "--db", "r.db"], "--validate moved: use `paradnn simulate validate --db"),
    ],
)
def test_old_forms_name_the_new_one(capsys, args, new):
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert new in err


def test_simulate_alone_lists_the_subcommands(capsys):
    code, out, _ = run_cli(capsys, "simulate")
    assert code == 0
    for sub in ("step", "scaling", "mxu-study", "precision-study", "validate"):
        assert sub in out


def test_csv_file_from_a_study(capsys, tmp_path):
    path = tmp_path / "mxu.csv"
    code, out, _ = run_cli(capsys, "simulate", "mxu-study", "--csv", str(path))
    assert code == 0 and "Wrote" in out
    assert {r["dataflow"] for r in csv.DictReader(path.open())} == {"ws"}


def test_table_headers_carry_units_and_never_wrap_inside_a_word():
    from rich.console import Console

    from paradnn import api
    from paradnn.cli.sim_tables import header, sim_table

    assert header("predicted_step_s") == "predicted step (ms)"
    assert header("compute_s") == "compute (ms)"
    assert header("bisection_bytes_per_s") == "bisection (GB/s)"
    assert header("examples_per_s") == "examples per s"  # a rate without a unit map: as named
    rows = api.simulate("h100-sxm", "cnn", {"batch": 64}, chips=8, model="roofline")
    step_ms = rows[0]["predicted_step_s"] * 1e3
    for width in (160, 100, 80):
        console = Console(width=width, record=True)
        console.print(sim_table(rows, title="t", width=width))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        cells = [c.strip() for line in text.splitlines() for c in line.split("┃")]
        words = {w for c in cells for w in c.split()}
        assert "step" in words and "(ms)" in words  # wrapped (if at all) between words
        assert not {"ste", "upp", "comput"} & words
        assert f"{step_ms:.4g}" in text  # milliseconds under an `ms` header, no unit in the cell
    assert "not shown at 80 columns" in text


def test_the_default_precision_is_each_chips_native_one():
    from paradnn import api

    native = {"h100-sxm": "bf16", "tpu-v3": "bf16", "v100-sxm2": "fp16", "skylake-n1-32": "fp32"}
    for chip, prec in native.items():
        (row,) = api.simulate(chip, "fc", {"batch": 64})
        assert row["precision"] == prec, chip
    for chip, default in (("tpu-v3", "bf16"), ("h100-sxm", "bf16")):
        curve = api.simulate_scaling(chip, "fc", {"batch": 64}, max_chips=2)
        explicit = api.simulate_scaling(chip, "fc", {"batch": 64}, precision=default, max_chips=2)
        assert curve == explicit
    (fp32,) = api.simulate("h100-sxm", "fc", {"batch": 64}, precision="fp32")  # -p wins
    assert fp32["precision"] == "fp32"


def test_breakdown_title_names_the_config():
    from paradnn.cli.sim_tables import breakdown_table

    row = {"family": "fc", "config": {"layers": 2, "batch": 64}, "platform": "v100-sxm2"}
    row |= {"precision": "fp32", "chips": 1, "predicted_step_s": 0.01, "gemm_s": 0.004}
    assert breakdown_table(row).title == (
        "step-time breakdown: fc layers=2 batch=64 on v100-sxm2 (fp32, 1 chip(s))"
    )


def test_one_platform_goes_into_the_title_once():
    from paradnn.cli.sim_tables import sim_table

    rows = [{"family": "fc", "platform": "tpu-v3"}]
    assert sim_table(rows, title="runs").title == "runs on tpu-v3"  # column dropped, title adds it
    assert sim_table(rows, title="runs on tpu-v3").title == "runs on tpu-v3"  # named: kept as is


def test_scaling_check_skips_a_run_without_a_ladder_and_checks_the_rest():
    from paradnn.sim.scaling_check import check

    # N = 2 ring: T(S) = 2α + S/B; 1000 B in 2 ms and 3000 B in 4 ms give B = 1e6 B/s, α = 0.5 ms
    ladder = [
        {"bytes": 1000, "time_s": 0.002},
        {"bytes": 2000, "time_s": 0.0031},  # the gradient's size: not fitted on
        {"bytes": 3000, "time_s": 0.004},
    ]
    good = {"procs": 2, "allreduce_ladder": ladder, "allreduce_bytes": 2000, "allreduce_s": 0.003}
    good |= {"compute_nosync_s": 0.01, "base_step_time_s": 0.01, "examples_ratio": 2.0}
    good |= {"efficiency": 0.8}
    c = check([{"procs": 2, "allreduce_ladder": None}, good])
    assert c.reason is None and len(c.rows) == 1
    (r,) = c.rows
    assert r["bandwidth"] == pytest.approx(1e6) and r["latency_s"] == pytest.approx(5e-4)
    assert r["allreduce_predicted_s"] == pytest.approx(0.003)  # 2 · 0.5 ms + 2000 B / 1e6 B/s


def test_a_bytes_per_second_column_not_named_gets_gb_per_s():
    from paradnn.cli.sim_tables import header

    assert header("link_bytes_per_s") == "link (GB/s)"  # `link_` + `bytes_per_s`, `_` stripped


def test_the_table_title_sits_at_the_left():
    from rich.console import Console

    from paradnn.cli.sim_tables import sim_table

    console = Console(width=40, record=True)
    console.print(sim_table([{"family": "fc", "op": "matmul"}], title="runs"))
    assert console.export_text().splitlines()[0].rstrip() == "runs"  # not centred over the table


def test_scaling_check_leaves_the_gradient_size_out_of_the_link_fit():
    from paradnn.sim.scaling_check import check

    # the gradient's 5000 B is the largest rung: the fit uses 1000 B in 2 ms and 3000 B in 4 ms,
    # N = 2 ring T(S) = 2α + S/B: B = 2000 B / 2 ms = 1e6 B/s, α = (2 ms − 1 ms) / 2 = 0.5 ms
    ladder = [
        {"bytes": 1000, "time_s": 0.002},
        {"bytes": 3000, "time_s": 0.004},
        {"bytes": 5000, "time_s": 0.009},
    ]
    run = {"procs": 2, "allreduce_ladder": ladder, "allreduce_bytes": 5000, "allreduce_s": 0.009}
    run |= {"compute_nosync_s": 0.01, "base_step_time_s": 0.01, "examples_ratio": 2.0}
    run |= {"efficiency": 0.8}
    (r,) = check([run]).rows
    assert r["bandwidth"] == pytest.approx(1e6) and r["latency_s"] == pytest.approx(5e-4)
    assert r["allreduce_predicted_s"] == pytest.approx(0.006)  # 2 · 0.5 ms + 5000 B / 1e6 B/s


def test_a_sweeps_runs_are_predicted_under_their_own_precision_policy(tmp_path):
    """The run's description travels whole into the prediction: a sweep's pure 16-bit run is
    sized (weights, gradients, optimizer state in 16 bits) and timed as pure, its mixed run
    as mixed; before, every run of a preset took the call's one policy (mixed)."""
    from paradnn import api

    path = tmp_path / "policies.toml"
    path.write_text(
        'precisions = ["bf16"]\nprecision_policies = ["mixed", "pure"]\n'
        "[[runs]]\nfamily = 'fc'\nconfig = {layers = 4, nodes = 2048, batch = 256}\n"
    )
    rows = api.simulate("h100-sxm", preset=str(path))
    by = {r["policy"]: r for r in rows}
    assert set(by) == {"mixed", "pure"}
    one = api.simulate(
        "h100-sxm", "fc", {"layers": 4, "nodes": 2048, "batch": 256}, precision="bf16"
    )
    assert by["mixed"]["mem_needed_bytes"] == one[0]["mem_needed_bytes"]
    assert by["pure"]["mem_needed_bytes"] < by["mixed"]["mem_needed_bytes"]
    forced = api.simulate("h100-sxm", preset=str(path), policy="pure")
    assert {r["policy"] for r in forced} == {"pure"}
