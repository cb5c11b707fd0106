"""The runs that did not finish ok (every run, noisy or not)."""

from __future__ import annotations

from paradnn.analysis.frames import choose
from paradnn.records import Status
from paradnn.report.paired import short_errors
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.every
    runs = choose(data.runs)
    bad = runs[runs["status"] != Status.OK] if len(runs) else runs
    if not len(bad):
        s.empty = "None."
        return
    cols = [
        c for c in ("family", "config_key", "platform", "precision", "status", "error") if c in bad
    ]
    t = short_errors(bad[cols]) if "error" in cols else bad[cols]
    s.tables.append(w.table("failures", t, "Runs that did not finish ok"))


SECTION = Section(
    "failures",
    "Failed and skipped runs",
    fill,
    intro="Every attempted configuration is stored; these did not finish `ok`.",
    step="failures",
)
