"""Measured here beside predicted there (`paradnn report --what-if`): the sweep's configs predicted
on other platforms by the step-time model, each marked predicted and carrying its device kind's
validated error band; the cross-platform machinery (speedups, speedup maps, regression weights,
observations 5-11, Table 8's layout) run on measured-vs-predicted and predicted-vs-predicted
pairs. Only in a report built with --what-if (the default report is unchanged)."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn import formatting as U
from paradnn import plots as P
from paradnn.analysis import whatif as W
from paradnn.analysis.modes import heat
from paradnn.plots import whatif as PW
from paradnn.plots.modes import speedup_map
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer

MAX_PAIRS = 6  # pairs drawn (each: a scatter, a map and weights per family)
UNITS = {
    "speedup there over here": "times",
    "speedup band low": "times",
    "speedup band high": "times",
}
# A pair's summary (analysis.speedup's columns): its geomean interval is the error bands', so
# its columns say band, never CI (report/keyresults.py reads them as a band).
BAND_COLUMNS = {"geomean_ci_low": "geomean_band_low", "geomean_ci_high": "geomean_band_high"}


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    if not W.has_predictions(data):
        why = W.unpredicted(data)
        s.empty = (
            "No config could be predicted: " + "; ".join(f"{n} × {r}" for r, n in why.items()) + "."
            if why
            else "`paradnn report --what-if tpu-v2,tpu-v3,v100` over a database with ok runs."
        )
        return
    t = W.table(data)
    bands = _bands(data)
    if len(t):
        s.figures.append(
            w.figure(
                "whatif-bars",
                PW.bars(t),
                "Geometric-mean examples/s per family, at one precision measured here (fp32 "
                "where there is one): measured here (solid) and predicted on each platform "
                "(hatched, lighter; whiskers: the model's validated error band, "
                f"{bands or 'none: not validated'})",
            )
        )
        s.tables.append(
            w.table(
                "whatif",
                t,
                "Measured here beside predicted there (predicted = yes on every row): geometric "
                "means over the configs of each family; predicted band low/high: the model's "
                "error band (not a 95% CI); speedup band low/high: both sides' intervals "
                "combined (the measured side's 95% CI, the predicted side's error band)",
                units=UNITS,
            )
        )
        s.tables.append(
            w.table(
                "whatif-configs",
                W.per_config(data),
                "Per config, measured here and predicted there (predicted = yes on every row)",
                units=UNITS,
            )
        )
    t8 = W.table8(data)
    if len(t8):
        s.tables.append(
            w.table(
                "whatif-table8",
                t8.reset_index(),
                "Seed 002 Table 8's layout: median examples/s per model, measured columns "
                "beside predicted ones (each named '… (predicted) precision')",
            )
        )
    for a, b in W.pairs_to_judge(data)[:MAX_PAIRS]:
        _pair(data, a, b, w, s)
    fs = [f for a, b in W.pairs_to_judge(data) for f in W.findings_for(data, a, b)]
    if fs:
        f = A.findings.as_frame(fs)
        f = f.assign(verdict=f["verdict"] + " (predicted)")
        s.tables.append(
            w.table(
                "whatif-findings",
                f[["verdict", "basis", "claim", "evidence", "interval", "source", "rule"]],
                "Predicted verdicts: observations 5, 7-11 of seed 000 on every pair, each "
                "labelled with what it "
                "rests on (the interval is the error band's, not a 95% CI)",
            )
        )
    labels = sorted(set(data.predicted["band_label"].dropna()))
    s.notes.append(
        "Every value in this section marked predicted comes from the step-time model "
        "(docs/simulate.md) at datasheet or chip-file parameters, never from a measurement, "
        "and enters no measured statistic elsewhere in this report. Error bands (not 95% "
        "CIs): " + "; ".join(labels) + "."
    )
    why = W.unpredicted(data)
    if why:
        s.notes.append(
            "Not predicted: " + "; ".join(f"{n} × {r}" for r, n in list(why.items())[:5]) + "."
        )


def _bands(data) -> str:
    """The bands of the predicted platforms' kinds, each once: 'gpu ±65.1%, tpu ±81.3%'."""
    p = data.predicted
    kinds = p.drop_duplicates("device_kind").sort_values("device_kind", kind="stable")
    return ", ".join(
        f"{k} {U.band(b)}"
        for k, b in zip(kinds["device_kind"], kinds["band"], strict=True)
        if not U.missing(b)
    )


def _pair(data, a: str, b: str, w: Writer, s: Content) -> None:
    c = W.pair(data, a, b)
    if not len(c.pairs):
        s.notes.append(f"{b} over {a}: no config on both sides.")
        return
    how = W.basis(data, a, b)
    name = f"whatif-{b}-over-{a}"
    s.figures.append(
        w.figure(name, PW.speedup_scatter(c), f"Predicted ({how}): {b} over {a} per config")
    )
    s.tables.append(
        w.table(
            name,
            c.summary.rename(columns=BAND_COLUMNS).assign(
                predicted="yes", basis=how, pair=f"{b} over {a}"
            ),
            f"Predicted ({how}): {b} over {a} — geometric mean with the interval of the error "
            "bands (a model error band, not a 95% CI), median, 90th percentile, range",
            units={"median": "times", "p90": "times", "min": "times", "max": "times"},
        )
    )
    for fam in sorted(set(c.pairs["family"])):
        h = heat(c.pairs, fam)
        if h is not None:
            grid, y, x = h
            fig = speedup_map(
                grid, fam, b, y, x, title=f"{fam}: {b} over {a} (predicted, examples/s)"
            )
            s.figures.append(
                w.figure(
                    f"{name}-{fam}-map",
                    PW.hatch(fig),
                    f"{fam}: predicted speedup of {b} over {a} ({how}) per {y} × {x} (other "
                    "hyperparameters pooled by geometric mean; hatched: predicted)",
                )
            )
        pairs = c.pairs[c.pairs["family"] == fam]
        hps = [h for h in A.frames.numeric_hyperparameters(data, fam) if h in pairs]
        sens = A.sensitivity(data, fam, "speedup", hyperparameters=hps, frame=pairs)
        if sens.reason:
            continue
        fig = PW.hatch(P.sensitivity(sens))
        fig.axes[0].set_title(f"{fam}: {b} over {a} — predicted", fontsize=9)
        s.figures.append(
            w.figure(
                f"{name}-{fam}-weights",
                fig,
                f"{fam}: regression weights of the predicted speedup of {b} over {a} ({how}; "
                "95% CI over configs: the model's error band is not in them)",
            )
        )


SECTION = Section(
    "whatif",
    "What if: measured here beside predicted there (report --what-if)",
    fill,
    intro=(
        "The configs measured here, predicted on the platforms named by --what-if by the "
        "step-time model. Predicted values are marked predicted in every table, figure "
        "(hatched, lighter) and label, carry the model's validated error for their kind of "
        "device (sim/error_bands.json; 'not validated' where it has none) and never enter a "
        "measured statistic. Each verdict says what it rests on: measured vs predicted or "
        "predicted vs predicted."
    ),
    step="what-if",
)
