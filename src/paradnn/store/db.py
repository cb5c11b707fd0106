"""Open, migrate, write and read the result database.

One transaction per result and WAL journaling: a crash or kill -9 loses at most the run in
flight, and readers (the report, `paradnn results`) never block a running sweep.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paradnn.errors import StoreError
from paradnn.records import RECORD_FIELDS, RunRecord, hyperparameter_columns
from paradnn.store.schema import LATEST, MIGRATIONS

DEFAULT_DB = "paradnn.db"
JSON_COLUMNS = (
    *("config", "samples", "env", "flags", "nulls", "energy", "quality_reasons", "load"),
    "parallel",  # data-parallel detail (records.Parallel)
    *("graph_break_reasons", "compile_detail"),  # modes (docs/modes.md)
    "infeed",  # data infeed (docs/infeed.md)
    "xla_detail",  # the JAX backend (docs/jax.md)
)
BOOL_COLUMNS = ("converged", "emulated", "cudagraphs", "xla_flops_mismatch")
BOOL_COLUMNS += ("pin_memory", "persistent_workers", "input_bound")  # docs/infeed.md
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


class Store:
    def __init__(self, conn: sqlite3.Connection, path: str):
        self.conn = conn
        self.path = path

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
        """The newest status of every task key in `ceilings` or `ops` (what a re-run skips)."""
        if table not in ("ceilings", "ops"):
            raise ValueError(f"table = {table!r}: must be ceilings or ops")
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
        return [self._decode(r) for r in self.conn.execute(sql, args)]

    def insert_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert rows into `ceilings`, `ops` or `op_profile` in one transaction; dict and list
        values are stored as JSON. Returns the new ids."""
        if table not in ("ceilings", "ops", "op_profile"):
            raise ValueError(f"table = {table!r}: must be ceilings, ops or op_profile")
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
        """Rows of `ceilings`, `ops` or `op_profile`, JSON columns decoded, oldest first."""
        if table not in ("ceilings", "ops", "op_profile"):
            raise ValueError(f"table = {table!r}: must be ceilings, ops or op_profile")
        where = where or {}
        sql = f"SELECT * FROM {table}"
        if where:
            sql += " WHERE " + " AND ".join(f"{k} = ?" for k in where)
        out = []
        for r in self.conn.execute(sql + " ORDER BY id", list(where.values())):
            d = dict(r)
            for k in ("detail", "env", "shape", "samples", "nulls", "shapes"):
                if isinstance(d.get(k), str):
                    d[k] = json.loads(d[k])
            out.append(d)
        return out

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def frame(self, **filters: Any):
        """Runs as a pandas DataFrame (the analysis layer's input), with one column per
        hyperparameter beside the `config` dict (`batch`, `nodes`, ...; `cfg_threads` where a
        key would shadow a run column)."""
        import pandas as pd

        rows = self.runs(**filters)
        return pd.DataFrame([{**r, **hyperparameter_columns(r.get("config"), r)} for r in rows])

    @staticmethod
    def _decode(row: sqlite3.Row) -> dict[str, Any]:
        d = dict(row)
        for col in JSON_COLUMNS:
            if d.get(col) is not None:
                d[col] = json.loads(d[col])
        for col in BOOL_COLUMNS:
            if d.get(col) is not None:
                d[col] = bool(d[col])
        return d

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


def open_store(path: str | Path = DEFAULT_DB, *, readonly: bool = False) -> Store:
    path = str(path)
    if readonly and path != ":memory:" and not Path(path).exists():
        raise StoreError(f"{path}: no such database (run `paradnn run` first, or pass --db)")
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)  # explicit transactions
        conn.row_factory = sqlite3.Row
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
        migrate(conn, path)
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path}: cannot open as a SQLite database: {e}") from e
    return Store(conn, path)
