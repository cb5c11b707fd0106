"""This CPU's measured ceilings (three calibrations: spread) and the Table 4 op micro-benchmarks.

Calibrates `--repeats` times (default 3) and reports min/median/max of every ceiling (matmul per
precision, copy and triad bandwidth), then times the accelerator study's Table 4 ops at the
paper's exact shapes for fp32 and bf16. On a 2-core machine the biggest ops take tens of seconds
per step, so some are skipped by default (`--skip NAME` or `NAME:PASS`, recorded in the JSON with
the reason) and the run stops starting new ops after `--budget-s`. A reduced timing policy is
used (same rules, small budgets: ≥ 2 samples per op); nothing here is a test.

    python benchmarks/calibrate_cpu.py [--repeats 3] [--skip matmul-8192 ...] [--budget-s 300]

Writes benchmarks/results/calibrate_cpu.json and benchmarks/results/ops_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paradnn.measure.calibrate import calibrate
from paradnn.measure.timer import TimingPolicy
from paradnn.ops import PASSES, TABLE4, run_ops

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_SKIP = ("matmul-8192", "conv2d-II:fwd+bwd", "conv2d-III:fwd+bwd")
SKIP_REASON = "skipped on this 2-core CPU to keep the run within its time budget (--skip)"

CAL_POLICY = TimingPolicy(
    min_samples=5,
    min_time_s=0.2,
    max_time_s=1.0,
    warmup_min_steps=2,
    warmup_min_time_s=0.1,
    warmup_max_steps=5,
    warmup_max_time_s=1.0,
)
# Big ops: one cold step, one warm-up step, two or more timed samples, capped at ~3 s of samples.
OPS_POLICY = TimingPolicy(
    min_samples=2,
    min_time_s=0.0,
    max_time_s=3.0,
    warmup_min_steps=1,
    warmup_min_time_s=0.0,
    warmup_max_steps=1,
    warmup_max_time_s=0.0,
    target_ci_rel=0.05,
)


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--stream-mib", type=int, default=64)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--skip", nargs="*", default=list(DEFAULT_SKIP))
    ap.add_argument("--budget-s", type=float, default=300.0, help="no new op starts after this")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).isoformat(timespec="seconds")

    # 1. ceilings, `repeats` times
    runs: list[list[dict[str, Any]]] = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        rows = calibrate(
            "cpu",
            args.precisions,
            sizes=args.sizes,
            policy=CAL_POLICY,
            threads=args.threads,
            stream_bytes=args.stream_mib << 20,
        )
        runs.append(rows)
        print(f"calibrate {i + 1}/{args.repeats}: {time.perf_counter() - t0:.1f} s")
        for r in rows:
            scale = 1e9
            print(
                f"  {r['kind']:6s} {r['precision'] or '':5s} {r['value'] / scale:8.1f} G{r['unit']}"
            )
    summary: dict[str, Any] = {}
    for r in runs[0]:
        key = r["kind"] + (f"-{r['precision']}" if r["precision"] else "")
        same = [
            x
            for rows in runs
            for x in rows
            if (x["kind"], x["precision"]) == (r["kind"], r["precision"])
        ]
        summary[key] = {
            "unit": r["unit"],
            **spread([x["value"] for x in same]),
            "values": [x["value"] for x in same],
            "best_sizes": [x["detail"].get("best_size") for x in same]
            if r["kind"] == "matmul"
            else None,
        }
    env = runs[0][0]["env"] if runs and runs[0] else {}
    cal_out = {
        "started_at": started,
        "device_name": runs[0][0]["device_name"] if runs and runs[0] else None,
        "threads": env.get("threads"),
        "repeats": args.repeats,
        "sizes": args.sizes,
        "stream_bytes_per_array": args.stream_mib << 20,
        "policy": vars(CAL_POLICY),
        "summary": summary,
        "skipped": runs[0][0]["detail"]["skipped"] if runs and runs[0] else {},
        "rows": [[{k: v for k, v in r.items() if k != "env"} for r in rows] for rows in runs],
        "env": env,
    }
    (RESULTS / "calibrate_cpu.json").write_text(json.dumps(cal_out, indent=1) + "\n")

    # 2. Table 4 ops at the paper's shapes
    t_start = time.perf_counter()
    ops_rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for p in args.precisions:
        for name in TABLE4:
            for pass_ in PASSES:
                entry = {"name": name, "pass": pass_, "precision": p}
                if name in args.skip or f"{name}:{pass_}" in args.skip:
                    skipped.append({**entry, "reason": SKIP_REASON})
                    continue
                if time.perf_counter() - t_start > args.budget_s:
                    skipped.append({**entry, "reason": f"--budget-s {args.budget_s:g} s spent"})
                    continue
                t0 = time.perf_counter()
                (row,) = run_ops(
                    "cpu", (p,), (name,), (pass_,), threads=args.threads, policy=OPS_POLICY
                )
                row.pop("env")
                row["wall_s"] = time.perf_counter() - t0
                ops_rows.append(row)
                gf = (row["achieved_flops"] or 0) / 1e9
                print(
                    f"{p:5s} {name:11s} {pass_:8s} {row['status']:6s} "
                    f"{row['time_s'] or float('nan'):8.3f} s/step {gf:7.1f} GFLOP/s "
                    f"(wall {row['wall_s']:.0f} s)",
                    flush=True,
                )
    ops_out = {
        "started_at": started,
        "device_name": ops_rows[0]["device_name"] if ops_rows else None,
        "threads": ops_rows[0]["threads"] if ops_rows else None,
        "policy": vars(OPS_POLICY),
        "table": [
            {
                k: r[k]
                for k in (
                    "name",
                    "precision",
                    "pass",
                    "status",
                    "flops",
                    "time_s",
                    "achieved_flops",
                )
            }
            | {"n_samples": len(r["samples"] or [])}
            for r in ops_rows
        ],
        "skipped": skipped,
        "rows": ops_rows,
        "env": env,
    }
    (RESULTS / "ops_cpu.json").write_text(json.dumps(ops_out, indent=1) + "\n")


if __name__ == "__main__":
    main()
