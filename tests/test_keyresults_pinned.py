"""The report's key results (report/keyresults.py) pinned line by line: which verdicts are
listed and which counted, the utilization headline's denominator, its ties, its boundaries and
the runs above 100 %, and which speedups are listed, in which order, in which words."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from paradnn.analysis import findings as F
from paradnn.report import keyresults as K
from paradnn.report.writer import Frame


def _w(frames: dict) -> SimpleNamespace:
    return SimpleNamespace(frames=frames)


# --- verdicts ------------------------------------------------------------------------------


def _findings(verdicts: list[str]) -> Frame:
    n = len(verdicts)
    df = pd.DataFrame(
        {
            "claim": [f"claim {i}" for i in range(n)],
            "verdict": verdicts,
            "evidence": [f"ev {i}" for i in range(n)],
            "source": [f"src {i}" for i in range(n)],
        }
    )
    return Frame(df, "")


def test_decided_verdicts_are_listed_in_order_and_inconclusive_ones_counted():
    fr = _findings([F.INCONCLUSIVE, F.FAILS, F.UNTESTABLE, F.HOLDS, F.NO_DATA, F.INCONCLUSIVE])
    got = K._verdicts(fr)
    assert got == [
        K.Line("verdict", "claim 1", "ev 1 (src 1)", "#t-findings", F.FAILS),
        K.Line("verdict", "claim 3", "ev 3 (src 3)", "#t-findings", F.HOLDS),
        K.Line(
            "count",
            "2 observations inconclusive on this data",
            "the interval straddles the threshold; the table says what more data would decide each",
            "#t-findings",
            F.INCONCLUSIVE,
        ),
    ]
    (one,) = K._verdicts(_findings([F.INCONCLUSIVE, F.UNTESTABLE]))
    assert one.words == "1 observation inconclusive on this data" and one.kind == "count"
    assert K._verdicts(_findings([F.UNTESTABLE, F.NO_DATA])) == []
    assert K._verdicts(None) == [] and K._verdicts(_findings([])) == []


# --- utilization ----------------------------------------------------------------------------


def _runs(us, col="utilization_measured", **cols) -> pd.DataFrame:
    n = len(us)
    base = {
        "family": ["fc"] * n,
        "config_key": [json.dumps({"nodes": 8 * (i + 1), "batch": 4}) for i in range(n)],
        "platform": ["P"] * n,
        "precision": ["fp32"] * n,
        "run_key": [f"k{i}" for i in range(n)],
        "achieved_flops": [1e12 * (i + 1) for i in range(n)],
        col: us,
    }
    return pd.DataFrame(base | cols)


def test_highest_and_lowest_utilization_name_the_run_and_its_denominator():
    got = K._utilization(_runs([0.5, 0.25, 0.75]))
    assert got == [
        K.Line(
            "utilization",
            "Highest utilization: fc batch=4 nodes=24 on P fp32",
            "75.0% of the measured ceiling, 3 TFLOP/s; over 3 ok runs",
            "#summary",
        ),
        K.Line(
            "utilization",
            "Lowest utilization: fc batch=4 nodes=16 on P fp32",
            "25.0% of the measured ceiling, 2 TFLOP/s; over 3 ok runs",
            "#summary",
        ),
    ]


def test_a_utilization_under_one_percent_gets_two_decimals():
    low = K._utilization(_runs([0.5, 0.005]))[1]
    assert low.stat.startswith("0.50% of the measured ceiling")
    edge = K._utilization(_runs([0.5, 0.01]))[1]  # 1 % itself: one decimal
    assert edge.stat.startswith("1.0% of the measured ceiling")
    under = K._utilization(_runs([0.5, 0.0099]))[1]
    assert under.stat.startswith("0.99% of the measured ceiling")


def test_the_settings_the_runs_differ_in_are_named():
    runs = _runs(
        [0.5, 0.25, 0.4],
        mode=["compile", "eager", "eager"],
        threads=[2, 2, 2],
        torch_version=["2.13.0", "2.14.0", "2.13.0"],
        optimizer=["sgd", "sgd", "sgd"],
    )
    hi, lo = K._utilization(runs)
    assert hi.words == "Highest utilization: fc batch=4 nodes=8 on P fp32, mode compile, " + (
        "torch version 2.13.0"
    )
    assert lo.words == "Lowest utilization: fc batch=4 nodes=16 on P fp32, mode eager, " + (
        "torch version 2.14.0"
    )


def test_without_a_measured_ceiling_the_datasheet_peak_is_the_denominator():
    runs = _runs([0.5, 0.25], col="utilization_datasheet")
    hi, lo = K._utilization(runs)
    assert hi.stat == "50.0% of the datasheet peak, 1 TFLOP/s; over 2 ok runs"
    assert lo.stat == "25.0% of the datasheet peak, 2 TFLOP/s; over 2 ok runs"
    # a measured column with fewer than two usable runs gives way to the datasheet's
    runs = runs.assign(utilization_measured=[0.3, None])
    hi, lo = K._utilization(runs)
    assert hi.stat.endswith("of the datasheet peak, 1 TFLOP/s; over 2 ok runs")
    runs = runs.assign(utilization_measured=[0.0, -0.1])  # no positive utilization either
    assert K._utilization(runs)[0].stat.endswith("over 2 ok runs")
    assert "datasheet" in K._utilization(runs)[0].stat


def test_no_utilization_column_or_too_few_runs_gives_no_line():
    assert K._utilization(pd.DataFrame({"family": ["fc"]})) == []
    assert K._utilization(_runs([0.5])) == []
    assert K._utilization(_runs([0.5, None])) == []
    assert K._utilization(_runs([0.5, 0.0])) == []
    assert K._utilization(_runs(["x", 0.3])) == []


def test_runs_above_a_datasheet_peak_are_left_out_and_said_in_a_line_of_their_own():
    runs = _runs([0.5, 1.5, 0.25, 1.0, 1.2], col="utilization_datasheet")
    hi, lo, beaten = K._utilization(runs)
    assert hi.words.startswith("Highest utilization: fc batch=4 nodes=32 on P")  # 1.0 counts
    assert hi.stat == "100.0% of the datasheet peak, 4 TFLOP/s; over 3 ok runs (2 above the " + (
        "datasheet peak left out)"
    )
    assert lo.stat.endswith("over 3 ok runs (2 above the datasheet peak left out)")
    assert beaten == K.Line(
        "count",
        "2 ok runs above 100% of the datasheet peak: the peak is beaten, so they are no "
        "utilization headline",
        "highest 150.0% (fc on P fp32, 2 TFLOP/s); check the run's FLOP count and the "
        "platform entry",
        "#summary",
        "beaten",
    )


def test_a_beaten_measured_ceiling_is_read_from_its_flag_and_says_how_to_re_measure():
    runs = _runs(
        [0.5, 0.9, 0.25, 1.3],
        ceiling_beaten=[False, True, None, math.nan],
    )
    hi, lo, beaten = K._utilization(runs)
    # the flag decides, not the value: 1.3 unflagged is a headline, 0.9 flagged is not
    assert hi.stat == "130.0% of the measured ceiling, 4 TFLOP/s; over 3 ok runs (1 above the " + (
        "measured ceiling left out)"
    )
    assert lo.stat.startswith("25.0% of the measured ceiling")
    assert beaten == K.Line(
        "count",
        "1 ok run above 100% of the measured ceiling: it is beaten, so it is no utilization "
        "headline",
        "highest 90.0% (fc on P fp32, 2 TFLOP/s); re-measure it: `paradnn calibrate --force`",
        "#summary",
        "beaten",
    )


def test_only_beaten_runs_give_the_beaten_line_alone():
    runs = _runs([1.5, 0.5], col="utilization_datasheet")
    (beaten,) = K._utilization(runs)
    assert beaten.kind == "count" and beaten.words.startswith("1 ok run above 100% of the")
    assert beaten.stat.startswith("highest 150.0% (fc on P fp32, 1 TFLOP/s)")
    # a flagged run without a value is no beaten run
    runs = _runs([None, 0.5, 0.4], ceiling_beaten=[True, False, False])
    hi, lo = K._utilization(runs)
    assert hi.stat == "50.0% of the measured ceiling, 2 TFLOP/s; over 2 ok runs"
    assert lo.stat == "40.0% of the measured ceiling, 3 TFLOP/s; over 2 ok runs"


def test_beaten_picks_the_highest_of_several():
    over = _runs([1.2, 1.7, 1.1], col="utilization_datasheet")
    (line,) = K._beaten(over, over["utilization_datasheet"], "datasheet peak")
    assert line.words.startswith("3 ok runs above 100% of the datasheet peak")
    assert line.stat.startswith("highest 170.0% (fc on P fp32, 2 TFLOP/s)")
    assert K._beaten(over.iloc[:0], over["utilization_datasheet"].iloc[:0], "x") == []


# --- speedups -------------------------------------------------------------------------------


def _summary(rows: list[tuple], band: bool = False, **cols) -> pd.DataFrame:
    """(family, n, geomean, lo, hi, call) rows."""
    lo, hi = ("geomean_band_low", "geomean_band_high") if band else K.CI_ENDS
    df = pd.DataFrame(rows, columns=["family", "n", "geomean", lo, hi, "geomean_call"])
    return df.assign(**cols)


def test_a_comparisons_overall_row_is_its_line():
    df = _summary([("fc", 4, 2.0, 1.5, 2.5, "faster"), ("all", 8, 1.25, 1.1, 1.4, "faster")])
    got = K._speedups({"speedup-precision-bf16-over-fp32": Frame(df, "cap")})
    assert got == [
        K.Line(
            "speedup",
            "bf16 over fp32 (precision): faster",
            "1.25× geometric mean, 95% CI 1.1–1.4×, 8 matched configs",
            "#t-speedup-precision-bf16-over-fp32",
            "faster",
        )
    ]


def test_without_an_overall_row_every_family_is_a_line_largest_effect_first():
    df = _summary(
        [
            ("cnn", 3, 0.5, 0.4, 0.6, "slower"),
            ("fc", None, 1.5, 1.2, 1.8, "faster"),
            ("rnn", math.nan, 3.0, 2.0, 4.0, "faster"),
            ("tf", 2, 5.0, 0.5, 9.0, "no detectable change"),
            ("zoo", 2, math.nan, 1.1, 1.2, "faster"),
        ]
    )
    got = K._speedups({"my table": Frame(df, "Threads: 2 over 1 — per config")})
    assert [g.words for g in got] == [
        "Threads (rnn): faster",
        "Threads (cnn): slower",
        "Threads (fc): faster",
    ]
    assert [g.stat for g in got] == [
        "3× geometric mean, 95% CI 2–4×",
        "0.5× geometric mean, 95% CI 0.4–0.6×, 3 matched configs",
        "1.5× geometric mean, 95% CI 1.2–1.8×",
    ]
    assert [g.tone for g in got] == ["faster", "slower", "faster"]
    assert {g.href for g in got} == {"#t-my-table"}


def test_equal_effects_order_by_words_and_a_repeated_stat_is_listed_once():
    a = _summary([("all", 2, 2.0, 1.5, 2.5, "faster")])
    b = _summary([("all", 3, 0.5, 0.4, 0.6, "slower")])  # |log 0.5| = |log 2|
    frames = {
        "speedup-mode-compile-over-eager": Frame(a, ""),
        "speedup-threads-2-over-1": Frame(b, ""),
        "modes-compile": Frame(a, "compile over eager per family: …"),  # the same stat
    }
    got = K._speedups(frames)
    assert [g.words for g in got] == [
        "2 over 1 (threads): slower",
        "compile over eager (mode): faster",
    ]
    assert got[1].href == "#t-speedup-mode-compile-over-eager"
    assert K._speedups(dict(reversed(list(frames.items()))))[0].words == (
        "2 over 1 (threads): slower"
    )


def test_equal_effects_and_words_order_by_the_stat_in_either_order():
    a = _summary([("all", 3, 2.0, 1.5, 2.5, "faster")])
    b = _summary([("all", 2, 2.0, 1.5, 2.5, "faster")])
    frames = {"x1": Frame(a, "Same"), "x2": Frame(b, "Same")}
    for order in (frames, dict(reversed(list(frames.items())))):
        got = K._speedups(order)
        assert [g.stat for g in got] == [
            "2× geometric mean, 95% CI 1.5–2.5×, 2 matched configs",
            "2× geometric mean, 95% CI 1.5–2.5×, 3 matched configs",
        ]


def test_at_most_eight_speedups():
    frames = {
        f"speedup-x-{i}-over-0": Frame(_summary([("all", 1, 1.0 + i, 1.0 + i / 2, 2.0 + i,
                                                   "faster")]), "")
        for i in range(1, 11)
    }  # fmt: skip
    got = K._speedups(frames)
    assert len(got) == K.MAX_SPEEDUPS == 8
    assert [g.words for g in got] == [f"{i} over 0 (x): faster" for i in range(10, 2, -1)]


def test_a_predicted_comparison_names_its_pair_and_calls_its_interval_a_band():
    df = _summary(
        [("cnn", 4, 3.0, 2.0, 4.0, "faster"), ("all", 4, 3.0, 2.0, 4.0, "faster")],
        band=True,
        pair="tpu-v2 (predicted) over P",
    )
    (line,) = K._speedups({"whatif-x": Frame(df, "ignored: caption")})
    assert line.words == "tpu-v2 (predicted) over P: faster"
    assert line.stat == ("3× geometric mean (model error band 2–4×; predicted), 4 matched configs")
    df = df.assign(basis="measured vs predicted")
    (line,) = K._speedups({"whatif-x": Frame(df, "")})
    assert "(model error band 2–4×; measured vs predicted)" in line.stat
    df = df.assign(basis=None)
    (line,) = K._speedups({"whatif-x": Frame(df, "")})
    assert "; predicted)" in line.stat


def test_a_table_missing_a_column_is_no_speedup():
    full = _summary([("all", 2, 2.0, 1.5, 2.5, "faster")])
    for col in ("geomean", "geomean_ci_low", "geomean_ci_high", "geomean_call"):
        assert K._speedups({"t": Frame(full.drop(columns=col), "")}) == []
    # band columns without the pair column: read as a measured table (which it lacks)
    b = _summary([("all", 2, 2.0, 1.5, 2.5, "faster")], band=True)
    assert K._speedups({"t": Frame(b, "")}) == []
    assert K._speedups({}) == []
    one = full.assign(family=["fc"])
    assert K._speedups({"t": Frame(one, "T")})[0].words == "T (fc): faster"
    # no family column: the table is one overall comparison (it once raised AttributeError)
    bare = full[["geomean", "geomean_ci_low", "geomean_ci_high", "geomean_call"]]
    (line,) = K._speedups({"t": Frame(bare, "T")})
    assert line.words == "T: faster" and line.stat == "2× geometric mean, 95% CI 1.5–2.5×"


@pytest.mark.parametrize(
    "name, caption, what",
    [
        ("speedup-precision-bf16-over-fp32", "", "bf16 over fp32 (precision)"),
        ("speedup-data_source-host-over-device", "", "host over device (data source)"),
        ("speedup-x-a-b-over-c", "", "a-b over c (x)"),
        ("speedups", "Modes — compile over eager: x", "Modes"),
        ("t", "Compile over eager per family: table", "Compile over eager"),
        ("t", "Threads: 2 over 1", "Threads"),
        ("t", "plain caption", "plain caption"),
        ("xspeedup-a-b-over-c", "C", "C"),
    ],
)
def test_what_a_speedup_table_compares(name, caption, what):
    assert K._what(name, caption) == what


@pytest.mark.parametrize(
    "key, text",
    [
        ('{"nodes": 8, "batch": 4, "layers": 2}', "batch=4 nodes=8 layers=2"),
        ('{"nodes": 8}', "nodes=8"),
        ({"a": 1, "batch": 2}, "batch=2 a=1"),
        (None, ""),
        ("not json", ""),
        (5, ""),
    ],
)
def test_a_configuration_is_written_batch_first(key, text):
    assert K._config(key) == text


def test_lines_are_the_verdicts_then_the_utilization_then_the_speedups():
    frames = {
        "findings-all": _findings([F.HOLDS, F.INCONCLUSIVE]),
        "speedup-precision-bf16-over-fp32": Frame(
            _summary([("all", 2, 2.0, 1.5, 2.5, "faster")]), ""
        ),
    }
    got = K.lines(_w(frames), _runs([0.5, 0.25]))
    assert [g.kind for g in got] == ["verdict", "count", "utilization", "utilization", "speedup"]
    assert K.lines(_w({}), pd.DataFrame()) == []


def test_equal_utilizations_go_to_the_first_family_by_name_before_anything_else():
    runs = _runs([0.5, 0.5, 0.1]).assign(
        family=["fc", "cnn", "fc"],
        config_key=['{"batch": 4}', '{"batch": 4}', '{"batch": 8}'],
        run_key=["a", "b", "c"],
    )
    hi, lo = K._utilization(runs)
    assert hi.words == "Highest utilization: cnn batch=4 on P fp32"
    assert lo.words == "Lowest utilization: fc batch=8 on P fp32"


@pytest.mark.parametrize(
    "col, values, first",
    [
        ("config_key", ['{"batch": 8}', '{"batch": 4}'], "fc batch=4 on P fp32"),
        ("platform", ["Q", "P"], "fc batch=4 on P fp32"),
        ("precision", ["fp32", "bf16"], "fc batch=4 on P bf16"),
    ],
)
def test_equal_utilizations_then_go_by_config_platform_and_precision(col, values, first):
    runs = _runs([0.5, 0.5, 0.1]).assign(config_key=['{"batch": 4}'] * 3, run_key=["a", "b", "c"])
    runs[col] = [*values, runs[col].iloc[2]]
    hi, _ = K._utilization(runs)
    assert hi.words.startswith(f"Highest utilization: {first}")
