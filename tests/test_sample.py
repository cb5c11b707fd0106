"""`api.table2_sample`: a seeded random sample of Table 2 sized to a time budget, torch-free.

The GPU acceptance run (benchmarks/gpu_check.py) adds one to benchmarks/data/gpu/ each loan;
these tests hold its promises without a GPU: the same seed draws the same runs, another seed
others; every run is a Table 2 point at a native precision; the estimates add up to at most the
budget; what the memory model or the step-time model rules out is skipped and counted."""

from __future__ import annotations

import pytest

from paradnn import families
from paradnn.api.sample import (
    PRECISIONS,
    SAMPLE_TIMING,
    SampleCosts,
    run_seconds,
    table2_sample,
)
from paradnn.errors import ConfigError

H100 = {"platform": "h100-sxm", "device": "cpu", "capacity_bytes": 80 * 2**30,
        "native": ["fp32", "tf32", "bf16", "fp16"]}  # fmt: skip


def _key(spec):
    return (spec.family, spec.precision, tuple(sorted(spec.config.items())))


def test_the_same_seed_draws_the_same_runs_and_another_seed_others():
    a = table2_sample(7, budget_s=60, **H100)
    b = table2_sample(7, budget_s=60, **H100)
    c = table2_sample(8, budget_s=60, **H100)
    assert [_key(s) for s in a.plan.specs] == [_key(s) for s in b.plan.specs]
    assert [_key(s) for s in a.plan.specs] != [_key(s) for s in c.plan.specs]
    assert a.plan.name == "table2-sample-7" and c.plan.name == "table2-sample-8"
    assert len({_key(s) for s in a.plan.specs}) == len(a.plan.specs)  # no run twice


def test_every_run_is_a_table2_point_at_a_native_precision():
    s = table2_sample(3, budget_s=120, **H100)
    assert s.plan.specs
    for spec in s.plan.specs:
        space = families.get(spec.family).paper_space
        assert set(space) <= set(spec.config)
        for axis, values in space.items():
            assert spec.config[axis] in values, (spec.family, axis, spec.config[axis])
        assert spec.precision in PRECISIONS and spec.optimizer == "rmsprop"
    assert {sp.family for sp in s.plan.specs} == {"fc", "cnn", "rnn"}
    cnn_blocks = {sp.config["block"] for sp in s.plan.specs if sp.family == "cnn"}
    assert cnn_blocks  # both block types come up over a few samples (next test's seeds)


def test_both_cnn_blocks_and_all_rnn_cells_come_up():
    blocks, cells = set(), set()
    for seed in range(4):
        for spec in table2_sample(seed, budget_s=120, **H100).plan.specs:
            if spec.family == "cnn":
                blocks.add(spec.config["block"])
            if spec.family == "rnn":
                cells.add(spec.config["cell"])
    assert blocks == {"residual", "bottleneck"} and cells == {"rnn", "lstm", "gru"}


def test_the_estimates_fit_the_budget_and_explain_themselves():
    s = table2_sample(11, budget_s=90, **H100)
    assert 0 < s.estimated_s <= 90
    assert sum(s.estimates_s) == pytest.approx(s.estimated_s)
    assert len(s.estimates_s) == len(s.plan.specs)
    d = s.as_dict()
    assert d["runs"] == len(s.plan.specs) and d["seed"] == 11 and d["platform"] == "h100-sxm"
    assert sum(d["by_family"].values()) == d["runs"] == sum(d["by_precision"].values())
    assert d["draws"] >= d["runs"] + sum(d["skipped"].values()) - 1  # the last draw may stop it
    # each estimate is the run's overhead, first step, warm-up and timed minimum
    costs = SampleCosts(overhead_s=0.5, first_step_s={"fc": 1.0})
    est = run_seconds(0.001, "fc", costs, SAMPLE_TIMING)
    warm = max(SAMPLE_TIMING.warmup_min_time_s, 10 * 0.001)
    timed = max(SAMPLE_TIMING.min_time_s, SAMPLE_TIMING.min_samples * 0.001)
    assert est == pytest.approx(0.5 + 1.0 + 0.001 + warm + timed)


def test_what_does_not_fit_or_takes_long_is_skipped_and_counted():
    small = table2_sample(5, budget_s=60, **{**H100, "capacity_bytes": 2 * 2**30})
    assert small.skipped["memory"] > 0
    slow = table2_sample(5, budget_s=60, **H100, max_step_s=0.002)
    roomy = table2_sample(5, budget_s=60, **H100, max_step_s=1.0)
    assert slow.skipped["slow"] > roomy.skipped["slow"]


def test_only_native_precisions_are_drawn():
    s = table2_sample(2, budget_s=60, **{**H100, "native": ["fp32", "bf16"]})
    assert {sp.precision for sp in s.plan.specs} <= {"fp32", "bf16"}
    with pytest.raises(ConfigError, match="precisions"):
        table2_sample(2, budget_s=60, **{**H100, "native": ["fp16"]})


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"budget_s": 0}, "budget_s"),
        ({"budget_s": float("nan")}, "budget_s"),
        ({"max_step_s": -1.0}, "max_step_s"),
        ({"families": ["transformer"]}, "families"),
        ({"precisions": ["fp8"]}, "precisions"),
        ({"weights": {"fc": 0.0, "cnn": 1.0, "rnn": 1.0}}, "weights.fc"),
    ],
)
def test_bad_input_names_the_field(kw, field):
    args = {"budget_s": 60, **H100, **kw}
    with pytest.raises(ConfigError) as e:
        table2_sample(1, **args)
    assert e.value.field == field
    with pytest.raises(ConfigError, match="seed"):
        table2_sample(-1, budget_s=60, **H100)
