"""Open, migrate, write and read the result database.

One transaction per result and WAL journaling: a crash or kill -9 loses at most the run in
flight, and readers (the report, `paradnn results`) never block a running sweep.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from paradnn import paths
from paradnn.axes import AXES
from paradnn.errors import StoreError, WorkFailed
from paradnn.records import RECORD_FIELDS, RunRecord, hyperparameter_columns
from paradnn.store.schema import LATEST, MIGRATIONS

log = logging.getLogger(__name__)
DEFAULT_DB = "paradnn.db"
JSON_COLUMNS = (
    *("config", "samples", "env", "flags", "nulls", "energy", "quality_reasons", "load"),
    "parallel",  # data-parallel detail (records.Parallel)
    *("graph_break_reasons", "compile_detail"),  # modes (docs/modes.md)
    "infeed",  # data infeed (docs/infeed.md)
    "xla_detail",  # the JAX backend (docs/jax.md)
)
BOOL_COLUMNS = ("converged", "emulated", "cudagraphs", "xla_flops_mismatch", "ceiling_beaten")
BOOL_COLUMNS += ("input_bound",)  # docs/infeed.md
BOOL_COLUMNS += tuple(a.column for a in AXES if a.column and a.kind is bool)  # pin_memory, …
ENV_COLUMNS = {
    "python_version": "python",
    "torch_version": "torch",
    "cuda_version": "cuda",
    "cudnn_version": "cudnn",
    "driver_version": "driver",
    "cpu_model": "cpu_model",
    "gpu_name": "gpu_name",
    "hostname": "hostname",
}


class EmptyDatabase(StoreError):
    """A file with no paradnn schema and nothing else (0 bytes, or SQLite without tables):
    readers refuse it, writers adopt it."""


class _BadRow(Exception):
    def __init__(self, column: str, problem: str):
        super().__init__(column, problem)
        self.column, self.problem = column, problem


# What each JSON column of a run must decode to (a list or an object); `config` must be an object.
_JSON_SHAPES = {
    **dict.fromkeys(("samples", "quality_reasons", "graph_break_reasons"), list),
    **dict.fromkeys(("config", "env", "flags", "nulls", "energy", "load"), dict),
    **dict.fromkeys(("parallel", "compile_detail", "infeed", "xla_detail"), dict),
}
SIDE_JSON_COLUMNS = ("detail", "env", "shape", "samples", "nulls", "shapes", "quality_reasons")
SIDE_TABLES = ("ceilings", "ops", "op_profile", "host_profile")


class Undecodable(str):
    """A stored text value that is not valid UTF-8 (a damaged or hand-edited file), read with
    U+FFFD where its bad bytes were: any query can read it, and `_decode` leaves its row out
    and names it, where sqlite3's default would end the whole command."""


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw.decode("utf-8", "replace"))


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode(row: sqlite3.Row, table: str, numeric: frozenset[str]) -> dict[str, Any]:
    """A stored row as a dict (JSON decoded, booleans as bool); _BadRow names the first column
    that cannot be: JSON that does not parse or is not the shape it must be, a number column
    holding text."""
    d = dict(row)
    for col, v in d.items():
        if isinstance(v, Undecodable):
            raise _BadRow(col, f"{_short(str(v))} is not valid UTF-8 text")
    for col in numeric:
        v = d.get(col)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise _BadRow(col, f"{_short(v)} is not a number")
    for col in JSON_COLUMNS if table == "runs" else SIDE_JSON_COLUMNS:
        v = d.get(col)
        if v is None or (table != "runs" and not isinstance(v, str)):
            continue
        try:
            d[col] = json.loads(v)
        except (TypeError, ValueError) as e:
            raise _BadRow(col, f"{_short(v)} is not valid JSON ({e})") from None
        shape = _JSON_SHAPES.get(col) if table == "runs" else None
        if shape is not None and not isinstance(d[col], shape):
            kind = "an object" if shape is dict else "a list"
            raise _BadRow(col, f"{_short(v)} is not {kind}")
    if table == "runs" and not isinstance(d.get("config"), dict):
        raise _BadRow("config", "is missing")
    samples = d.get("samples") if table == "runs" else None
    if samples and not all(type(x) in (int, float) for x in samples):
        raise _BadRow("samples", "holds something that is not a number")
    for col in BOOL_COLUMNS if table == "runs" else ():
        if d.get(col) is not None:
            d[col] = bool(d[col])
    return d


class Store:
    """A result database. `opener`: how to open it when it does not exist yet, called when
    something is first written (or a read finds the file made by another process), so a
    command refused before it stores anything creates no file (issue 46)."""

    def __init__(
        self,
        conn: sqlite3.Connection | None,
        path: str,
        opener: Callable[[], sqlite3.Connection] | None = None,
    ):
        self._conn = conn
        self._opener = opener
        if conn is not None:
            conn.text_factory = _text
        self.path = path
        # Rows a read left out because a column could not be read (hand-edited or damaged):
        # {"table", "id", "column", "problem"}, each also logged once as a warning.
        self.skipped: list[dict[str, Any]] = []
        self._numeric: dict[str, frozenset[str]] = {}

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, opening (and so creating) the database on first use."""
        if self._conn is None:
            if self._opener is None:
                raise StoreError(f"{self.path}: the database is closed")
            self._conn = self._opener()
            self._conn.text_factory = _text
        return self._conn

    def exists(self) -> bool:
        """Whether there is a database to read: opened, or a file (another process's) now."""
        return self._conn is not None or Path(self.path).exists()

    # -- writing -------------------------------------------------------------------------
    def insert(self, rec: RunRecord) -> int:
        """Store one run record in its own transaction; its row id."""
        return self._insert(rec)[0]

    def insert_record(self, rec: RunRecord) -> RunRecord:
        """Store one run record; the record as stored (with the attempt number it was given)."""
        _, attempt = self._insert(rec)
        return rec.replace(attempt=attempt)

    def _insert(self, rec: RunRecord) -> tuple[int, int]:
        row = rec.as_dict()
        for col in JSON_COLUMNS:
            row[col] = None if row[col] is None else json.dumps(row[col])
        for col in BOOL_COLUMNS:
            if row[col] is not None:
                row[col] = int(row[col])
        for col, key in ENV_COLUMNS.items():
            row[col] = rec.env.get(key)
        cols = [c for c in (*RECORD_FIELDS, *ENV_COLUMNS) if c != "attempt"]
        sql = (
            f"INSERT INTO runs ({', '.join(cols)}, attempt) VALUES ({', '.join('?' * len(cols))}, "
            "(SELECT COALESCE(MAX(attempt), 0) + 1 FROM runs WHERE run_key = ?))"
        )
        # One IMMEDIATE transaction per result: the attempt number and the row land together,
        # even with another writer (a `paradnn bench` beside a sweep) on the same file.
        with self.immediate(f"the result of {rec.family} {rec.precision} {_short(rec.config, 80)}"):
            cur = self.conn.execute(sql, [*(row[c] for c in cols), rec.run_key])
        rid = int(cur.lastrowid)
        attempt = self.conn.execute("SELECT attempt FROM runs WHERE id = ?", (rid,)).fetchone()[0]
        if rec.op_profile:
            self.insert_rows("op_profile", [{**r, "run_id": rid} for r in rec.op_profile])
        return rid, int(attempt)

    def task_status(self, table: str) -> dict[str, str]:
        """The newest status of every task key in `ceilings`, `ops` or `host_profile` (what a
        re-run skips)."""
        if table not in ("ceilings", "ops", "host_profile"):
            raise ValueError(f"table = {table!r}: must be ceilings, ops or host_profile")
        if not self.exists():
            return {}
        sql = (
            f"SELECT task_key, status FROM {table} AS t WHERE task_key IS NOT NULL AND id = "
            f"(SELECT MAX(id) FROM {table} WHERE task_key = t.task_key)"
        )
        return dict(self.conn.execute(sql).fetchall())

    def latest_status(self) -> dict[str, str]:
        """The status of the newest attempt of every run key (what a resumed sweep skips)."""
        if not self.exists():
            return {}
        sql = (
            "SELECT run_key, status FROM runs AS r WHERE attempt = "
            "(SELECT MAX(attempt) FROM runs WHERE run_key = r.run_key)"
        )
        return dict(self.conn.execute(sql).fetchall())

    # -- reading -------------------------------------------------------------------------
    def runs(
        self,
        *,
        family: str | None = None,
        status: str | Sequence[str] | None = None,
        sweep: str | None = None,
        run_key: str | None = None,
        quality: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        where, args = [], []
        cols = (("family", family), ("sweep", sweep), ("run_key", run_key), ("quality", quality))
        for col, val in cols:
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            args += statuses
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._read("runs", sql, args)

    def sweep_threads(self, sweep: str, hostname: str) -> int | None:
        """The thread count paradnn chose (no --threads) for the newest run of `sweep` on
        `hostname`, or None: a resumed sweep keeps it, so its configs keep their run keys and
        the whole sweep is measured at one thread count."""
        if not self.exists():
            return None
        rows = self.conn.execute(
            "SELECT threads, env FROM runs WHERE sweep = ? AND hostname = ? ORDER BY id DESC "
            "LIMIT 50",
            (sweep, hostname),
        ).fetchall()
        for threads, env in rows:
            try:
                choice = json.loads(env).get("threads_choice")
            except (TypeError, ValueError, AttributeError):
                continue  # a damaged env names no choice
            if isinstance(choice, dict) and "requested" in choice:
                if choice["requested"] is None and isinstance(threads, int) and threads >= 1:
                    return threads
                return None  # the newest run was given --threads: nothing to keep
        return None

    def insert_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert rows into `ceilings`, `ops`, `op_profile` or `host_profile` in one transaction;
        dict and list values are stored as JSON. Returns the new ids."""
        if table not in SIDE_TABLES:
            raise ValueError(f"table = {table!r}: must be {', '.join(SIDE_TABLES)}")
        ids = []
        with self.immediate(f"{len(rows)} {table} row{'s' if len(rows) != 1 else ''}"):
            for row in rows:
                cols = list(row)
                vals = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in row.values()]
                sql = (
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
                )
                ids.append(int(self.conn.execute(sql, vals).lastrowid))
        return ids

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already: after a COMMIT that
        failed on a full disk it has, and a second ROLLBACK would hide why."""
        if self._conn is not None and self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def immediate(self, what: str) -> Iterator[None]:
        """One IMMEDIATE transaction around the block: committed when it ends (unless the
        block ended the transaction itself), rolled back on any exception; a write failure in
        the user's words (`writing`)."""
        with self.writing(what):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    @contextlib.contextmanager
    def writing(self, what: str) -> Iterator[None]:
        """A write to the database; a full disk, a quota, a file made read-only is one line
        naming the database, the cause and what is kept (errors.WorkFailed, exit 1)."""
        try:
            yield
        except sqlite3.Error as e:
            words = write_failure(self.path, e, self._conn)
            if words is None:
                raise
            raise WorkFailed(
                f"{words}; {what} could not be stored; {self._kept()}; "
                "run the same command again to resume"
            ) from e

    def _kept(self) -> str:
        """What the database holds, for a failure's line (it is read, not written)."""
        try:
            n = int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        except sqlite3.Error:
            return "every result stored before it is kept"
        return f"every result stored before it is kept ({n} run{'s' if n != 1 else ''} in it)"

    def rows(self, table: str, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of `ceilings`, `ops`, `op_profile` or `host_profile`, JSON columns decoded,
        oldest first."""
        if table not in SIDE_TABLES:
            raise ValueError(f"table = {table!r}: must be {', '.join(SIDE_TABLES)}")
        where = where or {}
        sql = f"SELECT * FROM {table}"
        if where:
            sql += " WHERE " + " AND ".join(f"{k} = ?" for k in where)
        return self._read(table, sql + " ORDER BY id", list(where.values()))

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def frame(self, **filters: Any):
        """Runs as a pandas DataFrame (the analysis layer's input), with one column per
        hyperparameter beside the `config` dict (`batch`, `nodes`, ...; `cfg_threads` where a
        key would shadow a run column)."""
        import pandas as pd

        rows = self.runs(**filters)
        return pd.DataFrame([{**r, **hyperparameter_columns(r.get("config"), r)} for r in rows])

    def _read(self, table: str, sql: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        """The decoded rows of a query; a row with a column that cannot be read is left out,
        named in `skipped` and logged (one bad row costs that row, not the command)."""
        if not self.exists():  # a lazy store's file is not made yet: nothing to read
            return []
        try:
            rows = self.conn.execute(sql, list(args)).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # damaged: shows only here
            raise StoreError(f"{self.path}: cannot read table {table}: {e}") from e
        numeric = self._numeric_columns(table)
        out = []
        for r in rows:
            try:
                out.append(_decode(r, table, numeric))
            except _BadRow as bad:
                self._skip(table, r, bad.column, bad.problem)
        return out

    def columns(self, table: str) -> list[str]:
        """The columns of `table` in schema order (empty when it does not exist)."""
        return [c[1] for c in self.conn.execute(f"PRAGMA table_info({table})").fetchall()]

    def _numeric_columns(self, table: str) -> frozenset[str]:
        if table not in self._numeric:
            info = self.conn.execute(f"PRAGMA table_info({table})").fetchall()
            self._numeric[table] = frozenset(
                c[1] for c in info if str(c[2]).upper() in ("INTEGER", "REAL")
            )
        return self._numeric[table]

    def _skip(self, table: str, row: sqlite3.Row, column: str, problem: str) -> None:
        rid = dict(row).get("id")
        entry = {"table": table, "id": rid, "column": column, "problem": problem}
        if entry in self.skipped:  # read again (a second query): named once
            return
        self.skipped.append(entry)
        what = "run" if table == "runs" else f"{table} row"
        log.warning("%s: skipped %s %s: its %s %s", self.path, what, rid, column, problem)

    def measured_with(self) -> dict[str, tuple[str | None, dict[str, Any] | None]]:
        """For the newest attempt of every run key: the sweep it was stored under and the
        settings it was measured with (`env.measured_with`; None where not recorded or not
        readable). A resumed sweep says which stored configurations it keeps (runner/resume.py)."""
        if not self.exists():
            return {}
        sql = (
            "SELECT run_key, sweep, env FROM runs AS r WHERE attempt = "
            "(SELECT MAX(attempt) FROM runs WHERE run_key = r.run_key)"
        )
        found: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
        for key, sweep, env in self.conn.execute(sql).fetchall():
            try:
                settings = json.loads(env).get("measured_with")
            except (TypeError, ValueError, AttributeError):
                settings = None  # a damaged env says nothing
            name = sweep if isinstance(sweep, str) else None
            found[key] = (name, settings if isinstance(settings, dict) else None)
        return found

    def latest_attempts(self) -> dict[str, int]:
        """The newest attempt number of every run key (a claim checks no newer one appeared)."""
        if not self.exists():
            return {}
        sql = "SELECT run_key, MAX(attempt) FROM runs GROUP BY run_key"
        return {k: int(a) for k, a in self.conn.execute(sql).fetchall()}

    def update(self, statements: Sequence[tuple[str, Sequence[Any]]], what: str) -> list[int]:
        """Run `statements` (SQL, parameters) in one IMMEDIATE transaction: all of them or
        none. The number of rows each changed."""
        with self.immediate(what):
            return [self.conn.execute(sql, tuple(params)).rowcount for sql, params in statements]

    # -- baselines (docs/baselines.md) ----------------------------------------------------
    def save_baseline(
        self, name: str, run_ids: Sequence[int], saved_at: str, replace: bool = False
    ) -> bool:
        """Name the runs `run_ids` (row ids of this database) `name` in one transaction, so
        two savers of one name cannot both find it free; False (nothing written) when the name
        is saved already and not `replace`."""
        with self.immediate(f"baseline {name!r}"):
            held = "SELECT 1 FROM baselines WHERE name = ? LIMIT 1"
            if not replace and self.conn.execute(held, (name,)).fetchone():
                self.conn.execute("ROLLBACK")  # taken: nothing written
                return False
            self.conn.execute("DELETE FROM baselines WHERE name = ?", (name,))
            self.conn.executemany(
                "INSERT INTO baselines (name, run_id, saved_at) VALUES (?, ?, ?)",
                [(name, int(i), saved_at) for i in run_ids],
            )
        return True

    def delete_baseline(self, name: str) -> int:
        """Forget the name `name` (its runs stay); how many runs it named."""
        with self.writing(f"deleting baseline {name!r}"):
            cur = self.conn.execute("DELETE FROM baselines WHERE name = ?", (name,))
        return int(cur.rowcount)

    def baselines(self) -> list[dict[str, Any]]:
        """Every baseline: name, runs it names, when it was saved; by name."""
        if not self.exists():
            return []
        sql = (
            "SELECT name, COUNT(*) AS runs, MAX(saved_at) AS saved_at FROM baselines "
            "GROUP BY name ORDER BY name"
        )
        return [dict(zip(("name", "runs", "saved_at"), r, strict=True))
                for r in self.conn.execute(sql).fetchall()]  # fmt: skip

    def baseline_ids(self, name: str) -> list[int]:
        """The row ids the baseline `name` names (empty: no such baseline here)."""
        if not self.exists():
            return []
        sql = "SELECT run_id FROM baselines WHERE name = ? ORDER BY run_id"
        return [int(r[0]) for r in self.conn.execute(sql, (name,)).fetchall()]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._opener = None  # closed stays closed

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Create or upgrade the schema in one EXCLUSIVE transaction: any number of processes may
    open a new or an old database at once; the first does the work, the others wait for it
    (the connection's busy timeout) and find the schema done. The version is read again
    inside the transaction, so no migration is applied twice."""
    version = schema_version(conn)
    _check_version(conn, path, version)
    if version == LATEST:
        return
    try:
        conn.execute("BEGIN EXCLUSIVE")
    except sqlite3.Error as e:
        raise StoreError(
            f"{path}: cannot lock the database to create or upgrade its schema ({e}); "
            "another program holds it"
        ) from e
    step = version
    try:
        version = step = schema_version(conn)  # another process may have done it meanwhile
        _check_version(conn, path, version)
        for step in range(version, LATEST):
            for statement in _statements(MIGRATIONS[step]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {LATEST}")
        conn.execute("COMMIT")
    except sqlite3.Error as e:
        _rollback(conn)
        words = write_failure(path, e)
        raise StoreError(
            words if words else f"{path}: migration to schema v{step + 1} failed: {e}"
        ) from e
    except BaseException:
        _rollback(conn)
        raise


def _check_version(conn: sqlite3.Connection, path: str, version: int) -> None:
    if version > LATEST:
        raise StoreError(
            f"{path}: schema version {version} was written by a newer paradnn "
            f"(this one reads up to {LATEST}); upgrade paradnn or use another --db"
        )
    if version == 0 and _has_tables(conn):
        raise StoreError(f"{path}: not a paradnn database (it has tables but no schema version)")


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _statements(script: str) -> list[str]:
    """A migration's SQL statements one by one (sqlite3 runs one per execute; executescript
    would commit the transaction they must share)."""
    found, buf = [], ""
    for text in script.splitlines(keepends=True):
        buf += text
        if sqlite3.complete_statement(buf):
            found.append(buf.strip())
            buf = ""
    if buf.strip():
        found.append(buf.strip())
    return found


# SQLite's primary result codes a failed write can carry (sqlite3.h)
_READONLY, _IOERR, _FULL, _CANTOPEN = 8, 10, 13, 14


def write_failure(
    path: str, e: sqlite3.Error, conn: sqlite3.Connection | None = None
) -> str | None:
    """A failed write in the user's words, naming the file and the cause: a full disk (with
    what is free where; or the database's own page limit, `PRAGMA max_page_count`, when
    `conn` shows it reached), a file or folder made read-only, a write the file system
    refused (a quota, a failing disk); None for any other error."""
    code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
    folder = Path(path).resolve().parent
    if code == _FULL:
        limit = _page_limit(conn)
        if limit is not None:
            return f"{path}: the database reached its size limit (PRAGMA max_page_count = {limit})"
        return f"{path}: the disk is full ({_free(folder)})"
    if code == _READONLY:
        return f"{path}: the database or its folder {folder} became read-only ({e})"
    if code in (_IOERR, _CANTOPEN):
        return (
            f"{path}: the file system refused a write ({e}): over its quota, out of space or "
            f"failing ({_free(folder)})"
        )
    return None


def _page_limit(conn: sqlite3.Connection | None) -> int | None:
    """The connection's page limit when it was set below SQLite's own (so that a full
    database, not a full disk, is the likelier cause), else None."""
    if conn is None:
        return None
    try:
        limit = int(conn.execute("PRAGMA max_page_count").fetchone()[0])
        fresh = sqlite3.connect(":memory:")
        try:
            default = int(fresh.execute("PRAGMA max_page_count").fetchone()[0])
        finally:
            fresh.close()
    except sqlite3.Error:
        return None
    return limit if limit < default else None


def _free(folder: Path) -> str:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return f"free space in {folder} unknown"
    return f"{free:,} bytes free in {folder}"


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table'").fetchone()[0] > 0


# The tables each schema version has (a database missing one was damaged by hand).
_TABLES = {1: ("runs",), 3: ("ceilings", "ops", "op_profile"), 11: ("host_profile",)}
_TABLES[15] = ("claims",)
_TABLES[17] = ("baselines",)  # issue 45: was left out, so a file without it passed


def check_owned(conn: sqlite3.Connection, path: str) -> int:
    """The schema version of a database paradnn may use; a StoreError, before anything is
    changed, for another program's database, a newer paradnn's, or one missing a table."""
    version = schema_version(conn)
    if version > LATEST or (version == 0 and _has_tables(conn)):
        migrate(conn, path)  # raises, naming which of the two it is; changes nothing
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for v, ts in _TABLES.items() if version >= v for t in ts if t not in names]
    if missing:
        raise StoreError(
            f"{path}: a damaged paradnn database (schema version {version}) without the "
            f"table{'s' if len(missing) > 1 else ''} {', '.join(missing)}; use another --db"
        )
    return version


def _check_intact(conn: sqlite3.Connection, path: str) -> None:
    """SQLite's quick_check (every page readable, the b-trees well formed): a truncated or
    damaged file is one line now, not a failed write after the work."""
    try:
        found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)")]
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # too damaged to be checked
        raise StoreError(f"{path}: a damaged database ({e}); use another --db") from e
    if found != ["ok"]:
        lines = [ln for f in found for ln in f.splitlines() if ln and not ln.startswith("***")]
        raise StoreError(f"{path}: a damaged database ({'; '.join(lines)}); use another --db")


def _ro_connect(path: str) -> sqlite3.Connection:
    """A read-only connection that creates nothing beside the file: a WAL database without a
    -wal file (no writer has it open) is read as an immutable file, so no -wal/-shm appear.
    One with a -wal but no -shm in a folder that cannot be written (a copy on a read-only
    file system) cannot be read in place: see `_without_shm`."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    if not Path(path + "-wal").exists():
        uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as e:
        code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
        shm, folder = Path(path + "-shm"), Path(path).resolve().parent
        if code == _CANTOPEN and not shm.exists() and not paths.writable(folder):
            conn.close()
            return _without_shm(path)
    return conn  # a query meets any other error as before


_WARNED: set[str] = set()  # databases whose reading was said once in this process


def _warn_once(path: str, message: str, *args: object) -> None:
    if path not in _WARNED:
        _WARNED.add(path)
        log.warning(message, *args)


class _Copied(sqlite3.Connection):
    """A connection to a copy of a database in a temporary folder, removed when it closes."""

    folder = ""

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _without_shm(path: str) -> sqlite3.Connection:
    """A WAL database whose folder cannot be written and which has no -shm file: SQLite
    reads its -wal only with a -shm (which it cannot make there). With an empty -wal it is
    read as an immutable file and nothing is missed; a -wal holding results is read from a
    copy of both files in a temporary folder, where SQLite replays it. Either way a warning
    says so."""
    wal = Path(path + "-wal")
    size = wal.stat().st_size
    why = "its folder cannot be written and it has no -shm file"
    if size == 0:
        _warn_once(path, "%s: read as an immutable file (%s; its -wal is empty)", path, why)
        uri = Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    folder = tempfile.mkdtemp(prefix="paradnn-ro-")
    copy = Path(folder) / Path(path).name
    try:
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, str(copy) + "-wal")
    except OSError as e:
        shutil.rmtree(folder, ignore_errors=True)
        raise StoreError(
            f"{path}: {why}, and it cannot be copied to read its -wal ({e.strerror or e})"
        ) from None
    _warn_once(
        path,
        "%s: read from a copy in a temporary folder (%s, so its -wal of %s bytes cannot be "
        "read in place)",
        path,
        why,
        f"{size:,}",
    )
    conn = sqlite3.connect(str(copy), timeout=30, isolation_level=None, factory=_Copied)
    conn.folder = folder
    return conn


def _sqlite_error(path: str, e: sqlite3.Error | UnicodeDecodeError) -> StoreError:
    if isinstance(e, UnicodeDecodeError):
        return StoreError(
            f"{path}: a damaged database (its schema is not UTF-8 text); use another --db"
        )
    words = write_failure(path, e)
    if words is not None and (getattr(e, "sqlite_errorcode", 0) & 0xFF) != _CANTOPEN:
        return StoreError(f"{words}; nothing was changed")
    return StoreError(f"{path}: cannot open as a SQLite database: {e}")


def _existing_file(path: str) -> Path:
    """`path` when it is a file a database could be in; a StoreError for a folder."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"{path}: is a folder, not a database file; use another --db")
    return p


def check_writable(path: str | Path) -> None:
    """What a command that writes `path` checks before any work, changing nothing: an existing
    file must be a paradnn database of a schema this paradnn reads (or empty: 0 bytes, or
    SQLite without tables, which it adopts), and the file and its folder (WAL keeps -wal and
    -shm files beside it) must be writable. A missing file needs a folder it can be made in."""
    path = str(path)
    if path == ":memory:":
        return
    if path == "":
        raise StoreError("--db = '': must be a database file path")
    paths.plain("--db", path)  # before SQLite sees it: no newline or other control character
    p = _existing_file(path)
    if p.exists():
        if p.stat().st_size:
            _check_existing(path)
        if not paths.writable(p):
            raise StoreError(f"{path}: the database is read-only; results cannot be stored")
        if not paths.writable(p.parent):
            raise StoreError(
                f"{path}: its folder {p.parent} is read-only (SQLite keeps -wal and -shm files "
                "there); results cannot be stored"
            )
        return
    found = paths.nearest_existing(p.parent)  # the folder it would be made in (or under)
    if not found.is_dir():
        raise StoreError(f"{path}: {found} is a file, not a folder; results cannot be stored")
    if not paths.writable(found):
        raise StoreError(f"{path}: the folder {found} is read-only; results cannot be stored")


def _check_existing(path: str, tries: int = 3) -> None:
    """`check_owned` and `_check_intact` on an existing file. A file that changed while it was
    read (another process creating or upgrading the same database) is read again: what it
    looked like half-written is not a verdict on it."""
    for left in range(tries - 1, -1, -1):
        before = _file_state(path)
        try:
            conn = _ro_connect(path)
            try:
                check_owned(conn, path)
                _check_intact(conn, path)  # a truncated file: refused before the work
            finally:
                conn.close()
            return
        except (sqlite3.Error, UnicodeDecodeError, StoreError) as e:
            if left and _file_state(path) != before:
                time.sleep(0.2)
                continue
            if isinstance(e, StoreError):
                raise
            raise _sqlite_error(path, e) from e


def _file_state(path: str) -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of the database and its -wal (None: absent)."""
    found = []
    for f in (path, path + "-wal"):
        try:
            st = Path(f).stat()
            found.append((st.st_size, st.st_mtime_ns))
        except OSError:
            found.append(None)
    return tuple(found)


def open_store(
    path: str | Path = DEFAULT_DB, *, readonly: bool = False, lazy: bool = False
) -> Store:
    """The database at `path`. `readonly`: an in-memory snapshot of it (older schemas migrated
    in the copy), the file and its -wal/-shm left byte for byte as they were; a missing, empty
    or foreign file is a StoreError. Otherwise the file is checked first (`check_writable`)
    and then created or migrated, in WAL mode; with `lazy`, a missing file is created only when
    something is first written to it, so a command refused before then leaves no file."""
    path = str(path)
    if path == ":memory:":
        conn = sqlite3.connect(path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        migrate(conn, path)
        return Store(conn, path)
    if path == "":
        raise StoreError("--db = '': must be a database file path")
    if readonly:
        return _open_readonly(path)
    check_writable(path)
    if lazy and not Path(path).exists():  # made when first written: a refusal leaves none
        return Store(None, path, opener=lambda: _open_writer(path, create=True))
    return Store(_open_writer(path, create=True), path)


BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another's lock (a schema being made)


def _open_writer(path: str, *, create: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode with the schema created or upgraded (`migrate`)."""
    if create:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{path}: its folder cannot be created ({e.strerror or e})") from None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.text_factory = _text
        conn.row_factory = sqlite3.Row
        _wal(conn)
        conn.execute("PRAGMA synchronous=FULL")
        migrate(conn, path)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise _sqlite_error(path, e) from e
    return conn


def _wal(conn: sqlite3.Connection) -> None:
    """WAL journaling. Switching a new file to it needs a moment alone with the file: while
    another process creates the same database SQLite may answer "locked" at once (its busy
    handler is not asked for this), so wait and try again within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _open_readonly(path: str) -> Store:
    paths.plain("--db", path)
    p = _existing_file(path)
    if not p.exists():
        raise StoreError(f"{path}: no such database (run `paradnn run` first, or pass --db)")
    if p.stat().st_size == 0:
        raise EmptyDatabase(f"{path}: an empty file (0 bytes), not a paradnn database yet")
    mem = sqlite3.connect(":memory:", isolation_level=None)
    mem.text_factory = _text  # a damaged schema's names are read, then found wanting
    try:
        _snapshot(path, mem)
        _check_intact(mem, path)
        if schema_version(mem) == 0:
            raise EmptyDatabase(f"{path}: an empty SQLite database, not a paradnn one yet")
        migrate(mem, path)  # an older schema: upgraded in the copy only
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # damage found past the checks
        mem.close()
        raise StoreError(f"{path}: a damaged database ({e}); use another --db") from e
    except BaseException:
        mem.close()
        raise
    mem.execute("PRAGMA query_only = ON")
    mem.row_factory = sqlite3.Row
    return Store(mem, path)


def _snapshot(path: str, mem: sqlite3.Connection) -> None:
    """Copy the database at `path` into `mem` in one read transaction (a consistent snapshot
    beside a running sweep), after checking it is paradnn's: a foreign one is not read."""
    try:
        src = _ro_connect(path)
        try:
            check_owned(src, path)
            src.backup(mem)
        finally:
            src.close()
    except (sqlite3.Error, UnicodeDecodeError) as e:  # the latter: SQLite's own message
        raise _sqlite_error(path, e) from e  # about a damaged schema is not UTF-8
