"""Writes the report's figures (PNG) and tables (CSV) to disk as the sections make them.

A figure whose plotting function attached an interactive twin (`plots.interactive`: a Plotly
figure as JSON, `fig.interactive`) is shown interactive in the page; its PNG is still written to
figures/ for papers. Every table's frame is kept (`frames`) for the key results at the top."""

from __future__ import annotations

import base64
import json
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
    data: str = ""  # base64 PNG; empty when the page shows the interactive twin instead
    spec: str = ""  # the interactive twin: Plotly JSON, safe inside a <script> element
    group: str = ""  # figures of one kind in a row share a selector (one per slice)
    file: str = ""  # the PNG beside the report: figures/<name>.png

    @property
    def anchor(self) -> str:
        return "f-" + slug(self.name)


@dataclass
class Frame:
    """A table as its section handed it over, for the key results."""

    df: pd.DataFrame
    caption: str


class Writer:
    """Collects figures and tables, writing each to disk as it goes."""

    def __init__(self, out: Path, interactive: bool = True):
        self.out = out
        self.interactive = interactive
        (out / "figures").mkdir(parents=True, exist_ok=True)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        self.figures: list[Path] = []
        self.tables: list[Path] = []
        self.frames: dict[str, Frame] = {}

    def figure(self, name: str, fig, caption: str) -> Figure:
        twin = getattr(fig, "interactive", None) if self.interactive else None
        data = P.png(fig)
        path = self.out / "figures" / f"{slug(name)}.png"
        path.write_bytes(data)
        self.figures.append(path)
        file = f"figures/{path.name}"
        if twin:
            return Figure(name, caption, "", script_json(twin), twin.get("group", ""), file)
        return Figure(name, caption, base64.b64encode(data).decode("ascii"), file=file)

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
        self.frames[name] = Frame(df, caption)
        shown = df.head(max_rows)
        html = cells.html_table(shown, index=index, units=units, table_id="t-" + slug(name))
        more = (
            f" (first {max_rows} of {len(df)}; all in tables/{path.name})"
            if len(df) > max_rows
            else ""
        )
        return caption + more, html


def script_json(obj) -> str:
    """JSON that can stand inside <script type="application/json">: no <, > or & survives
    as itself, so no string a user or machine wrote can close the element."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_plain)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _plain(v):
    if hasattr(v, "item"):
        return v.item()
    return str(v)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:120] or "x"
