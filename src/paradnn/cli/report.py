"""Reading a sweep back: the HTML `report` and `compare` (speedups with confidence intervals)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from paradnn import api
from paradnn.cli import tables
from paradnn.cli.common import (
    LIMIT,
    MAX_ROWS,
    DbsOpt,
    FamilyOpt,
    Format,
    choice,
    enum_choice,
    err,
    flag_option,
    int_option,
    number_option,
    option,
    out,
    parsed,
    text_option,
    words_option,
)
from paradnn.errors import ABSENT, OptionError
from paradnn.records import COMPARE_BY, METRICS
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import pandas as pd

    from paradnn.analysis import Comparison


NoisyOpt = flag_option("--include-noisy", "Keep runs flagged noisy (left out by default).")


def _what_if(v: str) -> str:
    """The value as given, once every item names a platform or a chip file (read here, with
    the options: a bad id is one line, exit 2, before the databases are read)."""
    from paradnn.sim.whatif import resolve

    resolve(v)
    return v


OutOpt = Annotated[str, typer.Option("--out", help="Directory for the report.")]
WhatIfOpt = parsed(
    str | None,
    "--what-if",
    option("--what-if", _what_if),
    "Comma-separated platform ids (`paradnn platforms`; a unique prefix such as v100 will do) "
    "or chip .toml files: the configs measured here are predicted there by the step-time model "
    "and shown beside them, marked predicted, with the model's validated error band; "
    "observations the data cannot test get predicted verdicts.",
    metavar="PLATFORMS",
)
QuietOpt = flag_option("--quiet", "No progress on stderr while the report builds.", "-q")
WatchOpt = number_option(
    "--watch",
    1.0,
    86_400.0,
    "Keep the report current while a sweep runs: check the databases every SECONDS, build the "
    "report again when one's data changed; an open page reloads only then. Ctrl-C stops.",
    metavar="SECONDS",
)


def report(
    db: DbsOpt = None,
    out_dir: OutOpt = "report",
    include_noisy: NoisyOpt = False,
    what_if: WhatIfOpt = None,
    quiet: QuietOpt = False,
    watch: WatchOpt = None,
) -> None:
    """The HTML report: the papers' figures, findings with verdicts, speedups, provenance
    (also PNG figures and CSV tables next to it). Noisy runs are left out and counted.
    --what-if adds predicted platforms beside the measured ones, never mixed into them."""
    what = [what_if] if what_if is not None else None
    if watch is not None:
        return _watch(db or [DEFAULT_DB], out_dir, include_noisy, watch, what)
    with _progress(quiet) as say:
        rep = api.report(
            db or [DEFAULT_DB], out_dir, progress=say, include_noisy=include_noisy, what_if=what
        )
    empty = sum(1 for s in rep.sections if s.empty)
    html, folder = escape(str(rep.html)), escape(str(rep.html.parent))
    out.print(
        f"Report: [bold]{html}[/] ({len(rep.sections) - empty} sections with data, "
        f"{len(rep.figures)} figures, {len(rep.tables)} CSV tables in {folder})"
    )


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[str], None]]:
    """Where the build's stages go, on stderr only (stdout keeps the one result line): a status
    line on a terminal, one line per stage when stderr is a log (with the seconds so far),
    nothing under --quiet."""
    if quiet:
        yield lambda _stage: None
    elif err.is_terminal:
        with err.status("building report…") as status:
            yield lambda stage: status.update(f"building report: {escape(stage)}…")
    else:
        t0 = time.monotonic()

        def line(stage: str) -> None:
            took = time.monotonic() - t0
            err.print(f"report: {stage} ({took:.0f} s)", markup=False, highlight=False)

        yield line


def _watch(
    dbs: list[str], out_dir: str, include_noisy: bool, every: float, what_if: list[str] | None
) -> None:
    """`report --watch`: build, then build again on each change, until Ctrl-C."""
    from paradnn.report.watch import watch

    def build() -> Path:
        return api.report(dbs, out_dir, include_noisy=include_noisy, what_if=what_if).html

    def built(html: Path, n: int) -> None:
        page = escape(str(html))
        out.print(f"[{time.strftime('%H:%M:%S')}] report {n}: [bold]{page}[/] (open pages reload)")

    out.print(f"Watching {escape(', '.join(dbs))} every {every:g} s; Ctrl-C stops.")
    try:
        watch(build, dbs, every, on_build=built)
    except KeyboardInterrupt:
        out.print("Stopped watching: the report is as of its last build (it no longer reloads).")


# `compare` exit status when a gate compared fewer configs than asked (docs/report.md#compare):
# distinct from 1 (slower) so CI can tell "regressed" from "measured nothing".
TOO_FEW_EXIT = 3


def _too_few_hint(c: Comparison) -> str:
    """What would give the gate something to compare."""
    if any(c.noisy_left_out.values()):
        return (
            "Runs flagged noisy were left out: re-measure them (`paradnn run --remeasure N`, "
            "`paradnn bench`) on a quieter machine, or pass --include-noisy to judge them anyway."
        )
    if any(c.unmatched.values()) or len(c.failed):
        return f"Run the same configs in both groups ({c.a} and {c.b})."
    return f"No config ran ok in both {c.a} and {c.b}."


BY_NOTES = {
    "backend": "docs/jax.md",
    "engine": "torch-eager, torch-compile, …, jax",
    "db": "one database against another",
    "attempt": "re-runs of the same run key: --a/--b are attempt numbers, first or latest",
}
BY_HELP = "What defines the two groups: {values}."


PER_CONFIG = {"csv": "per config"}


class FailOn(StrEnum):
    config = "config"
    geomean = "geomean"


CI_FORMATS = {
    "markdown": "a pull-request comment",
    "junit": "JUnit XML: a failing gate is a failed testcase",
}


class CompareFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"  # a pull-request comment (cli/ci_output.py)
    junit = "junit"  # a CI system's test report: a failing gate is a failed testcase


ByOpt = words_option(str | None, "--by", choice("--by", COMPARE_BY), BY_HELP, notes=BY_NOTES)
AOpt = Annotated[str | None, typer.Option("--a", help="The baseline group (e.g. fp32).")]
BOpt = Annotated[
    str | None, typer.Option("--b", help="The group whose speedup is reported (e.g. bf16).")
]
METRIC = choice("--metric", METRICS)
MetricOpt = words_option(str, "--metric", METRIC, "What is compared: {values}.")
CompareFormatOpt = words_option(
    CompareFormat,
    "--format",
    enum_choice("--format", CompareFormat),
    "{values}.",
    "-f",
    notes={**PER_CONFIG, **CI_FORMATS},
)
BaselineOpt = text_option(
    "--baseline",
    "Instead of --by/--a/--b: the newest run of each config against the runs `paradnn baseline "
    "save NAME` named (docs/baselines.md).",
    metavar="NAME",
)
LimitOpt = parsed(int, "--limit", LIMIT, "Configs shown in the table (slowest and fastest).")
FailIfSlowerOpt = number_option(
    "--fail-if-slower",
    0.0,
    100.0,
    "Exit 1 when a config is slower than 1 - PCT/100 beyond its 95% CI (the whole interval "
    "below it); configs without an interval by their estimate.",
    metavar="PCT",
)
FAIL_ON, JUDGED = enum_choice("--fail-on", FailOn), {"config": "each", "geomean": "their geomean"}
FailOnOpt = words_option(FailOn, "--fail-on", FAIL_ON, "What is judged: {values}.", notes=JUDGED)
MinConfigsOpt = int_option(
    "--min-configs",
    1,
    MAX_ROWS,
    f"Exit {TOO_FEW_EXIT} when fewer than N configs were compared (matched in both groups, noisy "
    "ones left out). Default 1 under --fail-if-slower, so the gate never passes on nothing; "
    "given alone it is a gate of its own.",
    metavar="N",
)


def compare(
    by: ByOpt = None,
    a: AOpt = None,
    b: BOpt = None,
    baseline: BaselineOpt = None,
    db: DbsOpt = None,
    metric: MetricOpt = "examples_per_s",
    family: FamilyOpt = None,
    fmt: CompareFormatOpt = CompareFormat.table,
    limit: LimitOpt = 10,
    fail_if_slower: FailIfSlowerOpt = None,
    fail_on: FailOnOpt = FailOn.config,
    include_noisy: NoisyOpt = False,
    min_configs: MinConfigsOpt = None,
) -> None:
    """Speedup of group B over group A for every configuration both ran (matched on family,
    config and every other identity column), each with a 95% bootstrap CI from the raw samples
    and a call: faster, slower or no detectable change. Each config counts with its chosen
    attempt (its best good attempt, else its latest). Exit status: 0 passed; 1 under
    --fail-if-slower when a config (or the geomean) is slower beyond its interval; 2 bad input;
    3 when fewer configs were compared than --min-configs (default 1 under --fail-if-slower).
    A gate prints how many configs it compared, left out as noisy and found unmatched."""
    from paradnn.analysis import speedup

    if min_configs is None and fail_if_slower is not None:
        min_configs = 1  # a gate never passes on nothing
    if baseline is not None:
        given = [f for f, v in (("--by", by), ("--a", a), ("--b", b)) if v is not None]
        if given:
            raise OptionError(given[0], by if given[0] == "--by" else a or b,
                              "not with --baseline (it names both groups)")  # fmt: skip
        c = api.compare_baseline(
            baseline, db or [DEFAULT_DB], metric=metric, family=family, include_noisy=include_noisy
        )
    else:
        for flag, v in (("--by", by), ("--a", a), ("--b", b)):
            if v is None:
                raise OptionError(flag, ABSENT, "is required (or --baseline NAME)")
        c = api.compare(
            db or [DEFAULT_DB], by, a, b, metric=metric, family=family, include_noisy=include_noisy
        )
    slower = None
    if fail_if_slower is not None:
        slower = speedup.slower_than(c, fail_if_slower, fail_on.value)
    if fmt in (CompareFormat.markdown, CompareFormat.junit):
        from paradnn.cli import ci_output

        write = ci_output.markdown if fmt is CompareFormat.markdown else ci_output.junit
        sys.stdout.write(write(c, slower, fail_if_slower, fail_on.value, min_configs))
    else:
        _show_comparison(c, slower, Format(fmt.value), limit)
    if min_configs is not None:  # a gate: what it rests on, always
        err.print(speedup.counts_line(c) + ".", markup=False, highlight=False)
    if slower is not None and not _judge(c, slower, fail_if_slower, fail_on):
        raise typer.Exit(1)
    if min_configs is not None and len(c.pairs) < min_configs:
        err.print(
            f"gate not passed: {len(c.pairs)} config{'' if len(c.pairs) == 1 else 's'} compared, "
            f"fewer than --min-configs {min_configs} (exit {TOO_FEW_EXIT}). " + _too_few_hint(c),
            markup=False,
            highlight=False,
        )
        raise typer.Exit(TOO_FEW_EXIT)


def _show_comparison(c: Comparison, slower: pd.DataFrame | None, fmt: Format, limit: int) -> None:
    if fmt is Format.csv:
        sys.stdout.write(c.pairs.to_csv(index=False))
    elif fmt is Format.json:
        sys.stdout.write(tables.comparison_json(c, slower) + "\n")
    else:
        out.print(tables.speedup_summary(c, width=out.width))
        if len(c.pairs):
            out.print(tables.speedup_pairs(c, limit, width=out.width))
        if len(c.failed):
            out.print(
                f"{len(c.failed)} configs ran ok in one group and failed in the other "
                "(see --format json)."
            )
        missing = {k: v for k, v in c.unmatched.items() if v}
        if missing:
            out.print(
                "Ran ok in one group only: " + ", ".join(f"{k}: {v}" for k, v in missing.items())
            )


def _judge(c: Comparison, slower: pd.DataFrame, pct: float, fail_on: FailOn) -> bool:
    """The --fail-if-slower verdict on stderr; True when nothing is slower beyond its CI."""
    limit_x = f"{1 - pct / 100:.3g}×"
    head = f"--fail-if-slower {pct:g} ({c.b} over {c.a})"
    if not len(c.pairs):  # nothing judged: not a pass (the caller exits TOO_FEW_EXIT)
        return True
    if not len(slower):
        what = "the geomean is not" if fail_on is FailOn.geomean else "no config is"
        err.print(f"{head}: {what} slower than {limit_x} beyond its 95% CI.", markup=False)
        return True
    n = len(slower)
    what = f"{n} config is" if n == 1 else f"{n} configs are"
    if fail_on is FailOn.geomean:
        what = "the geomean is"
    err.print(f"{head}: {what} slower than {limit_x} beyond the 95% CI:", markup=False)
    for line in tables.slower_lines(c, slower, fail_on.value):
        err.print("  " + line, markup=False, highlight=False)
    return False
