"""Compiled execution modes: torch.compile the step's forward+loss and measure what it costs.

The method follows PyTorch's own compiler benchmark (benchmarks/dynamo/common.py): the same
training iteration is timed eager and compiled, the speedup is a ratio of medians, and the
optimizer step stays eager there too (`torch._dynamo.disable(optimizer.step)`: compiling it
costs compile time for ~1%). So a compiled mode compiles `TrainStep.forward_loss` (dynamo
captures forward and loss; AOTAutograd derives and inductor compiles the backward), and the
timer runs the whole step, zero_grad → forward → loss → backward → optimizer step, as in eager.

What a compiled run records (records.Compiled, docs/modes.md):
- compile time **cold**: the first compiled step with a fresh inductor cache directory (in a
  fresh worker process: no dynamo or inductor state from an earlier run), minus one steady
  step (the harness's "compiled warm-up − eager warm-up");
- compile time **warm**: the same in a short-lived child process that builds the same model
  and compiles it with the cache directory kept (inductor's FX-graph/AOTAutograd caches hit);
- graphs and breaks: `torch._dynamo.explain` of forward+loss (documented; run after timing);
- recompiles: the timer runs under `torch.compiler.set_stance("fail_on_recompile")`, so a
  recompile is the run's error with dynamo's guard-failure reason, never a silent slowdown;
- whether CUDA graphs engaged (reduce-overhead on CUDA: inductor's cudagraph-skip counter).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import torch

from paradnn.config import RunSpec
from paradnn.measure.step import TrainStep
from paradnn.records import Compiled

# paradnn mode -> torch.compile(mode=...); all on inductor, shapes static (a config is one shape)
TORCH_MODES = {
    "compile": "default",
    "max-autotune": "max-autotune-no-cudagraphs",
    "reduce-overhead": "reduce-overhead",
}
CUDAGRAPH_MODES = ("reduce-overhead",)
FAULT_RECOMPILE = "PARADNN_FAULT_RECOMPILE"  # tests: the compiled function recompiles each call
WARM_TIMEOUT_S = 900.0  # the warm child: past this its compile time is null (timeout)
RECOMPILE_MARK = "Detected recompile"
NOT_COMPILED = "eager run: nothing is compiled"


def unsupported_reason(mode: str, device: torch.device) -> str | None:
    """Why `mode` cannot run on `device` (decided before any work), or None."""
    if mode in CUDAGRAPH_MODES and device.type != "cuda":
        return (
            f"mode {mode} captures CUDA graphs, which need a CUDA device (this run is on "
            f"{device.type})"
        )
    return None


def recompile_error(exc: BaseException) -> str | None:
    """The stored error of a recompile under fail_on_recompile (with dynamo's guard failure),
    or None when `exc` is something else."""
    text = str(exc)
    if RECOMPILE_MARK not in text:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("- ")]
    why = "; ".join(ln[2:] for ln in lines) or text.splitlines()[0]
    return f"recompiled while timed (fail_on_recompile): {why}"[:500]


def _forward_loss(step: TrainStep, mode: str) -> Any:
    base = step.forward_loss
    compiled = torch.compile(base, mode=TORCH_MODES[mode], dynamic=False)
    if not os.environ.get(FAULT_RECOMPILE):
        return compiled
    # the test hook: a Python int that changes every call is a guard dynamo specializes on
    inner = torch.compile(
        lambda x, y, n: base(x, y) * (n + 1) / (n + 1), mode=TORCH_MODES[mode], dynamic=False
    )
    calls = itertools.count()
    return lambda x, y: inner(x, y, next(calls))


class CompileRun:
    """A compiled copy of `step` and what its compile cost; `part()` is the record part.
    `run`: the run's description whole, which the warm compile's second process runs again."""

    def __init__(self, step: TrainStep, run: RunSpec, device: torch.device):
        import torch._dynamo

        self.eager, self.run, self.device = step, run, device
        self.mode = run.options.mode
        torch._dynamo.reset()  # a fresh worker has nothing to reset; an in-process caller might
        self.cache_dir = tempfile.mkdtemp(prefix="paradnn-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = self.cache_dir
        if device.type == "cuda":
            os.environ["TRITON_CACHE_DIR"] = os.path.join(self.cache_dir, "triton")
        self.step = copy.copy(step)
        self.step.forward_loss = _forward_loss(step, self.mode)  # type: ignore[method-assign]
        self.first_s: float | None = None
        self.cold_counters: dict[str, Any] = {}

    def first(self, sync: Any) -> None:
        """The first compiled step: dynamo, AOTAutograd and inductor run here (cold cache)."""
        t0 = time.perf_counter()
        self.step()
        sync()
        self.first_s = time.perf_counter() - t0
        self.cold_counters = _counters()

    @contextlib.contextmanager
    def no_recompiles(self) -> Iterator[None]:
        with torch.compiler.set_stance("fail_on_recompile"):
            yield

    def part(self, step_s: float | None, failure: str | None = None) -> Compiled:
        """The record part after timing (step_s: the steady median) or after `failure`."""
        nulls: dict[str, str] = {}
        detail: dict[str, Any] = {
            "torch_mode": TORCH_MODES[self.mode],
            "backend": "inductor",
            "dynamic": False,
            "compiled": "forward+loss (backward via AOTAutograd; optimizer step eager)",
            "compile_threads": _compile_threads(),
            "cold": {"first_step_s": self.first_s, "counters": self.cold_counters},
        }
        cold = None
        if self.first_s is not None and step_s is not None:
            cold = max(self.first_s - step_s, 0.0)
        elif self.first_s is None:
            nulls["compile_cold_s"] = failure or "the first compiled step did not finish"
        else:
            nulls["compile_cold_s"] = failure or "no steady step time to subtract"
        warm = None
        if failure is None and self.first_s is not None:
            res = warm_compile(self.run, self.cache_dir)
            detail["warm"] = res
            if res.get("first_step_s") is not None and step_s is not None:
                warm = max(res["first_step_s"] - step_s, 0.0)
            else:
                nulls["compile_warm_s"] = res.get("reason", "not measured")
        else:
            nulls["compile_warm_s"] = "the run failed before a warm compile was tried"
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        graphs = _explain(self.eager) if self.first_s is not None else {"reason": failure}
        for name in ("graph_count", "graph_breaks", "graph_break_reasons"):
            if graphs.get(name) is None:
                nulls[name] = graphs.get("reason") or "not measured"
        recompiles = None
        if failure is None:
            recompiles = 0  # timed under fail_on_recompile: one would have failed the run
        elif RECOMPILE_MARK in failure or failure.startswith("recompiled"):
            recompiles = 1  # the first stopped the run
        else:
            nulls["recompiles"] = "the run failed before its timing ended"
        cudagraphs, why = self._cudagraphs()
        if cudagraphs is None:
            nulls["cudagraphs"] = why
        detail["cudagraphs"] = why
        return Compiled(
            compile_cold_s=cold,
            compile_warm_s=warm,
            graph_count=graphs.get("graph_count"),
            graph_breaks=graphs.get("graph_breaks"),
            graph_break_reasons=graphs.get("graph_break_reasons"),
            recompiles=recompiles,
            cudagraphs=cudagraphs,
            compile_detail=detail,
            nulls=nulls,
        )

    def _cudagraphs(self) -> tuple[bool | None, str]:
        if self.mode not in CUDAGRAPH_MODES:
            return False, f"mode {self.mode} does not capture CUDA graphs"
        if self.device.type != "cuda":
            return None, "no CUDA device: CUDA graphs need one"
        skips = _counters().get("inductor", {}).get("cudagraph_skips", 0)
        if skips:
            return False, f"inductor skipped CUDA graphs {skips} time(s)"
        return True, "inductor recorded no CUDA graph skip"


def _compile_threads() -> int | None:
    try:
        from torch._inductor import config

        return int(config.compile_threads)
    except Exception:
        return None


def _counters() -> dict[str, Any]:
    """Dynamo's and inductor's counters (graphs, cache hits/misses): context, not the record's
    measured graph count (that comes from `explain`, a documented API)."""
    try:
        from torch._dynamo.utils import counters

        keep = ("stats", "graph_break", "inductor", "recompiles")
        return {k: {str(n): int(v) for n, v in counters[k].items()} for k in keep}
    except Exception:
        return {}


def _explain(step: TrainStep) -> dict[str, Any]:
    """Graph count and graph breaks of forward+loss (torch._dynamo.explain resets dynamo, so it
    runs after everything compiled was timed)."""
    try:
        import torch._dynamo

        with step.autocast():
            out = torch._dynamo.explain(step.forward_loss)(step.x, step.y)
        reasons = [str(getattr(b, "reason", b)).splitlines()[0][:200] for b in out.break_reasons]
        return {
            "graph_count": int(out.graph_count),
            "graph_breaks": int(out.graph_break_count),
            "graph_break_reasons": reasons,
        }
    except Exception as e:
        return {"reason": f"torch._dynamo.explain failed: {type(e).__name__}: {e}"[:300]}


def warm_compile(run: RunSpec, cache_dir: str) -> dict[str, Any]:
    """The first compiled step of `run` in a second process that reuses `cache_dir` (what a
    user's second run of the same model pays); `{"first_step_s": s, "counters": ...}` or a
    reason."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir}
    cmd = [sys.executable, "-m", "paradnn.measure.compile", run.to_json()]
    try:
        out = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=WARM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return {"reason": f"timeout: the warm compile took over {WARM_TIMEOUT_S:g} s"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"reason": f"the warm compile process failed (exit {out.returncode}): {tail}"}
    return {**json.loads(lines[-1]), "method": "child process, inductor cache kept"}


def _warm_main(run: RunSpec) -> None:
    from paradnn import families
    from paradnn.measure.device import synchronize
    from paradnn.measure.environment import prepare
    from paradnn.measure.precision import tf32_flags

    options = run.options
    device, _ = prepare(options.device, options.threads)
    torch.manual_seed(options.seed)
    torch.set_flush_denormal(True)
    family = families.get(run.family)
    cfg = family.config(dict(run.config))
    # as the worker does (runner/execute.py): the matmul-precision flags are in inductor's
    # cache key, so a child without them would miss the cache the worker filled
    with tf32_flags(options.precision):
        with torch.device(device):
            built = family.build(cfg, device, options.precision)
        step = TrainStep(
            built,
            options.optimizer,
            options.precision,
            device,
            implementation=options.optimizer_impl,
            policy=options.precision_policy,
        )
        step.forward_loss = torch.compile(  # type: ignore[method-assign]
            step.forward_loss, mode=TORCH_MODES[options.mode], dynamic=False
        )
        t0 = time.perf_counter()
        step()
        synchronize(device)
        first = time.perf_counter() - t0
    print(json.dumps({"first_step_s": first, "counters": _counters()}))


if __name__ == "__main__":
    _warm_main(RunSpec.from_json(sys.argv[1]))
