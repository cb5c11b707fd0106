"""Fitting the step-time model to a sweep, pinned whole (sim.fit): samples chosen from runs
(statistic, multi-process runs, policies, configs stored as JSON), what a fit may free and
why the rest stays, the fit's parameters and every predicted row (to a relative 1e-4: the
optimum only as closely as the optimizer finds it), the per-family errors, the device a fit is
for and its refusals, and the chip file it writes (tests/pinned.py,
tests/data/sim_pinned/fit*.json)."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

import pinned
from paradnn import families
from paradnn.errors import ConfigError
from paradnn.sim import chip as sim_chip
from paradnn.sim import fit as sim_fit
from paradnn.sim.steptime import build_plan, evaluate, params_of

CPU = "Pinned CPU 2"
AT = "2026-11-25T09:00:00"
CEILINGS = [
    {"device": "cpu", "device_name": CPU, "kind": "matmul", "precision": "fp32", "value": 2e11,
     "measured_at": AT},
    {"device": "cpu", "device_name": CPU, "kind": "copy", "precision": None, "value": 3e10,
     "measured_at": AT},
]  # fmt: skip


def _try(f):
    try:
        return {"ok": f()}
    except ConfigError as e:
        return {"refused": str(e)}


def _configs():
    out = [("fc", {"layers": ly, "nodes": n, "batch": b})
           for ly in (1, 2) for n in (32, 512) for b in (16, 64, 256)]  # fmt: skip
    out += [("cnn", {"filters": f, "batch": b, "image": 16, "blocks": 1})
            for f in (4, 8) for b in (2, 8)]  # fmt: skip
    return out


def _truth(chip):
    return replace(params_of(chip), kernel_overhead_s=3e-5, efficiency={"fp32": 0.5},
                   k_half=40.0, bw_efficiency=0.6)  # fmt: skip


def _frame(chip, truth, configs=None, device=CPU):
    rows = []
    for fam, cfg in configs or _configs():
        full = dict(families.get(fam).config(cfg).__dict__)
        plan = build_plan(fam, families.get(fam).config(cfg), chip, "fp32", "sgd", truth)
        t = evaluate(plan, truth, chip.mem_bandwidth).total_s
        rows.append({"family": fam, "config": full, "precision": "fp32", "optimizer": "sgd",
                     "status": "ok", "step_time_s": t, "step_time_min_s": t * 0.9,
                     "device_name": device})  # fmt: skip
    return pd.DataFrame(rows)


def _samples_view(data):
    return [(s.family, s.config, s.precision, s.optimizer, s.device_name, s.measured_s, s.split,
             s.plan.flops, s.plan.policy) for s in data]  # fmt: skip


def test_samples_splits_and_free_parameters_pinned():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    gpu = sim_chip.load("v100-sxm2")
    frame = _frame(chip, _truth(chip))
    extra = pd.DataFrame(
        [
            {**frame.iloc[0].to_dict(), "procs": 2, "config": {"layers": 3, "nodes": 8}},
            {**frame.iloc[1].to_dict(), "config": json.dumps({"layers": 1, "nodes": 8}),
             "optimizer": "momentum", "policy": "pure", "precision": "fp32"},
            {**frame.iloc[2].to_dict(), "precision": "fp16", "config": {"layers": 1, "nodes": 9}},
            {**frame.iloc[3].to_dict(), "status": "oom", "config": {"layers": 1, "nodes": 10}},
            {**frame.iloc[4].to_dict(), "step_time_s": None, "config": {"layers": 1, "nodes": 11}},
            {**frame.iloc[5].to_dict(), "step_time_min_s": None,
             "config": {"layers": 1, "nodes": 12}},
        ]
    )  # fmt: skip
    both = pd.concat([frame.assign(procs=1), extra], ignore_index=True)
    both["procs"] = both["procs"].fillna(1)
    med = sim_fit.samples(both, chip)
    got = {
        "median": _samples_view(med),
        "min": _samples_view(sim_fit.samples(both, chip, statistic="min", holdout=60)),
        "none-held": [s.split for s in sim_fit.samples(frame, chip, holdout=0)],
        "all-held": [s.split for s in sim_fit.samples(frame, chip, holdout=100)],
        "bad-stat": _try(lambda: sim_fit.samples(frame, chip, statistic="mean")),
        "hash": sim_fit.config_hash("fc", "fp32", {"b": 1, "a": 2}),
        "splits": [
            sim_fit.split_of("fc", "fp32", {"nodes": n}, h)
            for n in range(8)
            for h in (0, 1, 30, 50, 99, 100)
        ],
    }
    fc = [s for s in med if s.family == "fc"]
    cnn = [s for s in med if s.family == "cnn"]
    gpu_data = sim_fit.samples(_frame(gpu, _truth(gpu), device="g"), gpu)
    cached = replace(params_of(chip), cache_bytes=1e5, cache_gain=2.0)
    sets = sorted(float(np.max(s.plan.bytes / np.maximum(s.plan.kernels, 1.0))) for s in med)
    spans = replace(cached, cache_bytes=sets[len(sets) // 2])  # working sets on both sides
    assert sets[0] < spans.cache_bytes < sets[-1]
    free = {}
    for label, c, base, data in (
        ("cpu", chip, params_of(chip), med), ("cpu-fc", chip, params_of(chip), fc),
        ("cpu-few", chip, params_of(chip), cnn[:1] + fc[:5]),
        ("cpu-7", chip, params_of(chip), cnn[:1] + fc[:6]),
        ("cpu-8", chip, params_of(chip), cnn[:1] + fc[:7]),
        ("gpu", gpu, params_of(gpu), gpu_data), ("gpu-few", gpu, params_of(gpu), gpu_data[:7]),
        ("cached", chip, cached, med), ("cached-fc-small", chip, cached, fc[:3]),
        ("no-cache", chip, replace(cached, cache_bytes=None), med),
        ("huge-cache", chip, replace(cached, cache_bytes=1e15), med),
        ("cache-spans", chip, spans, med), ("cache-spans-few", chip, spans, med[:7]),
        ("cache-spans-fc", chip, spans, fc),
    ):  # fmt: skip
        free[label] = {
            "free": sim_fit.default_free(c, base, data),
            "why": {n: sim_fit._why_fixed(n, c, base, data)
                    for n in ("host_scale", "conv_efficiency", "cache_gain", "k_half")},
        }  # fmt: skip
    got["free"] = free
    pinned.check("fit_samples", got)


def test_fit_result_pinned():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    data = sim_fit.samples(_frame(chip, _truth(chip)), chip)
    res = sim_fit.fit(chip, data, source="pinned")
    some = sim_fit.fit(chip, data, free=("efficiency", "k_half"))
    got = {}
    for name, r in (("all", res), ("some", some)):
        # the optimizer's own words and final cost: how it stopped varies with the numerical
        # path, that it reports both does not
        assert isinstance(r.status, str) and r.status
        assert isinstance(r.cost, float) and r.cost >= 0.0
        got[name] = {
            "params": r.params,
            "precisions": r.precisions,
            "counts": [r.fitted_runs, r.holdout_runs, r.holdout_percent, r.rounds],
            "rows": r.rows,
            "summary": sim_fit.summary(r.rows),
            "regimes": r.regime_counts(),
            "identified": sorted(r.identified),
        }
    assert res.cost < some.cost  # the overhead and bandwidth held at their base values misfit
    got["too-few"] = _try(lambda: sim_fit.fit(chip, data[:4]))
    no_cache = sim_fit.fit(
        chip,
        data,
        base=replace(params_of(chip), cache_bytes=None),
        free=("efficiency", "cache_gain"),
    )
    got["no-cache-term"] = [sorted(no_cache.identified), no_cache.params]
    got["bad-free"] = _try(lambda: sim_fit.fit(chip, data, free=("speed",)))
    got["heldout"] = sim_fit.heldout_data(
        SimpleNamespace(runs=_frame(chip, _truth(chip)), ceilings=pd.DataFrame(CEILINGS))
    )
    got["heldout-empty"] = [
        sim_fit.heldout_data(SimpleNamespace(runs=pd.DataFrame(), ceilings=None)),
        sim_fit.heldout_data(SimpleNamespace(runs=None, ceilings=None)),
        sim_fit.heldout_data(
            SimpleNamespace(runs=_frame(chip, _truth(chip), _configs()[:4]), ceilings=None)
        ),
    ]
    pinned.check("fit_result", got, rel=1e-4, abs_=1e-7)


def test_device_and_chip_file_pinned():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    frame = _frame(chip, _truth(chip), _configs()[:2])
    two = pd.concat([frame, frame.assign(device_name="Other GPU")], ignore_index=True)
    view = lambda r: [r[0].id, r[1], len(r[2])]  # noqa: E731
    got = {
        "one": _try(lambda: view(sim_fit.device_chip(frame, CEILINGS, None, None))),
        "platform": _try(lambda: view(sim_fit.device_chip(two, [], "Other GPU", "v100"))),
        "empty": _try(lambda: sim_fit.device_chip(pd.DataFrame(), CEILINGS, None, None)),
        "two": _try(lambda: sim_fit.device_chip(two, CEILINGS, None, None)),
        "unknown": _try(lambda: sim_fit.device_chip(two, CEILINGS, "Nope", None)),
        "undescribed": _try(lambda: sim_fit.device_chip(two, CEILINGS, "Other GPU", None)),
    }
    gpu = sim_chip.load("v100-sxm2")
    params = replace(params_of(gpu), source='a "quoted" source', tile={"fp32": (64, 32)})
    res = SimpleNamespace(params=params, fitted_runs=12, holdout_runs=3, holdout_percent=30)
    cpu_params = replace(params_of(chip), units=None, tiles={})
    got["toml-gpu"] = sim_fit.chip_toml(gpu, res, "NVIDIA V100 / SXM2 #1")
    got["toml-cpu"] = sim_fit.chip_toml(
        chip, SimpleNamespace(params=cpu_params, identified={}), "***", header=["made by hand"]
    )
    got["toml-long"] = sim_fit.chip_toml(chip, res, "x" * 100)
    got["lines-none"] = sim_fit.identified_lines(SimpleNamespace())
    pinned.check("fit_files", got)
