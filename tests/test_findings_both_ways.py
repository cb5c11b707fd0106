"""Every finding tested both ways (issue 30): on data built so that its claim is true it must
hold, on data built so that it is false it must not, whatever the incidental facts: which of a
pair of groups is faster, which has more runs, which is named first. A finding over two groups
names the faster one from the data.

The data are in-memory frames (tests/synth.py) with raw step-time samples, so speedups carry
the bootstrap intervals the verdicts are decided on. tests/test_findings_boundaries.py has each
rule at its threshold; this file has each claim true and false.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F
from paradnn.analysis import frames

import synth

EMPTY = A.from_frames([])
BY_ID = {check(EMPTY).id: check for check in F.CHECKS}


def verdict(data: A.Data, fid: str) -> F.Finding:
    f = BY_ID[fid](data)
    assert f.id == fid and f.verdict in F.VERDICTS, f
    if f.verdict in (F.HOLDS, F.FAILS, F.INCONCLUSIVE) and f.interval_note == "":
        # a decided or undecided verdict carries its number, its interval and the threshold
        assert f.statistic and f.threshold is not None and f.estimate is not None, f
    if f.verdict == F.INCONCLUSIVE:
        assert f.decide, f  # and says what more data would decide it
    else:
        assert not f.decide, f
    return f


def _wobble(cfg: dict) -> float:
    return zlib.crc32(repr(sorted(cfg.items())).encode()) % 1000 / 1000 - 0.5


def _fc(batch: int = 64, nodes: int = 64, layers: int = 2) -> dict:
    return {"layers": layers, "nodes": nodes, "input": 20, "output": 10, "batch": batch}


# -- the verdict rule itself --------------------------------------------------------------


@pytest.mark.parametrize(
    ("lo", "hi", "op", "want"),
    [
        (1.01, 2, ">", F.HOLDS), (1.0, 2, ">", F.INCONCLUSIVE), (0.5, 1.0, ">", F.FAILS),
        (0.5, 0.99, ">", F.FAILS), (0.9, 1.1, ">", F.INCONCLUSIVE),
        (1.0, 2, ">=", F.HOLDS), (0.5, 0.99, ">=", F.FAILS), (0.5, 1.0, ">=", F.INCONCLUSIVE),
        (0.5, 0.99, "<", F.HOLDS), (0.5, 1.0, "<", F.INCONCLUSIVE), (1.0, 2, "<", F.FAILS),
        (0.5, 1.0, "<=", F.HOLDS), (1.01, 2, "<=", F.FAILS), (1.0, 2, "<=", F.INCONCLUSIVE),
        (math.nan, 2, ">", F.INCONCLUSIVE), (None, None, ">", F.INCONCLUSIVE),
    ],
)  # fmt: skip
def test_the_verdict_follows_the_interval_against_the_threshold(lo, hi, op, want):
    assert F.judge(lo, hi, 1.0, op) == want


def test_two_verdicts_are_opposite_only_when_both_intervals_exclude_the_threshold():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        a, b = np.sort(rng.normal(1, 0.3, 2)), np.sort(rng.normal(1, 0.3, 2))
        for op in (">", ">=", "<", "<="):
            va, vb = F.judge(*a, 1.0, op), F.judge(*b, 1.0, op)
            if {va, vb} == {F.HOLDS, F.FAILS}:
                for lo, hi in (a, b):
                    assert not (lo < 1.0 < hi), (a, b, op)


# -- regression findings -------------------------------------------------------------------

RISING = {
    "fc-batch": ("fc", "batch", "nodes"),
    "fc-nodes": ("fc", "nodes", "batch"),
    "cnn-batch": ("cnn", "batch", "filters"),
    "cnn-filters": ("cnn", "filters", "batch"),
    "rnn-batch": ("rnn", "batch", "embed"),
    "rnn-embed": ("rnn", "embed", "batch"),
}
BASE = {
    "fc": {"layers": [2], "input": [20], "output": [10]},
    "cnn": {"blocks": [1], "image": [16], "output": [3]},
    "rnn": {"layers": [1], "length": [5], "vocab": [7]},
}


def _grid(family: str, hp: str, other: str, effect: float) -> A.Data:
    space = {**BASE[family], hp: [8, 16, 32, 64], other: [8, 16, 32, 64]}

    def util(c):
        return (
            0.2
            + 0.03 * math.log2(c[other] / 8)
            + effect * math.log2(c[hp] / 8)
            + 0.004 * _wobble(c)
        )

    return A.from_frames(synth.rows(family, space, util))


@pytest.mark.parametrize("fid", list(RISING))
@pytest.mark.parametrize(("effect", "want"), [(0.02, F.HOLDS), (-0.02, F.FAILS)])
def test_a_rising_finding_holds_when_it_rises_and_not_when_it_falls(fid, effect, want):
    family, hp, other = RISING[fid]
    f = verdict(_grid(family, hp, other, effect), fid)
    assert f.verdict == want and f.statistic == f"w({hp})"
    assert (f.ci_low > 0) if want == F.HOLDS else (f.ci_high < 0)


def _fc3(w_batch: float, w_nodes: float, w_layers: float) -> A.Data:
    space = {**BASE["fc"], "layers": [2, 4, 8], "nodes": [64, 128, 256], "batch": [8, 16, 32]}

    def util(c):
        return (
            0.3
            + w_batch * math.log2(c["batch"] / 8)
            + w_nodes * math.log2(c["nodes"] / 64)
            + w_layers * math.log2(c["layers"] / 2)
            + 0.002 * _wobble(c)
        )

    return A.from_frames(synth.rows("fc", space, util))


@pytest.mark.parametrize(
    ("weights", "want"),
    [
        ((0.03, 0.02, 0.0), F.HOLDS),  # width and batch drive utilization, depth does not
        ((0.03, -0.02, 0.0), F.HOLDS),  # a weight counts by its size, whatever its sign
        ((0.005, 0.03, 0.03), F.FAILS),  # batch weaker than layers
        ((0.03, 0.005, -0.03), F.FAILS),  # nodes weaker than a falling layers
        ((0.02, 0.02, 0.0201), F.INCONCLUSIVE),  # tied: the intervals overlap
    ],
)
def test_width_over_depth_both_ways(weights, want):
    f = verdict(_fc3(*weights), "fc-width-over-depth")
    assert f.verdict == want, f.evidence


@pytest.mark.parametrize(("w_layers", "want"), [(-0.02, F.HOLDS), (0.02, F.FAILS)])
def test_depth_unexploited_both_ways(w_layers, want):
    assert verdict(_fc3(0.03, 0.02, w_layers), "depth-unexploited").verdict == want


# -- the roofline share --------------------------------------------------------------------


def _roofline(n: int, left: int, family: str = "fc") -> A.Data:
    rows = [synth.row("fc", _fc(8 * (i + 1), 256), 0.2) for i in range(n)]
    pts = A.model_points(A.from_frames(rows)).sort_values("intensity")
    ridge = float(pts["intensity"].iloc[left])
    ceil = pd.DataFrame(
        [
            {"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": ridge},
            {"device_name": "SynthCPU", "kind": "copy", "precision": None, "value": 1.0},
        ]
    )
    return A.from_frames(rows, ceilings=ceil)


@pytest.mark.parametrize(("left", "want"), [(30, F.HOLDS), (2, F.FAILS), (10, F.INCONCLUSIVE)])
def test_memory_bound_share_both_ways(left, want):
    f = verdict(_roofline(40, left), "memory-bound")
    assert f.verdict == want and f.estimate == left / 40
    if want == F.INCONCLUSIVE:
        # 10/40 is a quarter: no number of runs decides it, said in the ordinary words
        assert f.decide == "more than 4000 runs (now 40) if the spread stays as it is"


# -- precision -----------------------------------------------------------------------------


def _precision(
    gains: dict[str, float],
    low: str = "bf16",
    n: int = 6,
    extra: str = "",
    salt: str = "",
    wobble: float = 0.02,
) -> A.Data:
    """n configs per family, 16-bit `gains[family]` times fp32's examples/s (× a small
    wobble), raw samples on every run; `extra` adds fp32-only or 16-bit-only runs."""
    cfgs = {
        "fc": lambda i: _fc(8 * (i + 1)),
        "cnn": lambda i: {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": i + 2},
        "rnn": lambda i: {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": i + 1},
    }
    rows = []
    for fam, g in gains.items():
        for i in range(n):
            c = cfgs[fam](i)
            w = 1 + wobble * _wobble({**c, "salt": salt})
            rows.append(synth.row(fam, c, 0.2, n_samples=9, seed=i))
            rows.append(synth.row(fam, c, 0.2 * g * w, precision=low, n_samples=9, seed=50 + i))
    if extra:
        prec = "fp32" if extra == "fp32" else low
        rows += [synth.row("fc", _fc(1000 + i), 0.2, precision=prec) for i in range(3 * n)]
    return A.from_frames(rows)


@pytest.mark.parametrize("low", ["bf16", "fp16"])
@pytest.mark.parametrize("extra", ["", "fp32", "low"])
def test_precision_helps_both_ways(low, extra):
    f = verdict(_precision({"fc": 1.5}, low, extra=extra), "precision-helps")
    assert f.verdict == F.HOLDS and f.evidence.startswith(f"{low} over fp32")
    assert verdict(_precision({"fc": 0.7}, low, extra=extra), "precision-helps").verdict == F.FAILS
    f = verdict(_precision({"fc": 1.0}, low, extra=extra), "precision-helps")
    assert f.verdict == F.INCONCLUSIVE


@pytest.mark.parametrize("order", ["cnn first", "rnn first"])
def test_precision_cnn_over_rnn_both_ways(order):
    def data(cnn, rnn):
        g = {"cnn": cnn, "rnn": rnn}
        return _precision(g if order == "cnn first" else dict(reversed(list(g.items()))))

    f = verdict(data(2.0, 1.1), "precision-cnn-over-rnn")
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(2.0 / 1.1, rel=0.02)
    assert verdict(data(1.1, 2.0), "precision-cnn-over-rnn").verdict == F.FAILS
    assert verdict(data(1.3, 1.3), "precision-cnn-over-rnn").verdict == F.INCONCLUSIVE


def test_demo_runs_of_no_effect_never_give_opposite_verdicts():
    """Six 'demo runs' of one machine where 16-bit neither helps nor hurts (each config ±12%
    around 1, drawn anew per run): the two-way rule's verdicts flipped between such runs
    (issue 30: 1.19× "holds" in the docs, 0.89× "does not hold" on the next demo); the
    three-way rule gives opposite verdicts only when both intervals exclude the threshold."""
    seen = {"precision-helps": [], "precision-cnn-over-rnn": []}
    for run in range(6):
        data = _precision({"cnn": 1.0, "rnn": 1.0}, n=8, salt=str(run), wobble=0.25)
        for fid, got in seen.items():
            got.append(verdict(data, fid))
    for fid, fs in seen.items():
        if {F.HOLDS, F.FAILS} <= {f.verdict for f in fs}:
            decided = [f for f in fs if f.verdict in (F.HOLDS, F.FAILS)]
            assert all(not (f.ci_low < f.threshold < f.ci_high) for f in decided), fid
        assert sum(f.verdict == F.INCONCLUSIVE for f in fs) >= 4, [f.evidence for f in fs]


# -- op benchmarks -------------------------------------------------------------------------


def _ops(rising: bool, groups: int = 3, shapes: int = 4) -> A.Data:
    rows = []
    for g in range(groups):
        prec = ["fp32", "bf16", "fp16"][g]
        for i in range(shapes):
            flops = 2 * (256 << i) ** 3
            rate = 1e9 * (i + 1 if rising else shapes - i)
            rows.append(synth.op_row(f"mm-{i}", flops, flops / rate, precision=prec))
    return A.from_frames([], ops=pd.DataFrame(rows))


def test_larger_ops_faster_both_ways():
    assert verdict(_ops(True), "larger-ops-faster").verdict == F.HOLDS
    assert verdict(_ops(False), "larger-ops-faster").verdict == F.FAILS


def _threads(per_doubling: float, n_ops: int = 8) -> A.Data:
    rows = [
        synth.op_row(f"mm-{i}", 2 * 1024**3, 4.0 / (per_doubling * (1 + 0.01 * i)) ** k, threads=t)
        for i in range(n_ops)
        for k, t in enumerate((1, 2, 4, 8))
    ]
    return A.from_frames([], ops=pd.DataFrame(rows))


def test_threads_matmul_both_ways():
    f = verdict(_threads(1.98), "threads-matmul")  # almost linear: the seed's 90-100%
    assert f.verdict == F.HOLDS and "at 8" not in f.evidence and "8 threads" in f.evidence
    assert verdict(_threads(1.5), "threads-matmul").verdict == F.FAILS  # 50% per doubling
    assert verdict(_threads(1.89), "threads-matmul").verdict == F.INCONCLUSIVE  # 1.89 .. 1.96


# -- two platforms: the faster one is named from the data ----------------------------------

ORIENTATIONS = [
    # (fast's name, slow's name, which gets extra runs)
    ("Alpha", "Zulu", "Alpha"),  # the faster named first and with the most runs
    ("Alpha", "Zulu", "Zulu"),  # named first, the slower has the most runs
    ("Zulu", "Alpha", "Zulu"),  # the faster named last, with the most runs
    ("Zulu", "Alpha", "Alpha"),  # named last, the slower has the most runs
]


def _pairs(family, configs, lead, orient, extra_runs=12):
    fast, slow, more = orient
    rows = synth.pair_rows(
        family, configs, lead, fast=fast, slow=slow, extra_runs=extra_runs, extra_on=more
    )
    data = A.from_frames(rows)
    counts = data.ok["platform"].value_counts()
    assert counts.idxmax() == more  # the run counts are as the case says
    return data


BATCHES = [8, 16, 32, 64, 128, 256, 512, 1024]


def _lead_by_batch(lo: float, hi: float):
    """A lead going from `lo` at batch 8 to `hi` at batch 1024, geometric in between."""
    return lambda c: lo * (hi / lo) ** (math.log2(c["batch"] / 8) / 7)


@pytest.mark.parametrize("orient", ORIENTATIONS, ids=lambda o: "-".join(o))
def test_speedup_batch_both_ways_whatever_the_names_and_run_counts(orient):
    fast, slow, _ = orient
    cfgs = [_fc(b) for b in BATCHES]
    grows = verdict(_pairs("fc", cfgs, _lead_by_batch(1.6, 8.0), orient), "speedup-batch")
    assert grows.verdict == F.HOLDS and grows.evidence.startswith(f"{fast} over {slow}")
    # issue 30's case: the faster leads 8× at small batch and 1.6× at large; it had said
    # "holds | Slow over Fast: ρ = +0.99" when Fast had the most runs (the pair was oriented
    # by run count)
    shrinks = verdict(_pairs("fc", cfgs, _lead_by_batch(8.0, 1.6), orient), "speedup-batch")
    assert shrinks.verdict == F.FAILS and shrinks.evidence.startswith(f"{fast} over {slow}")
    assert shrinks.estimate < 0 and shrinks.ci_high < 0


def test_speedup_batch_is_inconclusive_when_which_platform_is_faster_is_undecided():
    # the lead crosses 1 (0.5× at batch 8, 2× at 1024): no platform is faster overall
    cfgs = [_fc(b) for b in BATCHES]
    f = verdict(_pairs("fc", cfgs, _lead_by_batch(0.5, 2.0), ORIENTATIONS[0]), "speedup-batch")
    assert f.verdict == F.INCONCLUSIVE and "which platform is faster" in f.decide


SIZES = [64, 96, 128, 192, 256, 384, 512, 768, 1024]


@pytest.mark.parametrize("orient", ORIENTATIONS, ids=lambda o: "-".join(o))
def test_fc_size_platform_both_ways(orient):
    cfgs = [_fc(64, n) for n in SIZES]
    # the faster overall wins 3× on small models, loses 1.5× on large ones
    split = _pairs("fc", cfgs, lambda c: 3.0 if c["nodes"] <= 256 else 1 / 1.5, orient)
    assert verdict(split, "fc-size-platform").verdict == F.HOLDS
    # one platform wins at every size
    same = _pairs("fc", cfgs, lambda c: 3.0 if c["nodes"] <= 256 else 1.5, orient)
    f = verdict(same, "fc-size-platform")
    assert f.verdict == F.FAILS and f.evidence.startswith(f"{orient[0]} over {orient[1]}")


def _cnn(filters: int) -> dict:
    return {"blocks": 1, "filters": filters, "image": 16, "output": 3, "batch": 8}


@pytest.mark.parametrize("orient", ORIENTATIONS, ids=lambda o: "-".join(o))
def test_cnn_size_speedup_both_ways(orient):
    cfgs = [_cnn(f) for f in (4, 6, 8, 12, 16, 24, 32, 48)]
    grows = _pairs("cnn", cfgs, lambda c: 1.5 * c["filters"] / 4, orient)
    f = verdict(grows, "cnn-size-speedup")
    assert f.verdict == F.HOLDS and f.evidence.startswith(f"{orient[0]} over {orient[1]}")
    shrinks = _pairs("cnn", cfgs, lambda c: 1.5 * 48 / c["filters"], orient)
    assert verdict(shrinks, "cnn-size-speedup").verdict == F.FAILS


def _rnn(embed: int) -> dict:
    return {"layers": 1, "embed": embed, "length": 5, "vocab": 7, "batch": 8}


@pytest.mark.parametrize("orient", ORIENTATIONS, ids=lambda o: "-".join(o))
def test_rnn_embed_platform_both_ways(orient):
    cfgs = [_rnn(e) for e in (8, 12, 16, 24, 32, 48, 64, 96)]
    # the faster platform's lead shrinks with embedding size: the slower scales better
    slower_scales = _pairs("rnn", cfgs, lambda c: 1.2 * 96 / c["embed"], orient)
    f = verdict(slower_scales, "rnn-embed-platform")
    assert f.verdict == F.HOLDS and f.evidence.startswith(f"{orient[0]} over {orient[1]}")
    faster_scales = _pairs("rnn", cfgs, lambda c: 1.2 * c["embed"] / 8, orient)
    assert verdict(faster_scales, "rnn-embed-platform").verdict == F.FAILS


def test_largest_fc_on_cpu_both_ways():
    cpu = [synth.row("fc", _fc(8, n), 0.2, platform="CPU") for n in (64, 128)]
    oom = synth.row("fc", _fc(8, 128), None, platform="GPU", device="cuda", status="oom")
    ok = synth.row("fc", _fc(8, 64), 0.4, platform="GPU", device="cuda")
    assert verdict(A.from_frames([*cpu, ok, oom]), "largest-fc-cpu").verdict == F.HOLDS
    fits = synth.row("fc", _fc(8, 128), 0.4, platform="GPU", device="cuda")
    assert verdict(A.from_frames([*cpu, ok, fits]), "largest-fc-cpu").verdict == F.FAILS


@pytest.mark.parametrize("more", ["old", "new"])
def test_software_updates_both_ways_with_versions_compared_as_numbers(more):
    def data(gain):
        rows = []
        for i in range(6):
            c = _fc(8 * (i + 1))
            w = 1 + 0.02 * _wobble(c)
            rows.append(synth.row("fc", c, 0.2, torch_version="2.9.0", n_samples=9, seed=i))
            rows.append(
                synth.row("fc", c, 0.2 * gain * w, torch_version="2.10.0", n_samples=9, seed=9 + i)
            )
        tv = "2.9.0" if more == "old" else "2.10.0"
        rows += [synth.row("fc", _fc(1000 + i), 0.2, torch_version=tv) for i in range(9)]
        return A.from_frames(rows)

    f = verdict(data(1.4), "software-updates")  # 2.10 is the newer, though "2.10" < "2.9"
    assert f.verdict == F.HOLDS and f.evidence.startswith("torch 2.10.0 over 2.9.0")
    assert verdict(data(0.7), "software-updates").verdict == F.FAILS


# -- observation 3 (analysis/scaling.py) --------------------------------------------------


def _scaling(e_values: list[float]) -> A.Data:
    """One N = 1 and one N = 2 (weak) run per batch size, the latter with Karp–Flatt e."""
    rows = []
    for i, e in enumerate(e_values):
        b = 8 * (i + 1)
        rows.append(synth.scale_row(1, 0.01, batch=b))
        rows.append(synth.scale_row(2, 0.01 * (1 + e), batch=b))  # weak: S = 2/(1+e), e = 1/S·2 − 1
    return frames.from_frames(rows)


def test_multi_chip_overhead_both_ways():
    f = verdict(_scaling([0.2, 0.25, 0.3, 0.22, 0.28]), "multi-chip")
    assert f.verdict == F.HOLDS and f.ci_low > 0.05 and f.statistic == "median Karp–Flatt e"
    assert verdict(_scaling([0.0, 0.01, 0.02, 0.01, 0.0]), "multi-chip").verdict == F.FAILS
    f = verdict(_scaling([0.0, 0.01, 0.2, 0.3, 0.02]), "multi-chip")
    assert f.verdict == F.INCONCLUSIVE and f.ci_low <= 0.05 < f.ci_high
    assert "runs of N > 1 (now 5)" in f.decide


# -- where the verdicts are shown ---------------------------------------------------------


def test_the_findings_frame_carries_the_interval_and_what_would_decide_it():
    fs = F.as_frame([verdict(_precision({"fc": 1.0}), "precision-helps")])
    row = fs.iloc[0]
    assert row.verdict == F.INCONCLUSIVE and row.interval.startswith("geomean speedup 1")
    assert "vs 1" in row.interval and "[" in row.interval
    assert "matched configs (now 6)" in row.decide
    assert row.quote.startswith("Quantization from 32 bits to 16 bits")


@pytest.mark.parametrize(("n", "want"), [(4, F.INCONCLUSIVE), (5, F.HOLDS), (8, F.HOLDS)])
def test_a_perfect_ranking_is_decided_from_five_values_as_the_exact_test_is(n, want):
    # the exact permutation test of a perfect ranking: two-sided p = 2/n!, 1/12 at n = 4
    rho, lo, hi, m = F.spearman_ci(list(range(n)), list(range(n)))
    assert rho == pytest.approx(1.0) and m == n and hi < 1
    assert F.judge(lo, hi, 0.0, ">") == want
    rho, lo, hi, _ = F.spearman_ci(list(range(n)), list(range(n))[::-1])
    assert F.judge(lo, hi, 0.0, "<") == want
