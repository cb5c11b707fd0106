"""Heat maps over batch and width (seed 000 Figures 2(a)-(c) and 7)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.analysis.frames import (
    METRICS,
    largest_group,
    select,
    slice_columns,
    where_text,
)
from paradnn.analysis.heatmap import figure7_fixed
from paradnn.errors import ConfigError
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    for fam in sorted(data.hyperparameters):
        hps = data.hyperparameters[fam]
        if "batch" not in hps or len(hps) < 2:
            continue
        try:
            hm = A.heatmap(data, fam)
        except ConfigError as e:
            s.notes.append(f"{fam}: {e}")
            continue
        if hm.cells < 2:
            s.notes.append(
                f"{fam}: {hm.cells} cell(s) at the fixed values "
                f"({_fixed_text(hm)}): too few for a map."
            )
            continue
        where = where_text(hm.where)
        cap = f"{fam} on {where}: {METRICS.get(hm.metric, hm.metric)}; fixed {_fixed_text(hm)}"
        s.figures.append(w.figure(f"heatmap-{fam}", P.heatmap(hm), cap))
    _throughput_maps(data, w, s)
    if not s.figures:
        s.empty = (
            "Needs a sweep over batch and width: `paradnn run --preset paper-fc` (or "
            "paper-cnn, paper-rnn; `--preset cpu` for a CPU-sized one)."
        )


def _throughput_maps(data: A.Data, w: Writer, s: Content) -> None:
    """Examples/s over batch and width per platform (seed 000 Figure 7: the same grid on each
    platform, failed cells marked), at each platform's most common precision."""
    if not len(data.ok):
        return
    plats = A.speedup.values(data, "platform")[:3]
    for fam in sorted(data.hyperparameters):
        hps = data.hyperparameters[fam]
        if "batch" not in hps or len(hps) < 2:
            continue
        for plat in plats:
            ok = data.ok[(data.ok["family"] == fam) & (data.ok["platform"] == plat)]
            if not len(ok):
                continue
            where = largest_group(ok, slice_columns(ok))  # one precision, thread count, ...
            fixed, paper = figure7_fixed(select(ok, where), fam)
            try:
                hm = A.heatmap(
                    data, fam, metric="examples_per_s", where=where, fixed=fixed, paper=paper
                )
            except ConfigError:
                continue
            if hm.cells < 2:
                continue
            cap = f"{fam} on {where_text(where)}: examples/s; fixed {_fixed_text(hm)}"
            cap += _figure7_text(hm, paper)
            name = "-".join(["throughput", fam, *(str(v) for v in where.values())])
            s.figures.append(w.figure(name, P.heatmap(hm), cap))


def _figure7_text(hm, paper: dict) -> str:
    """Which of Fig. 7's fixed values the map used: the seed's, or the closest the data has."""
    parts = []
    for k, v in paper.items():
        if k not in hm.fixed:
            continue
        if hm.fixed[k] == v:
            parts.append(f"{k}={v} as in seed 000 Fig. 7")
        else:
            parts.append(
                f"{k}={hm.fixed[k]}: no run at seed 000 Fig. 7's {k}={v}, the closest present"
            )
    return f" ({'; '.join(parts)})" if parts else ""


def _fixed_text(hm) -> str:
    return ", ".join(
        f"{k}={v}" + ("" if hm.paper_fixed.get(k) else "*") for k, v in hm.fixed.items()
    ) + (" (* not the paper's value)" if not all(hm.paper_fixed.values()) else "")


SECTION = Section(
    "heatmaps",
    "Heat maps (seed 000 Figures 2(a)-(c) and 7)",
    fill,
    intro=(
        "A metric over batch size and the family's width hyperparameter with the other "
        "hyperparameters fixed (the paper's values when the data has them, else the "
        "most common value, as stated under each map): utilization (Figure 2) and, per "
        "platform, examples/s (Figure 7, which fixes FC at 64 layers where Figure 2 fixes 32: "
        "64 where the data has it, else the closest layer count present, said under the map). "
        "Failed cells show their status."
    ),
    step="heat maps",
)
