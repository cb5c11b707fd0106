"""Writes the report's figures (PNG) and tables (CSV) to disk as the sections make them."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from paradnn import plots as P
from paradnn.report import cells


@dataclass
class Figure:
    name: str
    caption: str
    data: str = ""  # base64 PNG


class Writer:
    """Collects figures and tables, writing each to disk as it goes."""

    def __init__(self, out: Path):
        self.out = out
        (out / "figures").mkdir(parents=True, exist_ok=True)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        self.figures: list[Path] = []
        self.tables: list[Path] = []

    def figure(self, name: str, fig, caption: str) -> Figure:
        data = P.png(fig)
        path = self.out / "figures" / f"{slug(name)}.png"
        path.write_bytes(data)
        self.figures.append(path)
        return Figure(name, caption, base64.b64encode(data).decode("ascii"))

    def table(
        self,
        name: str,
        df: pd.DataFrame,
        caption: str,
        index: bool = False,
        max_rows: int = 60,
        units: dict | None = None,
    ) -> tuple[str, str]:
        """The CSV keeps numbers as numbers (plus one column per hyperparameter); the HTML
        shows units, percentages and human headers (report/cells.py; `units` overrides a
        column's formatter by name: 'pct', 'times', 'params', ...)."""
        path = self.out / "tables" / f"{slug(name)}.csv"
        cells.expand_config(df, keep=True).to_csv(path, index=index)
        self.tables.append(path)
        shown = df.head(max_rows)
        html = cells.html_table(shown, index=index, units=units)
        more = (
            f" (first {max_rows} of {len(df)}; all in tables/{path.name})"
            if len(df) > max_rows
            else ""
        )
        return caption + more, html


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:120] or "x"
