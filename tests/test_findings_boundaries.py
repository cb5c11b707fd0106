"""Every finding's verdict at its boundaries: holds, does not hold, inconclusive, not enough
data (issues 23 and 30).

Each rule in analysis/findings.py places the 95% interval of a number against a threshold; the
data here puts that interval on the threshold or just either side of it, so a `>` written as
`>=`, a threshold moved, or a verdict swapped fails a test. An interval that straddles the
threshold is inconclusive (issue 30), never "does not hold". The regression findings are
decided by the 95% CI of a standardized weight: above zero, straddling zero, below zero.
"""

from __future__ import annotations

import math
import re
import zlib

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F

import synth

EMPTY = A.from_frames([])
BY_ID = {check(EMPTY).id: check for check in F.CHECKS}


def verdict(data: A.Data, fid: str) -> F.Finding:
    f = BY_ID[fid](data)
    # whatever the verdict, a finding names itself, its claim, its source, its number and rule
    for part in ("claim", "source", "evidence", "rule"):
        assert isinstance(getattr(f, part), str) and getattr(f, part), (fid, part, f)
    assert f.id == fid and f.verdict in F.VERDICTS, f
    return f


def _noise(cfg: dict) -> float:
    return zlib.crc32(repr(sorted(cfg.items())).encode()) % 1000 / 1000 - 0.5


# family -> (grid, hyperparameter the finding is about, another one that varies)
RISING = {
    "fc-batch": ("fc", "batch", "nodes"),
    "fc-nodes": ("fc", "nodes", "batch"),
    "cnn-batch": ("cnn", "batch", "filters"),
    "cnn-filters": ("cnn", "filters", "batch"),
    "rnn-batch": ("rnn", "batch", "embed"),
    "rnn-embed": ("rnn", "embed", "batch"),
}
SPACES = {
    "fc": {"layers": [2, 4], "nodes": [64, 128, 256, 512], "input": [20], "output": [10]},
    "cnn": {"blocks": [1, 2], "filters": [4, 8, 16, 32], "image": [16], "output": [3]},
    "rnn": {"layers": [1, 2], "embed": [8, 16, 32, 64], "length": [5], "vocab": [7]},
}


def _space(family: str, hp: str, other: str) -> dict:
    space = dict(SPACES[family])
    for h in (hp, other):
        space[h] = space[h] if h in ("nodes", "filters", "embed") else [8, 16, 32, 64]
    return space


def _runs(family: str, hp: str, other: str, effect: float, **kw) -> A.Data:
    """A grid over `hp` and `other` (4 values each); utilization rises by 0.04 per doubling of
    `other` and by `effect` per doubling of `hp`, plus a small deterministic wobble."""
    space = _space(family, hp, other)
    lo = {h: min(space[h]) for h in (hp, other)}

    def util(c):
        return (
            0.2
            + 0.04 * math.log2(c[other] / lo[other])
            + effect * math.log2(c[hp] / lo[hp])
            + 0.01 * _noise(c)
        )

    return A.from_frames(synth.rows(family, space, util, **kw))


def _ci(data: A.Data, family: str, hp: str) -> tuple[float, float]:
    row = A.sensitivity(data, family, F.UTIL).table.set_index("hyperparameter").loc[hp]
    return row.ci_low, row.ci_high


@pytest.mark.parametrize("fid", list(RISING))
def test_rising_findings_at_their_three_verdicts(fid):
    family, hp, other = RISING[fid]
    up = _runs(family, hp, other, effect=0.02)
    assert _ci(up, family, hp)[0] > 0
    f = verdict(up, fid)
    assert f.verdict == F.HOLDS and f"w({hp})" in f.evidence and "n = 32" in f.evidence
    flat = _runs(family, hp, other, effect=0.0)
    lo, hi = _ci(flat, family, hp)
    assert lo < 0 < hi  # straddles zero: no detectable effect, and no evidence against one
    f = verdict(flat, fid)
    assert f.verdict == F.INCONCLUSIVE and "runs (now 32)" in f.decide
    assert (f.ci_low, f.ci_high, f.threshold) == (lo, hi, 0.0)
    down = _runs(family, hp, other, effect=-0.02)
    assert _ci(down, family, hp)[1] < 0
    assert verdict(down, fid).verdict == F.FAILS


@pytest.mark.parametrize("fid", list(RISING))
def test_rising_findings_without_enough_data(fid):
    family, hp, other = RISING[fid]
    f = verdict(EMPTY, fid)
    assert f.verdict == F.NO_DATA and f.evidence == f"no {family} runs"
    # The hyperparameter never varies (8 runs over the others): no weight to judge.
    grid = {h: v if h in (hp, other) else v[:1] for h, v in _space(family, hp, other).items()}
    space = {**grid, hp: grid[hp][:1], "layers" if family != "cnn" else "blocks": [1, 2]}
    data = A.from_frames(synth.rows(family, space, lambda c: 0.1 + 0.01 * _noise(c)))
    f = verdict(data, fid)
    assert f.verdict == F.NO_DATA and "constant" in f.evidence and "in this slice" in f.evidence
    # Too few runs for a fit (6, fewer than 8).
    small = {**grid, hp: grid[hp][:2], other: grid[other][:3]}
    data = A.from_frames(synth.rows(family, small, lambda c: 0.1 + 0.01 * _noise(c)))
    f = verdict(data, fid)
    assert f.verdict == F.NO_DATA and "6 ok runs" in f.evidence


FC3 = {"input": [20], "output": [10]}


def _fc3(w_batch: float, w_nodes: float, w_layers: float) -> A.Data:
    space = {**FC3, "layers": [2, 4, 8], "nodes": [64, 128, 256], "batch": [8, 16, 32]}

    def util(c):
        return (
            0.3
            + w_batch * math.log2(c["batch"] / 8)
            + w_nodes * math.log2(c["nodes"] / 64)
            + w_layers * math.log2(c["layers"] / 2)
            + 0.002 * _noise(c)
        )

    return A.from_frames(synth.rows("fc", space, util))


def test_width_over_depth_holds_only_when_both_beat_layers():
    assert verdict(_fc3(0.03, 0.02, 0.005), "fc-width-over-depth").verdict == F.HOLDS
    # nodes below layers: one of the two is not enough.
    assert verdict(_fc3(0.03, 0.005, 0.02), "fc-width-over-depth").verdict == F.FAILS
    # A large negative layers effect still counts by its size.
    assert verdict(_fc3(0.02, 0.02, -0.03), "fc-width-over-depth").verdict == F.FAILS
    assert verdict(EMPTY, "fc-width-over-depth").verdict == F.NO_DATA
    flat = {**FC3, "layers": [4], "nodes": [64, 128, 256], "batch": [8, 16, 32]}
    f = verdict(A.from_frames(synth.rows("fc", flat, lambda c: 0.1)), "fc-width-over-depth")
    assert f.verdict == F.NO_DATA and "layers" in f.evidence


def test_width_over_depth_names_a_hyperparameter_it_could_not_fit():
    # layers stored as text (a hand-edited database): no number to fit, and the finding says so
    space = {**FC3, "layers": [2, 4], "nodes": [64, 128, 256, 512], "batch": [8, 16, 32, 64]}
    rows = synth.rows("fc", space, lambda c: 0.1 + c["nodes"] / 1e4 + c["batch"] / 1e3)
    for r in rows:
        r["config"] = dict(r["config"], layers=str(r["config"]["layers"]))
    f = verdict(A.from_frames(rows), "fc-width-over-depth")
    assert f.verdict == F.NO_DATA and f.evidence == "layers: not fitted"


def test_depth_unexploited_at_its_three_verdicts():
    flat = _fc3(0.03, 0.02, 0.0)
    lo, hi = _ci(flat, "fc", "layers")
    assert lo < 0 < hi
    f = verdict(flat, "depth-unexploited")  # no effect cannot be told from a small rise
    assert f.verdict == F.INCONCLUSIVE and f.decide
    assert verdict(_fc3(0.03, 0.02, -0.02), "depth-unexploited").verdict == F.HOLDS
    rising = _fc3(0.03, 0.02, 0.02)
    assert _ci(rising, "fc", "layers")[0] > 0
    f = verdict(rising, "depth-unexploited")
    assert f.verdict == F.FAILS and "w(layers)" in f.evidence
    assert verdict(EMPTY, "depth-unexploited").verdict == F.NO_DATA
    flat = {**FC3, "layers": [4], "nodes": [64, 128, 256], "batch": [8, 16, 32]}
    f = verdict(A.from_frames(synth.rows("fc", flat, lambda c: 0.1)), "depth-unexploited")
    assert f.verdict == F.NO_DATA and "constant" in f.evidence


def _fc(batch: int, nodes: int = 64) -> dict:
    return {"layers": 2, "nodes": nodes, "input": 20, "output": 10, "batch": batch}


def _precision(gains: dict[str, list[float]]) -> A.Data:
    """fp32 and bf16 runs per family: one config per gain (bf16 examples/s over fp32)."""
    cfgs = {
        "fc": lambda i: _fc(8 * (i + 1)),
        "cnn": lambda i: {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": i + 2},
        "rnn": lambda i: {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": i + 1},
    }
    rows = []
    for fam, gs in gains.items():
        for i, g in enumerate(gs):
            rows.append(synth.row(fam, cfgs[fam](i), 0.2))
            rows.append(synth.row(fam, cfgs[fam](i), 0.2 * g, precision="bf16"))
    return A.from_frames(rows)


def test_precision_helps_at_its_boundary():
    f = verdict(_precision({"fc": [1.0, 4.0, 1.0]}), "precision-helps")  # geomean 1.587
    # its bootstrap over the 3 configs reaches 1 (a replicate of the two 1.0s): undecided
    assert f.verdict == F.INCONCLUSIVE and "geomean 1.59× [1.00, " in f.evidence
    assert f.ci_low == pytest.approx(1.0) and "matched configs (now 3)" in f.decide
    f = verdict(_precision({"fc": [1.5, 1.6, 1.7]}), "precision-helps")
    assert f.verdict == F.HOLDS and f.ci_low > 1 and not f.decide
    # Geomean 1 (median 1, mean 1.25), within rounding: on the threshold, the ordinary
    # wording with no number of configs that would decide it
    f = verdict(_precision({"fc": [0.5, 1.0, 2.0]}), "precision-helps")
    assert f.verdict == F.INCONCLUSIVE
    assert f.decide.startswith("more than 300 matched configs (now 3) if the spread stays")
    # Geomean 0.91 while the mean is 1.03 and the median 1.1: the interval straddles 1.
    assert verdict(_precision({"fc": [0.5, 1.1, 1.5]}), "precision-helps").verdict == (
        F.INCONCLUSIVE
    )
    f = verdict(_precision({"fc": [0.8, 0.9, 0.95]}), "precision-helps")
    assert f.verdict == F.FAILS and f.ci_high < 1
    f = verdict(A.from_frames([synth.row("fc", _fc(8), 0.2)]), "precision-helps")
    assert f.verdict == F.NO_DATA and "need fp32 and bf16 or fp16" in f.evidence
    assert verdict(EMPTY, "precision-helps").evidence == "no runs"
    rows = [synth.row("fc", _fc(8), 0.2), synth.row("fc", _fc(16), 0.2, precision="bf16")]
    f = verdict(A.from_frames(rows), "precision-helps")
    assert f.verdict == F.NO_DATA and "no config ran ok in both" in f.evidence


def test_precision_cnn_over_rnn_compares_geometric_means():
    # CNN: geomean 1.59 (median 1.0); RNN: 1.2 everywhere. By geomeans CNN gains more.
    f = verdict(
        _precision({"cnn": [1.0, 4.0, 1.0], "rnn": [1.2, 1.2, 1.2]}), "precision-cnn-over-rnn"
    )
    # ...but its interval reaches 1.0 (below RNN's 1.2): undecided
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("cnn 1.59× [1.00, ")
    assert "vs rnn 1.20× [1.20, 1.20]" in f.evidence and f.estimate == pytest.approx(
        1.587 / 1.2, rel=1e-3
    )
    more = _precision({"cnn": [2.0, 2.1, 2.2], "rnn": [1.2, 1.2, 1.2]})
    assert verdict(more, "precision-cnn-over-rnn").verdict == F.HOLDS
    equal = _precision({"cnn": [1.0, 1.0], "rnn": [1.0, 1.0]})  # exact ties
    assert verdict(equal, "precision-cnn-over-rnn").verdict == F.FAILS  # a tie is not "more"
    less = _precision({"cnn": [1.2, 1.2], "rnn": [1.0, 2.0]})  # rnn geomean 1.41 [1, 2]
    assert verdict(less, "precision-cnn-over-rnn").verdict == F.INCONCLUSIVE
    less = _precision({"cnn": [1.2, 1.2], "rnn": [1.5, 1.6]})
    assert verdict(less, "precision-cnn-over-rnn").verdict == F.FAILS
    f = verdict(_precision({"cnn": [2.0, 2.0]}), "precision-cnn-over-rnn")
    assert f.verdict == F.NO_DATA and "cnn and rnn" in f.evidence
    assert verdict(EMPTY, "precision-cnn-over-rnn").verdict == F.NO_DATA


def _ops(groups: list[list[float]], threads: int = 2) -> pd.DataFrame:
    """One op group (precision) per list: achieved FLOP/s of 3-4 growing matmul shapes."""
    rows = []
    for g, rates in enumerate(groups):
        prec = ["fp32", "bf16", "fp16"][g]
        for i, rate in enumerate(rates):
            flops = 2 * (256 << i) ** 3
            rows.append(synth.op_row(f"mm-{i}", flops, flops / rate, threads, prec))
    return pd.DataFrame(rows)


def test_larger_ops_faster_on_the_pooled_correlation():
    up, down = [1e9, 2e9, 3e9], [3e9, 2e9, 1e9]
    f = verdict(A.from_frames([], ops=_ops([up, up, up])), "larger-ops-faster")
    assert f.verdict == F.HOLDS and "pooled ρ = +1.00 over 9 shapes in 3 groups" in f.evidence
    f = verdict(A.from_frames([], ops=_ops([down, down, down])), "larger-ops-faster")
    assert f.verdict == F.FAILS and "ρ > 0 in 0/3 groups" in f.evidence
    # 2 of 3 groups rising: pooled ρ = +0.33 over 9 shapes, its interval straddles 0
    f = verdict(A.from_frames([], ops=_ops([up, up, down])), "larger-ops-faster")
    assert f.verdict == F.INCONCLUSIVE and "ρ > 0 in 2/3 groups" in f.evidence
    f = verdict(A.from_frames([], ops=_ops([up, down])), "larger-ops-faster")
    assert (
        f.verdict == F.INCONCLUSIVE
        and f.decide == "more than 600 matched configs (now 6) at this ρ"
    )
    f = verdict(A.from_frames([], ops=_ops([up[:2]])), "larger-ops-faster")
    assert f.verdict == F.NO_DATA and "fewer than 3 shapes" in f.evidence
    assert verdict(EMPTY, "larger-ops-faster").verdict == F.NO_DATA
    # Runs at another thread count are left out: only the most common count is judged.
    ops = pd.concat([_ops([up, up, up]), _ops([down], threads=1)], ignore_index=True)
    assert verdict(A.from_frames([], ops=ops), "larger-ops-faster").verdict == F.HOLDS


def _threads(gains: list[float], n_ops: int = 6, op: str = "matmul") -> A.Data:
    """`n_ops` matmul ops timed at 1, 2 and 4 threads; op i gains gains[i % len] per doubling."""
    rows = []
    for i in range(n_ops):
        g = gains[i % len(gains)]
        for k, t in enumerate((1, 2, 4)):
            rows.append(synth.op_row(f"mm-{i}", 2 * 1024**3, 4.0 / g**k, threads=t))
    return A.from_frames([], ops=pd.DataFrame(rows).assign(op=op))


def test_threads_matmul_at_its_boundary():
    # every op exactly 1.9× per doubling: the interval is [1.9, 1.9], at the threshold: holds
    f = verdict(_threads([1.9]), "threads-matmul")
    assert f.verdict == F.HOLDS and "median speedup per doubling 1.90× over 6 ops" in f.evidence
    assert f.ci_low == pytest.approx(1.9) and f.threshold == 1.9
    f = verdict(_threads([1.89]), "threads-matmul")
    assert f.verdict == F.FAILS
    # the order-statistic interval of 6 values is [min, max]: 1.5 .. 2.0 straddles 1.9
    f = verdict(_threads([1.5, 2.0]), "threads-matmul")
    assert f.verdict == F.INCONCLUSIVE and f.ci_low == pytest.approx(1.5)
    # fewer than 6 ops: no interval of the median exists
    f = verdict(_threads([2.0], n_ops=5), "threads-matmul")
    assert f.verdict == F.INCONCLUSIVE and "at least 6 ops" in f.decide
    f = verdict(_threads([2.0], op="conv2d"), "threads-matmul")  # the seed's claim is matmul's
    assert f.verdict == F.NO_DATA and "two thread counts" in f.evidence


def _platforms(n: int, ratio) -> A.Data:
    rows = []
    for i in range(n):
        cfg = _fc(8 * (i + 1))
        rows.append(synth.row("fc", cfg, 0.2, platform="A"))
        rows.append(synth.row("fc", cfg, 0.2 * ratio(i), platform="B", device="cuda"))
    return A.from_frames(rows)


def test_speedup_with_batch_needs_eight_configs_and_a_decided_rise():
    f = verdict(_platforms(8, lambda i: 1 + i / 4), "speedup-batch")
    assert f.verdict == F.HOLDS and "over 8 configs" in f.evidence and f.ci_low > 0
    f = verdict(_platforms(7, lambda i: 1 + i / 4), "speedup-batch")
    assert f.verdict == F.NO_DATA and f.evidence == "7 matched configs"
    # B faster everywhere, its lead shrinking with batch: ρ = −1
    assert verdict(_platforms(8, lambda i: 2 - i / 8), "speedup-batch").verdict == F.FAILS
    # A rise that is not decided (ρ = +0.08 over 8 configs): inconclusive, not "does not hold"
    wobble = [1.6, 2.1, 1.4, 1.8, 1.5, 2.2, 1.7, 1.6]
    f = verdict(_platforms(8, lambda i: wobble[i]), "speedup-batch")
    assert f.verdict == F.INCONCLUSIVE and f.ci_low < 0 < f.ci_high
    assert "matched configs (now 8)" in f.decide
    assert verdict(EMPTY, "speedup-batch").verdict == F.UNTESTABLE


@pytest.mark.parametrize(("rho", "want"), [(0.71, F.INCONCLUSIVE), (0.72, F.HOLDS)])
def test_a_rise_with_speedup_is_decided_by_its_fisher_interval(monkeypatch, rho, want):
    # n = 8: the Fisher-z interval's lower end, tanh(atanh ρ − 1.96·√(1.06/5)), crosses 0 at
    # ρ = 0.7176
    monkeypatch.setattr(F, "_spearman", lambda x, y: (rho, 0.0))
    f = verdict(_platforms(8, lambda i: 1 + i / 4), "speedup-batch")
    assert f.verdict == want, f.evidence


def test_largest_fc_on_cpu_at_its_three_verdicts():
    cpu = [synth.row("fc", _fc(8, n), 0.2, platform="CPU") for n in (64, 128)]
    gpu_oom = synth.row("fc", _fc(8, 128), None, platform="GPU", device="cuda", status="oom")
    gpu_ok = synth.row("fc", _fc(8, 64), 0.4, platform="GPU", device="cuda")
    f = verdict(A.from_frames([*cpu, gpu_ok, gpu_oom]), "largest-fc-cpu")
    assert f.verdict == F.HOLDS and f.evidence.startswith("1 FC configs")
    predicted = dict(gpu_oom, status="predicted_oom")
    assert verdict(A.from_frames([*cpu, predicted]), "largest-fc-cpu").verdict == F.HOLDS
    # Out of memory on the GPU but failed on the CPU too: not the finding.
    cpu_bad = [cpu[0], synth.row("fc", _fc(8, 128), None, platform="CPU", status="crashed")]
    assert verdict(A.from_frames([*cpu_bad, gpu_oom]), "largest-fc-cpu").verdict == F.FAILS
    assert verdict(A.from_frames([*cpu, gpu_ok]), "largest-fc-cpu").verdict == F.FAILS
    f = verdict(A.from_frames(cpu), "largest-fc-cpu")
    assert f.verdict == F.UNTESTABLE
    assert verdict(EMPTY, "largest-fc-cpu").verdict == F.NO_DATA


def test_software_versions_at_their_boundary():
    def versions(new_gain, same_configs=True):
        old = [synth.row("fc", _fc(8 * (i + 1)), 0.2, torch_version="2.11.0") for i in range(3)]
        off = 0 if same_configs else 3
        new = [
            synth.row("fc", _fc(8 * (i + 1 + off)), 0.2 * g, torch_version="2.13.0")
            for i, g in enumerate(new_gain)
        ]
        return A.from_frames(old + new)

    f = verdict(versions([1.0, 1.0, 1.5]), "software-updates")
    assert f.verdict == F.INCONCLUSIVE and "over 3 configs" in f.evidence  # CI reaches 1.0
    f = verdict(versions([1.2, 1.3, 1.5]), "software-updates")
    assert f.verdict == F.HOLDS and "over 3 configs" in f.evidence
    f = verdict(versions([0.5, 2.0, 1.0]), "software-updates")  # geomean 1.0
    assert f.verdict == F.INCONCLUSIVE and f.decide.startswith("more than 300 matched configs")
    assert verdict(versions([0.7, 0.8, 1.0]), "software-updates").verdict == F.FAILS
    f = verdict(versions([1.5, 1.5], same_configs=False), "software-updates")
    assert f.verdict == F.NO_DATA and "no config ran on both" in f.evidence
    f = verdict(A.from_frames([synth.row("fc", _fc(8), 0.2)]), "software-updates")
    assert f.verdict == F.UNTESTABLE and "2.13.0" in f.evidence


def _roofline(n: int, ridge_at: int | None) -> A.Data:
    """n fc runs of growing intensity; a measured roof whose ridge is the intensity of run
    `ridge_at` (in order), so the runs before it are left of the ridge."""
    rows = [synth.row("fc", _fc(8 * (i + 1), 256), 0.2) for i in range(n)]
    data = A.from_frames(rows)
    if ridge_at is None:
        return data
    pts = A.model_points(data).sort_values("intensity")
    assert pts["intensity"].is_unique
    ridge = float(pts["intensity"].iloc[ridge_at])
    ceil = pd.DataFrame(
        [
            {"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": ridge},
            {"device_name": "SynthCPU", "kind": "copy", "precision": None, "value": 1.0},
        ]
    )
    return A.from_frames(rows, ceilings=ceil)


@pytest.mark.parametrize(
    ("left", "want"),
    # Clopper-Pearson over 40 runs: 17/40 [0.270, 0.591] holds; 16/40 [0.249, 0.567] reaches
    # below a quarter; 5/40 [0.042, 0.268] reaches above it; 4/40 [0.028, 0.237] lies below.
    [(17, F.HOLDS), (16, F.INCONCLUSIVE), (10, F.INCONCLUSIVE), (5, F.INCONCLUSIVE), (4, F.FAILS)],
)
def test_memory_bound_share_at_a_quarter(left, want):
    f = verdict(_roofline(40, ridge_at=left), "memory-bound")
    assert f.verdict == want and f.evidence.startswith(f"{left}/40 runs below the ridge")
    assert "measured ridge" in f.evidence and f.threshold == 0.25
    assert f.estimate == pytest.approx(left / 40)


def test_memory_bound_share_counts_a_run_at_the_ridge_as_not_left_of_it():
    # 1 of 4 strictly left (25%); of 5, a run exactly at the ridge is not left of it (20%)
    f = verdict(_roofline(4, ridge_at=1), "memory-bound")
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("1/4 runs below the ridge")
    assert f.estimate == 0.25
    f = verdict(_roofline(5, ridge_at=1), "memory-bound")
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("1/5 runs")
    assert f.estimate == 0.2
    f = verdict(_roofline(4, ridge_at=None), "memory-bound")
    assert f.verdict == F.NO_DATA and "no roof" in f.evidence
    f = verdict(EMPTY, "memory-bound")
    assert f.verdict == F.NO_DATA and "no ok fc/cnn runs" in f.evidence


@pytest.mark.parametrize("fid", ["tpu-v3", "tpu-vs-gpu", "torus"])  # infeed: test_infeed_analysis
def test_what_paradnn_cannot_measure_is_untestable_whatever_the_data(fid):
    f = verdict(_fc3(0.03, 0.02, 0.0), fid)
    assert f.verdict == F.UNTESTABLE and f.rule == "needs data paradnn lacks"
    assert f.id == fid and fid in F.NEVER_TESTABLE
    assert f.claim and f.source.startswith("seed ") and f.evidence  # the claim, where, and why
    assert len({f.claim, f.source, f.evidence, f.rule}) == 4


def test_noisy_runs_are_left_out_of_the_verdicts_unless_asked():
    noisy = [
        synth.row("fc", _fc(8), 0.2),
        synth.row("fc", _fc(8), 0.4, precision="bf16", converged=False, quality="noisy"),
    ]
    data = A.from_frames(noisy)
    got = {f.id: f for f in F.evaluate(data)}
    assert got["precision-helps"].verdict == F.NO_DATA
    got = {f.id: f for f in F.evaluate(data, include_noisy=True)}
    assert got["precision-helps"].verdict == F.HOLDS
    assert len(F.as_frame(F.evaluate(data))) == len(F.CHECKS)


def test_precision_helps_compares_fp16_when_there_is_no_bf16():
    rows = []
    for i, g in enumerate([1.0, 4.0, 1.0]):  # geomean (1 × 4 × 1)^(1/3) = 1.587
        rows.append(synth.row("fc", _fc(8 * (i + 1)), 0.2))
        rows.append(synth.row("fc", _fc(8 * (i + 1)), 0.2 * g, precision="fp16"))
    f = verdict(A.from_frames(rows), "precision-helps")
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("fp16 over fp32: geomean 1.59×")


def _fc_sizes(ratios: list[float]) -> A.Data:
    """One fc config per ratio, growing in parameters (nodes 64, 128, ...): platform B runs
    `ratio` times the examples/s of platform A."""
    rows = []
    for i, r in enumerate(ratios):
        cfg = _fc(8, 64 * (i + 1))
        rows.append(synth.row("fc", cfg, 0.2, platform="A"))
        rows.append(synth.row("fc", cfg, 0.2 * r, platform="B", device="cuda"))
    return A.from_frames(rows)


def test_fc_size_decides_platform_by_the_thirds_intervals():
    # B 2× faster on the 4 smallest, 2× slower on the 4 largest: thirds of k = 8 // 3 = 2
    # configs: smallest 2 [2, 2], largest 0.5 [0.5, 0.5], either side of 1
    f = verdict(_fc_sizes([2.0] * 4 + [0.5] * 4), "fc-size-platform")
    assert "smallest third 2.00× [2.00, 2.00], largest third 0.50× [0.50, 0.50]" in f.evidence
    assert f.verdict == F.HOLDS, f.evidence
    # what the findings table prints beside the verdict: the statistic and what it is set against
    assert f.statistic == "geomean speedup of each third" and f.threshold == 1.0
    assert f.interval_note == "smallest third 2 [2, 2], largest 0.5 [0.5, 0.5] vs 1"
    # Both thirds faster (2 and 1.5): the same platform wins everywhere.
    f = verdict(_fc_sizes([2.0] * 4 + [1.5] * 4), "fc-size-platform")
    assert f.verdict == F.FAILS and "largest third 1.50× [1.50, 1.50]" in f.evidence
    # the largest third's interval straddles 1: undecided
    f = verdict(_fc_sizes([2.0] * 6 + [0.5, 1.5]), "fc-size-platform")
    assert f.verdict == F.INCONCLUSIVE and "configs per third" in f.decide


def _roof_at(data: A.Data, ridges: dict[str, int], kind: str = "measured"):
    """A `kind` roof per platform whose ridge is the intensity of that platform's run number
    ridges[platform] (in order of intensity): the runs before it are left of the ridge."""
    from paradnn.analysis.roofline import Roof

    pts = A.model_points(data)
    at = {
        plat: float(pts[pts["platform"] == plat]["intensity"].sort_values().iloc[i])
        for plat, i in ridges.items()
    }
    return lambda data, plat, prec: [Roof(kind, at[plat], 1.0, "test")] if plat in at else []


def test_memory_bound_share_falls_back_to_the_datasheet_roof(monkeypatch):
    data = _roofline(4, ridge_at=None)
    monkeypatch.setattr(F, "roofs", _roof_at(data, {"SynthCPU": 1}, kind="datasheet"))
    f = verdict(data, "memory-bound")  # 1 of 4 left of the datasheet ridge: 25%
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("1/4 runs below the ridge")
    assert "(datasheet ridge" in f.evidence
    assert re.search(r"datasheet ridge [0-9][0-9.]* FLOP/B on SynthCPU fp32", f.evidence)


def test_memory_bound_share_counts_the_runs_of_every_platform(monkeypatch):
    rows = [
        synth.row("fc", _fc(2 ** (i + 1), 256), 0.2, platform=plat)
        for plat in ("PlatA", "PlatB")
        for i in range(4)
    ]
    data = A.from_frames(rows)
    monkeypatch.setattr(F, "roofs", _roof_at(data, {"PlatA": 0, "PlatB": 1}))
    # PlatA: 0 of 4 left, PlatB: 1 of 4 left; together 1/8 = 12.5% < 25% (interval reaches it)
    f = verdict(data, "memory-bound")
    assert f.verdict == F.INCONCLUSIVE and f.evidence.startswith("1/8 runs below the ridge")
    assert f.estimate == 1 / 8


def test_rnn_embed_platform_needs_more_than_one_embedding_size():
    # 8 matched RNN configs on two platforms (enough pairs), all at embed 8: no correlation
    rows = []
    for i in range(8):
        cfg = {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": i + 1}
        rows.append(synth.row("rnn", cfg, 0.2, platform="A"))
        rows.append(synth.row("rnn", cfg, 0.4, platform="B", device="cuda"))
    f = verdict(A.from_frames(rows), "rnn-embed-platform")
    assert f.verdict == F.NO_DATA and f.evidence == "matched RNN configs at one embedding size"
    assert "Spearman correlation of the embedding size" in f.rule


def test_fc_size_decides_platform_keeps_noisy_runs_when_asked_to():
    # `evaluate(include_noisy=True)`: every run flagged noisy still counts, in the thirds too
    rows = []
    for i, r in enumerate([2.0] * 4 + [0.5] * 4):
        cfg = _fc(8, 64 * (i + 1))
        rows.append(synth.row("fc", cfg, 0.2, platform="A", quality="noisy"))
        rows.append(synth.row("fc", cfg, 0.2 * r, platform="B", device="cuda", quality="noisy"))
    data = A.from_frames(rows)
    assert data.runs["noisy"].all()
    f = {g.id: g for g in F.evaluate(data, include_noisy=True)}["fc-size-platform"]
    assert f.verdict == F.HOLDS, f.evidence
    assert "smallest third 2.00× [2.00, 2.00], largest third 0.50× [0.50, 0.50]" in f.evidence


def test_the_geomean_decide_line_counts_configs_on_the_log_scale():
    # 2× [0.9, 4.4] against 1: on the log scale the half-width is ln 2 − ln 0.9 = 0.798 and the
    # distance ln 2 = 0.693, so 4 configs × (0.798 / 0.693)² = 5.3 → about 6 (a linear scale
    # would say 4 × (1.1 / 1)² = 4.84 → 5)
    got = F.geomean_more(4, 2.0, 0.9, 4.4, 1.0)
    assert got.startswith("about 6 matched configs (now 4) if the spread stays as it is")
    assert got.endswith("; longer runs (more timed steps) narrow each config's own interval")


def test_the_median_decide_line_needs_six_ops_then_counts_them():
    # six ops give the median an interval: from six on, the line counts how many more would do
    assert F._median_more(5, 1.2, 1.1, 1.6, 1.0).startswith("at least 6 ops")
    assert F._median_more(6, 1.2, 1.1, 1.6, 1.0) == (
        "about 7 ops (now 6) if the spread stays as it is"
    )
    # 1.2 [1.1, 1.6] against 1: half-width 0.1 toward 1, distance 0.2: already enough → n + 1
    eight = F._median_more(8, 1.2, 1.1, 1.6, 1.0)
    assert eight == "about 9 ops (now 8) if the spread stays as it is"


def test_a_never_testable_claim_says_why_whatever_the_data():
    check = F._untestable("test-never", "a claim", "seed 000", "no such hardware here")
    try:
        assert check.finding_id == "test-never" and "test-never" in F.NEVER_TESTABLE
        f = check(EMPTY)
        assert (f.id, f.verdict) == ("test-never", F.UNTESTABLE)
        assert f.evidence == "no such hardware here"
        assert check(_fc_sizes([2.0] * 8)).verdict == F.UNTESTABLE
    finally:
        F.NEVER_TESTABLE.discard("test-never")


def test_the_decide_line_measures_the_interval_on_the_side_of_the_threshold():
    # 1.2 [0.9, 1.3] against 1: the side toward 1 is 0.3 wide at a distance of 0.2, so
    # 4 × (0.3 / 0.2)² = 9 configs (the far side, 0.1, would wrongly say 5)
    assert F.more_data(4, 1.2, 0.9, 1.3, 1.0, "configs").startswith("about 9 configs (now 4)")
    # one config with an interval already says how many more
    assert F.more_data(1, 2.0, 1.5, 2.5, 1.0, "configs").startswith("about 2 configs (now 1)")
    assert F.more_data(0, 2.0, 1.5, 2.5, 1.0, "configs").startswith("an interval")
