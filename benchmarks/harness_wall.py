"""Wall time of `paradnn bench` and the per-run overhead of a sweep, beside what they measure.

A measurement is worth its wall time only if most of it is measurement. This benchmark runs the
real command lines (fresh processes, as a user does) and splits their wall time, from the
records they store:

A. `paradnn bench` of a small config (an FC of 2 × 32): the process's wall time from outside,
   the measured phases inside it (first step, warm-up, timed blocks) and the rest (start-up,
   imports, worker, build, FLOP count, store, exit). Target: wall ≤ 3 s on a CPU.
B. `paradnn run` of a sweep of small configs in one worker: each run's overhead is the time
   from the previous run's end to its own end, less its first step, warm-up and timed phase
   (build, FLOP count, clean-up, the supervisor's store and dispatch). Target: median ≤ 0.15 s.

With `--baseline-src DIR` (another checkout's `src/`, e.g. /work/main/src) the two sources run
in alternation, A B A B …, so a busy machine's drift hits both alike; the report gives each
side's medians and the paired ratio. Noisy by nature on a shared machine: quote medians, say
the load, and re-take the figures on a quiet one. Figures go to
benchmarks/results/harness_wall.json.

    python benchmarks/harness_wall.py [--rounds 5] [--runs 12] [--baseline-src /work/main/src]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "harness_wall.json"
BENCH_TARGET_S = 3.0
OVERHEAD_TARGET_S = 0.15
BENCH_ARGS = ["fc", "layers=2", "nodes=32", "input=16", "output=8", "batch=8"]
# Sweep configs: small FC, CNN and RNN models (a busy 2-core CPU times each in well under 1 s).
SWEEP_RUNS = (
    [("fc", {"layers": 2, "nodes": n, "input": 16, "output": 8, "batch": 8}) for n in (16, 32, 64)]
    + [("cnn", {"blocks": 1, "filters": f, "image": 16, "output": 3, "batch": 4}) for f in (4, 8)]
    + [
        ("rnn", {"layers": 1, "embed": e, "length": 5, "vocab": 7, "batch": 4, "cell": "lstm"})
        for e in (8, 16)
    ]
)
SWEEP_TIMING = {"min_time_s": 0.1, "max_time_s": 1.0, "warmup_min_time_s": 0.05}


def _seconds(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


def measured_s(row: dict[str, Any]) -> float:
    """The measured phases of a run: first step, warm-up, timed blocks (their own seconds)."""
    samples = json.loads(row["samples"]) if isinstance(row["samples"], str) else row["samples"]
    timed = sum(samples or []) * (row["steps_per_sample"] or 1)
    return (row["first_step_s"] or 0.0) + (row["warmup_s"] or 0.0) + timed


def _rows(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in con.execute(
                "SELECT status, started_at, finished_at, first_step_s, warmup_s, samples, "
                "steps_per_sample FROM runs ORDER BY id"
            )
        ]
    finally:
        con.close()


def _env(src: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": src}


def bench_once(src: str, device: str, tmp: Path) -> dict[str, Any]:
    """One `paradnn bench` from outside: wall, measured phases, the rest."""
    db = tmp / f"bench-{time.monotonic_ns()}.db"
    argv = [sys.executable, "-m", "paradnn", "bench", *BENCH_ARGS, "--device", device]
    argv += ["--db", str(db), "--remeasure", "0"]
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=_env(src), capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"bench failed ({src}): {p.stderr.strip()[-500:]}")
    (row,) = _rows(db)
    m = measured_s(row)
    return {"wall_s": wall, "measured_s": m, "outside_s": wall - m, "status": row["status"]}


def _toml(cfg: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in cfg.items()) + " }"


def sweep_file(path: Path, runs: int) -> None:
    """A sweep of `runs` small configs; a config's repeats get a larger batch, so no run key
    repeats (a repeated key would be skipped as already done)."""
    picked = []
    for i in range(runs):
        fam, cfg = SWEEP_RUNS[i % len(SWEEP_RUNS)]
        picked.append((fam, {**cfg, "batch": cfg["batch"] + i // len(SWEEP_RUNS)}))
    body = "".join(f'[[runs]]\nfamily = "{f}"\nconfig = {_toml(c)}\n' for f, c in picked)
    timing = "".join(f"{k} = {v}\n" for k, v in SWEEP_TIMING.items())
    path.write_text(f'name = "wall"\nprecisions = ["fp32"]\n{body}[timing]\n{timing}')


def sweep_once(src: str, device: str, runs: int, tmp: Path) -> dict[str, Any]:
    """One sweep of `runs` small configs in one worker: per-run overheads and the wall."""
    stamp = time.monotonic_ns()
    sweep = tmp / f"sweep-{stamp}.toml"
    sweep_file(sweep, runs)
    db = tmp / f"sweep-{stamp}.db"
    argv = [sys.executable, "-m", "paradnn", "run", "--preset", str(sweep), "--device", device]
    argv += ["--db", str(db), "--progress", "quiet", "--remeasure", "0"]
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=_env(src), capture_output=True, text=True, timeout=1200)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"sweep failed ({src}): {p.stderr.strip()[-500:]}")
    rows = [r for r in _rows(db) if r["status"] == "ok"]
    overheads = [
        _seconds(prev["finished_at"], r["finished_at"]) - measured_s(r)
        for prev, r in itertools.pairwise(rows)
    ]
    return {
        "wall_s": wall,
        "runs": len(rows),
        "measured_s": sum(measured_s(r) for r in rows),
        "first_run_s": _seconds(rows[0]["started_at"], rows[0]["finished_at"]) if rows else None,
        "overheads_s": overheads,
        "median_overhead_s": statistics.median(overheads) if overheads else None,
    }


def _med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summary(rounds: list[dict[str, Any]], side: str) -> dict[str, Any]:
    bench = [r[side]["bench"] for r in rounds]
    sweep = [r[side]["sweep"] for r in rounds]
    per_run = [o for s in sweep for o in s["overheads_s"]]
    return {
        "bench_wall_s": _med([b["wall_s"] for b in bench]),
        "bench_measured_s": _med([b["measured_s"] for b in bench]),
        "bench_outside_s": _med([b["outside_s"] for b in bench]),
        "sweep_wall_s": _med([s["wall_s"] for s in sweep]),
        "per_run_overhead_s": _med(per_run),
        "per_run_overhead_q1_q3_s": statistics.quantiles(per_run, n=4)[::2]
        if len(per_run) >= 2
        else None,
    }


def machine() -> dict[str, Any]:
    """What the figures were taken on: the CPU (model, cores, the ISA extensions that matter
    here), Python and torch, read without importing torch."""
    from importlib import metadata

    from paradnn import host

    flags = set(host.cpu_flags())
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    return {
        "cpu": host.cpu_model(),
        "cpu_count": os.cpu_count(),
        "isa": sorted(f for f in flags if f.startswith(("avx", "amx"))),
        "python": platform.python_version(),
        "torch": torch_version,
    }


def loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(ROOT / "src"), help="paradnn's src/ to time")
    ap.add_argument("--baseline-src", default=None, help="another src/ to time in alternation")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=5, help="bench + sweep pairs per side")
    ap.add_argument("--runs", type=int, default=12, help="runs per sweep")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.runs < 2:
        ap.error("--rounds must be ≥ 1 and --runs ≥ 2")
    sides = {"candidate": args.src}
    if args.baseline_src:
        sides["baseline"] = args.baseline_src
    rounds: list[dict[str, Any]] = []
    load_before = loadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(args.rounds):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            got: dict[str, Any] = {"load": loadavg()}
            for side in order:
                got[side] = {
                    "bench": bench_once(sides[side], args.device, tmp),
                    "sweep": sweep_once(sides[side], args.device, args.runs, tmp),
                }
                b, s = got[side]["bench"], got[side]["sweep"]
                print(
                    f"round {i + 1} {side:9}: bench {b['wall_s']:.2f} s wall "
                    f"({b['measured_s']:.2f} s measured); sweep of {s['runs']} runs "
                    f"{s['wall_s']:.1f} s, per-run overhead median {s['median_overhead_s']:.3f} s",
                    flush=True,
                )
            rounds.append(got)
    result: dict[str, Any] = {
        "benchmark": "harness_wall",
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": args.device,
        **machine(),
        "load_before": load_before,
        "load_after": loadavg(),
        "bench_argv": BENCH_ARGS,
        "sweep_runs": args.runs,
        "sweep_timing": SWEEP_TIMING,
        "sides": sides,
        "summary": {side: summary(rounds, side) for side in sides},
        "targets": {"bench_wall_s": BENCH_TARGET_S, "per_run_overhead_s": OVERHEAD_TARGET_S},
        "rounds": rounds,
    }
    if "baseline" in sides:
        pairs = [
            r["candidate"]["bench"]["wall_s"] / r["baseline"]["bench"]["wall_s"] for r in rounds
        ]
        result["bench_wall_ratio_median"] = statistics.median(pairs)
    cand = result["summary"]["candidate"]
    result["met"] = {
        "bench_wall": cand["bench_wall_s"] <= BENCH_TARGET_S,
        "per_run_overhead": cand["per_run_overhead_s"] is not None
        and cand["per_run_overhead_s"] <= OVERHEAD_TARGET_S,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for side, s in result["summary"].items():
        print(
            f"{side}: bench {s['bench_wall_s']:.2f} s wall (target ≤ {BENCH_TARGET_S} s), "
            f"{s['bench_outside_s']:.2f} s of it outside the measured phases; per-run "
            f"overhead {s['per_run_overhead_s']:.3f} s median (target ≤ {OVERHEAD_TARGET_S} s)"
        )
    print(f"→ {args.out}")
    return result


if __name__ == "__main__":
    main()
