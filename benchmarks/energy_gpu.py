"""The GPU checks of reference/energy.md §3.8, in one command, on whatever NVIDIA GPU is here.

1. the energy counter's update period, and whether field 83's timestamp marks the update;
2. counter vs integrated instant power on a steady GEMM load, and on a square wave whose period
   (300 ms) is not a multiple of 100 ms (does the counter share the instant field's 25% duty?);
3. `nvmlDeviceGetSamples(TOTAL_POWER_SAMPLES)`: buffer depth and sample spacing;
4. INSTANT power at GPU scope, AVERAGE at memory scope;
5. per-call latency of each NVML read from a Python thread while a PyTorch loop runs, and the
   sampler's max gap;
6. idle power before and after a CUDA context exists (persistence mode recorded, not changed);
7. J/sample of a ResNet-style CNN and an FC config through `paradnn bench --energy`.

    python benchmarks/energy_gpu.py [--device cuda:0] [--seconds 15] [--skip-bench]

Writes benchmarks/results/energy_gpu.json. Exits with a message (code 1) without a GPU or NVML.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paradnn.measure.energy import Unavailable, measure_idle, open_meter
from paradnn.measure.energy import nvml as nv

OUT = Path(__file__).resolve().parent / "results" / "energy_gpu.json"
FC = {"layers": 8, "nodes": 4096, "input": 2000, "output": 1000, "batch": 1024}
CNN = {"blocks": 2, "filters": 64, "image": 224, "output": 1000, "batch": 128,
       "block": "bottleneck"}  # fmt: skip


def fail(msg: str) -> None:
    print(f"energy_gpu: {msg}", file=sys.stderr)
    sys.exit(1)


def counter_updates(src: nv.NvmlSource, seconds: float = 2.0) -> dict[str, Any]:
    """Change times of the counter (tight loop) and of field 83's timestamp."""
    pynvml = src.nvml
    changes, stamps, last, last_ts = [], [], src.counter_j(), None
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        now = time.monotonic()
        value = src.counter_j()
        if value != last:
            changes.append(now)
            last = value
        (f,) = pynvml.nvmlDeviceGetFieldValues(src.handle, [83])
        if f.nvmlReturn == 0 and f.timestamp != last_ts:
            stamps.append(f.timestamp / 1e6)
            last_ts = f.timestamp
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    sgaps = [b - a for a, b in itertools.pairwise(stamps)]
    return {
        "counter_changes": len(changes),
        "update_period_s_median": statistics.median(gaps) if gaps else None,
        "update_period_s_min": min(gaps) if gaps else None,
        "field83_timestamp_changes": len(stamps),
        "field83_timestamp_period_s_median": statistics.median(sgaps) if sgaps else None,
    }


def load(device, kind: str, seconds: float, square_s: float = 0.15):
    """A steady GEMM loop, or a square wave: square_s busy then square_s idle."""
    import torch

    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if kind == "steady":
            for _ in range(20):
                a @ a
            torch.cuda.synchronize(device)
        else:
            t = time.monotonic()
            while time.monotonic() - t < square_s:
                a @ a
                torch.cuda.synchronize(device)
            time.sleep(square_s)


def window(device: str, kind: str, seconds: float, sync) -> dict[str, Any]:
    meter = open_meter(device, sync=sync)
    try:
        meter.begin()
        load(device, kind, seconds)
        meter.end()
        res = meter.result()
    finally:
        meter.close()
    (gpu,) = [d for d in res["devices"] if d["kind"] == "gpu"]
    return {
        "method": gpu["method"],
        "energy_j": gpu["energy_j"],
        "reason": gpu["reason"],
        "avg_power_w": gpu.get("avg_power_w"),
        "peak_power_w": gpu.get("peak_power_w"),
        "cross_check": gpu.get("cross_check"),
        "quantization_bound_j": gpu.get("quantization_bound_j"),
        "duration_s": res["window"]["duration_s"],
        "sampling": res["sampling"],
    }


def buffered_samples(src: nv.NvmlSource) -> dict[str, Any]:
    pynvml = src.nvml
    try:
        _, samples = pynvml.nvmlDeviceGetSamples(src.handle, pynvml.NVML_TOTAL_POWER_SAMPLES, 0)
    except pynvml.NVMLError as e:
        return {"error": str(e)}
    ts = [s.timeStamp / 1e6 for s in samples]
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    return {
        "count": len(samples),
        "span_s": (ts[-1] - ts[0]) if ts else None,
        "spacing_s_median": statistics.median(gaps) if gaps else None,
        "first_values_mw": [s.sampleValue.uiVal for s in samples[:5]],
    }


def fields(src: nv.NvmlSource) -> dict[str, Any]:
    pynvml = src.nvml
    out = {}
    for name, fid, scope in (
        ("instant_gpu", nv.FI_POWER_INSTANT, 0),
        ("instant_module", nv.FI_POWER_INSTANT, 1),
        ("average_gpu", nv.FI_POWER_AVERAGE, 0),
        ("average_memory", nv.FI_POWER_AVERAGE, 2),
    ):
        (f,) = pynvml.nvmlDeviceGetFieldValues(src.handle, [(fid, scope)])
        out[name] = {"return": f.nvmlReturn, "mw": f.value.uiVal if f.nvmlReturn == 0 else None}
    return out


def latencies(src: nv.NvmlSource, device: str, seconds: float = 5.0) -> dict[str, Any]:
    """Per-call latency of each read from a thread while a PyTorch loop runs."""
    calls = {
        "energy_counter": src.counter_j,
        "instant_field": lambda: src.nvml.nvmlDeviceGetFieldValues(
            src.handle, [(nv.FI_POWER_INSTANT, 0)]
        ),
        "power_usage": lambda: src.nvml.nvmlDeviceGetPowerUsage(src.handle),
    }
    times: dict[str, list[float]] = {k: [] for k in calls}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            for k, fn in calls.items():
                t = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t)
            stop.wait(0.05)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    load(device, "steady", seconds)
    stop.set()
    th.join()
    return {
        k: {"n": len(v), "median_ms": statistics.median(v) * 1e3, "max_ms": max(v) * 1e3}
        for k, v in times.items()
        if v
    }


def bench(device: str) -> list[dict[str, Any]]:
    from paradnn import api

    out = []
    with tempfile.TemporaryDirectory() as d:
        for fam, cfg in (("fc", FC), ("cnn", CNN)):
            for prec in ("fp32", "bf16"):
                rec = api.bench(fam, cfg, precision=prec, device=device, energy=True,
                                db=str(Path(d) / "e.db"))  # fmt: skip
                out.append({
                    k: getattr(rec, k)
                    for k in ("family", "config", "precision", "status", "error", "step_time_s",
                              "examples_per_s", "energy_j", "energy_window_s", "avg_power_w",
                              "energy_per_step_j", "energy_per_sample_j", "samples_per_j",
                              "energy_method", "energy_scope", "idle_power_w", "nulls")
                })  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args()
    index = int(args.device.split(":")[1]) if ":" in args.device else 0
    try:
        src = nv.open_nvml(index)
    except Unavailable as e:
        fail(f"no GPU energy interface here ({e.reason}: {e.detail}); nothing to check")
    out: dict[str, Any] = {
        "device": src.info(),
        "nvml_driver": src.nvml.nvmlSystemGetDriverVersion(),
        "method_chosen": src.method,
        "min_window_s": src.min_window_s,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        out["persistence_mode"] = src.nvml.nvmlDeviceGetPersistenceMode(src.handle)
    except Exception as e:  # recorded, never changed
        out["persistence_mode"] = f"unknown: {e}"
    out["idle_no_context"] = measure_idle(open_meter(args.device), 5.0)  # before torch touches it
    import torch

    if not torch.cuda.is_available():
        fail("NVML sees a GPU but torch has no CUDA; install a CUDA build of torch")
    dev = torch.device(args.device)
    torch.ones(1, device=dev)  # a context now exists
    out["torch"], out["cuda"] = torch.__version__, torch.version.cuda
    out["gpu_name"] = torch.cuda.get_device_name(dev)
    out["idle_with_context"] = measure_idle(open_meter(args.device), 5.0)

    def sync():
        torch.cuda.synchronize(dev)

    checks = [
        ("counter_update", lambda: counter_updates(src)),
        ("steady_gemm", lambda: window(args.device, "steady", args.seconds, sync)),
        ("square_300ms", lambda: window(args.device, "square", args.seconds, sync)),
        ("buffered_samples", lambda: buffered_samples(src)),
        ("power_fields", lambda: fields(src)),
        ("nvml_latency_under_load", lambda: latencies(src, args.device)),
    ]
    if not args.skip_bench:
        checks.append(("bench_energy", lambda: bench(args.device)))
    for name, fn in checks:
        t = time.monotonic()
        try:
            out[name] = fn()
        except Exception as e:  # one failed check must not lose the others
            out[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"{name}: {time.monotonic() - t:.1f} s", file=sys.stderr)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(out, indent=1, default=str) + "\n")
    src.close()
    print(json.dumps(out, indent=1, default=str))
    print(f"written to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
