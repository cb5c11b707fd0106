"""The seeds' observations, each tested on the report's data by its stated rule."""

from __future__ import annotations

from paradnn import analysis as A
from paradnn.analysis import whatif
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer

FINDING_HEADERS = {
    "interval": "95% interval vs threshold",
    "decide": "what would decide it",
    "quote": "the seed says",
}


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    # `data` is already filtered; with --what-if, observations the measured data cannot test
    # get verdicts on predictions, labelled so (analysis/whatif.py)
    predicted = whatif.has_predictions(data)
    found = whatif.evaluate(data) if predicted else A.evaluate(data, include_noisy=True)
    fs = A.findings.as_frame(found)
    untestable = fs["verdict"] == A.findings.UNTESTABLE
    never = fs["id"].isin(A.findings.NEVER_TESTABLE) & untestable
    here = untestable & ~never
    tested = fs[~never & ~here]
    shown = ["verdict", "claim", "evidence", "interval", "decide", "source", "quote", "rule"]
    if predicted:  # the verdict says what it rests on
        on = tested["basis"] != "measured"
        tested = tested.assign(
            verdict=tested["verdict"].where(~on, tested["verdict"] + " (predicted)")
        )
        shown.insert(1, "basis")
        if on.any():
            s.notes.append(
                "Verdicts marked (predicted) rest on the step-time model's predictions "
                "(`report --what-if`, section What if), not on measurements: their interval is "
                "the model's validated error band (p90 of its kind), not a 95% CI, and without "
                "a validated band they are inconclusive."
            )
    headers = FINDING_HEADERS
    if predicted and (tested["basis"] != "measured").any():  # a band is not called a CI
        headers = headers | {"interval": "interval vs threshold (95% CI; predicted: error band)"}
    s.tables.append(w.table("findings", tested[shown].rename(columns=headers), "Verdicts"))
    if here.any():
        s.lists.append(
            (
                "Untestable on this data: paradnn can produce what they need (another "
                "platform, torch version or run kind), this report's databases do not hold it",
                [f"{r.claim} — {r.source}: {r.evidence}." for r in fs[here].itertuples()],
            )
        )
    if never.any():
        s.lists.append(
            (
                "Untestable on any data paradnn can produce: they are about TPU "
                "hardware or 1,024-chip systems, which paradnn does not measure",
                [f"{r.claim} — {r.source}: {r.evidence}." for r in fs[never].itertuples()],
            )
        )
    w.table("findings-all", fs, "")  # every finding, one CSV


SECTION = Section(
    "findings",
    "Findings: the seeds' observations, tested on this data",
    fill,
    intro=(
        "Each verdict is computed from the data in this report by the stated rule: holds or "
        "does not hold only when the 95% interval of the number it is decided on lies wholly "
        "on one side of the rule's threshold, inconclusive when the interval straddles it "
        "(with what more data would decide it); observations about hardware or run kinds the "
        "data lacks are untestable, not guessed. Beside each citation, a phrase of the seed. "
        "The seeds: " + "; ".join(f"{k} is {v}" for k, v in A.findings.SEEDS.items()) + "."
    ),
    step="findings",
)
