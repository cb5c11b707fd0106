"""Analysis of stored runs: the HTML report and the speedup comparison (torch-free)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.analysis import Comparison
    from paradnn.report import Report


def report(
    dbs: Sequence[str],
    out: str = "report",
    progress: Callable[[str], None] | None = None,
    include_noisy: bool = False,
    what_if: Sequence[str] | None = None,
) -> Report:
    """Write the HTML report (+ figures/ and tables/) of one or more databases into `out`.
    Noisy runs are left out of every figure and comparison unless `include_noisy`.
    `what_if`: platform ids or chip files whose predictions join it, marked predicted."""
    from paradnn import report as report_mod

    return report_mod.build(
        list(dbs) or [DEFAULT_DB],
        out,
        progress=progress,
        include_noisy=include_noisy,
        what_if=what_if,
    )


def compare(
    dbs: Sequence[str],
    by: str,
    a: str,
    b: str,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
) -> Comparison:
    """Speedup of group b over group a (by platform, precision, version, db, attempt, …) per
    matched config, with a bootstrap CI and a call each; noisy runs left out unless asked."""
    from paradnn import analysis

    data = analysis.load(list(dbs) or [DEFAULT_DB])
    return analysis.compare(
        data, by, a, b, metric=metric, family=family, include_noisy=include_noisy
    )
