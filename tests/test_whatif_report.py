"""`paradnn report --what-if` on the golden store: predicted platforms join the report in their
own section, marked predicted in every table, CSV, figure and verdict, and every measured table
and figure of the report is exactly what it is without them (no predicted value enters a
measured statistic)."""

from __future__ import annotations

import csv
import filecmp

import pytest

from paradnn import report
from paradnn.analysis import whatif as W
from test_report_golden import _store, shape

WHAT_IF = "tpu-v2,tpu-v3,v100"
# what --what-if may change: its own section, and the verdicts of the observations it speaks to
OWN = ("whatif",)
CHANGED_CSV = ("findings.csv", "findings-all.csv")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("whatif")
    dbs = _store(tmp)
    plain = report.build(dbs, tmp / "plain")
    what = report.build(dbs, tmp / "what", what_if=[WHAT_IF])
    return plain, what


def _section(rep, sid):
    return next(s for s in rep.sections if s.id == sid)


def test_every_measured_section_is_unchanged_by_predictions(both):
    plain, what = both
    p, w = shape(plain), shape(what)
    ids = [s["id"] for s in w["sections"]]
    assert [i for i in ids if i not in OWN] == [s["id"] for s in p["sections"]]
    for sp in p["sections"]:
        if sp["id"] == "findings":
            continue
        assert next(s for s in w["sections"] if s["id"] == sp["id"]) == sp, sp["id"]
    # the written files, byte for byte (numbers unmasked): only the findings and what-if differ
    for f in plain.tables + plain.figures:
        other = what.html.parent / f.parent.name / f.name
        if f.name in CHANGED_CSV:
            continue
        assert other.exists() and filecmp.cmp(f, other, shallow=False), f.name


def test_findings_change_only_where_the_model_speaks_and_say_predicted(both):
    what = both[1]
    rows = {}
    for rep in both:
        with (rep.html.parent / "tables" / "findings-all.csv").open(encoding="utf-8") as fh:
            rows[rep is what] = {r["id"]: r for r in csv.DictReader(fh)}
    for fid, before in rows[False].items():
        after = rows[True][fid]
        if after["basis"] == "measured":
            assert {k: after[k] for k in before} == before, fid
        else:
            assert fid in W.WHATIF_IDS and before["verdict"] in ("untestable", "not enough data")
            assert after["basis"] in (W.MEASURED_VS_PREDICTED, W.PREDICTED_VS_PREDICTED)
            assert after["evidence"].startswith("predicted (") and "error band" in after["evidence"]
    assert rows[True]["tpu-v3"]["basis"] == W.PREDICTED_VS_PREDICTED
    assert rows[True]["tpu-vs-gpu"]["basis"] == W.PREDICTED_VS_PREDICTED
    table = _section(what, "findings").tables[0][1]
    assert "(predicted)" in table and "predicted vs predicted" in table
    lists = " ".join(x for _, xs in _section(what, "findings").lists for x in xs)
    assert "TPU v3 speeds up" not in lists  # no longer listed as untestable


def test_the_what_if_section_marks_every_predicted_value(both):
    _, what = both
    s = _section(what, "whatif")
    assert s.empty is None and s.figures and s.tables
    for f in s.figures:  # every figure's caption says predicted
        assert "predicted" in f.caption.lower(), f.name
    for caption, _ in s.tables:
        assert "predicted" in caption.lower() or "Predicted" in caption, caption
    out = what.html.parent / "tables"
    with (out / "whatif.csv").open(encoding="utf-8") as fh:
        t = list(csv.DictReader(fh))
    assert t and all(r["predicted"] == "yes" for r in t)
    assert all(r["platform there"].endswith("(predicted)") for r in t)
    assert {r["platform there"] for r in t} == {
        "tpu-v2 (predicted)", "tpu-v3 (predicted)", "v100-sxm2 (predicted)"
    }  # fmt: skip
    with (out / "whatif-configs.csv").open(encoding="utf-8") as fh:
        assert all(r["predicted"] == "yes" for r in csv.DictReader(fh))
    with (out / "whatif-table8.csv").open(encoding="utf-8") as fh:
        cols = next(csv.reader(fh))
    assert any("(predicted)" in c for c in cols)
    # no sim/error_bands.json on this checkout: bands say so instead of a number
    assert any("not validated" in n for n in s.notes) or any("±" in n for n in s.notes)
    assert "What if" in what.html.read_text(encoding="utf-8")


def test_the_default_report_has_no_what_if_section(both):
    plain, _ = both
    assert "whatif" not in [s.id for s in plain.sections]
