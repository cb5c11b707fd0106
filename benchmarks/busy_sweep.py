"""A 6-run sweep on a machine kept busy by other processes (issue 45 item 5): how long it takes,
how many attempts it stores, how many end good, how many lines it prints on stderr. Run it on
this checkout and on an earlier one (`git archive <commit> src | tar -x -C DIR`) for the before
and after:

    python benchmarks/busy_sweep.py --src src --label after
    python benchmarks/busy_sweep.py --src /tmp/before/src --label before

It starts `--loops` busy loops (`python -c 'while 1: pass'`, one per core by default plus one)
for the length of the sweep and kills them, each by its own process id, however the sweep ends.
`paradnn run` uses its defaults (re-measure 2, back-off 10 s). Figures go to
benchmarks/results/busy_sweep.json under the label (other labels are kept), with the CPU, its
ISA flags, torch's version and the load average before the loops started: a shared machine's
figures are disturbed by its other work, and say so. Slow on purpose: not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "busy_sweep.json"
SWEEP = """precisions = ["fp32"]
[families.fc]
layers = 2
nodes = [64, 256, 1024]
input = 1000
output = 200
batch = [32, 128]

[timing]
min_time_s = 0.3
max_time_s = 3.0
warmup_min_time_s = 0.2
warmup_max_time_s = 5.0
target_ci_rel = 0.05
"""


def _machine() -> dict:
    model, flags = platform.processor(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1]
                break
    except OSError:
        pass
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags.split()]
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = None
    return {
        "cpu_model": model,
        "isa": isa,
        "cores": len(os.sched_getaffinity(0)),
        "torch": torch_version,
        "loadavg_before": os.getloadavg()[0],
    }


def _stored(db: Path) -> dict:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT run_key, quality, ci_rel FROM runs WHERE status = 'ok'")
        rows = rows.fetchall()
    finally:
        conn.close()
    good = {k for k, q, _ in rows if q == "good"}
    keys = {k for k, _, _ in rows}
    cis = [c for _, _, c in rows if c is not None]
    return {
        "attempts": len(rows),
        "configs": len(keys),
        "configs_good": len(good),
        "attempts_noisy": sum(q == "noisy" for _, q, _ in rows),
        "worst_ci_rel": max(cis) if cis else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    ap.add_argument("--label", required=True)
    ap.add_argument("--loops", type=int, default=len(os.sched_getaffinity(0)) + 1)
    ap.add_argument("--remeasure", type=int, help="PARADNN_REMEASURE (default: the command's)")
    args = ap.parse_args()
    machine = _machine()
    env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
    env.pop("PARADNN_REMEASURE", None)  # the command's own default
    if args.remeasure is not None:
        env["PARADNN_REMEASURE"] = str(args.remeasure)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "busy.toml").write_text(SWEEP)
        db = work / "busy.db"
        cmd = [sys.executable, "-m", "paradnn", "run", "--preset", str(work / "busy.toml")]
        cmd += ["--db", str(db), "--device", "cpu"]
        loops = [
            subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.loops)
        ]
        try:
            time.sleep(1.0)  # the loops are running before the sweep looks at the load
            t0 = time.monotonic()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            wall = time.monotonic() - t0
        finally:
            for p in loops:  # each loop by its own id
                p.kill()
                p.wait()
        stderr = done.stderr.splitlines()
        found = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "src": str(args.src),
            "busy_loops": args.loops,
            "remeasure": "default" if args.remeasure is None else args.remeasure,
            "exit": done.returncode,
            "wall_s": round(wall, 1),
            **_stored(db),
            "stderr_lines": len(stderr),
            "warning_lines": sum(ln.startswith("warning") for ln in stderr),
            "remeasure_lines": sum("re-measur" in ln for ln in stderr),
            "noisy_lines": [ln for ln in stderr if "noisy" in ln][:8],
            "last_lines": stderr[-4:],  # the end of the sweep: what became of the noisy runs
            "machine": machine,
            "note": "a shared 2-core VM: other engineers' work adds to the busy loops' load",
        }
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results[args.label] = found
    OUT.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(found, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
