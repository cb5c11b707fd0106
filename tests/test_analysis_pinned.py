"""The analysis functions' complete outputs pinned on small inputs (issue 46, item 6): every
field, every string a user reads, both sides of each comparison, the empty and missing cases.
Expected values are worked out by hand from the inputs (floats compared with a tolerance, words
and decisions exactly), so a changed constant, operator or column name fails here."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import breakdown as B
from paradnn.analysis import findings as F
from paradnn.analysis import frames
from paradnn.analysis import scaling as S
from paradnn.analysis import speedup as SP
from paradnn.analysis import summaries as SU
from paradnn.analysis.heatmap import _second_axis
from paradnn.errors import ConfigError

import synth

# -- scaling ---------------------------------------------------------------------------------


def _scaled(**kw) -> A.Data:
    base = synth.scale_row(1, 0.010)
    run = synth.scale_row(
        2, 0.0125, compute_nosync_s=0.011, allreduce_s=0.002, allreduce_busbw=3e9,
        overlap_frac=0.25, allreduce_bytes=4000, ladder=[[1, 2]], **kw,
    )  # fmt: skip
    other = synth.scale_row(2, 0.02, batch=16)  # no N = 1 run of its config: skipped
    return frames.from_frames([base, run, other])


def test_an_efficiency_row_holds_every_column_worked_out_by_hand():
    t = S.efficiency_table(_scaled())
    assert len(t) == 1
    r = t.iloc[0].to_dict()
    exact = {
        "family": "fc", "precision": "fp32", "platform": "cpu-x", "strategy": "ddp",
        "scaling": "weak", "procs": 2, "threads": 1, "batch": 8, "allreduce_ladder": [[1, 2]],
    }  # fmt: skip
    for k, v in exact.items():
        assert r[k] == v, k
    assert r["config_key"] == '{"batch":8,"layers":1,"nodes":32}'
    near = {
        "step_time_s": 0.0125, "examples_per_s": 16 / 0.0125, "speedup": 1.6,
        "speedup_low": 2 * 0.0098 / 0.01275, "speedup_high": 2 * 0.0102 / 0.01225,
        "efficiency": 0.8, "karp_flatt": 0.25, "compute_nosync_s": 0.011, "allreduce_s": 0.002,
        "allreduce_busbw": 3e9, "overlap_frac": 0.25, "rank_flops": 0.8e9 / 2 * 2 / 2 * 1,
        "base_flops": 1e9 * 0.01 / 0.010, "utilization": 0.8, "base_step_time_s": 0.010,
        "examples_ratio": 2.0, "allreduce_bytes": 4000, "compute_inflation": 0.011 / 0.010,
        "comm_exposed_frac": (0.0125 - 0.011) / 0.0125,
    }  # fmt: skip
    near["rank_flops"] = (1e9 * 2 * 0.01 / 0.0125) / 2
    for k, v in near.items():
        assert r[k] == pytest.approx(v, rel=1e-9), k
    assert list(t.columns)[:7] == [
        "family", "config_key", "precision", "platform", "strategy", "scaling", "procs",
    ]  # fmt: skip


def test_an_efficiency_row_without_the_optional_measurements_has_none_for_them():
    base = synth.scale_row(1, 0.010, achieved_flops=None, step_time_ci_low_s=None)
    run = synth.scale_row(2, 0.0125)
    r = S.efficiency_table(frames.from_frames([base, run])).iloc[0]
    assert r["speedup"] == pytest.approx(1.6)
    assert r["speedup_low"] is None and r["speedup_high"] is None  # the base has no CI
    assert r["base_flops"] is None and r["utilization"] is None
    assert r["rank_flops"] == pytest.approx(1e9 * 2 * 0.01 / 0.0125 / 2)
    assert r["compute_inflation"] is None and r["comm_exposed_frac"] is None
    assert r["allreduce_ladder"] is None
    for col in ("allreduce_s", "allreduce_busbw", "overlap_frac", "compute_nosync_s"):
        assert r[col] is None or pd.isna(r[col]), col


def test_strong_scaling_keeps_the_examples_and_a_missing_count_reads_as_none():
    base = synth.scale_row(1, 0.010)
    strong = synth.scale_row(2, 0.006, scaling="strong", examples_per_step=8)
    r = S.efficiency_table(frames.from_frames([base, strong])).iloc[0]
    assert r["examples_ratio"] == pytest.approx(1.0)
    assert r["speedup"] == pytest.approx(0.010 / 0.006)
    assert r["scaling"] == "strong"


def test_runs_without_the_parallel_columns_get_them_empty():
    base = synth.scale_row(1, 0.010)
    run = synth.scale_row(2, 0.0125)
    rows = []
    for r in (base, run):
        r = dict(r)
        for col in ("strategy", "scaling"):
            r.pop(col)
        rows.append(r)
    t = S.efficiency_table(pd.DataFrame(rows).pipe(lambda d: frames.from_frames(d)))
    assert len(t) == 1
    assert t.iloc[0]["strategy"] is None and t.iloc[0]["scaling"] is None


def test_the_amdahl_fit_in_each_of_its_branches():
    none = S.amdahl_fit([1, 2, 4], [1.0, math.nan, -1.0])
    assert none == S.AmdahlFit(None, None, None, 0, "none", "no speedup at N > 1 to fit")
    assert none.predict(4) is None
    one = S.amdahl_fit([2, 2], [1.6, 1.6])
    assert one == S.AmdahlFit(
        pytest.approx(0.25), None, None, 2, "karp-flatt at one N", "no speedup interval"
    )
    mapped = S.amdahl_fit([1, 2], [1.0, 1.6], low=[0.9, 1.5], high=[1.1, 1.7])
    assert mapped.method == "karp-flatt at one N, its speedup CI mapped"
    assert mapped.reason is None and mapped.points == 1
    assert mapped.ci_low == pytest.approx(S.karp_flatt(1.7, 2))
    assert mapped.ci_high == pytest.approx(S.karp_flatt(1.5, 2))
    # a slowdown at one N clips to a serial fraction of 1, a superlinear speedup to 0
    assert S.amdahl_fit([2], [0.5], low=[0.4], high=[0.6]) == S.AmdahlFit(
        1.0, 1.0, 1.0, 1, "karp-flatt at one N, its speedup CI mapped"
    )
    assert S.amdahl_fit([2], [3.0], low=[2.5], high=[3.5]) == S.AmdahlFit(
        0.0, 0.0, 0.0, 1, "karp-flatt at one N, its speedup CI mapped"
    )
    f = 0.1
    ns = [2, 4, 8]
    fit = S.amdahl_fit(ns, [1 / (f + (1 - f) / n) * (1 + 0.01 * (-1) ** n) for n in ns])
    assert fit.method == "curve_fit, t interval (df = 2)" and fit.points == 3
    assert fit.reason is None
    assert 0.0 <= fit.ci_low < fit.serial_fraction < fit.ci_high <= 1.0
    assert fit.serial_fraction == pytest.approx(0.1, abs=0.02)
    sf = fit.serial_fraction
    assert fit.predict(4) == pytest.approx(1 / (sf + (1 - sf) / 4))


# -- findings --------------------------------------------------------------------------------


def test_an_inconclusive_verdict_states_both_ends_of_its_interval():
    f = F.decided("x", "c", "s", "r", "ev", "stat", 1.0, 0.9, 1.2, 1.0, ">", lambda: "more")
    assert f.verdict == F.INCONCLUSIVE and f.decide == "more"
    assert f.evidence == "ev; the 95% interval [0.9, 1.2] straddles 1"
    assert (f.estimate, f.ci_low, f.ci_high, f.threshold) == (1.0, 0.9, 1.2, 1.0)
    assert (f.id, f.claim, f.source, f.rule, f.statistic) == ("x", "c", "s", "r", "stat")
    held = F.decided("x", "c", "s", "r", "ev", "stat", 1.5, 1.1, 1.9, 1.0, ">", "more")
    assert held.verdict == F.HOLDS and held.evidence == "ev" and held.decide == ""
    blind = F.decided("x", "c", "s", "r", "ev", "stat", None, None, math.nan, 1.0, ">", "more")
    assert blind.verdict == F.INCONCLUSIVE and blind.evidence == "ev" and blind.decide == "more"
    assert blind.estimate is None and blind.ci_low is None and blind.ci_high is None


def test_the_precision_findings_name_the_precisions_that_ran_ok():
    cfg = {"layers": 2, "nodes": 64, "batch": 8}
    failed = A.from_frames([synth.row("fc", cfg, None, status="oom")])
    assert F._precision_speedups(failed) == (
        "precisions with ok runs: none (need fp32 and bf16 or fp16)"
    )
    assert F._precision_speedups(A.from_frames([])) == "no runs"
    one = A.from_frames([synth.row("fc", cfg, 0.1, precision="tf32")])
    assert F._precision_speedups(one) == (
        "precisions with ok runs: tf32 (need fp32 and bf16 or fp16)"
    )
    f = F.precision_helps(failed)
    assert f.verdict == F.NO_DATA and f.evidence.startswith("precisions with ok runs: none")


def _noisy_versions() -> A.Data:
    rows = []
    for i, b in enumerate((8, 16, 32)):
        cfg = {"layers": 2, "nodes": 64, "batch": b}
        for v, u in (("2.12.0", 0.1), ("2.13.0", 0.12)):
            rows.append(
                synth.row(
                    "fc", cfg, u, torch_version=v, n_samples=12, seed=i, quality="noisy",
                    converged=False,
                )
            )  # fmt: skip
    return A.from_frames(rows)


def test_the_software_finding_compares_the_runs_it_is_given_noisy_or_not():
    # evaluate() leaves noisy runs out before the checks run; a check called on data keeps them
    f = F.software_versions(_noisy_versions())
    assert f.verdict in (F.HOLDS, F.INCONCLUSIVE), f
    assert f.evidence.startswith("torch 2.13.0 over 2.12.0: 1.20× [")
    assert f.evidence.endswith(" over 3 configs")


def test_the_slower_first_pair_is_turned_over_with_both_ends_swapped():
    rows = []
    for i, b in enumerate((8, 16, 32, 64)):
        cfg = {"layers": 2, "nodes": 64, "batch": b}
        rows.append(synth.row("fc", cfg, 0.2, platform="A-fast", n_samples=12, seed=i))
        rows.append(synth.row("fc", cfg, 0.1, platform="B-slow", n_samples=12, seed=i + 9))
    data = A.from_frames(rows)
    c = SP.compare(data, "platform", "A-fast", "B-slow", include_noisy=True)
    p, fast, slow, s = F._oriented(data)
    assert (fast, slow) == ("A-fast", "B-slow")
    raw = c.pairs.set_index("config_key")
    got = p.set_index("config_key")
    for k in raw.index:
        assert got.at[k, "speedup"] == pytest.approx(1 / raw.at[k, "speedup"])
        assert got.at[k, "ci_low"] == pytest.approx(1 / raw.at[k, "ci_high"])
        assert got.at[k, "ci_high"] == pytest.approx(1 / raw.at[k, "ci_low"])
        assert got.at[k, "ci_low"] < got.at[k, "speedup"] < got.at[k, "ci_high"]
    g = c.overall()
    assert s["geomean"] == pytest.approx(1 / g["geomean"])
    assert s["geomean_ci_low"] == pytest.approx(1 / g["geomean_ci_high"])
    assert s["geomean_ci_high"] == pytest.approx(1 / g["geomean_ci_low"])


# -- frames ----------------------------------------------------------------------------------


def test_a_databases_source_lists_everything_it_holds():
    runs = pd.DataFrame(
        {
            "status": ["ok", "ok", "oom"],
            "hostname": ["b", "a", None],
            "device_name": ["cpu", "cpu", "gpu"],
            "torch_version": ["2.13.0", "2.12.0", "2.13.0"],
            "cuda_version": [None, None, "12.4"],
            "python_version": ["3.11.9", "3.11.9", "3.11.9"],
            "started_at": ["2026-01-02", "2026-01-01", "2026-01-03"],
            "finished_at": ["2026-01-02T1", "2026-01-04", "2026-01-03T1"],
        }
    )
    src = frames._source("x.db", runs, {"ceilings": 2, "ops": 0, "op_profile": 1})
    assert src == {
        "db": "x.db",
        "runs": 3,
        "statuses": {"ok": 2, "oom": 1},
        "hosts": ["a", "b"],
        "devices": ["cpu", "gpu"],
        "torch": ["2.12.0", "2.13.0"],
        "cuda": ["12.4"],
        "python": ["3.11.9"],
        "first": "2026-01-01",
        "last": "2026-01-04",
        "ceilings": 2,
        "ops": 0,
        "op_profile": 1,
    }
    empty = frames._source("e.db", pd.DataFrame(), {})
    assert empty == {
        "db": "e.db", "runs": 0, "statuses": {}, "hosts": [], "devices": [], "torch": [],
        "cuda": [], "python": [], "first": None, "last": None,
    }  # fmt: skip


def test_the_engine_of_a_run_without_a_backend_or_mode_is_torch_eager():
    df = pd.DataFrame(
        {"backend": [None, "torch", "jax", "torch"], "mode": [None, "compile", None, None]}
    )
    assert frames.engine(df).tolist() == ["torch-eager", "torch-compile", "jax", "torch-eager"]


# -- heat maps, breakdowns, summaries --------------------------------------------------------


def test_a_transformer_heat_map_takes_d_model_as_its_second_axis():
    assert _second_axis("transformer", ["batch", "layers", "d_model"], "batch") == "d_model"
    assert _second_axis("fc", ["batch", "width", "d_model"], "batch") == "d_model"  # before width
    assert _second_axis("fc", ["batch", "nodes"], "nodes") == "batch"


def test_a_heat_maps_status_grid_is_labelled_like_its_values_and_empty_where_nothing_ran():
    rows = [
        synth.row(
            "fc",
            {"layers": 2, "nodes": n, "batch": b},
            0.1 if b < 32 else None,
            status="ok" if b < 32 else "oom",
        )
        for n, b in ((64, 8), (64, 16), (128, 8), (128, 32))
    ]
    hm = A.heatmap(A.from_frames(rows), "fc", x="batch", metric="achieved_flops")
    assert (hm.x, hm.y) == ("batch", "nodes")
    assert hm.status.columns.tolist() == [8, 16, 32] and hm.status.columns.name == "batch"
    assert hm.status.index.tolist() == [64, 128] and hm.status.index.name == "nodes"
    assert hm.status.at[64, 8] == "ok" and hm.status.at[128, 32] == "oom"
    assert pd.isna(hm.status.at[64, 32]) and pd.isna(hm.status.at[128, 16])
    assert math.isnan(hm.values.at[64, 32]) and hm.values.at[64, 8] == pytest.approx(1e11)


def test_a_runs_breakdown_lists_its_op_types_in_the_fixed_order():
    run = synth.row("fc", {"layers": 2, "nodes": 64, "batch": 32}, 0.1)
    prof = [
        dict(run_uid="0:1", op=op, shapes="[]", calls=1, device_time_s=t, flops=0, bytes=0)
        for op, t in (("aten::relu", 0.1), ("aten::view", 0.1), ("aten::mm", 0.3),
                      ("aten::softmax", 0.1), ("aten::foo", 0.2), ("aten::conv2d", 0.2))
    ]  # fmt: skip
    bd = B.breakdown(A.from_frames([run], op_profile=pd.DataFrame(prof)))
    assert bd["op_type"].tolist() == [
        "matmul", "convolution", "softmax & loss", "layout & copy", "elementwise", "other",
    ]  # fmt: skip
    assert bd["share"].tolist() == pytest.approx([0.3, 0.2, 0.1, 0.1, 0.1, 0.2])


def test_the_ops_table_has_every_column_in_order_even_when_the_rows_lack_some():
    ops = pd.DataFrame([{"name": "mm-64", "op": "matmul", "status": "ok", "extra": 1}])
    t = SU.ops_table(A.from_frames([], ops=ops))
    cols = [
        "name", "op", "precision", "pass", "device_name", "threads", "status", "flops",
        "time_s", "achieved_flops", "utilization_measured", "utilization_datasheet",
    ]  # fmt: skip
    assert list(t.columns) == cols
    assert t.iloc[0]["op"] == "matmul" and t.iloc[0]["name"] == "mm-64"
    assert t.iloc[0]["precision"] is None
    assert list(SU.ops_table(A.from_frames([])).columns) == cols


def test_the_parameter_ranges_say_where_each_range_comes_from():
    t = SU.param_ranges(A.from_frames([]))
    src = dict(zip(t["family"], t["source"], strict=True))
    kinds = dict(zip(t["family"], t["kind"], strict=True))
    real = [f for f, k in kinds.items() if k == "real"]
    generated = [f for f, k in kinds.items() if k == "generated"]
    assert real and generated
    assert {src[f] for f in real} == {"as defined (analytic)"}
    assert {src[f] for f in generated} == {"paper space (analytic)"}


# -- speedups --------------------------------------------------------------------------------


def test_no_failures_on_either_side_is_an_empty_table_with_its_columns():
    ga = pd.DataFrame({"k": [1], "status": ["ok"]})
    gb = pd.DataFrame({"k": [1], "status": ["ok"]})
    out = SP._failed(ga, gb, ["k"], "a", "b")
    assert list(out.columns) == ["k", "status", "ok_in", "failed_in"] and not len(out)
    gb = pd.DataFrame({"k": [1, 1], "status": ["oom", "crashed"]})
    out = SP._failed(ga, gb, ["k"], "a", "b")
    assert out.to_dict("records") == [
        {"k": 1, "status": "crashed,oom", "ok_in": "a", "failed_in": "b"}
    ]
    out = SP._failed(gb, ga, ["k"], "b", "a")
    assert out.to_dict("records") == [
        {"k": 1, "status": "crashed,oom", "ok_in": "a", "failed_in": "b"}
    ]


def test_each_pairs_bootstrap_interval_follows_its_own_spread():
    rng = np.random.default_rng(0)
    tight = [0.01 * (1 + 0.001 * z) for z in rng.standard_normal(30)]
    wide = [0.01 * (1 + 0.2 * z) for z in rng.standard_normal(30)]
    pairs = pd.DataFrame(
        {
            "speedup": [1.0, 1.0],
            "samples_a": [tight, wide],
            "samples_b": [tight, wide],
            "t_a": [0.01, 0.01], "t_b": [0.01, 0.01],
            "t_low_a": [np.nan] * 2, "t_high_a": [np.nan] * 2,
            "t_low_b": [np.nan] * 2, "t_high_b": [np.nan] * 2,
        }
    )  # fmt: skip
    SP._intervals(pairs, 200, 0)
    w = (pairs["ci_high"] - pairs["ci_low"]).tolist()
    assert pairs["ci_method"].tolist() == ["bootstrap", "bootstrap"]
    assert w[0] < 0.01 < 0.05 < w[1]


# -- the findings' arithmetic ----------------------------------------------------------------


def test_more_data_in_each_of_its_cases():
    unit = "runs"
    assert F.more_data(4, None, 0.9, 1.1, 1.0, unit) == (
        "an interval: runs with raw step-time samples, or more of them"
    )
    assert F.more_data(0, 1.0, 0.9, 1.1, 1.0, unit).startswith("an interval: runs")
    assert F.more_data(4, 1.2, 0.0, 1.3, 1.0, unit, log=True) == "more runs"
    assert F.more_data(4, 1.2, 0.9, 1.3, 0.0, unit, log=True) == "more runs"
    # (dyadic numbers: every difference below is exact)
    # above the threshold: the half-width is est − lo = 0.5, the distance 0.25: 4 · 4 = 16
    assert F.more_data(4, 1.25, 0.75, 1.375, 1.0, unit) == (
        "about 16 runs (now 4) if the spread stays as it is"
    )
    # below it: the half-width is hi − est = 0.5 (not est − lo = 0.125): 4 · 4 = 16
    assert F.more_data(4, 0.75, 0.625, 1.25, 1.0, unit) == (
        "about 16 runs (now 4) if the spread stays as it is"
    )
    # a small excess still asks for one more than now
    assert F.more_data(10, 1.5, 0.9921875, 2.0, 1.0, unit).startswith("about 11 runs (now 10)")
    # half-width over dist·√100 = 10·dist: more than the cap; 8·dist is still counted
    assert F.more_data(2, 1.03125, 0.5, 1.5, 1.0, unit) == (
        "more than 200 runs (now 2) if the spread stays as it is"
    )  # half 0.53125 > 10 · 0.03125
    assert F.more_data(2, 1.25, 0.25, 1.5, 1.0, unit) == (
        "about 32 runs (now 2) if the spread stays as it is"
    )  # half 1.0, dist 0.25: 2 · 16 = 32
    assert F.more_data(3, 1.0, 0.9, 1.1, 1.0, unit).startswith("more than 300 runs (now 3)")
    assert F.more_data(3, 1.2, 1.2, 1.3, 1.0, unit).startswith("more than 300 runs")  # half 0
    # on the log scale: half ln 2 − ln 0.4 = ln 5, distance ln 2: 4 · (ln 5/ln 2)² = 21.6 → 22
    # (linearly it would be 4 · (1.6/1)² = 10.2 → 11)
    assert F.more_data(4, 2.0, 0.4, 3.0, 1.0, unit, log=True).startswith("about 22 runs (now 4)")
    assert F.more_data(4, 2.0, 0.4, 3.0, 1.0, unit).startswith("about 11 runs (now 4)")


def test_rho_more_in_each_of_its_cases():
    assert F._rho_more(5, math.nan) == (
        "configs whose speedups differ (ρ is undefined on constant values)"
    )
    assert F._rho_more(5, 0.0) == "more than 500 matched configs (now 5) at this ρ"
    # ρ = 0.5: atanh 0.5 = 0.5493; 3 + 1.06 · (1.96/0.5493)² = 16.5 → 17
    assert F._rho_more(8, 0.5) == "about 17 matched configs (now 8) at this ρ"
    assert F._rho_more(8, -0.5) == "about 17 matched configs (now 8) at this ρ"
    assert F._rho_more(20, 0.5) == "about 21 matched configs (now 20) at this ρ"
    # against a threshold of 0.5, ρ = 0.5 is on it
    assert F._rho_more(8, 0.5, 0.5).startswith("more than 800 matched configs")
    # n below 4 is clipped as at 4 and the cap counts from at least 1
    assert F._rho_more(0, 0.001) == "more than 100 matched configs (now 0) at this ρ"
    # ρ = ±1 is clipped to ±(1 − 1/n²) before atanh: finite
    assert F._rho_more(4, 1.0) == "about 5 matched configs (now 4) at this ρ"
    # ρ = 0.1: 3 + 1.06 · (1.96/0.1003)² = 407.9: over the cap of 100 · 4, under 100 · 5
    assert F._rho_more(4, 0.1).startswith("more than 400 matched configs (now 4)")
    assert F._rho_more(5, 0.1) == "about 408 matched configs (now 5) at this ρ"


def test_spearman_interval_ends_and_its_clip():
    rho, lo, hi, n = F.spearman_ci([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])
    assert rho == pytest.approx(0.9) and n == 5
    half = F.Z * math.sqrt(1.06 / 2)
    assert lo == pytest.approx(math.tanh(math.atanh(0.9) - half))
    assert hi == pytest.approx(math.tanh(math.atanh(0.9) + half))
    rho, lo, hi, n = F.spearman_ci([1, 2, 3, 4], [1, 2, 3, 4])  # ρ = 1 clipped to 1 − 1/16
    z = math.atanh(1 - 1 / 16)
    assert rho == pytest.approx(1.0) and n == 4
    assert lo == pytest.approx(math.tanh(z - F.Z * math.sqrt(1.06)))
    assert hi == pytest.approx(math.tanh(z + F.Z * math.sqrt(1.06)))
    rho, lo, hi, n = F.spearman_ci([1, 2, 3], [1, 2, 3])  # n < 4: no interval
    assert rho == pytest.approx(1.0) and n == 3 and math.isnan(lo) and math.isnan(hi)
    rho, lo, hi, n = F.spearman_ci([1, 2, 3, 4], [2, 2, 2, 2])  # constant: no ρ
    assert math.isnan(rho) and math.isnan(lo) and math.isnan(hi) and n == 4
    assert F._clip(1.0, 4) == pytest.approx(15 / 16)
    assert F._clip(-1.0, 4) == pytest.approx(-15 / 16)
    assert F._clip(0.3, 4) == 0.3


def test_a_median_interval_uses_the_order_statistics():
    med, lo, hi = F.median_ci([5, 1, 4, 2, 3])  # five values: no interval exists
    assert med == 3 and math.isnan(lo) and math.isnan(hi)
    med, lo, hi = F.median_ci([6, 1, 5, 2, 4, 3])  # six: ranks 1 … 6
    assert (med, lo, hi) == (3.5, 1.0, 6.0)
    med, lo, hi = F.median_ci([*range(1, 10), None, "x"])  # nine numbers: ranks 2 … 8
    assert (med, lo, hi) == (5.0, 2.0, 8.0)
    med, lo, hi = F.median_ci(range(1, 21))  # twenty: ranks 6 … 15 (P(B ≤ 5) = 2.07%)
    assert (med, lo, hi) == (10.5, 6.0, 15.0)
    med, lo, hi = F.median_ci([])
    assert math.isnan(med) and math.isnan(lo) and math.isnan(hi)


def test_a_share_interval_is_clopper_pearson():
    lo, hi = F.share_ci(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    lo, hi = F.share_ci(10, 10)
    assert lo == pytest.approx(0.025 ** (1 / 10)) and hi == 1.0
    lo, hi = F.share_ci(5, 10)
    assert lo == pytest.approx(0.18709, abs=1e-4) and hi == pytest.approx(0.81291, abs=1e-4)


def test_the_interval_of_an_absolute_weight():
    assert F._abs_ci(0.2, 0.5) == (0.2, 0.5)
    assert F._abs_ci(0.0, 0.5) == (0.0, 0.5)
    assert F._abs_ci(-0.5, -0.2) == (0.2, 0.5)
    assert F._abs_ci(-0.5, 0.0) == (0.0, 0.5)
    assert F._abs_ci(-0.5, 0.3) == (0.0, 0.5)
    assert F._abs_ci(-0.3, 0.5) == (0.0, 0.5)


def test_the_geomean_of_interval_ends_and_when_the_faster_side_is_undecided():
    p = pd.DataFrame({"ci_low": [1.0, 4.0], "ci_high": [2.0, 8.0]})
    assert F._geomean_ends(p) == pytest.approx((2.0, 4.0))
    for bad in (0.0, -1.0, math.nan, None):
        lo, hi = F._geomean_ends(pd.DataFrame({"ci_low": [1.0, bad], "ci_high": [2.0, 8.0]}))
        assert math.isnan(lo) and hi == pytest.approx(4.0)
    lo, hi = F._geomean_ends(pd.DataFrame({"ci_low": [], "ci_high": []}))
    assert math.isnan(lo) and math.isnan(hi)
    assert F._undecided_faster({}) is True
    assert F._undecided_faster({"geomean_ci_low": math.nan}) is True
    assert F._undecided_faster({"geomean_ci_low": 1.0}) is True
    assert F._undecided_faster({"geomean_ci_low": 1.0 + 1e-13}) is True  # within rounding
    assert F._undecided_faster({"geomean_ci_low": 1.01}) is False


def test_a_findings_interval_text_in_each_form():
    f = F.Finding("x", "c", "s", F.HOLDS, "e", "r", statistic="geomean", estimate=1.234,
                  ci_low=1.1, ci_high=1.5, threshold=1.0)  # fmt: skip
    assert f.interval == "geomean 1.23 [1.1, 1.5] vs 1"
    g = F.Finding("x", "c", "s", F.HOLDS, "e", "r", statistic="ρ", estimate=0.5)
    assert g.interval == "ρ 0.5 [no interval]"
    assert F.Finding("x", "c", "s", F.NO_DATA, "e", "r").interval == ""
    note = F.Finding("x", "c", "s", F.HOLDS, "e", "r", estimate=1.0, interval_note="3 configs")
    assert note.interval == "3 configs"
    big = F.Finding("x", "c", "s", F.HOLDS, "e", "r", statistic="n", estimate=12345.0,
                    ci_low=1000.0, ci_high=20000.0, threshold=None)  # fmt: skip
    assert big.interval == "n 12,345 [1,000, 20,000]"
    assert F._g(None) == "n/a" and F._g(math.inf) == "n/a" and F._g(math.nan) == "n/a"
    assert F._g(999.4) == "999" and F._g(0.012345) == "0.0123"
    assert F._finite(1, 2.0) and not F._finite(1, None) and not F._finite(math.inf)
    assert not F._finite(math.nan) and F._finite()


# -- the speedup bootstrap -------------------------------------------------------------------


def test_bootstrap_medians_are_the_medians_of_index_resamples_drawn_per_sample_count():
    # the order-statistic shortcut against plain medians of the same resamples: configs with
    # the same count drawn together (int8 indices below 128 values, int16 from 128), counts in
    # increasing order; fewer than 5 samples: no replicates
    base = np.random.default_rng(1)
    samples = [
        base.normal(1, 0.1, 7),
        base.normal(2, 0.1, 3),
        base.normal(3, 0.1, 7),
        base.normal(4, 0.1, 130),
        base.normal(5, 0.1, 6),
    ]
    got = SP._boot_medians(samples, 20, np.random.default_rng(5))
    assert got.shape == (5, 20) and np.isnan(got[1]).all()
    rng = np.random.default_rng(5)
    want = np.full((5, 20), np.nan)
    for n, rows, kind in ((6, [4], np.int8), (7, [0, 2], np.int8), (130, [3], np.int16)):
        x = np.sort(np.stack([samples[i] for i in rows]), axis=1)
        draw = rng.integers(0, n, size=(len(rows), 20, n), dtype=kind)
        for j, i in enumerate(rows):
            want[i] = [np.median(x[j][d]) for d in draw[j]]
    assert np.allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12, atol=0)
    assert SP._boot_medians([], 3, rng).shape == (0, 3)


def test_plain_medians_and_the_empty_sample():
    got = SP._medians([np.array([3.0, 1.0, 2.0]), np.array([]), np.array([1.0, 2.0])])
    assert got[0] == 2.0 and np.isnan(got[1]) and got[2] == 1.5


def test_the_call_of_an_interval():
    assert SP.call(1.01, 1.2) == "faster"
    assert SP.call(0.8, 0.99) == "slower"
    assert SP.call(1.0, 1.2) == "no detectable change"
    assert SP.call(0.8, 1.0) == "no detectable change"
    assert SP.call(0.8, 1.2) == "no detectable change"
    assert SP.call(1.0 + 1e-13, 1.2) == "no detectable change"  # 1 within rounding
    assert SP.call(math.nan, 1.2) == "no interval" and SP.call(0.9, math.inf) == "no interval"


def test_the_share_faster_and_the_geometric_mean():
    assert SP.faster_share(pd.Series([2.0, 0.5, 1.0, 1.0 + 1e-13])) == 0.25
    assert math.isnan(SP.faster_share(pd.Series([], dtype=float)))
    assert SP.geomean(pd.Series([1.0, 4.0, "x", None, 0.0, -2.0])) == pytest.approx(2.0)
    assert SP.geomean(pd.Series([0.0, -1.0])) is None


def test_the_two_level_geomean_interval_redrawn_by_hand():
    logs = np.log(np.array([[1.0, 2.0, 4.0, 1.5], [2.0, 2.0, 1.0, 3.0], [0.5, 1.0, 2.0, 1.0]]))
    lo, hi = SP._geomean_ci(logs, 7)
    rng = np.random.default_rng(8)
    draw = rng.integers(0, 3, size=(4, 3))
    reps = [math.exp(np.mean([logs[c, r] for c in draw[r]])) for r in range(4)]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), rel=1e-12)
    assert all(math.isnan(x) for x in SP._geomean_ci(np.zeros((0, 4)), 7))
    bad = logs.copy()
    bad[1, 2] = np.nan
    assert all(math.isnan(x) for x in SP._geomean_ci(bad, 7))


def test_a_pairs_interval_from_the_stored_cis_when_it_has_too_few_samples():
    pairs = pd.DataFrame(
        {
            "speedup": [2.0, 2.0, 2.0],
            "samples_a": [[1.0, 1.0], [], []],
            "samples_b": [[0.5], [], []],
            "t_a": [1.0, 1.0, 1.0], "t_b": [0.5, 0.5, 0.5],
            "t_low_a": [0.9, np.nan, -0.9], "t_high_a": [1.2, np.nan, 1.2],
            "t_low_b": [0.4, 0.4, 0.4], "t_high_b": [0.6, 0.6, 0.6],
        }
    )  # fmt: skip
    logs = SP._intervals(pairs, 4, 0)
    # the ratio of the stored ends (A's low over B's high...) scaled to the speedup
    assert pairs.at[0, "ci_low"] == pytest.approx(2.0 * (0.9 / 0.6) / 2.0)
    assert pairs.at[0, "ci_high"] == pytest.approx(2.0 * (1.2 / 0.4) / 2.0)
    assert pairs.at[0, "ci_method"] == "stored CIs"
    assert pd.isna(pairs.at[1, "ci_method"]) and pd.isna(pairs.at[2, "ci_method"])
    assert pairs["call"].tolist() == ["faster", "no interval", "no interval"]  # [1.5, 3]
    assert np.isnan(pairs.at[1, "ci_low"]) and np.isnan(pairs.at[2, "ci_high"])
    assert logs.shape == (3, 4) and np.allclose(logs, math.log(2.0))
    empty = pairs.iloc[0:0].copy()
    assert SP._intervals(empty, 4, 0).shape == (0, 4) and "call" in empty


# -- a whole comparison ----------------------------------------------------------------------


def _fcw(b: int, n: int = 64) -> dict:
    return {"layers": 2, "nodes": n, "input": 20, "output": 10, "batch": b}


def _two_platforms() -> tuple[A.Data, list[dict]]:
    rows = []
    for i, (b, g) in enumerate(((8, 1.5), (16, 2.0), (32, 3.0))):
        rows.append(synth.row("fc", _fcw(b), 0.1, platform="A", n_samples=12, seed=i))
        rows.append(synth.row("fc", _fcw(b), 0.1 * g, platform="B", n_samples=12, seed=i + 5))
    rows += [
        synth.row("fc", _fcw(64), 0.1, platform="A", n_samples=12, seed=20, quality="noisy",
                  quality_reasons=["load"]),
        synth.row("fc", _fcw(64), 0.3, platform="B", n_samples=12, seed=21),
        synth.row("fc", _fcw(128), 0.1, platform="A"),  # ok on A, out of memory on B
        synth.row("fc", _fcw(128), None, platform="B", status="oom"),
        synth.row("fc", _fcw(256), 0.1, platform="B"),  # B only
    ]  # fmt: skip
    return A.from_frames(rows), rows


KEY = [
    "family", "config_key", "precision", "mode", "optimizer", "backend", "precision_policy",
    "data_source", "threads",
]  # fmt: skip


def test_a_comparison_of_two_platforms_in_every_field():
    data, rows = _two_platforms()
    c = SP.compare(data, "platform", "A", "B")
    assert (c.by, c.a, c.b, c.metric, c.include_noisy) == ("platform", "A", "B",
                                                            "examples_per_s", False)  # fmt: skip
    assert c.key == KEY
    assert c.noisy_left_out == {"A": 1, "B": 0} and c.noisy_reasons == {"load": 1}
    assert c.unmatched == {"A": 1, "B": 2}  # A: 128 (failed on B); B: 64 (A's is noisy), 256
    assert c.failed.to_dict("records") == [
        {"family": "fc", "config_key": '{"batch":128,"input":20,"layers":2,"nodes":64,'
         '"output":10}', "precision": "fp32", "mode": "eager",
         "optimizer": "rmsprop", "backend": "torch", "precision_policy": "mixed",
         "data_source": "device", "threads": 2, "status": "oom", "ok_in": "A",
         "failed_in": "B"}
    ]  # fmt: skip
    p = c.pairs
    assert list(p.columns) == [
        *KEY, "value_a", "params", "runs_a", "n_a", "emulated_a", "value_b", "runs_b", "n_b",
        "emulated_b", "speedup", "ci_low", "ci_high", "ci_method", "call", "batch", "input",
        "layers", "nodes", "output",
    ]  # fmt: skip
    assert p["batch"].tolist() == [16, 32, 8]  # config keys in text order
    assert p["speedup"].tolist() == pytest.approx([2.0, 3.0, 1.5])
    want_a = {r["config"]["batch"]: r["examples_per_s"] for r in rows[:6:2]}
    want_b = {r["config"]["batch"]: r["examples_per_s"] for r in rows[1:6:2]}
    assert p["value_a"].tolist() == pytest.approx([want_a[b] for b in p["batch"]])
    assert p["value_b"].tolist() == pytest.approx([want_b[b] for b in p["batch"]])
    assert p["params"].tolist() == [rows[0]["params"]] * 3
    assert (p["runs_a"].tolist(), p["n_a"].tolist(), p["n_b"].tolist()) == ([1] * 3, [12] * 3,
                                                                            [12] * 3)  # fmt: skip
    assert not p["emulated_a"].any() and not p["emulated_b"].any()
    assert p["ci_method"].tolist() == ["bootstrap"] * 3 and p["call"].tolist() == ["faster"] * 3
    assert ((p["ci_low"] < p["speedup"]) & (p["speedup"] < p["ci_high"])).all()
    assert ((p["ci_high"] - p["ci_low"]) / p["speedup"] < 0.05).all()  # 1% spread, 12 samples
    s = c.summary
    assert s["family"].tolist() == ["fc", "all"]
    r = c.overall()
    assert (r["n"], r["faster"], r["slower"], r["no_change"], r["no_interval"]) == (3, 3, 0, 0, 0)
    assert r["faster_share"] == 1.0 and r["emulated"] == 0 and r["geomean_call"] == "faster"
    assert r["geomean"] == pytest.approx(9 ** (1 / 3))
    assert (r["median"], r["min"], r["max"]) == pytest.approx((2.0, 1.5, 3.0))
    assert r["p90"] == pytest.approx(2.8)  # linear interpolation between 2 and 3
    assert 1.4 < r["geomean_ci_low"] < r["geomean"] < r["geomean_ci_high"] < 3.1
    assert c.shown_identity() == ([], {
        "precision": "fp32", "mode": "eager", "optimizer": "rmsprop", "backend": "torch",
        "precision_policy": "mixed", "data_source": "device", "threads": "2",
    })  # fmt: skip
    d = c.as_dict()
    assert list(d) == [
        "by", "a", "b", "metric", "key", "compared", "unmatched", "noisy_left_out",
        "noisy_reasons", "include_noisy", "summary", "pairs", "failed",
    ]  # fmt: skip
    want = ("platform", "A", "B", "examples_per_s", 3)
    assert (d["by"], d["a"], d["b"], d["metric"], d["compared"]) == want
    assert d["key"] == KEY and d["unmatched"] == {"A": 1, "B": 2}
    assert d["noisy_left_out"] == {"A": 1, "B": 0} and d["noisy_reasons"] == {"load": 1}
    assert d["include_noisy"] is False and len(d["pairs"]) == 3 and len(d["summary"]) == 2
    assert d["failed"][0]["status"] == "oom"


def test_a_comparison_that_keeps_noisy_runs_and_one_on_step_time():
    data, _ = _two_platforms()
    c = SP.compare(data, "platform", "A", "B", include_noisy=True)
    assert c.include_noisy is True and len(c.pairs) == 4
    assert c.noisy_left_out == {"A": 0, "B": 0} and c.noisy_reasons == {"load": 1}
    assert c.unmatched == {"A": 1, "B": 1}
    t = SP.compare(data, "platform", "A", "B", metric="step_time_s")
    assert t.metric == "step_time_s"
    assert t.pairs["speedup"].tolist() == pytest.approx([2.0, 3.0, 1.5])  # lower is better
    assert (t.pairs["value_a"] > t.pairs["value_b"]).all()
    fc_only = SP.compare(data, "platform", "B", "A", family="fc")
    assert fc_only.pairs["speedup"].tolist() == pytest.approx([1 / 2, 1 / 3, 1 / 1.5])
    assert fc_only.unmatched == {"B": 2, "A": 1}
    assert fc_only.overall()["slower"] == 3 and fc_only.overall()["faster_share"] == 0.0


def _head(f: F.Finding) -> tuple:
    """What every verdict of one check repeats: id, claim, source and rule."""
    return (f.id, f.claim, f.source, f.rule)


# -- the regression findings, whole ----------------------------------------------------------


def _fc_grid(layers=(2, 4, 8), w_layers: float = 0.0, w_batch: float = 0.03) -> A.Data:
    space = {"input": [20], "output": [10], "layers": list(layers), "nodes": [64, 128, 256],
             "batch": [8, 16, 32]}  # fmt: skip

    def util(c):
        wob = ((c["batch"] * 7 + c["nodes"] * 3 + c["layers"]) % 5 - 2) / 1000
        return (
            0.3 + w_batch * math.log2(c["batch"] / 8) - 0.02 * math.log2(c["nodes"] / 64)
            + w_layers * math.log2(c["layers"] / 2) + wob
        )  # fmt: skip

    return A.from_frames(synth.rows("fc", space, util))


def _w(data: A.Data, hp: str) -> tuple[float, float, float]:
    row = A.sensitivity(data, "fc", "achieved_flops").table.set_index("hyperparameter").loc[hp]
    return float(row.weight), float(row.ci_low), float(row.ci_high)


def _ws(w) -> str:
    from paradnn.formatting import signed

    return f"{signed(w[0])} [{signed(w[1])}, {signed(w[2])}]"


def test_width_over_depth_in_every_field():
    data = _fc_grid()
    f = F.fc_width_over_depth(data)
    b, n, la = (_w(data, h) for h in ("batch", "nodes", "layers"))
    assert b[0] > 0 > n[0] and b[1] > 0 and n[2] < 0 and la[1] < 0 < la[2]
    est = min(abs(b[0]), abs(n[0])) - abs(la[0])
    lo = min(b[1], -n[2]) - max(-la[1], la[2])  # |w(layers)| spans [0, max(−lo, hi)]
    hi = min(b[2], -n[1]) - 0.0
    assert f.estimate == pytest.approx(est) and f.ci_low == pytest.approx(lo)
    assert f.ci_high == pytest.approx(hi)
    assert f.verdict == F.HOLDS and f.threshold == 0.0 and f.decide == ""
    assert f.statistic == "min(|w(batch)|, |w(nodes)|) − |w(layers)|"
    assert f.evidence == (
        f"w(batch) = {_ws(b)}, w(nodes) = {_ws(n)}, w(layers) = {_ws(la)}, n = 27"
    )
    assert (f.id, f.source) == ("fc-width-over-depth", "seed 000 §4.1, Fig. 2(d)")
    assert f.claim == "FC utilization is driven by batch size and nodes more than by layers"
    assert f.rule == (
        "holds when min(|w(batch)|, |w(nodes)|) − |w(layers)| is above 0 over its whole "
        "interval (interval arithmetic on the three weights' 95% CIs: conservative), does not "
        "hold when it is at or below 0, inconclusive when it straddles 0"
    )
    flat = F.fc_width_over_depth(_fc_grid(layers=(2,)))
    assert flat.verdict == F.NO_DATA and flat.evidence == "layers: constant (2) in this slice"
    assert flat.rule == f.rule and flat.estimate is None
    none = F.fc_width_over_depth(A.from_frames([]))
    assert (none.verdict, none.evidence, none.rule) == (F.NO_DATA, "no fc runs", f.rule)
    assert _head(none) == _head(flat) == _head(f)
    cnn = synth.row("cnn", {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 2}, 0.1)
    assert F.fc_width_over_depth(A.from_frames([cnn])).evidence == "no fc runs"
    two = A.from_frames([synth.row("fc", _fcw(b), 0.1) for b in (8, 16)])
    assert F.fc_width_over_depth(two).evidence == "2 ok runs with a value of achieved_flops"


def test_depth_unexploited_in_every_field():
    data = _fc_grid(w_layers=-0.02)
    la = _w(data, "layers")
    f = F.depth_unexploited(data)
    assert f.verdict == F.HOLDS and la[2] < 0
    assert (f.estimate, f.ci_low, f.ci_high) == pytest.approx(la)
    assert f.evidence == f"w(layers) = {_ws(la)}, n = 27" and f.statistic == "w(layers)"
    assert (f.id, f.source) == ("depth-unexploited", "seed 000 observation 1 (§4.1, Fig. 2(d))")
    assert f.claim == "Utilization does not rise with model depth (FC layer count)"
    assert f.rule == (
        "holds when the 95% CI of w(layers) for FC is at or below 0, does not hold when it is "
        "above 0, inconclusive when it straddles 0 (no effect either way cannot be told from a "
        "small one)"
    )
    up = F.depth_unexploited(_fc_grid(w_layers=0.02))
    assert up.verdict == F.FAILS and up.threshold == 0.0
    flat = F.depth_unexploited(_fc_grid(layers=(2,)))
    assert (flat.verdict, flat.evidence) == (F.NO_DATA, "constant (2) in this slice")
    none = F.depth_unexploited(A.from_frames([]))
    assert (none.verdict, none.evidence) == (F.NO_DATA, "no fc runs")
    assert _head(none) == _head(flat) == _head(up) == _head(f)
    two = A.from_frames([synth.row("fc", _fcw(b), 0.1) for b in (8, 16)])
    assert F.depth_unexploited(two).evidence == "2 ok runs with a value of achieved_flops"
    mid = F.depth_unexploited(_fc_grid())
    assert mid.verdict == F.INCONCLUSIVE
    lo, hi = mid.ci_low, mid.ci_high
    assert mid.evidence.startswith(f"w(layers) = {_ws(_w(_fc_grid(), 'layers'))}, n = 27; ")
    assert mid.evidence.endswith(" straddles 0") and lo < 0 < hi
    assert mid.decide == F.more_data(27, mid.estimate, lo, hi, 0.0, "runs")


def test_a_rising_finding_in_every_field():
    data = _fc_grid()
    fc_batch = next(c for c in F.CHECKS if c(A.from_frames([])).id == "fc-batch")
    f = fc_batch(data)
    b = _w(data, "batch")
    assert f.verdict == F.HOLDS and (f.estimate, f.ci_low, f.ci_high) == pytest.approx(b)
    assert f.evidence == f"w(batch) = {_ws(b)} on achieved FLOP/s, n = 27 (SynthCPU, fp32)"
    assert f.statistic == "w(batch)" and f.threshold == 0.0
    assert (f.claim, f.source) == ("FC utilization rises with batch size",
                                   "seed 000 §4.1, Fig. 2(a)")  # fmt: skip
    assert f.rule == (
        "holds when the 95% CI of the standardized regression weight of batch is above 0, "
        "does not hold when it is at or below 0, inconclusive when it straddles 0"
    )
    fc_nodes = next(c for c in F.CHECKS if c(A.from_frames([])).id == "fc-nodes")
    g = fc_nodes(data)
    assert g.verdict == F.FAILS and g.statistic == "w(nodes)"
    assert g.evidence.startswith(f"w(nodes) = {_ws(_w(data, 'nodes'))} on achieved FLOP/s")
    flat = fc_batch(A.from_frames(synth.rows("fc", {"layers": [2], "nodes": [64, 128],
                                                    "batch": [8]}, lambda c: 0.1)))  # fmt: skip
    assert flat.verdict == F.NO_DATA
    assert flat.evidence == "fc achieved FLOP/s: 2 ok runs with a value of achieved_flops"
    flat_b = fc_batch(_fc_grid(w_batch=0.0))
    assert flat_b.verdict == F.INCONCLUSIVE and flat_b.ci_low < 0 < flat_b.ci_high
    assert flat_b.decide == F.more_data(
        27, flat_b.estimate, flat_b.ci_low, flat_b.ci_high, 0.0, "runs"
    )
    assert flat_b.evidence.endswith(" straddles 0")
    none = fc_batch(A.from_frames([]))
    assert (none.verdict, none.evidence) == (F.NO_DATA, "no fc runs")
    assert _head(none) == _head(flat) == _head(f)


# -- the op findings, whole ------------------------------------------------------------------


def _op_groups(rates: list[list[float]], threads: int = 2, precisions=("fp32", "bf16", "fp16")):
    rows = []
    for prec, rs in zip(precisions, rates, strict=False):
        for i, rate in enumerate(rs):
            flops = 2 * (256 << i) ** 3
            rows.append(synth.op_row(f"mm-{i}", flops, flops / rate, threads, prec))
    return pd.DataFrame(rows)


def test_larger_ops_faster_in_every_field():
    up, down = [1e9, 2e9, 3e9], [3e9, 2e9, 1e9]
    ops = pd.concat(
        [
            _op_groups([up, up, up]),
            _op_groups([down], threads=1),  # another thread count: left out
            _op_groups([down, down]).assign(status="oom"),  # failed: left out
            _op_groups([[1e9, 2e9, 4e9, 8e9]], precisions=("tf32",)).assign(pass_="x"),
        ],
        ignore_index=True,
    )
    f = F.larger_ops_faster(A.from_frames([], ops=ops))
    z, half = math.atanh(1 - 1 / 13**2), F.Z * math.sqrt(1.06 / 10)
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(1.0)
    assert f.ci_low == pytest.approx(math.tanh(z - half))
    assert f.ci_high == pytest.approx(math.tanh(z + half))
    assert f.evidence == "pooled ρ = +1.00 over 13 shapes in 4 groups; ρ > 0 in 4/4 groups"
    assert (f.statistic, f.threshold, f.decide) == ("pooled ρ", 0.0, "")
    assert f.id == "larger-ops-faster" and f.claim == "Larger op shapes reach higher throughput"
    assert f.source == (
        "seed 002 §4.1.2 (Table 1, Table 4, Figure 7; on accelerators, generalized to any device)"
    )
    assert f.rule == (
        "holds when Spearman's ρ between FLOPs and achieved FLOP/s, ranked within each "
        "op/precision/pass/device group (≥ 3 shapes) and pooled, has a Fisher-z 95% CI above "
        "0; does not hold when the CI is at or below 0; inconclusive when it straddles 0"
    )
    no_threads = _op_groups([down, down, down]).drop(columns=["threads"])
    g = F.larger_ops_faster(A.from_frames([], ops=no_threads))
    assert g.verdict == F.FAILS and g.evidence.endswith("ρ > 0 in 0/3 groups")
    few = F.larger_ops_faster(A.from_frames([], ops=_op_groups([up[:2], up[:2]])))
    assert (few.verdict, few.evidence) == (F.NO_DATA, "fewer than 3 shapes per op group")
    none = F.larger_ops_faster(A.from_frames([]))
    assert (none.verdict, none.evidence) == (F.NO_DATA, "no op benchmarks (run `paradnn ops`)")
    mixed = F.larger_ops_faster(A.from_frames([], ops=_op_groups([up, down])))
    assert mixed.verdict == F.INCONCLUSIVE
    assert mixed.evidence.startswith("pooled ρ = +0.00 over 6 shapes in 2 groups; ρ > 0 in 1/2")
    assert mixed.decide == "more than 600 matched configs (now 6) at this ρ"
    assert _head(none) == _head(few) == _head(mixed) == _head(g) == _head(f)


def _thread_ops(gains: list[float], n_ops: int = 6, extra: list[dict] | None = None) -> A.Data:
    rows = []
    for i in range(n_ops):
        g = gains[i % len(gains)]
        for k, t in enumerate((1, 2, 4)):
            rows.append(synth.op_row(f"mm-{i}", 2 * 1024**3, 4.0 / g**k, threads=t))
    return A.from_frames([], ops=pd.DataFrame(rows + (extra or [])))


def test_threads_linear_in_every_field():
    conv = [dict(synth.op_row("cv", 2 * 1024**3, 4.0 / 3**k, threads=t), op="conv2d")
            for k, t in enumerate((1, 2, 4))]  # fmt: skip
    f = F.threads_linear(_thread_ops([2.0], extra=conv))  # the conv op is not a matmul
    assert f.verdict == F.HOLDS
    assert (f.estimate, f.ci_low, f.ci_high) == pytest.approx((2.0, 2.0, 2.0))
    assert f.evidence == (
        "median speedup per doubling 2.00× over 6 ops (largest count 4 threads; median "
        "efficiency there 1.00)"
    )
    assert (f.statistic, f.threshold) == ("median speedup per doubling", 1.9)
    assert (f.id, f.source) == ("threads-matmul", "seed 002 §4.1.1 (Figure 5), §4.2.1")
    assert f.claim == (
        "CPU matmul throughput scales almost linearly with threads: about 1.9-2× per doubling "
        "(up to the physical cores)"
    )
    assert f.rule.startswith("over matmul op benchmarks at several thread counts: each op's ")
    assert f.rule.endswith("inconclusive when it straddles 1.9 or there are fewer than 6 ops (no "
                           "such interval)")  # fmt: skip
    # 1.6 per doubling: 2.56× at 4 threads, efficiency 0.64
    slow = F.threads_linear(_thread_ops([1.6]))
    assert slow.verdict == F.FAILS and slow.estimate == pytest.approx(1.6)
    assert slow.evidence.endswith("over 6 ops (largest count 4 threads; median efficiency "
                                  "there 0.64)")  # fmt: skip
    few = F.threads_linear(_thread_ops([2.0], n_ops=5))
    assert few.verdict == F.INCONCLUSIVE and few.ci_low is None
    assert few.decide == "at least 6 ops at several thread counts (now 5) for an interval of " \
        "the median"  # fmt: skip
    wide = F.threads_linear(_thread_ops([1.5, 2.0]))
    # median 1.75 [1.5, 2]: 6 · (0.25/0.15)² = 16.7 → 17
    assert wide.verdict == F.INCONCLUSIVE and wide.decide.startswith("about 17 ops (now 6)")
    none = F.threads_linear(A.from_frames([]))
    assert none.verdict == F.NO_DATA
    assert none.evidence == (
        "no matmul op runs at two thread counts (run `paradnn ops --thread-sweep`)"
    )
    assert _head(none) == _head(few) == _head(wide) == _head(slow) == _head(f)


def test_largest_fc_prefer_cpu_in_every_field():
    cfg = [_fcw(8, 64 * (i + 1)) for i in range(3)]
    rows = [
        synth.row("fc", cfg[0], 0.1),
        synth.row("fc", cfg[0], None, platform="G", device="cuda", status="oom"),
        synth.row("fc", cfg[1], 0.1),
        synth.row("fc", cfg[1], None, platform="G", device="cuda", status="predicted_oom"),
        synth.row("fc", cfg[2], None, status="crashed"),  # failed on the CPU too: not counted
        synth.row("fc", cfg[2], None, platform="G", device="cuda", status="oom"),
    ]
    f = F.largest_fc_prefer_cpu(A.from_frames(rows))
    assert f.verdict == F.HOLDS
    assert f.evidence == "2 FC configs ok on CPU and out of memory on an accelerator"
    assert (f.statistic, f.estimate, f.threshold) == ("configs", 2, 1)
    assert f.interval_note == "2 configs (a count, no interval) vs ≥ 1" and f.interval == (
        "2 configs (a count, no interval) vs ≥ 1"
    )
    assert (f.id, f.source) == ("largest-fc-cpu", "seed 000 observation 6 (§5.1, Fig. 7)")
    assert f.claim == (
        "The largest FC models run only on the CPU (accelerator memory is too small)"
    )
    assert f.rule == (
        "holds when FC configs that ran ok on the CPU failed out of memory on an accelerator "
        "(a count: running out of memory is not a noisy measurement, so there is no interval)"
    )
    ok_both = [synth.row("fc", cfg[0], 0.1), synth.row("fc", cfg[0], 0.2, platform="G",
                                                       device="cuda")]  # fmt: skip
    g = F.largest_fc_prefer_cpu(A.from_frames(ok_both))
    assert g.verdict == F.FAILS and g.estimate == 0
    assert g.evidence == "0 FC configs ok on CPU and out of memory on an accelerator"
    cpu_only = F.largest_fc_prefer_cpu(A.from_frames(ok_both[:1]))
    assert (cpu_only.verdict, cpu_only.evidence) == (
        F.UNTESTABLE,
        "needs FC runs on a CPU and an accelerator",
    )
    gpu_only = F.largest_fc_prefer_cpu(A.from_frames(ok_both[1:]))
    assert gpu_only.verdict == F.UNTESTABLE
    none = F.largest_fc_prefer_cpu(A.from_frames([]))
    assert (none.verdict, none.evidence) == (F.NO_DATA, "no runs")
    assert _head(none) == _head(cpu_only) == _head(gpu_only) == _head(g) == _head(f)


# -- one row per config, a gate's counts and its threshold -----------------------------------


def test_per_config_rows_pool_the_runs_of_a_config():
    group = pd.DataFrame(
        {
            "k": ["x", "x", "y", "z", "w"],
            "status": ["ok", "ok", "ok", "ok", "oom"],
            "examples_per_s": [10.0, 20.0, 5.0, 0.0, 7.0],
            "params": [100, 101, 50, 1, 1],
            "samples": [[1.0, 2.0], [3.0], None, [1.0], [1.0]],
            "step_time_s": [0.1, 0.3, "x", 0.2, 0.2],
            "step_time_ci_low_s": [0.09, 0.05, np.nan, 0.1, 0.1],
            "step_time_ci_high_s": [0.11, 0.4, np.nan, 0.3, 0.3],
            "emulated": [False, True, False, False, False],
            "attempt": [1, 3, 2, 1, 1],
        }
    )
    out = SP._per_config(group, ["k"], "examples_per_s")
    assert list(out.columns) == ["k", "value", "params", "runs", "samples", "n", "t_low",
                                 "t_high", "t", "emulated", "attempt"]  # fmt: skip
    assert out["k"].tolist() == ["x", "y"]  # z: no positive value; w: not ok
    x, y = out.iloc[0], out.iloc[1]
    assert (x["value"], x["params"], x["runs"], x["n"]) == (15.0, 100, 2, 3)
    assert x["samples"].tolist() == [1.0, 2.0, 3.0]
    assert (x["t_low"], x["t_high"], x["t"]) == pytest.approx((0.05, 0.4, 0.2))
    assert bool(x["emulated"]) is True and x["attempt"] == 3
    assert (y["value"], y["runs"], y["n"], y["attempt"]) == (5.0, 1, 0, 2)
    assert np.isnan(y["t"]) and np.isnan(y["t_low"]) and bool(y["emulated"]) is False
    one = SP._per_config(group.iloc[[2]].drop(columns=["samples", "emulated"]), ["k"],
                         "examples_per_s")  # fmt: skip
    assert one["n"].tolist() == [0] and one["emulated"].tolist() == [False]
    none = SP._per_config(group.iloc[[3, 4]], ["k"], "examples_per_s")
    assert len(none) == 0 and "attempt" in none.columns


def test_a_gates_counts_and_its_line():
    data, _ = _two_platforms()
    c = SP.compare(data, "platform", "A", "B")
    assert SP.counts(c) == {"compared": 3, "noisy_left_out": {"A": 1, "B": 0},
                            "unmatched": {"A": 1, "B": 2}, "failed_in_one": 1}  # fmt: skip
    assert SP.counts_line(c) == (
        "compared 3 configs; left out as noisy: A 1, B 0; ok in one group only: A 1, B 2; ok "
        "in one group and failed in the other: 1"
    )
    kept = SP.compare(data, "platform", "A", "B", include_noisy=True, family="fc")
    kept = dataclasses.replace(kept, pairs=kept.pairs.iloc[:1])
    assert SP.counts_line(kept) == (
        "compared 1 config; left out as noisy: A 0, B 0 (--include-noisy: kept); ok in one "
        "group only: A 1, B 1; ok in one group and failed in the other: 1"
    )


def test_slower_than_judges_the_upper_end_or_the_point_without_an_interval():
    data, _ = _two_platforms()
    c = SP.compare(data, "platform", "B", "A")  # A over B: 1/1.5, 1/2, 1/3
    pairs = c.pairs.copy()
    pairs.loc[0, ["ci_low", "ci_high"]] = [np.nan, np.nan]  # judged on its point, 0.5
    c = dataclasses.replace(c, pairs=pairs)
    got = SP.slower_than(c, 40)  # below 0.6: 0.5 (point) and 0.33; not 0.67
    assert got["batch"].tolist() == [16, 32]
    assert got["basis"].tolist() == ["point estimate (no interval)", "interval"]
    assert got["threshold"].tolist() == pytest.approx([0.6, 0.6])
    assert SP.slower_than(c, 0)["batch"].tolist() == [16, 32, 8]
    assert SP.slower_than(c, 100).empty
    g = SP.slower_than(c, 20, on="geomean")  # geomean 0.48, its CI's upper end below 0.8
    assert g["family"].tolist() == ["all"] and g["basis"].tolist() == ["interval"]
    assert SP.slower_than(c, 60, on="geomean").empty  # geomean 0.48 with its CI above 0.4
    with pytest.raises(ConfigError) as e:
        SP.slower_than(c, 10, on="median")
    assert "fail-on" in str(e.value) and "config or geomean" in str(e.value)
    for bad in (-1, 101, "x", math.nan, None):
        with pytest.raises(ConfigError) as e:
            SP.check_pct(bad)
        assert "fail-if-slower" in str(e.value) and "a percentage from 0 to 100" in str(e.value)
    assert SP.check_pct("12.5") == 12.5 and SP.check_pct(0) == 0.0 and SP.check_pct(100) == 100


# -- the two-platform findings, whole --------------------------------------------------------


def _plat_rows(gains: list[float], fast="Fast", slow="Slow", n_samples=12, family="fc"):
    rows = []
    for i, g in enumerate(gains):
        if family == "fc":
            cfg = _fcw(8 * (i + 1))
        else:
            cfg = {"blocks": 1, "filters": 4 * (i + 1), "image": 16, "output": 3, "batch": 2}
        rows.append(synth.row(family, cfg, 0.1, platform=slow, n_samples=n_samples, seed=i))
        rows.append(
            synth.row(family, cfg, 0.1 * g, platform=fast, n_samples=n_samples, seed=i + 20)
        )
    return rows


def _fisher(rho: float, n: int) -> tuple[float, float]:
    z, half = (
        math.atanh(max(-1 + 1 / n**2, min(1 - 1 / n**2, rho))),
        F.Z * math.sqrt(1.06 / (n - 3)),
    )
    return math.tanh(z - half), math.tanh(z + half)


def test_speedup_grows_with_batch_in_every_field():
    from paradnn.formatting import signed

    up = [1.2 + 0.1 * i for i in range(8)]
    for fast, slow in (("Fast", "Slow"), ("Zfast", "Aslow")):  # either name first
        f = F.speedup_grows_with_batch(A.from_frames(_plat_rows(up, fast, slow)))
        lo, hi = _fisher(1.0, 8)
        assert f.verdict == F.HOLDS and f.estimate == pytest.approx(1.0)
        assert (f.ci_low, f.ci_high) == pytest.approx((lo, hi))
        geo = math.prod(up) ** (1 / 8)
        assert f.evidence.startswith(f"{fast} over {slow} (geomean {geo:.2f}× [")
        assert f.evidence.endswith(
            f"]): ρ(batch, speedup) = +1.00 [{signed(lo)}, {signed(hi)}] over 8 configs"
        )
        assert (f.statistic, f.threshold, f.decide) == ("ρ(batch, speedup)", 0.0, "")
    assert f.id == "speedup-batch"
    assert f.claim == "The faster platform's advantage grows with batch size"
    assert f.source == "seed 000 observation 7 (§5.1, Fig. 8(b); generalized to any two platforms)"
    assert f.rule == F.RHO_RULE.format(x="batch", side="above")
    down = F.speedup_grows_with_batch(A.from_frames(_plat_rows(up[::-1])))
    assert down.verdict == F.FAILS and down.estimate == pytest.approx(-1.0)
    assert "Fast over Slow" in down.evidence
    # the slower platform's speedups fall 1.2 → 1/1.2 … : which is faster is undecided
    mixed = [1.5, 1.4, 1.3, 1.2, 1 / 1.2, 1 / 1.3, 1 / 1.4, 1 / 1.5]
    u = F.speedup_grows_with_batch(A.from_frames(_plat_rows(mixed)))
    assert u.verdict == F.INCONCLUSIVE
    assert u.evidence.endswith("over 8 configs; which platform is faster is not decided")
    assert u.decide == (
        "which platform is faster: more matched configs or longer runs, until the "
        "geometric-mean speedup's CI excludes 1"
    )
    assert (u.statistic, u.threshold) == ("ρ(batch, speedup)", 0.0)
    assert u.estimate == pytest.approx(1.0) or u.estimate == pytest.approx(-1.0)
    assert u.ci_low is not None and u.ci_high is not None
    seven = F.speedup_grows_with_batch(A.from_frames(_plat_rows(up[:7])))
    assert (seven.verdict, seven.evidence) == (F.NO_DATA, "7 matched configs")
    one = F.speedup_grows_with_batch(A.from_frames(_plat_rows(up)[::2]))
    assert (one.verdict, one.evidence) == (F.UNTESTABLE, "one platform in the data")
    assert _head(one) == _head(seven) == _head(u) == _head(down) == _head(f)


def test_cnn_speedup_grows_with_size_in_every_field():
    from paradnn.formatting import signed

    up = [1.2 + 0.1 * i for i in range(8)]
    f = F.cnn_speedup_grows_with_size(A.from_frames(_plat_rows(up, family="cnn")))
    lo, hi = _fisher(1.0, 8)
    assert f.verdict == F.HOLDS and f.statistic == "ρ(params, speedup)"
    assert f.evidence.endswith(
        f"]): ρ(params, speedup) = +1.00 [{signed(lo)}, {signed(hi)}] over 8 configs"
    )
    assert f.evidence.startswith("Fast over Slow (geomean ")
    assert f.id == "cnn-size-speedup"
    assert f.source == "seed 000 observation 9 (§5.2, Fig. 10(a)-(c); generalized)"
    assert f.claim == (
        "The faster platform's speedup grows with CNN size (TPU over GPU in the paper)"
    )
    assert f.rule == "over matched CNN configs, " + F.RHO_RULE.format(x="params", side="above")
    fc = F.cnn_speedup_grows_with_size(A.from_frames(_plat_rows(up)))
    assert (fc.verdict, fc.evidence) == (F.NO_DATA, "0 matched cnn configs (need 8)")
    one = F.cnn_speedup_grows_with_size(A.from_frames(_plat_rows(up, family="cnn")[::2]))
    assert (one.verdict, one.evidence) == (F.UNTESTABLE, "one platform in the data")
    assert _head(one) == _head(fc) == _head(f)
    down = F.cnn_speedup_grows_with_size(A.from_frames(_plat_rows(up[::-1], family="cnn")))
    assert down.verdict == F.FAILS


def test_a_comparison_refuses_bad_input_naming_the_field():
    data, _ = _two_platforms()
    cases = [
        (dict(by="colour", a="A", b="B"), "by"),
        (dict(by="platform", a="Q", b="B"), "a"),
        (dict(by="platform", a="A", b="Q"), "b"),
        (dict(by="platform", a="A", b="A"), "b"),
        (dict(by="platform", a="A", b="B", metric="flops"), "metric"),
        (dict(by="platform", a="A", b="B", family="cnn"), "family"),
    ]
    for kw, field in cases:
        with pytest.raises(ConfigError) as e:
            SP.compare(data, **kw)
        assert e.value.field == field, (kw, str(e.value))
    with pytest.raises(ConfigError) as e:
        SP.compare(data, "platform", "Q", "B")
    assert "a platform with ok runs: A, B" in str(e.value)
    with pytest.raises(ConfigError) as e:
        SP.compare(data, "platform", "A", "A")
    assert "a platform other than a (A)" in str(e.value)


def test_a_comparison_of_two_attempts_of_each_run_key():
    rows = []
    for i, b in enumerate((8, 16, 32)):
        for att, u in ((1, 0.1), (2, 0.2 if b != 32 else 0.1)):
            rows.append(synth.row("fc", _fcw(b), u, attempt=att, id=10 * i + att, n_samples=12,
                                  seed=i * 3 + att, db="x.db", db_index=0))  # fmt: skip
    # one attempt: no pair
    rows.append(synth.row("fc", _fcw(64), 0.1, attempt=1, id=99, db="x.db", db_index=0))
    data = A.from_frames(rows)
    assert SP.values(data, "attempt") == ["first", "latest", "1", "2"]
    c = SP.compare(data, "attempt", "first", "latest")
    assert (c.by, c.a, c.b) == ("attempt", "first", "latest")
    assert c.pairs["batch"].tolist() == [16, 32, 8]
    assert c.pairs["speedup"].tolist() == pytest.approx([2.0, 1.0, 2.0])
    assert c.pairs["attempt_a"].tolist() == [1, 1, 1] and c.pairs["attempt_b"].tolist() == [2] * 3
    n = SP.compare(data, "attempt", "1", "2")
    assert n.pairs["speedup"].tolist() == pytest.approx([2.0, 1.0, 2.0])
    back = SP.compare(data, "attempt", "2", "1")
    assert back.pairs["speedup"].tolist() == pytest.approx([0.5, 1.0, 0.5])


# -- the memory-bound share and the precision and version findings, whole --------------------


def _roof_data(n: int, left: int, extra: list[dict] | None = None) -> tuple[A.Data, float]:
    rows = [synth.row("fc", _fcw(8 * (i + 1), 256), 0.2) for i in range(n)]
    pts = A.model_points(A.from_frames(rows)).sort_values("intensity")
    ridge = float(pts["intensity"].iloc[left])
    ceil = pd.DataFrame(
        [
            {"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": ridge},
            {"device_name": "SynthCPU", "kind": "copy", "precision": None, "value": 1.0},
        ]
    )
    return A.from_frames(rows + (extra or []), ceilings=ceil), ridge


def test_memory_bound_share_in_every_field():
    from paradnn.formatting import number

    rnn = synth.row("rnn", {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": 1}, 0.1)
    data, ridge = _roof_data(12, 6, [rnn])  # the rnn run is not counted
    f = F.memory_bound_share(data)
    lo, hi = F.share_ci(6, 12)
    assert f.verdict == F.INCONCLUSIVE and f.estimate == 0.5
    assert (f.ci_low, f.ci_high) == pytest.approx((lo, hi))
    assert f.evidence.startswith(
        f"6/12 runs below the ridge (measured ridge {number(ridge)} FLOP/B on SynthCPU fp32)"
    )
    assert (f.statistic, f.threshold) == ("share below the ridge", 0.25)
    assert f.decide == F.more_data(12, 0.5, lo, hi, 0.25, "runs")
    assert (f.id, f.source) == ("memory-bound", "seed 000 observation 2 (§4.2, Fig. 3)")
    assert f.claim == "Many FC and CNN workloads are memory-bandwidth bound"
    assert f.rule.startswith("holds when the share of FC/CNN runs with an analytic intensity ")
    assert f.rule.endswith("does not hold when the interval lies below a quarter, "
                           "inconclusive when it straddles it")  # fmt: skip
    many, _ = _roof_data(40, 30)
    g = F.memory_bound_share(many)
    assert g.verdict == F.HOLDS and g.estimate == 0.75 and g.decide == ""
    few, _ = _roof_data(40, 2)
    assert F.memory_bound_share(few).verdict == F.FAILS
    # a run exactly at the ridge is not left of it: 6 left of the 7th run's intensity
    assert F.memory_bound_share(_roof_data(12, 6)[0]).evidence.startswith("6/12 runs")
    noroof = F.memory_bound_share(A.from_frames([synth.row("fc", _fcw(8), 0.2)]))
    assert (noroof.verdict, noroof.evidence) == (
        F.NO_DATA,
        "no roof with both FLOP/s and bandwidth (run `paradnn calibrate`)",
    )
    none = F.memory_bound_share(A.from_frames([rnn]))
    assert (none.verdict, none.evidence) == (F.NO_DATA, "no ok fc/cnn runs with FLOP counts")
    assert _head(none) == _head(noroof) == _head(g) == _head(f)


def _prec_rows(gains: dict[str, list[float]], low: str = "bf16") -> list[dict]:
    cfgs = {
        "fc": lambda i: _fcw(8 * (i + 1)),
        "cnn": lambda i: {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": i + 2},
        "rnn": lambda i: {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": i + 1},
    }
    rows = []
    for fam, gs in gains.items():
        for i, g in enumerate(gs):
            rows.append(synth.row(fam, cfgs[fam](i), 0.1, n_samples=12, seed=i))
            rows.append(synth.row(fam, cfgs[fam](i), 0.1 * g, precision=low, n_samples=12,
                                  seed=i + 40))  # fmt: skip
    return rows


def test_precision_findings_in_every_field():
    data = A.from_frames(_prec_rows({"cnn": [2.0] * 4, "rnn": [1.25] * 4, "fc": [1.6] * 4}))
    f = F.precision_helps(data)
    geo = (2.0 * 1.25 * 1.6) ** (1 / 3)
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(geo)
    assert f.evidence.startswith(f"bf16 over fp32: geomean {geo:.2f}× [")
    assert f.evidence.endswith("] over 12 configs, cnn 2.00×, fc 1.60×, rnn 1.25×")
    assert (f.statistic, f.threshold) == ("geomean speedup", 1.0)
    assert (f.id, f.source) == ("precision-helps", "seed 000 observation 13 (§6, Fig. 12)")
    assert f.claim == "16-bit precision (bf16/fp16) trains faster than fp32"
    assert f.rule == (
        "holds when the geometric-mean speedup over matched configs lies above 1 "
        + F.GEO_RULE.format(t=1)
    )
    r = F.precision_cnn_over_rnn(data)
    assert r.verdict == F.HOLDS and r.estimate == pytest.approx(1.6)
    assert r.evidence.startswith("cnn 2.00× [")
    assert " vs rnn 1.25× [" in r.evidence and r.evidence.endswith("(bf16 over fp32): ratio 1.60×")
    assert r.statistic == "cnn / rnn speedup" and r.threshold == 1.0
    c = SP.compare(data, "precision", "fp32", "bf16", include_noisy=True)
    s = c.summary.set_index("family")
    assert r.ci_low == pytest.approx(s.at["cnn", "geomean_ci_low"] / s.at["rnn", "geomean_ci_high"])
    assert r.ci_high == pytest.approx(
        s.at["cnn", "geomean_ci_high"] / s.at["rnn", "geomean_ci_low"]
    )
    assert (r.id, r.source) == ("precision-cnn-over-rnn",
                                "seed 002 §4.2.2 (Table 1, Figures 10, 12, 13)")  # fmt: skip
    assert r.claim == "Mixed precision helps CNNs more than recurrent (NLP) models"
    tie = F.precision_cnn_over_rnn(A.from_frames(_prec_rows({"cnn": [1.5] * 4, "rnn": [1.5] * 4})))
    assert tie.verdict == F.INCONCLUSIVE and tie.decide.endswith(
        "; longer runs (more timed steps) narrow each config's own interval"
    )
    rev = F.precision_cnn_over_rnn(A.from_frames(_prec_rows({"cnn": [1.2] * 4, "rnn": [2.0] * 4})))
    assert rev.verdict == F.FAILS
    no_rnn = F.precision_cnn_over_rnn(A.from_frames(_prec_rows({"cnn": [2.0] * 4}, low="fp16")))
    assert (no_rnn.verdict, no_rnn.evidence) == (
        F.NO_DATA,
        "need matched fp32/16-bit runs of cnn and rnn",
    )
    fp16 = F.precision_helps(A.from_frames(_prec_rows({"cnn": [2.0] * 4}, low="fp16")))
    assert fp16.evidence.startswith("fp16 over fp32: geomean 2.00× [")
    unmatched = A.from_frames(
        [synth.row("fc", _fcw(8), 0.1), synth.row("fc", _fcw(16), 0.1, precision="bf16")]
    )
    for check in (F.precision_helps, F.precision_cnn_over_rnn):
        u = check(unmatched)
        assert (u.verdict, u.evidence) == (F.NO_DATA, "no config ran ok in both fp32 and bf16")
    assert _head(F.precision_cnn_over_rnn(unmatched)) == _head(no_rnn) == _head(r)


def test_software_versions_in_every_field():
    rows = []
    for i, b in enumerate((8, 16, 32, 64)):
        for v, u in (("2.9.1", 0.1), ("2.10.0", 0.15), ("2.12.0", 0.2)):
            rows.append(synth.row("fc", _fcw(b), u, torch_version=v, n_samples=12, seed=i))
    f = F.software_versions(A.from_frames(rows))
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(2.0)  # 2.12.0 over 2.9.1
    assert f.evidence.startswith("torch 2.12.0 over 2.9.1: 2.00× [")
    assert f.evidence.endswith("] over 4 configs")
    assert (f.statistic, f.threshold) == ("geomean speedup", 1.0)
    assert (f.id, f.source) == ("software-updates", "seed 000 observations 12, 14 (§6, Fig. 12)")
    assert f.claim == "A newer software stack trains the same models faster"
    assert f.rule == (
        "holds when the newest torch version's geometric-mean speedup over the oldest lies "
        "above 1 " + F.GEO_RULE.format(t=1)
    )
    one = F.software_versions(A.from_frames(rows[:1]))
    assert (one.verdict, one.evidence) == (F.UNTESTABLE, "one torch version in the data (2.9.1)")
    none = F.software_versions(A.from_frames([]))
    assert none.evidence == "one torch version in the data (none)"
    apart = A.from_frames([rows[0], rows[5]])  # 2.9.1 at batch 8, 2.12.0 at batch 16
    a = F.software_versions(apart)
    assert (a.verdict, a.evidence) == (F.NO_DATA, "no config ran on both versions")
    assert _head(one) == _head(none) == _head(a) == _head(f)


def test_the_amdahl_interval_from_the_fits_covariance(monkeypatch):
    import scipy.optimize
    from scipy import stats

    got = {}

    def fake(cov):
        def fit(func, x, y, p0, bounds):
            got.update(x=list(x), y=list(y), p0=p0, bounds=bounds)
            assert func is S.amdahl_speedup
            return np.array([0.2]), np.array([[cov]])

        return fit

    monkeypatch.setattr(scipy.optimize, "curve_fit", fake(0.0004))  # se 0.02
    f = S.amdahl_fit([1, 2, 4, 8], [1.0, 1.5, 2.0, 2.5])
    assert got == {"x": [2.0, 4.0, 8.0], "y": [1.5, 2.0, 2.5], "p0": [0.1],
                   "bounds": ([0.0], [1.0])}  # fmt: skip
    t = stats.t.ppf(0.975, 2)
    assert f == S.AmdahlFit(0.2, pytest.approx(0.2 - t * 0.02), pytest.approx(0.2 + t * 0.02), 3,
                            "curve_fit, t interval (df = 2)")  # fmt: skip
    f90 = S.amdahl_fit([2, 4, 8], [1.5, 2.0, 2.5], level=0.9)
    assert f90.ci_low == pytest.approx(0.2 - stats.t.ppf(0.95, 2) * 0.02)
    monkeypatch.setattr(scipy.optimize, "curve_fit", fake(0.04))  # se 0.2: clipped to [0, 1]
    wide = S.amdahl_fit([2, 4], [1.5, 2.0])
    assert (wide.ci_low, wide.ci_high) == (
        0.0,
        pytest.approx(min(1.0, 0.2 + stats.t.ppf(0.975, 1) * 0.2)),
    )
    monkeypatch.setattr(scipy.optimize, "curve_fit", fake(np.inf))
    assert S.amdahl_fit([2, 4], [1.5, 2.0]) == S.AmdahlFit(
        0.2, None, None, 2, "curve_fit", "no covariance"
    )


# -- thread scaling and XLA's FLOP agreement -------------------------------------------------


def test_thread_scaling_rows_worked_out_by_hand():
    rows = [synth.op_row("mm", 1000, t, threads=n) for n, t in ((1, 8.0), (2, 5.0), (4, 2.0))]
    rows += [synth.op_row("mm", 1000, 3.0, threads=4)]  # a second run at 4: median 2.5
    rows += [dict(synth.op_row("mm", 1000, 1.0, threads=8), status="oom")]  # failed: left out
    rows += [dict(synth.op_row("mm", 1000, 1.0, threads=16), time_s=None)]  # no time: left out
    rows += [synth.op_row("one", 1000, 1.0, threads=2)]  # one thread count: no row
    rows += [synth.op_row("mm", 1000, 4.0, threads=2, precision="bf16"),
             synth.op_row("mm", 1000, 1.0, threads=8, precision="bf16")]  # fmt: skip
    t = SU.thread_scaling(A.from_frames([], ops=pd.DataFrame(rows)))
    assert list(t.columns) == ["name", "precision", "pass", "device_name", "threads", "time_s",
                               "speedup", "efficiency", "base_threads"]  # fmt: skip
    assert t.to_dict("records") == [
        {"name": "mm", "precision": "bf16", "pass": "fwd", "device_name": "SynthCPU",
         "threads": 2, "time_s": 4.0, "speedup": 1.0, "efficiency": 1.0, "base_threads": 2},
        {"name": "mm", "precision": "bf16", "pass": "fwd", "device_name": "SynthCPU",
         "threads": 8, "time_s": 1.0, "speedup": 4.0, "efficiency": 1.0, "base_threads": 2},
        {"name": "mm", "precision": "fp32", "pass": "fwd", "device_name": "SynthCPU",
         "threads": 1, "time_s": 8.0, "speedup": 1.0, "efficiency": 1.0, "base_threads": 1},
        {"name": "mm", "precision": "fp32", "pass": "fwd", "device_name": "SynthCPU",
         "threads": 2, "time_s": 5.0, "speedup": 1.6, "efficiency": 0.8, "base_threads": 1},
        {"name": "mm", "precision": "fp32", "pass": "fwd", "device_name": "SynthCPU",
         "threads": 4, "time_s": 2.5, "speedup": 3.2, "efficiency": 0.8, "base_threads": 1},
    ]  # fmt: skip
    empty = SU.thread_scaling(A.from_frames([]))
    assert list(empty.columns) == list(t.columns) and not len(empty)
    no_threads = pd.DataFrame(rows).drop(columns=["threads"])
    assert not len(SU.thread_scaling(A.from_frames([], ops=no_threads)))


def test_xla_flop_agreement_per_family_and_all():
    from paradnn.analysis import backends as BK

    def jax(fam, ratio, grad=None, status="ok", size=4):
        cfg = _fcw(8) if fam == "fc" else {"blocks": 1, "filters": size, "image": 16, "output": 3,
                                           "batch": 2}  # fmt: skip
        r = synth.row(fam, cfg, 0.1, backend="jax", status=status, xla_flops_ratio=ratio)
        if grad is not None:
            r["xla_detail"] = {"grad_flops_ratio": grad}
        return r

    rows = [
        jax("fc", 1.05, 1.0),
        synth.row(
            "fc",
            _fcw(16),
            0.1,
            backend="jax",
            xla_flops_ratio=1.2,
            xla_detail={"grad_flops_ratio": "x"},
        ),
        jax("cnn", 0.8, 0.9, status="crashed"),  # reached its compile: counted
        jax("cnn", None, size=8),  # no ratio: left out
        synth.row("fc", _fcw(32), 0.1, backend="torch", xla_flops_ratio=5.0),  # not JAX
    ]
    t = BK.flop_agreement(A.from_frames(rows))
    assert list(t.columns) == ["family", "runs", "median_ratio", "min_ratio", "max_ratio",
                               "median_grad_ratio", "flagged"]  # fmt: skip
    recs = t.to_dict("records")
    assert [r["family"] for r in recs] == ["cnn", "fc", "all"]
    assert [r["runs"] for r in recs] == [1, 2, 3]
    assert [r["flagged"] for r in recs] == [1, 1, 2]  # 0.8 and 1.2 are off by more than 10 %
    assert recs[1]["median_ratio"] == pytest.approx(1.125)
    assert (recs[2]["min_ratio"], recs[2]["max_ratio"]) == (0.8, 1.2)
    assert recs[2]["median_ratio"] == 1.05
    assert recs[1]["median_grad_ratio"] == 1.0 and recs[2]["median_grad_ratio"] == 0.95
    assert recs[0]["median_grad_ratio"] == 0.9
    assert BK._grad_ratio({"grad_flops_ratio": 2}) == 2.0 and math.isnan(BK._grad_ratio(None))
    assert math.isnan(BK._grad_ratio({"grad_flops_ratio": "2"}))
    edge = BK.flop_agreement(A.from_frames([jax("fc", 1.0625), jax("cnn", 0.9375)]))
    assert edge["flagged"].tolist() == [0, 0, 0]  # within 10 %: not flagged
    assert BK.flop_agreement(A.from_frames([jax("fc", None)])).empty
    assert BK.flop_agreement(A.from_frames([])).empty


# -- the fusion finding, whole ---------------------------------------------------------------


def _mode_rows(speeds: list[float], mode: str = "compile") -> list[dict]:
    rows = []
    for i, s in enumerate(speeds):
        for m, sp, seed in (("eager", 1.0, i), (mode, s, 50 + i)):
            r = synth.row("fc", _fcw(8 * (i + 1)), 0.1 * sp, n_samples=12, seed=seed)
            r.update(run_key=f"{r['run_key']}-{m}", mode=m)
            rows.append(r)
    return rows


def test_the_fusion_finding_in_every_field():
    from paradnn.analysis import modes as M

    f = M.fusion_finding(A.from_frames(_mode_rows([2.0, 2.0, 2.0, 7.0])))
    g = 2.0 ** (3 / 4) * 7.0 ** (1 / 4)
    lo, hi = f.ci_low, f.ci_high
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(g)
    assert f.evidence == (
        f"compile over eager: {g:.2f}× [{lo:.2f}, {hi:.2f}] over 4 configs (fc {g:.2f}×); "
        "3 of 4 configs inside 1.8-6.3×"
    )
    assert (f.statistic, f.threshold, f.decide) == ("geomean speedup", 1.0, "")
    assert (f.id, f.source) == (
        "compile-fusion",
        "seed 001, Table 4 (XLA fusion 1.8-6.3× on TPUv2)",
    )
    assert f.claim == "Compiling the training step (operator fusion) speeds it up"
    assert f.rule == (
        "holds when the 95% CI of the geometric-mean speedup of compile over eager (examples/s, "
        "matched configs, ≥ 3) lies above 1; does not hold when it lies at or below 1; "
        "inconclusive when it straddles 1; the evidence places it against the seed's 1.8-6.3× "
        "range"
    )
    # just inside and just outside the seed's range at both ends
    ends = M.fusion_finding(A.from_frames(_mode_rows([1.81, 6.29, 1.79, 6.31])))
    assert ends.evidence.endswith("; 2 of 4 configs inside 1.8-6.3×")
    # another compiled mode when there is no 'compile'
    other = M.fusion_finding(A.from_frames(_mode_rows([2.0] * 3, mode="cudagraphs")))
    assert other.evidence.startswith("cudagraphs over eager: 2.00× [")
    mixed = M.fusion_finding(A.from_frames(_mode_rows([0.5, 2.0, 1.0, 1.0])))
    assert mixed.verdict == F.INCONCLUSIVE
    assert mixed.decide == F.geomean_more(4, mixed.estimate, mixed.ci_low, mixed.ci_high, 1.0)
    two = M.fusion_finding(A.from_frames(_mode_rows([2.0, 2.0])))
    assert (two.verdict, two.evidence) == (F.NO_DATA, "2 config(s) ran ok eager and compile")
    eager = M.fusion_finding(A.from_frames(_mode_rows([2.0])[:1]))
    assert (eager.verdict, eager.evidence) == (
        F.UNTESTABLE,
        "no eager and compiled runs of one config",
    )
    only = M.fusion_finding(A.from_frames(_mode_rows([2.0])[1:]))
    assert only.verdict == F.UNTESTABLE
    assert _head(two) == _head(eager) == _head(only) == _head(mixed) == _head(f)


# -- the regression itself, against a least-squares fit by hand ------------------------------


def test_sensitivity_against_ordinary_least_squares_by_hand():
    from scipy import stats

    from paradnn.analysis import regression as R

    space = {"layers": [1, 2, 3], "nodes": [64, 128, 256], "input": [20], "output": [10],
             "batch": [8, 16, 64]}  # fmt: skip

    def util(c):
        wob = ((c["batch"] * 7 + c["nodes"] * 3 + c["layers"]) % 5 - 2) / 500
        return 0.3 + 0.02 * math.log2(c["batch"]) - 0.01 * c["layers"] + wob

    data = A.from_frames(synth.rows("fc", space, util))
    s = R.sensitivity(data, "fc", "achieved_flops")
    runs = data.runs
    y = runs["achieved_flops"].to_numpy(float)
    cols = {
        "batch": np.log2(runs["batch"].to_numpy(float)),  # 8 … 64 spans 8×: geometric
        "layers": runs["layers"].to_numpy(float),  # 1 … 3: linear
        "nodes": runs["nodes"].to_numpy(float),  # 64 … 256 spans 4×: linear
    }
    names = ["batch", "layers", "nodes"]
    X = np.column_stack([np.ones(len(y))] + [(cols[h] - cols[h].mean()) / cols[h].std()
                                              for h in names])  # fmt: skip
    ys = (y - y.mean()) / y.std()
    beta, *_ = np.linalg.lstsq(X, ys, rcond=None)
    resid = ys - X @ beta
    dof = len(y) - X.shape[1]
    cov = resid @ resid / dof * np.linalg.inv(X.T @ X)
    se = np.sqrt(np.diag(cov))
    t = stats.t.ppf(0.975, dof)
    p = 2 * stats.t.sf(np.abs(beta / se), dof)
    tab = s.table.set_index("hyperparameter")
    assert list(s.table.columns) == ["hyperparameter", "weight", "ci_low", "ci_high", "p_value",
                                     "transform"]  # fmt: skip
    for i, h in enumerate(names, start=1):
        assert tab.at[h, "weight"] == pytest.approx(beta[i], abs=1e-9)
        assert tab.at[h, "ci_low"] == pytest.approx(beta[i] - t * se[i], abs=1e-9)
        assert tab.at[h, "ci_high"] == pytest.approx(beta[i] + t * se[i], abs=1e-9)
        assert tab.at[h, "p_value"] == pytest.approx(p[i], rel=1e-6, abs=1e-12)
    assert tab["transform"].to_dict() == {"batch": "log2", "layers": "linear", "nodes": "linear"}
    assert s.table["hyperparameter"].tolist()[0] == "batch"  # the largest |weight| first
    order = s.table["weight"].abs().tolist()
    assert order == sorted(order, reverse=True)
    assert s.r2 == pytest.approx(1 - resid @ resid / (ys @ ys), abs=1e-9)
    assert (s.family, s.metric, s.n, s.reason) == ("fc", "achieved_flops", 27, None)
    assert s.excluded == {"input": "constant (20) in this slice",
                          "output": "constant (10) in this slice"}  # fmt: skip
    assert s.weight("batch") == tab.at["batch", "weight"] and s.weight("input") is None
    lin = R.sensitivity(data, "fc", "achieved_flops", log_axes=False)
    assert set(lin.table["transform"]) == {"linear"}
    few = R.sensitivity(data, "fc", "achieved_flops", hyperparameters=["input"])
    assert few.reason == "27 ok runs with a value of achieved_flops and no hyperparameter that " \
        "varies"  # fmt: skip
    assert few.table.empty and few.r2 is None
    with pytest.raises(ConfigError) as e:
        R.sensitivity(data, "fc", "achieved_flops", hyperparameters=["width"])
    assert e.value.field == "hyperparameter" and "one of " in str(e.value)
    with pytest.raises(ConfigError) as e:
        R.sensitivity(data, "cnn", "achieved_flops", hyperparameters=["batch"])
    assert "none: no cnn runs" in str(e.value)
    frame = pd.DataFrame(
        {
            "speedup": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0],
            "k": [1, 2, 3, 4, 5, 6, 7, 9],
            "bad": ["a", 1, 2, 3, 4, 5, 6, 7],
        }
    )
    fs = R.sensitivity(data, "fc", "speedup", hyperparameters=["k", "bad"], frame=frame)
    assert fs.excluded == {"bad": "not numeric in every run"} and fs.where == {}
    # one standardized regressor (k spans 9×: log2): its weight is Pearson's r
    r = np.corrcoef(np.log2(frame["k"].to_numpy(float)), frame["speedup"].to_numpy(float))[0, 1]
    assert fs.weight("k") == pytest.approx(r, abs=1e-9) and fs.n == 8
    short = R.sensitivity(data, "fc", "speedup", hyperparameters=["k"], frame=frame.iloc[:7])
    assert short.reason == "7 ok runs with a value of speedup" and short.table.empty
    with pytest.raises(ConfigError) as e:
        R.sensitivity(data, "fc", "nope", frame=frame)
    assert e.value.field == "metric"


def test_a_constant_metric_has_zero_weights_whatever_residue_its_mean_leaves():
    from paradnn.analysis import regression as R

    # ten runs of 0.3: the mean may leave a residue of rounding (a std of ~1e-17, not 0); a
    # constant metric is constant either way, so every weight is 0, never residue/residue
    frame = pd.DataFrame({"speedup": [0.3] * 10, "k": list(range(1, 11))})
    s = R.sensitivity(A.from_frames([]), "fc", "speedup", hyperparameters=["k"], frame=frame)
    assert s.weight("k") == 0.0 and s.r2 is None
    assert (s.table.at[0, "ci_low"], s.table.at[0, "ci_high"]) == (0.0, 0.0)
