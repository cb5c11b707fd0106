"""The seeds' observations, each tested against the data at hand with a stated rule.

A verdict is `holds`, `does not hold`, `not enough data` (the data could answer but has too few
runs, or the wrong slice) or `untestable` (the data lacks the hardware or the kind of run the
observation is about: a TPU, several chips, host-fed input). Nothing is guessed: every verdict
carries the number it was decided on and the rule that decided it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd

from paradnn.analysis.frames import (
    METRICS,
    Data,
    choose,
    default_metric,
    where_text,
    without_noisy,
)
from paradnn.analysis.regression import sensitivity
from paradnn.analysis.roofline import model_points, roofs
from paradnn.analysis.scaling import OBS3_CLAIM, OBS3_SOURCE, observation3
from paradnn.analysis.speedup import compare, geomean, values, version_key
from paradnn.analysis.summaries import thread_scaling
from paradnn.units import number

# The papers the findings cite, by the seed number every `source` names.
SEEDS = {
    "seed 000": 'the ParaDnn paper: Wang, Wei and Brooks, "Benchmarking TPU, GPU, and CPU '
    'Platforms for Deep Learning" (2019)',
    "seed 001": 'the TPU training supercomputer: Jouppi et al., "A Domain-Specific '
    'Supercomputer for Training Deep Neural Networks" (CACM, July 2020)',
    "seed 002": 'the accelerator study: Wang et al., "Benchmarking the Performance and Power '
    'of AI Accelerators for AI Training" (HKBU)',
}
HOLDS, FAILS, NO_DATA, UNTESTABLE = "holds", "does not hold", "not enough data", "untestable"
# Within one platform and precision utilization is achieved FLOP/s over a constant, so their
# standardized regression weights are equal; achieved FLOP/s needs no calibration or datasheet.
UTIL = "achieved_flops"


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    source: str  # seed and section
    verdict: str
    evidence: str  # the number behind the verdict
    rule: str  # how the verdict was decided


def _fmt_w(s, hp: str) -> str:
    row = s.table[s.table["hyperparameter"] == hp].iloc[0]
    return f"w({hp}) = {row.weight:+.2f} [{row.ci_low:+.2f}, {row.ci_high:+.2f}]"


def _rising(data: Data, family: str, hp: str, fid: str, claim: str, source: str) -> Finding:
    rule = f"holds when the 95% CI of the standardized regression weight of {hp} is above 0"
    fam_runs = data.runs[data.runs["family"] == family] if len(data.runs) else data.runs
    if not len(fam_runs):
        return Finding(fid, claim, source, NO_DATA, _no_runs(data, family), rule)
    s = sensitivity(data, family, UTIL)
    if s.reason or s.weight(hp) is None:
        why = s.reason or s.excluded.get(hp, f"{hp} not in the fit")
        metric = METRICS.get(s.metric, s.metric)
        return Finding(fid, claim, source, NO_DATA, f"{family} {metric}: {why}", rule)
    row = s.table[s.table["hyperparameter"] == hp].iloc[0]
    verdict = HOLDS if row.ci_low > 0 else FAILS
    ev = f"{_fmt_w(s, hp)} on {METRICS.get(s.metric, s.metric)}, n = {s.n} ({_where(s.where)})"
    return Finding(fid, claim, source, verdict, ev, rule)


def _no_runs(data: Data, family: str) -> str:
    """'no fc runs', or why the summary may still count some: the configs whose chosen attempt
    is noisy and was left out (the same attempts `compare` and the report use)."""
    left = data.noisy_left_out
    n = int((left["family"] == family).sum()) if len(left) and "family" in left else 0
    if not n:
        return f"no {family} runs"
    return (
        f"no {family} runs kept: {n} {family} config{'s' if n != 1 else ''} ran ok with no good "
        "attempt (flagged noisy) and were left out"
    )


def _spearman(x, y) -> tuple[float, float]:
    """(rho, p); nan when either side is constant (no ranking to correlate)."""
    import warnings

    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def _where(where: dict) -> str:
    return where_text(where)


def fc_width_over_depth(data: Data) -> Finding:
    fid, src = "fc-width-over-depth", "seed 000 §4.1, Fig. 2(d)"
    claim = "FC utilization is driven by batch size and nodes more than by layers"
    rule = "holds when |w(batch)| and |w(nodes)| both exceed |w(layers)|"
    if not len(data.runs) or not (data.runs["family"] == "fc").any():
        return Finding(fid, claim, src, NO_DATA, _no_runs(data, "fc"), rule)
    s = sensitivity(data, "fc", UTIL)
    ws = {h: s.weight(h) for h in ("batch", "nodes", "layers")}
    missing = [h for h, w in ws.items() if w is None]
    if s.reason or missing:
        why = s.reason or "; ".join(f"{h}: {s.excluded.get(h, 'not fitted')}" for h in missing)
        return Finding(fid, claim, src, NO_DATA, why, rule)
    holds = min(abs(ws["batch"]), abs(ws["nodes"])) > abs(ws["layers"])
    ev = ", ".join(_fmt_w(s, h) for h in ws) + f", n = {s.n}"
    return Finding(fid, claim, src, HOLDS if holds else FAILS, ev, rule)


def depth_unexploited(data: Data) -> Finding:
    fid, src = "depth-unexploited", "seed 000 observation 1 (§4.1, Fig. 2(d))"
    claim = "Utilization does not rise with model depth (FC layer count)"
    rule = "holds unless the 95% CI of w(layers) for FC is above 0"
    if not len(data.runs) or not (data.runs["family"] == "fc").any():
        return Finding(fid, claim, src, NO_DATA, _no_runs(data, "fc"), rule)
    s = sensitivity(data, "fc", UTIL)
    if s.reason or s.weight("layers") is None:
        return Finding(fid, claim, src, NO_DATA, s.reason or s.excluded.get("layers", ""), rule)
    row = s.table[s.table["hyperparameter"] == "layers"].iloc[0]
    return Finding(fid, claim, src, FAILS if row.ci_low > 0 else HOLDS, _fmt_w(s, "layers"), rule)


def _precision_speedups(data: Data):
    """(comparison of 16-bit over fp32, geomean speedup per family), or why there is none."""
    if not len(data.runs):
        return "no runs"
    have = set(values(data, "precision"))
    low = next((p for p in ("bf16", "fp16") if p in have), None)
    if "fp32" not in have or low is None:
        have_s = ", ".join(sorted(have)) or "none"
        return f"precisions with ok runs: {have_s} (need fp32 and bf16 or fp16)"
    c = compare(data, "precision", "fp32", low, include_noisy=True)  # evaluate chose
    if not len(c.pairs):
        return f"no config ran ok in both fp32 and {low}"
    return c, {f: geomean(g["speedup"]) for f, g in c.pairs.groupby("family")}


def precision_helps(data: Data) -> Finding:
    fid, src = "precision-helps", "seed 000 observation 13 (§6, Fig. 12)"
    claim = "16-bit precision (bf16/fp16) trains faster than fp32"
    rule = "holds when the geometric-mean speedup over matched configs is above 1"
    found = _precision_speedups(data)
    if isinstance(found, str):
        return Finding(fid, claim, src, NO_DATA, found, rule)
    c, per_family = found
    g = c.overall()
    ev = f"{c.b} over fp32: geomean {g['geomean']:.2f}× over {g['n']} configs, " + ", ".join(
        f"{f} {v:.2f}×" for f, v in per_family.items()
    )
    return Finding(fid, claim, src, HOLDS if g["geomean"] > 1 else FAILS, ev, rule)


def precision_cnn_over_rnn(data: Data) -> Finding:
    fid, src = "precision-cnn-over-rnn", "seed 002 §4.2.2 (Table 1, Figures 10, 12, 13)"
    claim = "Mixed precision helps CNNs more than recurrent (NLP) models"
    rule = "holds when the CNN geometric-mean 16-bit speedup exceeds the RNN one"
    found = _precision_speedups(data)
    if isinstance(found, str):
        return Finding(fid, claim, src, NO_DATA, found, rule)
    c, sp = found
    if "cnn" not in sp or "rnn" not in sp:
        why = "need matched fp32/16-bit runs of cnn and rnn"
        return Finding(fid, claim, src, NO_DATA, why, rule)
    ev = f"cnn {sp['cnn']:.2f}× vs rnn {sp['rnn']:.2f}× ({c.b} over fp32)"
    return Finding(fid, claim, src, HOLDS if sp["cnn"] > sp["rnn"] else FAILS, ev, rule)


def larger_ops_faster(data: Data) -> Finding:
    fid, src = "larger-ops-faster", "seed 002 §4.1.2 (Table 1, Table 4, Figure 7)"
    claim = "Larger op shapes reach higher throughput"
    rule = (
        "holds when, within each op/precision/pass/device, the Spearman correlation of "
        "FLOPs and achieved FLOP/s is positive in the majority of groups"
    )
    ops = data.ops
    if not len(ops):
        return Finding(fid, claim, src, NO_DATA, "no op benchmarks (run `paradnn ops`)", rule)
    ok = ops[(ops["status"] == "ok") & ops["achieved_flops"].notna()]
    if "threads" in ok:  # one thread count per group: the most common one
        ok = ok[ok["threads"].isna() | (ok["threads"] == ok["threads"].mode().iloc[0])]
    rhos = []
    for _, g in ok.groupby(["op", "precision", "pass", "device_name"]):
        g = g.groupby("name")[["flops", "achieved_flops"]].median()
        if len(g) >= 3:
            rhos.append(_spearman(g["flops"], g["achieved_flops"])[0])
    if not rhos:
        return Finding(fid, claim, src, NO_DATA, "fewer than 3 shapes per op group", rule)
    pos = sum(r > 0 for r in rhos)
    ev = f"ρ > 0 in {pos}/{len(rhos)} groups (median ρ = {pd.Series(rhos).median():+.2f})"
    return Finding(fid, claim, src, HOLDS if pos > len(rhos) / 2 else FAILS, ev, rule)


def threads_sublinear(data: Data) -> Finding:
    fid, src = "threads-sublinear", "seed 002 §4.1.1 (Figures 5-6), §4.2.1 (Figure 9)"
    # The seed finds matmul scaling almost linear up to the physical cores (§4.1.1) and
    # end-to-end training 10-95% faster per doubling of threads (§4.2.1); this tests the ops.
    claim = "CPU op throughput scales sub-linearly with threads"
    rule = "holds when the median parallel efficiency at the largest thread count is below 0.95"
    ts = thread_scaling(data)
    if not len(ts):
        return Finding(
            fid,
            claim,
            src,
            NO_DATA,
            "no op runs at two thread counts (run `paradnn ops --thread-sweep`)",
            rule,
        )
    top = ts[ts["threads"] == ts.groupby("name")["threads"].transform("max")]
    eff = float(top["efficiency"].median())
    t = int(top["threads"].max())
    ev = f"median efficiency {eff:.2f} at {t} threads over {len(top)} ops"
    return Finding(fid, claim, src, HOLDS if eff < 0.95 else FAILS, ev, rule)


def memory_bound_share(data: Data) -> Finding:
    fid, src = "memory-bound", "seed 000 observation 2 (§4.2, Fig. 3)"
    claim = "Many FC and CNN workloads are memory-bandwidth bound"
    rule = (
        "holds when at least a quarter of FC/CNN runs have an analytic intensity left of the "
        "ridge point of their platform's measured roof (datasheet roof if none)"
    )
    pts = model_points(data)
    pts = pts[pts["family"].isin(["fc", "cnn"])]
    if not len(pts):
        return Finding(fid, claim, src, NO_DATA, "no ok fc/cnn runs with FLOP counts", rule)
    left, total, used = 0, 0, set()
    for (plat, prec), g in pts.groupby(["platform", "precision"]):
        rs = {r.kind: r for r in roofs(data, plat, prec) if r.ridge}
        roof = rs.get("measured") or rs.get("datasheet")
        if roof is None:
            continue
        used.add(f"{roof.kind} ridge {number(roof.ridge)} FLOP/B on {plat} {prec}")
        left += int((g["intensity"] < roof.ridge).sum())
        total += len(g)
    if not total:
        return Finding(
            fid,
            claim,
            src,
            NO_DATA,
            "no roof with both FLOP/s and bandwidth (run `paradnn calibrate`)",
            rule,
        )
    ev = f"{left}/{total} runs below the ridge ({'; '.join(sorted(used))})"
    return Finding(fid, claim, src, HOLDS if left / total >= 0.25 else FAILS, ev, rule)


def _two_platforms(data: Data) -> tuple[str, str] | None:
    plats = values(data, "platform")
    return (plats[0], plats[1]) if len(plats) >= 2 else None


def speedup_grows_with_batch(data: Data) -> Finding:
    fid, src = (
        "speedup-batch",
        "seed 000 observation 7 (§5.1, Fig. 8(b); generalized to any two platforms)",
    )
    claim = "The faster platform's advantage grows with batch size"
    rule = (
        "holds when the Spearman correlation of batch size and the speedup of the second "
        "platform over the first, over matched configs, is positive with p < 0.05"
    )
    pair = _two_platforms(data)
    if pair is None:
        return Finding(fid, claim, src, UNTESTABLE, "one platform in the data", rule)
    c = compare(data, "platform", *pair, include_noisy=True)
    if len(c.pairs) < 8 or "batch" not in c.pairs:
        return Finding(fid, claim, src, NO_DATA, f"{len(c.pairs)} matched configs", rule)
    rho, p = _spearman(c.pairs["batch"], c.pairs["speedup"])
    ev = f"{pair[1]} over {pair[0]}: ρ = {rho:+.2f} (p = {p:.2g}) over {len(c.pairs)} configs"
    holds = rho > 0 and p < 0.05
    return Finding(fid, claim, src, HOLDS if holds else FAILS, ev, rule)


def largest_fc_prefer_cpu(data: Data) -> Finding:
    fid, src = "largest-fc-cpu", "seed 000 observation 6 (§5.1, Fig. 7)"
    claim = "The largest FC models run only on the CPU (accelerator memory is too small)"
    rule = "holds when FC configs that ran ok on the CPU failed out of memory on an accelerator"
    runs = choose(data.runs)
    if not len(runs):
        return Finding(fid, claim, src, NO_DATA, "no runs", rule)
    fc = runs[runs["family"] == "fc"]
    cpu, acc = fc[fc["device"] == "cpu"], fc[fc["device"] != "cpu"]
    if not len(cpu) or not len(acc):
        return Finding(
            fid, claim, src, UNTESTABLE, "needs FC runs on a CPU and an accelerator", rule
        )
    ok_cpu = set(cpu[cpu["status"] == "ok"]["config_key"])
    oom = acc[acc["status"].isin(["oom", "predicted_oom"])]
    both = oom[oom["config_key"].isin(ok_cpu)]
    ev = f"{both['config_key'].nunique()} FC configs ok on CPU and out of memory on an accelerator"
    return Finding(fid, claim, src, HOLDS if len(both) else FAILS, ev, rule)


def _platform_pairs(data: Data, family: str, fid: str, claim: str, src: str, rule: str):
    """(matched pairs of `family` oriented faster-over-slower, faster, slower) or a Finding that
    says why there are none. The faster platform is the one with the higher geometric-mean
    examples/s over the family's matched configs (the paper's TPU, generalized)."""
    pair = _two_platforms(data)
    if pair is None:
        return Finding(fid, claim, src, UNTESTABLE, "one platform in the data", rule)
    c = compare(data, "platform", *pair, include_noisy=True)
    p = c.pairs[c.pairs["family"] == family] if len(c.pairs) else c.pairs
    if len(p) < 8:
        return Finding(
            fid, claim, src, NO_DATA, f"{len(p)} matched {family} configs (need 8)", rule
        )
    g = geomean(p["speedup"])
    if g is not None and g < 1:
        p = p.assign(speedup=1 / p["speedup"])
        return p, pair[0], pair[1]
    return p, pair[1], pair[0]


def fc_size_decides_platform(data: Data) -> Finding:
    fid, src = "fc-size-platform", "seed 000 observation 8 (§5.1, Fig. 8; generalized)"
    claim = "Smaller and larger FC models prefer different platforms (TPU vs GPU in the paper)"
    rule = (
        "holds when, over matched FC configs on two platforms, the Spearman correlation of "
        "parameters and speedup has p < 0.05 and the geometric-mean speedups of the smallest "
        "and the largest third of the models lie on opposite sides of 1"
    )
    got = _platform_pairs(data, "fc", fid, claim, src, rule)
    if isinstance(got, Finding):
        return got
    p, fast, slow = got
    p = p[p["params"].notna()].sort_values("params")
    rho, pv = _spearman(p["params"], p["speedup"])
    k = max(1, len(p) // 3)
    small, large = geomean(p["speedup"].iloc[:k]), geomean(p["speedup"].iloc[-k:])
    ev = (
        f"{fast} over {slow}: ρ(params, speedup) = {rho:+.2f} (p = {pv:.2g}) over {len(p)} "
        f"configs; smallest third {small:.2f}×, largest third {large:.2f}×"
    )
    holds = pv < 0.05 and (small - 1) * (large - 1) < 0
    return Finding(fid, claim, src, HOLDS if holds else FAILS, ev, rule)


def cnn_speedup_grows_with_size(data: Data) -> Finding:
    fid, src = "cnn-size-speedup", "seed 000 observation 9 (§5.2, Fig. 10(a)-(c); generalized)"
    claim = "The faster platform's speedup grows with CNN size (TPU over GPU in the paper)"
    rule = (
        "holds when, over matched CNN configs on two platforms, the Spearman correlation of "
        "parameters and the speedup of the faster platform (higher geometric mean) is "
        "positive with p < 0.05"
    )
    got = _platform_pairs(data, "cnn", fid, claim, src, rule)
    if isinstance(got, Finding):
        return got
    p, fast, slow = got
    p = p[p["params"].notna()]
    rho, pv = _spearman(p["params"], p["speedup"])
    ev = f"{fast} over {slow}: ρ(params, speedup) = {rho:+.2f} (p = {pv:.2g}), {len(p)} configs"
    return Finding(fid, claim, src, HOLDS if rho > 0 and pv < 0.05 else FAILS, ev, rule)


def rnn_embed_favours_slower(data: Data) -> Finding:
    fid, src = "rnn-embed-platform", "seed 000 observation 11 (§5.2, Fig. 10(d)-(e); generalized)"
    claim = (
        "The slower platform scales better with RNN embedding size (GPU against TPU in the paper)"
    )
    rule = (
        "holds when, over matched RNN configs on two platforms, the Spearman correlation of "
        "the embedding size and the speedup of the faster platform (higher geometric mean) is "
        "negative with p < 0.05"
    )
    got = _platform_pairs(data, "rnn", fid, claim, src, rule)
    if isinstance(got, Finding):
        return got
    p, fast, slow = got
    if "embed" not in p or p["embed"].nunique() < 2:
        return Finding(fid, claim, src, NO_DATA, "matched RNN configs at one embedding size", rule)
    rho, pv = _spearman(p["embed"], p["speedup"])
    ev = f"{fast} over {slow}: ρ(embed, speedup) = {rho:+.2f} (p = {pv:.2g}), {len(p)} configs"
    return Finding(fid, claim, src, HOLDS if rho < 0 and pv < 0.05 else FAILS, ev, rule)


def software_versions(data: Data) -> Finding:
    fid, src = "software-updates", "seed 000 observations 12, 14 (§6, Fig. 12)"
    claim = "A newer software stack trains the same models faster"
    rule = "holds when the newest torch version's geometric-mean speedup over the oldest is > 1"
    versions = sorted(values(data, "torch_version"), key=version_key)
    if len(versions) < 2:
        return Finding(
            fid,
            claim,
            src,
            UNTESTABLE,
            f"one torch version in the data ({', '.join(versions) or 'none'})",
            rule,
        )
    c = compare(data, "torch_version", versions[0], versions[-1], include_noisy=True)
    if not len(c.pairs):
        return Finding(fid, claim, src, NO_DATA, "no config ran on both versions", rule)
    g = c.overall()
    ev = f"torch {versions[-1]} over {versions[0]}: {g['geomean']:.2f}× over {g['n']} configs"
    return Finding(fid, claim, src, HOLDS if g["geomean"] > 1 else FAILS, ev, rule)


# Findings no data paradnn can produce could test (TPU hardware, host-fed input, 1,024 chips):
# the report lists them apart, one line each, under a heading that says so.
NEVER_TESTABLE: set[str] = set()


def _untestable(fid: str, claim: str, source: str, why: str) -> Callable[[Data], Finding]:
    NEVER_TESTABLE.add(fid)  # a study's module that replaces the check takes it out
    check = partial(_untestable_finding, fid, claim, source, why)
    check.finding_id = fid  # type: ignore[attr-defined]  # a study's module may replace it
    return check


def _untestable_finding(fid: str, claim: str, source: str, why: str, data: Data) -> Finding:
    # Built when the check runs, not when CHECKS is (import time): so a test sees it.
    return Finding(fid, claim, source, UNTESTABLE, why, "needs data paradnn lacks")


NO_TPU = "no TPU in the data: paradnn measures PyTorch devices (CPU, CUDA)"
CHECKS: list[Callable[[Data], Finding]] = [
    lambda d: _rising(
        d,
        "fc",
        "batch",
        "fc-batch",
        "FC utilization rises with batch size",
        "seed 000 §4.1, Fig. 2(a)",
    ),
    lambda d: _rising(
        d,
        "cnn",
        "batch",
        "cnn-batch",
        "CNN utilization rises with batch size",
        "seed 000 §4.1, Fig. 2(b)",
    ),
    lambda d: _rising(
        d,
        "rnn",
        "batch",
        "rnn-batch",
        "RNN utilization rises with batch size",
        "seed 000 §4.1, Fig. 2(c)",
    ),
    fc_width_over_depth,
    depth_unexploited,
    lambda d: _rising(
        d,
        "fc",
        "nodes",
        "fc-nodes",
        "FC utilization rises with nodes per layer",
        "seed 000 §4.1, Fig. 2(a)",
    ),
    lambda d: _rising(
        d,
        "cnn",
        "filters",
        "cnn-filters",
        "CNN utilization rises with filters",
        "seed 000 §4.1, Fig. 2(b)",
    ),
    lambda d: _rising(
        d,
        "rnn",
        "embed",
        "rnn-embed",
        "RNN utilization rises with embedding size",
        "seed 000 §4.1, Fig. 2(c)",
    ),
    memory_bound_share,
    precision_helps,
    precision_cnn_over_rnn,
    larger_ops_faster,
    threads_sublinear,
    speedup_grows_with_batch,
    fc_size_decides_platform,
    cnn_speedup_grows_with_size,
    rnn_embed_favours_slower,
    largest_fc_prefer_cpu,
    software_versions,
    lambda d: Finding("multi-chip", OBS3_CLAIM, OBS3_SOURCE, *observation3(d)),
    _untestable(
        "infeed",
        "Improving data infeed speeds training by ≥ 34%",
        "seed 000 observation 4 (§4.4, Fig. 5)",
        "no host-fed runs in the data",
    ),
    _untestable(
        "tpu-v3",
        "TPU v3 speeds up memory-bound ops by 3× over v2",
        "seed 000 observation 5 (§4.5, Fig. 6)",
        NO_TPU,
    ),
    _untestable(
        "tpu-vs-gpu",
        "TPU reaches 2× (CNN) and 3× (RNN) the GPU's utilization",
        "seed 000 observation 10 (§5.3, Fig. 11)",
        NO_TPU,
    ),
    _untestable(
        "torus",
        "All-reduce over a 2D torus scales to 1,024 chips",
        "seed 001, Figure 7 and the scaling summary (96-99% of linear at 1,024 chips)",
        "measured data covers one device; see `paradnn simulate`",
    ),
]


def evaluate(data: Data, include_noisy: bool = False) -> list[Finding]:
    """Every finding's verdict; runs flagged noisy are left out unless `include_noisy`."""
    if not include_noisy:
        data = without_noisy(data)[0]
    return [check(data) for check in CHECKS]


def as_frame(findings: list[Finding]) -> pd.DataFrame:
    return pd.DataFrame([f.__dict__ for f in findings])


__all__ = ["Finding", "as_frame", "default_metric", "evaluate"]
