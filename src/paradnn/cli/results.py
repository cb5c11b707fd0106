"""Reading what is known: stored `results`, the model `families`, the `platforms` database."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from paradnn import api
from paradnn.cli import tables
from paradnn.cli.common import (
    LIMIT,
    DbOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    choice,
    enum_choice,
    flag_option,
    int_option,
    out,
    parsed,
    text_option,
    words_option,
)
from paradnn.cli.options import filters, takes
from paradnn.config import MAX_THREADS
from paradnn.records import QUALITIES, STATUSES
from paradnn.store import DEFAULT_DB
from paradnn.validate import INT64_MAX

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

    from paradnn.api.returns import FamilyInfo


class Table_(StrEnum):
    runs = "runs"
    ceilings = "ceilings"
    ops = "ops"
    op_profile = "op_profile"
    host_profile = "host_profile"


StatusOpt = words_option(
    str | None, "--status", choice("--status", STATUSES), "Only this status: {values}."
)
SweepOpt = text_option("--sweep", "Only runs of this preset/sweep.")
QualityOpt = words_option(
    str | None, "--quality", choice("--quality", QUALITIES), "Only runs of this quality: {values}."
)
RowsOpt = parsed(int | None, "--limit", LIMIT, "At most this many rows.")
ChosenOpt = flag_option(
    "--chosen",
    "Only each run's chosen attempt: its best good attempt, else its latest (the one compare, "
    "report and findings use; docs/runner.md#attempts-which-one-counts).",
)
TABLE = enum_choice("--table", Table_)
MADE_BY = {"ceilings": "calibrate", "ops": "paradnn ops", "host_profile": "calibrate"}
TableOpt = words_option(Table_, "--table", TABLE, "Which table: {values}.", notes=MADE_BY)
RunIdOpt = int_option("--run", 1, INT64_MAX, "With --table op_profile: one run's profile.")
ThreadsFilterOpt = int_option("--threads", 1, MAX_THREADS, "Only runs at this thread count.")
AttemptOpt = int_option(
    "--attempt", 1, INT64_MAX, "Only this attempt of each run (1: the first measurement)."
)


@takes(where=filters())
def results(
    db: DbOpt = DEFAULT_DB,
    fmt: FormatOpt = Format.table,
    family: FamilyOpt = None,
    status: StatusOpt = None,
    sweep: SweepOpt = None,
    quality: QualityOpt = None,
    limit: RowsOpt = None,
    chosen: ChosenOpt = False,
    table: TableOpt = "runs",
    run_id: RunIdOpt = None,
    threads: ThreadsFilterOpt = None,
    attempt: AttemptOpt = None,
    *,
    where: dict[str, Any],
) -> None:
    """Show stored results: training runs (default), ceilings, op benchmarks, op profiles or
    host profiles.

    The runs table shows the settings in which its rows differ (mode, threads, data, backend,
    attempt, …) and names the ones they share above it; --precision, --mode, --backend,
    --data, --procs, --threads, --attempt and the other filters keep only the runs with that
    value."""
    if table != "runs":
        rows = api.side_table(table, db, run_id=run_id)
        rows = rows[:limit] if limit else rows
        if fmt is Format.table:
            out.print(
                tables.side_table(
                    table, rows, title=f"{db}: {len(rows)} {table} rows", width=out.width
                )
            )
            if table == "ceilings":
                from paradnn.cli.ceilings import say_beaten

                say_beaten(db)
            return
    else:
        stored = {"family": family, "status": status, "sweep": sweep, "quality": quality}
        where = {**where, "threads": threads, "attempt": attempt}
        rows = api.results(db, chosen=chosen, where=where, limit=limit, **stored)
    if fmt is Format.csv:
        sys.stdout.write(tables.to_csv(rows))
    elif fmt is Format.json:
        meta = api.store_info(db).as_dict()
        sys.stdout.write(tables.to_json(rows.as_dict(), table=str(table), **meta) + "\n")
    else:
        out.print(tables.rich_table(rows, title=f"{db}: {len(rows)} runs", width=out.width))


def families(as_json: JsonOpt = False) -> None:
    """List the model families, their config fields (with defaults) and the paper's space."""
    info = api.family_info()
    if as_json:
        out.print_json(data=[f.as_dict() for f in info])
        return
    for table in _family_tables(info):
        out.print(table)


def _family_tables(info: list[FamilyInfo]) -> list[Table]:
    """One table per generated family (fields, defaults, paper space); one of the real models."""
    from rich.table import Table

    out_tables = []
    for fam in (f for f in info if f.kind != "real"):
        label = fam.space_label
        n = fam.paper_configs
        size = f"{n:,} paper configs" if label.startswith("paper") else f"{n:,} in its space"
        t = Table(
            title=f"{fam.name}: {fam.title}  ({size})",
            title_justify="left",
            header_style="bold",
        )
        t.add_column("field")
        t.add_column("default", justify="right")
        t.add_column(label)
        for name, default in fam.fields.items():
            space = fam.paper_space.get(name, [])
            t.add_row(name, str(default), ", ".join(map(str, space)))
        out_tables.append(t)
    real = [f for f in info if f.kind == "real"]
    if real:
        t = Table(
            title="Real-world models (docs/models.md)", title_justify="left", header_style="bold"
        )
        for col in ("name", "model", "params", "train FLOP/step", "defaults"):
            t.add_column(col, justify="right" if col in ("params", "train FLOP/step") else "left")
        for f in real:
            t.add_row(
                f.name,
                f.title,
                f"{f.default_params:,}",
                tables.si(f.default_train_flops),
                " ".join(f"{k}={v}" for k, v in f.fields.items()),
            )
        out_tables.append(t)
    return out_tables


def platforms(as_json: JsonOpt = False) -> None:
    """The platform database (datasheet figures with sources) and what this machine is."""
    from paradnn import platforms as plat

    rows = plat.platform_table_rows()
    local = plat.describe_local("cpu")
    if api.device_capacity("cuda")[0] is not None:  # NVML sees a GPU
        local = {"cpu": local, "cuda": plat.describe_local("cuda")}
    if as_json:
        out.print_json(data={"platforms": rows, "local": local})
        return
    out.print(tables.platforms_table(rows, width=out.width))
    out.print_json(data=local)
