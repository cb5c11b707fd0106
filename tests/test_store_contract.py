"""The store's contract, stated where the broader tests in test_store.py left it implicit:
what each filter selects, which columns come back decoded, that a run's op profile lands
with it, and how a connection is set up. Each test here fails for a mutant that survived
`make mutation` (benchmarks/results/mutation.json, group `store`)."""

from __future__ import annotations

import sqlite3

import pytest

from paradnn.errors import StoreError
from paradnn.records import RunRecord
from paradnn.store import open_store
from paradnn.store.db import migrate, schema_version
from paradnn.store.schema import LATEST

OP = {"op": "aten::mm", "shapes": [[8, 4], [4, 2]], "dtype": "float32", "calls": 2,
      "device_time_s": 1e-4, "flops": 256, "bytes": 192, "achieved_flops": 2.56e6,
      "intensity": 1.33}  # fmt: skip


def _record(**kw):
    base = dict(
        run_key="k1", family="fc", config={"layers": 1}, precision="fp32", optimizer="rmsprop",
        device="cpu", status="ok", env={"torch": "2.13.0"},
    )  # fmt: skip
    return RunRecord.flat(**{**base, **kw})


def test_insert_returns_the_row_id_and_insert_record_the_attempt(store):
    first = store.insert(_record(run_key="a"))
    second = store.insert(_record(run_key="b"))
    again = store.insert_record(_record(run_key="b"))
    assert (first, second) == (1, 2)  # ids, not attempts (both attempts are 1)
    assert again.attempt == 2
    assert [r["id"] for r in store.runs(run_key="b")] == [2, 3]


def test_a_records_op_profile_is_stored_with_its_run_id(store):
    rid = store.insert(_record(run_key="a"))
    rid2 = store.insert(_record(run_key="b", op_profile=[OP, {**OP, "op": "aten::add"}]))
    assert rid2 == rid + 1
    rows = store.rows("op_profile")
    assert [(r["run_id"], r["op"]) for r in rows] == [(rid2, "aten::mm"), (rid2, "aten::add")]
    assert rows[0]["shapes"] == [[8, 4], [4, 2]]  # decoded from JSON
    assert store.rows("op_profile", {"op": "aten::add", "run_id": rid2})[0]["calls"] == 2
    assert store.rows("op_profile", {"op": "aten::add", "run_id": rid}) == []


def test_side_table_json_columns_come_back_decoded(store):
    store.insert_rows("ops", [{
        "op": "matmul", "name": "matmul-64", "shape": {"m": 64, "n": 64, "k": 64},
        "precision": "fp32", "pass": "fwd", "device": "cpu", "device_name": "CPU",
        "fingerprint": "f", "status": "ok", "samples": [1e-3, 2e-3],
        "nulls": {"utilization_datasheet": "no datasheet"}, "env": {"torch": "2.13.0"},
        "measured_at": "2026-01-01T00:00",
    }])  # fmt: skip
    (row,) = store.rows("ops")
    assert row["shape"] == {"m": 64, "n": 64, "k": 64}
    assert row["samples"] == [1e-3, 2e-3]
    assert row["nulls"] == {"utilization_datasheet": "no datasheet"}
    assert row["env"] == {"torch": "2.13.0"}


def test_insert_rows_refuses_other_tables_and_names_the_allowed_ones(store):
    with pytest.raises(
        ValueError, match=r"table = 'runs': must be ceilings, ops, op_profile, host_profile"
    ):
        store.insert_rows("runs", [{}])
    with pytest.raises(ValueError, match=r"table = 'runs': must be ceilings, ops or host_profile"):
        store.task_status("runs")
    assert store.task_status("ops") == {}  # an allowed table with no rows


def test_a_failed_side_insert_rolls_back_and_the_store_stays_usable(store):
    with pytest.raises(sqlite3.Error):
        store.insert_rows("op_profile", [{**OP, "run_id": 1}, {"op": None}])
    assert store.rows("op_profile") == []  # the first row went with the second
    assert not store.conn.in_transaction
    store.insert(_record())  # a later write works (no transaction left open)
    assert store.count() == 1


def test_each_run_filter_selects_by_its_own_column(store):
    store.insert(_record(run_key="a", family="fc", sweep="s1", quality="good"))
    store.insert(_record(run_key="b", family="cnn", sweep="s2", quality="noisy"))
    store.insert(_record(run_key="c", family="cnn", sweep="s1", status="oom"))
    keys = lambda **f: [r["run_key"] for r in store.runs(**f)]  # noqa: E731
    assert keys(run_key="b") == ["b"]
    assert keys(quality="noisy") == ["b"]
    assert keys(quality="good") == ["a"]
    assert keys(family="cnn", sweep="s1") == ["c"]  # filters combine with AND
    assert keys(status="oom") == ["c"]  # one status as a string
    assert keys(family="cnn", status=["ok"]) == ["b"]  # a status list after other filters
    assert keys() == ["a", "b", "c"]  # oldest first


def test_a_file_store_is_set_up_for_durability_and_waiting(tmp_path):
    path = tmp_path / "deep" / "er" / "r.db"  # parents are created
    with open_store(path) as s:
        assert s.path == str(path)
        assert s.conn.isolation_level is None  # transactions are explicit
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert s.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    assert path.exists()


def test_an_in_memory_store_opens_even_read_only():
    with open_store(":memory:", readonly=True) as s:
        assert s.path == ":memory:"
        assert schema_version(s.conn) == LATEST


def test_a_failed_migration_names_the_database(tmp_path, monkeypatch):
    from paradnn.store import db, schema

    path = tmp_path / "named.db"
    open_store(path).close()
    monkeypatch.setattr(db, "MIGRATIONS", [*schema.MIGRATIONS, "ALTER TABLE nope ADD x;"])
    monkeypatch.setattr(db, "LATEST", LATEST + 1)
    with pytest.raises(StoreError, match=f"^{path}: migration to schema v{LATEST + 1} failed"):
        open_store(path)
    conn = sqlite3.connect(path)
    with pytest.raises(StoreError, match=f"^{path}: migration"):
        migrate(conn, str(path))


def test_a_null_json_field_is_sql_null_not_the_text_null(store):
    store.insert(_record(energy=None, samples=None))
    sql = "SELECT COUNT(*) FROM runs WHERE energy IS NULL AND samples IS NULL"
    assert store.conn.execute(sql).fetchone()[0] == 1  # what a user's own SQL sees


def test_a_run_insert_that_fails_rolls_back_and_raises_the_databases_error(store):
    store.conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        store.insert(_record())
    assert not store.conn.in_transaction
    store.conn.execute("DROP TRIGGER refuse")
    assert store.insert(_record()) == 1 and store.count() == 1
