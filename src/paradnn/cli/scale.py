"""`paradnn scale`: one configuration at N = 1, 2, … data-parallel ranks (docs/scaling.md)."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from paradnn import api, families
from paradnn.axes import BY_FIELD
from paradnn.cli import tables
from paradnn.cli.common import AssignmentsArg, DbOpt, ForceRunOpt, flag_option, out
from paradnn.cli.options import MEASURE, SWEEP, Measure, comma_list, study, takes
from paradnn.cli.progress import exit_if_nothing_measured, say, warn_noisy
from paradnn.config import SweepSettings
from paradnn.errors import ConfigError, OptionError
from paradnn.measure.timer import progress_words
from paradnn.records import Status
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.scaling import Scaled
    from paradnn.runner.supervisor import Event


def parse_procs(text: str) -> list[int]:
    """`1,2,4` → [1, 2, 4]: the --procs of `scale` (api.scaling.check_procs's rules), one
    line naming --procs and the value otherwise."""
    from paradnn.api.scaling import check_procs

    axis = BY_FIELD["procs"]
    values = comma_list(axis.flag, text, axis.low or 1, axis.high or 1)
    try:
        return check_procs(values)
    except ConfigError as e:
        raise OptionError("--procs", text, e.allowed) from None


TableJsonOpt = flag_option("--json", "Print the scaling table as JSON.")


@takes(
    axes=study(fields=("strategy", "scaling", "precision", "optimizer")),
    measure=MEASURE.only("device", "threads", "min_time", "max_time", "allow_emulated"),
    settings=SWEEP.only("timeout"),
)
def scale(
    family: Annotated[str, typer.Argument(help=f"Model family: {', '.join(families.names())}.")],
    assignments: AssignmentsArg = None,
    procs: Annotated[
        str,
        typer.Option("--procs", help="Process counts, comma-separated (N = 1 first), each once."),
    ] = "1,2",
    db: DbOpt = DEFAULT_DB,
    as_json: TableJsonOpt = False,
    force: ForceRunOpt = False,
    *,
    axes: dict[str, Any],
    measure: Measure,
    settings: SweepSettings,
) -> None:
    """Measure one configuration at each N data-parallel processes; print speedup, efficiency,
    Karp–Flatt, the all-reduce's bandwidth and the simulator's error against them. Refused
    before any work like `bench` (a precision the device lacks, memory that cannot fit); exit
    1 when no run measured anything."""
    from paradnn.validate import parse_assignments

    values = parse_assignments(assignments or [], what=f"{family} config")
    ns = parse_procs(procs)
    last = [0.0]

    def heard(e: Event) -> None:
        import time

        if e.kind == "progress" and e.progress and time.monotonic() - last[0] >= 2.0:
            last[0] = time.monotonic()
            say(f"scale {family}: {progress_words(e.progress)}")

    res = api.scale(
        family,
        values,
        procs=ns,
        timeout_s=settings.timeout_s,
        db=db,
        on_event=heard,
        force=force,
        **axes,
        **measure.fields(),
    )
    rows = [r.as_dict() for r in res.records]
    if as_json:
        shown = res.table.drop(columns=["allreduce_ladder"], errors="ignore")
        sys.stdout.write(shown.to_json(orient="records") + "\n")
        exit_if_nothing_measured(r["status"] for r in rows)
        return
    out.print(
        tables.rich_table(rows, title=f"paradnn scale {family}: {len(rows)} runs", width=out.width)
    )
    for r in rows:
        if r["status"] != Status.OK:
            out.print(f"N = {r['procs']}: [bold]{r['status']}[/]: {escape(str(r['error']))}")
    for line in lines(res):
        out.print(line)
    warn_noisy(rows)
    db = escape(db)
    out.print(f"Stored in [bold]{db}[/]. The report's scaling section: `paradnn report --db {db}`.")
    exit_if_nothing_measured(r["status"] for r in rows)


def _ms(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{1e3 * x:.3g} ms"


def _bw(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x / 1e9:.3g} GB/s"


def _x(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}×"


def _share(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0%}"


def lines(res: Scaled) -> list[str]:
    """One line per N > 1: speedup, efficiency, e, the all-reduce and its bandwidths."""
    out_lines = []
    for _, r in res.table.iterrows():
        ci = (
            tables.ci_text(tables.reach(r.speedup, r.speedup_low, r.speedup_high)) + " (95% CI)"
            if r.speedup_low is not None and not math.isnan(r.speedup_low) and r.speedup
            else ""
        )
        out_lines.append(
            f"N = {r.procs} ({r.strategy}, {r.scaling}): speedup {r.speedup:.2f}×{ci}, "
            f"efficiency {r.efficiency:.0%}, Karp–Flatt e = {r.karp_flatt:.3f}; step "
            f"{_ms(r.step_time_s)}, no_sync compute {_ms(r.compute_nosync_s)}, all-reduce of "
            f"{(r.allreduce_bytes or 0) / 1e6:.3g} MB {_ms(r.allreduce_s)} (busbw "
            f"{_bw(r.allreduce_busbw)}), overlap {r.overlap_frac:.0%}; a rank's compute "
            f"{_x(r.compute_inflation)} the single process's step, "
            f"{_share(r.comm_exposed_frac)} of the step past it"
        )
    for _, f in res.fits.iterrows():
        if f.serial_fraction is not None and not math.isnan(f.serial_fraction):
            ci = (  # a fraction near 0: how far its CI reaches, as an absolute ±, not a share
                f" ±{max(f.serial_fraction - f.ci_low, f.ci_high - f.serial_fraction):.3f} (95% CI)"
                if f.ci_low is not None and not math.isnan(f.ci_low)
                else ""
            )
            out_lines.append(f"Amdahl serial fraction f = {f.serial_fraction:.3f}{ci} ({f.method})")
    out_lines.append(res.check.summary())
    if not len(res.table):
        out_lines.append("No N > 1 run with an N = 1 run to compare (both must finish ok).")
    return out_lines
