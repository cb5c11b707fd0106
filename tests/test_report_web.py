"""The report's page without a browser: the key results, the interactive figures' JSON (escaped,
no NaN, grouped into selectors), and the table rules (only the columns that vary, settings
named once, long text clamped, verdicts marked, no scientific notation). The browser test
(test_report_browser.py) checks how the same page lays out."""

from __future__ import annotations

import json

import pandas as pd

from paradnn.analysis.roofline import Roof
from paradnn.plots import interactive as I
from paradnn.report import cells, keyresults
from paradnn.report.build import figure_blocks
from paradnn.report.writer import Figure, Frame, script_json

EVIL = "<script>alert('x')</script>"


def test_scientific_notation_is_written_out_and_p_values_read_as_quoted():
    assert cells.plain("5.9e-06") == "0.0000059"
    assert cells.plain("1e+03 M") == "1,000 M"
    assert cells.plain("w(batch) 5.55e-17 [-1.15, 1.15]") == (
        "w(batch) 0.0000000000000000555 [-1.15, 1.15]"
    )
    assert cells.plain("lr=1e-3 model e5") == "lr=1e-3 model e5"  # not Python's form: kept
    assert cells.p_value(5.9e-6) == "< 0.001"
    assert cells.p_value(0.0312) == "0.031"
    html = cells.html_table(pd.DataFrame({"hyperparameter": ["a", "b"], "p_value": [5.9e-6, 0.2]}))
    assert "e-" not in html and "&lt; 0.001" in html


def test_tables_show_the_columns_that_vary_and_name_equal_settings_once():
    df = pd.DataFrame(
        {
            "family": ["fc", "fc", "fc"],
            "platform": ["A", "A", "A"],
            "threads": [2, 2, 2],
            "speedup": [1.5, 1.5, 1.5],  # a measurement: stays a column though equal
            "nothing": [None, None, None],  # — everywhere: left out
            "claim": ["x" * 80, "short", "y"],
            "call": ["faster", "slower", "no detectable change"],
        }
    )
    html = cells.html_table(df, table_id="t-x")
    assert '<p class="same">In every row: platform <b>A</b> · threads <b>2</b></p>' in html
    assert "<th>platform</th>" not in html and "<th>threads</th>" not in html
    assert "<th>speedup</th>" in html and "nothing" not in html
    assert '<td class="long"><div>' + "x" * 80 + "</div></td>" in html
    assert '<td class="v v-faster">faster</td>' in html
    assert '<td class="v v-no-detectable-change">' in html
    assert '<table class="tbl" id="t-x">' in html
    one = cells.html_table(df.head(1))  # one row: nothing is hoisted
    assert "<th>platform</th>" in one and "same" not in one


def test_interactive_figures_escape_what_users_wrote_and_carry_no_nan():
    points = pd.DataFrame(
        {
            "family": ["fc", "fc"],
            "config_key": [json.dumps({"batch": 8, "nodes": EVIL}), json.dumps({"batch": 16})],
            "intensity": [4.0, float("nan")],
            "achieved_flops": [1e9, 2e9],
        }
    )
    roofs = [Roof("measured", 1e11, 1e10, "paradnn calibrate")]
    spec = I.roofline(points, roofs, f"{EVIL} fp32")
    text = script_json(spec)
    assert "<" not in text and ">" not in text and "NaN" not in text
    back = json.loads(text)
    assert back["group"] == "roofline"
    hover = " ".join(t for tr in back["data"] for t in tr.get("text", []) or [])
    assert "batch=8" in hover and "&lt;script&gt;" in hover
    names = [tr.get("name", "") for tr in back["data"]]
    assert any("ridge 10 FLOP/B" in n for n in names)  # the ridge in the legend, not on the plot
    assert back["layout"]["xaxis"]["exponentformat"] == "SI"
    assert I.words("utilization_measured") == "FLOP/s utilization (of measured ceiling)"
    assert I.words("step_time_ms") == "step time ms"


def test_figures_of_one_kind_share_one_selector_where_the_first_stood():
    figs = [
        Figure("a", "a", spec="{}", group="roofline"),
        Figure("png", "png", data="x"),
        Figure("b", "b", spec="{}", group="roofline"),
        Figure("c", "c", spec="{}", group="other"),
    ]
    assert [[f.name for f in b] for b in figure_blocks(figs)] == [["a", "b"], ["png"], ["c"]]


class _W:
    def __init__(self, frames):
        self.frames = frames


def test_key_results_list_decided_verdicts_utilization_extremes_and_clear_speedups():
    findings = pd.DataFrame(
        {
            "claim": ["FC utilization rises with batch size", "bf16 is faster", "width"],
            "verdict": ["holds", "does not hold", "inconclusive"],
            "evidence": ["w(batch) = +0.72 [+0.50, +0.94]", "0.89× [0.85, 0.93]", "w = 0.1"],
            "source": ["seed 000 §4.1", "seed 000 §6", "seed 000 §4.1"],
        }
    )
    summary = pd.DataFrame(
        {
            "family": ["fc", "all"],
            "n": [8, 8],
            "geomean": [0.89, 0.89],
            "geomean_ci_low": [0.85, 0.85],
            "geomean_ci_high": [0.93, 0.93],
            "geomean_call": ["slower", "slower"],
        }
    )
    unclear = summary.assign(geomean_ci_high=1.1, geomean_call="no detectable change")
    frames = {
        "findings-all": Frame(findings, ""),
        "speedup-precision-bf16-over-fp32": Frame(summary, ""),
        "modes-compile": Frame(summary, "compile over eager per family: …"),  # the same one
        "speedup-threads-2-over-1": Frame(unclear, ""),
    }
    runs = pd.DataFrame(
        {
            "family": ["fc", "fc", "fc"],
            "config_key": [json.dumps({"nodes": 32, "batch": 64})] * 3,
            "platform": ["cpu"] * 3,
            "precision": ["fp32"] * 3,
            "threads": [1, 2, 2],
            "utilization_measured": [0.14, 0.81, None],
            "achieved_flops": [2.8e10, 1.6e11, None],
        }
    )
    got = keyresults.lines(_W(frames), runs)
    kinds = [k.kind for k in got]
    assert kinds == ["verdict", "verdict", "count", "utilization", "utilization", "speedup"]
    assert got[0].words == "FC utilization rises with batch size" and got[0].tone == "holds"
    assert got[0].stat.startswith("w(batch) = +0.72") and got[0].href == "#t-findings"
    assert got[2].words.startswith("1 observation inconclusive")
    assert got[3].words == "Highest utilization: fc batch=64 nodes=32 on cpu fp32, threads 2"
    assert got[3].stat.startswith("81.0% of the measured ceiling")
    assert got[4].words.startswith("Lowest utilization") and "threads 1" in got[4].words
    sp = got[5]
    assert sp.words == "bf16 over fp32 (precision): slower" and sp.tone == "slower"
    assert sp.stat == "0.89× geometric mean, 95% CI 0.85–0.93×, 8 matched configs"
    assert sp.href == "#t-speedup-precision-bf16-over-fp32"


def test_a_predicted_speedup_names_both_platforms_and_calls_its_interval_a_band():
    """Issue 41: 'Predicted (measured vs predicted): faster — 12.3× … 95% CI 2.29–22.4×' named
    neither platform and called the model's error band a 95% CI."""
    summary = pd.DataFrame(
        {
            "family": ["cnn", "all"],
            "n": [24, 24],
            "geomean": [12.3, 12.3],
            "geomean_band_low": [2.29, 2.29],
            "geomean_band_high": [22.4, 22.4],
            "geomean_call": ["faster", "faster"],
            "predicted": ["yes", "yes"],
            "basis": ["predicted vs predicted"] * 2,
            "pair": ["tpu-v2 (predicted) over v100-sxm2 (predicted)"] * 2,
        }
    )
    caption = "Predicted (predicted vs predicted): tpu-v2 (predicted) over v100-sxm2 (predicted)"
    frames = {"whatif-tpu-v2 (predicted)-over-v100-sxm2 (predicted)": Frame(summary, caption)}
    (line,) = keyresults.lines(_W(frames), pd.DataFrame())
    assert line.words == "tpu-v2 (predicted) over v100-sxm2 (predicted): faster"
    assert line.stat == (
        "12.3× geometric mean (model error band 2.29–22.4×; predicted vs predicted), "
        "24 matched configs"
    )
    assert "CI" not in line.stat and line.tone == "faster"


def test_log_axes_get_a_few_round_ticks_written_as_the_report_writes_numbers():
    """plotly labels a short log range with bare digits (8, 9, 1×) that run into each other;
    the report gives log axes their own 1-2-5 ticks, at most 8."""
    narrow = I.figure(
        [{"x": [1.0, 2.0], "y": [0.8, 1.3]}],
        {"xaxis": {"type": "log"}, "yaxis": {"type": "log", "ticksuffix": "×"}},
    )["layout"]
    assert narrow["yaxis"]["ticktext"] == ["0.8×", "0.9×", "1×"]
    wide = I.figure([{"x": [1e3, 1e9], "y": [1, 2]}], {"xaxis": {"type": "log"}})["layout"]
    assert wide["xaxis"]["ticktext"] == ["1k", "10k", "100k", "1M", "10M", "100M", "1G"]
    assert len(wide["xaxis"]["tickvals"]) <= 8
    assert "tickvals" not in wide["yaxis"]  # a linear axis keeps plotly's own ticks


def test_titles_break_between_words_into_lines_a_phone_can_show():
    title = I.wrap("fc on AMD EPYC 9B14 &amp; friends, bf16: FLOP/s utilization (of measured)")
    lines = title.split("<br>")
    assert lines == ["fc on AMD EPYC 9B14 &amp; friends, bf16: FLOP/s", "utilization (of measured)"]
    assert len("fc on AMD EPYC 9B14 & friends, bf16: FLOP/s utilization") > I.TITLE_CHARS
    assert I.wrap("x" * 50, 20) == "x" * 20 + "<br>" + "x" * 20 + "<br>" + "x" * 10  # cut
    assert I.wrap("short") == "short" and I.wrap("") == ""
    assert I.wrap("a&lt;b " * 10, 12).count("&lt;") == 10  # an entity counts as one, never split
    spec = I.figure([{"type": "heatmap", "z": [[1]]}], {"title": "t " * 40})
    assert spec["layout"]["title"]["text"].count("<br>") == 1
    assert spec["layout"]["margin"]["t"] >= 26 + I.TITLE_LINE_PX * 2
    assert spec["data"][0]["name"] == "heatmap"  # never "trace 0" in a hover box
