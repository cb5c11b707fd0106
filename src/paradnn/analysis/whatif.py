"""Measured here beside predicted there (`paradnn report --what-if`): the statistics of
sim/whatif.py's predicted rows, kept apart from the measured ones by construction.

Predicted rows live in `Data.predicted`, never in `Data.runs`: every measured statistic reads
`runs` only, so no predicted value can enter one (tests/test_whatif_report.py checks every
measured table of a report is unchanged when predictions are added). This module is the one
reader of `Data.predicted`; everything it returns says predicted in its platform labels
('tpu-v2 (predicted)') and a `basis` column.

A predicted value's interval is its device kind's validated error band (sim/errorbands.py: the
90th percentile of |predicted − measured| ÷ measured step time): a throughput x in
[x(1 − e), x(1 + e)]. A speedup of two sides divides the ends (low over high, high over low),
the measured side's own 95% CI of its median step time where stored; a geometric mean takes the
geometric mean of the ends (every pair erring the same way: conservative). No band: no interval,
and every verdict resting on it is inconclusive, saying "not validated".
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd

from paradnn.analysis import findings as F
from paradnn.analysis.frames import Data, chosen_ok
from paradnn.analysis.speedup import SUMMARY_COLUMNS, Comparison, faster_share, geomean
from paradnn.analysis.speedup import call as _measured_call
from paradnn.analysis.summaries import _short_config

MEASURED, PREDICTED = "measured", "predicted"
MEASURED_VS_PREDICTED = "measured vs predicted"
PREDICTED_VS_PREDICTED = "predicted vs predicted"
MATCH = ["family", "config_key", "optimizer", "precision_here"]
# Observations the model can speak to (seed 000 §4.5, §5): the rest stay measured-only.
WHATIF_IDS = (
    "tpu-v3", "speedup-batch", "fc-size-platform", "cnn-size-speedup", "tpu-vs-gpu",
    "rnn-embed-platform",
)  # fmt: skip
SILENT = (F.UNTESTABLE, F.NO_DATA)  # verdicts that say nothing about the claim
V3_OVER_V2 = 1.5  # seed 000 observation 5: the least of its 2.3×, 3× and 1.5×
TPU_OVER_GPU = {"cnn": 2.0, "rnn": 3.0}  # seed 000 observation 10: utilization ratios


def predicted_frame(rows: list[dict], data: Data | None = None) -> pd.DataFrame:
    """sim/whatif.py's rows as a frame: a `config_key` like the runs', one column per
    hyperparameter, and the measured config's parameter count where the runs have it."""
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    df["predicted"] = True
    df["config_key"] = df["config"].map(
        lambda c: json.dumps(json.loads(c), sort_keys=True, separators=(",", ":"))
    )
    flat = pd.DataFrame(list(df["config_key"].map(json.loads)), index=df.index)
    df = pd.concat([df, flat.drop(columns=[c for c in flat if c in df])], axis=1)
    if data is not None and len(data.runs) and "params" in data.runs:
        params = data.runs.dropna(subset=["params"]).groupby("config_key")["params"].first()
        df["params"] = df["config_key"].map(params)
    elif "params" not in df:
        df["params"] = None
    return df


def with_predictions(data: Data, rows: list[dict]) -> Data:
    """`data` with the predicted rows beside its runs (a copy; `runs` untouched)."""
    return dataclasses.replace(data, predicted=predicted_frame(rows, data))


def has_predictions(data: Data) -> bool:
    p = getattr(data, "predicted", None)
    return p is not None and len(p) > 0 and p["examples_per_s"].notna().any()


def platforms(data: Data) -> tuple[list[str], list[str]]:
    """(measured platform labels, most ok runs first; predicted platform labels, in order)."""
    ok = chosen_ok(data)
    here = [str(v) for v in ok["platform"].value_counts().index] if len(ok) else []
    p = data.predicted
    there = list(dict.fromkeys(p["platform"])) if len(p) else []
    return here, there


def _side(data: Data, label: str) -> pd.DataFrame:
    """One group's values per config: examples/s with its interval (predicted: the band;
    measured: its stored 95% CI of the median step time, else the point), utilization,
    precision, bottleneck (predicted only) and whether it is predicted."""
    cols = [*MATCH, "params", "precision", "value", "low", "high", "util", "bottleneck"]
    cols += ["predicted", "band_label"]
    p = data.predicted
    if len(p) and label in set(p["platform"]):
        g = p[(p["platform"] == label) & p["examples_per_s"].notna()]
        out = g.assign(
            value=g["examples_per_s"],
            low=g["examples_per_s_low"],
            high=g["examples_per_s_high"],
            util=g["utilization"],
        )
        return out.reindex(columns=cols)
    ok = chosen_ok(data)
    g = ok[ok["platform"].astype(str) == label].copy()
    if not len(g):
        return pd.DataFrame(columns=cols)
    x = pd.to_numeric(g["examples_per_s"], errors="coerce")
    t = pd.to_numeric(g.get("step_time_s"), errors="coerce")
    tl = pd.to_numeric(g.get("step_time_ci_low_s"), errors="coerce")
    th = pd.to_numeric(g.get("step_time_ci_high_s"), errors="coerce")
    low, high = (x * t / th).fillna(x), (x * t / tl).fillna(x)
    util = g.get("utilization_datasheet")
    out = g.assign(
        precision_here=g["precision"],
        value=x,
        low=low,
        high=high,
        util=pd.to_numeric(util, errors="coerce") if util is not None else np.nan,
        bottleneck=None,
        predicted=False,
        band_label=None,
    )
    out = out[out["value"] > 0]
    # one value per config (several runs of one config: the median, as `compare`)
    agg = {c: "first" for c in cols if c not in MATCH}
    agg |= {"value": "median", "low": "min", "high": "max", "util": "median"}
    return out.reindex(columns=cols).groupby(MATCH, dropna=False, as_index=False).agg(agg)


def basis(data: Data, a: str, b: str) -> str:
    _, there = platforms(data)
    if a in there and b in there:
        return PREDICTED_VS_PREDICTED
    return MEASURED_VS_PREDICTED if a in there or b in there else MEASURED


def pair(data: Data, a: str, b: str) -> Comparison:
    """Speedup of group `b` over group `a` (a measured platform label or a predicted one) per
    config both have, matched on family, config, optimizer and the precision measured here;
    each with the interval of its two sides (module docstring), as a `Comparison` the
    findings' platform checks and the report's speedup parts read like a measured one."""
    sa, sb = _side(data, a), _side(data, b)
    m = sa.merge(sb, on=MATCH, suffixes=("_a", "_b"))
    if basis(data, a, b) == PREDICTED_VS_PREDICTED:
        m = _one_per_config(m)
    m["speedup"] = m["value_b"] / m["value_a"]
    with np.errstate(divide="ignore", invalid="ignore"):
        m["ci_low"] = m["low_b"].astype(float) / m["high_a"].astype(float)
        m["ci_high"] = m["high_b"].astype(float) / m["low_a"].astype(float)
    for c in ("ci_low", "ci_high"):
        m[c] = m[c].where(np.isfinite(m[c].astype(float)) & (m[c].astype(float) > 0))
    m["call"] = [_call(lo, hi) for lo, hi in zip(m["ci_low"], m["ci_high"], strict=True)]
    m["params"] = m["params_a"].where(m["params_a"].notna(), m["params_b"])
    m["basis"] = basis(data, a, b)
    m["platform_a"], m["platform_b"] = a, b
    if len(m):
        flat = pd.DataFrame(list(m["config_key"].map(json.loads)), index=m.index)
        m = pd.concat([m, flat.drop(columns=[c for c in flat if c in m])], axis=1)
    summary = _summary(m)
    return Comparison(
        "platform", a, b, "examples_per_s", m, summary, {}, pd.DataFrame(), key=list(MATCH)
    )


def _one_per_config(m: pd.DataFrame, a: str = "_a", b: str = "_b") -> pd.DataFrame:
    """Two predictions of one config, once: the configs measured at several precisions here
    were each predicted once per measured precision, so keep, per config, the pair at the
    papers' policy (both platforms at a 16-bit precision, seed 000: TPU bf16, GPU fp16 mixed)
    where there is one, else the first."""
    if not len(m):
        return m
    wide = (m["precision" + a] == "fp32").astype(int) + (m["precision" + b] == "fp32").astype(int)
    m = m.assign(_wide=wide).sort_values(["_wide", "precision_here"], kind="stable")
    m = m.drop_duplicates(["family", "config_key", "optimizer"], keep="first")
    return m.drop(columns="_wide").sort_index().reset_index(drop=True)


def _call(lo, hi) -> str:
    if not (F._finite(lo, hi)):
        return "no interval"
    return _measured_call(float(lo), float(hi))  # the one rule (ends within rounding of 1)


def _summary(m: pd.DataFrame) -> pd.DataFrame:
    if not len(m):
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    rows = []
    for name, g in [*m.groupby("family", sort=True), ("all", m)]:
        s = g["speedup"]
        lo, hi = F._geomean_ends(g)
        rows.append(
            {
                "family": name,
                "n": len(g),
                "faster": int((g["call"] == "faster").sum()),
                "slower": int((g["call"] == "slower").sum()),
                "no_change": int((g["call"] == "no detectable change").sum()),
                "no_interval": int((g["call"] == "no interval").sum()),
                "faster_share": faster_share(s),
                "geomean": geomean(s),
                "geomean_ci_low": lo,
                "geomean_ci_high": hi,
                "geomean_call": _call(lo, hi),
                "median": float(s.median()),
                "p90": float(s.quantile(0.9)),
                "min": float(s.min()),
                "max": float(s.max()),
                "emulated": 0,
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


# --- tables --------------------------------------------------------------------------------


def table(data: Data) -> pd.DataFrame:
    """Measured here beside predicted there: a row per (predicted platform, family, precision
    here): configs, geomean examples/s measured here and predicted there with its band, the
    speedup there over here with its interval (both sides' intervals combined: the measured
    side's 95% CI, the predicted side's error band — a band, so named), the precision there,
    the model's commonest bottleneck and the band it carries."""
    here, there = platforms(data)
    cols = ["predicted", "platform here", "platform there", "family", "precision here",
            "precision there", "configs", "measured here (examples/s)",
            "predicted there (examples/s)", "predicted band low", "predicted band high",
            "speedup there over here", "speedup band low", "speedup band high", "bottleneck there",
            "error band", "basis"]  # fmt: skip
    if not here or not there:
        return pd.DataFrame(columns=cols)
    rows = []
    for b in there:
        c = pair(data, here[0], b)
        for (fam, prec), g in c.pairs.groupby(["family", "precision_here"], sort=True):
            lo, hi = F._geomean_ends(g)
            plo = _geo_or_nan(g["low_b"])
            phi = _geo_or_nan(g["high_b"])
            rows.append(
                {
                    "predicted": "yes",
                    "platform here": here[0],
                    "platform there": b,
                    "family": fam,
                    "precision here": prec,
                    "precision there": ", ".join(sorted(set(g["precision_b"].astype(str)))),
                    "configs": len(g),
                    "measured here (examples/s)": geomean(g["value_a"]),
                    "predicted there (examples/s)": geomean(g["value_b"]),
                    "predicted band low": plo,
                    "predicted band high": phi,
                    "speedup there over here": geomean(g["speedup"]),
                    "speedup band low": lo,
                    "speedup band high": hi,
                    "bottleneck there": g["bottleneck_b"].mode().iloc[0]
                    if g["bottleneck_b"].notna().any()
                    else None,
                    "error band": g["band_label_b"].iloc[0],
                    "basis": MEASURED_VS_PREDICTED,
                }
            )
    return pd.DataFrame(rows, columns=cols)


def _geo_or_nan(x: pd.Series) -> float:
    v = pd.to_numeric(x, errors="coerce").to_numpy(float)
    if not len(v) or not (np.isfinite(v).all() and (v > 0).all()):
        return math.nan
    return float(np.exp(np.log(v).mean()))


def per_config(data: Data) -> pd.DataFrame:
    """Every config measured here beside each predicted platform (the table's rows)."""
    here, there = platforms(data)
    if not here or not there:
        return pd.DataFrame()
    out = []
    for b in there:
        p = pair(data, here[0], b).pairs
        if not len(p):
            continue
        out.append(
            pd.DataFrame(
                {
                    "predicted": "yes",
                    "family": p["family"],
                    "config": p["config_key"],
                    "precision here": p["precision_here"],
                    "measured here (examples/s)": p["value_a"],
                    "platform there": b,
                    "precision there": p["precision_b"],
                    "predicted there (examples/s)": p["value_b"],
                    "predicted band low": p["low_b"],
                    "predicted band high": p["high_b"],
                    "speedup there over here": p["speedup"],
                    "speedup band low": p["ci_low"],
                    "speedup band high": p["ci_high"],
                    "bottleneck there": p["bottleneck_b"],
                }
            )
        )
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def unpredicted(data: Data) -> dict[str, int]:
    """Why configs have no prediction (reason → rows): the model could not take them."""
    p = data.predicted
    if not len(p) or "reason" not in p:
        return {}
    return {str(k): int(v) for k, v in p["reason"].dropna().value_counts().items()}


def table8(data: Data, max_models: int = 16) -> pd.DataFrame:
    """Seed 002 Table 8's layout (a row per model, a column per platform/precision) with the
    predicted platforms' columns beside the measured ones, each named '… (predicted) bf16'."""
    from paradnn.analysis.summaries import table8 as measured_table8

    t = measured_table8(data, max_models)
    if not len(t):
        return t
    t = t.xs("examples/s", level="quantity", drop_level=False)
    p = data.predicted
    p = p[p["examples_per_s"].notna()] if len(p) else p
    if not len(p):
        return t
    label = p["family"] + " " + p["config_key"].map(_short_config)
    col = p["platform"].astype(str) + " " + p["precision"].astype(str)
    cells = p.assign(model=label, column=col).groupby(["model", "column"])["examples_per_s"]
    wide = cells.median().unstack("column")
    wide.index = pd.MultiIndex.from_tuples([(m, "examples/s") for m in wide.index])
    wide.index.names = t.index.names
    return t.join(wide, how="left")


# --- findings ------------------------------------------------------------------------------


def pairs_to_judge(data: Data) -> list[tuple[str, str]]:
    """The platform pairs the what-if findings are judged on: the measured platform against
    each predicted one, then (the papers' comparison) a predicted GPU against a predicted TPU."""
    here, there = platforms(data)
    out = [(here[0], b) for b in there] if here else []
    kinds = _kinds(data)
    gpu = next((b for b in there if kinds.get(b) == "gpu"), None)
    tpu = next((b for b in there if kinds.get(b) == "tpu"), None)
    if gpu and tpu:
        out.append((gpu, tpu))
    return out


def _kinds(data: Data) -> dict[str, str]:
    p = data.predicted
    if not len(p):
        return {}
    return dict(zip(p["platform"], p["device_kind"], strict=False))


def _ids(data: Data) -> dict[str, str]:
    p = data.predicted
    return dict(zip(p["platform_id"], p["platform"], strict=False)) if len(p) else {}


def _bands(data: Data, *labels: str) -> str:
    p = data.predicted
    got = []
    for lab in labels:
        g = p[p["platform"] == lab] if len(p) else p
        if len(g):
            got.append(str(g["band_label"].iloc[0]))
    return "; ".join(dict.fromkeys(got))


def _mark(f: F.Finding, data: Data, a: str, b: str) -> F.Finding:
    """A finding judged on predicted values, saying so: its basis, the pair, the bands."""
    how = basis(data, a, b)
    bands = _bands(data, a, b) or "no band"
    ev = f.evidence
    if f.id in ("tpu-v3", "tpu-vs-gpu"):  # intervals of band ends, not 95% CIs
        ev = ev.replace("the 95% interval", "the error bands' interval")
    return dataclasses.replace(
        f,
        basis=how,
        evidence=f"predicted ({how}: {a} vs {b}): {ev}; error band: {bands}",
        rule=f.rule + " — here on predicted values: each prediction's interval is its device "
        "kind's validated error band (p90), a pair's the ends of both sides divided (low over "
        "high), a geomean's the geomeans of the ends; no band: inconclusive",
    )


PAIR_CHECKS = {
    "speedup-batch": F.speedup_grows_with_batch,
    "fc-size-platform": F.fc_size_decides_platform,
    "cnn-size-speedup": F.cnn_speedup_grows_with_size,
    "rnn-embed-platform": F.rnn_embed_favours_slower,
}


def findings_for(data: Data, a: str, b: str) -> list[F.Finding]:
    """The what-if findings of one pair: observations 7, 8, 9 and 11 on its speedups, and 5
    (TPU v3 over v2) and 10 (TPU over GPU utilization) where the pair is one of those."""
    c = pair(data, a, b)
    out = [_mark(check(data, c), data, a, b) for check in PAIR_CHECKS.values()]
    ids, kinds = _ids(data), _kinds(data)
    if ids.get("tpu-v2") in (a, b) and ids.get("tpu-v3") in (a, b):
        out.append(_mark(tpu_v3_over_v2(data), data, ids["tpu-v2"], ids["tpu-v3"]))
    if {kinds.get(a), kinds.get(b)} == {"gpu", "tpu"}:
        gpu, tpu = (a, b) if kinds.get(a) == "gpu" else (b, a)
        out.append(_mark(tpu_over_gpu(data, gpu, tpu), data, gpu, tpu))
    return out


def evaluate(data: Data) -> list[F.Finding]:
    """Every finding as `findings.evaluate` gives it on the measured runs, with observations
    5, 7-11 that the measured data leaves untestable (one platform, no TPU) replaced by their
    what-if verdicts on the first pair that can speak (`pairs_to_judge`: the papers' GPU-TPU
    pair first), each labelled predicted. A verdict the measurements decide stays measured."""
    base = F.evaluate(data, include_noisy=True)
    if not has_predictions(data):
        return base
    pairs = pairs_to_judge(data)
    order = [pairs[-1], *pairs[:-1]] if pairs and _paper_pair(data, pairs[-1]) else pairs
    got: dict[str, F.Finding] = {}
    for a, b in order:  # the first pair whose prediction speaks
        for f in findings_for(data, a, b):
            if f.id not in got and f.verdict not in SILENT:
                got[f.id] = f
    ids = _ids(data)
    if "tpu-v3" not in got and "tpu-v2" in ids and "tpu-v3" in ids:
        f = _mark(tpu_v3_over_v2(data), data, ids["tpu-v2"], ids["tpu-v3"])
        if f.verdict not in SILENT:
            got["tpu-v3"] = f
    return [got.get(f.id, f) if f.verdict in SILENT else f for f in base]


def _paper_pair(data: Data, ab: tuple[str, str]) -> bool:
    k = _kinds(data)
    return {k.get(ab[0]), k.get(ab[1])} == {"gpu", "tpu"}


def _class_geomeans(c: Comparison, by: pd.Series) -> dict[str, tuple[float, float, float, int]]:
    out = {}
    for name, g in c.pairs.groupby(by.reindex(c.pairs.index).values, sort=True):
        lo, hi = F._geomean_ends(g)
        out[str(name)] = (geomean(g["speedup"]), lo, hi, len(g))
    return out


def tpu_v3_over_v2(data: Data) -> F.Finding:
    """Seed 000 observation 5 on predictions: TPU v3 over v2, per the bottleneck the model
    names on v2 (compute-bound, other), each class's geomean against 1.5."""
    fid, src = "tpu-v3", "seed 000 observation 5 (§4.5, Fig. 6)"
    claim = (
        "TPU v3 speeds up memory-bound MatMuls 3×, other memory-bound ops 1.5× and "
        "compute-bound ops 2.3× over v2"
    )
    rule = (
        "on configs predicted on both chips, grouped by the bottleneck the model names on v2 "
        "(compute-bound, other): holds when the smaller of the two groups' geometric-mean "
        f"v3-over-v2 speedups lies at or above {V3_OVER_V2} (the least of the seed's three "
        "figures) over its whole interval, does not hold when it lies below, inconclusive "
        "when it straddles"
    )
    ids = _ids(data)
    c = pair(data, ids["tpu-v2"], ids["tpu-v3"])
    if not len(c.pairs):
        return F.Finding(fid, claim, src, F.NO_DATA, "no config predicted on both chips", rule)
    cls = c.pairs["bottleneck_a"].map(lambda b: "compute-bound" if b == "compute" else "other")
    g = _class_geomeans(c, cls)
    ev = "; ".join(
        f"{k} {e:.2f}× [{F._g(lo)}, {F._g(hi)}] over {n} configs" for k, (e, lo, hi, n) in g.items()
    )
    est = min(v[0] for v in g.values())
    lo = min(v[1] for v in g.values()) if all(F._finite(v[1]) for v in g.values()) else None
    hi = min(v[2] for v in g.values()) if all(F._finite(v[2]) for v in g.values()) else None
    more = "a validated TPU error band narrow enough to put the interval off the threshold"
    return F.decided(
        fid, claim, src, rule, "v3 over v2: " + ev, "smaller class geomean", est, lo, hi,
        V3_OVER_V2, ">=", more,
    )  # fmt: skip


def tpu_over_gpu(data: Data, gpu: str, tpu: str) -> F.Finding:
    """Seed 000 observation 10 on predictions: the TPU's utilization over the GPU's, geomean
    over the configs both have, per family (CNN against 2×, RNN against 3×)."""
    fid, src = "tpu-vs-gpu", "seed 000 observation 10 (§5.3, Fig. 11)"
    claim = "TPU reaches 2× (CNN) and 3× (RNN) the GPU's utilization"
    rule = (
        "utilization = achieved FLOP/s over the datasheet peak at each chip's precision; per "
        "family with matched configs (CNN against 2, RNN against 3): the geometric-mean ratio "
        "TPU over GPU divided by the seed's figure; holds when the smaller of these lies at or "
        "above 1 over its whole interval, does not hold when it lies below 1, inconclusive "
        "when it straddles 1"
    )
    sg, st = _side(data, gpu), _side(data, tpu)
    m = _one_per_config(sg.merge(st, on=MATCH, suffixes=("_g", "_t")), "_g", "_t")
    m = m[m["family"].isin(list(TPU_OVER_GPU)) & (m["util_g"] > 0) & (m["util_t"] > 0)]
    if not len(m):
        return F.Finding(fid, claim, src, F.NO_DATA, "no CNN or RNN config predicted on both", rule)
    parts, ev = [], []
    for fam, g in m.groupby("family", sort=True):
        r = g["util_t"] / g["util_g"]
        # the utilization's band is its throughput's: scale by the band factors
        f_lo = (g["low_t"] / g["value_t"]) / (g["high_g"] / g["value_g"])
        f_hi = (g["high_t"] / g["value_t"]) / (g["low_g"] / g["value_g"])
        est = geomean(r)
        lo = _geo_or_nan(r * f_lo)
        hi = _geo_or_nan((r * f_hi).replace(np.inf, np.nan))
        t = TPU_OVER_GPU[fam]
        parts.append((est / t, lo / t, hi / t))
        ev.append(f"{fam} {est:.2f}× [{F._g(lo)}, {F._g(hi)}] vs {t:g}× over {len(g)} configs")
    est = min(p[0] for p in parts)
    lo = min(p[1] for p in parts) if all(F._finite(p[1]) for p in parts) else None
    hi = min(p[2] for p in parts) if all(F._finite(p[2]) for p in parts) else None
    more = "a validated error band narrow enough to put the interval off 1"
    return F.decided(
        fid, claim, src, rule, f"{tpu} over {gpu} utilization: " + "; ".join(ev),
        "smaller ratio over the seed's figure", est, lo, hi, 1.0, ">=", more,
    )  # fmt: skip
