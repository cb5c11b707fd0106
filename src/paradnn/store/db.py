"""Open, migrate, write and read the result database.

One transaction per result and WAL journaling: a crash or kill -9 loses at most the run in
flight, and readers (the report, `paradnn results`) never block a running sweep.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paradnn import paths
from paradnn.axes import AXES
from paradnn.errors import StoreError
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
    def __init__(self, conn: sqlite3.Connection, path: str):
        self.conn = conn
        self.conn.text_factory = _text
        self.path = path
        # Rows a read left out because a column could not be read (hand-edited or damaged):
        # {"table", "id", "column", "problem"}, each also logged once as a warning.
        self.skipped: list[dict[str, Any]] = []
        self._numeric: dict[str, frozenset[str]] = {}

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
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            cur = self.conn.execute(sql, [*(row[c] for c in cols), rec.run_key])
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
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
        sql = (
            f"SELECT task_key, status FROM {table} AS t WHERE task_key IS NOT NULL AND id = "
            f"(SELECT MAX(id) FROM {table} WHERE task_key = t.task_key)"
        )
        return dict(self.conn.execute(sql).fetchall())

    def latest_status(self) -> dict[str, str]:
        """The status of the newest attempt of every run key (what a resumed sweep skips)."""
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
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                cols = list(row)
                vals = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in row.values()]
                sql = (
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
                )
                ids.append(int(self.conn.execute(sql, vals).lastrowid))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return ids

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

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: str) -> None:
    version = schema_version(conn)
    if version > LATEST:
        raise StoreError(
            f"{path}: schema version {version} was written by a newer paradnn "
            f"(this one reads up to {LATEST}); upgrade paradnn or use another --db"
        )
    if version == 0 and _has_tables(conn):
        raise StoreError(f"{path}: not a paradnn database (it has tables but no schema version)")
    for v in range(version, LATEST):
        try:
            conn.executescript(
                "BEGIN;\n" + MIGRATIONS[v] + f"\nPRAGMA user_version = {v + 1};\nCOMMIT;"
            )
        except sqlite3.Error as e:
            if conn.in_transaction:
                conn.rollback()
            raise StoreError(f"{path}: migration to schema v{v + 1} failed: {e}") from e


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table'").fetchone()[0] > 0


# The tables each schema version has (a database missing one was damaged by hand).
_TABLES = {1: ("runs",), 3: ("ceilings", "ops", "op_profile"), 11: ("host_profile",)}


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
    -wal file (no writer has it open) is read as an immutable file, so no -wal/-shm appear."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    if not Path(path + "-wal").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)


def _sqlite_error(path: str, e: sqlite3.Error | UnicodeDecodeError) -> StoreError:
    if isinstance(e, UnicodeDecodeError):
        return StoreError(
            f"{path}: a damaged database (its schema is not UTF-8 text); use another --db"
        )
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
    p = _existing_file(path)
    if p.exists():
        if p.stat().st_size:
            try:
                conn = _ro_connect(path)
                try:
                    check_owned(conn, path)
                    _check_intact(conn, path)  # a truncated file: refused before the work
                finally:
                    conn.close()
            except (sqlite3.Error, UnicodeDecodeError) as e:
                raise _sqlite_error(path, e) from e
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


def open_store(path: str | Path = DEFAULT_DB, *, readonly: bool = False) -> Store:
    """The database at `path`. `readonly`: an in-memory snapshot of it (older schemas migrated
    in the copy), the file and its -wal/-shm left byte for byte as they were; a missing, empty
    or foreign file is a StoreError. Otherwise the file is checked first (`check_writable`)
    and then created or migrated, in WAL mode."""
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
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"{path}: its folder cannot be created ({e.strerror or e})") from None
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)  # explicit transactions
        conn.text_factory = _text
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        migrate(conn, path)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise _sqlite_error(path, e) from e
    return Store(conn, path)


def _open_readonly(path: str) -> Store:
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
