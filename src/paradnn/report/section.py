"""The report's unit: a `Section` is one row of build.py's table (its id, title, intro and the
function that fills it), `Content` what it filled for the template (figures, tables, notes, or
the command that would produce them). Every section module holds one `SECTION`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paradnn.report.writer import Figure, Writer

if TYPE_CHECKING:
    from paradnn.analysis import Data


@dataclass
class Content:
    """One section as the template shows it."""

    id: str
    title: str
    intro: str = ""
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)  # (caption, escaped HTML)
    notes: list[str] = field(default_factory=list)
    empty: str | None = None  # what to run when there is no data
    lists: list[tuple[str, list[str]]] = field(default_factory=list)  # (heading, one line each)

    @property
    def bare(self) -> bool:
        """Nothing to show but why: the page lists it at the end, one line, not among the
        sections with data."""
        return bool(self.empty) and not (self.figures or self.tables or self.lists)


@dataclass(frozen=True)
class Inputs:
    """What a section reads: `kept`, the runs the analyses see (noisy ones left out unless
    asked), and `every` run (run counts, failures and provenance see them all)."""

    kept: Data
    every: Data


@dataclass(frozen=True)
class Section:
    """One section of the report: build.py's table holds them in the order they appear."""

    id: str
    title: str
    fill: Callable[[Inputs, Writer, Content], None]  # adds figures, tables, notes or `empty`
    intro: str = ""
    step: str = ""  # what the progress line says while it is built (default: the id)

    def build(self, data: Data, w: Writer, every: Data | None = None) -> Content:
        """This section of `data` (`every`: all runs, noisy ones too; default `data`)."""
        c = Content(self.id, self.title, self.intro)
        self.fill(Inputs(data, data if every is None else every), w, c)
        return c
