"""The papers beside paradnn: each quantitative claim of the seeds (paradnn/data/
paper_claims.toml) with paradnn's number for it, measured here where the databases hold that
workload on that kind of platform, else predicted by the step-time model (`sim.papers`) and
marked so, else the reason there is none. The work is in `sim.papers` and `analysis.papers`."""

from __future__ import annotations

import pandas as pd

from paradnn.analysis import papers as measured_here
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer
from paradnn.sim import errorbands, papers

_UNITS = {"paper": "number", "paradnn": "number", "paradnn_over_paper": "times"}
_SHOWN = [
    "claim",
    "where",
    "platforms",
    "workload",
    "unit",
    "paper",
    "paradnn",
    "source",
    "paradnn_over_paper",
    "error band",
    "basis",
]


def measure(data, claim: papers.Claim) -> papers.Estimate | None:
    """The databases' number for ``claim`` (source "measured here"), or why there is none."""
    if claim.measure is None:
        return None
    value, basis = measured_here.measured(data, claim.measure)
    return papers.Estimate(value, "measured here" if value is not None else "", basis)


def frame(rows: list[papers.Row], bands: errorbands.Bands | None = None) -> pd.DataFrame:
    df = pd.DataFrame(papers.rows_frame_records(rows, bands))
    return df.rename(columns={"ratio": "paradnn_over_paper"})


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    rows = papers.compare(papers.load(), measured=lambda c: measure(data, c))
    bands = errorbands.read()
    df = frame(rows, bands)
    counts = df["source"].value_counts()
    s.notes.append(
        f"{len(df)} claims: {counts.get('measured here', 0)} measured here, "
        f"{counts.get('predicted', 0)} predicted for the paper's platform by the step-time "
        f"model (marked predicted), {counts.get('cannot compute', 0)} that paradnn cannot "
        "compute (with the reason). paradnn ÷ paper is the ratio of the two numbers."
    )
    if not bands.bands:
        s.notes.append(
            f"Error bands: not validated ({bands.source}); the step-time model's predictions "
            "carry no stated error here."
        )
    else:
        s.notes.append(
            "Error band: the step-time model's validated error on that kind of device, the 90th "
            "percentile of |predicted − measured| ÷ measured step time (median beside it; "
            f"{bands.source}): "
            + bands.short(k for k in errorbands.KINDS if k in bands.bands)
            + ". It is not a 95% CI."
        )
    titles = "; ".join(f"seed {k}: {v}" for k, v in papers.seeds().items())
    s.notes.append(f"Seeds: {titles}. Each claim's quote is in tables/paper-claims.csv.")
    t8 = df["claim"].str.startswith("s002-t8-")
    full = df.assign(quote=[r.claim.quote for r in rows])
    w.table("paper-claims", full, "all claims (CSV only)")  # the CSV keeps every column
    s.tables.append(
        w.table(
            "paper-claims-000-001",
            df.loc[~t8, _SHOWN],
            "Seeds 000 and 001: the paper's number, paradnn's, and where each comes from",
            max_rows=200,
            units=_UNITS,
        )
    )
    s.tables.append(
        w.table(
            "paper-claims-table8",
            df.loc[t8, _SHOWN],
            "Seed 002, Table 8 throughputs (samples/s): the paper's number and paradnn's",
            max_rows=200,
            units=_UNITS,
        )
    )


SECTION = Section(
    "papers",
    "The papers beside paradnn",
    fill,
    intro=(
        "Each quantitative claim of the three seed papers beside paradnn's number for it: "
        "measured here where these databases hold the same workload on the same kind of "
        "platform (CPU, GPU, TPU), otherwise predicted for the paper's own platform by the "
        "step-time model and marked predicted, with the model's validated error for that kind "
        "of device where one exists. A claim paradnn cannot compute is listed with the reason."
    ),
    step="papers beside paradnn",
)
