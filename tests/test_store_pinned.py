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


def test_a_side_row_keeps_its_integers():
    d = db._decode({"converged": 1, "emulated": 0, "pin_memory": 2}, "ops", frozenset())
    assert [type(d[c]) for c in ("converged", "emulated", "pin_memory")] == [int, int, int]


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


# -- a failed write in the user's words: write_failure, _page_limit, _free, _sqlite_error -----
def _err(message: str, code: int | None) -> sqlite3.OperationalError:
    e = sqlite3.OperationalError(message)
    if code is not None:
        e.sqlite_errorcode = code
    return e


class _Usage:
    free = 1234567


@pytest.fixture
def disk(monkeypatch):
    """The free space of every folder: 1,234,567 bytes; the folders asked about."""
    asked = []

    def usage(folder):
        asked.append(folder)
        return _Usage()

    monkeypatch.setattr(db.shutil, "disk_usage", usage)
    return asked


def test_free_space_in_a_folder(disk, tmp_path, monkeypatch):
    assert db._free(tmp_path) == f"1,234,567 bytes free in {tmp_path}"
    assert disk == [tmp_path]

    def gone(folder):
        raise FileNotFoundError(folder)

    monkeypatch.setattr(db.shutil, "disk_usage", gone)
    assert db._free(tmp_path) == f"free space in {tmp_path} unknown"


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (13, "r.db: the disk is full (1,234,567 bytes free in {d})"),
        (13 | 1 << 8, "r.db: the disk is full (1,234,567 bytes free in {d})"),
        (8, "r.db: the database or its folder {d} became read-only (boom)"),
        (8 | 3 << 8, "r.db: the database or its folder {d} became read-only (boom)"),
        (
            10,
            "r.db: the file system refused a write (boom): over its quota, out of space or "
            "failing (1,234,567 bytes free in {d})",
        ),
        (
            778,
            "r.db: the file system refused a write (boom): over its quota, out of space or "
            "failing (1,234,567 bytes free in {d})",
        ),
        (
            14,
            "r.db: the file system refused a write (boom): over its quota, out of space or "
            "failing (1,234,567 bytes free in {d})",
        ),
    ],
)
def test_each_write_failure_is_named_with_the_file_and_its_folder(
    disk, tmp_path, monkeypatch, code, words
):
    monkeypatch.chdir(tmp_path)  # a relative path: its folder is named in full
    assert db.write_failure("r.db", _err("boom", code)) == words.format(d=tmp_path)


@pytest.mark.parametrize("code", [None, 0, 1, 5, 6, 7, 9, 11, 12, 15, 19, 256 | 5])
def test_other_errors_are_no_write_failure(disk, code):
    assert db.write_failure("r.db", _err("boom", code)) is None
    assert disk == []


def test_a_full_database_names_its_page_limit(disk, tmp_path):
    conn = sqlite3.connect(":memory:")
    default = conn.execute("PRAGMA max_page_count").fetchone()[0]
    assert db.write_failure("r.db", _err("full", 13), conn).startswith("r.db: the disk is full (")
    assert db._page_limit(conn) is None  # SQLite's own limit: the disk is the likelier cause
    conn.execute(f"PRAGMA max_page_count = {default - 1}")
    assert db._page_limit(conn) == default - 1
    conn.execute("PRAGMA max_page_count = 50")
    assert db.write_failure("r.db", _err("full", 13), conn) == (
        "r.db: the database reached its size limit (PRAGMA max_page_count = 50)"
    )
    assert db.write_failure("r.db", _err("ro", 8), conn).endswith("became read-only (ro)")
    conn.close()
    assert db._page_limit(conn) is None  # a closed connection tells nothing
    assert db._page_limit(None) is None
    assert db.write_failure("r.db", _err("full", 13), conn).startswith("r.db: the disk is full (")


def test_page_limit_compares_with_a_fresh_connections(monkeypatch):
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA max_page_count = 50")
    fresh = []
    real = sqlite3.connect

    def connect(*args, **kw):
        fresh.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(db.sqlite3, "connect", connect)
    assert db._page_limit(conn) == 50
    assert fresh == [(":memory:",)]  # a fresh in-memory database, opened and closed


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (14, "r.db: cannot open as a SQLite database: boom"),
        (14 | 2 << 8, "r.db: cannot open as a SQLite database: boom"),
        (26, "r.db: cannot open as a SQLite database: boom"),
        (None, "r.db: cannot open as a SQLite database: boom"),
        (13, "r.db: the disk is full (1,234,567 bytes free in {d}); nothing was changed"),
        (8, "r.db: the database or its folder {d} became read-only (boom); nothing was changed"),
        (
            778,
            "r.db: the file system refused a write (boom): over its quota, out of space or "
            "failing (1,234,567 bytes free in {d}); nothing was changed",
        ),
    ],
)
def test_an_error_opening_a_database_in_the_users_words(disk, tmp_path, monkeypatch, code, words):
    monkeypatch.chdir(tmp_path)
    got = db._sqlite_error("r.db", _err("boom", code))
    assert type(got) is StoreError and str(got) == words.format(d=tmp_path)


def test_a_schema_that_is_not_utf8_is_a_damaged_database():
    e = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    assert str(db._sqlite_error("r.db", e)) == (
        "r.db: a damaged database (its schema is not UTF-8 text); use another --db"
    )


# -- read-only opens: _ro_connect, _without_shm, _warn_once ---------------------------------
def _wal_copy(tmp_path, rows: int = 40, *, empty: bool = False):
    """A WAL database as a writer left it (its results still in the -wal unless `empty`),
    copied with its -wal but without its -shm into tmp_path/ro."""
    src = tmp_path / "live.db"
    with open_store(src) as store:
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        for i in range(rows):
            store.insert(_record(run_key=f"k{i}"))
        if empty:
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        ro = tmp_path / "ro"
        ro.mkdir()
        (ro / "r.db").write_bytes(src.read_bytes())
        (ro / "r.db-wal").write_bytes((tmp_path / "live.db-wal").read_bytes())
    return ro / "r.db"


def _listing(folder) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


class _Connects:
    """sqlite3.connect, recording how it was called."""

    def __init__(self, monkeypatch):
        self.calls, real = [], sqlite3.connect

        def connect(*args, **kw):
            self.calls.append((args, kw))
            return real(*args, **kw)

        monkeypatch.setattr(db.sqlite3, "connect", connect)


@pytest.fixture(autouse=True)
def _live_loggers(monkeypatch):
    """What other tests on the same worker did to the loggers is undone for each test here:
    importing the CLI stops "paradnn" propagating (it prints its own warning lines), and a
    library configuring logging (`dictConfig`'s disable_existing_loggers) disables loggers made
    before it; either hid the records from caplog's root handler in a full run."""
    for name in ("paradnn", "paradnn.store", "paradnn.store.db"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "propagate", True)
        monkeypatch.setattr(logger, "disabled", False)


@pytest.fixture
def warned(monkeypatch, caplog):
    """A fresh once-per-process memory of warned databases; the warnings logged."""
    monkeypatch.setattr(db, "_WARNED", set())
    caplog.set_level(logging.WARNING, logger="paradnn.store.db")
    return caplog


def test_a_database_without_a_wal_is_read_as_an_immutable_file(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    with open_store(path) as store:
        store.insert(_record())
    (tmp_path / "r.db-shm").unlink(missing_ok=True)
    before = _listing(tmp_path)
    monkeypatch.chdir(tmp_path)
    calls = _Connects(monkeypatch)
    conn = db._ro_connect("r.db")
    assert conn.execute("SELECT run_key FROM runs").fetchall() == [("k1",)]
    assert calls.calls == [
        (
            (f"file://{path}?mode=ro&immutable=1",),
            {"uri": True, "timeout": 30, "isolation_level": None},
        ),
    ]
    assert conn.isolation_level is None
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM runs")
    conn.close()
    assert _listing(tmp_path) == before  # no -wal, no -shm made


def test_a_database_with_a_wal_is_read_in_place_where_it_can_be(tmp_path, monkeypatch, warned):
    path = _wal_copy(tmp_path, rows=3)
    calls = _Connects(monkeypatch)
    conn = db._ro_connect(str(path))
    assert calls.calls == [
        ((f"file://{path}?mode=ro",), {"uri": True, "timeout": 30, "isolation_level": None}),
    ]
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3  # the -wal was read
    assert conn.isolation_level is None and not isinstance(conn, db._Copied)
    conn.close()
    assert warned.records == []


class _Refusing:
    """A connection whose first query fails with `code` (as SQLite does for a WAL file it
    cannot make a -shm for); records whether it was closed."""

    def __init__(self, code):
        self.code, self.closed = code, False

    def execute(self, sql):
        assert sql == "SELECT COUNT(*) FROM sqlite_master"
        raise _err("unable to open database file", self.code)

    def close(self):
        self.closed = True


@pytest.fixture
def refusing(tmp_path, monkeypatch):
    """A database with a -wal whose read-only open fails with a given code; the folder is
    read-only unless said otherwise; `_without_shm` recorded instead of run."""
    path = tmp_path / "r.db"
    path.write_bytes(b"")
    (tmp_path / "r.db-wal").write_bytes(b"x")
    state = {"writable": False, "conns": [], "fallback": []}

    def connect(*args, **kw):
        conn = _Refusing(state["code"])
        state["conns"].append(conn)
        return conn

    monkeypatch.setattr(db.sqlite3, "connect", connect)
    monkeypatch.setattr(db.paths, "writable", lambda p: state["writable"])
    monkeypatch.setattr(db, "_without_shm", lambda p: state["fallback"].append(p) or "copy")
    state["path"] = str(path)
    return state


@pytest.mark.parametrize("code", [14, 14 | 4 << 8])
def test_a_wal_that_cannot_be_opened_read_only_is_read_without_its_shm(refusing, code):
    refusing["code"] = code
    assert db._ro_connect(refusing["path"]) == "copy"
    assert refusing["fallback"] == [refusing["path"]]
    assert refusing["conns"][0].closed


@pytest.mark.parametrize(
    ("code", "writable", "shm"),
    [
        (14, True, False),
        (14, False, True),
        (5, False, False),
        (None, False, False),
        (13, False, False),
    ],
)
def test_any_other_failure_is_left_to_the_query(refusing, tmp_path, code, writable, shm):
    refusing["code"], refusing["writable"] = code, writable
    if shm:
        (tmp_path / "r.db-shm").write_bytes(b"")
    conn = db._ro_connect(refusing["path"])
    assert conn is refusing["conns"][0] and not conn.closed
    assert refusing["fallback"] == []


def test_the_folder_asked_about_is_the_databases(refusing, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(db.paths, "writable", lambda p: asked.append(p) or False)
    monkeypatch.chdir(tmp_path)
    refusing["code"] = 14
    assert db._ro_connect("r.db") == "copy"
    assert asked == [tmp_path]


def test_an_empty_wal_without_its_shm_is_read_as_an_immutable_file(tmp_path, monkeypatch, warned):
    path = _wal_copy(tmp_path, rows=2, empty=True)
    before = _listing(path.parent)
    calls = _Connects(monkeypatch)
    conn = db._without_shm(str(path))
    assert calls.calls == [
        (
            (f"file://{path}?mode=ro&immutable=1",),
            {"uri": True, "timeout": 30, "isolation_level": None},
        ),
    ]
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    conn.close()
    assert _listing(path.parent) == before
    assert [r.getMessage() for r in warned.records] == [
        f"{path}: read as an immutable file (its folder cannot be written and it has no -shm "
        "file; its -wal is empty)"
    ]
    assert warned.records[0].levelno == logging.WARNING
    db._without_shm(str(path)).close()  # read again in this process: said once
    assert len(warned.records) == 1 and {str(path)} == db._WARNED


def test_a_wal_holding_results_is_read_from_a_copy(tmp_path, monkeypatch, warned):
    import tempfile

    path = _wal_copy(tmp_path, rows=40)
    size = (tmp_path / "ro" / "r.db-wal").stat().st_size
    assert size >= 1000
    before = _listing(path.parent)
    calls = _Connects(monkeypatch)
    conn = db._without_shm(str(path))
    assert isinstance(conn, db._Copied)
    folder = conn.folder
    assert folder.startswith(str(tempfile.gettempdir()) + "/paradnn-ro-")
    assert calls.calls == [
        ((f"{folder}/r.db",), {"timeout": 30, "isolation_level": None, "factory": db._Copied})
    ]
    assert conn.isolation_level is None
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 40  # the -wal replayed
    assert [r.getMessage() for r in warned.records] == [
        f"{path}: read from a copy in a temporary folder (its folder cannot be written and it "
        f"has no -shm file, so its -wal of {size:,} bytes cannot be read in place)"
    ]
    conn.close()
    assert not __import__("os").path.exists(folder)  # the copy goes with the connection
    assert _listing(path.parent) == before  # the original untouched, no -shm beside it
    again = db._without_shm(str(path))  # read again in this process: said once
    assert again.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 40
    again.close()
    assert len(warned.records) == 1


@pytest.mark.parametrize("which", ["database", "wal"])
def test_a_copy_that_fails_says_why_and_leaves_nothing(tmp_path, monkeypatch, warned, which):
    path = _wal_copy(tmp_path, rows=2)
    made = tmp_path / "tmp-copy"
    monkeypatch.setattr(db.tempfile, "mkdtemp", lambda prefix: made.mkdir() or str(made))
    real = db.shutil.copyfile

    def copyfile(src, dst):
        if str(src).endswith("-wal") == (which == "wal"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(db.shutil, "copyfile", copyfile)
    with pytest.raises(StoreError) as e:
        db._without_shm(str(path))
    assert str(e.value) == (
        f"{path}: its folder cannot be written and it has no -shm file, and it cannot be copied "
        "to read its -wal (No space left on device)"
    )
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert not made.exists()
    assert warned.records == []


def test_a_copy_error_without_a_reason_is_named_by_its_text(tmp_path, monkeypatch):
    path = _wal_copy(tmp_path, rows=1)

    def copyfile(src, dst):
        raise OSError("the copy broke")

    monkeypatch.setattr(db.shutil, "copyfile", copyfile)
    with pytest.raises(StoreError, match=r"cannot be copied to read its -wal \(the copy broke\)$"):
        db._without_shm(str(path))


def test_the_mkdtemp_prefix(tmp_path, monkeypatch, warned):
    path = _wal_copy(tmp_path, rows=1)
    made = []

    def mkdtemp(prefix):
        made.append(prefix)
        (tmp_path / "t").mkdir()
        return str(tmp_path / "t")

    monkeypatch.setattr(db.tempfile, "mkdtemp", mkdtemp)
    conn = db._without_shm(str(path))
    assert made == ["paradnn-ro-"] and conn.folder == str(tmp_path / "t")
    assert (tmp_path / "t" / "r.db").exists() and (tmp_path / "t" / "r.db-wal").exists()
    conn.close()
    assert not (tmp_path / "t").exists()


def test_a_copied_connection_whose_folder_is_gone_still_closes(tmp_path):
    conn = sqlite3.connect(":memory:", factory=db._Copied)
    conn.folder = str(tmp_path / "never-made")
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_each_database_is_warned_about_once(warned):
    db._warn_once("a.db", "%s: one %s", "a.db", "x")
    db._warn_once("a.db", "%s: two %s", "a.db", "y")
    db._warn_once("b.db", "%s: three", "b.db")
    assert [r.getMessage() for r in warned.records] == ["a.db: one x", "b.db: three"]
    assert {"a.db", "b.db"} == db._WARNED


# -- the schema: migrate, _check_version, _statements, check_owned, _check_intact ------------
from paradnn.store.schema import LATEST, MIGRATIONS  # noqa: E402


def _old(conn: sqlite3.Connection, version: int) -> sqlite3.Connection:
    conn.executescript("".join(MIGRATIONS[:version]) + f"\nPRAGMA user_version = {version};")
    return conn


def _schema(conn: sqlite3.Connection) -> dict:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        t: [tuple(c) for c in conn.execute(f"PRAGMA table_info({t})")]
        for t in sorted(tables)
        if t != "sqlite_sequence"
    } | {
        "indexes": sorted(
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        )
    }


def test_the_schema_has_one_migration_a_version():
    assert len(MIGRATIONS) == LATEST >= 17
    assert all(isinstance(m, str) and m.strip() for m in MIGRATIONS)


@pytest.mark.parametrize("version", range(LATEST))
def test_every_older_schema_migrates_to_the_newest_one(version):
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    db.migrate(fresh, "fresh.db")
    conn = _old(sqlite3.connect(":memory:", isolation_level=None), version)
    db.migrate(conn, "old.db")
    assert db.schema_version(conn) == LATEST and not conn.in_transaction
    assert _schema(conn) == _schema(fresh)
    assert set(_schema(fresh)) == {
        "runs",
        "ceilings",
        "ops",
        "op_profile",
        "host_profile",
        "claims",
        "baselines",
        "indexes",
    }


def test_a_schema_up_to_date_is_left_alone_without_a_lock(tmp_path):
    path = tmp_path / "r.db"
    open_store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # no lock could be had now
    conn = sqlite3.connect(path, timeout=0.01, isolation_level=None)
    try:
        db.migrate(conn, str(path))  # nothing to do: no lock asked for
        assert not conn.in_transaction
    finally:
        holder.execute("ROLLBACK")


def test_a_schema_that_cannot_be_locked_names_the_lock_error(tmp_path):
    path = tmp_path / "r.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    conn = sqlite3.connect(path, timeout=0.01, isolation_level=None)
    try:
        with pytest.raises(StoreError) as e:
            db.migrate(conn, str(path))
        assert str(e.value) == (
            f"{path}: cannot lock the database to create or upgrade its schema (database is "
            "locked); another program holds it"
        )
        assert isinstance(e.value.__cause__, sqlite3.OperationalError)
    finally:
        holder.execute("ROLLBACK")


def test_the_version_is_read_again_under_the_lock(monkeypatch):
    """Another process upgraded the schema between the first read and the lock: nothing is
    applied twice."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    db.migrate(conn, "m.db")
    seen = iter([3, LATEST])
    monkeypatch.setattr(db, "schema_version", lambda c: next(seen))
    db.migrate(conn, "m.db")  # would fail with "duplicate column" if v4.. ran again
    assert not conn.in_transaction
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST


def test_a_version_that_cannot_be_read_under_the_lock_names_the_next_step(monkeypatch):
    conn = _old(sqlite3.connect(":memory:", isolation_level=None), 3)
    seen = iter([3])

    def version(c):
        for v in seen:
            return v
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(db, "schema_version", version)
    with pytest.raises(StoreError) as e:
        db.migrate(conn, "m.db")
    assert str(e.value) == "m.db: migration to schema v4 failed: disk I/O error"
    assert not conn.in_transaction


def test_a_newer_schema_found_under_the_lock_is_refused_and_unlocked(monkeypatch):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    seen = iter([0, LATEST + 2])
    monkeypatch.setattr(db, "schema_version", lambda c: next(seen))
    with pytest.raises(StoreError, match=f"schema version {LATEST + 2} was written by a newer"):
        db.migrate(conn, "m.db")
    assert not conn.in_transaction
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


@pytest.mark.parametrize("version", [LATEST + 1, LATEST + 9])
def test_a_newer_schema_is_refused_in_full_words(version):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(f"PRAGMA user_version = {version}")
    with pytest.raises(StoreError) as e:
        db.migrate(conn, "n.db")
    assert str(e.value) == (
        f"n.db: schema version {version} was written by a newer paradnn (this one reads up to "
        f"{LATEST}); upgrade paradnn or use another --db"
    )
    assert not conn.in_transaction


def test_a_foreign_database_is_refused_in_full_words():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError) as e:
        db.migrate(conn, "f.db")
    assert str(e.value) == "f.db: not a paradnn database (it has tables but no schema version)"
    db._check_version(conn, "f.db", 1)  # a version: its tables are its own
    db._check_version(conn, "f.db", LATEST)
    conn.execute("DROP TABLE t")
    db._check_version(conn, "f.db", 0)  # nothing in it: paradnn's to make


def test_a_view_alone_is_no_table():
    conn = sqlite3.connect(":memory:")
    assert db._has_tables(conn) is False
    conn.execute("CREATE VIEW v AS SELECT 1")
    assert db._has_tables(conn) is False
    conn.execute("CREATE TABLE t (x)")
    assert db._has_tables(conn) is True


def test_a_failed_migration_names_the_step_that_failed(monkeypatch):
    conn = _old(sqlite3.connect(":memory:", isolation_level=None), 3)
    broken = [*MIGRATIONS]
    broken[5] = "CREATE TABLE fine (x);\nALTER TABLE nope ADD COLUMN y;"
    monkeypatch.setattr(db, "MIGRATIONS", broken)
    with pytest.raises(StoreError) as e:
        db.migrate(conn, "m.db")
    assert str(e.value) == "m.db: migration to schema v6 failed: no such table: nope"
    assert isinstance(e.value.__cause__, sqlite3.OperationalError)
    assert not conn.in_transaction and db.schema_version(conn) == 3
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "fine" not in names and "energy_j" not in {
        c[1] for c in conn.execute("PRAGMA table_info(runs)")
    }


def test_a_migration_that_fills_the_disk_says_so(tmp_path, disk):
    path = tmp_path / "small.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA max_page_count = 3")
    with pytest.raises(StoreError) as e:
        db.migrate(conn, str(path))
    assert str(e.value) == f"{path}: the disk is full (1,234,567 bytes free in {tmp_path})"
    assert not conn.in_transaction and db.schema_version(conn) == 0
    assert not db._has_tables(conn)


def test_a_migration_interrupted_is_rolled_back(monkeypatch):
    conn = _old(sqlite3.connect(":memory:", isolation_level=None), 2)
    calls = []

    def statements(script):
        calls.append(script)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return db_statements(script)

    db_statements = db._statements
    monkeypatch.setattr(db, "_statements", statements)
    with pytest.raises(KeyboardInterrupt):
        db.migrate(conn, "m.db")
    assert not conn.in_transaction and db.schema_version(conn) == 2
    assert "ceilings" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}


def test_rollback_only_rolls_back_an_open_transaction():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    db._rollback(conn)  # none open: nothing, no error
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE t (x)")
    db._rollback(conn)
    assert not conn.in_transaction and not db._has_tables(conn)


@pytest.mark.parametrize(
    ("script", "found"),
    [
        ("", []),
        ("  \n\n", []),
        ("CREATE TABLE a (x);", ["CREATE TABLE a (x);"]),
        (
            "  CREATE TABLE a (x);\n  CREATE TABLE b (y);\n",
            ["CREATE TABLE a (x);", "CREATE TABLE b (y);"],
        ),
        ("CREATE TABLE a (\n  x -- one; two\n);\n", ["CREATE TABLE a (\n  x -- one; two\n);"]),
        ("-- a note\nCREATE TABLE a (x);", ["-- a note\nCREATE TABLE a (x);"]),
        ("SELECT 1;\nSELECT 2", ["SELECT 1;", "SELECT 2"]),
        (
            "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  DELETE FROM a;\nEND;\nSELECT 1;",
            ["CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  DELETE FROM a;\nEND;", "SELECT 1;"],
        ),
    ],
)
def test_a_migration_is_split_into_its_statements(script, found):
    assert db._statements(script) == found


def test_the_shipped_migrations_split_into_whole_statements():
    for script in MIGRATIONS:
        parts = db._statements(script)
        assert parts and all(sqlite3.complete_statement(p) for p in parts)
        assert sum(p.count(";") for p in parts) == script.count(";")


def test_schema_version_is_the_user_version():
    conn = sqlite3.connect(":memory:")
    assert db.schema_version(conn) == 0
    conn.execute("PRAGMA user_version = 7")
    assert db.schema_version(conn) == 7 and type(db.schema_version(conn)) is int


def _tables(version: int, drop: tuple[str, ...] = ()) -> sqlite3.Connection:
    conn = _old(sqlite3.connect(":memory:", isolation_level=None), version)
    for t in drop:
        conn.execute(f"DROP TABLE {t}")
    return conn


@pytest.mark.parametrize(
    ("version", "drop", "words"),
    [
        (LATEST, ("claims",), "without the table claims"),
        (LATEST, ("ops", "runs"), "without the tables runs, ops"),
        (15, ("claims",), "without the table claims"),
        (11, ("host_profile",), "without the table host_profile"),
        (3, ("ceilings", "ops", "op_profile"), "without the tables ceilings, ops, op_profile"),
        (1, ("runs",), "without the table runs"),
        (LATEST, ("baselines",), "without the table baselines"),
    ],
)
def test_a_database_missing_a_table_of_its_version_is_damaged(version, drop, words):
    with pytest.raises(StoreError) as e:
        db.check_owned(_tables(version, drop), "d.db")
    assert str(e.value) == (
        f"d.db: a damaged paradnn database (schema version {version}) {words}; use another --db"
    )


@pytest.mark.parametrize("version", [1, 2, 10, 14, 16, LATEST])
def test_a_table_of_a_later_version_is_not_missed(version):
    """A v14 file has no claims table (v15 made it), a v2 file no ceilings: both are whole."""
    assert db.check_owned(_tables(version), "d.db") == version


def test_check_owned_refuses_a_newer_or_foreign_file_and_changes_nothing():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    assert db.check_owned(conn, "e.db") == 0  # empty: paradnn's to make
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    with pytest.raises(StoreError, match="written by a newer paradnn"):
        db.check_owned(conn, "e.db")
    conn.execute("PRAGMA user_version = 0")
    conn.execute("CREATE TABLE mine (x)")
    with pytest.raises(StoreError, match=r"^e\.db: not a paradnn database"):
        db.check_owned(conn, "e.db")
    assert db.schema_version(conn) == 0
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["mine"]


class _Checked:
    def __init__(self, answer):
        self.answer, self.sql = answer, []

    def execute(self, sql):
        self.sql.append(sql)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return iter(self.answer)


def test_an_intact_database_passes_the_quick_check():
    conn = sqlite3.connect(":memory:")
    db.migrate(conn, "x")
    db._check_intact(conn, "i.db")
    fake = _Checked([("ok",)])
    db._check_intact(fake, "i.db")
    assert fake.sql == ["PRAGMA quick_check(3)"]


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (
            [("*** in database main ***\nPage 5: btree bad\nPage 6: worse",), ("row 3 missing",)],
            "Page 5: btree bad; Page 6: worse; row 3 missing",
        ),
        ([("ok",), ("ok",)], "ok; ok"),
        ([], ""),
        ([(7,)], "7"),
        (sqlite3.DatabaseError("file is not a database"), "file is not a database"),
        (
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
            "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        ),
    ],
)
def test_a_damaged_database_is_named_by_what_the_quick_check_found(answer, words):
    with pytest.raises(StoreError) as e:
        db._check_intact(_Checked(answer), "d.db")
    assert str(e.value) == f"d.db: a damaged database ({words}); use another --db"


# -- checking before the work: check_writable, _check_existing, _file_state ------------------
from paradnn.errors import ConfigError  # noqa: E402


@pytest.fixture
def existing(monkeypatch):
    """`_check_existing` recorded instead of run."""
    checked = []
    monkeypatch.setattr(db, "_check_existing", checked.append)
    return checked


def test_writable_checks_of_names_that_are_no_file(existing, tmp_path):
    db.check_writable(":memory:")
    with pytest.raises(StoreError) as e:
        db.check_writable("")
    assert str(e.value) == "--db = '': must be a database file path"
    with pytest.raises(ConfigError, match=r"^--db = 'r\.db\\n': must be a plain file name"):
        db.check_writable("r.db\n")
    with pytest.raises(StoreError) as e:
        db.check_writable(tmp_path)
    assert str(e.value) == f"{tmp_path}: is a folder, not a database file; use another --db"
    assert existing == []


def test_an_existing_file_is_checked_unless_it_is_empty(existing, tmp_path):
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "one.db").write_bytes(b"x")
    db.check_writable(tmp_path / "empty.db")
    db.check_writable(tmp_path / "one.db")
    assert existing == [str(tmp_path / "one.db")]


@pytest.fixture
def read_only(monkeypatch):
    """Paths this process may not write (paths.writable is False for them)."""
    refused: set = set()
    monkeypatch.setattr(db.paths, "writable", lambda p: str(p) not in refused)
    return refused


def test_a_read_only_file_or_folder_is_refused(existing, read_only, tmp_path):
    path = tmp_path / "r.db"
    path.write_bytes(b"")
    read_only.add(str(path))
    with pytest.raises(StoreError) as e:
        db.check_writable(path)
    assert str(e.value) == f"{path}: the database is read-only; results cannot be stored"
    read_only.clear()
    read_only.add(str(tmp_path))
    with pytest.raises(StoreError) as e:
        db.check_writable(path)
    assert str(e.value) == (
        f"{path}: its folder {tmp_path} is read-only (SQLite keeps -wal and -shm files there); "
        "results cannot be stored"
    )
    read_only.clear()
    db.check_writable(path)


def test_a_new_file_needs_a_folder_it_can_be_made_in(existing, read_only, tmp_path):
    new = tmp_path / "a" / "b" / "r.db"
    db.check_writable(new)  # its folders will be made under tmp_path
    assert not (tmp_path / "a").exists()  # nothing made by checking
    read_only.add(str(tmp_path))
    with pytest.raises(StoreError) as e:
        db.check_writable(new)
    assert str(e.value) == (f"{new}: the folder {tmp_path} is read-only; results cannot be stored")
    (tmp_path / "a").write_text("a file")
    with pytest.raises(StoreError) as e:
        db.check_writable(new)
    assert str(e.value) == (
        f"{new}: {tmp_path / 'a'} is a file, not a folder; results cannot be stored"
    )
    assert existing == []


def test_the_file_state_is_size_and_time_of_the_file_and_its_wal(tmp_path):
    path = tmp_path / "r.db"
    assert db._file_state(str(path)) == (None, None)
    path.write_bytes(b"abc")
    st = path.stat()
    assert db._file_state(str(path)) == ((3, st.st_mtime_ns), None)
    (tmp_path / "r.db-wal").write_bytes(b"12345")
    wal = (tmp_path / "r.db-wal").stat()
    assert db._file_state(str(path)) == ((3, st.st_mtime_ns), (5, wal.st_mtime_ns))


class _Reads:
    """`_ro_connect` and `check_owned` faked: each read answers the next item of `answers`
    (an exception raised by check_owned, or None: fine); the file's state changes between
    reads while `changing`."""

    def __init__(self, monkeypatch, answers, changing=True):
        self.answers, self.closed, self.sleeps, self.state = list(answers), 0, [], 0
        self.changing = changing
        reads = self

        class Conn:
            def close(self):
                reads.closed += 1

        def owned(conn, path):
            answer = reads.answers.pop(0)
            if answer is not None:
                raise answer

        def state(path):
            if reads.changing:
                reads.state += 1
            return reads.state

        monkeypatch.setattr(db, "_ro_connect", lambda path: Conn())
        monkeypatch.setattr(db, "check_owned", owned)
        monkeypatch.setattr(db, "_check_intact", lambda conn, path: None)
        monkeypatch.setattr(db, "_file_state", state)
        monkeypatch.setattr(db.time, "sleep", reads.sleeps.append)


def test_a_file_read_whole_is_checked_once(monkeypatch):
    reads = _Reads(monkeypatch, [None])
    db._check_existing("r.db")
    assert reads.closed == 1 and reads.sleeps == []


def test_a_file_changing_while_read_is_read_again(monkeypatch):
    reads = _Reads(monkeypatch, [sqlite3.DatabaseError("file is not a database"), None])
    db._check_existing("r.db")
    assert reads.closed == 2 and reads.sleeps == [0.2]


def test_a_file_still_changing_after_three_reads_is_judged(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    bad = sqlite3.DatabaseError("file is not a database")
    reads = _Reads(monkeypatch, [bad, bad, bad, None])
    with pytest.raises(StoreError) as e:
        db._check_existing("r.db")
    assert str(e.value) == "r.db: cannot open as a SQLite database: file is not a database"
    assert e.value.__cause__ is bad
    assert reads.closed == 3 and reads.sleeps == [0.2, 0.2]


def test_the_number_of_reads_is_its_argument(monkeypatch):
    bad = sqlite3.DatabaseError("file is not a database")
    reads = _Reads(monkeypatch, [bad, bad, None])
    with pytest.raises(StoreError):
        db._check_existing("r.db", tries=2)
    assert reads.sleeps == [0.2]
    reads = _Reads(monkeypatch, [bad, None])
    with pytest.raises(StoreError):
        db._check_existing("r.db", tries=1)
    assert reads.sleeps == []


def test_a_refusal_is_raised_as_it_is(monkeypatch):
    refusal = StoreError("r.db: not a paradnn database (it has tables but no schema version)")
    reads = _Reads(monkeypatch, [refusal], changing=False)
    with pytest.raises(StoreError) as e:
        db._check_existing("r.db")
    assert e.value is refusal and reads.closed == 1 and reads.sleeps == []


def test_a_schema_that_is_not_utf8_is_judged_like_any_damage(monkeypatch):
    bad = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    _Reads(monkeypatch, [bad], changing=False)
    with pytest.raises(StoreError, match=r"a damaged database \(its schema is not UTF-8 text\)"):
        db._check_existing("r.db")


def test_an_error_outside_the_read_is_not_caught(monkeypatch):
    reads = _Reads(monkeypatch, [KeyError("x")])
    with pytest.raises(KeyError):
        db._check_existing("r.db")
    assert reads.closed == 1 and reads.sleeps == []


def test_check_existing_for_real(tmp_path):
    good = tmp_path / "good.db"
    open_store(good).close()
    db._check_existing(str(good))
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(StoreError, match="not a paradnn database"):
        db._check_existing(str(foreign))


# -- opening: open_store, _open_writer, _wal, _open_readonly, _snapshot ----------------------
def test_an_in_memory_store_is_migrated_and_reads_rows_by_name():
    s = open_store(":memory:")
    assert s.path == ":memory:" and s.exists()
    assert db.schema_version(s.conn) == LATEST and s.conn.isolation_level is None
    assert s.conn.row_factory is sqlite3.Row and s.conn.text_factory is db._text
    s.insert(_record())
    assert s.runs()[0]["run_key"] == "k1"


def test_an_empty_path_is_refused_before_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for readonly in (False, True):
        with pytest.raises(StoreError) as e:
            open_store("", readonly=readonly)
        assert str(e.value) == "--db = '': must be a database file path"
    assert list(tmp_path.iterdir()) == []


def test_a_writer_checks_then_creates_in_wal_with_the_schema(tmp_path, monkeypatch):
    checked = []
    real = db.check_writable
    monkeypatch.setattr(db, "check_writable", lambda p: checked.append(p) or real(p))
    path = tmp_path / "new" / "r.db"
    with open_store(path) as s:
        assert path.exists() and s._conn is not None  # made now, not at the first write
        assert checked == [str(path)] and s.path == str(path)
        conn = s.conn
        assert conn.isolation_level is None
        assert conn.row_factory is sqlite3.Row and conn.text_factory is db._text
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
        assert db.schema_version(conn) == LATEST
    assert db.BUSY_TIMEOUT_S == 30.0


def test_a_refused_file_is_not_opened(tmp_path, monkeypatch):
    def refuse(path):
        raise StoreError("no")

    monkeypatch.setattr(db, "check_writable", refuse)
    with pytest.raises(StoreError, match=r"^no$"):
        open_store(tmp_path / "r.db")
    with pytest.raises(StoreError, match=r"^no$"):
        open_store(tmp_path / "r.db", lazy=True)
    assert list(tmp_path.iterdir()) == []


def test_a_lazy_store_makes_its_file_at_the_first_write(tmp_path):
    path = tmp_path / "sub" / "r.db"
    s = open_store(path, lazy=True)
    assert s._conn is None and not path.exists() and not path.parent.exists()
    conn = s.conn  # first use: made, in WAL, with the schema
    assert path.exists() and conn is s.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.row_factory is sqlite3.Row and conn.text_factory is db._text
    assert db.schema_version(conn) == LATEST
    s.close()
    lazy_again = open_store(path, lazy=True)  # the file exists: opened at once
    assert lazy_again._conn is not None
    lazy_again.close()


def test_a_writers_folder_that_cannot_be_made(tmp_path):
    (tmp_path / "f").write_text("a file")
    path = tmp_path / "f" / "r.db"
    with pytest.raises(StoreError) as e:
        db._open_writer(str(path), create=True)
    assert str(e.value) == f"{path}: its folder cannot be created (File exists)"
    assert e.value.__cause__ is None


def test_a_writer_makes_no_folder_unless_it_creates(tmp_path, disk):
    path = tmp_path / "no" / "r.db"
    with pytest.raises(StoreError) as e:
        db._open_writer(str(path))
    assert str(e.value) == f"{path}: cannot open as a SQLite database: unable to open database file"
    assert not (tmp_path / "no").exists()
    conn = db._open_writer(str(tmp_path / "r.db"))  # its folder exists: fine
    assert db.schema_version(conn) == LATEST
    conn.close()


def test_a_folder_error_without_a_reason_is_named_by_its_text(tmp_path, monkeypatch):
    def mkdir(self, **kw):
        raise OSError("the folder broke")

    monkeypatch.setattr(db.Path, "mkdir", mkdir)
    with pytest.raises(StoreError, match=r"its folder cannot be created \(the folder broke\)$"):
        db._open_writer(str(tmp_path / "x" / "r.db"), create=True)


def test_a_writer_that_cannot_migrate_says_why(tmp_path, disk):
    path = tmp_path / "r.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84 + b"garbage" * 50)
    with pytest.raises(StoreError) as e:
        db._open_writer(str(path))
    assert str(e.value).startswith(f"{path}: cannot open as a SQLite database: ")
    assert isinstance(e.value.__cause__, sqlite3.DatabaseError)


def test_a_writer_whose_schema_is_not_utf8(tmp_path, monkeypatch):
    def migrate(conn, path):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    monkeypatch.setattr(db, "migrate", migrate)
    with pytest.raises(StoreError) as e:
        db._open_writer(str(tmp_path / "r.db"))
    assert str(e.value) == (
        f"{tmp_path / 'r.db'}: a damaged database (its schema is not UTF-8 text); use another --db"
    )


class _Locked:
    """A connection whose switch to WAL answers `errors` in turn, then succeeds."""

    def __init__(self, errors):
        self.errors, self.sql = list(errors), []

    def execute(self, sql):
        self.sql.append(sql)
        if self.errors:
            raise self.errors.pop(0)


@pytest.fixture
def clock(monkeypatch):
    """A fake monotonic clock (`now` moves only when a test moves it) and the sleeps."""
    state = {"now": 100.0, "sleeps": [], "steps": []}

    def monotonic():
        if state["steps"]:
            state["now"] = state["steps"].pop(0)
        return state["now"]

    monkeypatch.setattr(db.time, "monotonic", monotonic)
    monkeypatch.setattr(db.time, "sleep", state["sleeps"].append)
    return state


def test_wal_waits_while_another_process_makes_the_file(clock):
    locked = sqlite3.OperationalError("database is locked")
    conn = _Locked([locked, locked])
    db._wal(conn)
    assert conn.sql == ["PRAGMA journal_mode=WAL"] * 3
    assert clock["sleeps"] == [0.05, 0.05]


def test_wal_gives_up_after_the_busy_timeout(clock):
    locked = sqlite3.OperationalError("database table is locked")
    clock["steps"] = [100.0, 130.0, 130.001]  # the deadline (130), at it, then past it
    conn = _Locked([locked] * 5)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        db._wal(conn)
    assert len(conn.sql) == 2 and clock["sleeps"] == [0.05]


def test_wal_raises_any_other_error_at_once(clock):
    conn = _Locked([sqlite3.OperationalError("disk I/O error")])
    with pytest.raises(sqlite3.OperationalError, match=r"^disk I/O error$"):
        db._wal(conn)
    assert clock["sleeps"] == []


def _v(path, version: int, rows: int = 0):
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")  # a test file: no need to wait for the disk
    _old(conn, version)
    for i in range(rows):
        conn.execute(
            "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, "
            f"status) VALUES ('k{i}', 'fc', '{{}}', 'fp32', 'sgd', 'eager', 'cpu', 'ok')"
        )
    conn.commit()
    conn.close()


def test_a_reader_gets_a_migrated_snapshot_and_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "old.db"
    _v(path, 3, rows=2)
    before = _listing(tmp_path)
    with open_store(path, readonly=True) as s:
        assert s.path == str(path)
        conn = s.conn
        assert db.schema_version(conn) == LATEST  # migrated in the copy
        assert conn.row_factory is sqlite3.Row and conn.text_factory is db._text
        assert conn.isolation_level is None
        assert conn.execute("PRAGMA query_only").fetchone()[0] == 1
        assert [r["run_key"] for r in s.runs()] == ["k0", "k1"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM runs")
    assert _listing(tmp_path) == before


def test_a_reader_sees_what_is_stored_now(tmp_path):
    path = tmp_path / "r.db"
    with open_store(path) as w:
        w.insert(_record(run_key="a"))
        with open_store(path, readonly=True) as r:
            assert [x["run_key"] for x in r.runs()] == ["a"]


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (None, StoreError, "{p}: no such database (run `paradnn run` first, or pass --db)"),
        (b"", db.EmptyDatabase, "{p}: an empty file (0 bytes), not a paradnn database yet"),
        ("sqlite", db.EmptyDatabase, "{p}: an empty SQLite database, not a paradnn one yet"),
        (
            "foreign",
            StoreError,
            "{p}: not a paradnn database (it has tables but no schema version)",
        ),
        (
            b"hello, this is not a database" * 50,
            StoreError,
            "{p}: cannot open as a SQLite database: file is not a database",
        ),
    ],
)
def test_what_a_reader_refuses(tmp_path, make, error, words):
    path = tmp_path / "r.db"
    if isinstance(make, bytes):
        path.write_bytes(make)
    elif make == "sqlite":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 0")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")  # a real SQLite file, with no table left
        conn.close()
    elif make == "foreign":
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    before = _listing(tmp_path)
    with pytest.raises(error) as e:
        open_store(path, readonly=True)
    assert type(e.value) is error
    assert str(e.value) == words.format(p=path)
    assert _listing(tmp_path) == before


def test_a_reader_refuses_a_folder_and_a_control_character(tmp_path):
    with pytest.raises(StoreError, match="is a folder, not a database file"):
        open_store(tmp_path, readonly=True)
    with pytest.raises(ConfigError, match="must be a plain file name"):
        open_store(f"{tmp_path}/r\x1b.db", readonly=True)


class _Memory:
    """sqlite3.connect, handing out the in-memory connections it made."""

    def __init__(self, monkeypatch):
        self.made, real = [], sqlite3.connect

        def connect(*args, **kw):
            conn = real(*args, **kw)
            if args and args[0] == ":memory:":
                self.made.append((conn, kw))
            return conn

        monkeypatch.setattr(db.sqlite3, "connect", connect)


def test_a_reader_closes_its_copy_when_it_refuses(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    mem = _Memory(monkeypatch)
    with pytest.raises(StoreError):
        open_store(path, readonly=True)
    ((conn, kw),) = mem.made
    assert kw == {"isolation_level": None}
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        conn.execute("SELECT 1")


def test_damage_found_past_the_checks_is_a_damaged_database(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    _v(path, LATEST)
    mem = _Memory(monkeypatch)

    def intact(conn, p):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(db, "_check_intact", intact)
    with pytest.raises(StoreError) as e:
        open_store(path, readonly=True)
    assert str(e.value) == (
        f"{path}: a damaged database (database disk image is malformed); use another --db"
    )
    with pytest.raises(sqlite3.ProgrammingError):
        mem.made[0][0].execute("SELECT 1")


def test_a_reader_interrupted_closes_its_copy(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    _v(path, LATEST)
    mem = _Memory(monkeypatch)

    def migrate(conn, p):
        raise KeyboardInterrupt

    monkeypatch.setattr(db, "migrate", migrate)
    with pytest.raises(KeyboardInterrupt):
        open_store(path, readonly=True)
    with pytest.raises(sqlite3.ProgrammingError):
        mem.made[0][0].execute("SELECT 1")


def test_a_snapshot_closes_its_source_and_names_sqlite_errors(tmp_path, monkeypatch, disk):
    path = tmp_path / "r.db"
    _v(path, LATEST, rows=1)
    opened = []
    real = db._ro_connect

    def ro(p):
        conn = real(p)
        opened.append(conn)
        return conn

    monkeypatch.setattr(db, "_ro_connect", ro)
    mem = sqlite3.connect(":memory:")
    db._snapshot(str(path), mem)
    assert mem.execute("SELECT run_key FROM runs").fetchall() == [("k0",)]
    with pytest.raises(sqlite3.ProgrammingError):
        opened[0].execute("SELECT 1")

    def owned(conn, p):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(db, "check_owned", owned)
    with pytest.raises(StoreError) as e:
        db._snapshot(str(path), sqlite3.connect(":memory:"))
    assert str(e.value) == f"{path}: cannot open as a SQLite database: disk I/O error"
    with pytest.raises(sqlite3.ProgrammingError):
        opened[1].execute("SELECT 1")

    def owned_text(conn, p):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    monkeypatch.setattr(db, "check_owned", owned_text)
    with pytest.raises(StoreError, match="its schema is not UTF-8 text"):
        db._snapshot(str(path), sqlite3.connect(":memory:"))


# -- writing: _insert, insert_rows, writing, _kept, _rollback, baselines ---------------------
ENV = {
    "python": "3.11.7",
    "torch": "2.13.0",
    "cuda": "12.4",
    "cudnn": "9.1",
    "driver": "550",
    "cpu_model": "Test CPU",
    "gpu_name": "Test GPU",
    "hostname": "box",
    "other": 1,
}


def _raw(store, sql: str) -> list[tuple]:
    return [tuple(r) for r in store.conn.execute(sql)]


def test_a_run_is_stored_as_json_text_integers_and_env_columns(store):
    rec = _record(
        config={"b": 2, "a": [1, 2]},
        samples=[0.5, 0.25],
        env=ENV,
        converged=True,
        emulated=False,
        input_bound=None,
        quality_reasons=["ok"],
    )
    rid = store.insert(rec)
    cols = (
        "config, samples, env, quality_reasons, energy, converged, emulated, input_bound, "
        "python_version, torch_version, cuda_version, cudnn_version, driver_version, "
        "cpu_model, gpu_name, hostname, attempt, run_key"
    )
    (row,) = _raw(store, f"SELECT {cols} FROM runs WHERE id = {rid}")
    assert row == (
        '{"b": 2, "a": [1, 2]}',
        "[0.5, 0.25]",
        json.dumps(ENV),
        '["ok"]',
        None,
        1,
        0,
        None,
        "3.11.7",
        "2.13.0",
        "12.4",
        "9.1",
        "550",
        "Test CPU",
        "Test GPU",
        "box",
        1,
        "k1",
    )
    assert _raw(store, "SELECT typeof(converged), typeof(emulated) FROM runs") == [
        ("integer", "integer")
    ]


def test_env_columns_missing_from_the_env_are_null(store):
    store.insert(_record(env={"torch": "2.13.0"}))
    assert _raw(store, "SELECT python_version, torch_version, hostname FROM runs") == [
        (None, "2.13.0", None)
    ]


def test_attempts_are_numbered_per_key_and_returned(store):
    ids = [store.insert(_record(run_key=k)) for k in ("a", "b", "a", "a")]
    assert ids == [1, 2, 3, 4]
    again = store.insert_record(_record(run_key="b", status="oom"))
    assert again.attempt == 2 and again.status == "oom" and again.run_key == "b"
    assert _raw(store, "SELECT run_key, attempt FROM runs ORDER BY id") == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("a", 3),
        ("b", 2),
    ]
    assert store.insert_record(_record(run_key="c")).attempt == 1
    assert not store.conn.in_transaction


def test_a_runs_op_profile_lands_with_its_id(store):
    store.insert(_record(run_key="a"))
    ops = [{"op": "aten::mm", "calls": 2, "shapes": [[2, 2]]}, {"op": "aten::add", "calls": 1}]
    rid = store.insert(_record(run_key="b", op_profile=ops))
    assert _raw(store, "SELECT run_id, op, calls, shapes FROM op_profile ORDER BY id") == [
        (rid, "aten::mm", 2, "[[2, 2]]"),
        (rid, "aten::add", 1, None),
    ]
    store.insert(_record(run_key="c", op_profile=[]))
    assert store.count() == 3 and len(store.rows("op_profile")) == 2


@pytest.fixture
def named(monkeypatch):
    """Every database error is a write failure named "W" (the words are pinned elsewhere);
    the arguments write_failure was called with."""
    calls = []

    def words(path, e, conn=None):
        calls.append((path, str(e), conn))
        return "W"

    monkeypatch.setattr(db, "write_failure", words)
    return calls


def _refuse(store, table: str) -> None:
    store.conn.execute(
        f"CREATE TRIGGER refuse BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, 'no'); END"
    )


def test_a_failed_run_insert_names_the_run_and_what_is_kept(store, named):
    store.insert(_record(run_key="a"))
    _refuse(store, "runs")
    config = {f"key{i}": i for i in range(20)}
    with pytest.raises(db.WorkFailed) as e:
        store.insert(_record(family="cnn", precision="bf16", config=config))
    assert str(e.value) == (
        f"W; the result of cnn bf16 {db._short(config, 80)} could not be stored; every result "
        "stored before it is kept (1 run in it); run the same command again to resume"
    )
    assert len(db._short(config, 80)) == 80
    assert named == [(":memory:", "no", store.conn)]
    assert isinstance(e.value.__cause__, sqlite3.IntegrityError)
    assert not store.conn.in_transaction and store.count() == 1


def test_an_error_that_is_no_write_failure_is_raised_as_it_is(store):
    _refuse(store, "runs")
    with pytest.raises(sqlite3.IntegrityError, match=r"^no$"):
        store.insert(_record())
    with pytest.raises(KeyError), store.writing("x"):
        raise KeyError("not a database error")


def test_what_is_kept_counts_the_runs(store):
    assert store._kept() == "every result stored before it is kept (0 runs in it)"
    store.insert(_record(run_key="a"))
    assert store._kept() == "every result stored before it is kept (1 run in it)"
    store.insert(_record(run_key="b"))
    assert store._kept() == "every result stored before it is kept (2 runs in it)"
    store.conn.close()
    assert store._kept() == "every result stored before it is kept"  # cannot be read now


def test_a_write_failure_is_work_failed_with_exit_1(store, named):
    with pytest.raises(db.WorkFailed) as e, store.writing("the thing"):
        raise sqlite3.OperationalError("database or disk is full")
    assert str(e.value) == (
        "W; the thing could not be stored; every result stored before it is kept (0 runs in "
        "it); run the same command again to resume"
    )
    assert e.value.exit_code == 1


def test_a_lazy_stores_write_failure_is_named_without_a_connection(tmp_path, named):
    s = open_store(tmp_path / "r.db", lazy=True)
    with pytest.raises(db.WorkFailed), s.writing("x"):
        raise sqlite3.OperationalError("boom")
    assert named == [(str(tmp_path / "r.db"), "boom", None)]


def test_the_stores_rollback(tmp_path, store):
    db.Store(None, "x")._rollback()  # nothing opened: nothing to do
    store._rollback()  # nothing open: no error
    store.conn.execute("BEGIN")
    store.conn.execute("DELETE FROM runs")
    store._rollback()
    assert not store.conn.in_transaction


def _op(name: str, **kw) -> dict:
    return {
        "op": "matmul",
        "name": name,
        "shape": {"m": 2},
        "precision": "fp32",
        "pass": "fwd",
        "device": "cpu",
        "device_name": "CPU",
        "fingerprint": "f",
        "status": "ok",
        "measured_at": "t",
        **kw,
    }


def test_side_rows_are_stored_in_order_with_json_for_dicts_and_lists(store):
    ids = store.insert_rows("ops", [_op("a", samples=[1, 2], error="plain text"), _op("b")])
    assert ids == [1, 2]
    assert _raw(store, "SELECT name, shape, samples, error FROM ops ORDER BY id") == [
        ("a", '{"m": 2}', "[1, 2]", "plain text"),
        ("b", '{"m": 2}', None, None),
    ]
    assert store.insert_rows("ops", []) == [] and not store.conn.in_transaction
    assert store.insert_rows("ops", [_op("c")]) == [3]


@pytest.mark.parametrize(("n", "what"), [(1, "1 ops row"), (2, "2 ops rows"), (3, "3 ops rows")])
def test_a_failed_side_insert_names_how_many_rows(store, named, n, what):
    _refuse(store, "ops")
    with pytest.raises(db.WorkFailed) as e:
        store.insert_rows("ops", [_op(str(i)) for i in range(n)])
    assert str(e.value).startswith(f"W; {what} could not be stored; every result stored")
    assert not store.conn.in_transaction and store.rows("ops") == []


def test_a_side_insert_interrupted_is_rolled_back(store, monkeypatch):
    rows = [_op("a"), _op("b")]
    real = json.dumps
    seen = []

    def dumps(v):
        seen.append(v)
        if len(seen) == 2:  # the second row
            raise KeyboardInterrupt
        return real(v)

    monkeypatch.setattr(db.json, "dumps", dumps)
    with pytest.raises(KeyboardInterrupt):
        store.insert_rows("ops", rows)
    monkeypatch.setattr(db.json, "dumps", real)
    assert not store.conn.in_transaction and store.rows("ops") == []


def test_side_inserts_only_into_side_tables(store):
    for table in ("runs", "claims", "baselines"):
        with pytest.raises(ValueError) as e:
            store.insert_rows(table, [{"x": 1}])
        assert str(e.value) == (
            f"table = {table!r}: must be ceilings, ops, op_profile, host_profile"
        )
    assert store.count() == 0


def _runs(store, n: int) -> list[int]:
    return [store.insert(_record(run_key=f"k{i}")) for i in range(n)]


def test_a_baseline_is_saved_listed_and_read_back(store):
    _runs(store, 4)
    assert store.save_baseline("v1", [3, 1], "2026-01-01T00:00:00Z") is True
    assert store.save_baseline("a0", [2], "2026-02-01T00:00:00Z") is True
    assert _raw(store, "SELECT name, run_id, saved_at FROM baselines ORDER BY name, run_id") == [
        ("a0", 2, "2026-02-01T00:00:00Z"),
        ("v1", 1, "2026-01-01T00:00:00Z"),
        ("v1", 3, "2026-01-01T00:00:00Z"),
    ]
    assert store.baselines() == [
        {"name": "a0", "runs": 1, "saved_at": "2026-02-01T00:00:00Z"},
        {"name": "v1", "runs": 2, "saved_at": "2026-01-01T00:00:00Z"},
    ]
    assert store.baseline_ids("v1") == [1, 3] and store.baseline_ids("none") == []
    assert all(type(i) is int for i in store.baseline_ids("v1"))
    assert not store.conn.in_transaction


def test_a_taken_name_is_refused_unless_replaced(store):
    _runs(store, 3)
    store.save_baseline("v1", [1, 2], "t1")
    assert store.save_baseline("v1", [3], "t2") is False  # nothing written
    assert store.baseline_ids("v1") == [1, 2] and not store.conn.in_transaction
    assert store.save_baseline("v1", [3], "t2", replace=True) is True
    assert store.baseline_ids("v1") == [3]
    assert store.baselines() == [{"name": "v1", "runs": 1, "saved_at": "t2"}]
    assert store.save_baseline("v2", [2], "t3", replace=True) is True  # a new name: saved
    assert store.baseline_ids("v2") == [2]


def test_a_baseline_of_ids_given_as_text_is_stored_as_numbers(store):
    _runs(store, 2)
    store.save_baseline("v", ["2", 1], "t")
    assert _raw(store, "SELECT typeof(run_id) FROM baselines") == [("integer",), ("integer",)]


def test_a_baseline_that_fails_mid_way_leaves_the_old_one(store):
    _runs(store, 2)
    store.save_baseline("v1", [1], "t1")
    with pytest.raises(ValueError):
        store.save_baseline("v1", [2, "x"], "t2", replace=True)
    assert not store.conn.in_transaction
    assert store.baseline_ids("v1") == [1]


def test_a_baseline_that_cannot_be_written_is_named(store, named):
    _runs(store, 1)
    _refuse(store, "baselines")
    with pytest.raises(db.WorkFailed) as e:
        store.save_baseline("nightly", [1], "t")
    assert str(e.value).startswith("W; baseline 'nightly' could not be stored;")
    assert not store.conn.in_transaction
    store.conn.execute("DROP TRIGGER refuse")
    store.save_baseline("nightly", [1], "t")
    store.conn.execute(
        "CREATE TRIGGER refuse BEFORE DELETE ON baselines BEGIN SELECT RAISE(ABORT, 'no'); END"
    )
    with pytest.raises(db.WorkFailed) as e:
        store.delete_baseline("nightly")
    assert str(e.value).startswith("W; deleting baseline 'nightly' could not be stored;")


def test_deleting_a_baseline_says_how_many_runs_it_named(store):
    _runs(store, 3)
    store.save_baseline("v1", [1, 2, 3], "t")
    store.save_baseline("v2", [1], "t")
    assert store.delete_baseline("v1") == 3
    assert store.delete_baseline("v1") == 0
    assert store.baselines() == [{"name": "v2", "runs": 1, "saved_at": "t"}]
    assert store.count() == 3  # its runs stay


# -- the newest of each key: latest_status, latest_attempts, measured_with, sweep_threads ----
def test_the_newest_attempt_of_each_key(store):
    for key, status in (("a", "oom"), ("b", "ok"), ("a", "ok"), ("c", "crashed"), ("c", "nan")):
        store.insert(_record(run_key=key, status=status))
    assert store.latest_status() == {"a": "ok", "b": "ok", "c": "nan"}
    assert store.latest_attempts() == {"a": 2, "b": 1, "c": 2}
    assert store.count() == 5 and type(store.count()) is int


def test_the_settings_each_key_was_measured_with(store):
    store.insert(_record(run_key="a", sweep="s", env={"measured_with": {"budget": 1}}))
    store.insert(_record(run_key="a", sweep="t", env={"measured_with": {"budget": 2}}))
    store.insert(_record(run_key="b", env={"measured_with": [1]}))
    store.insert(_record(run_key="c", sweep="s", env={"torch": "2"}))
    store.insert(_record(run_key="d", sweep="s"))
    store.insert(_record(run_key="e", sweep="s"))
    store.conn.execute("UPDATE runs SET env = '{bad' WHERE run_key = 'd'")
    store.conn.execute("UPDATE runs SET env = '[1]' WHERE run_key = 'e'")
    assert store.measured_with() == {
        "a": ("t", {"budget": 2}),  # the newest attempt's
        "b": (None, None),  # no sweep; settings that are no object
        "c": ("s", None),
        "d": ("s", None),  # a damaged env says nothing
        "e": ("s", None),
    }
    store.conn.execute("UPDATE runs SET env = NULL WHERE run_key = 'c'")
    assert store.measured_with()["c"] == ("s", None)
    # a damaged sweep column (a blob where a name belongs) names no sweep
    store.conn.execute("UPDATE runs SET sweep = x'00ff' WHERE run_key = 'c'")
    assert store.measured_with()["c"] == (None, None)


def test_a_damaged_page_of_an_existing_file_is_refused_naming_the_file(tmp_path):
    """Page 1 and the schema read well, later pages do not: quick_check refuses it before any
    work, naming the file (from the seed-12 sample: the path in that message was untested)."""
    path = tmp_path / "r.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("CREATE TABLE filler (x)")
    conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,) for _ in range(200)])
    conn.commit()
    conn.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size - 4096 * 5)
        f.write(b"\xff" * 4096 * 3)
    damaged = path.read_bytes()
    for readonly in (False, True):
        with pytest.raises(StoreError) as e:
            open_store(path, readonly=readonly)
        assert str(e.value).startswith(f"{path}: a damaged database (")
        assert str(e.value).endswith("); use another --db")
    assert path.read_bytes() == damaged


def _threads(store, threads, choice, sweep="s", host="box") -> None:
    env = {"hostname": host} if choice is None else {"hostname": host, "threads_choice": choice}
    store.insert(_record(run_key=f"k{store.count()}", sweep=sweep, threads=threads, env=env))


def test_a_resumed_sweep_keeps_the_thread_count_paradnn_chose(store):
    assert store.sweep_threads("s", "box") is None
    _threads(store, 4, {"requested": None, "why": "free cores"})
    assert store.sweep_threads("s", "box") == 4
    assert store.sweep_threads("other", "box") is None
    assert store.sweep_threads("s", "elsewhere") is None
    _threads(store, 2, None)  # a newer run that names no choice: the older one decides
    assert store.sweep_threads("s", "box") == 4
    _threads(store, 3, {"requested": 3})  # the newest was given --threads: nothing to keep
    assert store.sweep_threads("s", "box") is None


@pytest.mark.parametrize(
    ("threads", "choice", "kept"),
    [
        (1, {"requested": None}, 1),
        (0, {"requested": None}, None),
        (None, {"requested": None}, None),
        (2, {"why": "x"}, 8),
        (2, "requested", 8),
        (2, ["requested"], 8),
    ],
)
def test_which_choice_decides(store, threads, choice, kept):
    _threads(store, 8, {"requested": None})
    _threads(store, threads, choice)
    assert store.sweep_threads("s", "box") == kept


def test_a_damaged_env_names_no_choice(store):
    _threads(store, 8, {"requested": None})
    _threads(store, 2, {"requested": None})
    store.conn.execute("UPDATE runs SET env = '{bad' WHERE id = 2")
    assert store.sweep_threads("s", "box") == 8
    store.conn.execute("UPDATE runs SET env = '[1]' WHERE id = 2")
    assert store.sweep_threads("s", "box") == 8
    store.conn.execute("UPDATE runs SET env = NULL WHERE id = 2")
    assert store.sweep_threads("s", "box") == 8


def test_only_the_newest_fifty_runs_are_looked_at(store):
    _threads(store, 8, {"requested": None})
    for _ in range(49):
        _threads(store, 2, None)
    assert store.sweep_threads("s", "box") == 8
    _threads(store, 2, None)
    assert store.sweep_threads("s", "box") is None


def test_task_status_of_each_side_table(store):
    store.insert_rows(
        "ops",
        [
            _op("a", status="crashed", task_key="t1"),
            _op("b", status="ok", task_key="t1"),
            _op("c", status="oom", task_key="t2"),
            _op("d", status="ok"),
        ],
    )
    assert store.task_status("ops") == {"t1": "ok", "t2": "oom"}
    assert store.task_status("host_profile") == {} and store.task_status("ceilings") == {}
    for table in ("runs", "op_profile"):
        with pytest.raises(ValueError) as e:
            store.task_status(table)
        assert str(e.value) == f"table = {table!r}: must be ceilings, ops or host_profile"


# -- the store object: conn, exists, close, frame --------------------------------------------
def test_a_store_opens_once_and_stays_closed(tmp_path):
    made = []

    def opener():
        made.append(True)
        return sqlite3.connect(":memory:")

    s = db.Store(None, str(tmp_path / "x.db"), opener=opener)
    assert not s.exists() and made == []
    assert s.conn is s.conn and made == [True]
    assert s.conn.text_factory is db._text and s.exists()
    with s as same:
        assert same is s
    assert s._conn is None and s._opener is None
    with pytest.raises(StoreError, match="the database is closed"):
        s.conn  # noqa: B018
    assert made == [True]


def test_a_frame_has_a_column_per_hyperparameter(store):
    store.insert(_record(run_key="a", config={"layers": 2, "nodes": 8}))
    store.insert(_record(run_key="b", family="cnn", config={"layers": 3, "nodes": 16}))
    frame = store.frame(family="cnn")
    assert list(frame["run_key"]) == ["b"]
    assert frame.loc[0, "layers"] == 3 and frame.loc[0, "nodes"] == 16
    assert frame.loc[0, "config"] == {"layers": 3, "nodes": 16}
    assert len(store.frame()) == 2
