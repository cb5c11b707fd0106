"""Sweep throughput and the cost of a measurement, against ParaDnn's fixed protocol.

ParaDnn timed every model with a fixed schedule (hundreds of warm-up steps, then 100 timed
steps) whatever the model's noise. paradnn stops as soon as the median's 95% confidence interval
is within ±2%. This benchmark measures, on a seeded sample of the `cpu` preset:

A. per config, the wall time of the fixed protocol (300 warm-up + 100 individually timed steps)
   and the CI half-width of the median it achieves; then the wall time paradnn needs to reach
   that same CI (its target set to the fixed protocol's CI: "at equal or tighter CI"), and
   with its default ±2% target;
B. the whole pipeline, supervisor and worker processes included: configs per minute over a
   slice of the `cpu` preset.

Target: at least 3× less time per config than the fixed protocol at equal or tighter CIs.
Figures go to benchmarks/results/sweep_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import torch

from paradnn import families, presets
from paradnn.config import RunOptions, RunSpec, SweepSettings
from paradnn.measure.stats import summarize
from paradnn.measure.step import TrainStep
from paradnn.runner.execute import execute, prepare
from paradnn.runner.supervisor import Supervisor
from paradnn.store import open_store

OUT = Path(__file__).parent / "results" / "sweep_throughput.json"


def fixed_protocol(family: str, config: dict, device: torch.device, warmup: int, steps: int):
    """ParaDnn's schedule: build, `warmup` steps, then `steps` steps timed one by one."""
    t0 = time.perf_counter()
    fam = families.get(family)
    torch.manual_seed(0)
    with torch.device(device):
        step = TrainStep(fam.build(fam.config(config), device), "rmsprop", "fp32", device)
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(steps):
        a = time.perf_counter()
        step()
        samples.append(time.perf_counter() - a)
    s = summarize(samples)
    return {"wall_s": time.perf_counter() - t0, "median_s": s.median, "ci_rel": s.ci_rel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=8, help="configs sampled for part A")
    ap.add_argument("--slice", type=int, default=16, help="configs run by the supervisor (B)")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    specs = presets.get("cpu").specs()
    sample = random.Random(args.seed).sample(specs, min(args.configs, len(specs)))
    options = RunOptions(device="cpu")
    device, env = prepare(options.device, options.threads)

    per_config = []
    for spec in sample:
        fixed = fixed_protocol(spec.family, dict(spec.config), device, args.warmup, args.steps)
        row: dict = {"family": spec.family, "config": dict(spec.config), "fixed": fixed}
        matched = replace(options.timing, target_ci_rel=fixed["ci_rel"], max_time_s=120.0)
        for name, policy in (("matched", matched), ("default", options.timing)):
            t0 = time.perf_counter()
            rec = execute(RunSpec(spec.family, dict(spec.config), replace(options, timing=policy)))
            row[name] = {
                "wall_s": time.perf_counter() - t0,
                "median_s": rec.step_time_s,
                "ci_rel": rec.ci_rel,
                "converged": rec.converged,
                "status": rec.status,
            }
            row[f"time_ratio_{name}"] = fixed["wall_s"] / row[name]["wall_s"]
        per_config.append(row)
        m, d = row["matched"], row["default"]
        print(
            f"{spec.family:4} fixed {fixed['wall_s']:6.2f} s ±{fixed['ci_rel'] * 100:.2f}% | "
            f"same CI {m['wall_s']:6.2f} s ±{(m['ci_rel'] or 0) * 100:.2f}% "
            f"({row['time_ratio_matched']:.2f}×) | default {d['wall_s']:6.2f} s "
            f"±{(d['ci_rel'] or 0) * 100:.2f}% ({row['time_ratio_default']:.2f}×)"
        )

    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "s.db") as store:
        t0 = time.perf_counter()
        done = Supervisor(store, options, SweepSettings(), sweep="cpu").run(specs[: args.slice])
        wall = time.perf_counter() - t0

    matched_ratios = [r["time_ratio_matched"] for r in per_config]
    ci_ok = [
        r["matched"]["ci_rel"] is not None and r["matched"]["ci_rel"] <= r["fixed"]["ci_rel"]
        for r in per_config
    ]
    result = {
        "benchmark": "sweep_throughput",
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": str(device),
        "device_name": env["cpu_model"],
        "threads": env["threads"],
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "fixed_protocol": {"warmup_steps": args.warmup, "timed_steps": args.steps},
        "per_config": per_config,
        "median_time_ratio_at_equal_ci": statistics.median(matched_ratios),
        "median_time_ratio_default_policy": statistics.median(
            r["time_ratio_default"] for r in per_config
        ),
        "equal_or_tighter_ci": f"{sum(ci_ok)}/{len(ci_ok)}",
        "supervisor_slice": {
            "configs": len(done),
            "wall_s": wall,
            "configs_per_minute": 60 * len(done) / wall,
            "statuses": sorted({r.status for r in done}),
        },
        "target": "median time ratio ≥ 3 at equal or tighter CI",
        "target_met": statistics.median(matched_ratios) >= 3 and all(ci_ok),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"at equal CI: median {result['median_time_ratio_at_equal_ci']:.2f}× less time per config"
        f" (CI reached in {result['equal_or_tighter_ci']}); default policy "
        f"{result['median_time_ratio_default_policy']:.2f}×; supervisor "
        f"{result['supervisor_slice']['configs_per_minute']:.1f} configs/min → {args.out}"
    )


if __name__ == "__main__":
    main()
