"""Synthetic result rows with a known structure, for the analysis and report tests.

Counts (params, FLOPs per step) come from the families' analytic formulas, so the rows look like
real ones; the timing metric comes from a formula the test chooses, so the test knows the answer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from paradnn import families
from paradnn.records import RunRecord
from paradnn.store import open_store

_KEYED = ("mode", "backend", "data_source", "procs", "strategy", "optimizer", "threads")
PEAK = 1e12  # FLOP/s of the synthetic platforms: utilization = achieved / PEAK


def grid(space: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    keys = list(space)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*space.values())]


def row(
    family: str,
    cfg: dict[str, Any],
    util: float | None,
    *,
    platform: str = "SynthCPU",
    device: str = "cpu",
    precision: str = "fp32",
    status: str = "ok",
    torch_version: str = "2.13.0",
    hostname: str = "host-a",
    error: str | None = None,
    n_samples: int = 0,
    spread: float = 0.01,
    seed: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """One run: achieved FLOP/s = util × PEAK; the step time and examples/s follow from it.

    `n_samples` > 0 adds raw step-time samples: the step time times (1 + spread × z), z standard
    normal from `seed` and shifted so the samples' median is exactly the step time. `extra`
    sets any other record field (converged, quality, quality_reasons, emulated, ...)."""
    fam = families.get(family)
    c = fam.config(cfg)
    full = {f.name: getattr(c, f.name) for f in fam.fields()}
    flops = fam.train_flops(c)
    # what a real run key holds (records.run_key): the study axes a row sets are part of it
    axes = sorted((k, str(v)) for k, v in extra.items() if k in _KEYED)
    key = hashlib.sha1(
        json.dumps([family, full, platform, precision, torch_version, hostname, *axes]).encode()
    ).hexdigest()[:16]
    base = dict(
        run_key=key,
        family=family,
        config=full,
        precision=precision,
        optimizer="rmsprop",
        device=device,
        device_name=platform,
        status=status,
        params=fam.params(c),
        params_analytic=fam.params(c),
        flops_per_step=flops,
        flops_analytic=flops,
        examples_per_step=full["batch"],
        torch_version=torch_version,
        hostname=hostname,
        error=error,
        threads=2,
        fingerprint=hashlib.sha1(f"{platform}{torch_version}{hostname}".encode()).hexdigest()[:12],
    )
    if status == "ok" and util is not None:
        achieved = util * PEAK
        step = flops / achieved
        base |= dict(
            achieved_flops=achieved,
            step_time_s=step,
            examples_per_s=full["batch"] / step,
            utilization_datasheet=None,
            utilization_measured=None,
        )
        if n_samples:
            z = np.random.default_rng(seed).standard_normal(n_samples)
            z -= np.median(z)
            base["samples"] = [float(step * (1 + spread * x)) for x in z]
            base["n_samples"] = n_samples
    return base | extra


def scale_row(
    procs: int, step: float, family: str = "fc", batch: int = 8, **kw: Any
) -> dict[str, Any]:
    """A stored-like data-parallel run: N = 1 or N ranks of one weak-scaled config whose step
    takes `step` seconds (CI ±2%); `ladder` sets the all-reduce ladder, `kw` any other field."""
    ladder = kw.pop("ladder", None)
    return {
        "family": family,
        "config": {"layers": 1, "nodes": 32, "batch": batch},
        "status": "ok",
        "precision": "fp32",
        "device": "cpu",
        "device_name": "cpu-x",
        "threads": 1,
        "procs": procs,
        "strategy": None if procs == 1 else "ddp",
        "scaling": None if procs == 1 else "weak",
        "examples_per_step": batch * procs,
        "params": 97_000,
        "step_time_s": step,
        "step_time_ci_low_s": step * 0.98,
        "step_time_ci_high_s": step * 1.02,
        "examples_per_s": batch * procs / step,
        "achieved_flops": 1e9 * procs * 0.01 / step,
        "converged": True,
        "quality": "good",
        "parallel": {"allreduce_ladder": ladder} if ladder else None,
        **kw,
    }


def rows(
    family: str,
    space: Mapping[str, Iterable[Any]],
    util: Callable[[dict[str, Any]], float | None],
    **kw: Any,
) -> list[dict[str, Any]]:
    """A row per config of the grid; `util` returning None marks the run as out of memory."""
    out = []
    for cfg in grid(space):
        u = util(cfg)
        out.append(row(family, cfg, u, status="ok" if u is not None else "oom", **kw))
    return out


def write_db(
    path,
    run_rows: list[dict[str, Any]],
    ceilings: list[dict] | None = None,
    ops: list[dict] | None = None,
) -> str:
    with open_store(path) as store:
        for r in run_rows:
            r = dict(r)
            env = {"torch": r.pop("torch_version"), "hostname": r.pop("hostname")}
            store.insert(RunRecord.flat(**r, env=env))
        if ceilings:
            store.insert_rows("ceilings", ceilings)
        if ops:
            store.insert_rows("ops", ops)
    return str(path)


def op_row(
    name: str,
    flops: int,
    time_s: float,
    threads: int = 2,
    precision: str = "fp32",
    device_name: str = "SynthCPU",
) -> dict[str, Any]:
    return dict(
        op="matmul",
        name=name,
        shape={"n": name},
        precision=precision,
        **{"pass": "fwd"},
        threads=threads,
        device="cpu",
        device_name=device_name,
        fingerprint="f",
        status="ok",
        flops=flops,
        time_s=time_s,
        achieved_flops=flops / time_s,
        measured_at="2026-11-21T00:00:00",
    )


def _other_family(family: str) -> tuple[str, dict[str, Any]]:
    if family == "rnn":
        return "fc", {"layers": 1, "nodes": 16, "input": 8, "output": 4}
    return "rnn", {"layers": 1, "embed": 8, "length": 5, "vocab": 7}


def pair_rows(
    family: str,
    configs: list[dict[str, Any]],
    lead: Callable[[dict[str, Any]], float],
    *,
    fast: str = "Fast",
    slow: str = "Slow",
    util: float = 0.05,
    n_samples: int = 9,
    spread: float = 0.02,
    extra_runs: int = 0,
    extra_on: str | None = None,
) -> list[dict[str, Any]]:
    """Runs of `configs` on two platforms: `fast` trains lead(cfg) times the examples/s of
    `slow` (a lead below 1 makes it the slower one there). Each run has `n_samples` raw step
    times, so speedups carry bootstrap intervals. `extra_runs` runs of another family, only on
    `extra_on`, give that platform the most runs without adding a matched config (so a finding
    can be checked not to orient a pair by run counts)."""
    out = []
    for i, cfg in enumerate(configs):
        out.append(
            row(family, cfg, util, platform=slow, n_samples=n_samples, spread=spread, seed=i)
        )
        out.append(
            row(
                family, cfg, util * lead(cfg), platform=fast, device="cuda",
                n_samples=n_samples, spread=spread, seed=1000 + i,
            )
        )  # fmt: skip
    fam, base = _other_family(family)
    for j in range(extra_runs):
        dev = "cuda" if extra_on == fast else "cpu"
        out.append(row(fam, {**base, "batch": j + 1}, util, platform=extra_on, device=dev))
    return out


def op_profile(run_id: int, scale: float = 1.0) -> list[dict]:
    """A profile of one step: matmuls dominate, elementwise and a copy the rest."""
    ops = [
        ("aten::addmm", [[32, 100]], 6e-3, 2e7, 2e5),
        ("aten::mm", [[100, 64]], 4e-3, 1e7, 1e5),
        ("aten::add_", [[64]], 1e-3, 6e4, 3e5),
        ("aten::t", [[64, 100]], 1e-4, 0, 0),
    ]
    return [
        dict(
            run_id=run_id,
            op=op,
            shapes=shapes,
            dtype="float32",
            calls=2,
            device_time_s=t * scale,
            flops=int(f),
            bytes=int(b),
            achieved_flops=f / (t * scale),
            intensity=(f / b) if b else None,
        )
        for op, shapes, t, f, b in ops
    ]
