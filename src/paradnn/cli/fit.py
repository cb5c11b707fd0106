"""Tables that fit a terminal by design (issue 45): a number is never wrapped or cut, a header
wraps between words only, and when the columns cannot fit, the least useful are left out and
named in one line under the table — never squeezed until rich folds `11.4 / M` or cuts `0.9…`.
Torch-free."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

# What each column costs beside its text: one space either side and its left border; a table
# adds its right border (rich's default box, padding (0, 1)).
PER_COLUMN = 3
EDGE = 1


@dataclass(frozen=True)
class Column:
    """One column: its header, its cells (rich markup), how it is justified, whether it holds
    a number (never wrapped: the column is as wide as its widest cell), and when it is left
    out as the terminal narrows: `drop` None never, else lower first; `optional` columns also
    go to keep each row on one line (detail a person can ask for with --format csv)."""

    header: str
    cells: tuple[str, ...]
    justify: str = "left"
    number: bool = False
    drop: int | None = None
    optional: bool = False

    def _lengths(self) -> list[int]:
        return [Text.from_markup(c).cell_len for c in self.cells]

    def least(self) -> int:
        """The narrowest it may be: its longest word (header or cell); a number's whole cell."""
        words = [Text.from_markup(w).cell_len for w in self.header.split()] or [0]
        if self.number:
            return max([*words, *self._lengths()])
        for c in self.cells:
            words += [Text(w).cell_len for w in Text.from_markup(c).plain.split()]
        return max(words)

    def natural(self) -> int:
        """Its width with every cell and its header on one line."""
        return max([Text(self.header).cell_len, *self._lengths()])


def total(columns: Sequence[Column], width_of: str = "least") -> int:
    """The table's width with every column at `least` (or `natural`) width."""
    return sum(getattr(c, width_of)() + PER_COLUMN for c in columns) + EDGE


def choose(columns: Sequence[Column], width: int | None) -> tuple[list[Column], list[Column]]:
    """(columns kept, columns left out) for a terminal `width` columns wide (None: no limit).
    First the droppable ones go (lowest `drop` first) until every column fits at its least
    width; then the optional ones, until each row fits on one line — when that is in reach."""
    kept = list(columns)
    if width is None:
        return kept, []
    order = sorted((c for c in kept if c.drop is not None), key=lambda c: c.drop or 0)
    left: list[Column] = []
    for c in order:
        if total(kept) <= width:
            break
        kept.remove(c)
        left.append(c)
    optional = [c for c in order if c.optional and c in kept]
    if total([c for c in kept if c not in optional], "natural") > width:
        return kept, left  # a row wraps whatever goes: keep the detail
    for c in optional:
        if total(kept, "natural") <= width:
            break
        kept.remove(c)
        left.append(c)
    return kept, left


def _widths(kept: Sequence[Column], width: int | None) -> list[int]:
    """Each column's width: its natural one, narrowed a character at a time until the table
    fits — first the headers wider than their cells (a header wraps once, a cell on every
    row), then the widest column, never below its least. rich's own narrowing may squeeze a
    column below its minimum, so the table sets the widths itself."""
    widths = [c.natural() for c in kept]
    least = [c.least() for c in kept]
    if width is None:
        return widths
    cells = [max([least[i], *c._lengths()]) for i, c in enumerate(kept)]
    excess = sum(widths) + PER_COLUMN * len(kept) + EDGE - width
    for floor in (cells, least):
        while excess > 0:
            slack = [(w, i) for i, w in enumerate(widths) if w > floor[i]]
            if not slack:
                break
            _, i = max(slack)
            widths[i] -= 1
            excess -= 1
    return widths


def left_out_line(left: Sequence[Column], width: int) -> str:
    """The line under a table that names every column it left out, and how to see them."""
    names = ", ".join(c.header for c in left)
    return f"not shown at {width} columns: {names}; widen the terminal or use --format csv"


def table(
    columns: Sequence[Column],
    width: int | None,
    *,
    title: str | None = None,
    caption: str | None = None,
    title_justify: str = "left",
) -> Table:
    """The rich Table of `columns` that fits `width`: numbers `no_wrap` at their full width,
    text wrapping between words, the columns left out named in the caption's first line."""
    kept, left = choose(columns, width)
    widths = _widths(kept, width)
    t = Table(
        title=title,
        header_style="bold",
        title_justify=title_justify,  # type: ignore[arg-type]
        caption_justify="left",
    )
    for c, w in zip(kept, widths, strict=True):
        t.add_column(
            c.header,
            justify=c.justify,  # type: ignore[arg-type]
            width=w,  # ≥ its least: a number's whole cell, a text's longest word
            overflow="fold",  # never reached: no word is wider than its column
        )
    rows = len(columns[0].cells) if columns else 0
    for i in range(rows):
        t.add_row(*(c.cells[i] for c in kept))
    notes = [left_out_line(left, width)] if left and width is not None else []
    notes += [caption] if caption else []
    t.caption = "\n".join(notes) or None
    return t
