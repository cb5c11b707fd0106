"""The same small configs on PyTorch (eager) and on JAX/XLA, on this CPU (docs/jax.md).

A few small configs per family (FC; CNN residual and bottleneck; RNN, LSTM, GRU; Transformer)
run once per backend through `paradnn run` (worker processes, the production timer and quality
rules; one thread each: torch's `--threads 1`, XLA's single-threaded Eigen) into a fresh
database; config by config, the two backends back to back in alternating order, so slow drifts
of the machine's load fall on both sides. Reported: examples/s of JAX over torch per config and
per family (geometric mean) with 95% bootstrap intervals (`compare --by backend`), XLA's FLOPs
over the analytic FLOPs per family, and XLA's lowering and compile seconds. Noisy runs are kept
and counted; the machine's load is recorded beside the figures. Writes
benchmarks/results/jax_vs_torch_cpu.json.

    python benchmarks/jax_vs_torch.py [--max-time 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from paradnn import analysis, api, host
from paradnn.analysis import backends

OUT = Path(__file__).resolve().parent / "results" / "jax_vs_torch_cpu.json"
CONFIGS = [
    ("fc", {"layers": 2, "nodes": 128, "input": 256, "output": 100, "batch": 32}),
    ("fc", {"layers": 4, "nodes": 256, "input": 512, "output": 100, "batch": 64}),
    ("fc", {"layers": 8, "nodes": 512, "input": 1000, "output": 100, "batch": 128}),
    (
        "cnn",
        {"blocks": 1, "filters": 8, "image": 32, "output": 10, "batch": 8, "block": "residual"},
    ),
    (
        "cnn",
        {"blocks": 1, "filters": 8, "image": 32, "output": 10, "batch": 8, "block": "bottleneck"},
    ),
    (
        "cnn",
        {"blocks": 1, "filters": 16, "image": 64, "output": 10, "batch": 4, "block": "residual"},
    ),
    ("rnn", {"layers": 1, "embed": 64, "length": 20, "vocab": 32, "batch": 16, "cell": "rnn"}),
    ("rnn", {"layers": 1, "embed": 64, "length": 10, "vocab": 32, "batch": 16, "cell": "lstm"}),
    ("rnn", {"layers": 2, "embed": 128, "length": 20, "vocab": 32, "batch": 32, "cell": "gru"}),
    ("transformer", {"layers": 2, "d_model": 64, "length": 32, "vocab": 256, "batch": 4}),
    ("transformer", {"layers": 2, "d_model": 128, "length": 64, "vocab": 512, "batch": 4}),
]


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def _sweep(path: Path, family: str, config: dict, order: list[str], max_time: float) -> None:
    """One config on both backends, in `order` (alternated config by config: ABBA)."""
    path.write_text(
        f'name = "jax-vs-torch"\nbackends = {json.dumps(order)}\n'
        f'[[runs]]\nfamily = "{family}"\nconfig = {json.dumps(config).replace(":", " =")}\n'
        f"[timing]\nmin_time_s = 1.0\nmax_time_s = {max_time}\n"
    )


def _clean(v):
    if isinstance(v, float):
        return None if v != v else round(v, 4)
    return v


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-time", type=float, default=4.0)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="paradnn-jax-"))
    sweep, db = tmp / "jax_vs_torch.toml", tmp / "runs.db"
    load_before = os.getloadavg()
    t0 = time.monotonic()
    records = []
    for i, (family, config) in enumerate(CONFIGS):  # each pair close in time, order alternated
        order = ["torch", "jax"] if i % 2 == 0 else ["jax", "torch"]
        _sweep(sweep, family, config, order, args.max_time)
        records += api.run(str(sweep), device="cpu", threads=1, db=str(db))
        print(f"{i + 1}/{len(CONFIGS)} {family} done", flush=True)
    took = time.monotonic() - t0
    load_after = os.getloadavg()
    data = analysis.load([str(db)])
    st = backends.study(data, "torch-eager", include_noisy=True)
    fam = st.families if st is not None else None
    pair_cols = ["family", "config_key", "value_a", "value_b", "speedup", "ci_low", "ci_high"]
    pair_cols += ["call", "xla_lower_s", "xla_compile_s", "xla_flops_ratio"]
    out = {
        "what": __doc__.splitlines()[0],
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": host.cpu_model() or platform.processor(),
        "isa": sorted(set(host.cpu_flags()) & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}),
        "cores": os.cpu_count(),
        "threads_per_run": 1,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "wall_s": round(took, 1),
        "versions": {m: _version(m) for m in ("torch", "jax", "jaxlib", "optax", "paradnn")},
        "statuses": dict(Counter(str(r.status) for r in records)),
        "noisy_runs": sum(1 for r in records if r.quality == "noisy"),
        "per_family": []
        if fam is None
        else [{k: _clean(v) for k, v in row.items()} for row in fam.to_dict("records")],
        "per_config": []
        if st is None
        else [
            {k: _clean(v) for k, v in row.items() if k in pair_cols}
            for row in st.pairs.to_dict("records")
        ],
        "xla_flops_agreement": [
            {k: _clean(v) for k, v in row.items()}
            for row in backends.flop_agreement(data).to_dict("records")
        ],
        "failures": backends.failures(data).to_dict("records"),
    }
    OUT.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(json.dumps({k: out[k] for k in ("per_family", "xla_flops_agreement")}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
