"""Analysis of stored runs: the HTML report and the speedup comparison (torch-free)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from paradnn.errors import ConfigError
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.analysis import Comparison
    from paradnn.report import Report


Databases = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def databases(db: Databases | None, dbs: Databases | None, function: str) -> list[str]:
    """The databases a call reads: `db`, one path or several, as every api function names it
    (default: paradnn.db). `dbs` is its old name in `report` and `compare`, still taken with
    a DeprecationWarning; both at once are refused."""
    if dbs is not None:
        warnings.warn(
            f"api.{function}(dbs=...) is deprecated: pass db= (one path or a list of paths), "
            "the name every api function uses",
            DeprecationWarning,
            stacklevel=3,
        )
        if db is not None:
            raise ConfigError("dbs", dbs, "give db= only (dbs= is its deprecated old name)")
        db = dbs
    if db is None:
        return [DEFAULT_DB]
    paths = [db] if isinstance(db, str | os.PathLike) else list(db)
    for p in paths:
        if not isinstance(p, str | os.PathLike):
            raise ConfigError("db", p, "a database path (text) or a list of them")
    return [os.fspath(p) for p in paths] or [DEFAULT_DB]


def report(
    db: Databases | None = None,
    out: str = "report",
    progress: Callable[[str], None] | None = None,
    include_noisy: bool = False,
    what_if: Sequence[str] | None = None,
    *,
    dbs: Databases | None = None,
) -> Report:
    """Write the HTML report (+ figures/ and tables/) of one or more databases (`db`: a path
    or a list) into `out`. Noisy runs are left out of every figure and comparison unless
    `include_noisy`. `what_if`: platform ids or chip files whose predictions join it, marked
    predicted. `dbs`: db's deprecated old name."""
    from paradnn import report as report_mod

    return report_mod.build(
        databases(db, dbs, "report"),
        out,
        progress=progress,
        include_noisy=include_noisy,
        what_if=what_if,
    )


def compare(
    db: Databases | None = None,
    by: str | None = None,
    a: str | None = None,
    b: str | None = None,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
    *,
    dbs: Databases | None = None,
) -> Comparison:
    """Speedup of group b over group a (by platform, precision, version, db, attempt, …) per
    matched config of the databases `db` (a path or a list), with a bootstrap CI and a call
    each; noisy runs left out unless asked. `dbs`: db's deprecated old name."""
    from paradnn import analysis

    for name, value in (("by", by), ("a", a), ("b", b)):
        if value is None:
            raise ConfigError(name, None, "required: compare(db, by=..., a=..., b=...)")
    data = analysis.load(databases(db, dbs, "compare"))
    return analysis.compare(
        data, by, a, b, metric=metric, family=family, include_noisy=include_noisy
    )
