"""Edges of the analysis helpers that every conclusion passes through, pinned by hand-made frames:
which runs a filter keeps, which are called noisy and why, and which hyperparameter a heat map
puts on its second axis. Each test fails for a mutant a sampled `make mutation` left alive."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import backends, findings, modes
from paradnn.analysis.frames import noisy_ok, reason_counts, select
from paradnn.analysis.heatmap import _second_axis
from paradnn.analysis.regression import sensitivity
from paradnn.analysis.scaling import amdahl_fit
from paradnn.analysis.speedup import compare
from paradnn.errors import ConfigError

import synth


def test_a_filter_on_none_or_nan_keeps_the_rows_without_a_value():
    runs = pd.DataFrame({"threads": [1.0, None, 4.0, math.nan], "mode": ["a", "b", "a", "b"]})
    assert select(runs, {"threads": None}).index.tolist() == [1, 3]
    assert select(runs, {"threads": math.nan}).index.tolist() == [1, 3]
    assert select(runs, {"threads": 4.0}).index.tolist() == [2]
    assert select(runs, {"threads": 1.0, "mode": "a"}).index.tolist() == [0]
    assert select(runs, {}).index.tolist() == [0, 1, 2, 3]


def test_without_a_noisy_column_no_run_is_noisy_and_the_mask_is_boolean():
    runs = pd.DataFrame({"status": ["ok", "ok"]}, index=[5, 7])
    mask = noisy_ok(runs)
    assert mask.dtype == bool and mask.tolist() == [False, False]
    assert mask.index.tolist() == [5, 7]
    assert runs[mask].empty  # usable as a mask, as comparisons use it


def test_noisy_reasons_are_counted_per_reason_most_common_first():
    runs = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "failed", "ok"],
            "noisy": [True, True, True, True, False],
            "quality_reasons": [["load"], ["load", "spread"], None, ["load"], ["spread"]],
        }
    )
    # the failed run and the good run do not count; a noisy run without reasons is "rated noisy"
    assert reason_counts(runs) == {"load": 2, "spread": 1, "rated noisy": 1}
    assert list(reason_counts(runs)) == ["load", "rated noisy", "spread"]  # ties by name


def test_the_heat_maps_second_axis_is_never_the_first_nor_a_paper_fixed_one():
    # FC's paper-fixed values are layers, input and output (seed 000 §4.1)
    assert _second_axis("fc", ["batch", "layers", "nodes"], "batch") == "nodes"
    assert _second_axis("fc", ["batch", "layers", "input", "width"], "batch") == "width"
    assert _second_axis("fc", ["layers", "batch", "width"], "batch") == "width"
    # nothing else left: the last one that is not the x axis
    assert _second_axis("fc", ["batch", "layers"], "batch") == "layers"


# --- conclusions across two groups (a second sampled run of `make mutation`) -----------------

FC8 = {"layers": [2, 4], "nodes": [64, 128], "batch": [32, 64], "input": [1000], "output": [200]}


def _two_platforms(util_a: float, util_b: float):
    return A.from_frames(
        synth.rows("fc", FC8, lambda c: util_a, platform="PlatA", n_samples=5)
        + synth.rows("fc", FC8, lambda c: util_b, platform="PlatB", n_samples=5)
    )


@pytest.mark.parametrize(("ua", "ub", "faster"), [(0.4, 0.1, "PlatA"), (0.1, 0.4, "PlatB")])
def test_platform_pairs_are_oriented_faster_over_slower_either_way(ua, ub, faster):
    p, fast, slow, s = findings._platform_pairs(_two_platforms(ua, ub), "fc", "x", "c", "s", "r")
    assert s["geomean"] == pytest.approx(4.0) and s["geomean_ci_low"] > 1
    assert (fast, slow) == (faster, ({"PlatA", "PlatB"} - {faster}).pop())
    assert len(p) == 8 and p["speedup"].tolist() == pytest.approx([4.0] * 8)


def test_a_config_that_failed_on_one_platform_names_both_sides():
    rows = synth.rows("fc", FC8, lambda c: 0.2, platform="PlatA", n_samples=5)
    rows += synth.rows(
        "fc", FC8, lambda c: None if c["nodes"] == 128 and c["batch"] == 64 else 0.2,
        platform="PlatB", n_samples=5,
    )  # fmt: skip
    c = compare(A.from_frames(rows), "platform", "PlatA", "PlatB")
    assert len(c.failed) == 2  # layers 2 and 4
    assert set(c.failed["ok_in"]) == {"PlatA"} and set(c.failed["failed_in"]) == {"PlatB"}
    assert set(c.failed["status"]) == {"oom"}
    back = compare(A.from_frames(rows), "platform", "PlatB", "PlatA")
    assert set(back.failed["ok_in"]) == {"PlatA"} and set(back.failed["failed_in"]) == {"PlatB"}


def test_a_slowdown_still_enters_the_amdahl_fit():
    # N = 2 at 0.8×: Karp–Flatt e = (1/0.8 − 1/2)/(1 − 1/2) = 1.5, clamped to a serial fraction 1
    fit = amdahl_fit([1, 2], [1.0, 0.8])
    assert fit.points == 1 and fit.serial_fraction == 1.0
    assert amdahl_fit([1, 2], [1.0, 0.0]).points == 0  # a zero speedup is no measurement


def test_a_mode_study_lists_the_compiled_runs_that_failed():
    rows = synth.rows("fc", FC8, lambda c: 0.2, mode="eager", n_samples=5)
    rows += synth.rows(
        "fc", FC8, lambda c: None if c["nodes"] == 128 else 0.25, mode="compile", n_samples=5
    )
    s = modes.study(A.from_frames(rows), "compile")
    assert len(s.failures) == 4 and set(s.failures["status"]) == {"oom"}
    assert set(s.failures["mode"]) == {"compile"}


def test_xla_flop_agreement_per_family_and_overall():
    rows = [
        synth.row("fc", {"layers": 2, "nodes": n, "batch": 32}, 0.2, backend="jax",
                  xla_flops_ratio=r)
        for n, r in ((64, 1.05), (128, 1.2), (256, 0.85))
    ]  # fmt: skip
    t = backends.flop_agreement(A.from_frames(rows))
    assert list(t.columns) == [
        *("family", "runs", "median_ratio", "min_ratio", "max_ratio", "median_grad_ratio"),
        "flagged",
    ]
    fc = t[t["family"] == "fc"].iloc[0]
    assert (fc["runs"], fc["flagged"]) == (3, 2)  # 1.2 and 0.85 are off by more than 10 %
    assert (fc["median_ratio"], fc["min_ratio"], fc["max_ratio"]) == pytest.approx(
        (1.05, 0.85, 1.2)
    )
    assert t["family"].tolist() == ["fc", "all"]


def test_an_empty_sensitivity_keeps_its_columns_and_what_it_was_asked():
    s = sensitivity(A.from_frames([synth.row("fc", {"batch": 32}, 0.2)]), "fc", where={"batch": 32})
    assert s.reason and s.where == {"batch": 32}
    assert list(s.table.columns) == [
        "hyperparameter", "weight", "ci_low", "ci_high", "p_value", "transform"
    ]  # fmt: skip


def test_data_from_frames_says_where_it_came_from():
    data = A.from_frames([synth.row("fc", {"batch": 32}, 0.2), synth.row("fc", {"batch": 64}, 0.2)])
    assert data.sources == [{"db": "<memory>", "runs": 2}]


# --- a third sample (seed 4), after the tests above ---------------------------------------


def test_a_config_key_that_clashes_with_a_run_column_gets_its_own_name():
    from paradnn.analysis.frames import _canonical, _flatten_configs

    df = pd.DataFrame({"family": ["fc"], "config": [{"batch": 8, "threads": 2}], "threads": [1]})
    out, keys = _flatten_configs(df)
    assert keys == {"fc": ["batch", "cfg_threads"]}  # the names the frame uses
    assert out.loc[0, "cfg_threads"] == 2 and out.loc[0, "threads"] == 1
    assert out.loc[0, "batch"] == 8
    # the canonical text of a config: compact and sorted, the same in every database
    assert _canonical({"b": 1, "a": [2, 3]}) == '{"a":[2,3],"b":1}'
    assert _canonical('{"b": 1, "a": 2}') == '{"a":2,"b":1}'


def test_a_noisy_rating_without_reasons_says_so_whatever_the_index():
    from paradnn.analysis.frames import add_quality

    runs = pd.DataFrame(
        {"status": ["ok", "ok"], "quality": ["noisy", "good"], "step_time_s": [1.0, 1.0]},
        index=[5, 7],
    )
    add_quality(runs)
    assert runs.loc[5, "quality_reasons"] == ["rated noisy"] and runs.loc[5, "noisy"]
    assert runs.loc[7, "quality_reasons"] == [] and not runs.loc[7, "noisy"]


def test_a_heat_maps_axes_are_named_after_its_hyperparameters():
    space = {"layers": [2], "nodes": [64, 128], "batch": [32, 64], "input": [1000], "output": [200]}
    hm = A.heatmap(A.from_frames(synth.rows("fc", space, lambda c: 0.2)), "fc")
    assert (hm.x, hm.y) == ("batch", "nodes")
    assert hm.values.columns.name == "batch" and hm.values.index.name == "nodes"
    assert hm.values.columns.tolist() == [32, 64] and hm.values.index.tolist() == [64, 128]


def test_too_few_matched_configs_for_a_platform_finding_says_how_many():
    space = {
        "layers": [2],
        "nodes": [64, 128, 256],
        "batch": [32],
        "input": [1000],
        "output": [200],
    }
    rows = synth.rows("fc", space, lambda c: 0.2, platform="PlatA", n_samples=5)
    rows += synth.rows("fc", space, lambda c: 0.3, platform="PlatB", n_samples=5)
    got = findings._platform_pairs(A.from_frames(rows), "fc", "x", "c", "s", "r")
    assert got.verdict == findings.NO_DATA and got.evidence == "3 matched fc configs (need 8)"


def test_a_one_sided_speedup_interval_gives_the_fit_no_interval():
    # a low end without a high end (or the reverse) bounds nothing: no interval, said so
    for low, high in (([1.4], None), (None, [1.6]), ([1.4], [None]), ([None], [1.6])):
        fit = amdahl_fit([2], [1.5], low=low, high=high)
        assert fit.points == 1 and fit.serial_fraction == pytest.approx(1 / 3)
        assert (fit.ci_low, fit.ci_high) == (None, None), (low, high)
    both = amdahl_fit([2], [1.5], low=[1.4], high=[1.6])
    assert both.ci_low == pytest.approx(0.25) and both.ci_high == pytest.approx(3 / 7)


def test_a_heat_maps_unknown_fixed_hyperparameter_names_the_allowed_ones():
    data = A.from_frames(synth.rows("fc", FC8, lambda c: 0.2))
    with pytest.raises(ConfigError) as e:
        A.heatmap(data, "fc", "batch", "nodes", fixed={"depth": 3})
    assert e.value.field == "fixed" and e.value.value == "depth"
    assert e.value.allowed == "one of layers, input, output"


# --- a third sampled run (issue 30 item 5): what each survivor would have got wrong ------------


def test_a_row_without_a_data_source_trained_on_device_data():
    cfg = {"layers": 2, "nodes": 64, "batch": 8}
    rows = [
        synth.row("fc", cfg, 0.1, data_source="pipeline"),
        synth.row("fc", {**cfg, "batch": 16}, 0.1, data_source=None),
    ]
    assert A.from_frames(rows).runs["data_source"].tolist() == ["pipeline", "device"]


def test_the_sources_name_the_python_and_cuda_versions_each_database_ran(tmp_path):
    from paradnn.records import RunRecord
    from paradnn.store import open_store

    db = tmp_path / "v.db"
    with open_store(db) as store:
        for i, (py, cu) in enumerate((("3.11.9", "12.4"), ("3.12.1", None))):
            r = synth.row("fc", {"layers": 2, "nodes": 64, "batch": 8 * (i + 1)}, 0.1)
            env = {"torch": r.pop("torch_version"), "hostname": r.pop("hostname"), "python": py}
            store.insert(RunRecord.flat(**r, env=env | ({"cuda": cu} if cu else {})))
    src = A.load([db]).sources[0]
    assert src["python"] == ["3.11.9", "3.12.1"] and src["cuda"] == ["12.4"]
    assert src["torch"] == ["2.13.0"] and src["runs"] == 2


def test_a_heat_map_over_nodes_takes_its_second_axis_elsewhere():
    assert _second_axis("fc", ["batch", "layers", "nodes"], "nodes") == "batch"
    data = A.from_frames(
        synth.rows("fc", {"layers": [2], "nodes": [64, 128], "batch": [8, 16]}, lambda c: 0.1)
    )
    hm = A.heatmap(data, "fc", x="nodes", metric="achieved_flops")
    assert (hm.x, hm.y) == ("nodes", "batch")


def test_an_infeed_map_needs_a_batch_axis():
    from paradnn.analysis import infeed

    runs = pd.DataFrame({"family": ["cnn"] * 2, "filters": [4, 8], "infeed_share": [0.1, 0.2]})
    assert infeed.share_map(runs, "cnn") is None


def test_mode_failures_are_a_table_of_exactly_the_failure_columns():
    rows = [
        synth.row("fc", {"layers": 2, "nodes": 64, "batch": 8}, 0.1, mode="eager"),
        synth.row(
            "fc", {"layers": 2, "nodes": 64, "batch": 8}, None, mode="compile", status="crashed",
            error="recompiled while timed", run_key="k-compile",
        ),
    ]  # fmt: skip
    bad = modes.failures(A.from_frames(rows))
    assert list(bad.columns) == ["family", "config_key", "mode", "status", "error"]
    assert bad["status"].tolist() == ["crashed"] and bad.index.tolist() == [0]


def test_the_fusion_finding_states_its_interval():
    space = {"layers": [2], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8, 16]}
    rows = []
    for mode, speed, seed0 in (("eager", 1.0, 0), ("compile", 2.0, 50)):
        for i, c in enumerate(synth.grid(space)):
            r = synth.row("fc", c, 0.1 * speed, n_samples=20, spread=0.02, seed=seed0 + i)
            r.update(run_key=f"{r['run_key']}-{mode}", mode=mode)
            rows.append(r)
    f = modes.fusion_finding(A.from_frames(rows))
    assert f.verdict == findings.HOLDS
    lo, hi = f.ci_low, f.ci_high
    assert f"compile over eager: 2.00× [{lo:.2f}, {hi:.2f}] over 4 configs" in f.evidence


def test_an_axis_with_a_zero_is_not_geometric():
    from paradnn.analysis.regression import geometric

    assert not geometric([0, 1, 8, 64])  # and no division by zero
    assert geometric([1, 8]) and not geometric([1, 7.9]) and not geometric([])


def test_model_points_carry_each_runs_parameter_count():
    cfg = {"layers": 2, "nodes": 64, "batch": 8}
    r = synth.row("fc", cfg, 0.1)
    pts = A.model_points(A.from_frames([r]))
    assert pts["params"].tolist() == [r["params"]] and r["params"] > 0


def test_compare_errors_list_the_choices_and_say_what_a_family_needs():
    data = _two_platforms(0.2, 0.3)
    with pytest.raises(ConfigError) as e:
        compare(data, "colour", "a", "b")
    assert "one of platform, precision, optimizer, mode, " in str(e.value)
    with pytest.raises(ConfigError) as e:
        compare(data, "platform", "PlatA", "PlatB", family="cnn")
    assert str(e.value).endswith("a family with runs in the database")


def test_a_comparison_names_its_metric_and_slowdowns_their_threshold():
    from paradnn.analysis.speedup import slower_than

    c = compare(_two_platforms(0.3, 0.2), "platform", "PlatA", "PlatB", metric="achieved_flops")
    assert c.metric == "achieved_flops"
    slow = slower_than(c, 5)
    assert len(slow) == 8 and slow["threshold"].tolist() == [0.95] * 8


def test_table8_labels_generated_configs_by_their_hyperparameters():
    from paradnn.analysis.summaries import table8

    rows = [synth.row("fc", {"layers": 2, "nodes": 64, "batch": 8}, 0.1, platform=p)
            for p in ("PlatA", "PlatB")]  # fmt: skip
    t = table8(A.from_frames(rows))
    model = t.index.get_level_values("model")[0]
    assert model.startswith("fc ") and " nodes=64 " in model and "XX" not in model
    assert "layers=2 " in model and model.count("=") == model.count(" ")


def test_families_are_told_apart_as_generated_or_real():
    from paradnn.analysis.summaries import family_kind

    assert family_kind("fc") == "generated" and family_kind("resnet50") == "real"
    assert family_kind("no-such-family") == "?"


def test_the_batch_effect_skips_a_metric_stored_as_text():
    from paradnn.analysis.summaries import batch_effect

    # SQLite keeps whatever a REAL column is given: a value written as text is not a number
    rows = [
        synth.row("fc", {"layers": 2, "nodes": n, "batch": b}, 0.1 * b / 8)
        for n in (64, 128) for b in (8, 16)
    ]  # fmt: skip
    rows[0]["achieved_flops"] = "fast"
    t = batch_effect(A.from_frames(rows), "achieved_flops")
    assert t["ratio"].tolist() == pytest.approx([1.0, 2.0])
    assert t["median"].tolist() == pytest.approx([1e11, 2e11])  # the text one is left out


def test_an_embedding_width_is_the_second_axis_of_a_family_of_ones_own():
    # a plugin family (no paper values) with an embedding: embed, as for the paper's RNNs,
    # before the first other hyperparameter
    assert _second_axis("my-lm", ["hidden", "embed", "batch"], "batch") == "embed"
    assert _second_axis("my-lm", ["hidden", "embed", "batch"], "embed") == "hidden"


def test_the_default_metric_prefers_the_measured_ceiling_then_falls_back_to_examples():
    from paradnn.analysis.frames import default_metric

    full = pd.DataFrame({"utilization_measured": [0.4], "utilization_datasheet": [0.3],
                         "achieved_flops": [1e9], "examples_per_s": [10.0]})  # fmt: skip
    assert default_metric(full) == "utilization_measured"
    assert default_metric(full.assign(utilization_measured=None)) == "utilization_datasheet"
    bare = pd.DataFrame({"achieved_flops": [None], "examples_per_s": [10.0]})
    assert default_metric(bare) == "examples_per_s"


def test_a_heat_maps_values_are_numbers_with_nan_where_a_run_failed():
    rows = synth.rows(
        "fc", {"layers": [2], "nodes": [64, 128], "batch": [8, 16]},
        lambda c: None if c["nodes"] == 128 and c["batch"] == 16 else 0.1,
    )  # fmt: skip
    hm = A.heatmap(A.from_frames(rows), "fc", x="batch", y="nodes", metric="achieved_flops")
    assert (hm.values.dtypes == "float64").all()
    assert math.isnan(hm.values.at[128, 16]) and hm.values.at[64, 8] == pytest.approx(1e11)


def test_xla_flop_agreement_states_the_forward_backward_ratio():
    rows = [
        synth.row("fc", {"layers": 2, "nodes": n, "batch": 32}, 0.2, backend="jax",
                  xla_flops_ratio=1.0, xla_detail={"grad_flops_ratio": g})
        for n, g in ((64, 0.9), (128, 1.1), (256, 1.3))
    ]  # fmt: skip
    t = backends.flop_agreement(A.from_frames(rows)).set_index("family")
    assert t.loc["fc", "median_grad_ratio"] == pytest.approx(1.1)
    assert t.loc["all", "median_grad_ratio"] == pytest.approx(1.1)


def test_the_batch_effect_of_runs_without_a_batch_size_is_empty():
    r = synth.row("fc", {"layers": 2, "nodes": 64, "batch": 8}, 0.1)
    r["config"] = {k: v for k, v in r["config"].items() if k != "batch"}  # a family without one
    from paradnn.analysis.summaries import batch_effect

    t = batch_effect(A.from_frames([r]), "achieved_flops")
    assert t.empty and list(t.columns)[:4] == ["family", "platform", "precision", "batch"]


def test_table8_lists_real_models_by_name():
    from paradnn.analysis.summaries import table8

    cfg = {"layers": 2, "nodes": 64, "batch": 8}
    rows = [synth.row("fc", cfg, 0.1, platform=p) for p in ("PlatA", "PlatB")]
    real = [dict(r, family="resnet50", run_key=r["run_key"] + "r") for r in rows]
    t = table8(A.from_frames(rows + real))
    assert t.index.get_level_values("model").unique().tolist() == ["resnet50"]
