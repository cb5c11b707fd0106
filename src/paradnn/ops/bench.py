"""Op micro-benchmarks: the accelerator study's Table 4 (matmul and conv2d at three sizes each).

Shapes are the paper's, exactly (seed 002, §3.2 "Operators", Table 4 "Input tensor sizes for ops"):

    matmul-2048   N(2048, 2048)                                      FLOPs 1.72E+10
    matmul-4096   N(4096, 4096)                                      FLOPs 1.37E+11
    matmul-8192   N(8192, 8192)                                      FLOPs 1.10E+12
    conv2d-I      F(256, 224, 224, 3)   K(7, 7, 3, 64)    S(2, 2)    FLOPs 5.72E+10
    conv2d-II     F(128, 112, 112, 64)  K(3, 3, 64, 128)  S(1, 1)    FLOPs 2.28E+11
    conv2d-III    F(256, 56, 56, 128)   K(3, 3, 128, 256) S(1, 1)    FLOPs 4.40E+11

F is (batch, height, width, in_channels) (TensorFlow's NHWC), K is (kh, kw, in, out). With *valid*
padding (no padding, TensorFlow's default) the output is Ho = (H − k) // s + 1, and

    matmul  fwd FLOPs = 2·N³
    conv2d  fwd FLOPs = 2·B·Ho·Wo·Cout·Cin·k²

reproduce the paper's FLOPs row to its three printed digits (tests assert it), so the paper's
figures are forward-only. For "fwd+bwd" both operands require grad: the backward computes the
gradient of the input (dgrad) and of the weight (wgrad), each the same FLOPs as the forward, so
fwd+bwd = 3 × fwd, for matmul (dA = dC·Bᵀ, dB = Aᵀ·dC) and for every conv, including conv2d-I
whose input is an image (a real first layer would skip its dgrad; the micro-benchmark keeps it
so that the ×3 accounting holds uniformly).

PyTorch runs the convs in NCHW (its default layout); the shape recorded in each row is the
paper's NHWC description plus the layout used. Operands are in the precision's dtype (fp32 and
tf32 in float32 with `tf32_flags`, bf16/fp16 in half types; no autocast), as in
`measure.calibrate`.

`scale` shrinks every dimension except kernel size and stride (d → max(1, round(d·scale)),
height/width at least the kernel size) so tests can run the same code at tiny sizes; scaled rows
are named e.g. "matmul-2048@0.0625" and their FLOPs are those of the scaled shape. scale = 1.0
(the default) is the paper's exact shapes and the plain names.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from paradnn.config import PRECISIONS
from paradnn.errors import ConfigError
from paradnn.measure import precision as prec
from paradnn.measure.calibrate import DTYPES, device_name
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.timer import TimingPolicy, measure, told_after
from paradnn.ops.table4 import (
    PASSES,
    TABLE4,
    UTILIZATION_NULLS,
    MicroBenchmark,
    default_threads_list,
    spec,
)
from paradnn.precisions import can_emulate
from paradnn.records import Status, now


def _build(
    s: MicroBenchmark, pass_: str, device: torch.device, dtype: torch.dtype
) -> tuple[Callable[[], Any], list[torch.Tensor]]:
    """The step function of one op and pass, and the tensors it holds."""
    gen = torch.Generator(device=device).manual_seed(0)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=dtype, generator=gen)

    grad = pass_ == "fwd+bwd"
    if s.op == "matmul":
        a, b = rnd(s.n, s.n), rnd(s.n, s.n)
        if not grad:
            c = torch.empty(s.n, s.n, device=device, dtype=dtype)

            def fwd() -> None:
                with torch.no_grad():
                    torch.mm(a, b, out=c)

            return fwd, [a, b, c]
        a.requires_grad_(True)
        b.requires_grad_(True)
        g = rnd(s.n, s.n)

        def fwd_bwd() -> None:
            torch.autograd.grad(torch.mm(a, b), (a, b), g)

        return fwd_bwd, [a, b, g]
    ho, wo = s.out_hw
    x = rnd(s.batch, s.in_channels, s.height, s.width)
    w = rnd(s.out_channels, s.in_channels, s.kernel, s.kernel) * (
        1.0 / (s.in_channels * s.kernel**2) ** 0.5
    )
    if not grad:

        def conv_fwd() -> None:
            with torch.no_grad():
                F.conv2d(x, w, stride=s.stride)

        return conv_fwd, [x, w]
    x.requires_grad_(True)
    w.requires_grad_(True)
    g = rnd(s.batch, s.out_channels, ho, wo)

    def conv_fwd_bwd() -> None:
        torch.autograd.grad(F.conv2d(x, w, stride=s.stride), (x, w), g)

    return conv_fwd_bwd, [x, w, g]


def run_ops(
    device: str = "auto",
    precisions: Iterable[str] = ("fp32",),
    names: Iterable[str] | None = None,
    passes: Iterable[str] = PASSES,
    threads: int | None = None,
    policy: TimingPolicy | None = None,
    scale: float = 1.0,
    allow_emulated: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Time the Table 4 ops and return rows for the `ops` table, one per (op, precision, pass).

    A precision the device lacks natively is `unsupported` unless `allow_emulated` (then the
    row's nulls say "emulated"). `progress` hears each op, pass and the timer's phases.

    status is "ok", "unsupported" (the precision or op is not available here), "oom" or
    "crashed", with `error`. utilization_* are left None (reasons in `nulls`). The CPU thread
    count is set for the run (default: every core) and restored after.
    """
    from paradnn.measure.environment import prepare
    from paradnn.measure.faults import classify, one_line

    names = tuple(names or TABLE4)
    specs = [spec(n, scale) for n in names]
    passes = tuple(passes)
    for p in passes:
        if p not in PASSES:
            raise ConfigError("pass", p, "must be fwd or fwd+bwd")
    precisions = tuple(precisions)
    for p in precisions:
        if p not in PRECISIONS:
            raise ConfigError("precision", p, f"must be one of {', '.join(PRECISIONS)}")
    policy = policy or TimingPolicy()
    saved_threads = torch.get_num_threads()
    try:
        dev, env = prepare(device, threads)
        clock = clock_for(dev)
        common: dict[str, Any] = {
            "threads": env.get("threads") if dev.type == "cpu" else None,
            "device": str(dev),
            "device_name": device_name(env),
            "fingerprint": env["fingerprint"],
            "env": env,
        }
        rows = []
        say = progress or (lambda msg: None)
        for p in precisions:
            reason = prec.unsupported_reason(p, dev)
            emulated = None
            if reason and allow_emulated and can_emulate(p, dev.type):
                emulated, reason = reason, None
            for s in specs:
                for pass_ in passes:
                    row: dict[str, Any] = {
                        "op": s.op,
                        "name": s.name,
                        "shape": s.shape(),
                        "precision": p,
                        "pass": pass_,
                        **common,
                        "status": Status.OK,
                        "error": None,
                        "flops": s.flops(pass_),
                        "time_s": None,
                        "ci_low_s": None,
                        "ci_high_s": None,
                        "samples": None,
                        "achieved_flops": None,
                        "utilization_datasheet": None,
                        "utilization_measured": None,
                    }
                    nulls = dict(UTILIZATION_NULLS)
                    if dev.type != "cpu":
                        nulls["threads"] = "GPU op: CPU threads do not apply"
                    if emulated:
                        nulls["emulated"] = emulated
                    label = f"{s.name} {p} {pass_}"
                    emu = " (emulated)" if emulated else ""
                    say(f"{label}{emu}: {'skipped' if reason else 'timing'}")
                    if reason:
                        row["status"], row["error"] = Status.UNSUPPORTED, reason
                    else:
                        held: list[torch.Tensor] = []
                        try:
                            with prec.tf32_flags(p):
                                step, held = _build(s, pass_, dev, DTYPES[p])

                                heard = told_after(say, label)
                                t = measure(step, clock, policy, progress=heard)
                                synchronize(dev)
                            sm = t.summary
                            row.update(
                                time_s=sm.median,
                                ci_low_s=sm.ci_low,
                                ci_high_s=sm.ci_high,
                                samples=t.samples,
                                achieved_flops=row["flops"] / sm.median if sm.median > 0 else None,
                            )
                            if sm.ci_low is None:
                                nulls["ci_low_s"] = nulls["ci_high_s"] = "too few samples"
                        except Exception as e:  # every failure becomes a row
                            row["status"], row["error"] = classify(e), one_line(e)
                        finally:
                            del held
                            gc.collect()
                            if dev.type == "cuda":
                                torch.cuda.empty_cache()
                    if row["status"] != Status.OK:
                        for k in ("time_s", "ci_low_s", "ci_high_s", "samples", "achieved_flops"):
                            nulls[k] = f"status {row['status']}"
                    row["nulls"] = nulls
                    row["measured_at"] = now()
                    rows.append(row)
        return rows
    finally:
        torch.set_num_threads(saved_threads)


def thread_sweep(
    names: Iterable[str] | None = None,
    threads_list: Sequence[int] | None = None,
    *,
    precisions: Iterable[str] = ("fp32",),
    passes: Iterable[str] = ("fwd",),
    policy: TimingPolicy | None = None,
    scale: float = 1.0,
    allow_emulated: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the ops on the CPU at each thread count (default `default_threads_list()`); each row
    records its count in `threads`, as the study's CPU thread-scaling Figures 5–6."""
    threads_list = list(threads_list or default_threads_list())
    for t in threads_list:
        if not isinstance(t, int) or t < 1:
            raise ConfigError("threads", t, "must be integers ≥ 1")
    rows = []
    for t in threads_list:
        rows += run_ops(
            "cpu",
            precisions=precisions,
            names=names,
            passes=passes,
            threads=t,
            policy=policy,
            scale=scale,
            allow_emulated=allow_emulated,
            progress=None if progress is None else (lambda m, t=t: progress(f"{t} threads: {m}")),
        )
    return rows
