import sqlite3

import pytest

from paradnn.errors import StoreError
from paradnn.records import RunRecord
from paradnn.store import open_store
from paradnn.store.db import schema_version
from paradnn.store.schema import LATEST


def _record(**kw):
    base = dict(
        run_key="k1",
        family="fc",
        config={"layers": 4, "batch": 8},
        precision="fp32",
        optimizer="rmsprop",
        device="cpu",
        status="ok",
        step_time_s=0.5,
        samples=[0.5, 0.49, 0.51],
        env={"torch": "2.13.0", "cpu_model": "Test CPU"},
        nulls={"peak_mem_bytes": "not measured"},
        converged=True,
    )
    return RunRecord.flat(**{**base, **kw})


def test_roundtrip_keeps_json_and_env_columns(store):
    rid = store.insert(_record())
    (row,) = store.runs()
    assert row["id"] == rid
    assert row["config"] == {"layers": 4, "batch": 8}
    assert list(row["config"]) == ["layers", "batch"]  # field order is kept for display
    assert row["samples"] == [0.5, 0.49, 0.51]
    assert row["torch_version"] == "2.13.0" and row["cpu_model"] == "Test CPU"
    assert row["nulls"] == {"peak_mem_bytes": "not measured"}
    assert row["converged"] is True
    assert row["peak_mem_bytes"] is None


def test_filters(store):
    store.insert(_record(run_key="a", status="ok"))
    store.insert(_record(run_key="b", status="oom", family="cnn", step_time_s=None))
    store.insert(_record(run_key="c", status="crashed", sweep="quick"))
    assert [r["run_key"] for r in store.runs(status=["oom", "crashed"])] == ["b", "c"]
    assert [r["run_key"] for r in store.runs(family="cnn")] == ["b"]
    assert [r["run_key"] for r in store.runs(sweep="quick")] == ["c"]
    assert len(store.runs(limit=2)) == 2
    assert store.count() == 3
    assert list(store.frame()["run_key"]) == ["a", "b", "c"]


def test_a_frame_keeps_run_columns_a_config_key_would_shadow(store):
    # a transformer-like config with its own `threads` and `mode`: the run's columns win, the
    # config's values go to cfg_ columns, the rest of the config gets plain columns
    store.insert(_record(config={"threads": 8, "mode": "x", "batch": 8}, threads=2))
    (row,) = store.frame().to_dict("records")
    assert (row["threads"], row["cfg_threads"]) == (2, 8)
    assert row["cfg_mode"] == "x" and row["mode"] != "x"
    assert row["batch"] == 8 and "cfg_batch" not in row


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status = 'exploded'"):
        _record(status="exploded")


def test_schema_check_constraint_guards_status(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute(
            "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, status)"
            " VALUES ('x','fc','{}','fp32','sgd','eager','cpu','weird')"
        )


def test_file_store_is_versioned_and_in_wal_mode(tmp_path):
    path = tmp_path / "r.db"
    with open_store(path) as s:
        s.insert(_record())
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert schema_version(s.conn) == LATEST
    with open_store(path) as s:  # reopening does not re-run migrations
        assert s.count() == 1


def test_newer_schema_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    with pytest.raises(StoreError, match="written by a newer paradnn"):
        open_store(path)


def test_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(StoreError, match="not a paradnn database"):
        open_store(path)


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open as a SQLite database"):
        open_store(path)


def test_readonly_open_of_missing_file(tmp_path):
    with pytest.raises(StoreError, match="no such database"):
        open_store(tmp_path / "missing.db", readonly=True)


def test_migrations_apply_in_order(tmp_path, monkeypatch):
    from paradnn.store import db, schema

    path = tmp_path / "m.db"
    with open_store(path) as s:
        s.insert(_record())
    extra = "ALTER TABLE runs ADD COLUMN future_metric REAL;"
    monkeypatch.setattr(db, "MIGRATIONS", [*schema.MIGRATIONS, extra])
    monkeypatch.setattr(db, "LATEST", LATEST + 1)
    conn = sqlite3.connect(path)
    db.migrate(conn, str(path))
    assert schema_version(conn) == LATEST + 1
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    assert "future_metric" in cols
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # rows survive


def test_failed_migration_rolls_back(tmp_path, monkeypatch):
    from paradnn.store import db, schema

    path = tmp_path / "bad.db"
    open_store(path).close()
    monkeypatch.setattr(db, "MIGRATIONS", [*schema.MIGRATIONS, "ALTER TABLE nope ADD x;"])
    monkeypatch.setattr(db, "LATEST", LATEST + 1)
    conn = sqlite3.connect(path)
    with pytest.raises(StoreError, match=f"migration to schema v{LATEST + 1} failed"):
        db.migrate(conn, str(path))
    assert schema_version(conn) == LATEST


def test_attempts_number_the_rows_of_a_run_key(store):
    a, b, c = _record(status="oom"), _record(status="ok"), _record(run_key="other")
    a, b, c = (store.insert_record(rec) for rec in (a, b, c))  # records are immutable
    assert (a.attempt, b.attempt, c.attempt) == (1, 2, 1)
    assert store.latest_status() == {"k1": "ok", "other": "ok"}
    with pytest.raises(sqlite3.IntegrityError):  # the database itself refuses duplicates
        store.conn.execute(
            "INSERT INTO runs (run_key, attempt, family, config, precision, optimizer, mode,"
            " device, status) VALUES ('k1', 2, 'fc', '{}', 'fp32', 'sgd', 'eager', 'cpu', 'ok')"
        )


def test_v1_database_is_migrated_and_its_repeats_numbered(tmp_path):
    from paradnn.store.schema import MIGRATIONS

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0] + "\nPRAGMA user_version = 1;")
    for key in ("a", "b", "a"):
        conn.execute(
            "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, status)"
            f" VALUES ('{key}', 'fc', '{{}}', 'fp32', 'rmsprop', 'eager', 'cpu', 'ok')"
        )
    conn.commit()
    conn.close()
    with open_store(path) as s:
        assert schema_version(s.conn) == LATEST
        assert [(r["run_key"], r["attempt"]) for r in s.runs()] == [("a", 1), ("b", 1), ("a", 2)]
        assert s.runs()[0]["predicted_mem_bytes"] is None


def test_side_tables_roundtrip(store):
    (cid,) = store.insert_rows("ceilings", [{
        "device": "cpu", "device_name": "Test CPU", "fingerprint": "f", "kind": "matmul",
        "precision": "fp32", "value": 1.5e11, "unit": "FLOP/s", "detail": {"n": [1024, 2048]},
        "measured_at": "2026-01-01T00:00:00",
    }])  # fmt: skip
    (row,) = store.rows("ceilings", {"kind": "matmul"})
    assert row["id"] == cid and row["detail"] == {"n": [1024, 2048]} and row["value"] == 1.5e11
    with pytest.raises(ValueError, match="table = 'runs'"):
        store.rows("runs")
    with pytest.raises(sqlite3.IntegrityError):  # CHECK constraint on kind
        store.insert_rows("ceilings", [{**row, "id": None, "kind": "flops"}])
    assert len(store.rows("ceilings")) == 1  # the failed transaction left nothing behind


def test_task_status_is_the_newest_row_of_each_task_key(store):
    """What a re-run of calibrate/ops skips: the newest row per task key, per table."""
    base = {"device": "cpu", "device_name": "CPU", "fingerprint": "f", "unit": "FLOP/s",
            "measured_at": "2026-01-01T00:00", "kind": "matmul", "precision": "fp32"}  # fmt: skip
    store.insert_rows("ceilings", [
        {**base, "value": None, "status": "crashed", "task_key": "a"},
        {**base, "value": 1.0, "status": "ok", "task_key": "a"},
        {**base, "value": 2.0, "status": "ok", "task_key": "b"},
        {**base, "value": 3.0, "status": "ok", "task_key": None},  # calibrated before v6
    ])  # fmt: skip
    assert store.task_status("ceilings") == {"a": "ok", "b": "ok"}
    assert store.task_status("ops") == {}
    with pytest.raises(ValueError, match="ceilings, ops or host_profile"):
        store.task_status("runs")
