"""calibrate and ops run in isolated workers: a crash or hang is a stored row; a re-run resumes."""

from __future__ import annotations

import pytest

from paradnn.runner import kernels
from paradnn.runner import tasks as T
from paradnn.store import open_store

KiB = 1024
ENV = {
    "device": "cpu",
    "device_type": "cpu",
    "fingerprint": "f" * 16,
    "cpu_model": "Test CPU",
    "threads": 1,
    "native_precisions": ["fp32"],
    "precision_reasons": {"tf32": "no tensor cores", "bf16": "no avx512_bf16", "fp16": "no"},
}


def test_planning_is_torch_free_and_follows_the_device():
    tasks, skipped = T.ceiling_units(ENV, None, budget_s=5)
    assert [t.label for t in tasks] == ["matmul fp32", "copy", "triad"]
    assert skipped == {}
    tasks, skipped = T.ceiling_units(ENV, ["fp32", "bf16", "tf32"], kinds=("matmul",))
    assert [t.label for t in tasks] == ["matmul fp32"]
    assert skipped == {"bf16": "no avx512_bf16", "tf32": "no tensor cores"}
    tasks, _ = T.ceiling_units(ENV, ["bf16", "tf32"], kinds=("matmul",), allow_emulated=True)
    assert [(t.label, t.params["emulated"]) for t in tasks] == [("matmul bf16", True)]
    keys = {t.key for t in T.ceiling_units(ENV, None)[0]}
    other = {t.key for t in T.ceiling_units({**ENV, "fingerprint": "g" * 16}, None)[0]}
    assert len(keys) == 3 and not keys & other  # another environment: other units
    ops = T.op_units(ENV, ["fp32"], names=["matmul-2048"], threads=[1, 2], scale=0.01)
    assert [t.label for t in ops] == [
        "matmul-2048@0.01 fp32 fwd 1 threads",
        "matmul-2048@0.01 fp32 fwd+bwd 1 threads",
        "matmul-2048@0.01 fp32 fwd 2 threads",
        "matmul-2048@0.01 fp32 fwd+bwd 2 threads",
    ]
    assert all(t.failure["status"] == "crashed" and t.table == "ops" for t in ops)


def _calibrate(store, **kw):
    events = []
    rows = kernels.calibrate(
        store,
        "cpu",
        ["fp32"],
        threads=1,
        sizes=(16, 32),
        stream_bytes=64 * KiB,
        kinds=("matmul", "copy"),
        budget_s=5,
        on_event=events.append,
        paths=("matmul",),  # one path: the size ladder below is the point here
        **kw,
    )
    return rows, events


def test_calibrate_in_workers_resumes_and_records_a_crash(tmp_path, monkeypatch):
    store = open_store(tmp_path / "c.db")
    # the fp32 matmul unit's worker dies with SIGSEGV: a crashed row; copy still measured
    monkeypatch.setenv(T.FAULT_ENV, "matmul fp32=SIGSEGV")
    rows, events = _calibrate(store)
    by = {r["kind"]: r for r in rows}
    assert by["matmul"]["status"] == "crashed" and "SIGSEGV" in by["matmul"]["error"]
    assert by["matmul"]["value"] is None and by["copy"]["status"] == "ok"
    assert by["copy"]["value"] > 0 and by["copy"]["task_key"]
    stored = store.rows("ceilings")
    assert [(r["kind"], r["status"]) for r in stored] == [("matmul", "crashed"), ("copy", "ok")]
    assert events[0].kind == "start" and events[-1].kind == "end"
    # a re-run resumes: the copy is known, the crashed matmul is measured again
    monkeypatch.delenv(T.FAULT_ENV)
    rows, events = _calibrate(store)
    assert [(r["kind"], r["status"]) for r in rows] == [("matmul", "ok")]
    assert events[0].skipped == 1
    assert rows[0]["detail"]["size_reached"] == 32
    # nothing left: a third call measures nothing; --force measures again
    rows, events = _calibrate(store)
    assert rows == [] and events[0].skipped == 2
    rows, _ = _calibrate(store, force=True)
    assert sorted(r["kind"] for r in rows) == ["copy", "matmul"]
    store.close()


def test_a_hung_unit_times_out_and_the_rest_goes_on(tmp_path, monkeypatch):
    store = open_store(tmp_path / "h.db")
    monkeypatch.setenv(T.FAULT_ENV, "copy=SIGSTOP")  # the copy's worker freezes
    rows, _ = _calibrate(store, timeout_s=10)
    by = {r["kind"]: r for r in rows}
    assert by["copy"]["status"] == "timeout" and "no result within 10 s" in by["copy"]["error"]
    assert by["matmul"]["status"] == "ok"
    store.close()


def test_ops_in_workers(tmp_path):
    store = open_store(tmp_path / "o.db")
    kw = dict(names=["matmul-2048"], passes=["fwd"], scale=0.01)
    rows = kernels.ops(store, "cpu", ["fp32", "tf32"], **kw)
    by = {r["precision"]: r for r in rows}
    assert by["fp32"]["status"] == "ok" and by["fp32"]["time_s"] > 0
    assert by["tf32"]["status"] == "unsupported" and "tensor-core" in by["tf32"]["error"]
    assert by["fp32"]["utilization_measured"] is None  # no ceilings yet: null with a reason
    assert "utilization_measured" in by["fp32"]["nulls"]
    assert len(store.rows("ops")) == 2
    assert kernels.ops(store, "cpu", ["fp32", "tf32"], **kw) == []  # both known: resumed
    store.close()


def test_bad_kernel_arguments_fail_before_work(tmp_path):
    from paradnn.errors import ConfigError

    with pytest.raises(ConfigError, match="kind"):
        T.ceiling_units(ENV, None, kinds=("dgemm",))
    with pytest.raises(ConfigError, match="op"):
        T.op_units(ENV, ["fp32"], names=["conv9d"])
    with pytest.raises(ConfigError, match="pass"):
        T.op_units(ENV, ["fp32"], passes=["bwd"])


def test_left_out_precisions_are_said_at_the_start(tmp_path):
    store = open_store(tmp_path / "n.db")
    events = []
    rows = kernels.calibrate(
        store, "cpu", ["fp32", "tf32"], threads=1, sizes=(16,), kinds=("matmul",), budget_s=5,
        on_event=events.append,
    )  # fmt: skip
    assert [r["precision"] for r in rows] == ["fp32"]
    assert "tensor-core" in rows[0]["detail"]["skipped"]["tf32"]
    assert any(n.startswith("tf32: skipped (") for n in events[0].notes)
    store.close()


def test_calibrate_on_this_cpu_stores_the_path_and_shape_that_won(tmp_path, capsys):
    """The real kernels in a worker, every default path, a tiny budget: the row says which path
    and shape set the ceiling (whichever wins on this CPU) and `results` shows it."""
    from paradnn.measure import mathpaths

    from conftest import run_cli

    db = str(tmp_path / "p.db")
    with open_store(db) as store:
        (row,) = kernels.calibrate(
            store, "cpu", ["fp32"], threads=1, sizes=(16, 32), kinds=("matmul",), budget_s=6
        )
    assert row["status"] == "ok" and row["value"] > 0, row.get("error")
    d = row["detail"]
    assert list(d["paths"]) == list(mathpaths.DEFAULT_PATHS["cpu"])
    assert d["path"] in mathpaths.PATHS
    won = d["paths"][d["path"]]
    assert (
        row["value"]
        == won["flop_per_s"]
        == max(p["flop_per_s"] for p in d["paths"].values() if p.get("flop_per_s"))
    )
    assert d["shape"] == mathpaths.PATHS[d["path"]].shape(d["best_size"])
    code, out, err = run_cli(capsys, "results", "--db", db, "--table", "ceilings")
    assert code == 0, err
    assert d["path"] in out and d["shape_label"] in " ".join(out.split())
