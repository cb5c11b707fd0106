"""How much of a training step is host data infeed? The `infeed` preset measured on this CPU.

Runs `paradnn run --preset infeed` (small CNNs and SqueezeNet 1.1 on device data, pinned host
tensors and a JPEG DataLoader pipeline with 0 and 2 workers; docs/infeed.md) into a fresh
database, then writes what each run recorded (infeed share, batch wait, loader-only and
model-only rates, input-bound, host CPU), the gain of removing the infeed per model (device
data over the pipeline, with its bootstrap CI), observation 4's verdict and the simulator's
input term against the measurements to benchmarks/results/infeed.json. Noisy runs are kept
(a shared machine flags most of them): the load averages and each run's quality say how
quiet it was.

    python benchmarks/infeed.py [--threads 2] [--db PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from paradnn import analysis as A
from paradnn import api, host
from paradnn.analysis import infeed as I
from paradnn.sim.infeed_check import check

OUT = Path(__file__).resolve().parent / "results" / "infeed.json"
KEEP = (
    "family", "config", "data_source", "loader_workers", "status", "step_time_s",
    "examples_per_s", "infeed_share", "data_wait_s", "data_copy_s", "loader_examples_per_s",
    "model_only_examples_per_s", "input_bound", "host_cpu_cores", "host_cpu_share", "quality",
    "others_cpu_frac", "threads",
)  # fmt: skip


def _clean(v):
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 6)
    return v


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--db", default=None, help="database (default: a fresh temporary one)")
    args = p.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp(prefix="paradnn-infeed-")) / "infeed.db")
    load_before = os.getloadavg()
    t0 = time.monotonic()
    recs = api.run("infeed", db=db, device="cpu", threads=args.threads)
    wall = time.monotonic() - t0
    data = A.load([db])
    runs = []
    for r in api.results(db):
        if r["sweep"] != "infeed":
            continue
        runs.append({k: _clean(r.get(k)) for k in KEEP})
    gains, sims = {}, {}
    for source in I.fed_sources(data):
        st = I.study(data, source)
        table = st.real.to_dict("records")
        gains[source] = [{k: _clean(v) for k, v in row.items()} for row in table]
        sims[source] = check(I.simulator_rows(st.runs)).summary()
    f = I.infeed_finding(data)  # every run: this machine flags most runs noisy under load
    doc = {
        "what": "the infeed preset (docs/infeed.md) measured on this CPU: per run infeed share, "
        "loader-only and model-only rates, input-bound; per model the gain of device data over "
        "the host-fed run (seed 000 §4.4); observation 4's verdict",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": host.cpu_model(),
        "cpus": os.cpu_count(),
        "isa_caps": host.caps(),
        "python": platform.python_version(),
        "torch": __import__("torch").__version__,
        "threads": args.threads,
        "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
        "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(wall, 1),
        "statuses": sorted({r.status for r in recs}),
        "runs": runs,
        "gain_per_model": gains,
        "simulator": sims,
        "observation_4": {"verdict": f.verdict, "evidence": f.evidence, "rule": f.rule},
        "note": "on a CPU the 'device' is the host: loader workers and the model share the same "
        "cores, so a pipeline's cost shows as a longer step even when the wait is hidden",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    for r in runs:
        share = r["infeed_share"]
        print(
            f"{r['family']:14} {r['data_source']:8} w={r['loader_workers']!s:4} "
            f"{r['status']:6} step {1e3 * (r['step_time_s'] or 0):8.2f} ms  "
            f"infeed {'-' if share is None else f'{share:.1%}':>6}  bound={r['input_bound']}"
        )
    print(f"observation 4: {f.verdict}: {f.evidence}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
