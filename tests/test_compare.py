"""`compare` as a regression tool: a bootstrap CI and a call per config and for the geomean,
`--fail-if-slower`, `--by attempt` and `--by db`, and noisy runs left out (issue 14)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn import report
from paradnn.analysis import frames
from paradnn.analysis import speedup as S
from paradnn.errors import ConfigError

import synth
from conftest import run_cli

SPACE = {"layers": [4, 8], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8, 16]}
N = 20  # raw samples per run
SPREAD = 0.02  # their relative standard deviation


def _side(name: str, slow=lambda c: 1.0, seed0: int = 0, **kw) -> list[dict]:
    """One run per config of SPACE; `slow(cfg)` multiplies the step time (1.3: 30% slower)."""
    return [
        synth.row(
            "fc", c, 0.1 / slow(c), n_samples=N, spread=SPREAD, seed=seed0 + i, **{**kw, **name}
        )
        for i, c in enumerate(synth.grid(SPACE))
    ]


def _layers8(c):
    return 1.3 if c["layers"] == 8 and c["nodes"] == 128 and c["batch"] == 16 else 1.0


def _same_and_slower(slow=lambda c: 1.0):
    a = _side({"platform": "A"})
    b = _side({"platform": "B"}, slow, seed0=100)  # independent samples, same distribution
    return A.from_frames(a + b)


def test_identical_distributions_are_no_detectable_change():
    c = A.compare(_same_and_slower(), "platform", "A", "B")
    assert len(c.pairs) == 8
    assert set(c.pairs["call"]) == {S.NO_CHANGE}
    assert (c.pairs["ci_low"] < 1).all() and (c.pairs["ci_high"] > 1).all()
    assert set(c.pairs["ci_method"]) == {"bootstrap"}
    assert c.overall()["geomean_call"] == S.NO_CHANGE
    assert c.overall()["no_change"] == 8
    assert len(S.slower_than(c, 5)) == 0 and len(S.slower_than(c, 5, on="geomean")) == 0


def test_a_config_30_percent_slower_is_slower_and_fails_the_gate():
    c = A.compare(_same_and_slower(_layers8), "platform", "A", "B")
    slow = c.pairs[c.pairs["call"] == S.SLOWER]
    assert len(slow) == 1 and json.loads(slow.iloc[0]["config_key"])["layers"] == 8
    assert slow.iloc[0]["speedup"] == pytest.approx(1 / 1.3)
    assert slow.iloc[0]["ci_high"] < 0.95
    assert set(c.pairs.drop(slow.index)["call"]) == {S.NO_CHANGE}
    failed = S.slower_than(c, 5)
    assert list(failed.index) == list(slow.index) and set(failed["basis"]) == {"interval"}
    assert len(S.slower_than(c, 40)) == 0  # 0.77× is not below 0.6×
    assert c.overall()["slower"] == 1 and c.overall()["no_change"] == 7


def test_every_ci_contains_its_point_estimate_and_the_geomean_too():
    c = A.compare(_same_and_slower(_layers8), "platform", "A", "B")
    assert (
        (c.pairs["ci_low"] <= c.pairs["speedup"]) & (c.pairs["speedup"] <= c.pairs["ci_high"])
    ).all()
    for r in c.summary.to_dict("records"):
        assert r["geomean_ci_low"] <= r["geomean"] <= r["geomean_ci_high"]
    g = c.overall()
    assert g["geomean"] == pytest.approx((1 / 1.3) ** (1 / 8))
    # The geomean's interval covers the spread between configs: wider than one config's.
    one = c.pairs[c.pairs["call"] == S.NO_CHANGE].iloc[0]
    assert g["geomean_ci_high"] - g["geomean_ci_low"] > one["ci_high"] - one["ci_low"]


def test_the_bootstrap_is_reproducible():
    data = _same_and_slower(_layers8)
    c1, c2 = (A.compare(data, "platform", "A", "B") for _ in range(2))
    pd.testing.assert_frame_equal(c1.pairs, c2.pairs)
    pd.testing.assert_frame_equal(c1.summary, c2.summary)


def test_constant_samples_give_a_point_interval_by_hand():
    """Every sample of A is 1 ms and of B 2 ms: each resample's median is the same, so the
    interval is the point: examples/s speedup 0.5, step-time speedup (a/b) also 0.5."""
    cfg = {"layers": 4, "nodes": 64, "input": 20, "output": 10, "batch": 8}
    rows = []
    for plat, t in (("A", 1e-3), ("B", 2e-3)):
        r = synth.row("fc", cfg, 0.1, platform=plat)
        r.update(step_time_s=t, examples_per_s=8 / t, samples=[t] * 12)
        rows.append(r)
    for metric in ("examples_per_s", "step_time_s"):
        c = A.compare(A.from_frames(rows), "platform", "A", "B", metric=metric)
        p = c.pairs.iloc[0]
        assert (p["speedup"], p["ci_low"], p["ci_high"]) == pytest.approx((0.5, 0.5, 0.5))
        assert p["call"] == S.SLOWER


@pytest.mark.parametrize("metric", ["examples_per_s", "achieved_flops", "step_time_s"])
def test_speedup_direction_is_right_for_every_metric(metric):
    """B takes 1.3× as long per step: a speedup of 1/1.3 whichever metric is compared (for
    step time, lower is better, so the speedup is a/b)."""
    c = A.compare(_same_and_slower(lambda c: 1.3), "platform", "A", "B", metric=metric)
    assert c.pairs["speedup"].to_numpy() == pytest.approx(np.full(8, 1 / 1.3))
    assert set(c.pairs["call"]) == {S.SLOWER}
    assert c.overall()["geomean_call"] == S.SLOWER


def test_stored_cis_are_the_fallback_without_samples():
    """A: median 1.0 s, CI [0.9, 1.1]; B: 2.0 s, [1.8, 2.2]. By hand, the step-time speedup a/b
    = 0.5 with the interval [0.9/2.2, 1.1/1.8] = [0.409, 0.611]."""
    cfg = {"layers": 4, "nodes": 64, "input": 20, "output": 10, "batch": 8}
    rows = []
    for plat, t in (("A", 1.0), ("B", 2.0)):
        r = synth.row("fc", cfg, 0.1, platform=plat)
        r.update(step_time_s=t, step_time_ci_low_s=0.9 * t, step_time_ci_high_s=1.1 * t)
        rows.append(r)
    c = A.compare(A.from_frames(rows), "platform", "A", "B", metric="step_time_s")
    p = c.pairs.iloc[0]
    assert p["ci_method"] == "stored CIs"
    assert (p["ci_low"], p["ci_high"]) == pytest.approx((0.9 / 2.2, 1.1 / 1.8))
    # Without samples or stored CIs: no interval; the gate then judges the point estimate.
    for r in rows:
        r.update(step_time_ci_low_s=None, step_time_ci_high_s=None)
    c = A.compare(A.from_frames(rows), "platform", "A", "B", metric="step_time_s")
    assert c.pairs.iloc[0]["call"] == S.NO_INTERVAL and c.overall()["no_interval"] == 1
    assert list(S.slower_than(c, 5)["basis"]) == ["point estimate (no interval)"]


def test_quality_columns_from_ratings_and_from_older_rows():
    cfg = {"layers": 4, "nodes": 64, "input": 20, "output": 10, "batch": 8}
    rows = [
        synth.row("fc", cfg, 0.1, quality="noisy", quality_reasons='["CI ±7.1% > 2% target"]'),
        synth.row("fc", cfg, 0.1, quality="good", converged=False),  # the rating wins
        synth.row("fc", cfg, 0.1, converged=False),  # before v5: unconverged is noisy
        synth.row("fc", cfg, 0.1, converged=True, emulated=1),
        synth.row("fc", cfg, None, status="oom", converged=False),  # never timed
        synth.row("fc", cfg, 0.1, quality="noisy"),  # a rating without reasons
    ]
    runs = A.from_frames(rows).runs
    assert list(runs["noisy"]) == [True, False, True, False, False, True]
    assert list(runs["emulated"]) == [False, False, False, True, False, False]
    assert runs["quality_reasons"][0] == ["CI ±7.1% > 2% target"]
    assert runs["quality_reasons"][2] == [frames.OLD_UNCONVERGED]
    assert runs["quality_reasons"][5] == ["rated noisy"]
    assert runs["quality_reasons"][1] == [] and runs["quality_reasons"][4] == []


def test_noisy_runs_are_left_out_counted_and_kept_on_request():
    a = _side({"platform": "A"})
    b = _side({"platform": "B"}, seed0=100)
    a[0].update(quality="noisy", quality_reasons=["other processes used 35% of the CPU"])
    b[1]["converged"] = False
    data = A.from_frames(a + b)
    c = A.compare(data, "platform", "A", "B")
    assert len(c.pairs) == 6 and c.noisy_left_out == {"A": 1, "B": 1}
    assert c.noisy_reasons == {
        "other processes used 35% of the CPU": 1,
        frames.OLD_UNCONVERGED: 1,
    }
    assert c.unmatched == {"A": 1, "B": 1} and not len(c.failed)
    kept = A.compare(data, "platform", "A", "B", include_noisy=True)
    assert len(kept.pairs) == 8 and kept.noisy_left_out == {"A": 0, "B": 0}


def test_emulated_runs_are_marked():
    a = _side({"platform": "A"})
    b = _side({"platform": "B"}, seed0=100)
    b[2]["emulated"] = True
    c = A.compare(A.from_frames(a + b), "platform", "A", "B")
    assert c.pairs["emulated_b"].sum() == 1 and c.overall()["emulated"] == 1


def _db(tmp_path, name, rows):
    return synth.write_db(tmp_path / name, rows)


def test_cli_gate_exit_codes(tmp_path, capsys):
    same = _db(tmp_path, "same.db", _side({"platform": "A"}) + _side({"platform": "B"}, seed0=100))
    args = ("compare", "--db", same, "--by", "platform", "--a", "A", "--b", "B")
    code, out, err = run_cli(capsys, *args, "--fail-if-slower", "5")
    assert code == 0, err
    assert "no detectable change" in out and "no config is slower than 0.95×" in err
    slow = _db(
        tmp_path, "slow.db", _side({"platform": "A"}) + _side({"platform": "B"}, _layers8, 100)
    )
    args = ("compare", "--db", slow, "--by", "platform", "--a", "A", "--b", "B")
    code, out, err = run_cli(capsys, *args, "--fail-if-slower", "5")
    assert code == 1
    assert "1 config is slower than 0.95×" in err and "layers=8 nodes=128" in err
    assert "batch=16" in err
    code, _out, err = run_cli(capsys, *args, "--fail-if-slower", "5", "--fail-on", "geomean")
    assert code == 0, err  # one config in eight: the geomean's CI still reaches 0.95
    code, out, err = run_cli(capsys, *args, "--fail-if-slower", "5", "--format", "json")
    assert code == 1 and len(json.loads(out)["slower_than_threshold"]) == 1
    all_slow = _db(
        tmp_path, "all.db", _side({"platform": "A"}) + _side({"platform": "B"}, lambda c: 1.3, 100)
    )
    args = ("compare", "--db", all_slow, "--by", "platform", "--a", "A", "--b", "B")
    code, _out, err = run_cli(capsys, *args, "--fail-if-slower", "5", "--fail-on", "geomean")
    assert code == 1 and "the geomean is slower than 0.95×" in err


@pytest.mark.parametrize("pct", ["-1", "nan", "101", "lots"])
def test_cli_bad_threshold_is_one_line_exit_2(tmp_path, capsys, pct):
    db = _db(tmp_path, "x.db", _side({"platform": "A"}) + _side({"platform": "B"}, seed0=100))
    code, _out, err = run_cli(
        capsys, "compare", "--db", db, "--by", "platform", "--a", "A", "--b", "B",
        "--fail-if-slower", pct,
    )  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err


def test_by_db_keeps_precision_in_the_per_config_table(tmp_path, capsys):
    """The issue's report: the same configs in two databases, fp32 and bf16 each; with --by db
    the precision must stay a column, or two rows look identical."""
    rows = _side({"precision": "fp32"}) + _side({"precision": "bf16"}, seed0=50)
    one = _db(tmp_path, "one.db", rows)
    rows2 = _side({"precision": "fp32"}, seed0=200) + _side({"precision": "bf16"}, seed0=250)
    two = _db(tmp_path, "two.db", rows2)
    c = A.compare(A.load([one, two]), "db", one, two)
    assert len(c.pairs) == 16 and "precision" in c.key
    varying, same = c.shown_identity()
    assert "precision" in varying and same["platform"] == "SynthCPU"
    assert set(c.pairs["call"]) == {S.NO_CHANGE}
    code, out, err = run_cli(
        capsys, "compare", "--db", one, "--db", two, "--by", "db", "--a", one, "--b", two,
        "--limit", "20", "--fail-if-slower", "5",
    )  # fmt: skip
    assert code == 0, err
    header = next(line for line in out.splitlines() if "config" in line and "speedup" in line)
    assert "precision" in header and "95% CI" in header and "call" in header
    assert out.count("bf16") == 8 and out.count("fp32") == 8


def test_by_attempt_compares_reruns_of_the_same_key(tmp_path, capsys):
    first = _side({"platform": "A"})
    again = _side({"platform": "A"}, _layers8, seed0=100)  # the same run keys: attempt 2
    db = synth.write_db(tmp_path / "att.db", first + again)
    synth.write_db(tmp_path / "att.db", _side({"platform": "A"}, seed0=300)[:1])  # attempt 3
    data = A.load([db])
    assert S.values(data, "attempt") == ["first", "latest", "1", "2", "3"]
    c = A.compare(data, "attempt", "1", "2")
    assert len(c.pairs) == 8 and c.overall()["slower"] == 1
    assert {"db", "run_key"} <= set(c.key)
    c = A.compare(data, "attempt", "first", "latest")  # the first config's latest is attempt 3
    assert len(c.pairs) == 8
    assert sorted(c.pairs["attempt_b"]) == [2] * 7 + [3]
    with pytest.raises(ConfigError, match="b = '4'"):
        A.compare(data, "attempt", "1", "4")
    code, _out, err = run_cli(
        capsys, "compare", "--db", db, "--by", "attempt", "--a", "first", "--b", "2",
        "--fail-if-slower", "5",
    )  # fmt: skip
    assert code == 1 and "layers=8 nodes=128" in err


def test_the_report_leaves_noisy_runs_out_and_says_so(tmp_path):
    rows = _side({"precision": "fp32"}) + _side({"precision": "bf16"}, seed0=50)
    rows[0]["converged"] = False  # stored before quality flags: noisy
    rows[9]["converged"] = False
    db = synth.write_db(tmp_path / "n.db", rows)
    rep = report.build([db], tmp_path / "out")
    sec = {s.id: s for s in rep.sections}
    note = next(n for n in sec["summary"].notes if "noisy" in n)
    assert note.startswith("2 of 16 ok configs have no good attempt") and "--include-noisy" in note
    assert any("noisy" in n for n in sec["speedups"].notes)
    speed = pd.read_csv(tmp_path / "out" / "tables" / "speedup-precision-bf16-over-fp32.csv")
    assert speed.iloc[-1]["n"] == 6  # two configs lost one side each
    status = pd.read_csv(tmp_path / "out" / "tables" / "status-by-family.csv")
    assert status.iloc[0]["ok"] == 16 and status.iloc[0]["of which noisy"] == 2
    kept = report.build([db], tmp_path / "kept", include_noisy=True)
    speed = pd.read_csv(tmp_path / "kept" / "tables" / "speedup-precision-bf16-over-fp32.csv")
    assert speed.iloc[-1]["n"] == 8
    assert any("included" in n for n in {s.id: s for s in kept.sections}["summary"].notes)


def test_report_cli_takes_include_noisy(tmp_path, capsys):
    db = _db(tmp_path, "r.db", _side({"platform": "A"}))
    code, _out, err = run_cli(
        capsys, "report", "--db", db, "--out", str(tmp_path / "r"), "--include-noisy"
    )
    assert code == 0, err


def test_bootstrap_is_fast_enough_for_thousands_of_configs():
    """Not a timing test: the work is bounded by resampling configs of one sample count
    together; 2,000 configs × 2 sides finish in one call (seconds on a 2-core machine)."""
    rng = np.random.default_rng(3)
    samples = [rng.random(12) + 1 for _ in range(2000)]
    med = S._boot_medians(samples, 200, np.random.default_rng(0))
    assert med.shape == (2000, 200) and np.isfinite(med).all()
    lo, hi = np.quantile(med / np.array([np.median(x) for x in samples])[:, None], [0.025, 0.975])
    assert lo < 1 < hi and math.isfinite(lo)


def test_findings_leave_noisy_runs_out_unless_asked():
    rows = _side({"precision": "fp32"}) + _side({"precision": "bf16"}, lambda c: 0.8, 50)
    rows[0]["converged"] = False
    data = A.from_frames(rows)
    by_id = {f.id: f for f in A.evaluate(data)}
    assert "over 7 configs" in by_id["precision-helps"].evidence
    by_id = {f.id: f for f in A.evaluate(data, include_noisy=True)}
    assert "over 8 configs" in by_id["precision-helps"].evidence
