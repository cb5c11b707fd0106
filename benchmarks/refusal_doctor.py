"""Issue 41's two wall times, as a user sees them (a fresh `python -m paradnn` each time):

* `bench fc layers=128 nodes=8192 batch=16384` — predicted 160 GiB — refused before any
  worker (exit 2); before the fix it built the model for 209 s until the kernel's OOM killer
  struck (issue 41), which is not re-run here: it kills other programs first;
* `doctor --device cpu --budget 5 --json`: its wall time against the budget, with the report's
  own `seconds` and, from this version on, `startup_s` (Python and torch's start).

`--before-src DIR` times the doctor of another paradnn's `src/` too (e.g. `git archive <commit>
src | tar -x -C /tmp/before`). Every figure is measured here, with the CPU, its flags, torch and
the load average around each command, and written to `--out`.

    PYTHONPATH=src python benchmarks/refusal_doctor.py --rounds 3 --before-src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "refusal_doctor_cpu.json"
OVERSIZED = ["bench", "fc", "layers=128", "nodes=8192", "batch=16384"]


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _run(src: Path, args: list[str], cwd: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = _load()
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "paradnn", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.monotonic() - t0
    return {
        "args": args,
        "wall_s": round(wall, 2),
        "returncode": p.returncode,
        "stderr_tail": p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else [],
        "stdout": p.stdout,
        "loadavg_before": before,
        "loadavg_after": _load(),
    }


def _doctor(src: Path, cwd: str, budget: float) -> dict[str, Any]:
    got = _run(src, ["doctor", "--device", "cpu", "--budget", str(budget), "--json"], cwd)
    report = json.loads(got.pop("stdout") or "{}")
    got["report_seconds"] = report.get("seconds")
    got["report_startup_s"] = report.get("startup_s")
    got["checks"] = {c["name"]: c["status"] for c in report.get("checks", [])}
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--before-src", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    import torch

    from paradnn import host

    variants = {"after": ROOT / "src"}
    if a.before_src:
        variants["before"] = a.before_src
    result: dict[str, Any] = {
        "cpu_model": host.cpu_model(),
        "cpu_flags": sorted(f for f in host.cpu_flags() if f.startswith(("avx", "amx", "fma"))),
        "usable_cpus": len(host.usable_cpus()),
        "torch": torch.__version__,
        "budget_s": a.budget,
        "bench_refusal": [],
        "doctor": {k: [] for k in variants},
        "not_run": {
            "bench_refusal.before": "before the fix the oversized bench builds the model until "
            "the kernel's OOM killer strikes (209 s in issue 41), killing other programs on "
            "this shared machine first"
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            got = _run(variants["after"], [*OVERSIZED, "--db", "r.db"], tmp)
            got.pop("stdout")
            got["db_created"] = (Path(tmp) / "r.db").exists()
            result["bench_refusal"].append(got)
            for name, src in variants.items():
                result["doctor"][name].append(_doctor(src, tmp, a.budget))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in result["bench_refusal"]:
        load = r["loadavg_before"]
        print(f"bench refusal: {r['wall_s']} s, exit {r['returncode']} (load {load})")
    for name, runs in result["doctor"].items():
        for r in runs:
            print(
                f"doctor {name}: {r['wall_s']} s wall, report {r['report_seconds']} s "
                f"(start-up {r['report_startup_s']}) of --budget {a.budget:g}, exit "
                f"{r['returncode']}, load {r['loadavg_before']}"
            )
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
