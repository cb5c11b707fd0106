"""Step times the step-time model predicts against those measured: the numbers `paradnn simulate
validate` prints for the same database (one computation, `sim.fidelity.validate_frame`: same
runs, chips, host profiles and model), labelled with the model's name."""

from __future__ import annotations

from paradnn import plots as P
from paradnn.errors import ConfigError
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer
from paradnn.sim import fidelity
from paradnn.sim import fit as sim_fit

MODEL = fidelity.DEFAULT_MODEL


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    if not len(data.ok):
        s.empty = "Needs ok runs on a device the platform database or ceilings describe."
        return
    try:
        got = fidelity.validate_data(data, MODEL)
    except ConfigError as e:
        s.empty = str(e)
        return
    if got is None or not len(got[0]):
        s.empty = (
            "No run matches a described platform: `paradnn calibrate` describes this "
            "device from measurements; `paradnn simulate validate` explains."
        )
        return
    df, summary = got
    name = fidelity.MODEL_NAMES[MODEL]
    s.notes.append(
        f"Model: the {name} (`paradnn simulate validate` prints these numbers for the same "
        f"database; `--model roofline` there for the roofline). Chips: "
        + "; ".join(sorted(set(df["basis"])))
        + ". Host profile: "
        + "; ".join(
            sorted({str(h).removeprefix("host profile: ") for h in df["host_profile"].dropna()})
        )
        + ". Errors are |predicted − measured| ÷ measured step time."
    )
    s.figures.append(
        w.figure(
            "predicted-vs-measured",
            P.predicted_vs_measured(df),
            f"Predicted ({name}) vs measured step time",
        )
    )
    s.tables.append(
        w.table(
            "prediction-error",
            summary,
            f"Median absolute percentage error per family, {name} (calibrated: scaled by the "
            "other runs of the family, leave-one-out)",
        )
    )
    s.tables.append(w.table("predicted-vs-measured", df, f"Per-config prediction error, {name}"))
    held = sim_fit.heldout_data(data)
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
    "Predicted vs measured (step-time model)",
    fill,
    intro=(
        "Step times predicted by the step-time model (`paradnn simulate validate`, the same "
        "numbers) for configurations measured here, each on the chip that describes its device "
        "and with the host profile of the host that measured it. Predictions are labelled as "
        "such."
    ),
    step="prediction",
)
