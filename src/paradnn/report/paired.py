"""The one spec of a paired-study section (speedups by platform, precision, torch version, mode
or threads; execution modes; backends; infeed; scaling): the studies it runs, and per study the
figures, tables and notes it shows, in order, as data. A section module says what it compares;
`Paired.fill` does the rest the same way for all of them: the note for a study with no matched
pair, the observation's verdict first, the command to run when nothing was shown.

Names and captions are `str.format` templates over the study's `keys` ({v}, {a}, {b}, {by},
{family}, {y}, {x}, ...), so a file name and its caption cannot drift apart between studies."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from paradnn.report.section import Content, Inputs
from paradnn.report.writer import Writer

ERROR_CHARS = 200  # a failure's error text, cut for the HTML (the CSV too, as before)


@dataclass(frozen=True)
class Study:
    """One comparison: what the analysis returned (`got`), the data it came from and the
    words its names and captions are made of."""

    data: Any  # analysis.Data
    got: Any
    keys: Mapping[str, Any] = field(default_factory=dict)

    def text(self, template: str, **more: Any) -> str:
        return template.format(**self.keys, **more)

    def with_keys(self, **more: Any) -> Study:
        return dataclasses.replace(self, keys={**self.keys, **more})


Part = Callable[[Study, Writer, Content], None]


def _always(_st: Study) -> bool:
    return True


@dataclass(frozen=True)
class Fig:
    """A figure drawn from the study (skipped where `when` says no)."""

    name: str
    draw: Callable[[Study], Any]
    caption: str
    when: Callable[[Study], bool] = _always

    def __call__(self, st: Study, w: Writer, c: Content) -> None:
        if self.when(st):
            c.figures.append(w.figure(st.text(self.name), self.draw(st), st.text(self.caption)))


@dataclass(frozen=True)
class Tab:
    """A table of the study (`frame` None: none; `nonempty`: none when it has no row)."""

    name: str
    frame: Callable[[Study], pd.DataFrame | None]
    caption: str
    units: Mapping[str, str] | None = None
    nonempty: bool = False

    def __call__(self, st: Study, w: Writer, c: Content) -> None:
        df = self.frame(st)
        if df is None or (self.nonempty and not len(df)):
            return
        units = dict(self.units) if self.units else None
        c.tables.append(w.table(st.text(self.name), df, st.text(self.caption), units=units))


@dataclass(frozen=True)
class Notes:
    """The study's notes, each behind a prefix (`{v}: `)."""

    notes: Callable[[Study], Iterable[str]]
    prefix: str = ""

    def __call__(self, st: Study, w: Writer, c: Content) -> None:
        c.notes.extend(st.text(self.prefix) + n for n in self.notes(st))


@dataclass(frozen=True)
class HeatMap:
    """A map over the two axes `heat` picks ((grid, y, x), or None: no map); its name and
    caption may use {y} and {x}."""

    name: str
    heat: Callable[[Study], tuple[pd.DataFrame, str, str] | None]
    draw: Callable[[Study, pd.DataFrame, str, str], Any]
    caption: str

    def __call__(self, st: Study, w: Writer, c: Content) -> None:
        h = self.heat(st)
        if h is None:
            return
        grid, y, x = h
        st = st.with_keys(y=y, x=x)
        fig = self.draw(st, grid, y, x)
        c.figures.append(w.figure(st.text(self.name), fig, st.text(self.caption)))


@dataclass(frozen=True)
class PerFamily:
    """`parts` once per family of the study (sorted), with {family} in the keys."""

    families: Callable[[Study], Iterable[str]]
    parts: tuple[Part, ...]

    def __call__(self, st: Study, w: Writer, c: Content) -> None:
        for fam in sorted(set(self.families(st))):
            for part in self.parts:
                part(st.with_keys(family=fam), w, c)


def columns(df: pd.DataFrame, shown: Iterable[str]) -> pd.DataFrame:
    """`df`'s columns among `shown`, in that order (older databases lack some)."""
    return df[[col for col in shown if col in df]]


def short_errors(df: pd.DataFrame) -> pd.DataFrame:
    """Failures with their error text cut to ERROR_CHARS characters."""
    if not len(df):
        return df
    return df.assign(error=df["error"].map(lambda e: (e or "")[:ERROR_CHARS]))


@dataclass(frozen=True)
class Paired:
    """A paired-study section: its studies (one per variant compared), the parts each shows,
    the parts shown once after them, and what it says around them."""

    studies: Callable[[Any], Iterable[Study]]  # data -> the studies that have something
    parts: tuple[Part, ...]
    empty: str  # what to run when no study showed anything
    unpaired: str | None = None  # the note for a study whose `got.pairs` is empty
    after: tuple[Part, ...] = ()  # once, over the whole data (got None)
    verdict: Callable[[Any], str] | None = None  # the observation's, first, when shown

    def __call__(self, inp: Inputs, w: Writer, c: Content) -> None:
        data = inp.kept
        for st in self.studies(data):
            if self.unpaired is not None and not len(st.got.pairs):
                c.notes.append(st.text(self.unpaired))
                continue
            for part in self.parts:
                part(st, w, c)
        whole = Study(data, None)
        for part in self.after:
            part(whole, w, c)
        if not c.figures and not c.tables:
            c.empty = self.empty
        elif self.verdict is not None:
            c.notes.insert(0, self.verdict(data))
