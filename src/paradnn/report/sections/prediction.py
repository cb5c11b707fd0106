"""Step times the what-if model predicts against those measured."""

from __future__ import annotations

from paradnn import plots as P
from paradnn.errors import ConfigError
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    try:
        from paradnn.sim import fidelity as sim_validate
        from paradnn.sim import fit as sim_fit
    except ImportError:
        s.empty = "The simulator is not installed in this version."
        return
    fn = getattr(sim_validate, "predicted_vs_measured_data", None)
    if fn is None or not len(data.ok):
        s.empty = "Needs ok runs on a device the platform database or ceilings describe."
        return
    try:
        df = fn(data)
    except ConfigError as e:
        s.empty = str(e)
        return
    if df is None or not len(df):
        s.empty = (
            "No run matches a described platform: `paradnn calibrate` describes this "
            "device from measurements; `paradnn simulate validate` explains."
        )
        return
    s.figures.append(
        w.figure(
            "predicted-vs-measured",
            P.predicted_vs_measured(df),
            "Predicted (what-if model) vs measured step time",
        )
    )
    summary = getattr(sim_validate, "summary", None)
    if summary is not None:
        s.tables.append(
            w.table(
                "prediction-error",
                summary(df),
                "Median absolute percentage error per family (calibrated: scaled by the other "
                "runs of the family, leave-one-out)",
            )
        )
    s.tables.append(w.table("predicted-vs-measured", df, "Per-config prediction error"))
    heldout = getattr(sim_fit, "heldout_data", None)
    if heldout is not None:
        held = heldout(data)
        if len(held):
            s.tables.append(
                w.table(
                    "step-time-heldout",
                    held,
                    "Step-time model (`paradnn simulate fit`): per-kernel overhead, efficiency "
                    "and achieved bandwidth fitted on the `fit` configs, error on the `holdout` "
                    "configs it never saw (split by config hash, 30 % held out); predictions",
                )
            )


SECTION = Section(
    "prediction",
    "Predicted vs measured (what-if model)",
    fill,
    intro=(
        "Step times predicted by `paradnn simulate` for configurations measured here. "
        "Predictions are labelled as such."
    ),
    step="prediction",
)
