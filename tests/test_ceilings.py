"""Ceilings that are ceilings (issue 41): the compute ceiling is the best rate over the math paths
the workloads use, the path and shape that won are stored and shown, and a run above its ceiling
is flagged, marked, explained and never a headline.

CPU only; a fake timer decides the rates, so nothing depends on which path wins on this CPU."""

from __future__ import annotations

import itertools
import json

import pytest

from paradnn import api, families, utilization
from paradnn.errors import ConfigError
from paradnn.measure import calibrate as cal
from paradnn.measure import mathpaths
from paradnn.measure.stats import summarize
from paradnn.measure.timer import Timing
from paradnn.records import RunRecord
from paradnn.runner import kernels
from paradnn.runner import tasks as T
from paradnn.store import open_store

from conftest import export_rows, run_cli

# --- the paths and their FLOPs --------------------------------------------------------------


def test_paths_count_flops_as_the_families_do():
    lstm = mathpaths.PATHS["lstm"]
    shape = lstm.shape(800)
    assert shape == {"seq": 10, "batch": 400, "hidden": 200}
    # the rnn family's count of one LSTM layer of the same shape (its first layer: input grad)
    rnn = families.get("rnn")
    cfg = rnn.config({"layers": 1, "embed": 200, "length": 10, "vocab": 2, "batch": 400})
    (layer,) = [s for s in rnn.shapes(cfg) if s.kind == "recurrent"]
    assert lstm.flops(shape) == layer.train_flops()
    linear = mathpaths.PATHS["linear"]
    assert linear.shape(256) == {"m": 1024, "k": 256, "n": 256}  # tall-skinny
    assert linear.flops(linear.shape(256)) == 2 * 1024 * 256 * 256  # the bias is not counted
    assert mathpaths.PATHS["matmul"].flops({"m": 8, "k": 8, "n": 8}) == cal.matmul_flops(8)
    assert linear.label(linear.shape(2)) == "8×2×2" and lstm.label(shape) == "T=10 B=400 H=200"
    assert mathpaths.default_paths("cpu") == ("matmul", "linear", "lstm")
    with pytest.raises(ConfigError, match="path = 'conv'"):
        mathpaths.check_paths(["conv"])
    grow, growing = mathpaths.ladder("cuda")
    assert growing and grow[0] == 1024 and all(b == 2 * a for a, b in itertools.pairwise(grow))
    assert mathpaths.ladder("cpu", (64, 16, 16)) == ((16, 64), False)  # as given: no growth


# --- calibrate over paths, with a fake timer ---------------------------------------------------


def _which(step) -> tuple[str, int]:
    """The path and ladder size of a calibrate step, read off its tensors."""
    x = (step.__defaults__ or ())[0]
    if x.dim() == 3:
        return "lstm", 4 * x.shape[2]
    m, k = x.shape
    return ("matmul", m) if m == k else ("linear", k)


def _fake(rate, seen=None):
    """A timer whose step time is the path's FLOPs over `rate(path, n)` FLOP/s."""

    def fake(step, clock, policy, progress=None) -> Timing:
        path, n = _which(step)
        if seen is not None:
            seen.append((path, n))
        t = mathpaths.PATHS[path].flops(mathpaths.PATHS[path].shape(n)) / rate(path, n)
        samples = [t] * 10
        return Timing(t, 0, 0.0, True, 1, samples, summarize(samples), True, "ci_target", 0.0, t)

    return fake


def _calibrate(rate, paths=("matmul", "linear", "lstm"), sizes=(8, 16), **kw):
    kw = {"budget_s": 10_000, **kw}
    (row,) = cal.calibrate(
        "cpu", ("fp32",), sizes=sizes, threads=1, kinds=("matmul",), measure_fn=_fake(rate),
        paths=paths, **kw,
    )  # fmt: skip
    return row


@pytest.mark.parametrize("winner", ["matmul", "linear", "lstm"])
def test_the_best_path_and_shape_set_the_ceiling_and_are_stored(winner, store):
    def rate(path, n):
        return (3e9 if path == winner else 1e9) * (2 if n == 16 else 1)

    row = _calibrate(rate)
    d = row["detail"]
    assert row["value"] == pytest.approx(6e9)
    assert d["path"] == winner and d["best_size"] == 16
    assert d["shape"] == mathpaths.PATHS[winner].shape(16)
    assert d["shape_label"] == mathpaths.PATHS[winner].label(d["shape"])
    assert set(d["paths"]) == {"matmul", "linear", "lstm"}
    for name, p in d["paths"].items():
        assert set(p["sizes"]) == {"8", "16"} and p["call"] and p["library"]
        assert p["flop_per_s"] == pytest.approx(6e9 if name == winner else 2e9)
    # the square matmul sizes stay where the simulator reads its rate by size
    assert d["sizes"] == d["paths"]["matmul"]["sizes"]
    store.insert_rows("ceilings", [row])
    (back,) = store.rows("ceilings")
    assert back["detail"]["path"] == winner and back["detail"]["shape"] == d["shape"]


def test_a_tie_goes_to_the_path_named_first():
    row = _calibrate(lambda path, n: 1e9, paths=("linear", "matmul"))
    assert row["detail"]["path"] == "linear"
    row = _calibrate(lambda path, n: 1e9, paths=("matmul", "linear"))
    assert row["detail"]["path"] == "matmul"


def test_alone_calibrate_times_a_plain_matmul():
    """`doctor` calls measure.calibrate for a sanity-check matmul: one path unless told."""
    (row,) = cal.calibrate(
        "cpu", ("fp32",), sizes=(8,), threads=1, kinds=("matmul",),
        measure_fn=_fake(lambda p, n: 1e9), budget_s=100,
    )  # fmt: skip
    assert list(row["detail"]["paths"]) == ["matmul"] and row["detail"]["path"] == "matmul"
    assert row["detail"]["best_size"] == 8


def test_a_growing_ladder_stops_when_the_rate_stops_rising():
    seen = []
    # flat from 256 to 512 (below a ceiling size: go on), rises to n=2048, then 4096 adds
    # less than 3 %: 8192 is never timed
    rates = {128: 1e9, 256: 2e9, 512: 2e9, 1024: 8e9, 2048: 8.3e9, 4096: 8.4e9}

    def rate(path, n):
        return rates.get(n, 8e9)

    (row,) = cal.calibrate(
        "cpu", ("fp32",), threads=1, kinds=("matmul",), measure_fn=_fake(rate, seen),
        budget_s=10_000, paths=("matmul",),
    )  # fmt: skip
    p = row["detail"]["paths"]["matmul"]
    assert [n for _, n in seen] == [128, 256, 512, 1024, 2048, 4096]
    assert "stopped rising: n=4096" in p["plateau"] and "stopped" not in row["detail"]
    assert row["detail"]["best_size"] == 4096 and row["value"] == pytest.approx(8.4e9)


def test_other_paths_start_at_half_a_ceiling_size_and_the_first_size_is_budgeted():
    seen = []
    (row,) = cal.calibrate(
        "cpu", ("fp32",), threads=1, kinds=("matmul",),
        measure_fn=_fake(lambda p, n: 1e12, seen), budget_s=10_000,
        paths=("matmul", "linear"),
    )  # fmt: skip
    assert min(n for p, n in seen if p == "linear") == mathpaths.START["cpu"]
    assert min(n for p, n in seen if p == "matmul") == mathpaths.LADDER["cpu"][0]
    # at 1 GFLOP/s a ceiling-sized linear (8.6 GFLOP a step, ≥ 21 steps) does not fit in its
    # 5 s share: estimated from the matmul's ceiling-sized rate, it is not tried
    (row,) = cal.calibrate(
        "cpu", ("fp32",), sizes=(1024,), threads=1, kinds=("matmul",),
        measure_fn=_fake(lambda p, n: 1e9), budget_s=10, paths=("matmul", "linear"),
    )  # fmt: skip
    lin = row["detail"]["paths"]["linear"]
    assert lin["sizes"] == {} and "best rate of the paths before it" in lin["stopped"]
    assert row["detail"]["path"] == "matmul"
    # a small size's rate says little about a large kernel (overheads, a loaded machine): no
    # estimate from it, the first size is tried
    (row,) = cal.calibrate(
        "cpu", ("fp32",), sizes=(64,), threads=1, kinds=("matmul",),
        measure_fn=_fake(lambda p, n: 1e6), budget_s=10, paths=("matmul", "linear"),
    )  # fmt: skip
    assert set(row["detail"]["paths"]["linear"]["sizes"]) == {"64"}


def test_sizes_below_a_ceiling_size_get_a_small_share_of_the_budget():
    policy = cal.CALIBRATE_POLICY
    small = cal.size_caps(policy, 8.0, 8.0, small=True)
    big = cal.size_caps(policy, 8.0, 8.0)
    assert small.warmup_max_time_s == 0.5 and small.max_time_s == 0.5
    assert big.warmup_max_time_s == 1.0 and big.max_time_s == pytest.approx(8 / 3)
    tight = cal.size_caps(policy, 0.1, 0.1)  # never below the policy's own minimums
    assert tight.max_time_s == policy.min_time_s
    assert tight.warmup_max_time_s == policy.warmup_min_time_s


def test_a_size_that_would_not_fit_in_memory_is_not_tried(monkeypatch):
    need = mathpaths.PATHS["matmul"].nbytes
    monkeypatch.setattr(cal, "memory_limit", lambda device: need(cal_shape(16), 4))
    row = _calibrate(lambda p, n: 1e9, paths=("matmul",))
    d = row["detail"]
    assert set(d["sizes"]) == {"8", "16"}  # n=16 fits, exactly
    monkeypatch.setattr(cal, "memory_limit", lambda device: need(cal_shape(16), 4) - 1)
    d = _calibrate(lambda p, n: 1e9, paths=("matmul",))["detail"]
    assert set(d["sizes"]) == {"8"} and "GiB calibrate allows itself" in d["stopped"]


def cal_shape(n):
    return mathpaths.PATHS["matmul"].shape(n)


def test_bad_paths_fail_before_work():
    with pytest.raises(ConfigError, match="path"):
        cal.calibrate("cpu", ("fp32",), paths=("gemv",), measure_fn=_fake(lambda p, n: 1))
    with pytest.raises(ConfigError, match="path"):
        T.ceiling_units({"device_type": "cpu", "fingerprint": "f"}, None, paths=["x"])


# --- planning: the paths are part of a unit, and --if-missing knows old ceilings -------------

ENV = {
    "device": "cpu",
    "device_type": "cpu",
    "fingerprint": "f" * 16,
    "cpu_model": "Test CPU",
    "native_precisions": ["fp32"],
    "precision_reasons": {},
}


def test_a_unit_carries_its_paths_and_an_old_ceiling_does_not_cover_it():
    (unit, *_), _ = T.ceiling_units(ENV, None, kinds=("matmul",))
    assert unit.params["paths"] == list(mathpaths.DEFAULT_PATHS["cpu"])
    (mm_only, *_), _ = T.ceiling_units(ENV, None, kinds=("matmul",), paths=["matmul"])
    assert mm_only.key != unit.key  # measured again when the paths change
    old = {"kind": "matmul", "precision": "fp32", "detail": {"sizes": {}, "best_size": 1024}}
    new = {**old, "detail": {"paths": {p: {} for p in mathpaths.DEFAULT_PATHS["cpu"]}}}
    assert kernels._covering(unit, [old]) is None  # torch.mm alone: no ceiling of the paths
    assert kernels._covering(unit, [old, new]) is new
    assert kernels._covering(mm_only, [old]) is old


# --- a run above its ceiling, end to end -----------------------------------------------------

EPYC = "AMD EPYC"
LSTM = {"layers": 1, "embed": 200, "length": 10, "vocab": 32, "batch": 256, "cell": "lstm"}
FC = {"layers": 2, "nodes": 256, "batch": 64}


def _run(store, family, cfg, achieved):
    fam = families.get(family)
    c = fam.config(cfg)
    flops = fam.train_flops(c)
    rec = RunRecord.flat(
        run_key=f"{family}-{achieved}",
        family=family,
        config={f.name: getattr(c, f.name) for f in fam.fields()},
        precision="fp32",
        optimizer="sgd",
        device="cpu",
        device_name=EPYC,
        status="ok",
        flops_per_step=flops,
        flops_analytic=flops,
        examples_per_step=c.batch,
        step_time_s=flops / achieved,
        examples_per_s=c.batch * achieved / flops,
        achieved_flops=achieved,
        threads=2,
        fingerprint="f",
        quality="good",
    )
    rec = utilization.of_record(rec, store)  # what the runner does when it stores a run
    store.insert(rec)
    return rec


def _ceiling_row(value, path="matmul", shape="4096×4096×4096"):
    return {
        "device": "cpu",
        "device_name": EPYC,
        "fingerprint": "f",
        "kind": "matmul",
        "precision": "fp32",
        "value": value,
        "unit": "FLOP/s",
        "detail": {"path": path, "shape_label": shape, "paths": {path: {}}},
        "measured_at": "2026-11-27T00:00:00",
    }


def _synthetic_db(tmp_path) -> str:
    """The issue's demo: a 216 GFLOP/s matmul ceiling, an LSTM step at 299 GFLOP/s (138.6 %),
    two FC runs below it."""
    db = str(tmp_path / "beaten.db")
    with open_store(db) as store:
        store.insert_rows("ceilings", [_ceiling_row(216e9)])
        lstm = _run(store, "rnn", LSTM, 299.4e9)
        fc1 = _run(store, "fc", FC, 108e9)
        _run(store, "fc", {**FC, "batch": 128}, 151.2e9)
    assert lstm.utilization_measured == pytest.approx(1.386, abs=1e-3)
    assert lstm.ceiling_beaten is True and fc1.ceiling_beaten is False
    return db


def test_a_run_above_its_ceiling_is_flagged_marked_and_never_a_headline(tmp_path, capsys):
    db = _synthetic_db(tmp_path)
    with open_store(db) as store:
        stored = {r["family"] + str(r["config"]["batch"]): r for r in store.runs()}
    # the flag survives in the store, and the utilization is kept as measured (not clipped)
    assert stored["rnn256"]["ceiling_beaten"] is True
    assert stored["rnn256"]["utilization_measured"] == pytest.approx(299.4 / 216)
    assert stored["fc64"]["ceiling_beaten"] is False

    # `results`: the mark beside the figure, the legend under the table with the advice
    code, out, err = run_cli(capsys, "results", "--db", db)
    assert code == 0, err
    assert "138.6% †" in out and "50.0%" in out and "50.0% †" not in out
    assert "† above 100% of the measured ceiling" in " ".join(out.split())
    assert "paradnn calibrate --force" in " ".join(out.split())  # wrapped at the table's width
    code, out, _ = run_cli(capsys, "results", "--db", db, "-f", "json")
    by = {r["family"]: r for r in export_rows(out)}
    assert by["rnn"]["ceiling_beaten"] is True

    # `results --table ceilings`: the path and shape that set it, and that runs beat it
    code, out, err = run_cli(capsys, "results", "--db", db, "--table", "ceilings")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "matmul" in flat and "4096×4096×4096" in flat
    assert "ceiling beaten: 1 ok run on AMD EPYC fp32" in flat
    assert "run 1 (rnn), at 299.4 GFLOP/s = 1.39× it" in flat
    assert "paradnn calibrate --force" in flat
    (b,) = api.beaten_ceilings(db)
    assert (b["runs"], b["fastest_id"], b["path"]) == (1, 1, "matmul")
    assert b["ratio"] == pytest.approx(299.4 / 216)

    # the report's key results: the highest utilization is the best run *below* its ceiling
    from paradnn.analysis import frames
    from paradnn.report import keyresults

    data = frames.load([db])
    lines = keyresults.lines(type("W", (), {"frames": {}})(), data.ok)
    util = [k for k in lines if k.kind == "utilization"]
    assert util[0].words.startswith("Highest utilization: fc")
    assert util[0].stat.startswith("70.0% of the measured ceiling")
    assert "(1 above the measured ceiling left out)" in util[0].stat
    (beaten,) = [k for k in lines if k.tone == "beaten"]
    assert beaten.words.startswith("1 ok run above 100% of the measured ceiling")
    assert "138.6%" in beaten.stat and "paradnn calibrate --force" in beaten.stat
    assert all("138.6%" not in k.stat for k in util)


def test_the_report_marks_and_explains_a_beaten_ceiling(tmp_path):
    db = _synthetic_db(tmp_path)
    rep = api.report([db], out=str(tmp_path / "r"))
    html = rep.html.read_text()
    assert "138.6% †" in html  # the summary's max utilization, marked
    assert "† above 100% of the measured ceiling" in html  # the legend beside it
    assert "above 100% of the measured ceiling: it is beaten" in html  # the key result
    assert "Highest utilization: rnn" not in html


def test_calibrate_suggests_measuring_again_when_stored_runs_beat_it(tmp_path, capsys):
    db = _synthetic_db(tmp_path)
    # nothing to measure here (ceilings of another environment would be; the suggestion is
    # about the runs in the store)
    from paradnn.cli import ceilings as cli_ceilings

    cli_ceilings.say_beaten(db, EPYC)
    out = " ".join(capsys.readouterr().out.split())
    assert "ceiling beaten: 1 ok run" in out and "paradnn calibrate --force" in out
    cli_ceilings.say_beaten(db, "another device")
    assert capsys.readouterr().out == ""
    # a higher ceiling is no longer beaten: nothing to say
    with open_store(db) as store:
        store.insert_rows("ceilings", [_ceiling_row(310e9, "lstm", "T=10 B=512 H=256")])
    assert len(api.beaten_ceilings(db)) == 0


def test_rows_stored_before_the_flag_get_it_from_their_utilization(tmp_path):
    """A database of the schema before `ceiling_beaten`: the migration sets the flag of every
    run with a measured utilization (above 1: beaten), and leaves the others null."""
    import sqlite3

    from paradnn.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    n = next(i for i, m in enumerate(MIGRATIONS) if "ceiling_beaten" in m)  # the one before it
    conn.executescript("".join(MIGRATIONS[:n]) + f"\nPRAGMA user_version = {n};")
    for i, u in enumerate((1.386, 0.5, None)):
        conn.execute(
            "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, "
            "status, utilization_measured) VALUES (?, 'rnn', '{}', 'fp32', 'sgd', 'eager', "
            "'cpu', 'ok', ?)",
            (f"k{i}", u),
        )
    conn.commit()
    conn.close()
    with open_store(path) as store:
        flags = [r["ceiling_beaten"] for r in store.runs()]
    assert flags == [True, False, None]


def test_flag_rules():
    assert utilization.beaten(1.0) is False and utilization.beaten(1.0001) is True
    assert utilization.beaten(None) is None and utilization.beaten(float("nan")) is None
    assert utilization.flagged({"utilization_measured": 1.2})  # a row from before the flag
    assert not utilization.flagged({"utilization_measured": 1.2, "ceiling_beaten": False})
    assert utilization.flagged({"ceiling_beaten": True})
    assert not utilization.flagged({})
    row = {"achieved_flops": 3e11, "device_name": "x", "precision": "fp32", "status": "ok"}
    assert json.dumps(utilization.BEATEN_LEGEND)  # plain text, one line
    assert "\n" not in utilization.BEATEN_LEGEND and row


def test_gpu_planning_and_memory_limit_with_fakes(monkeypatch):
    """The CUDA side without a GPU: a unit times cuBLAS (matmul), cuBLASLt (linear with a bias)
    and cuDNN (LSTM) paths over a growing ladder, and its tensors may take 80 % of free memory."""
    import torch

    env = {**ENV, "device": "cuda:0", "device_type": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3"}
    (unit,), _ = T.ceiling_units(env, ["bf16"], kinds=("matmul",))
    assert unit.params["paths"] == ["matmul", "linear", "lstm"]
    assert [mathpaths.PATHS[p].library("cuda") for p in unit.params["paths"]] == [
        "cuBLAS",
        "cuBLASLt (bias epilogue)",
        "cuDNN RNN",
    ]
    assert mathpaths.PATHS["linear"].first("cuda") == mathpaths.START["cuda"]
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 * 2**30, 80 * 2**30))
    assert cal.memory_limit(torch.device("cuda", 0)) == pytest.approx(8 * 2**30)
    # 65536² bf16 operands (3 × 8 GiB) would not fit in 8 GiB: the ladder stops before them
    assert mathpaths.PATHS["matmul"].nbytes(mathpaths.PATHS["matmul"].shape(65536), 2) > 8 * 2**30

    def broken(device=None):
        raise RuntimeError("no driver")

    monkeypatch.setattr(torch.cuda, "mem_get_info", broken)
    assert cal.memory_limit(torch.device("cuda", 0)) is None  # unknown: the budget still bounds


def _op_row(achieved, **kw):
    return {
        "op": "matmul", "name": "matmul-2048", "shape": {"m": 2048}, "precision": "fp32",
        "pass": "fwd", "threads": 2, "device": "cpu", "device_name": EPYC, "fingerprint": "f",
        "status": "ok", "flops": int(achieved), "time_s": 1.0, "achieved_flops": achieved,
        "utilization_measured": None,
        "nulls": {"utilization_measured": "no measured ceiling", "utilization_datasheet": "x"},
        "measured_at": "2026-11-27T00:00:00", **kw,
    }  # fmt: skip


def test_a_ceiling_measured_again_restates_every_stored_run_against_it(tmp_path, capsys):
    """`paradnn calibrate --force` is the advice for a beaten ceiling: the higher ceiling it
    stores puts the runs measured before it against the new best (the † goes), fills the
    utilization of runs and ops stored with none, and says what it changed; a second pass
    changes nothing."""
    db = _synthetic_db(tmp_path)
    with open_store(db) as store:
        store.insert_rows("ops", [_op_row(150e9)])
        # the runs are against 216 GFLOP/s already; the op stored with none gets it
        (r,) = utilization.restate(store)
        assert (r.ceiling, r.runs, r.ops, r.beaten) == (216e9, 0, 1, 1)
        assert r.words().endswith("216 GFLOP/s; 1 still above it")
        store.insert_rows("ceilings", [_ceiling_row(310e9, "lstm", "T=10 B=512 H=256")])
        (r,) = utilization.restate(store)
        assert (r.device_name, r.precision, r.ceiling) == (EPYC, "fp32", 310e9)
        assert (r.runs, r.ops, r.beaten) == (3, 1, 0)
        assert r.words() == (
            "utilization of 3 stored runs and 1 op row on AMD EPYC fp32 restated against the "
            "best measured ceiling, 310 GFLOP/s"
        )
        assert utilization.restate(store) == []
        stored = {r["family"] + str(r["config"]["batch"]): r for r in store.runs()}
        (op,) = store.rows("ops")
    assert stored["rnn256"]["utilization_measured"] == pytest.approx(299.4 / 310)
    assert stored["rnn256"]["ceiling_beaten"] is False
    assert stored["fc64"]["utilization_measured"] == pytest.approx(108 / 310)
    assert op["utilization_measured"] == pytest.approx(150 / 310)
    assert op["nulls"] == {"utilization_datasheet": "x"}  # the stale reason went, not the other
    assert len(api.beaten_ceilings(db)) == 0
    code, out, err = run_cli(capsys, "results", "--db", db)
    assert code == 0, err
    assert "†" not in out


def test_calibrate_restates_the_stored_runs_and_says_so(tmp_path, monkeypatch):
    """The library's calibrate restates after measuring (a lower ceiling than a run's rate
    sets the flag, too), and its progress hears one line per device and precision."""
    db = _synthetic_db(tmp_path)
    with open_store(db) as store:  # a run stored before any ceiling of bf16: no utilization
        bf16 = _run(store, "fc", {**FC, "batch": 32}, 80e9)
        store.conn.execute("UPDATE runs SET precision = 'bf16' WHERE id = ?", (4,))
        store.conn.commit()
    assert bf16.utilization_measured is not None  # measured against fp32's when stored

    def fake(store, *a, **kw):
        rows = [_ceiling_row(100e9) | {"precision": "bf16"}, _ceiling_row(200e9)]
        store.insert_rows("ceilings", rows)
        return rows

    monkeypatch.setattr(kernels, "calibrate", fake)
    heard: list[str] = []
    api.calibrate("cpu", db=db, progress=heard.append)
    assert heard == [
        "utilization of 1 stored run on AMD EPYC bf16 restated against the best measured "
        "ceiling, 100 GFLOP/s",
    ]  # fp32's best is still 216 GFLOP/s: nothing changed there
    with open_store(db) as store:
        (row,) = [r for r in store.runs() if r["precision"] == "bf16"]
    assert row["utilization_measured"] == pytest.approx(0.8) and row["ceiling_beaten"] is False
    # a ceiling measured lower than a stored run's rate is beaten by it: the flag is set
    with open_store(db) as store:
        store.conn.execute("DELETE FROM ceilings WHERE precision = 'bf16'")
        store.conn.commit()
        store.insert_rows("ceilings", [_ceiling_row(50e9) | {"precision": "bf16"}])
        (r,) = utilization.restate(store)
        assert (r.runs, r.beaten) == (1, 1) and r.words().endswith("; 1 still above it")
        assert [x["ceiling_beaten"] for x in store.runs() if x["precision"] == "bf16"] == [True]


def test_restate_reads_only_numeric_ceilings(tmp_path):
    """A ceilings row whose value is text (a damaged or hand-edited database) is no ceiling:
    restating and listing beaten ceilings skip it instead of failing."""
    db = _synthetic_db(tmp_path)
    with open_store(db) as store:
        store.conn.execute(
            "INSERT INTO ceilings (device, device_name, fingerprint, kind, precision, value, "
            "unit, status, measured_at) VALUES ('cpu', ?, 'f', 'matmul', 'fp32', 'fast', "
            "'FLOP/s', 'ok', 'x')",
            (EPYC,),
        )
        store.conn.commit()
        assert utilization.restate(store) == []
        assert [b.ceiling for b in utilization.beaten_ceilings(store)] == [216e9]
        assert utilization.measured_ceiling(store, EPYC, "fp32") == 216e9  # what a run gets
