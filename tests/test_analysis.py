"""The analysis layer on synthetic results whose structure is known: weights of the right sign
and order, heat-map cells where they belong, speedups and verdicts that flip with the data."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F
from paradnn.errors import ConfigError

import synth

FC_SPACE = {
    "layers": [4, 8, 16, 32],
    "nodes": [64, 256, 1024],
    "input": [2000],
    "output": [1000],
    "batch": [64, 256, 1024, 4096],
}


def _fc_util(cfg, batch_sign=1.0):
    """Rises with log batch and log nodes, flat in layers (plus a deterministic wobble)."""
    lb, ln = math.log2(cfg["batch"]), math.log2(cfg["nodes"])
    wobble = 0.004 * ((cfg["layers"] * 7 + cfg["batch"]) % 5 - 2)
    return 0.05 + batch_sign * 0.03 * (lb - 6) + 0.04 * (ln - 6) + wobble + 0.2


def fc_data(batch_sign=1.0, oom=lambda c: False, **kw):
    rows = synth.rows("fc", FC_SPACE, lambda c: None if oom(c) else _fc_util(c, batch_sign), **kw)
    return A.from_frames(rows)


def test_regression_weights_have_the_right_sign_and_order():
    s = A.sensitivity(fc_data(), "fc", "achieved_flops")
    assert s.reason is None and s.n == 48
    w = {h: s.weight(h) for h in ("batch", "nodes", "layers")}
    row = s.table.set_index("hyperparameter")
    assert row.at["batch", "ci_low"] > 0 and row.at["nodes", "ci_low"] > 0
    assert abs(w["layers"]) < 0.1 < min(w["batch"], w["nodes"])
    assert row.at["layers", "ci_low"] < 0 < row.at["layers", "ci_high"]  # no effect: CI spans 0
    assert set(s.excluded) == {"input", "output"}  # constant in this slice, said so
    assert row.at["batch", "transform"] == "log2"  # 64..4096 is a geometric axis
    assert s.r2 is not None and s.r2 > 0.9


def test_regression_with_too_few_runs_gives_a_reason_not_a_fit():
    small = A.from_frames(
        synth.rows("fc", {**FC_SPACE, "layers": [4], "nodes": [64]}, lambda c: 0.3)
    )
    s = A.sensitivity(small, "fc", "achieved_flops")
    assert s.reason is not None and len(s.table) == 0


def test_regression_rejects_an_unknown_hyperparameter():
    with pytest.raises(ConfigError, match="hyperparameter = 'widht'"):
        A.sensitivity(fc_data(), "fc", "achieved_flops", hyperparameters=["widht"])


def test_heatmap_cells_hold_the_metric_and_failures_their_status():
    oom = lambda c: c["batch"] == 4096 and c["nodes"] == 1024  # noqa: E731
    data = fc_data(oom=oom)
    hm = A.heatmap(data, "fc", x="batch", y="nodes", metric="achieved_flops")
    assert hm.fixed == {"layers": 32, "input": 2000, "output": 1000}  # the paper's values
    assert all(hm.paper_fixed.values())
    assert list(hm.values.columns) == [64, 256, 1024, 4096]
    assert list(hm.values.index) == [64, 256, 1024]
    cfg = {"layers": 32, "nodes": 256, "input": 2000, "output": 1000, "batch": 1024}
    assert hm.values.at[256, 1024] == pytest.approx(_fc_util(cfg) * synth.PEAK)
    assert hm.failed() == {(4096, 1024): "oom"}
    assert math.isnan(hm.values.at[1024, 4096])
    assert hm.status.at[64, 64] == "ok"


def test_heatmap_falls_back_to_the_most_common_value_and_says_so():
    space = {**FC_SPACE, "layers": [4, 8], "input": [100]}
    data = A.from_frames(
        synth.rows("fc", space, lambda c: 0.3)
        + synth.rows("fc", {**space, "layers": [8], "nodes": [64]}, lambda c: 0.3, precision="bf16")
    )
    hm = A.heatmap(data, "fc", x="batch", y="nodes", metric="achieved_flops")
    assert hm.where == {"platform": "SynthCPU", "precision": "fp32"}  # the largest group
    assert hm.fixed["input"] == 100 and hm.paper_fixed["input"] is False
    assert hm.fixed["output"] == 1000 and hm.paper_fixed["output"] is True


def test_heatmap_bad_axis_is_one_clear_error():
    with pytest.raises(ConfigError, match="y = 'filters': a fc hyperparameter"):
        A.heatmap(fc_data(), "fc", x="batch", y="filters")


def _two_platforms(ratio):
    a = synth.rows("fc", FC_SPACE, lambda c: 0.2, platform="A")
    b = synth.rows("fc", FC_SPACE, lambda c: 0.2 * ratio(c), platform="B", device="cuda")
    return A.from_frames(a + b)


def test_speedup_matches_configs_and_summarises():
    data = _two_platforms(lambda c: 2.0 if c["batch"] >= 1024 else 0.5)
    c = A.compare(data, "platform", "A", "B")
    assert len(c.pairs) == 48
    assert c.pairs["speedup"].round(9).isin([2.0, 0.5]).all()
    overall = c.overall()
    assert overall["faster_share"] == pytest.approx(0.5)
    assert overall["geomean"] == pytest.approx(1.0)
    assert overall["n"] == 48


def test_speedup_lists_configs_that_failed_on_one_side():
    a = synth.rows("fc", FC_SPACE, lambda c: 0.2, platform="A")
    b = synth.rows(
        "fc", FC_SPACE, lambda c: None if c["nodes"] == 1024 else 0.4, platform="B", device="cuda"
    )
    c = A.compare(A.from_frames(a + b), "platform", "A", "B")
    assert len(c.pairs) == 32 and c.overall()["geomean"] == pytest.approx(2.0)
    assert len(c.failed) == 16 and set(c.failed["status"]) == {"oom"}
    assert c.unmatched == {"A": 16, "B": 0}


def test_speedup_never_pairs_different_precisions():
    a = synth.rows("fc", FC_SPACE, lambda c: 0.2, precision="fp32")
    b = synth.rows("fc", FC_SPACE, lambda c: 0.2, precision="bf16", platform="B")
    with pytest.raises(ConfigError):  # B has only bf16 runs, A only fp32: nothing to pair
        A.compare(A.from_frames(a + b), "platform", "SynthCPU", "C")
    c = A.compare(A.from_frames(a + b), "platform", "SynthCPU", "B")
    assert len(c.pairs) == 0 and c.unmatched == {"SynthCPU": 48, "B": 48}


def test_compare_rejects_unknown_group_in_one_line():
    with pytest.raises(ConfigError, match="b = 'fp16': a precision with ok runs: fp32"):
        A.compare(fc_data(), "precision", "fp32", "fp16")


def _by_id(data):
    return {f.id: f for f in A.evaluate(data)}


def test_findings_hold_on_data_that_has_the_structure():
    got = _by_id(fc_data())
    assert got["fc-batch"].verdict == F.HOLDS
    assert got["fc-nodes"].verdict == F.HOLDS
    assert got["fc-width-over-depth"].verdict == F.HOLDS
    # layers has no effect (its CI spans 0): "does not rise" is not shown either way
    assert got["depth-unexploited"].verdict == F.INCONCLUSIVE
    assert "w(batch)" in got["fc-batch"].evidence
    assert got["cnn-batch"].verdict == F.NO_DATA  # no CNN runs: not guessed
    assert got["tpu-vs-gpu"].verdict == F.UNTESTABLE


def test_findings_flip_when_the_data_does():
    got = _by_id(fc_data(batch_sign=-1.0))
    assert got["fc-batch"].verdict == F.FAILS
    assert got["fc-nodes"].verdict == F.HOLDS


def _precision_data(cnn_gain, rnn_gain):
    cnn = {"blocks": [1], "filters": [16, 32], "image": [32], "output": [10], "batch": [8, 16]}
    rnn = {"layers": [1, 2], "embed": [32], "length": [10], "vocab": [8], "batch": [8, 16]}
    rows = []
    for fam, space, gain in (("cnn", cnn, cnn_gain), ("rnn", rnn, rnn_gain)):
        rows += synth.rows(fam, space, lambda c: 0.1)
        rows += synth.rows(fam, space, lambda c, g=gain: 0.1 * g, precision="bf16")
    return A.from_frames(rows)


def test_precision_finding_flips_with_the_data():
    got = _by_id(_precision_data(cnn_gain=2.0, rnn_gain=1.2))
    assert got["precision-cnn-over-rnn"].verdict == F.HOLDS
    assert got["precision-helps"].verdict == F.HOLDS
    assert "cnn 2.00×" in got["precision-cnn-over-rnn"].evidence
    got = _by_id(_precision_data(cnn_gain=1.1, rnn_gain=1.5))
    assert got["precision-cnn-over-rnn"].verdict == F.FAILS
    got = _by_id(_precision_data(cnn_gain=0.8, rnn_gain=0.9))
    assert got["precision-helps"].verdict == F.FAILS


def _ops_data(rate, threads_eff):
    rows = []
    for i, n in enumerate([128, 256, 512, 1024, 2048, 4096]):  # 6: a perfect ρ decides
        flops = 2 * n**3
        rows.append(synth.op_row(f"matmul-{n}", flops, flops / rate(i)))
    for t in (1, 2, 4):
        base = 1.0
        rows.append(
            synth.op_row("matmul-1024", 2 * 1024**3, base / (1 + (t - 1) * threads_eff), threads=t)
        )
    return A.from_frames([], ops=pd.DataFrame(rows))


def test_op_findings_flip_with_the_data():
    got = _by_id(_ops_data(lambda i: 1e10 * (i + 1), threads_eff=0.5))
    assert got["larger-ops-faster"].verdict == F.HOLDS
    # four shapes only: a perfect ranking is not decided (the exact test's p is 1/12)
    four = A.from_frames([], ops=_ops_data(lambda i: 1e10 * (i + 1), 0.5).ops.iloc[2:])
    assert A.findings.larger_ops_faster(four).verdict == F.INCONCLUSIVE
    # one op at three thread counts: 2.5× at 4 threads, √2.5 = 1.58× per doubling, but no
    # interval of a median over one op
    th = got["threads-matmul"]
    assert th.verdict == F.INCONCLUSIVE and th.estimate == pytest.approx(2.5**0.5)
    assert "at least 6 ops" in th.decide
    ts = A.thread_scaling(_ops_data(lambda i: 1e10, threads_eff=0.5))
    top = ts[ts["threads"] == 4].iloc[0]
    assert top["speedup"] == pytest.approx(2.5) and top["efficiency"] == pytest.approx(0.625)
    got = _by_id(_ops_data(lambda i: 1e10 / (i + 1), threads_eff=1.0))
    assert got["larger-ops-faster"].verdict == F.FAILS
    assert got["threads-matmul"].estimate == pytest.approx(2.0)  # linear: 2× per doubling


def test_speedup_with_batch_needs_two_platforms_and_flips():
    got = _by_id(_two_platforms(lambda c: c["batch"] / 256))
    assert got["speedup-batch"].verdict == F.HOLDS
    # A faster, its lead growing with batch: the claim (about the faster platform) holds too;
    # before issue 30 the pair was oriented by run count, so this said "does not hold"
    got = _by_id(_two_platforms(lambda c: 256 / c["batch"]))
    assert got["speedup-batch"].verdict == F.HOLDS
    assert got["speedup-batch"].evidence.startswith("A over B")
    # B faster everywhere, its lead shrinking with batch: does not hold
    got = _by_id(_two_platforms(lambda c: 1024 / c["batch"] ** 0.5))
    assert got["speedup-batch"].verdict == F.FAILS
    assert _by_id(fc_data())["speedup-batch"].verdict == F.UNTESTABLE


def test_largest_fc_on_cpu_only():
    a = synth.rows("fc", FC_SPACE, lambda c: 0.2, platform="CPU")
    b = synth.rows(
        "fc", FC_SPACE, lambda c: None if c["nodes"] == 1024 else 0.4, platform="GPU", device="cuda"
    )
    assert _by_id(A.from_frames(a + b))["largest-fc-cpu"].verdict == F.HOLDS
    b = synth.rows("fc", FC_SPACE, lambda c: 0.4, platform="GPU", device="cuda")
    assert _by_id(A.from_frames(a + b))["largest-fc-cpu"].verdict == F.FAILS


def test_software_version_finding():
    old = synth.rows("fc", FC_SPACE, lambda c: 0.2, torch_version="2.11.0")
    new = synth.rows("fc", FC_SPACE, lambda c: 0.3, torch_version="2.13.0")
    f = _by_id(A.from_frames(old + new))["software-updates"]
    assert f.verdict == F.HOLDS and "1.50×" in f.evidence


def test_measured_utilization_is_filled_from_later_ceilings():
    rows = synth.rows("fc", {**FC_SPACE, "layers": [4]}, lambda c: 0.25)
    ceil = pd.DataFrame(
        [{"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": 5e11}]
    )
    data = A.from_frames(rows, ceilings=ceil)
    assert data.runs["utilization_measured"].astype(float).round(6).eq(0.5).all()


def test_batch_effect_ratios():
    df = A.batch_effect(fc_data(), "achieved_flops")
    assert list(df["batch"]) == [64, 256, 1024, 4096]
    assert df["ratio"].iloc[0] == 1.0 and df["ratio"].is_monotonic_increasing


def test_param_ranges_cover_database_and_paper_space():
    df = A.param_ranges(fc_data())
    db = df[(df["family"] == "fc") & (df["source"] == "database")].iloc[0]
    assert db["configs"] == 48
    space = df[(df["family"] == "fc") & (df["source"] != "database")].iloc[0]
    assert space["configs"] == 9720 and space["min"] < db["min"] and space["max"] > db["max"]


def test_model_roofline_points_use_analytic_bytes():
    from paradnn.families.lowering import lower_all

    data = fc_data()
    pts = A.model_points(data)
    assert len(pts) == 48
    r = data.ok.iloc[0]
    fam = __import__("paradnn.families", fromlist=["get"]).get("fc")
    ops = lower_all(fam.shapes(fam.config(r["config"])))
    nbytes = sum(op.elements() for op in ops) * 4  # fp32: operand traffic of every GEMM
    first = pts[pts["config_key"] == r["config_key"]].iloc[0]
    assert first["intensity"] == pytest.approx(r["flops_per_step"] / nbytes)


def test_roofs_come_from_datasheet_and_ceilings_separately():
    ceil = pd.DataFrame(
        [
            {
                "device_name": "NVIDIA H100 80GB HBM3",
                "kind": "matmul",
                "precision": "bf16",
                "value": 6e14,
            },
            {
                "device_name": "NVIDIA H100 80GB HBM3",
                "kind": "copy",
                "precision": None,
                "value": 2.8e12,
            },
        ]
    )
    rs = {
        r.kind: r
        for r in A.roofs(A.from_frames([], ceilings=ceil), "NVIDIA H100 80GB HBM3", "bf16")
    }
    assert set(rs) == {"datasheet", "measured"}
    assert rs["measured"].peak_flops == 6e14 and rs["measured"].bandwidth == 2.8e12
    assert rs["datasheet"].peak_flops > rs["measured"].peak_flops
    assert rs["measured"].ridge == pytest.approx(6e14 / 2.8e12)


def test_software_versions_order_numerically_not_as_text():
    old = synth.rows("fc", FC_SPACE, lambda c: 0.2, torch_version="2.9.1")
    new = synth.rows("fc", FC_SPACE, lambda c: 0.3, torch_version="2.10.0+cu128")
    f = _by_id(A.from_frames(old + new))["software-updates"]
    assert f.verdict == F.HOLDS and "2.10.0+cu128 over 2.9.1" in f.evidence


def test_thread_counts_compare_as_groups():
    one = synth.rows("fc", FC_SPACE, lambda c: 0.1)
    two = [
        dict(
            r,
            threads=4,
            run_key=r["run_key"] + "-4t",  # a thread count is part of a run's identity
            achieved_flops=r["achieved_flops"] * 1.5,
            examples_per_s=r["examples_per_s"] * 1.5,
        )
        for r in one
    ]
    data = A.from_frames(one + two)
    assert A.speedup.values(data, "threads") == ["2", "4"]
    c = A.compare(data, "threads", "2", "4")
    assert c.overall()["geomean"] == pytest.approx(1.5) and c.overall()["n"] == 48


def test_heatmap_marks_only_values_that_differ_from_the_papers():
    space = {
        "layers": [9],
        "embed": [32, 64],
        "length": [50],
        "vocab": [32],
        "batch": [8, 16],
        "cell": ["lstm"],
    }
    data = A.from_frames(synth.rows("rnn", space, lambda c: 0.2))
    hm = A.heatmap(data, "rnn", x="batch", y="embed", metric="achieved_flops")
    assert hm.fixed == {"layers": 9, "length": 50, "vocab": 32, "cell": "lstm"}
    assert all(hm.paper_fixed.values())  # the paper fixes no cell type: nothing to differ from
