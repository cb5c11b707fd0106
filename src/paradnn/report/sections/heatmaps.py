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
from paradnn.precisions import PRECISIONS
from paradnn.records import Status
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    for fam in sorted(data.hyperparameters):
        hps = data.hyperparameters[fam]
        if "batch" not in hps or len(hps) < 2:
            continue
        runs = data.runs[data.runs["family"] == fam]
        precs = precisions(runs)
        for prec in precs or [None]:
            where = None if prec is None else _slice(runs[runs["precision"] == prec])
            try:
                hm = A.heatmap(data, fam, where=where)
            except ConfigError as e:
                s.notes.append(f"{fam}: {e}")
                continue
            if hm.cells < 2:
                s.notes.append(
                    f"{fam} on {where_text(hm.where)}: {hm.cells} cell(s) at the fixed values "
                    f"({_fixed_text(hm)}): too few for a map."
                )
                continue
            cap = (
                f"{fam} on {where_text(hm.where)}: {METRICS.get(hm.metric, hm.metric)}; "
                f"fixed {_fixed_text(hm)}"
            )
            name = f"heatmap-{fam}" if len(precs) < 2 else f"heatmap-{fam}-{prec}"
            s.figures.append(w.figure(name, P.heatmap(hm), cap))
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
            on = data.ok[(data.ok["family"] == fam) & (data.ok["platform"] == plat)]
            for prec in precisions(on):  # each precision its own map, one selector
                ok = on[on["precision"] == prec]
                where = largest_group(ok, slice_columns(ok))  # one thread count, mode, ...
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


def precisions(runs) -> list[str]:
    """The precisions a family ran at, fp32 first (the seeds' baseline), then tf32, bf16, fp16:
    one map each, so an fp32 and a bf16 sweep are both shown (the page gives them one box
    with a selector). A fixed order, never one that hinges on run counts."""
    got = set(runs["precision"].dropna().astype(str)) if len(runs) else set()
    return [p for p in PRECISIONS if p in got] + sorted(got - set(PRECISIONS))


def _slice(runs) -> dict:
    """The default slice of one precision's runs: its (platform, thread count, ...) with the
    most ok runs, else the most runs (A.heatmap's own default, within the precision)."""
    ok = runs[runs["status"] == Status.OK]
    pool = ok if len(ok) else runs
    return largest_group(pool, slice_columns(pool))


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
        "most common value, as stated under each map), one map per precision the family ran "
        "at (fp32 first; the box's selector shows the others): utilization (Figure 2) and, per "
        "platform, examples/s (Figure 7, which fixes FC at 64 layers where Figure 2 fixes 32: "
        "64 where the data has it, else the closest layer count present, said under the map). "
        "Failed cells show their status."
    ),
    step="heat maps",
)
