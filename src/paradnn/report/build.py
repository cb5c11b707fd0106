"""One self-contained HTML report from one or more result databases, plus its figures (PNG) and
tables (CSV) as files. Torch-free: a laptop builds the report of a GPU sweep.

The report is the table `SECTIONS` below: one `Section` per module of report/sections/, in the
order they appear. Every section appears; one without data says which command would produce it.
Every string that came from a user or a machine (configs, device and host names, error text,
paths) is escaped.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import gzip
import importlib.resources
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

import paradnn
from paradnn import analysis as A
from paradnn import paths
from paradnn.analysis.frames import choice_note, choose, noisy_ok, reason_counts, without_noisy
from paradnn.errors import ConfigError
from paradnn.records import Status
from paradnn.report import keyresults, publish
from paradnn.report.section import Content, Section
from paradnn.report.sections import (
    backends,
    batch,
    breakdown,
    failures,
    findings,
    heatmaps,
    infeed,
    modes,
    ops,
    papers,
    params,
    prediction,
    provenance,
    rooflines,
    scaling,
    sensitivity,
    speedups,
    summary,
    table8,
)
from paradnn.report.whatif import resolve_what_if, sections_for, with_what_if
from paradnn.report.writer import Figure, Writer

SECTIONS: list[Section] = [
    summary.SECTION,
    findings.SECTION,
    params.SECTION,
    heatmaps.SECTION,
    sensitivity.SECTION,
    rooflines.SECTION,
    breakdown.SECTION,
    speedups.SECTION,
    scaling.SECTION,
    modes.SECTION,
    infeed.SECTION,
    backends.SECTION,
    batch.SECTION,
    ops.SECTION,
    table8.SECTION,
    prediction.SECTION,
    papers.SECTION,
    failures.SECTION,
    provenance.SECTION,
]
# The sections whose first notes say which runs were left out and which attempt was chosen.
_NOTED = ("summary", "speedups")


@dataclass
class Report:
    html: Path
    figures: list[Path]
    tables: list[Path]
    sections: list[Content]

    def as_dict(self) -> dict[str, object]:
        """The files written and each section's id, title and what it lacks (its HTML is in
        the page): plain values for JSON."""
        return {
            "html": str(self.html),
            "figures": [str(p) for p in self.figures],
            "tables": [str(p) for p in self.tables],
            "sections": [
                {"id": s.id, "title": s.title, "empty": s.empty, "notes": list(s.notes)}
                for s in self.sections
            ],
        }


def build(
    dbs: Sequence[str | Path],
    out: str | Path = "report",
    progress: Callable[[str], None] | None = None,
    include_noisy: bool = False,
    what_if: Sequence[str] | None = None,
) -> Report:
    """Read the databases, analyse, and write out/report.html (+ figures/, tables/).
    `progress` hears each stage before it starts (each section, then the page), once the
    databases are read: a build takes tens of seconds on a large sweep.

    Runs flagged noisy (analysis.frames.add_quality) are left out of every figure, table and
    comparison unless `include_noisy`; the summary says how many and why. The run counts, the
    failures and the provenance always see every run. `what_if`: platform ids or chip files
    whose predictions join the report, marked predicted (report/whatif.py)."""
    say = progress or (lambda _msg: None)
    if not dbs:
        raise ConfigError("--db", "(none)", "at least one result database")
    chips = resolve_what_if(what_if)  # before any work: a bad id is one line, exit 2
    out = paths.output_folder("--out", out)  # before any work: a file in the way, read-only
    full = A.load(dbs)  # no stage said before: a database that cannot be read is one line
    data, noisy = (full, None) if include_noisy else without_noisy(full)
    if chips:
        say("what-if predictions")
        data = with_what_if(data, chips)
    # built in a folder of its own and moved into place whole (report/publish.py): a killed or
    # failed build leaves the last report as it was, a rebuild leaves no stale file
    with publish.staged(out) as stage:
        w = Writer(stage)
        sections: list[Content] = []
        todo = sections_for(SECTIONS, bool(chips))
        for i, sec in enumerate(todo, 1):
            say(stage_text(i, len(todo), sec.step or sec.id))
            sections.append(sec.build(data, w, every=full))
        say("key results and the page")
        notes = [n for n in (_noisy_note(full, noisy), choice_note(choose(full.runs))) if n]
        for note in reversed(notes):
            for c in sections:
                if c.id in _NOTED and not c.empty:
                    c.notes.insert(0, note + ".")
        if full.skipped:
            sections[0].notes.insert(0, _skipped_note(full.skipped))
        key = keyresults.lines(w, data.ok)
        html = _render(data, sections, key)
        (stage / "report.html").write_text(html, encoding="utf-8")
    figures, csvs = publish.moved(w.figures, stage, out), publish.moved(w.tables, stage, out)
    return Report(out / "report.html", figures, csvs, sections)


def stage_text(i: int, n: int, step: str) -> str:
    """What the progress line says while section `i` of `n` is built: 'section 4/19: heat
    maps'."""
    return f"section {i}/{n}: {step}"


def _skipped_note(skipped: list[dict]) -> str:
    """One line: the rows a database held that could not be read, each named (the first 10)."""
    named = "; ".join(
        f"{r['db']} {'run' if r['table'] == 'runs' else r['table']} {r['id']}: {r['column']} "
        f"{r['problem']}"
        for r in skipped[:10]
    )
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    return f"{len(skipped)} stored rows could not be read and are left out: {named}{more}."


def _noisy_note(full: A.Data, left_out: pd.DataFrame | None) -> str | None:
    """One line: how many noisy runs were left out (or kept) and the commonest reasons."""
    runs = choose(full.runs)
    n = int(noisy_ok(runs).sum())
    if not n:
        return None
    reasons = "; ".join(f"{r} ({k})" for r, k in list(reason_counts(runs).items())[:4])
    if left_out is None:
        return f"{n} runs flagged noisy are included (--include-noisy): {reasons}"
    return (
        f"{n} of {int((runs['status'] == Status.OK).sum())} ok configs have no good attempt (their "
        f"latest is flagged noisy) and are left out of every figure, table and comparison "
        f"below: {reasons}. `paradnn report --include-noisy` keeps them"
    )


# --- sections ------------------------------------------------------------------------------


def figure_blocks(figures: list[Figure]) -> list[list[Figure]]:
    """A section's figures as the page shows them: interactive figures of one kind (`group`)
    gathered into one box with a selector, where the first of them stood; others alone."""
    blocks: list[list[Figure]] = []
    at: dict[str, int] = {}
    for f in figures:
        if f.spec and f.group in at:
            blocks[at[f.group]].append(f)
            continue
        if f.spec and f.group:
            at[f.group] = len(blocks)
        blocks.append([f])
    return blocks


@functools.cache
def plotly_js() -> str:
    """plotly.js (the plotly package's own bundle) gzipped and base64-encoded: embedded once,
    unpacked by the page with the browser's DecompressionStream (about 2 MB instead of 4.8)."""
    src = importlib.resources.files("plotly").joinpath("package_data/plotly.min.js")
    raw = src.read_bytes()
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def _render(data: A.Data, sections: list[Content], key: list | None = None) -> str:
    interactive = any(f.spec for c in sections for f in c.figures)
    env = Environment(
        loader=PackageLoader("paradnn.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["blocks"] = figure_blocks
    return env.get_template("report.html.j2").render(
        key=key or [],
        plotly=plotly_js() if interactive else "",
        sections=sections,
        sources=data.sources,
        version=paradnn.__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
