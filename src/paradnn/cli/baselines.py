"""`paradnn baseline save|list|delete` and `paradnn history`: named sets of runs to compare
against later (`compare --baseline NAME`) and one configuration across time
(docs/baselines.md). Each command calls one api function."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from paradnn import api
from paradnn.cli import tables
from paradnn.cli.common import (
    AssignmentsArg,
    DbOpt,
    DbsOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    out,
)
from paradnn.cli.options import filters, takes
from paradnn.store import DEFAULT_DB

app = typer.Typer(
    help="Name a set of runs (main, before-upgrade, a commit) to compare against later with "
    "`paradnn compare --baseline NAME`.",
    no_args_is_help=True,
)
NameArg = Annotated[
    str, typer.Argument(help="The baseline's name (e.g. main).", show_default=False)
]


@app.command("save")
@takes(where=filters())
def save(
    name: NameArg,
    db: DbOpt = DEFAULT_DB,
    family: FamilyOpt = None,
    sweep: Annotated[
        str | None, typer.Option("--sweep", help="Only runs of this preset/sweep.")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a baseline of this name.")
    ] = False,
    *,
    where: dict[str, Any],
) -> None:
    """Name the ok runs of --db NAME (each config's chosen attempt), narrowed by the filters.

    Example: `paradnn baseline save main --db ci.db`, then after a change
    `paradnn compare --baseline main --db ci.db --fail-if-slower 5`."""
    b = api.baseline_save(name, db, replace=replace, where=where, family=family, sweep=sweep)
    out.print(f"Baseline [bold]{escape(b.name)}[/]: {b.runs} runs of {escape(b.db)}.")


@app.command("list")
def list_(db: DbOpt = DEFAULT_DB, fmt: FormatOpt = Format.table) -> None:
    """The baselines saved in --db: name, runs, when saved."""
    found = [b.as_dict() for b in api.baseline_list(db)]
    if fmt is not Format.table:
        _rows(found, fmt)
        return
    t = Table(title=f"{db}: {len(found)} baselines", header_style="bold")
    for col in ("name", "runs", "saved at"):
        t.add_column(col, justify="right" if col == "runs" else "left")
    for b in found:
        t.add_row(escape(b["name"]), str(b["runs"]), str(b["saved_at"])[:19])
    out.print(t)


@app.command("delete")
def delete(name: NameArg, db: DbOpt = DEFAULT_DB) -> None:
    """Forget a baseline (its runs stay in the database)."""
    b = api.baseline_delete(name, db)
    out.print(f"Deleted baseline [bold]{escape(b.name)}[/] ({b.runs} runs; the runs stay).")


def _rows(found: list[dict[str, Any]], fmt: Format) -> None:
    if fmt is Format.json:
        sys.stdout.write(tables.json.dumps(found, indent=1, default=str) + "\n")
    else:
        import csv

        w = csv.DictWriter(sys.stdout, fieldnames=list(found[0]) if found else ["name"])
        w.writeheader()
        w.writerows(found)


@takes(where=filters())
def history(
    family: Annotated[
        str | None,
        typer.Argument(help="The family; none with --model.", show_default=False),
    ] = None,
    assignments: AssignmentsArg = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="PKG.MODULE:FACTORY", help="A model of your own (bench --model)."
        ),
    ] = None,
    db: DbsOpt = None,
    fmt: FormatOpt = Format.table,
    *,
    where: dict[str, Any],
) -> None:
    """One configuration across time: every stored attempt, oldest first, with its torch and
    paradnn versions, host, the baselines naming it and its step time's 95% CI.

    Fields left out take the family's defaults, as in `bench`. Example:
    `paradnn history fc layers=4 nodes=1024 batch=128 -p fp32 --db a.db --db b.db`."""
    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family or model} config")
    found = api.history(family, values, model=model, db=db or [DEFAULT_DB], where=where)
    if fmt is not Format.table:
        _rows(list(found), fmt)
        return
    out.print(history_table(list(found), f"{family or model} {' '.join(assignments or [])}"))
    if not found:
        out.print("No stored attempt of this configuration (check the fields and --db).")


def history_table(rows: list[dict[str, Any]], what: str) -> Any:
    """`history`'s table, fitted to the terminal (cli/fit.py): the step time, status and when
    always; the host, versions and baselines go first as it narrows (named under the table)."""
    from paradnn.cli.fit import Column, table

    def col(header: str, cells: list[str], **kw: Any) -> Column:
        return Column(header, tuple(cells), **kw)

    def attempt(r: dict[str, Any]) -> str:
        return f"{r['attempt']}" + ("" if r["chosen"] else " (not chosen)")

    columns = [
        col("started", [str(r["started_at"])[:16].replace("T", " ") for r in rows], number=True),
        col("prec", [str(r["precision"]) for r in rows]),
        col("torch", [str(r["torch_version"] or "—") for r in rows], drop=3),
        col("paradnn", [str(r["paradnn_version"] or "—") for r in rows], drop=1),
        col("host", [escape(str(r["hostname"] or "—")) for r in rows], drop=2),
        col("attempt", [attempt(r) for r in rows], justify="right"),
        col("status", [str(r["status"]) for r in rows]),
        col("quality", [str(r["quality"] or "—") for r in rows], drop=4),
        col("step ms (±95% CI)", [tables._ms(r) for r in rows], justify="right", number=True),
        col(
            "examples/s",
            [tables.si(r["examples_per_s"]) if r["examples_per_s"] is not None else "—"
             for r in rows],
            justify="right",
            number=True,
        ),
        col("baselines", [escape(r["baselines"] or "") for r in rows], drop=5),
    ]  # fmt: skip
    return table(columns, out.width, title=f"{what}: {len(rows)} attempts")
