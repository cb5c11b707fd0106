"""What does a cluster engine cost per config? Configs per hour through Ray and through the
Slurm path (submitit's local executor) against paradnn's local workers, on one machine.

The same tiny sweep (FC configs whose measurement takes well under a second) is run three
times into fresh databases: local workers (one worker process, reused), `--executor ray` on a
one-node Ray cluster started here, and `--executor slurm` with submitit's local executor. The
difference in wall time per config is the engine's overhead: Ray's scheduling and, above all,
the fresh worker process each cluster config starts (torch's import) where local workers are
reused. Writes benchmarks/results/cluster_overhead.json.

    python benchmarks/cluster_overhead.py [--configs 12] [--cpus 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from paradnn import api, host
from paradnn.config import ExecutorSettings

OUT = Path(__file__).resolve().parent / "results" / "cluster_overhead.json"
FC = '[[runs]]\nfamily = "fc"\nconfig = {{ layers = {}, nodes = 16, batch = 4, input = 8 }}\n'
TIMING = "[timing]\nmin_time_s = 0.1\nmax_time_s = 1\nwarmup_min_time_s = 0.05\n"


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def timed(label: str, fn) -> float:
    t0 = time.monotonic()
    got = fn()
    took = time.monotonic() - t0
    statuses = sorted({r.status for r in got})
    print(f"{label}: {len(got)} configs in {took:.1f} s ({statuses})", flush=True)
    return took


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--cpus", type=int, default=1, help="CPUs (threads) per config")
    args = p.parse_args()
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="paradnn-cluster-"))
    sweep = tmp / "tiny.toml"
    sweep.write_text(TIMING + "".join(FC.format(n) for n in range(1, args.configs + 1)))

    def run(db: str, executor: ExecutorSettings | None = None):
        return api.run(str(sweep), db=db, device="cpu", threads=args.cpus, executor=executor)

    results = {"local": timed("local", lambda: run(str(tmp / "local.db")))}

    import ray

    t0 = time.monotonic()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.monotonic() - t0
    try:
        ray_exec = ExecutorSettings(kind="ray", cpus_per_task=args.cpus)
        results["ray"] = timed("ray", lambda: run(str(tmp / "ray.db"), ray_exec))
    finally:
        ray.shutdown()
    slurm = ExecutorSettings(
        kind="slurm", cluster="local", folder=str(tmp / "slurm"), cpus_per_task=args.cpus,
        configs_per_job=args.configs,
    )  # fmt: skip
    results["slurm-local"] = timed("slurm (local)", lambda: run(str(tmp / "slurm.db"), slurm))

    n = args.configs
    doc = {
        "what": "wall time per config of a tiny sweep, per executor, on one machine",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": host.cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "versions": {m: _version(m) for m in ("torch", "ray", "submitit")},
        # Other work on the machine inflates every executor's time, cluster ones most (their
        # worker start-up is CPU-bound): the load averages say how quiet it was.
        "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
        "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        "configs": n,
        "threads_per_config": args.cpus,
        "ray_cluster_start_s": round(ray_start, 2),
        "executors": {
            k: {
                "wall_s": round(v, 2),
                "s_per_config": round(v / n, 3),
                "configs_per_hour": round(3600 * n / v),
                "overhead_s_per_config_vs_local": round((v - results["local"]) / n, 3),
            }
            for k, v in results.items()
        },
        "note": "a cluster config starts its own worker process (torch's import, ~2-4 s on a "
        "2-core VM); local workers are reused for up to --recycle-every runs",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["executors"], indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
