"""Speedups of matched configurations in two groups: platforms, precisions, torch versions,
modes, thread counts (seed 000 Figures 6(a), 8-10 and 12)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer

SPEEDUP_AXES = (
    ("platform", None),
    ("precision", "fp32"),
    ("torch_version", None),
    ("mode", "eager"),
    ("threads", None),
)


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    for by, base in SPEEDUP_AXES:
        vals = A.speedup.values(data, by)
        if len(vals) < 2:
            continue
        if base in vals:
            a = base
        elif by == "threads":  # the fewest threads is the baseline of a scaling curve
            a = min(vals, key=lambda v: int(v) if v.isdigit() else 1 << 30)
        elif by == "torch_version":
            a = min(vals, key=A.speedup.version_key)
        else:
            a = vals[0]
        for b in [v for v in vals if v != a][:4]:
            c = A.compare(data, by, a, b, include_noisy=True)  # `data` is already filtered
            if not len(c.pairs):
                s.notes.append(f"{by}: no configuration ran ok in both {a} and {b}.")
                continue
            name = f"speedup-{by}-{b}-over-{a}"
            color = "batch" if "batch" in c.pairs else None
            s.figures.append(
                w.figure(
                    name, P.speedup_scatter(c, color), f"{by}: {b} over {a}, coloured by {color}"
                )
            )
            s.tables.append(
                w.table(
                    name,
                    c.summary,
                    f"{by}: {b} over {a} — configs faster, slower, no detectable change; "
                    "geometric mean with its 95% CI; median and 90th percentile (seed 000 §6 "
                    "states 90th-percentile speedups per family); range",
                    units={"median": "times", "p90": "times", "min": "times", "max": "times"},
                )
            )
            _speedup_maps(c, data, w, s, name)
            if len(c.failed):
                s.tables.append(
                    w.table(
                        name + "-failed",
                        c.failed,
                        "Configurations that succeeded in one group only",
                    )
                )
    if not s.figures:
        s.empty = (
            "Needs two platforms, precisions, versions or modes over the same configs: "
            "e.g. `paradnn run --preset cpu` (fp32 and bf16), or merge databases from two "
            "machines: `paradnn report --db a.db --db b.db`. For a table in the terminal: "
            "`paradnn compare --by precision --a fp32 --b bf16`."
        )


def _speedup_maps(c, data: A.Data, w: Writer, s: Content, name: str) -> None:
    """Per family: the speedup over batch × width (geometric mean over the other
    hyperparameters) and the regression weights of the speedup on the hyperparameters, with
    95% CIs (seed 000 Figures 8-10: which hyperparameters make the second group faster)."""
    from paradnn.analysis.modes import heat
    from paradnn.plots.modes import speedup_map

    for fam in sorted(set(c.pairs["family"])):
        h = heat(c.pairs, fam)
        if h is not None:
            grid, y, x = h
            title = f"{fam}: {c.b} over {c.a} ({c.by}, examples/s)"
            s.figures.append(
                w.figure(
                    f"{name}-{fam}-map",
                    speedup_map(grid, fam, c.b, y, x, title=title),
                    f"{fam}: speedup of {c.b} over {c.a} per {y} × {x} (other hyperparameters "
                    "pooled by geometric mean)",
                )
            )
        pairs = c.pairs[c.pairs["family"] == fam]
        hps = [h for h in A.frames.numeric_hyperparameters(data, fam) if h in pairs]
        sens = A.sensitivity(data, fam, "speedup", hyperparameters=hps, frame=pairs)
        if sens.reason:
            s.notes.append(f"{c.by} {c.b} over {c.a}, {fam}: no regression ({sens.reason}).")
            continue
        s.figures.append(
            w.figure(
                f"{name}-{fam}-weights",
                P.sensitivity(sens),
                f"{fam}: regression weights of the speedup of {c.b} over {c.a} (95% CI)",
            )
        )


SECTION = Section(
    "speedups",
    "Speedups (seed 000 Figures 6(a), 8-10 and 12)",
    fill,
    intro="Groups matched by configuration: every other identity column (platform, "
    "precision, mode, optimizer, and the thread count where both groups ran it) is equal "
    "within a pair. Speedup = examples/s of the second group over the first, with a 95% "
    "bootstrap CI from the raw step-time samples; a config is called faster or slower "
    "only when its CI excludes 1.",
    step="speedups",
)
