"""Speedups of matched configurations in two groups: platforms, precisions, torch versions,
modes, thread counts (seed 000 Figures 6(a), 8-10 and 12)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.analysis.modes import heat
from paradnn.plots.modes import speedup_map
from paradnn.report.paired import Fig, HeatMap, Paired, PerFamily, Study, Tab
from paradnn.report.section import Content, Section
from paradnn.report.writer import Writer

SPEEDUP_AXES = (
    ("platform", None),
    ("precision", "fp32"),
    ("torch_version", None),
    ("mode", "eager"),
    ("threads", None),
)


def _baseline(by: str, vals: list[str], base: str | None) -> str:
    if base in vals:
        return base
    if by == "threads":  # the fewest threads is the baseline of a scaling curve
        return min(vals, key=lambda v: int(v) if v.isdigit() else 1 << 30)
    if by == "torch_version":
        return min(vals, key=A.speedup.version_key)
    return vals[0]


def _studies(data) -> list[Study]:
    """Per axis, up to four groups against its baseline (`data` is already filtered)."""
    out = []
    for by, base in SPEEDUP_AXES:
        vals = A.speedup.values(data, by)
        if len(vals) < 2:
            continue
        a = _baseline(by, vals, base)
        for b in [v for v in vals if v != a][:4]:
            c = A.compare(data, by, a, b, include_noisy=True)
            color = "batch" if "batch" in c.pairs else None
            name = f"speedup-{by}-{b}-over-{a}"
            out.append(Study(data, c, {"by": by, "a": a, "b": b, "name": name, "color": color}))
    return out


def _weights(st: Study, w: Writer, s: Content) -> None:
    """The regression weights of the speedup on the family's hyperparameters, with 95% CIs
    (seed 000 Figures 8-10: which hyperparameters make the second group faster)."""
    c, fam = st.got, st.keys["family"]
    pairs = c.pairs[c.pairs["family"] == fam]
    hps = [h for h in A.frames.numeric_hyperparameters(st.data, fam) if h in pairs]
    sens = A.sensitivity(st.data, fam, "speedup", hyperparameters=hps, frame=pairs)
    if sens.reason:
        s.notes.append(st.text("{by} {b} over {a}, {family}: no regression ") + f"({sens.reason}).")
        return
    s.figures.append(
        w.figure(
            st.text("{name}-{family}-weights"),
            P.sensitivity(sens),
            st.text("{family}: regression weights of the speedup of {b} over {a} (95% CI)"),
        )
    )


SECTION = Section(
    "speedups",
    "Speedups (seed 000 Figures 6(a), 8-10 and 12)",
    Paired(
        _studies,
        parts=(
            Fig(
                "{name}",
                lambda st: P.speedup_scatter(st.got, st.keys["color"]),
                "{by}: {b} over {a}, coloured by {color}",
            ),
            Tab(
                "{name}",
                lambda st: st.got.summary,
                "{by}: {b} over {a} — configs faster, slower, no detectable change; geometric "
                "mean with its 95% CI; median and 90th percentile (seed 000 §6 states "
                "90th-percentile speedups per family); range",
                units={"median": "times", "p90": "times", "min": "times", "max": "times"},
            ),
            PerFamily(  # the speedup over batch × width, other hyperparameters pooled
                lambda st: st.got.pairs["family"],
                parts=(
                    HeatMap(
                        "{name}-{family}-map",
                        lambda st: heat(st.got.pairs, st.keys["family"]),
                        lambda st, grid, y, x: speedup_map(
                            grid,
                            st.keys["family"],
                            st.keys["b"],
                            y,
                            x,
                            title=st.text("{family}: {b} over {a} ({by}, examples/s)"),
                        ),
                        "{family}: speedup of {b} over {a} per {y} × {x} (other hyperparameters "
                        "pooled by geometric mean)",
                    ),
                    _weights,
                ),
            ),
            Tab(
                "{name}-failed",
                lambda st: st.got.failed,
                "Configurations that succeeded in one group only",
                nonempty=True,
            ),
        ),
        unpaired="{by}: no configuration ran ok in both {a} and {b}.",
        empty=(
            "Needs two platforms, precisions, versions or modes over the same configs: "
            "e.g. `paradnn run --preset cpu` (fp32 and bf16), or merge databases from two "
            "machines: `paradnn report --db a.db --db b.db`. For a table in the terminal: "
            "`paradnn compare --by precision --a fp32 --b bf16`."
        ),
    ),
    intro=(
        "Groups matched by configuration: every other identity column (platform, "
        "precision, mode, optimizer, and the thread count where both groups ran it) is equal "
        "within a pair. Speedup = examples/s of the second group over the first, with a 95% "
        "bootstrap CI from the raw step-time samples; a config is called faster or slower "
        "only when its CI excludes 1."
    ),
    step="speedups",
)
