"""The result database's reading and writing (store/db.py), pinned function by function in
process: what a stored row decodes to and every reason a row is left out, the words of each
refusal, the read-only paths (a WAL copy without its -shm), the schema's migration and the
baselines. The end-to-end behaviour is in test_store.py, test_hostile_db.py and their kin."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest

from paradnn.errors import StoreError
from paradnn.records import RunRecord
from paradnn.store import db, open_store


def _record(**kw) -> RunRecord:
    base = dict(
        run_key="k1",
        family="fc",
        config={"layers": 1, "nodes": 8},
        precision="fp32",
        optimizer="rmsprop",
        device="cpu",
        status="ok",
        env={"torch": "2.13.0"},
    )
    return RunRecord.flat(**{**base, **kw})


def _bad(row: dict, table: str = "runs", numeric=frozenset()) -> tuple[str, str]:
    with pytest.raises(db._BadRow) as e:
        db._decode(row, table, frozenset(numeric))
    assert e.value.args == (e.value.column, e.value.problem)
    return e.value.column, e.value.problem


# -- _text, _short --------------------------------------------------------------------------
def test_text_reads_utf8_and_marks_what_is_not():
    good = db._text("naïve".encode())
    assert good == "naïve" and type(good) is str
    bad = db._text(b"a\xffb")
    assert isinstance(bad, db.Undecodable) and bad == "a\ufffdb"
    assert type(db._text(b"")) is str


def test_short_keeps_forty_characters_and_cuts_longer_ones():
    assert db._short("x" * 38) == repr("x" * 38)  # 40 with the quotes: kept whole
    assert db._short("x" * 39) == "'" + "x" * 38 + "…"  # 41: cut to 39 and an ellipsis
    assert len(db._short("x" * 39)) == 40
    assert db._short(12) == "12" and db._short(None) == "None"
    assert db._short("abcdef", 5) == "'abc…"
    assert db._short("abc", 5) == "'abc'"


# -- _decode --------------------------------------------------------------------------------
RUN = {"id": 3, "run_key": "k", "config": '{"layers": 2}', "samples": "[0.5, 1]", "step": 1}


def test_a_run_decodes_its_json_and_its_booleans():
    row = {
        **RUN,
        "converged": 1,
        "emulated": 0,
        "input_bound": None,
        "env": '{"a": [1]}',
        "quality_reasons": '["noisy"]',
        "nulls": None,
        "pin_memory": 2,
    }
    d = db._decode(row, "runs", frozenset({"step", "id"}))
    assert d == {
        **row,
        "config": {"layers": 2},
        "samples": [0.5, 1],
        "env": {"a": [1]},
        "quality_reasons": ["noisy"],
        "converged": True,
        "emulated": False,
        "pin_memory": True,
    }
    assert d["converged"] is True and d["emulated"] is False and d["input_bound"] is None
    assert row["config"] == '{"layers": 2}'  # the row itself is left as it was


def test_every_json_column_of_a_run_is_decoded_and_every_bool_column_converted():
    row = {col: "{}" for col in db.JSON_COLUMNS}
    for col in ("samples", "quality_reasons", "graph_break_reasons"):
        row[col] = "[]"
    row.update(dict.fromkeys(db.BOOL_COLUMNS, 5))
    d = db._decode(row, "runs", frozenset())
    assert all(d[c] in ({}, []) for c in db.JSON_COLUMNS)
    assert all(d[c] is True for c in db.BOOL_COLUMNS)
    assert "pin_memory" in db.BOOL_COLUMNS and "ceiling_beaten" in db.BOOL_COLUMNS


@pytest.mark.parametrize(
    ("col", "value", "problem"),
    [
        ("config", "[1]", "'[1]' is not an object"),
        ("env", "[]", "'[]' is not an object"),
        ("load", "3", "'3' is not an object"),
        ("xla_detail", '"x"', "'\"x\"' is not an object"),
        ("samples", "{}", "'{}' is not a list"),
        ("quality_reasons", '"noisy"', "'\"noisy\"' is not a list"),
        ("graph_break_reasons", "{}", "'{}' is not a list"),
        (
            "config",
            "{bad",
            "'{bad' is not valid JSON (Expecting property name enclosed in "
            "double quotes: line 1 column 2 (char 1))",
        ),
        (
            "flags",
            5,
            "5 is not valid JSON (the JSON object must be str, bytes or bytearray, not int)",
        ),
    ],
)
def test_a_run_column_of_the_wrong_shape_is_named(col, value, problem):
    assert _bad({**RUN, col: value}) == (col, problem)


def test_a_run_without_a_config_is_named():
    assert _bad({"id": 1, "samples": "[]"}) == ("config", "is missing")
    assert _bad({"id": 1, "config": None}) == ("config", "is missing")
    assert db._decode({"config": "{}"}, "runs", frozenset()) == {"config": {}}


@pytest.mark.parametrize("samples", ['[1, "2"]', "[true]", "[null]", "[[1]]", '["x"]'])
def test_samples_that_are_not_numbers_are_named(samples):
    problem = "holds something that is not a number"
    assert _bad({**RUN, "samples": samples}) == ("samples", problem)


@pytest.mark.parametrize("samples", ["[]", "[1]", "[1.5, 2, 0.25]", None])
def test_samples_of_numbers_are_kept(samples):
    d = db._decode({**RUN, "samples": samples}, "runs", frozenset())
    assert d["samples"] == (None if samples is None else json.loads(samples))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("fast", "'fast' is not a number"),
        (True, "True is not a number"),
        (b"1", "b'1' is not a number"),
        ("1" * 50, "'" + "1" * 38 + "… is not a number"),
    ],
)
def test_a_number_column_holding_something_else_is_named(value, problem):
    assert _bad({**RUN, "step": value}, numeric={"step", "id"}) == ("step", problem)


@pytest.mark.parametrize("value", [0, -1, 2.5, float("nan"), None])
def test_a_number_column_holding_a_number_or_null_is_kept(value):
    d = db._decode({**RUN, "step": value}, "runs", frozenset({"step", "gone"}))
    assert d["step"] is value


def test_a_value_that_is_not_utf8_is_named_before_anything_else():
    row = {"id": 1, "run_key": db.Undecodable("k\ufffd"), "step": "x", "config": "{bad"}
    assert _bad(row, numeric={"step"}) == ("run_key", "'k\ufffd' is not valid UTF-8 text")
    long = db.Undecodable("\ufffd" * 60)
    assert _bad({"a": "ok", "b": long})[1] == f"{db._short(str(long))} is not valid UTF-8 text"
    assert _bad({"a": "ok", "b": long}, table="ops")[0] == "b"


def test_the_first_bad_number_column_is_checked_before_json():
    column, _ = _bad({**RUN, "config": "{bad", "step": "x"}, numeric={"step"})
    assert column == "step"


def test_a_side_row_decodes_its_json_text_only():
    row = {
        "id": 1,
        "detail": '{"n": [1]}',
        "env": "[1]",
        "shape": 7,
        "samples": None,
        "nulls": '"x"',
        "shapes": "[[2, 3]]",
        "quality_reasons": "[]",
        "config": "{}",
        "converged": 1,
    }
    d = db._decode(row, "ops", frozenset())
    assert d == {
        "id": 1,
        "detail": {"n": [1]},
        "env": [1],
        "shape": 7,
        "samples": None,
        "nulls": "x",
        "shapes": [[2, 3]],
        "quality_reasons": [],
        "config": "{}",
        "converged": 1,
    }


def test_a_side_row_with_broken_json_is_named():
    column, problem = _bad({"id": 1, "detail": "{", "env": "{"}, table="ceilings")
    assert column == "detail"
    assert problem.startswith("'{' is not valid JSON (Expecting property name")
    assert _bad({"samples": "[1, 'x']"}, table="ops")[0] == "samples"


def test_a_side_row_keeps_samples_that_are_not_numbers():
    d = db._decode({"samples": '["a"]'}, "ops", frozenset())
    assert d == {"samples": ["a"]}


# -- reading: _read, _skip, _numeric_columns, rows, runs -------------------------------------
@pytest.fixture
def store():
    s = open_store(":memory:")
    yield s
    s.close()


def test_a_bad_row_is_left_out_named_once_and_logged(store, caplog):
    for key in ("a", "b", "c"):
        store.insert(_record(run_key=key))
    store.conn.execute("UPDATE runs SET config = '[1]' WHERE run_key = 'b'")
    store.conn.execute("UPDATE runs SET step_time_s = 'slow' WHERE run_key = 'c'")
    with caplog.at_level(logging.WARNING, logger="paradnn.store.db"):
        assert [r["run_key"] for r in store.runs()] == ["a"]
        assert [r["run_key"] for r in store.runs()] == ["a"]  # read again: named once
    assert store.skipped == [
        {"table": "runs", "id": 2, "column": "config", "problem": "'[1]' is not an object"},
        {"table": "runs", "id": 3, "column": "step_time_s", "problem": "'slow' is not a number"},
    ]
    assert [r.getMessage() for r in caplog.records] == [
        ":memory:: skipped run 2: its config '[1]' is not an object",
        ":memory:: skipped run 3: its step_time_s 'slow' is not a number",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_a_bad_side_row_is_named_with_its_table(store, caplog):
    store.insert_rows("ceilings", [_ceiling(1.0), _ceiling(2.0)])
    store.conn.execute("UPDATE ceilings SET detail = '{' WHERE id = 1")
    with caplog.at_level(logging.WARNING, logger="paradnn.store.db"):
        assert [r["value"] for r in store.rows("ceilings")] == [2.0]
    ((msg),) = [r.getMessage() for r in caplog.records]
    assert msg.startswith(":memory:: skipped ceilings row 1: its detail '{' is not valid JSON (")
    assert store.skipped[0]["table"] == "ceilings" and store.skipped[0]["id"] == 1


def test_skip_names_a_row_without_an_id(store, caplog):
    with caplog.at_level(logging.WARNING, logger="paradnn.store.db"):
        store._skip("ops", {"op": "x"}, "shape", "is odd")
        store._skip("ops", {"op": "y"}, "shape", "is odd")  # the same entry: once
        store._skip("ops", {"id": 4}, "shape", "is odd")
        store._skip("host_profile", {"id": 4}, "shape", "is odd")
        store._skip("ops", {"id": 4}, "env", "is odd")
        store._skip("ops", {"id": 4}, "env", "is odder")
    assert store.skipped == [
        {"table": "ops", "id": None, "column": "shape", "problem": "is odd"},
        {"table": "ops", "id": 4, "column": "shape", "problem": "is odd"},
        {"table": "host_profile", "id": 4, "column": "shape", "problem": "is odd"},
        {"table": "ops", "id": 4, "column": "env", "problem": "is odd"},
        {"table": "ops", "id": 4, "column": "env", "problem": "is odder"},
    ]
    assert [r.getMessage() for r in caplog.records] == [
        ":memory:: skipped ops row None: its shape is odd",
        ":memory:: skipped ops row 4: its shape is odd",
        ":memory:: skipped host_profile row 4: its shape is odd",
        ":memory:: skipped ops row 4: its env is odd",
        ":memory:: skipped ops row 4: its env is odder",
    ]


def test_a_read_that_sqlite_refuses_names_the_table(store):
    with pytest.raises(StoreError) as e:
        store._read("ops", "SELECT * FROM nope", [])
    assert str(e.value) == ":memory:: cannot read table ops: no such table: nope"
    assert isinstance(e.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(StoreError, match=r"^:memory:: cannot read table runs: "):
        store._read("runs", "SELECT * FROM runs WHERE id = ?", [])  # too few arguments


def test_read_passes_its_arguments_and_decodes(store):
    for key in ("a", "b"):
        store.insert(_record(run_key=key))
    rows = store._read("runs", "SELECT * FROM runs WHERE run_key = ?", ("b",))
    assert [(r["run_key"], r["config"]) for r in rows] == [("b", {"layers": 1, "nodes": 8})]


def test_the_number_columns_of_a_table(store):
    store.conn.execute("CREATE TABLE t (a integer, b REAL, c TEXT, d, e Integer, f INT)")
    assert store._numeric_columns("t") == frozenset({"a", "b", "e"})
    store.conn.execute("ALTER TABLE t ADD COLUMN g REAL")
    assert store._numeric_columns("t") == frozenset({"a", "b", "e"})  # read once per store
    assert store._numeric_columns("nope") == frozenset()
    ops = store._numeric_columns("ops")
    assert {"threads", "flops", "time_s", "ci_low_s", "id"} <= ops
    assert not ops & {"op", "name", "shape", "samples", "precision"}


def test_columns_in_schema_order(store):
    store.conn.execute("CREATE TABLE t (b, a, c)")
    assert store.columns("t") == ["b", "a", "c"]
    assert store.columns("nope") == []
    assert store.columns("runs")[:3] == ["id", "run_key", "sweep"]


def _ceiling(value, **kw) -> dict:
    return {
        "device": "cpu",
        "device_name": "CPU",
        "fingerprint": "f",
        "kind": "matmul",
        "precision": "fp32",
        "value": value,
        "unit": "FLOP/s",
        "measured_at": "2026-01-01T00:00",
        **kw,
    }


def test_rows_filters_by_every_column_given_oldest_first(store):
    store.insert_rows(
        "ceilings",
        [
            _ceiling(1.0, kind="copy", unit="B/s"),
            _ceiling(2.0),
            _ceiling(3.0, precision="bf16"),
            _ceiling(4.0),
        ],
    )
    values = lambda where=None: [r["value"] for r in store.rows("ceilings", where)]  # noqa: E731
    assert values() == [1.0, 2.0, 3.0, 4.0]
    assert values({}) == [1.0, 2.0, 3.0, 4.0]
    assert values({"kind": "matmul"}) == [2.0, 3.0, 4.0]
    assert values({"kind": "matmul", "precision": "fp32"}) == [2.0, 4.0]
    assert values({"kind": "copy", "precision": "bf16"}) == []
    for table in ("runs", "claims", "baselines", "nope"):
        with pytest.raises(ValueError) as e:
            store.rows(table)
        assert str(e.value) == (
            f"table = {table!r}: must be ceilings, ops, op_profile, host_profile"
        )


def test_runs_filters_combine_and_limit(store):
    recs = [
        ("a", "fc", "s1", "ok", "good"),
        ("b", "cnn", "s1", "oom", None),
        ("c", "fc", "s2", "ok", "noisy"),
        ("d", "fc", "s1", "crashed", None),
        ("e", "fc", "s1", "ok", "good"),
    ]
    for key, fam, sweep, status, quality in recs:
        store.insert(_record(run_key=key, family=fam, sweep=sweep, status=status, quality=quality))
    keys = lambda **f: [r["run_key"] for r in store.runs(**f)]  # noqa: E731
    assert keys() == ["a", "b", "c", "d", "e"]
    assert keys(family="fc") == ["a", "c", "d", "e"]
    assert keys(sweep="s1") == ["a", "b", "d", "e"]
    assert keys(run_key="d") == ["d"]
    assert keys(quality="good") == ["a", "e"]
    assert keys(status="ok") == ["a", "c", "e"]
    assert keys(status=("oom", "crashed")) == ["b", "d"]
    assert keys(status=[]) == []
    assert keys(family="fc", sweep="s1", status=["ok", "crashed"]) == ["a", "d", "e"]
    assert keys(family="fc", sweep="s1", quality="good", run_key="e") == ["e"]
    assert keys(limit=2) == ["a", "b"]
    assert keys(family="fc", limit=1) == ["a"]
    assert keys(limit=0) == []
    assert keys(limit=2.9) == ["a", "b"]


def test_an_unopened_lazy_store_reads_nothing(tmp_path):
    path = tmp_path / "later.db"
    s = open_store(path, lazy=True)
    assert not s.exists()
    assert s.runs() == [] and s.rows("ops") == []
    assert s.latest_status() == {} and s.task_status("ops") == {}
    assert s.measured_with() == {} and s.latest_attempts() == {}
    assert s.sweep_threads("s", "h") is None
    assert s.baselines() == [] and s.baseline_ids("x") == []
    assert not path.exists()  # reading made nothing
    s.insert(_record())
    assert path.exists() and s.exists() and s.count() == 1
    s.close()
    assert s.exists()  # the file is there now
    with pytest.raises(StoreError) as e:
        s.conn  # noqa: B018
    assert str(e.value) == f"{path}: the database is closed"
    s.close()  # closing twice is fine


def test_a_lazy_store_reads_a_file_another_process_made(tmp_path):
    path = tmp_path / "later.db"
    s = open_store(path, lazy=True)
    with open_store(path) as other:
        other.insert(_record(run_key="theirs"))
    assert s.exists() and [r["run_key"] for r in s.runs()] == ["theirs"]
    s.close()


def test_a_store_opened_with_a_connection_reads_bad_text(store):
    store.insert(_record())
    store.conn.execute("UPDATE runs SET family = CAST(X'66FF' AS TEXT)")
    assert store.runs() == []
    assert store.skipped[0]["column"] == "family"
    raw = sqlite3.connect(":memory:")
    assert db.Store(raw, "x").conn.text_factory is db._text
    assert db.Store(None, "y").skipped == [] and db.Store(None, "y").path == "y"
