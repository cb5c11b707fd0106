"""Hand-checked cases for analysis helpers that the report tests reach only through a shared
fixture (mutmut credits a module fixture's calls to its first test, so a wrong per-op speedup
or JAX ratio stayed green): per-op speedups and shares, the JAX-vs-torch study with its XLA
columns and notes, Amdahl's law itself, the N = 1 baselines and an empty Data."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import backends
from paradnn.analysis import breakdown as B
from paradnn.analysis.regression import sensitivity
from paradnn.analysis.scaling import AmdahlFit, amdahl_speedup, baselines
from paradnn.errors import ConfigError

import synth

CFG = {"layers": 2, "nodes": 64, "batch": 32}
LABEL_A = "fc batch=32 input=2000 layers=2 nodes=64 (PlatA, fp32)"


def _ops(uid: str, times: dict[str, float]) -> list[dict]:
    """One step's profile: (op, shapes) -> device seconds; FLOPs and bytes fixed per op."""
    counts = {
        ("aten::addmm", "[[32,100]]"): (2e7, 2e5),
        ("aten::addmm", "[[32,64]]"): (1e7, 1e5),
        ("aten::add_", "[[64]]"): (6e4, 3e5),
        ("aten::t", "[[64,100]]"): (0, 0),
        ("aten::relu", "[[64]]"): (6e4, 0),
    }
    out = []
    for (op, shapes), t in times.items():
        f, b = counts[(op, shapes)]
        out.append(dict(run_uid=uid, op=op, shapes=shapes, calls=2, device_time_s=t, flops=f,
                        bytes=b))  # fmt: skip
    return out


def _profiled() -> A.Data:
    rows = [
        synth.row("fc", CFG, 0.1, platform="PlatA"),
        synth.row("fc", CFG, 0.1, platform="PlatB"),
        synth.row("fc", {**CFG, "batch": 8}, 0.1, platform="PlatA"),
    ]
    a = {("aten::addmm", "[[32,100]]"): 6e-3, ("aten::addmm", "[[32,64]]"): 2e-3,
         ("aten::add_", "[[64]]"): 1e-3, ("aten::t", "[[64,100]]"): 1e-4,
         ("aten::relu", "[[64]]"): 5e-4}  # fmt: skip
    b = {("aten::addmm", "[[32,100]]"): 2e-3, ("aten::addmm", "[[32,64]]"): 4e-3,
         ("aten::add_", "[[64]]"): 4e-3, ("aten::t", "[[64,100]]"): 1e-4,
         ("aten::relu", "[[64]]"): 0.0}  # fmt: skip
    small = {("aten::addmm", "[[32,100]]"): 3e-3, ("aten::add_", "[[64]]"): 1e-3}
    prof = pd.DataFrame(_ops("0:1", a) + _ops("0:2", b) + _ops("0:3", small))
    return A.from_frames(rows, op_profile=prof)


def test_per_op_speedups_pair_ops_by_name_and_shapes_with_their_intensity():
    sp = B.op_speedups(_profiled(), "platform", "PlatA", "PlatB")
    assert list(sp.columns) == B.SPEEDUP_COLUMNS
    got = {
        (r.op, r.shapes): (r.speedup, None if pd.isna(r.intensity) else r.intensity, r.op_type)
        for r in sp.itertuples()
    }
    # relu took no time on PlatB: no ratio; the batch-8 run has no PlatB twin
    assert got == {
        ("aten::addmm", "[[32,100]]"): (pytest.approx(3.0), 100.0, "matmul"),
        ("aten::addmm", "[[32,64]]"): (pytest.approx(0.5), 100.0, "matmul"),
        ("aten::add_", "[[64]]"): (pytest.approx(0.25), 0.2, "elementwise"),
        ("aten::t", "[[64,100]]"): (pytest.approx(1.0), None, "layout & copy"),
    }
    row = sp[sp["op"] == "aten::add_"].iloc[0]
    assert (row["time_a_s"], row["time_b_s"]) == (1e-3, 4e-3) and row["family"] == "fc"
    # the other way round: the inverse ratios
    back = B.op_speedups(_profiled(), "platform", "PlatB", "PlatA")
    assert sorted(back["speedup"].round(6)) == [0.333333, 1.0, 2.0, 4.0]


def test_per_op_speedups_without_a_group_or_a_profile_are_empty_with_columns():
    data = _profiled()
    for by, a, b in (("platform", "PlatA", "PlatC"), ("platform", "PlatC", "PlatB"),
                     ("no_such_column", "PlatA", "PlatB")):  # fmt: skip
        out = B.op_speedups(data, by, a, b)
        assert out.empty and list(out.columns) == B.SPEEDUP_COLUMNS, (by, a, b)
    bare = A.from_frames([synth.row("fc", CFG, 0.1, platform="PlatA")])
    assert list(B.op_speedups(bare, "platform", "PlatA", "PlatB").columns) == B.SPEEDUP_COLUMNS


def test_a_profile_without_shapes_pairs_by_op_name():
    data = _profiled()
    data.op_profile = data.op_profile.drop(columns=["shapes"])
    data.op_profile = data.op_profile[data.op_profile["op"] != "aten::addmm"]
    sp = B.op_speedups(data, "platform", "PlatA", "PlatB")
    assert set(sp["shapes"]) == {""} and set(sp["op"]) == {"aten::add_", "aten::t"}


def test_shares_are_one_row_per_run_in_breakdown_order_with_zeros_for_missing_types():
    bd = B.breakdown(_profiled())
    wide = B.shares(bd)
    small = "fc batch=8 input=2000 layers=2 nodes=64 (PlatA, fp32)"
    assert list(wide.index) == [small, LABEL_A, LABEL_A.replace("PlatA", "PlatB")]
    assert list(wide.columns) == ["matmul", "layout & copy", "elementwise"]
    assert wide.loc[small, "layout & copy"] == 0.0  # no copy in that run: 0, not missing
    assert wide.loc[small, "matmul"] == pytest.approx(0.75)
    assert wide.sum(axis=1).round(9).eq(1).all()
    assert B.shares(bd.iloc[0:0]).empty


def test_a_runs_label_and_batch_come_from_its_config_key():
    r = {"family": "fc", "platform": "PlatA", "precision": "fp32"}
    key = '{"batch":32,"input":2000,"layers":2,"nodes":64,"output":1000}'
    assert B._label({**r, "config_key": key}) == LABEL_A  # batch first, then three more
    assert B._label({**r, "config_key": "not json"}) == "fc  (PlatA, fp32)"
    assert B._label({**r, "config_key": None}) == "fc  (PlatA, fp32)"
    assert B._label({**r, "config_key": '{"x":1}', "family": "f" * 100}) == "f" * 90
    assert B._batch(key) == 32.0
    assert B._batch('{"x":1}') == B._batch("not json") == B._batch("[1]") == 0.0
    assert B._batch(None) == 0.0


def _backend_rows() -> list[dict]:
    fc = [{**CFG, "nodes": n} for n in (64, 128, 256)]
    cnn = {"blocks": 1, "filters": 4, "image": 16, "batch": 4}
    rows = [synth.row("fc", c, 0.1, n_samples=9, seed=i) for i, c in enumerate(fc)]
    rows.append(synth.row("cnn", cnn, 0.1, n_samples=9, seed=5))
    rows.append(synth.row("fc", {**CFG, "nodes": 512}, 0.1, n_samples=9))  # torch only
    rows.append(synth.row("fc", fc[0], 0.1, n_samples=9, mode="compile"))
    xla = lambda lower, comp, ratio: dict(  # noqa: E731
        backend="jax", xla_lower_s=lower, xla_compile_s=comp, xla_flops_ratio=ratio,
        xla_flops_mismatch=abs(ratio - 1) > 0.1,
    )  # fmt: skip
    for i, c in enumerate(fc):
        jax = xla(0.1 * (i + 1), i + 1.0, 1 + 0.05 * i)
        rows.append(synth.row("fc", c, 0.2, n_samples=9, seed=10 + i, **jax))
    rows.append(synth.row("cnn", cnn, 0.4, n_samples=9, seed=20, **xla(1.0, 10.0, 0.5)))
    rows.append(synth.row("fc", {**CFG, "nodes": 1024}, 0.2, backend="jax", quality="noisy"))
    rows.append(synth.row("fc", {**CFG, "nodes": 2048}, None, status="failed", **xla(9, 99, 9)))
    for i, r in enumerate(rows):
        r["run_key"] = f"k{i}"
    return rows


def test_the_jax_study_pairs_configs_and_adds_xlas_compile_and_flop_columns():
    data = A.from_frames(_backend_rows())
    assert backends.torch_engines(data) == ["torch-eager", "torch-compile"]
    s = backends.study(data)
    assert s.base == "torch-eager"
    assert len(s.pairs) == 4 and sorted(s.pairs["speedup"].round(9)) == [2.0, 2.0, 2.0, 4.0]
    by_nodes = {
        int(k.split('"nodes":')[1].split(",")[0]): r
        for k, r in s.pairs.set_index("config_key").iterrows()
        if '"nodes"' in k
    }
    assert by_nodes[128]["xla_lower_s"] == pytest.approx(0.2)
    assert by_nodes[256]["xla_compile_s"] == 3.0 and by_nodes[256]["xla_flops_ratio"] == 1.1
    assert pd.api.types.is_float_dtype(s.pairs["xla_flops_ratio"])
    fam = s.families.set_index("family")
    assert list(fam.index) == ["cnn", "fc", "all"]
    assert fam.loc["fc", "median_xla_lower_s"] == pytest.approx(0.2)
    assert fam.loc["cnn", "median_xla_compile_s"] == 10.0
    assert fam.loc["all", "median_xla_lower_s"] == pytest.approx(0.25)  # of 0.1, 0.2, 0.3, 1.0
    assert fam.loc["all", "median_xla_flops_ratio"] == pytest.approx(1.025)
    assert "median_xla_flops_mismatch" not in fam
    assert s.notes == [
        "Noisy runs left out (torch-eager: 0, jax: 1); --include-noisy keeps them.",
        "Ran ok on one side only: torch-eager: 1",
    ]
    assert backends.failures(data)["status"].tolist() == ["failed"]
    assert backends.study(data, "torch-compile").pairs["speedup"].round(9).tolist() == [2.0]
    assert backends.study(data, "torch-reduce-overhead") is None


def test_a_jax_study_without_xla_columns_or_notes_keeps_them_empty():
    rows = [r for r in _backend_rows() if r.get("quality") != "noisy" and r["status"] == "ok"]
    rows = [r for r in rows if r["config"].get("nodes") != 512 and r.get("mode") != "compile"]
    for r in rows:
        for k in backends.XLA_COLUMNS:
            r.pop(k, None)
    s = backends.study(A.from_frames(rows))
    assert s.notes == [] and len(s.pairs) == 4
    assert s.pairs[list(backends.XLA_COLUMNS)].isna().all().all()
    assert s.families["median_xla_lower_s"].isna().all()


def test_a_grad_ratio_is_read_only_from_a_numeric_detail():
    assert backends._grad_ratio({"grad_flops_ratio": 0.61}) == 0.61
    assert backends._grad_ratio({"grad_flops_ratio": 2}) == 2.0
    assert math.isnan(backends._grad_ratio({"grad_flops_ratio": "0.6"}))
    assert math.isnan(backends._grad_ratio({"other": 1.0}))
    assert math.isnan(backends._grad_ratio(None))


def test_amdahls_law_and_a_fits_prediction():
    assert amdahl_speedup(4, 0.2) == pytest.approx(2.5)  # 1 / (0.2 + 0.8/4)
    assert amdahl_speedup(2, 0.0) == pytest.approx(2.0) and amdahl_speedup(8, 1.0) == 1.0
    assert list(amdahl_speedup([1, 2, 4], 0.5)) == pytest.approx([1.0, 4 / 3, 1.6])
    fit = AmdahlFit(0.1, 0.05, 0.2, 3, "curve_fit")
    assert fit.predict(10) == pytest.approx(1 / (0.1 + 0.09))
    assert AmdahlFit(None, None, None, 0, "none").predict(10) is None


def test_the_baselines_are_the_ok_single_process_runs():
    rows = [synth.row("fc", CFG, 0.1, procs=p) for p in (1, 2, 4)]
    rows.append(synth.row("fc", {**CFG, "nodes": 128}, None, status="oom", procs=1))
    rows.append(synth.row("fc", {**CFG, "nodes": 256}, 0.1))  # no procs: a single process
    for i, r in enumerate(rows):
        r["run_key"] = f"k{i}"
    base = baselines(A.from_frames(rows))
    assert sorted(base["procs"].tolist()) == [1, 1]
    assert sorted(base["run_key"]) == ["k0", "k4"]
    assert baselines(pd.DataFrame()).empty


def test_data_is_empty_only_without_runs_ops_and_ceilings():
    assert A.from_frames([]).empty()
    assert not A.from_frames([synth.row("fc", CFG, 0.1)]).empty()
    ops = pd.DataFrame([synth.op_row("mm-64", 10, 1.0)])
    assert not A.from_frames([], ops=ops).empty()
    assert not A.from_frames([], ceilings=pd.DataFrame([{"kind": "matmul"}])).empty()


def test_a_sensitivity_of_a_family_without_runs_says_there_are_none():
    data = A.from_frames([synth.row("fc", CFG, 0.1)])
    with pytest.raises(ConfigError) as e:
        sensitivity(data, "cnn", hyperparameters=["batch"])
    assert (e.value.field, e.value.value, e.value.allowed) == (
        "hyperparameter", "batch", "none: no cnn runs"
    )  # fmt: skip
    with pytest.raises(ConfigError) as e:
        sensitivity(data, "fc", hyperparameters=["depth"])
    assert e.value.allowed.startswith("one of ") and "nodes" in e.value.allowed


def test_from_frames_fills_what_old_or_hand_made_rows_lack():
    runs = A.from_frames([synth.row("fc", CFG, 0.1), synth.row("fc", CFG, 0.1, backend="jax")])
    assert runs.runs["backend"].tolist() == ["torch", "jax"]  # a row before JAX: torch
    assert runs.runs["engine"].tolist() == ["torch-eager", "jax"]
    keyless = [synth.row("fc", CFG, 0.1), synth.row("fc", {**CFG, "batch": 8}, 0.1)]
    for r in keyless:
        r.pop("run_key")
    assert A.from_frames(keyless).runs["run_key"].tolist() == ["1", "2"]  # the rows' ids
    only_torch = A.from_frames([synth.row("fc", CFG, 0.1)]).runs  # no backend column at all
    assert only_torch["backend"].tolist() == ["torch"]
    assert only_torch["engine"].tolist() == ["torch-eager"]


def test_jax_failures_keep_their_error():
    rows = _backend_rows()
    rows[-1]["error"] = "XlaRuntimeError: RESOURCE_EXHAUSTED"
    bad = backends.failures(A.from_frames(rows))
    assert list(bad.columns) == ["family", "config_key", "precision", "status", "error"]
    assert bad["error"].tolist() == ["XlaRuntimeError: RESOURCE_EXHAUSTED"]


def test_a_heat_map_cell_shows_its_most_severe_status():
    from paradnn.analysis.heatmap import _worst

    assert _worst(["timeout", "oom"]) == "oom"
    assert _worst(["failed", "oom", "predicted_oom"]) == "predicted_oom"
    assert _worst(["failed", "crashed"]) == "crashed"  # an unknown status ranks last
    assert _worst(["failed"]) == "failed"


def test_a_slowdown_threshold_is_a_percentage_from_0_to_100():
    from paradnn.analysis.speedup import check_pct

    assert check_pct(0) == 0.0 and check_pct("100") == 100.0 and check_pct(2.5) == 2.5
    for bad in (-0.1, 100.5, "x", None, float("nan")):
        with pytest.raises(ConfigError):
            check_pct(bad)


def test_model_points_carry_the_bytes_their_intensity_divides_by():
    from paradnn import families
    from paradnn.analysis.roofline import model_points
    from paradnn.families.lowering import lower_all

    pts = model_points(A.from_frames([synth.row("fc", CFG, 0.1)]))
    fam = families.get("fc")
    cfg = fam.config(CFG)
    nbytes = sum(op.elements() * 4 for op in lower_all(fam.shapes(cfg)))
    assert pts["bytes_per_step"].tolist() == [nbytes]
    assert pts["intensity"].iloc[0] == pytest.approx(fam.train_flops(cfg) / nbytes)


def test_the_batch_effect_gives_the_median_per_batch_and_its_ratio():
    from paradnn.analysis.summaries import batch_effect

    rows = [
        synth.row("fc", {**CFG, "nodes": n, "batch": b}, 0.1 * b / 32)
        for n in (64, 128) for b in (32, 64)
    ]  # fmt: skip
    t = batch_effect(A.from_frames(rows), "achieved_flops")
    assert t["batch"].tolist() == [32, 64] and t["configs"].tolist() == [2, 2]
    assert t["median"].tolist() == pytest.approx([0.1 * synth.PEAK, 0.2 * synth.PEAK])
    assert t["ratio"].tolist() == pytest.approx([1.0, 2.0])


def test_pooled_samples_keep_the_runs_order():
    # Several runs of one config pool their samples in stored order, so the seeded bootstrap
    # over them draws the same replicates on every call (an unstable sort would shuffle them).
    from paradnn.analysis.speedup import _per_config

    n = 60
    runs = pd.DataFrame(
        {
            "family": "fc", "cfg": [i % 3 for i in range(n)], "m": range(1, n + 1),
            "params": 1, "attempt": 1, "status": "ok", "samples": [[i + 1.0] for i in range(n)],
        }
    )  # fmt: skip
    out = _per_config(runs, ["family", "cfg"], "m")
    assert out["cfg"].tolist() == [0, 1, 2] and out["runs"].tolist() == [20, 20, 20]
    for cfg, pooled in zip(out["cfg"], out["samples"], strict=True):
        assert list(pooled) == [i + 1.0 for i in range(cfg, n, 3)]


def test_choose_keeps_one_attempt_of_each_run_key():
    from paradnn.analysis.frames import choose

    runs = pd.DataFrame(
        {"db_index": 0, "run_key": ["a", "a", "b", "a"], "attempt": [1, 3, 1, 2],
         "status": ["failed", "ok", "ok", "failed"]}
    )  # fmt: skip
    # a ran 3 times: only its ok attempt 3 (row 1) is kept; b once; the rows keep their order
    out = choose(runs)
    assert out.index.tolist() == [1, 2] and out["attempt"].tolist() == [3, 1]
    assert out["attempts"].tolist() == [3, 1] and out["good_attempts"].tolist() == [1, 1]


def test_mode_failures_of_no_runs_are_empty_with_their_columns():
    from paradnn.analysis import modes

    out = modes.failures(A.from_frames([]))
    assert out.empty and list(out.columns) == ["family", "config_key", "mode", "status", "error"]


def test_a_sensitivity_over_an_empty_frame_says_its_hyperparameter_had_no_runs():
    data = A.from_frames([synth.row("fc", CFG, 0.1)])
    empty = pd.DataFrame({"speedup": [], "batch": []})
    s = sensitivity(data, "fc", "speedup", hyperparameters=["batch"], frame=empty)
    assert s.n == 0 and s.excluded == {"batch": "constant (no runs) in this slice"}


def test_sensitivity_weights_standardize_with_the_population_std():
    # speedup = 3 x + 1 exactly: both standardized with ddof = 0, the weight is the correlation,
    # 1 (ddof = 1 for the metric alone would give sqrt(7/8) = 0.935)
    x = [1, 2, 3, 5, 6, 7, 9, 10]
    frame = pd.DataFrame({"speedup": [3 * v + 1 for v in x], "batch": x})
    data = A.from_frames([synth.row("fc", CFG, 0.1)])
    s = sensitivity(data, "fc", "speedup", ["batch"], log_axes=False, frame=frame)
    assert s.table["weight"].tolist() == [pytest.approx(1.0)]


def test_an_amdahl_fit_refuses_procs_and_speedups_of_different_lengths():
    from paradnn.analysis.scaling import amdahl_fit

    with pytest.raises(ValueError):
        amdahl_fit([2, 4], [1.8])


def _scaling_row(procs: int, step: float, eps: int) -> dict:
    return {
        "family": "fc", "config": {"layers": 1, "nodes": 32, "batch": 8}, "status": "ok",
        "precision": "fp32", "device": "cpu", "device_name": "cpu-x", "threads": 1,
        "procs": procs, "strategy": None if procs == 1 else "ddp",
        "scaling": None if procs == 1 else "weak", "examples_per_step": eps, "params": 97_000,
        "step_time_s": step, "step_time_ci_low_s": None, "step_time_ci_high_s": None,
        "examples_per_s": 8 * procs / step, "converged": True, "quality": "good",
    }  # fmt: skip


def test_a_baseline_without_examples_per_step_counts_as_one_example():
    from paradnn.analysis.scaling import efficiency_table

    # baseline examples 0 -> 1: growth g = 16 / 1 = 16; speedup 16 × 0.010 / 0.0125 = 12.8
    data = A.from_frames([_scaling_row(1, 0.010, 0), _scaling_row(2, 0.0125, 16)])
    assert efficiency_table(data)["speedup"].tolist() == [pytest.approx(12.8)]


def test_amdahl_fits_list_the_procs_they_were_fitted_over():
    from paradnn.analysis.scaling import fits

    t = pd.DataFrame(
        {"family": "fc", "config_key": "k", "precision": "fp32", "platform": "p",
         "strategy": "ddp", "scaling": "weak", "procs": [4, 2],
         "speedup": [2.5, 5 / 3], "speedup_low": None, "speedup_high": None}
    )  # fmt: skip
    out = fits(t)  # 2.5 = 1 / (0.2 + 0.8 / 4) and 5/3 = 1 / (0.2 + 0.8 / 2): f = 0.2
    assert out["procs"].tolist() == ["2,4"]
    assert out["serial_fraction"].tolist() == [pytest.approx(0.2)]


def test_comparing_by_procs_pairs_across_strategies_and_scaling():
    from paradnn.analysis.speedup import _key

    ga = pd.DataFrame({"procs": [2], "strategy": ["ddp"], "scaling": ["weak"], "status": "ok"})
    gb = pd.DataFrame({"procs": [4], "strategy": ["fsdp"], "scaling": ["strong"], "status": "ok"})
    assert _key("procs", ga, gb) == ["family", "config_key", "platform", "precision", "mode",
                                     "optimizer"]  # fmt: skip
    # any other comparison pairs a run only with its own N, strategy and scaling
    assert _key("precision", ga, gb)[-3:] == ["procs", "strategy", "scaling"]


def test_a_bad_slowdown_threshold_or_fail_on_names_its_option_and_value():
    from paradnn.analysis.speedup import check_pct, compare, slower_than

    with pytest.raises(ConfigError) as e:
        check_pct(150)
    assert (e.value.field, e.value.value) == ("fail-if-slower", 150.0)
    rows = [synth.row("fc", CFG, 0.1, platform=p) for p in ("PlatA", "PlatB")]
    c = compare(A.from_frames(rows), "platform", "PlatA", "PlatB")
    with pytest.raises(ConfigError) as e:
        slower_than(c, 5, on="family")
    assert (e.value.field, e.value.value, e.value.allowed) == (
        "fail-on", "family", "config or geomean"
    )  # fmt: skip


class _Family:
    """A stand-in family whose parameter count is the sum of its hyperparameters."""

    def __init__(self, space: dict):
        self.paper_space = space

    def config(self, cfg: dict) -> dict:
        return cfg

    def params(self, cfg: dict) -> int:
        return sum(cfg.values())


def test_a_space_parameter_range_is_listed_only_for_a_small_nonempty_space(monkeypatch):
    from paradnn import families
    from paradnn.analysis.summaries import SPACE_LIMIT, space_param_range

    def use(space):
        monkeypatch.setattr(families, "get", lambda name: _Family(space))
        return space_param_range("x")

    assert use({"a": [1, 2, 3], "b": [10, 20]}) == (6, 11, 23)  # 3 × 2 configs, 1+10 .. 3+20
    assert use({"a": range(SPACE_LIMIT)}) == (SPACE_LIMIT, 0, SPACE_LIMIT - 1)  # at the limit
    assert use({"a": range(SPACE_LIMIT + 1)}) is None  # too large to list
    assert use({}) is None  # empty


def test_a_heat_map_of_a_family_without_runs_names_the_family():
    data = A.from_frames([synth.row("fc", CFG, 0.1)])
    with pytest.raises(ConfigError) as e:
        A.heatmap(data, "cnn")
    assert (e.value.field, e.value.value) == ("family", "cnn")


def test_a_datasheet_roof_has_the_platforms_peak_and_bandwidth():
    from paradnn.analysis.roofline import Roof, roofs

    # V100-SXM2 datasheet: 15.7 TFLOP/s fp32, 900 GB/s; ridge 15.7e12 / 900e9 = 17.44 FLOP/byte
    got = roofs(A.from_frames([]), "Tesla V100-SXM2-16GB", "fp32")
    assert got == [Roof("datasheet", 15.7e12, 900e9, "v100-sxm2")]
    assert got[0].ridge == pytest.approx(15.7e12 / 900e9)


def test_an_amdahl_fit_without_a_covariance_has_no_interval(monkeypatch):
    import numpy as np
    from scipy import optimize

    from paradnn.analysis.scaling import amdahl_fit

    # curve_fit reports an infinite covariance when it cannot estimate one
    inf = np.array([[np.inf]])
    monkeypatch.setattr(optimize, "curve_fit", lambda *a, **k: (np.array([0.2]), inf))
    fit = amdahl_fit([2, 4], [5 / 3, 2.5])
    assert fit == AmdahlFit(0.2, None, None, 2, "curve_fit", "no covariance")


def test_a_config_failed_on_one_side_is_found_with_a_missing_key_value():
    from paradnn.analysis.speedup import _failed

    key = ["family", "config_key", "optimizer"]
    ga = pd.DataFrame({"family": "fc", "config_key": ["k", "j"], "optimizer": [None, "sgd"],
                       "status": "ok"})  # fmt: skip
    gb = ga.assign(status="oom")
    out = _failed(ga, gb, key, "A", "B")
    # both configs ok in A and out of memory in B, the one without an optimizer too
    assert out["config_key"].tolist() == ["k", "j"] and out["status"].tolist() == ["oom"] * 2
    assert out["ok_in"].tolist() == ["A", "A"] and out["failed_in"].tolist() == ["B", "B"]


def test_a_step_time_that_is_not_a_number_reads_as_missing():
    from paradnn.analysis.speedup import _per_config

    runs = pd.DataFrame(
        {"family": "fc", "cfg": [0], "m": [2.0], "params": 1, "attempt": 1, "status": "ok",
         "step_time_s": ["n/a"], "step_time_ci_low_s": [0.1], "step_time_ci_high_s": [0.3]}
    )  # fmt: skip
    out = _per_config(runs, ["family", "cfg"], "m")
    assert out["value"].tolist() == [2.0] and math.isnan(out["t"].iloc[0])
    assert (out["t_low"].iloc[0], out["t_high"].iloc[0]) == (0.1, 0.3)


def test_a_bad_slowdown_threshold_says_what_is_allowed():
    from paradnn.analysis.speedup import check_pct

    with pytest.raises(ConfigError) as e:
        check_pct(-1)
    assert e.value.allowed == "a percentage from 0 to 100"


def test_comparing_a_group_with_itself_is_refused_on_b():
    from paradnn.analysis.speedup import compare

    rows = [synth.row("fc", CFG, 0.1, platform=p) for p in ("PlatA", "PlatB")]
    with pytest.raises(ConfigError) as e:
        compare(A.from_frames(rows), "platform", "PlatA", "PlatA")
    assert (e.value.field, e.value.value, e.value.allowed) == (
        "b", "PlatA", "a platform other than a (PlatA)"
    )  # fmt: skip


def test_a_space_parameter_range_has_no_median(monkeypatch):
    from paradnn import families
    from paradnn.analysis.summaries import param_ranges

    monkeypatch.setattr(families, "names", lambda: ["x"])
    monkeypatch.setattr(families, "get", lambda name: _Family({"a": [1, 2, 3], "b": [10, 20]}))
    t = param_ranges(A.from_frames([]))
    # 3 × 2 configs, params 1+10 .. 3+20; a space lists no median
    assert t.to_dict("records") == [
        {"family": "x", "kind": "generated", "source": "paper space (analytic)", "configs": 6,
         "min": 11, "median": None, "max": 23}
    ]  # fmt: skip


def test_op_classes_read_inplace_ops_as_their_base_op():
    # 'aten::zero_' is the in-place zero: layout & copy like 'aten::zero', not 'other'
    assert B.op_type("aten::zero_") == B.op_type("aten::zero") == "layout & copy"
    assert B.op_type("aten::sum_") == "reduction"


def test_one_byte_moved_is_still_classified():
    # 1 byte and 100 FLOPs: intensity 100 FLOP/byte, above a ridge of 10
    assert B.bound_class(100, 1, 10.0) == "compute"
    assert B.bound_class(1, 1, 10.0) == "memory"
    assert B.bound_class(100, 0, 10.0) == "unclassified"


def test_shapes_are_written_as_compact_json():
    assert B._shape_text([[2, 3], [3]]) == "[[2,3],[3]]"
    assert B._shape_text("2x3") == "2x3" and B._shape_text(None) == ""
