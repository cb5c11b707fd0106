"""How close is `paradnn.memory`'s prediction to the memory a training step really uses?

For a sample of moderate configs of each family, this builds the model and a `TrainStep` (the
step measure/step.py times) on the local device, runs two warm-up steps, then measures one step:

- `hooks` (every device): the bytes of the tensors autograd saved that are still alive at the
  end of forward (`torch.autograd.graph.saved_tensors_hooks`, unique storages, parameters and
  buffers excluded), plus the measured parameters, buffers, gradients and optimizer state. This
  is what `MemoryEstimate.resident` predicts. It is a sum, not a peak: gradients and activations
  are never alive in full at the same time.
- `profiler_peak` (CPU, where torch keeps no allocator statistics): the largest sum of live
  tensor bytes in torch.profiler's memory timeline of the step — a real peak of tensor memory,
  without allocator overhead.
- `allocator_peak` (CUDA): `torch.cuda.max_memory_allocated` over the step, after
  `reset_peak_memory_stats`; `first_steps_peak` is the peak over building and the two warm-up
  steps, the window `execute()` records (it includes cudnn.benchmark's algorithm search).

`total` (the best estimate) is compared with the real peak, `lower_bound` must stay below it and
below the hooks sum. Results go to benchmarks/results/memory_prediction_<device type>.json.

    python benchmarks/memory_prediction.py [--device cpu] [--precision fp32 bf16] [--threads 2]
        [--configs 0 4 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from paradnn import families, memory
from paradnn.measure import environment
from paradnn.measure import precision as prec
from paradnn.measure.device import resolve
from paradnn.measure.saved_bytes import profiler_peak_bytes, saved_tensor_bytes
from paradnn.measure.step import TrainStep

OUT = Path(__file__).resolve().parent / "results"
# (family, config, optimizer): moderate sizes a 2-core CPU measures in about a minute.
CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 128}, "rmsprop"),
    ("fc", {"layers": 8, "nodes": 512, "input": 2000, "output": 200, "batch": 512}, "momentum"),
    ("fc", {"layers": 16, "nodes": 256, "input": 4000, "output": 600, "batch": 1024}, "sgd"),
    ("fc", {"layers": 2, "nodes": 2048, "input": 8000, "output": 1000, "batch": 64}, "rmsprop"),
    ("cnn", {"blocks": 1, "filters": 16, "image": 64, "output": 100, "batch": 16}, "rmsprop"),
    (
        "cnn",
        {"blocks": 2, "filters": 8, "image": 96, "output": 500, "batch": 4, "block": "bottleneck"},
        "momentum",
    ),
    ("cnn", {"blocks": 1, "filters": 32, "image": 48, "output": 1000, "batch": 8}, "sgd"),
    (
        "cnn",
        {
            "blocks": 1,
            "filters": 16,
            "image": 112,
            "output": 200,
            "batch": 4,
            "block": "bottleneck",
        },
        "rmsprop",
    ),
    (
        "rnn",
        {"layers": 2, "embed": 256, "length": 20, "vocab": 1000, "batch": 32, "cell": "lstm"},
        "rmsprop",
    ),
    (
        "rnn",
        {"layers": 3, "embed": 128, "length": 30, "vocab": 256, "batch": 64, "cell": "gru"},
        "momentum",
    ),
    (
        "rnn",
        {"layers": 2, "embed": 500, "length": 10, "vocab": 32, "batch": 64, "cell": "rnn"},
        "sgd",
    ),
    (
        "rnn",
        {"layers": 1, "embed": 100, "length": 50, "vocab": 1024, "batch": 16, "cell": "lstm"},
        "momentum",
    ),
]


def measure_one(
    name: str, values: dict[str, Any], precision: str, optimizer: str, device: torch.device
) -> dict[str, Any]:
    """Predict, then build and measure a steady-state step the way execute() runs it."""
    family = families.get(name)
    cfg = family.config(values)
    est = memory.predict(name, cfg, precision, optimizer, device_type=device.type)
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    with prec.tf32_flags(precision):
        with torch.device(device):
            built = family.build(cfg, device, precision)
        step = TrainStep(built, optimizer, precision, device)
        del built
        for _ in range(2):
            step()
        measured: dict[str, Any] = {}
        if cuda:
            torch.cuda.synchronize(device)
            measured["first_steps_peak"] = torch.cuda.max_memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            step()
            torch.cuda.synchronize(device)
            measured["allocator_peak"] = peak = torch.cuda.max_memory_allocated(device)
        else:
            measured["profiler_peak"] = peak = profiler_peak_bytes(step)
        hooks = saved_tensor_bytes(step)
    del step
    gc.collect()
    measured["hooks"] = {**hooks, "resident": sum(hooks.values())}
    predicted = {
        **dataclasses.asdict(est),
        "resident": est.resident,
        "total": est.total,
        "lower_bound": est.lower_bound,
    }
    return {
        "family": name,
        "config": dict(values),
        "precision": precision,
        "optimizer": optimizer,
        "predicted": predicted,
        "measured": measured,
        "error": {
            "activations_vs_hooks": _rel(est.activations, hooks["activations"]),
            "resident_vs_hooks": _rel(est.resident, measured["hooks"]["resident"]),
            "total_vs_peak": _rel(est.total, peak),
            "lower_bound_vs_peak": _rel(est.lower_bound, peak),
        },
        "lower_bound_holds": est.lower_bound <= min(peak, measured["hooks"]["resident"]),
    }


def _rel(predicted: int, measured: int) -> float:
    return (predicted - measured) / measured


def _summary(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    errs = sorted(abs(r["error"][key]) for r in rows)
    return {"median_abs": errs[len(errs) // 2], "max_abs": errs[-1]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N | auto")
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=prec.PRECISIONS)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--configs",
        type=int,
        nargs="+",
        default=None,
        help=f"Only these entries of CONFIGS, by index 0-{len(CONFIGS) - 1} (default: all)",
    )
    args = ap.parse_args(argv)
    if args.configs is not None and not all(0 <= i < len(CONFIGS) for i in args.configs):
        ap.error(f"--configs: indices must be in 0..{len(CONFIGS) - 1}, got {args.configs}")
    chosen = CONFIGS if args.configs is None else [CONFIGS[i] for i in args.configs]

    device = resolve(args.device)
    torch.set_num_threads(args.threads)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for precision in args.precision:
        reason = prec.unsupported_reason(precision, device)
        if reason:
            print(f"skip {precision}: {reason}")
            continue
        for name, values, optimizer in chosen:
            row = measure_one(name, values, precision, optimizer, device)
            rows.append(row)
            _print(row)
    if not rows:
        raise SystemExit("no precision could be measured")
    peak = "allocator_peak" if device.type == "cuda" else "profiler_peak"
    env = environment.collect(device, args.threads)
    result = {
        "device": str(device),
        "device_name": env["gpu_name"] or env["cpu_model"],
        "torch": torch.__version__,
        "threads": args.threads,
        "peak": peak,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - started, 1),
        "configs": rows,
        "summary": {
            key: _summary(rows, key)
            for key in ("activations_vs_hooks", "resident_vs_hooks", "total_vs_peak")
        },
        "lower_bound_always_holds": all(r["lower_bound_holds"] for r in rows),
    }
    out = args.out or OUT / f"memory_prediction_{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    s = result["summary"]
    print(
        f"|error| median/max: activations {_pct(s['activations_vs_hooks'])}, resident "
        f"{_pct(s['resident_vs_hooks'])}, total vs {peak} {_pct(s['total_vs_peak'])}; "
        f"lower bound always below: {result['lower_bound_always_holds']} → {out}"
    )
    return result


def _pct(s: dict[str, float]) -> str:
    return f"{s['median_abs']:.1%}/{s['max_abs']:.1%}"


def _mib(n: int) -> str:
    return f"{n / 2**20:8.1f}"


def _print(row: dict[str, Any]) -> None:
    p, e = row["predicted"], row["error"]
    label = " ".join(f"{k}={v}" for k, v in row["config"].items())
    peak = row["measured"].get("allocator_peak", row["measured"].get("profiler_peak"))
    print(
        f"{row['precision']:5} {row['family']:3} {label:62.62} {row['optimizer']:8} "
        f"total {_mib(p['total'])} lower {_mib(p['lower_bound'])} peak {_mib(peak)} MiB "
        f"({e['total_vs_peak']:+.1%}); resident vs hooks {e['resident_vs_hooks']:+.1%}",
        flush=True,
    )


if __name__ == "__main__":
    main()
