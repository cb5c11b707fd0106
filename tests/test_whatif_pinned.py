"""analysis/whatif.py pinned on a hand-made sweep whose every number is known: three measured
configs (FC small and large, a CNN, an RNN) with stored 95% CIs, and predicted GPU and TPUs
with bands. Each function's rows, columns, intervals, calls, words and verdicts are held to
values computed here by hand, and each branch (no band, no pair, no prediction) is taken."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F
from paradnn.analysis import whatif as W
from paradnn.sim import whatif as SW

import synth

FCA = {"layers": 2, "nodes": 64, "input": 100, "output": 10, "batch": 32}
FCB = {"layers": 2, "nodes": 256, "input": 100, "output": 10, "batch": 32}
CNN = {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 4}
RNN = {"layers": 1, "embed": 16, "length": 4, "vocab": 32, "batch": 8}
GPU, TPU, V3 = SW.label("v100-sxm2"), SW.label("tpu-v2"), SW.label("tpu-v3")


def _meas(fam, cfg, x, lo, hi, util, **kw) -> dict:
    """A measured run at `x` examples/s whose step time's 95% CI is [t·lo, t·hi]."""
    r = synth.row(fam, cfg, 0.1, platform="Here", **kw)
    t = cfg["batch"] / x
    return r | {"examples_per_s": x, "step_time_s": t, "step_time_ci_low_s": t * lo,
                "step_time_ci_high_s": t * hi, "utilization_datasheet": util}  # fmt: skip


def _measured() -> A.Data:
    return A.from_frames(
        [
            _meas("fc", FCA, 100.0, 0.9, 1.25, 0.2),
            _meas("fc", FCB, 50.0, 0.8, 1.0, 0.4),
            _meas("cnn", CNN, 10.0, 0.5, 2.0, 0.1),
            _meas("rnn", RNN, 20.0, 0.5, 2.0, 0.3),
        ]
    )


def _key(data: A.Data, fam: str, cfg: dict) -> str:
    r = data.runs
    return r[(r["family"] == fam) & (r["nodes" if fam == "fc" else "batch"] == (
        cfg["nodes"] if fam == "fc" else cfg["batch"]))]["config_key"].iloc[0]  # fmt: skip


def _p(data, pid, kind, fam, cfg, x, e, util, bottleneck="compute", prec="bf16", here="fp32"):
    return {
        "kind": "predicted", "predicted": True, "platform": SW.label(pid), "platform_id": pid,
        "device_kind": kind, "family": fam, "config": _key(data, fam, cfg),
        "precision_here": here, "precision": prec, "optimizer": "rmsprop", "band": e,
        "band_label": f"{kind} band {e}", "examples_per_s": x,
        "examples_per_s_low": None if e is None else x * (1 - e),
        "examples_per_s_high": None if e is None else x * (1 + e), "utilization": util,
        "bottleneck": bottleneck, "reason": None,
    }  # fmt: skip


def _rows(data, e_gpu=0.1, e_tpu=0.2) -> list[dict]:
    return [
        _p(data, "v100-sxm2", "gpu", "fc", FCA, 200.0, e_gpu, 0.3, prec="fp32"),
        _p(data, "v100-sxm2", "gpu", "fc", FCB, 25.0, e_gpu, 0.5, "memory", prec="fp32"),
        _p(data, "v100-sxm2", "gpu", "cnn", CNN, 40.0, e_gpu, 0.2, prec="fp32"),
        _p(data, "v100-sxm2", "gpu", "rnn", RNN, 10.0, e_gpu, 0.1, "memory", prec="fp32"),
        _p(data, "tpu-v2", "tpu", "fc", FCA, 400.0, e_tpu, 0.6),
        _p(data, "tpu-v2", "tpu", "fc", FCB, 100.0, e_tpu, 0.5, "memory"),
        _p(data, "tpu-v2", "tpu", "cnn", CNN, 100.0, e_tpu, 0.8),
        _p(data, "tpu-v2", "tpu", "rnn", RNN, 45.0, e_tpu, 0.45, "memory"),
    ]


def _data(**kw) -> A.Data:
    d = _measured()
    return W.with_predictions(d, _rows(d, **kw))


# --- the predicted frame --------------------------------------------------------------------


def test_predicted_frame_keys_flattens_and_takes_the_measured_params():
    d = _measured()
    rows = [dict(_rows(d)[0], config=json.dumps({"nodes": 64, "batch": 32, "layers": 2,
                                                   "input": 100, "output": 10}))]  # fmt: skip
    p = W.predicted_frame(rows, d)
    assert p["config_key"].iloc[0] == _key(d, "fc", FCA)
    assert p["predicted"].tolist() == [True]
    assert (p["nodes"].iloc[0], p["batch"].iloc[0], p["layers"].iloc[0]) == (64, 32, 2)
    assert p["family"].iloc[0] == "fc"  # a config key never replaces a row's own column
    want = d.runs.set_index("config_key")["params"][_key(d, "fc", FCA)]
    assert p["params"].iloc[0] == want
    alone = W.predicted_frame(rows)
    assert alone["params"].tolist() == [None]
    kept = W.predicted_frame([dict(rows[0], params=7)])
    assert kept["params"].tolist() == [7]
    assert W.predicted_frame([dict(rows[0], params=7)], A.from_frames([]))["params"].tolist() == [7]
    assert len(W.predicted_frame([])) == 0 and len(W.predicted_frame([], d)) == 0


def test_with_predictions_leaves_the_runs_and_has_predictions_needs_a_number():
    d = _measured()
    w = W.with_predictions(d, _rows(d))
    assert w.runs is d.runs and len(w.predicted) == 8 and w is not d
    assert W.has_predictions(w) and not W.has_predictions(d)
    none = W.with_predictions(d, [dict(r, examples_per_s=None) for r in _rows(d)])
    assert not W.has_predictions(none)
    one = W.with_predictions(d, [dict(r, examples_per_s=None) for r in _rows(d)[1:]] + _rows(d)[:1])
    assert W.has_predictions(one)


def test_platforms_here_by_run_count_there_in_order():
    d = _data()
    assert W.platforms(d) == (["Here"], [GPU, TPU])
    rows = [synth.row("fc", FCA, 0.1, platform="B", hostname=f"h{i}") for i in range(2)]
    rows.append(synth.row("fc", FCA, 0.1, platform="A"))
    two = A.from_frames(rows)
    assert W.platforms(two) == (["B", "A"], [])
    assert W.platforms(A.from_frames([])) == ([], [])


def test_basis_of_a_pair():
    d = _data()
    assert W.basis(d, GPU, TPU) == W.PREDICTED_VS_PREDICTED == "predicted vs predicted"
    assert W.basis(d, "Here", TPU) == W.MEASURED_VS_PREDICTED == "measured vs predicted"
    assert W.basis(d, GPU, "Here") == W.MEASURED_VS_PREDICTED
    assert W.basis(d, "Here", "Other") == W.MEASURED == "measured"


# --- one side, a pair -----------------------------------------------------------------------


def test_the_measured_side_takes_its_interval_from_the_stored_ci():
    s = W._side(_data(), "Here").set_index("family")
    assert list(s.columns) == [c for c in W._side(_data(), "Here").columns if c != "family"]
    assert s.loc["fc"].shape[0] == 2
    fc = s.loc["fc"].set_index("config_key")
    a, b = fc.loc[_key(_data(), "fc", FCA)], fc.loc[_key(_data(), "fc", FCB)]
    assert (a["value"], a["low"], a["high"]) == pytest.approx((100.0, 80.0, 100 / 0.9))
    assert (b["value"], b["low"], b["high"]) == pytest.approx((50.0, 50.0, 62.5))
    assert (a["util"], b["util"]) == pytest.approx((0.2, 0.4))
    cnn = s.loc["cnn"]
    assert (cnn["low"], cnn["high"]) == pytest.approx((5.0, 20.0))
    assert cnn["precision"] == "fp32" and cnn["precision_here"] == "fp32"
    assert cnn["predicted"] == False and cnn["bottleneck"] is None  # noqa: E712
    assert cnn["band_label"] is None and cnn["optimizer"] == "rmsprop"


def test_a_side_has_the_promised_columns():
    cols = ["family", "config_key", "optimizer", "precision_here", "params", "precision",
            "value", "low", "high", "util", "bottleneck", "predicted", "band_label"]  # fmt: skip
    d = _data()
    for label in ("Here", TPU, "Nowhere"):
        assert list(W._side(d, label).columns) == cols, label
    assert len(W._side(d, "Nowhere")) == 0


def test_a_measured_side_without_a_ci_is_its_point_and_several_runs_are_their_median():
    rows = [
        synth.row("fc", FCA, 0.1, platform="Here") | {"examples_per_s": 10.0, "util_x": 1},
        synth.row("fc", FCA, 0.1, platform="Here", hostname="b") | {"examples_per_s": 30.0},
        synth.row("fc", FCA, 0.1, platform="Here", hostname="c") | {"examples_per_s": 40.0},
        synth.row("fc", FCB, 0.1, platform="Here") | {"examples_per_s": 0.0},  # no rate: out
    ]
    rows[0] |= {"step_time_s": 3.2, "step_time_ci_low_s": 3.0, "step_time_ci_high_s": 4.0}
    s = W._side(A.from_frames(rows), "Here")
    assert len(s) == 1
    (r,) = s.to_dict("records")
    assert r["value"] == 30.0  # the median of 10, 30, 40
    assert r["low"] == pytest.approx(10 * 3.2 / 4.0)  # the lowest end of any run
    assert r["high"] == 40.0  # the others have no CI: their point
    assert math.isnan(r["util"])


def test_the_predicted_side_reads_the_band_and_leaves_out_rows_without_a_number():
    d = _measured()
    rows = _rows(d)
    rows[5] = dict(rows[5], examples_per_s=None)
    s = W._side(W.with_predictions(d, rows), TPU).set_index("family")
    assert list(s.index) == ["fc", "cnn", "rnn"]
    fc = s.loc["fc"]
    assert (fc["value"], fc["low"], fc["high"], fc["util"]) == pytest.approx(
        (400.0, 320.0, 480.0, 0.6)
    )
    assert fc["bottleneck"] == "compute" and fc["precision"] == "bf16"
    assert fc["predicted"] == True and fc["band_label"] == "tpu band 0.2"  # noqa: E712


def test_a_pair_divides_the_ends_of_its_two_sides():
    d = _data()
    c = W.pair(d, "Here", TPU)
    assert (c.by, c.a, c.b, c.metric) == ("platform", "Here", TPU, "examples_per_s")
    assert c.key == W.MATCH
    p = c.pairs.set_index(["family", "nodes" if False else "config_key"])
    got = {
        (f, json.loads(k).get("nodes", json.loads(k)["batch"])): (r.speedup, r.ci_low, r.ci_high)
        for (f, k), r in p.iterrows()
    }
    want = {
        ("fc", 64): (4.0, 320 / (100 / 0.9), 480 / 80),
        ("fc", 256): (2.0, 80 / 62.5, 120 / 50),
        ("cnn", 4): (10.0, 80 / 20, 120 / 5),
        ("rnn", 8): (2.25, 36 / 40, 54 / 10),
    }
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    calls = dict(zip(c.pairs["family"] + c.pairs["batch"].astype(str), c.pairs["call"],
                     strict=True))  # fmt: skip
    assert calls == {"fc32": "faster", "cnn4": "faster", "rnn8": "no detectable change"}
    assert (c.pairs["basis"] == W.MEASURED_VS_PREDICTED).all()
    assert (c.pairs["platform_a"] == "Here").all() and (c.pairs["platform_b"] == TPU).all()
    assert c.pairs["params"].notna().all() and "nodes" in c.pairs and "layers" in c.pairs


def test_a_pair_without_a_band_has_no_interval_and_says_so():
    d = _data(e_tpu=None)
    c = W.pair(d, "Here", TPU)
    assert c.pairs["ci_low"].isna().all() and c.pairs["ci_high"].isna().all()
    assert set(c.pairs["call"]) == {"no interval"}
    s = c.summary.set_index("family")
    assert s.loc["all", "no_interval"] == 4 and s.loc["all", "faster"] == 0
    assert s.loc["all", "geomean_call"] == "no interval"


def test_a_zero_or_infinite_end_is_no_interval():
    d = _measured()
    rows = _rows(d)
    rows[4] = dict(rows[4], examples_per_s_low=0.0)
    rows[5] = dict(rows[5], examples_per_s_high=math.inf)
    c = W.pair(W.with_predictions(d, rows), "Here", TPU)
    fc = c.pairs[c.pairs["family"] == "fc"].set_index("nodes")
    assert math.isnan(fc.loc[64, "ci_low"]) and fc.loc[64, "ci_high"] == pytest.approx(6.0)
    assert math.isnan(fc.loc[256, "ci_high"]) and fc.loc[256, "ci_low"] == pytest.approx(1.28)
    assert set(fc["call"]) == {"no interval"}


def test_a_pair_with_nothing_in_common_is_empty_with_its_summary_columns():
    c = W.pair(_data(), "Here", "Nowhere")
    assert len(c.pairs) == 0 and len(c.summary) == 0
    assert list(c.summary.columns) == list(A.speedup.SUMMARY_COLUMNS)


def test_the_summary_of_a_pair_per_family_and_overall():
    s = W.pair(_data(), "Here", TPU).summary.set_index("family")
    assert list(s.index) == ["cnn", "fc", "rnn", "all"]
    allrow = s.loc["all"]
    sp = np.array([4.0, 2.0, 10.0, 2.25])
    assert allrow["n"] == 4 and allrow["faster"] == 3 and allrow["slower"] == 0
    assert allrow["no_change"] == 1 and allrow["no_interval"] == 0
    assert allrow["faster_share"] == pytest.approx(1.0)
    assert allrow["geomean"] == pytest.approx(np.exp(np.log(sp).mean()))
    lo = np.array([320 / (100 / 0.9), 1.28, 4.0, 0.9])
    hi = np.array([6.0, 2.4, 24.0, 5.4])
    assert allrow["geomean_ci_low"] == pytest.approx(np.exp(np.log(lo).mean()))
    assert allrow["geomean_ci_high"] == pytest.approx(np.exp(np.log(hi).mean()))
    assert allrow["geomean_call"] == "faster"
    assert allrow["median"] == pytest.approx(np.median(sp))
    assert allrow["p90"] == pytest.approx(np.quantile(sp, 0.9))
    assert (allrow["min"], allrow["max"], allrow["emulated"]) == (2.0, 10.0, 0)
    fc = s.loc["fc"]
    assert fc["n"] == 2 and fc["geomean"] == pytest.approx(math.sqrt(8))
    assert s.loc["rnn", "geomean_call"] == "no detectable change"


def test_slower_pairs_are_counted_as_slower():
    s = W.pair(_data(), TPU, "Here").summary.set_index("family")
    assert s.loc["all", "slower"] == 3 and s.loc["all", "faster"] == 0
    assert s.loc["all", "faster_share"] == pytest.approx(0.0)
    assert s.loc["all", "geomean_call"] == "slower"


def test_call():
    assert W._call(None, 2.0) == "no interval" and W._call(1.1, math.nan) == "no interval"
    assert W._call(1.1, 1.3) == "faster" and W._call(0.5, 0.9) == "slower"
    assert W._call(0.9, 1.1) == "no detectable change"
    assert W._call(np.float64(1.2), "1.4") == "faster"


def test_one_prediction_per_config_at_the_papers_16_bit_policy():
    m = pd.DataFrame(
        {
            "family": ["fc"] * 4 + ["cnn"] * 2,
            "config_key": ["a"] * 4 + ["b"] * 2,
            "optimizer": ["o"] * 6,
            "precision_here": ["fp32", "bf16", "fp16", "tf32", "fp32", "bf16"],
            "precision_a": ["fp32", "fp16", "fp32", "fp16", "fp32", "fp32"],
            "precision_b": ["bf16", "bf16", "bf16", "fp32", "fp32", "fp32"],
            "tag": [0, 1, 2, 3, 4, 5],
        }
    )
    got = W._one_per_config(m)
    assert got["tag"].tolist() == [1, 5] and list(got.index) == [0, 1]
    renamed = m.rename(columns={"precision_a": "precision_g", "precision_b": "precision_t"})
    got = W._one_per_config(renamed, "_g", "_t")
    assert got["tag"].tolist() == [1, 5]
    assert len(W._one_per_config(m.iloc[:0])) == 0 and "_wide" not in got


def test_geo_or_nan():
    assert W._geo_or_nan(pd.Series([2.0, 8.0])) == pytest.approx(4.0)
    assert W._geo_or_nan(pd.Series(["2", "8"])) == pytest.approx(4.0)
    for bad in ([], [2.0, 0.0], [2.0, -1.0], [2.0, math.nan], [2.0, math.inf], [2.0, "x"]):
        assert math.isnan(W._geo_or_nan(pd.Series(bad, dtype=object))), bad


# --- tables ---------------------------------------------------------------------------------


def test_the_table_is_a_row_per_platform_family_and_precision():
    t = W.table(_data())
    assert list(t.columns)[:3] == ["predicted", "platform here", "platform there"]
    assert len(t) == 6 and (t["predicted"] == "yes").all()
    assert (t["platform here"] == "Here").all() and (t["basis"] == W.MEASURED_VS_PREDICTED).all()
    assert t["platform there"].tolist() == [GPU] * 3 + [TPU] * 3
    assert t["family"].tolist() == ["cnn", "fc", "rnn"] * 2
    tpu = t[t["platform there"] == TPU].set_index("family")
    fc = tpu.loc["fc"]
    assert fc["precision here"] == "fp32" and fc["precision there"] == "bf16"
    assert fc["configs"] == 2
    assert fc["measured here (examples/s)"] == pytest.approx(math.sqrt(100 * 50))
    assert fc["predicted there (examples/s)"] == pytest.approx(math.sqrt(400 * 100))
    assert fc["predicted band low"] == pytest.approx(math.sqrt(320 * 80))
    assert fc["predicted band high"] == pytest.approx(math.sqrt(480 * 120))
    assert fc["speedup there over here"] == pytest.approx(math.sqrt(8))
    assert fc["speedup band low"] == pytest.approx(math.sqrt(2.88 * 1.28))
    assert fc["speedup band high"] == pytest.approx(math.sqrt(6 * 2.4))
    assert fc["bottleneck there"] == "compute"  # a tie of modes: the first by name
    assert fc["error band"] == "tpu band 0.2"
    assert tpu.loc["rnn", "bottleneck there"] == "memory"
    gpu = t[t["platform there"] == GPU].set_index("family")
    assert gpu.loc["fc", "precision there"] == "fp32" and gpu.loc["cnn", "configs"] == 1


def test_the_table_without_bottlenecks_or_bands():
    d = _measured()
    rows = [dict(r, bottleneck=None) for r in _rows(d, e_tpu=None)]
    t = W.table(W.with_predictions(d, rows)).set_index(["platform there", "family"])
    assert t["bottleneck there"].isna().all()
    assert math.isnan(t.loc[(TPU, "fc"), "predicted band low"])
    assert math.isnan(t.loc[(TPU, "fc"), "speedup band low"])
    assert t.loc[(GPU, "fc"), "predicted band low"] == pytest.approx(math.sqrt(180 * 22.5))


def test_no_table_without_both_sides():
    d = _measured()
    assert len(W.table(W.with_predictions(d, []))) == 0
    assert "speedup band low" in W.table(W.with_predictions(d, [])).columns
    assert len(W.per_config(W.with_predictions(d, []))) == 0
    only = W.with_predictions(A.from_frames([]), _rows(d))
    assert len(W.table(only)) == 0 and len(W.per_config(only)) == 0


def test_per_config_rows():
    p = W.per_config(_data())
    assert len(p) == 8 and list(p.columns) == [
        "predicted", "family", "config", "precision here", "measured here (examples/s)",
        "platform there", "precision there", "predicted there (examples/s)",
        "predicted band low", "predicted band high", "speedup there over here",
        "speedup band low", "speedup band high", "bottleneck there",
    ]  # fmt: skip
    assert (p["predicted"] == "yes").all() and p["platform there"].tolist() == [GPU] * 4 + [TPU] * 4
    assert list(p.index) == list(range(8))
    r = p[(p["platform there"] == TPU) & (p["family"] == "cnn")].iloc[0]
    assert r["measured here (examples/s)"] == 10.0 and r["predicted there (examples/s)"] == 100.0
    assert (r["predicted band low"], r["predicted band high"]) == (80.0, 120.0)
    assert r["speedup there over here"] == 10.0
    assert (r["speedup band low"], r["speedup band high"]) == pytest.approx((4.0, 24.0))
    assert r["bottleneck there"] == "compute" and r["precision there"] == "bf16"
    assert r["precision here"] == "fp32" and r["config"] == _key(_data(), "cnn", CNN)
    d = _measured()
    other = [dict(r, config='{"batch":1}') for r in _rows(d) if r["platform_id"] == "tpu-v2"]
    q = W.per_config(W.with_predictions(d, [r for r in _rows(d) if r["platform_id"] != "tpu-v2"]
                                        + other))  # fmt: skip
    assert set(q["platform there"]) == {GPU}  # a platform with no match adds no rows


def test_unpredicted_counts_the_reasons():
    d = _measured()
    rows = _rows(d)
    rows[0] = dict(rows[0], reason="not predicted: x")
    rows[1] = dict(rows[1], reason="not predicted: x")
    rows[2] = dict(rows[2], reason="no peak")
    assert W.unpredicted(W.with_predictions(d, rows)) == {"not predicted: x": 2, "no peak": 1}
    assert W.unpredicted(_data()) == {}
    assert W.unpredicted(W.with_predictions(d, [])) == {}
    no_col = [{k: v for k, v in r.items() if k != "reason"} for r in _rows(d)]
    assert W.unpredicted(W.with_predictions(d, no_col)) == {}


def test_table8_adds_a_predicted_column_per_platform_and_precision():
    d = _data()
    t = W.table8(d)
    cols = [c for c in t.columns if "(predicted)" in str(c)]
    assert sorted(cols) == [f"{TPU} bf16", f"{GPU} fp32"]
    assert set(t.index.get_level_values("quantity")) == {"examples/s"}
    v = t[f"{TPU} bf16"].dropna().sort_values().tolist()
    assert v == [45.0, 100.0, 100.0, 400.0]
    assert W.table8(W.with_predictions(_measured(), [])).shape[1] == t.shape[1] - 2
    nothing = [dict(r, examples_per_s=None) for r in _rows(_measured())]
    assert W.table8(W.with_predictions(_measured(), nothing)).shape[1] == t.shape[1] - 2
    assert len(W.table8(W.with_predictions(A.from_frames([]), []))) == 0


# --- findings -------------------------------------------------------------------------------


def _with_v3(e=0.2, factors=(2.0, 1.5, 3.0, 2.0)) -> A.Data:
    """TPU v3 at `factors` × v2 on FCA (compute), FCB (memory), CNN (compute), RNN (memory)."""
    m = _measured()
    rows = _rows(m, e_tpu=e)
    v2 = {(r["family"], r["config"]): r for r in rows if r["platform_id"] == "tpu-v2"}
    for (fam, cfg), f in zip((("fc", FCA), ("fc", FCB), ("cnn", CNN), ("rnn", RNN)), factors,
                             strict=True):  # fmt: skip
        base = v2[(fam, _key(m, fam, cfg))]
        rows.append(_p(m, "tpu-v3", "tpu", fam, cfg, f * base["examples_per_s"], e, 0.5,
                       base["bottleneck"]))  # fmt: skip
    return W.with_predictions(m, rows)


def test_kinds_ids_and_bands_of_the_predicted_platforms():
    d = _with_v3()
    assert W._kinds(d) == {GPU: "gpu", TPU: "tpu", V3: "tpu"}
    assert W._ids(d) == {"v100-sxm2": GPU, "tpu-v2": TPU, "tpu-v3": V3}
    assert W._bands(d, GPU, TPU) == "gpu band 0.1; tpu band 0.2"
    assert W._bands(d, TPU, V3) == "tpu band 0.2"  # each wording once
    assert W._bands(d, "Here", TPU) == "tpu band 0.2" and W._bands(d, "Here") == ""
    empty = W.with_predictions(_measured(), [])
    assert W._kinds(empty) == {} and W._ids(empty) == {} and W._bands(empty, GPU) == ""
    assert W._paper_pair(d, (GPU, TPU)) and W._paper_pair(d, (TPU, GPU))
    assert not W._paper_pair(d, (TPU, V3)) and not W._paper_pair(d, ("Here", TPU))


def test_the_pairs_judged_are_here_against_each_prediction_then_the_papers_gpu_tpu():
    d = _with_v3()
    assert W.pairs_to_judge(d) == [("Here", GPU), ("Here", TPU), ("Here", V3), (GPU, TPU)]
    m = _measured()
    gpu_only = W.with_predictions(m, [r for r in _rows(m) if r["device_kind"] == "gpu"])
    assert W.pairs_to_judge(gpu_only) == [("Here", GPU)]
    tpu_only = W.with_predictions(m, [r for r in _rows(m) if r["device_kind"] == "tpu"])
    assert W.pairs_to_judge(tpu_only) == [("Here", TPU)]
    nothing_here = W.with_predictions(A.from_frames([]), _rows(m))
    assert W.pairs_to_judge(nothing_here) == [(GPU, TPU)]


def test_tpu_over_gpu_is_the_smaller_family_ratio_over_the_seeds_figure():
    f = W.tpu_over_gpu(_data(), GPU, TPU)
    assert f.id == "tpu-vs-gpu" and f.source == "seed 000 observation 10 (§5.3, Fig. 11)"
    assert f.claim == "TPU reaches 2× (CNN) and 3× (RNN) the GPU's utilization"
    # cnn: 0.8/0.2 = 4 over 2; rnn: 0.45/0.1 = 4.5 over 3 — the smaller, on every end
    assert f.estimate == pytest.approx(1.5)
    assert f.ci_low == pytest.approx(4.5 * 0.8 / 1.1 / 3)
    assert f.ci_high == pytest.approx(4.5 * 1.2 / 0.9 / 3)
    assert f.threshold == 1.0 and f.verdict == F.HOLDS
    assert f.statistic == "smaller ratio over the seed's figure"
    assert f.evidence.startswith(
        "tpu-v2 (predicted) over v100-sxm2 (predicted) utilization: cnn 4.00× [2.91, 5.33] vs "
        "2× over 1 configs; rnn 4.50× [3.27, 6] vs 3× over 1 configs"
    )
    assert "(CNN against 2, RNN against 3)" in f.rule and "at or above 1" in f.rule


def test_tpu_over_gpu_below_the_figure_fails_and_without_a_band_is_inconclusive():
    m = _measured()
    rows = [dict(r, utilization=0.15) if r["platform_id"] == "tpu-v2" and r["family"] == "rnn"
            else r for r in _rows(m)]  # fmt: skip
    f = W.tpu_over_gpu(W.with_predictions(m, rows), GPU, TPU)
    # rnn 1.5 over 3 = 0.5: [0.5·0.8/1.1, 0.5·1.2/0.9] = [0.36, 0.67], wholly below 1
    assert f.verdict == F.FAILS and f.estimate == pytest.approx(0.5)
    f = W.tpu_over_gpu(_data(e_gpu=None), GPU, TPU)
    assert f.verdict == F.INCONCLUSIVE and f.ci_low is None and f.ci_high is None
    assert f.estimate == pytest.approx(1.5)


def test_tpu_over_gpu_needs_a_cnn_or_rnn_with_both_utilizations():
    m = _measured()
    rows = [dict(r, utilization=0.0) if r["platform_id"] == "v100-sxm2" and r["family"] == "rnn"
            else r for r in _rows(m)]  # fmt: skip
    f = W.tpu_over_gpu(W.with_predictions(m, rows), GPU, TPU)
    assert f.estimate == pytest.approx(2.0) and "rnn" not in f.evidence  # cnn alone
    rows = [dict(r, utilization=0.0) if r["platform_id"] == "tpu-v2" and r["family"] == "cnn"
            else r for r in _rows(m)]  # fmt: skip
    f = W.tpu_over_gpu(W.with_predictions(m, rows), GPU, TPU)
    assert f.estimate == pytest.approx(1.5) and "cnn" not in f.evidence
    fc_only = W.with_predictions(m, [r for r in _rows(m) if r["family"] == "fc"])
    f = W.tpu_over_gpu(fc_only, GPU, TPU)
    assert f.verdict == F.NO_DATA and f.evidence == "no CNN or RNN config predicted on both"
    assert f.id == "tpu-vs-gpu" and "utilization = achieved FLOP/s" in f.rule


def test_tpu_v3_over_v2_takes_the_smaller_of_the_two_bottleneck_classes():
    f = W.tpu_v3_over_v2(_with_v3())
    # compute-bound: FCA 2×, CNN 3× → √6; other: FCB 1.5×, RNN 2× → √3 (the smaller)
    assert f.id == "tpu-v3" and f.source == "seed 000 observation 5 (§4.5, Fig. 6)"
    assert f.estimate == pytest.approx(math.sqrt(3))
    assert f.ci_low == pytest.approx(math.sqrt(3) * 0.8 / 1.2)
    assert f.ci_high == pytest.approx(math.sqrt(3) * 1.2 / 0.8)
    assert f.threshold == W.V3_OVER_V2 == 1.5 and f.verdict == F.INCONCLUSIVE
    assert f.statistic == "smaller class geomean"
    assert f.evidence.startswith(
        "v3 over v2: compute-bound 2.45× [1.63, 3.67] over 2 configs; other 1.73× [1.15, 2.6] "
        "over 2 configs"
    )
    assert f.decide == (
        "a validated TPU error band narrow enough to put the interval off the threshold"
    )
    assert "at or above 1.5 (the least of the seed's three figures)" in f.rule


def test_tpu_v3_over_v2_holds_fails_and_has_no_interval_without_a_band():
    assert W.tpu_v3_over_v2(_with_v3(e=0.01)).verdict == F.HOLDS
    assert W.tpu_v3_over_v2(_with_v3(e=0.01, factors=(2.0, 1.2, 3.0, 1.2))).verdict == F.FAILS
    m = _measured()
    d = _with_v3()
    rows = [dict(r, examples_per_s_low=None, examples_per_s_high=None)
            if r["platform_id"] == "tpu-v3" else r for r in _rows(m)]  # fmt: skip
    rows += [r for r in d.predicted.to_dict("records") if r["platform_id"] == "tpu-v3"]
    rows = [dict(r, examples_per_s_low=None) if r["platform_id"] == "tpu-v3" else r
            for r in rows]  # fmt: skip
    f = W.tpu_v3_over_v2(W.with_predictions(m, rows))
    assert f.ci_low is None and f.ci_high is not None and f.verdict == F.INCONCLUSIVE


def test_tpu_v3_over_v2_with_no_config_on_both_chips_has_no_data():
    m = _measured()
    stray = dict(_p(m, "tpu-v3", "tpu", "fc", FCA, 1.0, 0.1, 0.5), config='{"batch":1}')
    rows = [*_rows(m), stray]
    f = W.tpu_v3_over_v2(W.with_predictions(m, rows))
    assert f.verdict == F.NO_DATA and f.evidence == "no config predicted on both chips"


def test_class_geomeans():
    c = W.pair(_with_v3(), TPU, V3)
    by = c.pairs["family"]
    got = W._class_geomeans(c, by)
    assert list(got) == ["cnn", "fc", "rnn"]
    est, lo, hi, n = got["fc"]
    assert n == 2 and est == pytest.approx(math.sqrt(3))
    assert lo == pytest.approx(math.sqrt(3) * 0.8 / 1.2) and hi == pytest.approx(math.sqrt(3) * 1.5)
    assert got["cnn"][3] == 1 and got["cnn"][0] == pytest.approx(3.0)


def test_a_finding_on_predictions_says_so():
    d = _data()
    base = W.tpu_over_gpu(d, GPU, TPU)
    f = W._mark(base, d, GPU, TPU)
    assert f.basis == W.PREDICTED_VS_PREDICTED
    assert f.evidence == (
        f"predicted (predicted vs predicted: {GPU} vs {TPU}): {base.evidence}; "
        "error band: gpu band 0.1; tpu band 0.2"
    )
    assert f.rule == base.rule + (
        " — here on predicted values: each prediction's interval is its device kind's "
        "validated error band (p90), a pair's the ends of both sides divided (low over high), a "
        "geomean's the geomeans of the ends; no band: inconclusive"
    )
    assert (f.verdict, f.estimate, f.ci_low) == (base.verdict, base.estimate, base.ci_low)
    import dataclasses

    ci = dataclasses.replace(base, evidence="x; the 95% interval [1, 2] straddles 1")
    assert "the error bands' interval [1, 2]" in W._mark(ci, d, GPU, TPU).evidence
    other = dataclasses.replace(ci, id="speedup-batch")
    assert "the 95% interval [1, 2]" in W._mark(other, d, GPU, TPU).evidence
    v3 = dataclasses.replace(ci, id="tpu-v3")
    assert "the error bands' interval" in W._mark(v3, d, GPU, TPU).evidence
    assert W._mark(base, d, "Here", "Other").evidence.endswith("error band: no band")
    assert W._mark(base, d, "Here", TPU).basis == W.MEASURED_VS_PREDICTED


def test_findings_for_a_pair_add_the_tpu_findings_where_the_pair_is_one_of_theirs():
    d = _with_v3()
    ids = [f.id for f in W.findings_for(d, GPU, TPU)]
    assert ids == [*W.PAIR_CHECKS, "tpu-vs-gpu"]
    assert [f.id for f in W.findings_for(d, TPU, GPU)] == [*W.PAIR_CHECKS, "tpu-vs-gpu"]
    assert [f.id for f in W.findings_for(d, TPU, V3)] == [*W.PAIR_CHECKS, "tpu-v3"]
    assert [f.id for f in W.findings_for(d, V3, TPU)] == [*W.PAIR_CHECKS, "tpu-v3"]
    assert [f.id for f in W.findings_for(d, "Here", TPU)] == list(W.PAIR_CHECKS)
    tg = W.findings_for(d, TPU, GPU)[-1]
    assert tg.evidence.startswith(f"predicted (predicted vs predicted: {GPU} vs {TPU})")
    assert tg.estimate == pytest.approx(1.5)
    v3 = W.findings_for(d, V3, TPU)[-1]
    assert v3.evidence.startswith(f"predicted (predicted vs predicted: {TPU} vs {V3})")
    for f in W.findings_for(d, GPU, TPU):
        assert f.basis == W.PREDICTED_VS_PREDICTED and "predicted values" in f.rule


def test_evaluate_replaces_only_silent_verdicts_with_the_first_pair_that_speaks():
    d = _with_v3()
    got = {f.id: f for f in W.evaluate(d)}
    measured = {f.id: f for f in A.evaluate(d, include_noisy=True)}
    assert list(got) == list(measured)
    assert got["tpu-vs-gpu"].verdict == F.HOLDS and got["tpu-v3"].verdict == F.INCONCLUSIVE
    assert got["tpu-vs-gpu"].basis == got["tpu-v3"].basis == W.PREDICTED_VS_PREDICTED
    assert got["tpu-v3"].evidence.startswith(f"predicted (predicted vs predicted: {TPU} vs {V3})")
    for fid, f in got.items():
        if fid not in ("tpu-vs-gpu", "tpu-v3"):
            assert f == measured[fid], fid
    plain = W.with_predictions(_measured(), [])
    assert W.evaluate(plain) == A.evaluate(plain, include_noisy=True)


def test_evaluate_judges_tpu_v3_without_a_gpu_and_keeps_a_silent_one_silent():
    m = _measured()
    d = _with_v3()
    tpus = [r for r in d.predicted.to_dict("records") if r["device_kind"] == "tpu"]
    got = {f.id: f for f in W.evaluate(W.with_predictions(m, tpus))}
    assert got["tpu-v3"].verdict == F.INCONCLUSIVE and got["tpu-v3"].basis != "measured"
    assert got["tpu-vs-gpu"].basis == "measured"  # no GPU predicted: it stays silent
    only_v2 = [r for r in tpus if r["platform_id"] == "tpu-v2"]
    got = {f.id: f for f in W.evaluate(W.with_predictions(m, only_v2))}
    assert got["tpu-v3"].basis == "measured"


def test_evaluate_with_predictions_but_no_pair_to_judge_is_the_measured_one():
    m = _measured()
    gpu = [r for r in _rows(m) if r["device_kind"] == "gpu"]
    alone = W.with_predictions(A.from_frames([]), gpu)  # no run here, no TPU: no pair
    assert W.pairs_to_judge(alone) == []
    assert W.evaluate(alone) == A.evaluate(alone, include_noisy=True)


def test_a_silent_tpu_v3_verdict_leaves_the_measured_one():
    m = _measured()
    stray = dict(_p(m, "tpu-v3", "tpu", "fc", FCA, 1.0, 0.1, 0.5), config='{"batch":1}')
    got = {f.id: f for f in W.evaluate(W.with_predictions(m, [*_rows(m), stray]))}
    assert got["tpu-v3"].basis == "measured" and got["tpu-vs-gpu"].verdict == F.HOLDS


def test_a_measured_side_keeps_a_run_without_an_optimizer_and_medians_its_utilization():
    rows = [
        synth.row("fc", FCA, 0.1, platform="Here", hostname=h) | {"examples_per_s": x,
                                                                   "utilization_datasheet": u}
        for h, x, u in (("a", 10.0, 0.1), ("b", 20.0, 0.3), ("c", 30.0, 0.2))
    ]  # fmt: skip
    rows.append(synth.row("fc", FCB, 0.1, platform="Here") | {"examples_per_s": 5.0})
    rows[-1]["optimizer"] = None
    s = W._side(A.from_frames(rows), "Here")
    assert len(s) == 2
    a = s[s["optimizer"] == "rmsprop"].iloc[0]
    assert a["util"] == pytest.approx(0.2) and a["value"] == 20.0
    b = s[s["optimizer"].isna()].iloc[0]
    assert b["value"] == 5.0


def test_a_measured_side_without_a_utilization_column_has_none():
    d = _measured()
    d.runs = d.runs.drop(columns="utilization_datasheet")
    s = W._side(d, "Here")
    assert len(s) == 4 and s["util"].isna().all()


def test_the_table_orders_precisions_by_name_whatever_order_the_configs_give():
    """FCB (the smaller config key) measured at fp32, FCA at bf16: the pairs come config by
    config, the table's rows precision by precision (bf16 before fp32)."""
    m = A.from_frames(
        [_meas("fc", FCA, 100.0, 0.9, 1.1, 0.2, precision="bf16"),
         _meas("fc", FCB, 50.0, 0.9, 1.1, 0.4)]
    )  # fmt: skip
    assert _key(m, "fc", FCB) < _key(m, "fc", FCA)
    rows = [
        _p(m, "tpu-v2", "tpu", "fc", FCA, 400.0, 0.2, 0.6, here="bf16"),
        _p(m, "tpu-v2", "tpu", "fc", FCB, 100.0, 0.2, 0.5),
    ]
    t = W.table(W.with_predictions(m, rows))
    assert t["precision here"].tolist() == ["bf16", "fp32"]
    assert t["predicted there (examples/s)"].tolist() == pytest.approx([400.0, 100.0])


def test_family_orders_are_by_name_whatever_order_the_predictions_come_in():
    m = _measured()
    rows = list(reversed(_rows(m)))  # rnn, cnn, fc: predicted sides keep their rows' order
    d = W.with_predictions(m, rows)
    s = W.pair(d, GPU, TPU).summary
    assert s["family"].tolist() == ["cnn", "fc", "rnn", "all"]
    f = W.tpu_over_gpu(d, GPU, TPU)
    assert f.evidence.index("cnn 4.00×") < f.evidence.index("rnn 4.50×")


def test_evaluate_counts_noisy_runs_as_the_measured_findings_do_with_them():
    rows = [
        _meas("fc", FCA, 100.0, 0.9, 1.25, 0.2, quality="noisy"),
        _meas("fc", FCB, 50.0, 0.8, 1.0, 0.4, quality="noisy"),
        _meas("cnn", CNN, 10.0, 0.5, 2.0, 0.1),
        _meas("rnn", RNN, 20.0, 0.5, 2.0, 0.3),
    ]
    m = A.from_frames(rows)
    d = W.with_predictions(m, _rows(m))
    got = {f.id: f for f in W.evaluate(d)}
    noisy_in = {f.id: f for f in A.evaluate(d, include_noisy=True)}
    assert got["fc-batch"] == noisy_in["fc-batch"]
    assert got["fc-batch"].evidence.startswith("fc achieved FLOP/s: 2 ok runs")
