"""The host profile (issue 35): measured as slopes with paradnn's timer, stored beside the
ceilings, read back by `simulate step`, which says which profile it used. No wall-clock
assertions: the measuring code runs with a fake timer whose medians are a known line."""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import sqlite3
import weakref

import numpy as np
import pytest

from fake_cuda import FIXED_S, fake_measure  # a timer whose medians are a known line
from paradnn.measure import hostprofile as mh
from paradnn.sim import hostprofile as hp
from paradnn.store import open_store
from paradnn.store.db import schema_version
from paradnn.store.schema import LATEST, MIGRATIONS

from conftest import TINY_POLICY, export_rows, run_cli


class Probe:
    def __init__(self, others=0.0):
        self.result = {}
        self.others = others

    def begin(self):
        self.result = {"cpus": 2}

    def end(self):
        self.result.update(others_cpu_frac=self.others, steal_frac=0.0, window_s=1.0)


SMALL = {"forward": (2, 4, 6), "autograd": (2, 4, 6), "optimizer": (2, 4, 6), "step": (1, 3)}


@pytest.fixture(scope="module")
def measured():
    return mh.measure_profile("cpu", measure_fn=fake_measure, sizes=SMALL, probe=Probe())


# -- the slope -------------------------------------------------------------------------------


def _pt(units, median, lo=None, hi=None):
    return mh.Point(int(units), units, median, lo, hi, 5)


def test_a_slope_is_the_line_through_the_medians_not_the_mean_per_unit():
    s = mh.fit_slope([_pt(2, 10 + 2 * 3), _pt(4, 10 + 4 * 3), _pt(8, 10 + 8 * 3)])
    assert s.per_unit_s == pytest.approx(3) and s.intercept_s == pytest.approx(10)
    assert s.ci_low_s == pytest.approx(3) == pytest.approx(s.ci_high_s)  # no CIs: a point


def test_a_slopes_interval_takes_each_median_to_the_end_of_its_ci_by_the_weights_sign():
    s = mh.fit_slope([_pt(1, 10, 9, 11), _pt(3, 20, 19, 21)])
    assert s.per_unit_s == pytest.approx(5)
    assert (s.ci_low_s, s.ci_high_s) == (pytest.approx((19 - 11) / 2), pytest.approx(6))
    assert s.intercept_low_s < s.intercept_s < s.intercept_high_s
    assert s.ci_half_rel == pytest.approx(0.2)


def test_a_slope_needs_two_distinct_sizes():
    with pytest.raises(ValueError, match="two or more distinct sizes"):
        mh.fit_slope([_pt(4, 1.0), _pt(4, 2.0)])
    assert math.isinf(mh.fit_slope([_pt(1, 2.0), _pt(2, 1.0)]).ci_half_rel)  # falling: ≤ 0


# -- the measurement (fake timer) ------------------------------------------------------------


def test_every_figure_is_positive_finite_and_a_slope(measured):
    p = measured
    figures = [p["forward_op_s"], p["autograd_node_s"], p["optimizer_step_s"]]
    figures += list(p["optimizer_tensor_s"].values())
    assert all(0 < f < math.inf for f in figures), p
    assert p["sync_s"] == 0.0 and p["kernel_launch_s"] is None  # a CPU: one timeline
    assert "a CPU launches no kernels" in p["nulls"]["kernel_launch_s"]
    # the once-a-step, per-cast and per-call figures, measured on the CPU too (GradScaler: GPU)
    for k in ("step_s", "cast_s", "rnn_call_s"):
        assert p[k] is not None and 0 < p[k] < math.inf, (k, p["nulls"].get(k))
    assert p["scaler_s"] is None and "GPU only" in p["nulls"]["scaler_s"]
    assert p["launches_included"] is False and p["detail"]["intra_op_threads"] == 1
    assert p["detail"]["cast"]["casts_per_layer"] == 2  # a Linear's weight and bias
    assert p["detail"]["step"]["implementation"] == "loop"  # torch's default on a CPU
    assert set(p["optimizer_tensor_s"]) <= {"loop", "foreach", "fused"}
    assert {"loop", "foreach"} <= set(p["optimizer_tensor_s"])
    for name, key in (("forward_op", "forward_op_s"), ("autograd_node", "autograd_node_s")):
        d = p["detail"][name]
        pts = d["points"]
        assert [q["size"] for q in pts] == [2, 4, 6]
        xs, ys = [q["units"] for q in pts], [q["median_s"] for q in pts]
        slope, intercept = np.polyfit(xs, ys, 1)
        assert p[key] == pytest.approx(slope, rel=1e-6)  # the least-squares line's slope
        assert d["intercept_s"] == pytest.approx(intercept, rel=1e-6)
        # the fixed FIXED_S is in the intercept, not in the figure: the mean per unit is larger
        assert p[key] < pts[0]["median_s"] / pts[0]["units"]
        assert d["intercept_s"] > FIXED_S / 2  # most of the fixed cost is found there
        assert d["ci_low_s"] <= p[key] <= d["ci_high_s"]
    for impl, per in p["optimizer_tensor_s"].items():
        d = p["detail"][f"optimizer_{impl}"]
        assert [q["units"] for q in d["points"]] == [2.0, 4.0, 6.0]  # tensors
        assert per == pytest.approx(d["per_unit_s"])
    assert p["optimizer_step_s"] >= FIXED_S  # the empty step, timed directly


def test_units_are_counted_calls_and_graph_nodes(measured):
    fwd = [q["units"] for q in measured["detail"]["forward_op"]["points"]]
    nodes = [q["units"] for q in measured["detail"]["autograd_node"]["points"]]
    assert fwd[1] - fwd[0] == fwd[2] - fwd[1] > 0  # the same calls a layer, every layer
    assert nodes[1] - nodes[0] == nodes[2] - nodes[1] > fwd[1] - fwd[0]  # nodes: more a layer
    step, calls = mh._forward("cpu")(3)
    assert calls == mh.count_calls(step) == fwd[0] * 3 / 2


def test_the_real_timer_gives_positive_finite_figures_on_this_cpu(monkeypatch):
    tiny = {k: (1, 2) for k in ("forward", "autograd", "optimizer", "rnn", "step")}
    p = mh.measure_profile("cpu", policy=TINY_POLICY, sizes=tiny, rounds=1)
    figures = [p["forward_op_s"], p["autograd_node_s"], p["optimizer_step_s"]]
    assert all(0 < f < math.inf for f in [*figures, *p["optimizer_tensor_s"].values()]), p
    assert p["quality"] in ("good", "noisy") and "others_cpu_frac" in p["detail"]["load"]
    # a difference or an intercept that noise hides is NULL with its reason, never 0
    for k in ("step_s", "cast_s", "rnn_call_s"):
        assert (p[k] is not None and 0 < p[k] < math.inf) or p["nulls"][k], (k, p)
    # noise may bend a slope below zero: then the figure is a labelled upper bound, never 0
    for name in ("forward_op", "autograd_node"):
        if p["detail"][name]["per_unit_s"] <= 0:
            assert any(r.startswith(f"{name}_s: slope") for r in p["quality_reasons"])


def test_a_quiet_profile_is_good_and_a_busy_one_noisy(measured):
    assert measured["quality"] == "good" and measured["quality_reasons"] == []
    busy = mh.measure_profile("cpu", measure_fn=fake_measure, sizes=SMALL, probe=Probe(others=0.6))
    assert busy["quality"] == "noisy"
    assert any("other processes used 60% of the CPUs" in r for r in busy["quality_reasons"])
    assert busy["detail"]["load"]["others_cpu_frac"] == 0.6


def test_a_wide_slope_interval_makes_the_profile_noisy():
    def wide(step, clock, policy, **kw):
        t = fake_measure(step, clock, policy)
        m = t.summary.median
        t.summary.ci_low, t.summary.ci_high = m * 0.5, m * 1.5
        return t

    p = mh.measure_profile("cpu", measure_fn=wide, sizes=SMALL, probe=Probe())
    assert p["quality"] == "noisy"
    assert any(r.startswith("forward_op_s: interval ±") for r in p["quality_reasons"])


def test_a_slope_that_noise_made_negative_is_replaced_by_a_labelled_upper_bound():
    reasons: list[str] = []
    pts = [_pt(2, 30e-6), _pt(4, 20e-6)]
    got = mh._positive(mh.fit_slope(pts), pts, reasons, "forward_op_s")
    assert got == pytest.approx(20e-6 / 4)
    assert "≤ 0" in reasons[0] and "upper bound" in reasons[0]


# -- stored and read back --------------------------------------------------------------------


@pytest.fixture(scope="module")
def row():
    return mh.host_row("cpu", 1, measure_fn=fake_measure, sizes=SMALL, probe=Probe())


def test_a_row_round_trips_through_the_store_into_a_host_profile(row):
    with open_store(":memory:") as store:
        (rid,) = store.insert_rows("host_profile", [row])
        (back,) = store.rows("host_profile")
    assert back["id"] == rid and back["hostname"] == platform.node()
    assert back["detail"]["forward_op"]["points"] == row["detail"]["forward_op"]["points"]
    assert back["quality_reasons"] == [] and back["nulls"] == row["nulls"]
    p = hp.from_row(back)
    assert p.source == "measured" and p.device_type == "cpu" and p.host == row["host"]
    assert p.forward_op_s == row["forward_op_s"] and p.kernel_launch_s is None
    assert p.optimizer_tensor_s["foreach"] == row["optimizer_foreach_s"]
    assert p.optimizer_s("foreach", 10) == pytest.approx(
        row["optimizer_step_s"] + 10 * row["optimizer_foreach_s"]
    )


def test_an_older_database_gains_the_table_and_keeps_its_rows(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "".join(MIGRATIONS[:10]) + "\nPRAGMA user_version = 10;"
    )  # before host_profile
    conn.execute(
        "INSERT INTO ceilings (device, device_name, fingerprint, kind, value, unit, "
        "measured_at) VALUES ('cpu', 'Old', 'f', 'copy', 1e9, 'B/s', '2026-01-01')"
    )
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with open_store(db, readonly=True) as store:  # read: migrated in a copy only
        assert store.rows("host_profile") == [] and len(store.rows("ceilings")) == 1
    assert db.read_bytes() == before
    with open_store(db) as store:
        assert schema_version(store.conn) == LATEST
        assert (
            store.rows("host_profile") == [] and store.rows("ceilings")[0]["device_name"] == "Old"
        )


# -- the files a profile can come from -------------------------------------------------------

GOOD = {
    "forward_op_s": 9e-6,
    "autograd_node_s": 7e-6,
    "optimizer_tensor_s": {"loop": 30e-6, "foreach": 20e-6},
    "optimizer_step_s": 20e-6,
    "sync_s": 0.0,
}


def _toml(d: dict, table: str | None = None) -> str:
    head = f"[{table}]\n" if table else ""
    opt = ", ".join(f"{k} = {v!r}" for k, v in d["optimizer_tensor_s"].items())
    body = "".join(f"{k} = {v!r}\n" for k, v in d.items() if k != "optimizer_tensor_s")
    return head + body + f"optimizer_tensor_s = {{ {opt} }}\n"


def test_a_profile_file_in_toml_json_or_a_results_export(tmp_path, row):
    t = tmp_path / "h.toml"
    t.write_text(_toml(GOOD))
    p = hp.load_file(t)
    assert p.source == "file" and p.forward_op_s == 9e-6 and p.optimizer_tensor_s["loop"] == 30e-6
    j = tmp_path / "h.json"
    j.write_text(json.dumps(GOOD))
    assert hp.load_file(j).autograd_node_s == 7e-6
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"rows": [{**row, "detail": {}}]}))
    q = hp.load_file(export)
    assert q.source == "file" and q.forward_op_s == row["forward_op_s"]


BAD = [
    ("missing.toml", None, "--host-profile = "),
    ("h.toml", "forward_op_s = [", "is not valid TOML"),
    ("h.json", "{nope", "is not valid JSON"),
    ("h.toml", _toml({**GOOD, "forward_op_s": -1.0}), "forward_op_s = -1.0"),
    ("h.toml", _toml(GOOD) + "colour = 'red'\n", "colour"),
    ("h.toml", _toml({**GOOD, "forward_op_s": 8}), "seconds ≤ 1"),  # µs written as seconds
    ("h.toml", _toml({**GOOD, "optimizer_tensor_s": {"adamw": 1e-6}}), "adamw"),
]


@pytest.mark.parametrize(("name", "text", "says"), BAD)
def test_a_bad_host_profile_file_is_one_line_and_exit_2(capsys, tmp_path, name, text, says):
    f = tmp_path / name
    if text is not None:
        f.write_text(text)
    args = ("simulate", "step", "fc", "layers=2", "--platform", "h100-sxm")
    code, out, err = run_cli(capsys, *args, "--host-profile", str(f))
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert says in lines[0] and str(f) in lines[0], lines[0]


# -- simulate step says which profile it used ------------------------------------------------

STEP = ("simulate", "step", "fc", "layers=2", "nodes=32", "batch=16")


def test_simulate_step_names_the_defaults_when_nothing_is_measured(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no paradnn.db here
    code, out, err = run_cli(capsys, *STEP, "--platform", "h100-sxm")
    assert code == 0, err
    assert "host profile: the assumed defaults for cuda" in out


def test_simulate_step_uses_this_hosts_stored_profile_and_says_so(capsys, tmp_path, row):
    db = tmp_path / "r.db"
    other = {**row, "hostname": "elsewhere", "forward_op_s": 1e-3}
    with open_store(db) as store:
        store.insert_rows("host_profile", [other])
    code, out, err = run_cli(capsys, *STEP, "--platform", "h100-sxm", "--db", str(db))
    assert code == 0, err
    assert "assumed defaults" in out and "holds no profile of" in out and "elsewhere" in out
    with open_store(db) as store:
        store.insert_rows("host_profile", [row])
    code, out, err = run_cli(capsys, *STEP, "--platform", "h100-sxm", "--db", str(db), "-f", "json")
    assert code == 0, err
    (r,) = json.loads(out)
    assert r["host_profile"].startswith(f"host profile: measured, from {db} row 2")
    assert "launch and sync assumed (cuda defaults)" in r["host_profile"]  # measured on a CPU
    assert r["host_profile"] in err  # said on stderr too, beside the JSON
    code, out, err = run_cli(capsys, *STEP, "--platform", "h100-sxm", "--db", str(db),
                             "--host-profile", "defaults")  # fmt: skip
    assert code == 0 and "assumed defaults for cuda" in out, err


def test_simulate_step_names_a_file_or_a_chip_files_host_table(capsys, tmp_path):
    f = tmp_path / "h.toml"
    f.write_text(_toml(GOOD))
    code, out, err = run_cli(capsys, *STEP, "--platform", "h100-sxm", "--host-profile", str(f))
    assert code == 0, err
    assert f"host profile: read from --host-profile {f}" in out.replace("\n", "")
    from paradnn.platforms import datasheets

    chip = tmp_path / "mychip.toml"
    plat = datasheets.get("h100-sxm")
    chip.write_text(
        '[mychip]\nname = "My chip"\nvendor = "me"\nkind = "gpu"\n'
        f"mem_bandwidth = {plat.mem_bandwidth}\n"
        f"[mychip.peak_dense]\nfp32 = {plat.peak_dense['fp32']}\n" + _toml(GOOD, "mychip.host")
    )
    code, out, err = run_cli(capsys, *STEP, "--platform", str(chip))
    assert code == 0, err
    assert f"host profile: read from the platform file {chip} [mychip.host]" in out.replace(
        "\n", ""
    )


def test_a_bad_host_table_in_a_chip_file_is_one_line(capsys, tmp_path):
    chip = tmp_path / "mychip.toml"
    chip.write_text(
        '[mychip]\nname = "My chip"\nvendor = "me"\nkind = "gpu"\nmem_bandwidth = 1e12\n'
        "[mychip.peak_dense]\nfp32 = 1e13\n"
        + _toml({**GOOD, "forward_op_s": "fast"}, "mychip.host")
    )
    code, _, err = run_cli(capsys, *STEP, "--platform", str(chip))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "mychip.host" in err and "forward_op_s" in err, err


# -- calibrate --host-only, end to end (a worker, the real timer at tiny sizes) --------------


def test_calibrate_host_only_stores_a_profile_results_shows_it(capsys, tmp_path, monkeypatch):
    # the worker measures at tiny sizes with a short policy (they travel in the unit's params)
    from paradnn.runner import tasks

    tiny = {k: (1, 2) for k in ("forward", "autograd", "optimizer", "rnn", "step")}
    policy = dataclasses.asdict(TINY_POLICY)
    real = tasks.host_unit
    monkeypatch.setattr(
        tasks, "host_unit", lambda env: real(env, sizes=tiny, policy=policy, rounds=1)
    )
    db = str(tmp_path / "r.db")
    code, out, err = run_cli(capsys, "calibrate", "--host-only", "--device", "cpu", "--db", db)
    assert code == 0, err
    assert "host profile" in out and "fwd op" in out and "µs per unit" in out
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "host_profile", "-f", "json")
    (r,) = export_rows(out)
    assert r["status"] == "ok" and r["quality"] in ("good", "noisy") and r["task_key"]
    for k in ("forward_op_s", "autograd_node_s", "optimizer_loop_s", "optimizer_step_s"):
        assert r[k] is not None and r[k] > 0 and math.isfinite(r[k]), (k, r[k])
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "host_profile")
    header = " ".join(ln for ln in out.splitlines() if ln.startswith("┃"))
    assert code == 0 and "node" in header and {"train", "step"} <= set(header.split())
    code, _, err = run_cli(capsys, "calibrate", "--host-only", "--no-host", "--db", db)
    assert code == 2 and "--no-host" in err


def test_host_only_refuses_matmul_options(capsys, tmp_path):
    code, _, err = run_cli(
        capsys, "calibrate", "--host-only", "-p", "fp32", "--db", str(tmp_path / "r.db")
    )
    assert code == 2 and "--host-only" in err and len(err.strip().splitlines()) == 1


def test_the_cuda_costs_path_runs_with_a_fake_device(monkeypatch):
    """The GPU path (sync, launch = GPU op − CPU op), exercised on a CPU: the "GPU" is the CPU
    and synchronize a no-op, so both ladders are equal and the launch falls back to the GPU op's
    own per-call cost, labelled."""
    import torch

    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda dev=None: synced.append(dev))
    detail: dict = {}
    args = ("cpu", (2, 4, 6), fake_measure, TINY_POLICY, print, detail)
    sync_s, launch = mh._cuda_costs(*args, rounds=2)  # 2: the fake's first call imports
    launch_s = launch.value
    assert sync_s == pytest.approx(FIXED_S, rel=0.05) and synced  # no aten op: the fixed cost
    k = detail["kernel_launch"]
    assert [q["units"] for q in k["cuda_op"]["points"]] == [2.0, 4.0, 6.0]
    gpu, cpu = k["cuda_op"]["per_unit_s"], k["cpu_op"]["per_unit_s"]
    assert gpu == pytest.approx(cpu) and launch_s is not None and launch_s > 0
    if gpu <= cpu:  # equal ladders: the GPU op's own per-call cost, labelled
        assert launch_s == gpu and "GPU op ≤ CPU op" in k["note"]
    assert detail["sync"]["median_s"] == sync_s


# -- the crash of the first H100 loan, and every term on a (fake) GPU (issue 42) -------------


def test_a_ladder_whose_units_do_not_grow_is_null_with_its_reason_not_a_crash(monkeypatch):
    """The H100 crash: "a slope needs two or more distinct sizes, got units [5.0, 5.0, 5.0]".
    A counter that sees the same units at every size (here the autograd graph walk) leaves that
    one figure NULL with the reason; every other figure is measured, and the stored row reads
    back with the default named as assumed."""
    monkeypatch.setattr(mh, "count_nodes", lambda root: 5)
    p = mh.measure_profile("cpu", measure_fn=fake_measure, sizes=SMALL, probe=Probe())
    assert p["autograd_node_s"] is None
    assert "two or more distinct sizes, got units [5.0, 5.0, 5.0]" in p["nulls"]["autograd_node_s"]
    assert p["forward_op_s"] > 0 and p["rnn_call_s"] > 0 and p["cast_s"] > 0
    assert p["step_s"] is None and "head's share" in p["nulls"]["step_s"]  # needs the node
    assert p["detail"]["autograd_node"]["why"] == p["nulls"]["autograd_node_s"]
    row = mh.host_row("cpu", 1, measure_fn=fake_measure, sizes=SMALL, probe=Probe())
    row = {**row, "autograd_node_s": None, "nulls": p["nulls"]}
    with open_store(":memory:") as store:
        store.insert_rows("host_profile", [row])
        (back,) = store.rows("host_profile")
    prof = hp.from_row(back)
    assert prof.autograd_node_s == hp.default("cpu").autograd_node_s
    assert prof.detail["assumed"] == {"autograd_node_s": prof.autograd_node_s}
    assert "autograd_node assumed (cpu defaults)" in hp.describe(prof)


def test_a_ladder_that_fails_on_the_device_is_null_with_its_reason(monkeypatch):
    def broken(device):
        def make(n):
            raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED\nmore text")

        return make

    monkeypatch.setattr(mh, "_rnn", broken)
    p = mh.measure_profile("cpu", measure_fn=fake_measure, sizes=SMALL, probe=Probe())
    assert p["rnn_call_s"] is None
    assert "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED" in p["nulls"]["rnn_call_s"]
    assert p["step_s"] > 0 and p["forward_op_s"] > 0  # the rest is measured


@pytest.mark.parametrize("bad", [(4,), (4, 4), (8, 4), (0, 2), (2.0, 4)])
def test_every_ladders_sizes_are_distinct_by_construction(bad):
    mh.check_sizes(mh.SIZES)
    with pytest.raises(ValueError, match="two or more increasing sizes"):
        mh.check_sizes({"forward": bad})


@pytest.fixture
def cuda_fake():
    import fake_cuda

    fake_cuda.install()
    yield fake_cuda
    fake_cuda.uninstall()


def test_every_term_is_measured_on_a_fake_cuda_device(cuda_fake):
    import torch

    assert torch.cuda.is_available()
    p = mh.measure_profile("cuda:0", measure_fn=fake_measure, sizes=SMALL, probe=Probe())
    terms = ("forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s", "kernel_launch_s")
    terms += ("step_s", "cast_s", "rnn_call_s", "scaler_s")
    for k in terms:
        assert p[k] is not None and 0 < p[k] < math.inf, (k, p["nulls"].get(k))
    assert set(p["optimizer_tensor_s"]) == {"loop", "foreach", "fused"}
    assert p["nulls"] == {} and p["launches_included"] is True
    assert p["detail"]["step"]["implementation"] == "foreach"  # torch's default on CUDA
    assert p["detail"]["cast"]["precision"] == "bf16" and p["detail"]["cast"]["casts_per_layer"]
    assert p["detail"]["device"] == "cuda:0"


def test_calibrate_host_only_on_a_fake_cuda_device_stores_every_term(capsys, tmp_path, monkeypatch):
    """`paradnn calibrate --host-only --device cuda`, the whole path: the CLI, the supervisor, a
    spawned worker on the fake device (tests/fake_cuda.py, with its fake clock), the store and
    `results`; then `simulate step` prices a GPU step with the stored profile."""
    import fake_cuda

    for k, v in fake_cuda.worker_env().items():
        monkeypatch.setenv(k, v)
    db = str(tmp_path / "gpu.db")
    code, out, err = run_cli(capsys, "calibrate", "--host-only", "--device", "cuda", "--db", db)
    assert code == 0, err
    assert "host profile: launch:" in err and "training step, autocast bf16" in err  # on CUDA
    code, out, _ = run_cli(capsys, "results", "--db", db, "--table", "host_profile", "-f", "json")
    (r,) = export_rows(out)
    assert r["status"] == "ok" and r["device"] == "cuda:0" and r["device_type"] == "cuda"
    from paradnn.cli.tables import HOST_FIGURES  # every figure column the table shows

    assert len(HOST_FIGURES) == 12 and set(HOST_FIGURES) <= set(r)
    for k in HOST_FIGURES:
        assert r[k] is not None and r[k] > 0 and math.isfinite(r[k]), (k, r["nulls"])
    assert r["nulls"] == {} and r["launches_included"] == 1
    prof = hp.from_row(r)
    assert prof.launches_included and prof.step_s == r["step_s"] and prof.device_type == "cuda"
    args = (*STEP, "--platform", "h100-sxm", "--db", db, "-f", "json")
    code, out, err = run_cli(capsys, *args)  # this host's profile, measured on its GPU
    assert code == 0, err
    (pred,) = json.loads(out)
    assert pred["host_profile"].startswith(f"host profile: measured, from {db} row 1")
    assert "assumed" not in pred["host_profile"]


def test_a_v12_database_gains_the_host_floor_columns(tmp_path):
    """A profile stored before issue 42 keeps its figures; the new ones read as NULL (composed
    by the model) and its per-op figures as not holding launches."""
    db = tmp_path / "v12.db"
    conn = sqlite3.connect(db)
    conn.executescript("".join(MIGRATIONS[:12]) + "\nPRAGMA user_version = 12;")
    conn.execute(
        "INSERT INTO host_profile (device, device_type, device_name, fingerprint, hostname, "
        "forward_op_s, autograd_node_s, optimizer_loop_s, optimizer_step_s, sync_s, "
        "measured_at) VALUES ('cpu', 'cpu', 'Old', 'f', 'h', 8e-6, 9e-6, 2e-5, 2e-5, 0, 'x')"
    )
    conn.commit()
    conn.close()
    with open_store(db) as store:
        (row,) = store.rows("host_profile")
    assert row["step_s"] is None and row["launches_included"] == 0
    p = hp.from_row(row)
    assert p.step_s is None and p.launches_included is False and p.forward_op_s == 8e-6


H100_DB = "benchmarks/results/gpu/nvidia-h100-80gb-hbm3/work/runs.sqlite"


def test_simulate_validate_uses_the_host_profile_stored_with_the_runs_and_says_so(
    capsys, tmp_path, row
):
    """`simulate validate`: a database from a GPU machine holds its runs and the host profile
    `calibrate` measured there (same device name): validate prices those runs with it, else the
    defaults; `--host-profile FILE|defaults` overrides; the line under the table says which."""
    import shutil
    from pathlib import Path

    db = tmp_path / "h100.db"
    shutil.copy(Path(__file__).resolve().parents[1] / H100_DB, db)
    args = ("simulate", "validate", "--db", str(db), "--platform", "h100-sxm", "-f", "json")
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    base = {r["config"] + r["precision"]: r["predicted_s"] for r in json.loads(out)["rows"]}
    assert "assumed defaults for cuda" in err
    slow = {**row, "device_name": "NVIDIA H100 80GB HBM3", "device_type": "cuda"}
    slow |= {"step_s": 0.5, "launches_included": True, "kernel_launch_s": 5e-6}
    with open_store(db) as store:
        (rid,) = store.insert_rows("host_profile", [slow])
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert f"host profile: measured, from host_profile row {rid} of {slow['hostname']}" in err
    got = json.loads(out)["rows"]
    assert all(r["predicted_s"] >= 0.5 > base[r["config"] + r["precision"]] for r in got)
    code, out, err = run_cli(capsys, *args, "--host-profile", "defaults")
    assert code == 0 and "--host-profile defaults" in err
    again = {r["config"] + r["precision"]: r["predicted_s"] for r in json.loads(out)["rows"]}
    assert again == base
    f = tmp_path / "h.toml"
    f.write_text(_toml({**GOOD, "step_s": 2e-3}))
    code, out, err = run_cli(capsys, *args, "--host-profile", str(f))
    assert code == 0 and f"read from --host-profile {f}" in err
    assert all(r["predicted_s"] >= 2e-3 for r in json.loads(out)["rows"])
    code, _, err = run_cli(capsys, *args, "--host-profile", str(tmp_path / "none.toml"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--host-profile" in err


class _Node:
    """A graph node as torch hands it out: its Python object is made on access and cached only
    while something holds it, so a freed object's id is free for the next one."""

    cache: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __init__(self, inputs: list) -> None:
        self.inputs = inputs

    @classmethod
    def of(cls, inputs: list) -> _Node:
        got = cls.cache.get(id(inputs))
        if got is None:
            got = cls.cache[id(inputs)] = cls(inputs)
        return got

    @property
    def next_functions(self) -> tuple:
        return tuple((_Node.of(i), 0) for i in self.inputs)


@pytest.mark.parametrize("layers", [1, 4, 16])
def test_count_nodes_holds_what_it_walked_so_no_id_is_reused(layers):
    """The 2026-11-27 H100 host counted 5 nodes for chains of 4 and 16 layers (the autograd
    figure lost, the step figure with it): the walk kept ids of objects it let go, and the next
    node's object took a freed id. Here each layer adds three nodes (one shared leaf reached
    from every layer counts once): 3 × layers + 2."""
    shared: list = []
    keep = [shared]
    graph: list = []
    for _ in range(layers):
        graph = [graph, [], [shared]]
        keep.append(graph)
    assert mh.count_nodes(_Node.of(graph)) == 3 * layers + 2
