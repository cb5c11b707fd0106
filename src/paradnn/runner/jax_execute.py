"""The jax backend of the measuring core (runner/core.py; docs/jax.md).

The same record, timer, quality verdict and failure classification as the torch backend, with
XLA's measurement done right: the step is jitted with its parameter, optimizer-state and
BatchNorm-state buffers donated; tracing+lowering and XLA's compile are
timed on their own before the first step; every block of timed steps ends with
`block_until_ready`; XLA's cost analysis (FLOPs, bytes) is stored beside the analytic counts
and flagged when they differ by more than 10 %; the device's peak memory comes from its memory
statistics with preallocation off (None with the reason where the device has none, a CPU).
Each JAX run gets a fresh worker process.
"""

from __future__ import annotations

import gc
import math
from typing import Any

from paradnn import families
from paradnn.config import RunOptions
from paradnn.errors import ConfigError
from paradnn.measure.faults import one_line
from paradnn.measure.quality import LoadProbe, quality_part
from paradnn.measure.timer import Windows, measure
from paradnn.records import XLA_MISMATCH, Memory, RunRecord, Status, Xla
from paradnn.runner.core import Run, step_times

NOT_INSTALLED = "jax is not installed: pip install 'paradnn[jax]' (docs/jax.md)"
COUNTER = "jaxpr"  # flops_count_device of a JAX row: counted over the traced program
NO_ENERGY = "not_measured: the jax backend does not measure energy yet (docs/jax.md)"


def unsupported_reason(options: RunOptions) -> str | None:
    """Why this run cannot be a JAX run, decided before any work (torch-free, jax-free)."""
    from paradnn.measure.xla import JAX_PRECISIONS
    from paradnn.runner.start import jax_version

    if options.mode != "eager":
        return (
            f"mode = {options.mode}: torch.compile modes apply to the torch backend; the jax "
            "backend is always compiled by XLA (use mode eager)"
        )
    if options.procs > 1:
        return f"procs = {options.procs}: data-parallel runs are torch-only (docs/scaling.md)"
    if options.precision not in JAX_PRECISIONS:
        return (
            f"precision = {options.precision}: the jax backend runs "
            + " and ".join(JAX_PRECISIONS)
            + " (tf32 is a CUDA matmul mode, fp16 needs loss scaling; docs/jax.md)"
        )
    if getattr(options, "optimizer_impl", "auto") != "auto":
        return (
            f"optimizer_impl = {options.optimizer_impl}: torch.optim's implementations apply to "
            "the torch backend; XLA fuses the jitted update itself (use auto; docs/jax.md)"
        )
    if options.precision_policy == "pure" and options.precision != "fp32":
        return (
            "precision_policy = pure: the jax backend keeps fp32 weights and optimizer state "
            "(bf16 activations) only; docs/jax.md"
        )
    if jax_version() is None:
        return NOT_INSTALLED
    return None


class JaxBackend:
    """XLA through JAX in this process (docs/jax.md); each run gets a fresh worker."""

    def __init__(self) -> None:
        self.step: Any = None
        self.detail: dict[str, Any] = {}

    def start(self, run: Run) -> None:
        run.rec = run.rec.replace(flags={"backend": "jax"})

    def unsupported(self, run: Run) -> str | None:
        return unsupported_reason(run.options)

    def measure(self, run: Run) -> None:
        """What one JAX measurement adds to `run.rec`; `unsupported` where the device, the
        precision or the family's JAX model says so."""
        from paradnn.measure import xla

        options, env = run.options, run.env
        detail = self.detail = {
            "versions": xla.versions(),
            "preallocate": "false",
            "threads": (
                "XLA's CPU pool over the process's CPUs (torch's count does not apply)"
                if options.threads != 1
                else "1 (XLA_FLAGS: single-threaded Eigen)"
            ),
        }
        jax = xla.import_jax(env.get("threads") if options.threads is not None else None)
        try:
            device = xla.pick_device(options.device)
        except ConfigError as e:  # e.g. --device cuda with a CPU-only jaxlib
            run.rec = run.rec.replace(status=Status.UNSUPPORTED, error=str(e), xla_detail=detail)
            return
        detail.update(
            platform=device.platform,
            device_kind=device.device_kind,
            device_id=device.id,
            devices=len(jax.devices()),
        )
        rec = run.rec = _identity(run.rec, device, options)
        reason = xla.native_reason(options.precision, device)
        if reason and not rec.emulated:
            run.rec = rec.replace(status=Status.UNSUPPORTED, error=reason, xla_detail=detail)
            return
        family = families.get(rec.family)
        cfg = family.config(rec.config)
        try:
            net = family.build_jax(cfg, options.precision)
        except NotImplementedError as e:
            run.rec = rec.replace(status=Status.UNSUPPORTED, error=str(e), xla_detail=detail)
            return
        # fp32 means fp32 matmuls: TPUs otherwise multiply fp32 in one bf16 pass by default
        matmul = "highest" if options.precision == "fp32" else "default"
        jax.config.update("jax_default_matmul_precision", matmul)
        detail.update(matmul_precision=matmul, compute_dtype=str(_dtype(options.precision)))
        rec = run.rec = rec.replace(
            flags={
                "backend": "jax",
                "jax_default_matmul_precision": matmul,
                "compute_dtype": detail["compute_dtype"],
                "XLA_FLAGS": _xla_flags(),
                "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                **({"emulated": rec.flags.get("emulated")} if rec.emulated else {}),
            }
        )
        run.say({"phase": "build"})
        step = self.step = xla.XlaStep(net, options.optimizer, device, seed=options.seed)
        rec = run.rec = rec.replace(params=step.param_count())
        run.say({"phase": "counting FLOPs"})  # the traced program's matmuls and convolutions
        rec = run.rec = rec.replace(flops_per_step=step.model_flops(), flops_count_device=COUNTER)
        run.say({"phase": "lowering and compiling (XLA)"})
        lower_s, compile_s = step.lower_and_compile()
        rec = run.rec = rec.with_part(_xla_part(step, rec, lower_s, compile_s, detail))
        probe = LoadProbe(gpu_others=None)
        timing = measure(
            step,
            xla.JaxClock(step.ready),
            options.timing,
            window=Windows(probe),
            progress=run.progress,
        )
        detail["donated"] = step.donated
        rec = rec.replace(xla_detail=detail)
        timed_as = timing.as_dict()
        rec = rec.with_part(step_times(timed_as, rec.counts, step.final_loss()))
        rec = rec.with_part(quality_part(timed_as, probe.result, options.timing.target_ci_rel))
        peak, why = xla.peak_memory(device)
        run.rec = rec.with_part(
            Memory(peak, nulls={} if peak is not None else {"peak_mem_bytes": why})
        )

    def failure(self, run: Run, exc: BaseException, status: str, error: str) -> RunRecord:
        if "RESOURCE_EXHAUSTED" in str(exc) or "Out of memory" in str(exc):
            status = Status.OOM
        return run.rec.replace(status=status, error=error, xla_detail=self.detail)

    def cleanup(self, run: Run) -> None:
        self.step = None
        gc.collect()


BACKEND = JaxBackend


def _identity(rec: RunRecord, device: Any, options: RunOptions) -> RunRecord:
    """Where the run ran: a CPU keeps the host's device string and CPU model (so torch and jax
    rows of one host are one platform); an accelerator is named by jax (`TPU v4`, which the
    platform database matches for peaks). Energy is not measured on this backend."""
    from paradnn.records import ENERGY_FIELDS, Energy

    if options.energy:
        rec = rec.with_part(Energy(nulls=dict.fromkeys(ENERGY_FIELDS, NO_ENERGY)))
    if device.platform == "cpu":
        return rec
    return rec.replace(device=f"{device.platform}:{device.id}", device_name=device.device_kind)


def _dtype(precision: str) -> str:
    return "bfloat16" if precision == "bf16" else "float32"


def _xla_flags() -> str | None:
    import os

    return os.environ.get("XLA_FLAGS")


def _xla_part(
    step: Any, rec: RunRecord, lower_s: float, compile_s: float, detail: dict[str, Any]
) -> Xla:
    """XLA's view of the compiled step beside the analytic counts; a missing or negative
    figure (jax#20184) is None with the reason."""
    nulls: dict[str, str] = {}
    cost = step.cost()
    flops = _positive(cost, "flops")
    nbytes = _positive(cost, "bytes accessed")
    if flops is None:
        nulls["xla_flops"] = f"cost_analysis() gave no usable 'flops' ({_shown(cost, 'flops')})"
    if nbytes is None:
        nulls["xla_bytes"] = f"cost_analysis() gave no usable 'bytes accessed' ({_shown(cost)})"
    ratio = flops / rec.flops_analytic if flops and rec.flops_analytic else None
    if ratio is None:
        why = nulls.get("xla_flops", "no analytic FLOP count")
        nulls["xla_flops_ratio"] = nulls["xla_flops_mismatch"] = why
    try:
        grad = _positive(step.grad_cost(), "flops")
    except Exception as e:  # context only: never the run's failure
        grad, detail["grad_flops_error"] = None, one_line(e)
    detail.update(
        grad_flops=grad,
        grad_flops_ratio=grad / rec.flops_analytic if grad and rec.flops_analytic else None,
        memory_analysis=step.memory_analysis(),
        how=(
            "lower_s: jit(step).trace(args).lower(); compile_s: lowered.compile(); xla_flops: "
            "compiled.cost_analysis() of the whole step (optimizer included, after XLA's "
            "optimisations); grad_flops: forward+backward alone, lowered, before optimisation"
        ),
    )
    return Xla(
        xla_lower_s=lower_s,
        xla_compile_s=compile_s,
        xla_flops=flops,
        xla_bytes=nbytes,
        xla_flops_ratio=ratio,
        xla_flops_mismatch=None if ratio is None else abs(ratio - 1) > XLA_MISMATCH,
        xla_detail=detail,
        nulls=nulls,
    )


def _positive(cost: dict[str, Any] | None, key: str) -> float | None:
    if not cost or key not in cost:
        return None
    try:
        v = float(cost[key])
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _shown(cost: dict[str, Any] | None, key: str = "bytes accessed") -> str:
    if cost is None:
        return "cost_analysis() returned None"
    return f"{key} = {cost.get(key)!r}"


__all__ = ["BACKEND", "NOT_INSTALLED", "unsupported_reason"]
