"""The seeds' observations, each tested against the data at hand with a stated rule.

A verdict is `holds` or `does not hold` only when the 95% interval of the number it is decided
on lies wholly on one side of the rule's threshold; `inconclusive` when the interval straddles
it (the finding then says how much more data would decide it); `not enough data` (the data could
answer but has too few runs, or the wrong slice) or `untestable` (the data lacks the hardware or
the kind of run the observation is about: a TPU, several chips, host-fed input). Nothing is
guessed: every verdict carries the number it was decided on, its interval and the rule that
decided it, and every citation a phrase of the seed it cites (`QUOTES`, checked against the
seed text by tests/test_findings_quotes.py). A finding over two groups (platforms) names the
faster one from the data, never from which group has more runs or comes first.

No verdict or wording hinges on a float's last bit (paradnn.rounding): an interval's end within
rounding of the threshold counts as on it (the rule's "at or below" then decides), an estimate
within rounding of its threshold is inconclusive like any straddling one with the ordinary
wording of what would decide it, and a residue of rounding next to zero reads 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from paradnn import formatting as U
from paradnn import rounding
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
from paradnn.analysis.scaling import (
    OBS3_CLAIM,
    OBS3_SOURCE,
    SERIAL_THRESHOLD,
    observation3_result,
)
from paradnn.analysis.speedup import compare, geomean, values, version_key
from paradnn.analysis.summaries import thread_scaling
from paradnn.formatting import number
from paradnn.records import Status

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
INCONCLUSIVE = "inconclusive"  # the statistic's interval straddles the rule's threshold
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NO_DATA, UNTESTABLE)
# Within one platform and precision utilization is achieved FLOP/s over a constant, so their
# standardized regression weights are equal; achieved FLOP/s needs no calibration or datasheet.
UTIL = "achieved_flops"
LEVEL = 0.95
Z = 1.959963984540054  # the normal quantile of a two-sided 95% interval
# Fieller, Hartley and Pearson (1957): the variance of atanh(Spearman's ρ) is about 1.06/(n − 3)
SPEARMAN_VAR = 1.06
# The scale a statistic is read at next to zero (paradnn.rounding): every number a finding is
# decided on is dimensionless and of order 1 (weights of z-scored axes, ρ, speedups, shares,
# Karp–Flatt fractions), so within 1e-9 of zero it is a residue of rounding, not a value.
SCALE = 1.0


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    source: str  # seed and section
    verdict: str
    evidence: str  # the number behind the verdict
    rule: str  # how the verdict was decided
    statistic: str = ""  # what the verdict was decided on
    estimate: float | None = None
    ci_low: float | None = None  # its 95% interval
    ci_high: float | None = None
    threshold: float | None = None  # the rule's threshold the interval is placed against
    decide: str = ""  # for an inconclusive verdict: what more data would decide it
    interval_note: str = ""  # an interval that is not one number's (two groups, a count)
    # what the verdict rests on: "measured", or (report --what-if, analysis/whatif.py)
    # "measured vs predicted" / "predicted vs predicted"
    basis: str = "measured"

    @property
    def quote(self) -> str:
        """A phrase of the cited seed the claim rests on (QUOTES; checked by a test)."""
        return " … ".join(QUOTES.get(self.id, ()))

    @property
    def interval(self) -> str:
        """'1.19 [0.95, 1.40] vs 1' — the statistic, its 95% interval and the threshold."""
        if self.interval_note:
            return self.interval_note
        if self.estimate is None:
            return ""
        within = (self.ci_low, self.ci_high, self.threshold, SCALE)  # a residue reads 0
        ci = (
            f" [{_g(self.ci_low, *within)}, {_g(self.ci_high, *within)}]"
            if _finite(self.ci_low, self.ci_high)
            else " [no interval]"
        )
        vs = f" vs {_g(self.threshold)}" if self.threshold is not None else ""
        return f"{self.statistic} {_g(self.estimate, *within)}{ci}{vs}".strip()


def _g(x: float | None, *within: float | None) -> str:
    """3 significant digits (thousands in full); `within`: the numbers it is shown beside, so
    a residue of rounding next to zero reads 0 (units.number)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return U.number(x, scale=within) if abs(U.shown(x)) < 1000 else f"{x:,.0f}"


def _finite(*xs) -> bool:
    return all(x is not None and not pd.isna(x) and math.isfinite(float(x)) for x in xs)


def judge(
    lo: float | None, hi: float | None, threshold: float, op: str, scale: float = SCALE
) -> str:
    """Three-way verdict of a claim `statistic <op> threshold` from the statistic's interval:
    holds when the whole interval satisfies the claim, does not hold when none of it does,
    inconclusive when it straddles the threshold (or there is no interval). An end within
    rounding of the threshold (paradnn.rounding, relative to the interval, the threshold and
    the statistic's `scale`) counts as on it, so a last-bit difference never turns a verdict."""
    if not _finite(lo, hi):
        return INCONCLUSIVE
    t = threshold
    lo, hi = (rounding.snap(x, t, lo, hi, t, scale) for x in (lo, hi))  # type: ignore[arg-type]
    if op == ">":
        return HOLDS if lo > t else FAILS if hi <= t else INCONCLUSIVE
    if op == ">=":
        return HOLDS if lo >= t else FAILS if hi < t else INCONCLUSIVE
    if op == "<":
        return HOLDS if hi < t else FAILS if lo >= t else INCONCLUSIVE
    if op == "<=":
        return HOLDS if hi <= t else FAILS if lo > t else INCONCLUSIVE
    raise ValueError(op)


# More data than this many times the present amount is not estimated: the estimate lies within
# a tenth of its interval's half-width of the threshold (or on it, within rounding), where the
# estimate would be a number of no use (10^35 runs) that swings with the estimate's last bit.
MORE_CAP = 100


def more_data(n: int, est, lo, hi, threshold: float, unit: str, log: bool = False) -> str:
    """How many `unit`s would put the interval on one side of the threshold, if the spread
    stays as it is (an interval's half-width shrinks as 1/√n): n·(half-width / distance)²;
    "more than" MORE_CAP·n when that is more (an estimate on the threshold, within rounding,
    included: the same wording, never one reached only by exact equality)."""
    if not _finite(est, lo, hi) or n < 1:
        return f"an interval: {unit} with raw step-time samples, or more of them"
    f = (lambda x: math.log(x)) if log else (lambda x: x)
    if log and min(est, lo, hi, threshold) <= 0:
        return f"more {unit}"
    e, t = f(est), f(threshold)
    half = (e - f(lo)) if e > t else (f(hi) - e)
    dist = abs(e - t)
    cap = MORE_CAP * n
    # (a distance within rounding of the half-width's size is far below a tenth of it: the
    # last test takes it, so rounding is judged against the estimate and threshold alone)
    if half <= 0 or rounding.equal(dist, 0, e, t) or half > dist * math.sqrt(MORE_CAP):
        return f"more than {cap} {unit} (now {n}) if the spread stays as it is"
    need = max(n + 1, math.ceil(n * (half / dist) ** 2))
    return f"about {need} {unit} (now {n}) if the spread stays as it is"


def spearman_ci(x, y) -> tuple[float, float, float, int]:
    """(ρ, low, high, n): Spearman's ρ with a Fisher-z 95% interval (variance 1.06/(n − 3),
    Fieller et al. 1957); nan when a side is constant or n < 4. A perfect ranking (ρ = ±1)
    enters the interval as ±(1 − 1/n²), so its interval is finite and, like the exact
    permutation test (two-sided p = 1/12 at n = 4, 1/60 at n = 5), undecided at n = 4."""
    rho, _ = _spearman(x, y)
    n = int(min(len(x), len(y)))
    if not math.isfinite(rho) or n < 4:
        return rho, math.nan, math.nan, n
    z = math.atanh(_clip(rho, n))
    half = Z * math.sqrt(SPEARMAN_VAR / (n - 3))
    return rho, math.tanh(z - half), math.tanh(z + half), n


def _clip(rho: float, n: int) -> float:
    top = 1 - 1 / n**2
    return max(-top, min(top, rho))


def _rho_more(n: int, rho: float, threshold: float = 0.0) -> str:
    """Configs at which a ρ this far from the threshold gets a Fisher-z interval off it."""
    if not math.isfinite(rho):
        return "configs whose speedups differ (ρ is undefined on constant values)"
    dist = abs(math.atanh(_clip(rho, max(n, 4))) - math.atanh(threshold))
    cap = MORE_CAP * max(n, 1)
    if rounding.equal(dist, 0, 1.0) or 3 + SPEARMAN_VAR * (Z / dist) ** 2 > cap:
        return f"more than {cap} matched configs (now {n}) at this ρ"
    need = max(n + 1, math.ceil(3 + SPEARMAN_VAR * (Z / dist) ** 2))
    return f"about {need} matched configs (now {n}) at this ρ"


def share_ci(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson (exact) 95% interval of a share k/n."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(LEVEL, method="exact")
    return float(ci.low), float(ci.high)


def median_ci(x) -> tuple[float, float, float]:
    """(median, low, high): the distribution-free 95% interval of a median from the order
    statistics (binomial, p = ½); nan ends with fewer than 6 values (none exists)."""
    from scipy.stats import binom

    v = np.sort(np.asarray(pd.to_numeric(pd.Series(x), errors="coerce").dropna(), float))
    n = len(v)
    med = float(np.median(v)) if n else math.nan
    k = 0  # the largest k with P(B ≤ k − 1) ≤ 2.5%: the interval is ranks k … n − k + 1
    while k < n and binom.cdf(k, n, 0.5) <= (1 - LEVEL) / 2:
        k += 1
    if k < 1:
        return med, math.nan, math.nan
    return med, float(v[k - 1]), float(v[n - k])


def decided(fid, claim, src, rule, ev, statistic, est, lo, hi, t, op, more) -> Finding:
    """A Finding decided by `judge`; `more` (text, or a callable giving it) only when
    inconclusive."""
    v = judge(lo, hi, t, op)
    decide = ""
    if v == INCONCLUSIVE:
        decide = more() if callable(more) else more
        if _finite(lo, hi):
            ends = (_g(x, lo, hi, t, SCALE) for x in (lo, hi))
            ev += "; the 95% interval [{}, {}] straddles {}".format(*ends, _g(t))
    return Finding(
        fid,
        claim,
        src,
        v,
        ev,
        rule,
        statistic=statistic,
        estimate=None if est is None or pd.isna(est) else float(est),
        ci_low=float(lo) if _finite(lo) else None,
        ci_high=float(hi) if _finite(hi) else None,
        threshold=t,
        decide=decide,
    )


def _fmt_w(s, hp: str) -> str:
    row = s.table[s.table["hyperparameter"] == hp].iloc[0]
    w, lo, hi = (U.signed(x) for x in (row.weight, row.ci_low, row.ci_high))
    return f"w({hp}) = {w} [{lo}, {hi}]"


def _w_row(s, hp: str):
    return s.table[s.table["hyperparameter"] == hp].iloc[0]


def _rising(data: Data, family: str, hp: str, fid: str, claim: str, source: str) -> Finding:
    rule = (
        f"holds when the 95% CI of the standardized regression weight of {hp} is above 0, "
        "does not hold when it is at or below 0, inconclusive when it straddles 0"
    )
    fam_runs = data.runs[data.runs["family"] == family] if len(data.runs) else data.runs
    if not len(fam_runs):
        return Finding(fid, claim, source, NO_DATA, _no_runs(data, family), rule)
    s = sensitivity(data, family, UTIL)
    if s.reason or s.weight(hp) is None:
        why = s.reason or s.excluded.get(hp, f"{hp} not in the fit")
        metric = METRICS.get(s.metric, s.metric)
        return Finding(fid, claim, source, NO_DATA, f"{family} {metric}: {why}", rule)
    row = _w_row(s, hp)
    ev = f"{_fmt_w(s, hp)} on {METRICS.get(s.metric, s.metric)}, n = {s.n} ({_where(s.where)})"
    more = partial(more_data, s.n, row.weight, row.ci_low, row.ci_high, 0.0, "runs")
    return decided(
        fid, claim, source, rule, ev, f"w({hp})", row.weight, row.ci_low, row.ci_high, 0.0,
        ">", more,
    )  # fmt: skip


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


def _abs_ci(lo: float, hi: float) -> tuple[float, float]:
    """The interval of |w| from the interval of w."""
    if lo >= 0:
        return lo, hi
    if hi <= 0:
        return -hi, -lo
    return 0.0, max(-lo, hi)


def fc_width_over_depth(data: Data) -> Finding:
    fid, src = "fc-width-over-depth", "seed 000 §4.1, Fig. 2(d)"
    claim = "FC utilization is driven by batch size and nodes more than by layers"
    rule = (
        "holds when min(|w(batch)|, |w(nodes)|) − |w(layers)| is above 0 over its whole "
        "interval (interval arithmetic on the three weights' 95% CIs: conservative), does not "
        "hold when it is at or below 0, inconclusive when it straddles 0"
    )
    if not len(data.runs) or not (data.runs["family"] == "fc").any():
        return Finding(fid, claim, src, NO_DATA, _no_runs(data, "fc"), rule)
    s = sensitivity(data, "fc", UTIL)
    ws = {h: s.weight(h) for h in ("batch", "nodes", "layers")}
    missing = [h for h, w in ws.items() if w is None]
    if s.reason or missing:
        why = s.reason or "; ".join(f"{h}: {s.excluded.get(h, 'not fitted')}" for h in missing)
        return Finding(fid, claim, src, NO_DATA, why, rule)
    ab = {h: _abs_ci(_w_row(s, h).ci_low, _w_row(s, h).ci_high) for h in ws}
    est = min(abs(ws["batch"]), abs(ws["nodes"])) - abs(ws["layers"])
    lo = min(ab["batch"][0], ab["nodes"][0]) - ab["layers"][1]
    hi = min(ab["batch"][1], ab["nodes"][1]) - ab["layers"][0]
    ev = ", ".join(_fmt_w(s, h) for h in ws) + f", n = {s.n}"
    more = partial(more_data, s.n, est, lo, hi, 0.0, "runs")
    stat = "min(|w(batch)|, |w(nodes)|) − |w(layers)|"
    return decided(fid, claim, src, rule, ev, stat, est, lo, hi, 0.0, ">", more)


def depth_unexploited(data: Data) -> Finding:
    fid, src = "depth-unexploited", "seed 000 observation 1 (§4.1, Fig. 2(d))"
    claim = "Utilization does not rise with model depth (FC layer count)"
    rule = (
        "holds when the 95% CI of w(layers) for FC is at or below 0, does not hold when it is "
        "above 0, inconclusive when it straddles 0 (no effect either way cannot be told from a "
        "small one)"
    )
    if not len(data.runs) or not (data.runs["family"] == "fc").any():
        return Finding(fid, claim, src, NO_DATA, _no_runs(data, "fc"), rule)
    s = sensitivity(data, "fc", UTIL)
    if s.reason or s.weight("layers") is None:
        return Finding(fid, claim, src, NO_DATA, s.reason or s.excluded.get("layers", ""), rule)
    row = _w_row(s, "layers")
    more = partial(more_data, s.n, row.weight, row.ci_low, row.ci_high, 0.0, "runs")
    return decided(
        fid, claim, src, rule, _fmt_w(s, "layers") + f", n = {s.n}", "w(layers)", row.weight,
        row.ci_low, row.ci_high, 0.0, "<=", more,
    )  # fmt: skip


def _precision_speedups(data: Data):
    """(comparison of 16-bit over fp32, its per-family summary), or why there is none."""
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
    return c, c.summary[c.summary["family"] != "all"].set_index("family")


def _geo(g) -> str:
    lo, hi = g.get("geomean_ci_low"), g.get("geomean_ci_high")
    ci = f" [{lo:.2f}, {hi:.2f}]" if _finite(lo, hi) else " [no interval]"
    return f"{g['geomean']:.2f}×{ci}"


def _geomean_finding(fid, claim, src, rule, ev, c, t, op="geomean speedup", cmp=">") -> Finding:
    g = c.overall()
    lo, hi, n = g.get("geomean_ci_low"), g.get("geomean_ci_high"), int(g["n"])
    more = partial(geomean_more, n, g["geomean"], lo, hi, t)
    return decided(fid, claim, src, rule, ev, op, g["geomean"], lo, hi, t, cmp, more)


def geomean_more(n, est, lo, hi, t) -> str:
    return (
        more_data(n, est, lo, hi, t, "matched configs", log=True)
        + "; longer runs (more timed steps) narrow each config's own interval"
    )


GEO_RULE = (
    "(its two-level bootstrap 95% CI: configs and each config's step-time samples), does not "
    "hold when the CI lies at or below {t}, inconclusive when it straddles {t}"
)


def precision_helps(data: Data) -> Finding:
    fid, src = "precision-helps", "seed 000 observation 13 (§6, Fig. 12)"
    claim = "16-bit precision (bf16/fp16) trains faster than fp32"
    rule = (
        "holds when the geometric-mean speedup over matched configs lies above 1 "
        + GEO_RULE.format(t=1)
    )
    found = _precision_speedups(data)
    if isinstance(found, str):
        return Finding(fid, claim, src, NO_DATA, found, rule)
    c, per_family = found
    g = c.overall()
    ev = f"{c.b} over fp32: geomean {_geo(g)} over {g['n']} configs, " + ", ".join(
        f"{f} {r.geomean:.2f}×" for f, r in per_family.iterrows()
    )
    return _geomean_finding(fid, claim, src, rule, ev, c, 1.0)


def precision_cnn_over_rnn(data: Data) -> Finding:
    fid, src = "precision-cnn-over-rnn", "seed 002 §4.2.2 (Table 1, Figures 10, 12, 13)"
    claim = "Mixed precision helps CNNs more than recurrent (NLP) models"
    rule = (
        "holds when the CNN geometric-mean 16-bit speedup over the RNN one lies above 1 over "
        "its whole interval (the two families' bootstrap 95% CIs divided end by end: "
        "conservative), does not hold when at or below 1, inconclusive when it straddles 1"
    )
    found = _precision_speedups(data)
    if isinstance(found, str):
        return Finding(fid, claim, src, NO_DATA, found, rule)
    c, sp = found
    if "cnn" not in sp.index or "rnn" not in sp.index:
        why = "need matched fp32/16-bit runs of cnn and rnn"
        return Finding(fid, claim, src, NO_DATA, why, rule)
    cnn, rnn = sp.loc["cnn"], sp.loc["rnn"]
    est = cnn.geomean / rnn.geomean
    lo = cnn.geomean_ci_low / rnn.geomean_ci_high
    hi = cnn.geomean_ci_high / rnn.geomean_ci_low
    ev = f"cnn {_geo(cnn)} vs rnn {_geo(rnn)} ({c.b} over fp32): ratio {est:.2f}×"
    n = int(min(cnn.n, rnn.n))
    more = partial(geomean_more, n, est, lo, hi, 1.0)
    return decided(fid, claim, src, rule, ev, "cnn / rnn speedup", est, lo, hi, 1.0, ">", more)


def larger_ops_faster(data: Data) -> Finding:
    fid, src = (
        "larger-ops-faster",
        "seed 002 §4.1.2 (Table 1, Table 4, Figure 7; on accelerators, generalized to any device)",
    )
    claim = "Larger op shapes reach higher throughput"
    rule = (
        "holds when Spearman's ρ between FLOPs and achieved FLOP/s, ranked within each "
        "op/precision/pass/device group (≥ 3 shapes) and pooled, has a Fisher-z 95% CI above "
        "0; does not hold when the CI is at or below 0; inconclusive when it straddles 0"
    )
    ops = data.ops
    if not len(ops):
        return Finding(fid, claim, src, NO_DATA, "no op benchmarks (run `paradnn ops`)", rule)
    ok = ops[(ops["status"] == Status.OK) & ops["achieved_flops"].notna()]
    if "threads" in ok:  # one thread count per group: the most common one
        ok = ok[ok["threads"].isna() | (ok["threads"] == ok["threads"].mode().iloc[0])]
    ranked, rhos = [], []
    for _, g in ok.groupby(["op", "precision", "pass", "device_name"]):
        g = g.groupby("name")[["flops", "achieved_flops"]].median()
        if len(g) >= 3:
            ranked.append(g.rank())
            rhos.append(_spearman(g["flops"], g["achieved_flops"])[0])
    if not ranked:
        return Finding(fid, claim, src, NO_DATA, "fewer than 3 shapes per op group", rule)
    both = pd.concat(ranked)
    rho, lo, hi, n = spearman_ci(both["flops"], both["achieved_flops"])
    pos = sum(rounding.above(r, 0.0, 1.0) for r in rhos)  # ρ's scale: 1
    ev = (
        f"pooled ρ = {U.signed(rho)} over {n} shapes in {len(rhos)} groups; ρ > 0 in "
        f"{pos}/{len(rhos)} groups"
    )
    more = partial(_rho_more, n, rho)
    return decided(fid, claim, src, rule, ev, "pooled ρ", rho, lo, hi, 0.0, ">", more)


THREAD_GAIN = 1.9  # seed 002 §4.2.1: "around 90%-100% with the doubled number of threads"


def threads_linear(data: Data) -> Finding:
    fid, src = "threads-matmul", "seed 002 §4.1.1 (Figure 5), §4.2.1"
    claim = (
        "CPU matmul throughput scales almost linearly with threads: about 1.9-2× per doubling "
        "(up to the physical cores)"
    )
    rule = (
        "over matmul op benchmarks at several thread counts: each op's speedup per doubling of "
        "threads at its largest count, speedup^(1/log2(threads ratio)); holds when the 95% "
        "order-statistic CI of their median lies at or above 1.9 (the seed's 90% gain per "
        "doubling), does not hold when below, inconclusive when it straddles 1.9 or there are "
        "fewer than 6 ops (no such interval)"
    )
    ops = data.ops
    if len(ops) and "op" in ops:
        import dataclasses

        data = dataclasses.replace(data, ops=ops[ops["op"] == "matmul"])
    ts = thread_scaling(data)
    if not len(ts):
        why = "no matmul op runs at two thread counts (run `paradnn ops --thread-sweep`)"
        return Finding(fid, claim, src, NO_DATA, why, rule)
    top = ts[ts["threads"] == ts.groupby("name")["threads"].transform("max")]
    doublings = np.log2(top["threads"] / top["base_threads"])
    per = top["speedup"] ** (1 / doublings)
    med, lo, hi = median_ci(per)
    t = int(top["threads"].max())
    ev = (
        f"median speedup per doubling {med:.2f}× over {len(top)} ops (largest count {t} "
        f"threads; median efficiency there {top['efficiency'].median():.2f})"
    )
    more = partial(_median_more, len(per), med, lo, hi, THREAD_GAIN)
    stat = "median speedup per doubling"
    return decided(fid, claim, src, rule, ev, stat, med, lo, hi, THREAD_GAIN, ">=", more)


def _median_more(n, est, lo, hi, t) -> str:
    if n < 6:
        return f"at least 6 ops at several thread counts (now {n}) for an interval of the median"
    return more_data(n, est, lo, hi, t, "ops")


MEMORY_SHARE = 0.25


def memory_bound_share(data: Data) -> Finding:
    fid, src = "memory-bound", "seed 000 observation 2 (§4.2, Fig. 3)"
    claim = "Many FC and CNN workloads are memory-bandwidth bound"
    rule = (
        "holds when the share of FC/CNN runs with an analytic intensity left of the ridge "
        "point of their platform's measured roof (datasheet roof if none) is at least a "
        "quarter over its whole Clopper-Pearson 95% interval (the runs as a sample of the "
        "space), does not hold when the interval lies below a quarter, inconclusive when it "
        "straddles it"
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
    lo, hi = share_ci(left, total)
    ev = f"{left}/{total} runs below the ridge ({'; '.join(sorted(used))})"
    more = partial(more_data, total, left / total, lo, hi, MEMORY_SHARE, "runs")
    return decided(
        fid, claim, src, rule, ev, "share below the ridge", left / total, lo, hi, MEMORY_SHARE,
        ">=", more,
    )  # fmt: skip


def _two_platforms(data: Data) -> tuple[str, str] | None:
    """The two platforms with the most ok runs, in name order (never by run count: which is
    faster is decided from the data by `_oriented`)."""
    plats = values(data, "platform")
    return tuple(sorted(plats[:2])) if len(plats) >= 2 else None  # type: ignore[return-value]


def _oriented(data: Data, family: str | None = None, cmp=None):
    """(matched pairs with `speedup` = faster over slower and its CI, faster, slower, the
    geomean summary of faster over slower) over the two platforms, or a reason string. The
    faster platform is the one with the higher geometric-mean examples/s over the matched
    configs (the paper's TPU, generalized). `cmp`: a ready comparison of two platforms (the
    what-if pairs of analysis/whatif.py) instead of the two measured ones."""
    pair = _two_platforms(data) if cmp is None else (cmp.a, cmp.b)
    if pair is None:
        return None
    c = compare(data, "platform", *pair, include_noisy=True) if cmp is None else cmp
    p = c.pairs
    if family is not None and len(p):
        p = p[p["family"] == family]
    g = geomean(p["speedup"]) if len(p) else None
    row = c.summary[c.summary["family"] == (family or "all")]
    s = row.iloc[0].to_dict() if len(row) else {}
    if g is not None and rounding.below(g, 1.0):  # within rounding of 1: the names' order
        p = p.assign(speedup=1 / p["speedup"], ci_low=1 / p["ci_high"], ci_high=1 / p["ci_low"])
        if s:
            s = s | {
                "geomean": 1 / s["geomean"],
                "geomean_ci_low": 1 / s["geomean_ci_high"],
                "geomean_ci_high": 1 / s["geomean_ci_low"],
            }
        return p, pair[0], pair[1], s
    return p, pair[1], pair[0], s


def _geomean_ends(p: pd.DataFrame) -> tuple[float, float]:
    """The geometric means of the pairs' interval ends: the interval of a geomean whose pairs
    all err the same way (conservative); nan when a pair has no finite positive end."""
    out = []
    for col in ("ci_low", "ci_high"):
        v = pd.to_numeric(p[col], errors="coerce").to_numpy(float)
        ok = len(v) and np.isfinite(v).all() and (v > 0).all()
        out.append(float(np.exp(np.log(v).mean())) if ok else math.nan)
    return out[0], out[1]


def _undecided_faster(s: dict) -> bool:
    """Whether the faster platform itself is undecided: the geomean's CI reaches 1."""
    lo = s.get("geomean_ci_low")
    return not _finite(lo) or not rounding.above(lo, 1.0)


def _rho_finding(fid, claim, src, rule, p, col, fast, slow, s, op) -> Finding:
    """A finding decided by the Fisher-z CI of ρ(col, speedup of the faster platform) against
    0; inconclusive whatever ρ when which platform is faster is itself undecided (the sign of
    ρ turns with the orientation)."""
    rho, lo, hi, n = spearman_ci(p[col], p["speedup"])
    ev = (
        f"{fast} over {slow} (geomean {_geo(s)}): ρ({col}, speedup) = {U.signed(rho)} "
        f"[{U.signed(lo)}, {U.signed(hi)}] over {n} configs"
    )
    if _undecided_faster(s):
        return Finding(
            fid, claim, src, INCONCLUSIVE, ev + "; which platform is faster is not decided",
            rule, statistic=f"ρ({col}, speedup)", estimate=rho,
            ci_low=lo if _finite(lo) else None, ci_high=hi if _finite(hi) else None,
            threshold=0.0,
            decide="which platform is faster: more matched configs or longer runs, until "
            "the geometric-mean speedup's CI excludes 1",
        )  # fmt: skip
    more = partial(_rho_more, n, rho)
    return decided(fid, claim, src, rule, ev, f"ρ({col}, speedup)", rho, lo, hi, 0.0, op, more)


RHO_RULE = (
    "the speedup of the faster platform (higher geometric-mean examples/s over the matched "
    "configs, whatever the groups' run counts or names) over the slower, over ≥ 8 matched "
    "configs: holds when the Fisher-z 95% CI of Spearman's ρ({x}, speedup) lies {side} 0, does "
    "not hold when it lies wholly on the other side (or touches 0), inconclusive when it "
    "straddles 0 or the geometric mean's CI reaches 1 (which platform is faster is undecided)"
)


def speedup_grows_with_batch(data: Data, cmp=None) -> Finding:
    fid, src = (
        "speedup-batch",
        "seed 000 observation 7 (§5.1, Fig. 8(b); generalized to any two platforms)",
    )
    claim = "The faster platform's advantage grows with batch size"
    rule = RHO_RULE.format(x="batch", side="above")
    got = _oriented(data, cmp=cmp)
    if got is None:
        return Finding(fid, claim, src, UNTESTABLE, "one platform in the data", rule)
    p, fast, slow, s = got
    if len(p) < 8 or "batch" not in p:
        return Finding(fid, claim, src, NO_DATA, f"{len(p)} matched configs", rule)
    return _rho_finding(fid, claim, src, rule, p, "batch", fast, slow, s, ">")


def largest_fc_prefer_cpu(data: Data) -> Finding:
    fid, src = "largest-fc-cpu", "seed 000 observation 6 (§5.1, Fig. 7)"
    claim = "The largest FC models run only on the CPU (accelerator memory is too small)"
    rule = (
        "holds when FC configs that ran ok on the CPU failed out of memory on an accelerator "
        "(a count: running out of memory is not a noisy measurement, so there is no interval)"
    )
    runs = choose(data.runs)
    if not len(runs):
        return Finding(fid, claim, src, NO_DATA, "no runs", rule)
    fc = runs[runs["family"] == "fc"]
    cpu, acc = fc[fc["device"] == "cpu"], fc[fc["device"] != "cpu"]
    if not len(cpu) or not len(acc):
        return Finding(
            fid, claim, src, UNTESTABLE, "needs FC runs on a CPU and an accelerator", rule
        )
    ok_cpu = set(cpu[cpu["status"] == Status.OK]["config_key"])
    oom = acc[acc["status"].isin([Status.OOM, Status.PREDICTED_OOM])]
    both = oom[oom["config_key"].isin(ok_cpu)]
    k = int(both["config_key"].nunique())
    ev = f"{k} FC configs ok on CPU and out of memory on an accelerator"
    return Finding(
        fid, claim, src, HOLDS if k else FAILS, ev, rule, statistic="configs", estimate=k,
        threshold=1, interval_note=f"{k} configs (a count, no interval) vs ≥ 1",
    )  # fmt: skip


def _platform_pairs(data: Data, family: str, fid: str, claim: str, src: str, rule: str, cmp=None):
    """(matched pairs of `family` oriented faster-over-slower, faster, slower, summary) or a
    Finding that says why there are none (`cmp`: a ready comparison, as `_oriented`)."""
    got = _oriented(data, family, cmp)
    if got is None:
        return Finding(fid, claim, src, UNTESTABLE, "one platform in the data", rule)
    if len(got[0]) < 8:
        return Finding(
            fid, claim, src, NO_DATA, f"{len(got[0])} matched {family} configs (need 8)", rule
        )
    return got


def _restricted(data: Data, keys) -> Data:
    import dataclasses

    return dataclasses.replace(data, runs=data.runs[data.runs["config_key"].isin(set(keys))])


def fc_size_decides_platform(data: Data, cmp=None) -> Finding:
    fid, src = "fc-size-platform", "seed 000 observation 8 (§5.1, Fig. 8; generalized)"
    claim = "Smaller and larger FC models prefer different platforms (TPU vs GPU in the paper)"
    rule = (
        "over ≥ 8 matched FC configs on two platforms, sorted by parameters: holds when the "
        "bootstrap 95% CIs of the geometric-mean speedup of the smallest and of the largest "
        "third lie wholly on opposite sides of 1, does not hold when both lie on the same "
        "side (one platform wins at both ends), inconclusive otherwise; Spearman's "
        "ρ(params, speedup) with its Fisher-z CI is stated beside"
    )
    got = _platform_pairs(data, "fc", fid, claim, src, rule, cmp)
    if isinstance(got, Finding):
        return got
    p, fast, slow, _ = got
    p = p[p["params"].notna()].sort_values(["params", "config_key"], kind="stable")
    rho, rlo, rhi, n = spearman_ci(p["params"], p["speedup"])
    k = max(1, len(p) // 3)
    ends = {}
    for name, part in (("smallest", p.iloc[:k]), ("largest", p.iloc[-k:])):
        if cmp is not None:  # a ready comparison (predicted pairs): its intervals' geomeans
            ends[name] = (geomean(part["speedup"]), *_geomean_ends(part))
            continue
        sub = _restricted(data, part["config_key"])
        c = compare(sub, "platform", *sorted((fast, slow)), family="fc", include_noisy=True)
        g = c.overall()
        est, lo, hi = g["geomean"], g.get("geomean_ci_low"), g.get("geomean_ci_high")
        if c.b != fast:  # oriented faster over slower
            est, lo, hi = 1 / est, 1 / hi, 1 / lo
        ends[name] = (est, lo, hi)
    (se, sl, sh), (le, ll, lh) = ends["smallest"], ends["largest"]
    side = {n_: judge(lo, hi, 1.0, ">") for n_, (_, lo, hi) in ends.items()}
    f2 = lambda x: f"{x:.2f}" if _finite(x) else "n/a"  # noqa: E731
    ev = (
        f"{fast} over {slow}: smallest third {se:.2f}× [{f2(sl)}, {f2(sh)}], largest third "
        f"{le:.2f}× [{f2(ll)}, {f2(lh)}] ({k} configs each); ρ(params, speedup) = "
        f"{U.signed(rho)} [{U.signed(rlo)}, {U.signed(rhi)}] over {n} configs"
    )
    if INCONCLUSIVE in side.values():
        verdict, decide = (
            INCONCLUSIVE,
            (
                "a third's interval off 1: "
                + geomean_more(
                    k, *next(e for nm, e in ends.items() if side[nm] == INCONCLUSIVE), 1.0
                ).replace("matched configs", "configs per third")
            ),
        )
    else:
        verdict, decide = (HOLDS if side["smallest"] != side["largest"] else FAILS), ""
    f3 = lambda x: f"{x:.3g}" if _finite(x) else "n/a"  # noqa: E731
    note = f"smallest third {se:.3g} [{f3(sl)}, {f3(sh)}], largest {le:.3g} [{f3(ll)}, {f3(lh)}]"
    return Finding(
        fid, claim, src, verdict, ev, rule, statistic="geomean speedup of each third",
        threshold=1.0, decide=decide, interval_note=note + " vs 1",
    )  # fmt: skip


def cnn_speedup_grows_with_size(data: Data, cmp=None) -> Finding:
    fid, src = "cnn-size-speedup", "seed 000 observation 9 (§5.2, Fig. 10(a)-(c); generalized)"
    claim = "The faster platform's speedup grows with CNN size (TPU over GPU in the paper)"
    rule = "over matched CNN configs, " + RHO_RULE.format(x="params", side="above")
    got = _platform_pairs(data, "cnn", fid, claim, src, rule, cmp)
    if isinstance(got, Finding):
        return got
    p, fast, slow, s = got
    p = p[p["params"].notna()]
    return _rho_finding(fid, claim, src, rule, p, "params", fast, slow, s, ">")


def rnn_embed_favours_slower(data: Data, cmp=None) -> Finding:
    fid, src = "rnn-embed-platform", "seed 000 observation 11 (§5.2, Fig. 10(d)-(e); generalized)"
    claim = (
        "The slower platform scales better with RNN embedding size (GPU against TPU in the paper)"
    )
    rule = "over matched RNN configs, " + RHO_RULE.format(x="embed", side="below").replace(
        "Spearman's ρ(embed, speedup)",
        "the Spearman correlation of the embedding size and the speedup, ρ(embed, speedup),",
    )
    got = _platform_pairs(data, "rnn", fid, claim, src, rule, cmp)
    if isinstance(got, Finding):
        return got
    p, fast, slow, s = got
    if "embed" not in p or p["embed"].nunique() < 2:
        return Finding(fid, claim, src, NO_DATA, "matched RNN configs at one embedding size", rule)
    return _rho_finding(fid, claim, src, rule, p, "embed", fast, slow, s, "<")


def software_versions(data: Data) -> Finding:
    fid, src = "software-updates", "seed 000 observations 12, 14 (§6, Fig. 12)"
    claim = "A newer software stack trains the same models faster"
    rule = (
        "holds when the newest torch version's geometric-mean speedup over the oldest lies "
        "above 1 " + GEO_RULE.format(t=1)
    )
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
    ev = f"torch {versions[-1]} over {versions[0]}: {_geo(g)} over {g['n']} configs"
    return _geomean_finding(fid, claim, src, rule, ev, c, 1.0)


def multi_chip(data: Data) -> Finding:
    r = observation3_result(data)
    ok = r.verdict in (HOLDS, FAILS, INCONCLUSIVE)
    return Finding(
        "multi-chip", OBS3_CLAIM, OBS3_SOURCE, r.verdict, r.evidence, r.rule,
        statistic="median Karp–Flatt e" if ok else "", estimate=r.median if ok else None,
        ci_low=r.ci_low if ok else None, ci_high=r.ci_high if ok else None,
        threshold=SERIAL_THRESHOLD if ok else None,
        decide=more_data(r.n, r.median, r.ci_low, r.ci_high, SERIAL_THRESHOLD, "runs of N > 1")
        if r.verdict == INCONCLUSIVE else "",
    )  # fmt: skip


# A phrase of the cited seed beside each citation, keyed by finding id: what the claim rests
# on, so a claim cannot drift from its source (tests/test_findings_quotes.py finds each phrase in
# the seed its `source` names; several phrases are joined by " … ").
QUOTES: dict[str, tuple[str, ...]] = {
    "fc-batch": ("the FLOPS utilization of all three models increases with batch size",),
    "cnn-batch": ("the FLOPS utilization of all three models increases with batch size",),
    "rnn-batch": ("the FLOPS utilization of all three models increases with batch size",),
    "fc-nodes": ("the FLOPS utilization of FCs increases with number of nodes per layer",),
    "cnn-filters": ("that of CNNs increases with filters",),
    "rnn-embed": ("that of RNNs with embedding size",),
    "fc-width-over-depth": (
        "TPU makes good use of the parallelism exposed by batch size and model width, but "
        "parallelism due to model depth is under-exploited",
    ),
    "depth-unexploited": ("TPU does not exploit the parallelism from the model depth",),
    "memory-bound": (
        "Memory bandwidth is the performance bottleneck of many models",
        "a majority of the CNNs are bottlenecked by memory bandwidth",
    ),
    "precision-helps": (
        "Quantization from 32 bits to 16 bits significantly improves TPU and GPU performance",
    ),
    "precision-cnn-over-rnn": (
        "FP16 generally achieves higher throughput than FP32, especially on CNNs",
        "on NLP models, it has no obvious improvement compared to FP32",
    ),
    "larger-ops-faster": (
        "For all accelerators, higher workloads can better utilize the computing resource to "
        "achieve higher throughput",
    ),
    "threads-matmul": (
        "For the matrix multiplication, the computing performance is almost linear to the "
        "number of threads",
        "the performance improvement of the operator is around 90%-100% with the doubled "
        "number of threads",
    ),
    "speedup-batch": (
        "Models with large batch size prefer TPU",
        "large batch size is the key to higher TPU over GPU speedup",
    ),
    "fc-size-platform": ("Smaller FC models prefer TPU and larger FC models prefer GPU",),
    "cnn-size-speedup": ("TPU speedup over GPU increases with larger CNNs",),
    "rnn-embed-platform": ("GPU performance scales better with RNN embedding size than TPU",),
    "largest-fc-cpu": ("The largest FC models prefer CPU due to memory constraints",),
    "software-updates": (
        "TensorFlow and CUDA teams provide substantial performance improvements in each update",
    ),
    "multi-chip": (
        "Communication overhead in a multi-chip system is non-negligible, but is reduced with "
        "large batch sizes",
    ),
    "infeed": (
        "resolving the bottleneck can improve performance by at least 34%",
        "Eliminating that bottleneck brings 37% and 180% speedup",
    ),
    "tpu-v3": (
        "2.3× for compute-bound operations, 3× for memory-bound MatMuls, and 1.5× for other "
        "memory-bound operations",
    ),
    "tpu-vs-gpu": ("TPU achieves 2× (CNN) and 3× (RNN) FLOPS utilization compared to GPU",),
    "torus": (
        "the all-reduction can be built in a dimension-balanced, bandwidth-optimal way for a "
        "2D torus topology",
        "we see 96%–99% of perfect linear speedup at 1024 chips",
    ),
}


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
    threads_linear,
    speedup_grows_with_batch,
    fc_size_decides_platform,
    cnn_speedup_grows_with_size,
    rnn_embed_favours_slower,
    largest_fc_prefer_cpu,
    software_versions,
    multi_chip,
    _untestable(
        "infeed",
        "Improving data infeed speeds training by ≥ 34%",
        "seed 000 observation 4 (§4.4, Fig. 5)",
        "no host-fed runs in the data",
    ),
    _untestable(
        "tpu-v3",
        "TPU v3 speeds up memory-bound MatMuls 3×, other memory-bound ops 1.5× and "
        "compute-bound ops 2.3× over v2",
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
        "Supercomputers of chips joined by a 2D torus scale to 1,024 chips at 96-99% of linear "
        "speedup (production applications)",
        "seed 001, Figure 1 (2D torus) and the scaling summary",
        "measured data covers one device; see `paradnn simulate`",
    ),
]


def evaluate(data: Data, include_noisy: bool = False) -> list[Finding]:
    """Every finding's verdict; runs flagged noisy are left out unless `include_noisy`."""
    if not include_noisy:
        data = without_noisy(data)[0]
    return [check(data) for check in CHECKS]


def as_frame(findings: list[Finding]) -> pd.DataFrame:
    """One row per finding: its fields, the interval as text and the seed's phrase."""
    cols = [*Finding.__dataclass_fields__, "interval", "quote"]
    return pd.DataFrame(
        [f.__dict__ | {"interval": f.interval, "quote": f.quote} for f in findings], columns=cols
    )


__all__ = [
    "INCONCLUSIVE",
    "QUOTES",
    "Finding",
    "as_frame",
    "decided",
    "default_metric",
    "evaluate",
    "geomean_more",
    "judge",
]
