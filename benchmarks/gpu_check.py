"""The GPU acceptance run: paradnn's GPU paths and a new sample of the paper's space, in 6 minutes.

A GPU machine is lent now and then, for minutes, with no network; this script is written and
tested on CPU so that it runs in one go there (docs/gpu.md). The run is sized by what it
measured: `benchmarks/results/gpu/step_seconds.json` keeps each step's measured seconds per
device kind, every GPU run updates it, and the next run's plan takes each step's cap from it
(measured × SLACK, at least FLOOR_S; a step stopped at its cap counts as GROWTH × its cap). The
plan keeps the core steps (the facts, the ceilings, a ~3-minute random sample of Table 2 that
is committed to `benchmarks/data/gpu/`, the host profile and the model's error on that sample),
then adds the optional steps in order of value while their caps fit; the rest are deferred and
said. By its own accounting (every cap, CUDA start-ups included) the plan fits TOTAL_BUDGET_S.

Steps that can share a CUDA context share it: the ceilings, the sample, the energy runs, the op
micro-benchmarks, the profile and the pipeline run are library calls in this process
(`api.shared_workers`: one worker process, one torch import, one CUDA context), each inside a
time box. The others are subprocesses in their own process group, stopped at their caps. Every
step writes `<step>.json` whatever happens (ok, failed, timeout, skipped, deferred), and at the
end summary.json and summary.md hold the headline figures.

    PYTHONPATH=src python3 benchmarks/gpu_check.py            # on the GPU: make gpu-check
    PYTHONPATH=src python3 benchmarks/gpu_check.py --dry --out /tmp/gc   # CPU rehearsal
    ... --plan                                                # the plan and its accounting only
    ... --steps doctor,profile                                # a subset

Results go to benchmarks/results/gpu/<device-slug>/ (the GPU's name, lower case) unless --out.
Only what the GPU machine has is used: python3 with torch (JAX, pandas, scipy, matplotlib),
paradnn from src/ — no install step, no network. This process never imports torch. `--dry`
runs every step on the CPU at tiny sizes, writing the same files (the sample and the step
seconds under --out, never into the repository).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:  # `python3 benchmarks/gpu_check.py` needs no PYTHONPATH
    sys.path.insert(0, str(ROOT / "src"))
RESULTS = ROOT / "benchmarks" / "results" / "gpu"
COSTS = RESULTS / "step_seconds.json"  # measured seconds per step per device kind
DATASETS = ROOT / "benchmarks" / "data" / "gpu"  # one sample database per loan
SCHEMA_VERSION = 2
TOTAL_BUDGET_S = 360.0  # the plan's own accounting: every cap, start-ups included
SLACK = 1.25  # a step's cap: its measured seconds × SLACK ...
FLOOR_S = 8.0  # ... and at least this
GROWTH = 1.5  # a step stopped at its cap needed more: next time its estimate is cap × GROWTH
OWN_S = 5.0  # this script's own seconds (imports, planning, summaries), counted in the plan
SAMPLE_TARGET_S = 170.0  # the sample's estimated seconds, at most (what the plan leaves)
SAMPLE_MIN_S = 60.0  # below this the sample is not worth a loan: the optional steps yield first
SAMPLE_TAIL_S = 10.0  # its cap beyond its budget: the last run in flight and the worker's stop
TAIL_CHARS = 4000
# Preflight: what the machine has (recorded; a step that needs a missing one is skipped).
MODULES = (
    "torch",
    "jax",
    "optax",
    "pandas",
    "scipy",
    "matplotlib",
    "statsmodels",
    "jinja2",
    "typer",
    "rich",
    "pynvml",
    "pytest",
    "hypothesis",
)
FC_HEADLINE_TARGET = 0.80  # issue 33: FC bf16 utilization of the measured ceiling
OVERHEAD_TARGET = 1.02  # issue 43: harness time / plain loop on every config
BENCH_WALL_TARGET_S = 6.0  # issue 43: `bench` of a small config on a GPU
RUN_OVERHEAD_TARGET_S = 0.15  # issue 43: a sweep's per-run overhead (median)


@dataclass(frozen=True)
class Step:
    """One step. `kind`: `process` (a subprocess, stopped at its cap), `session` (a library
    call in the shared worker, in a time box) or `local` (torch-free, in this process).
    `default_s`: its estimate until a run has measured it on some device. `core`: planned on
    every loan; the others fill what is left, in VALUE order. `needs`: modules it cannot run
    without."""

    name: str
    what: str
    kind: str
    default_s: float
    core: bool = False
    needs: tuple[str, ...] = ()


# In the order they run: the facts; the shared worker's steps; the subprocess steps (after the
# shared worker has stopped: a process idle on the GPU would flag their runs noisy); the host
# profile and the model's error on the sample just taken.
STEPS: tuple[Step, ...] = (
    Step("doctor", "paradnn doctor --json: facts and sanity checks", "process", 15, True),
    Step("calibrate", "matmul ceilings per native precision, copy, triad", "session", 25, True),
    Step(
        "sample",
        "a seeded random sample of Table 2, ~3 min, into benchmarks/data/gpu/",
        "session",
        SAMPLE_TARGET_S,
        True,
    ),
    Step("energy", "the largest FC and a CNN, fp32 and bf16, with --energy", "session", 60),
    Step("ops", "the accelerator study's op micro-benchmarks (fp32, bf16)", "session", 60),
    Step("profile", "bench fc --profile", "session", 15),
    Step("pipeline", "bench cnn --data pipeline --pin-memory", "session", 30),
    Step(
        "overhead",
        "harness_overhead.py: paradnn vs a plain loop, host-bound configs too",
        "process",
        35,
    ),
    Step(
        "benchwall",
        "harness_wall.py: bench wall time and a sweep's per-run overhead",
        "process",
        40,
    ),
    Step(
        "pytest_gpu",
        "pytest -m gpu over the files holding GPU tests",
        "process",
        90,
        needs=("pytest",),
    ),
    Step("memory", "memory_prediction.py: prediction vs max_memory_allocated", "process", 35),
    Step("jax", "run --backend jax on two configs", "process", 60, needs=("jax",)),
    Step("modes", "run --mode compile --mode reduce-overhead on an FC", "process", 75),
    Step("hostprofile", "calibrate --host-only: the host's dispatch costs", "process", 60, True),
    Step("validate", "simulate validate on the sample: the model's error", "local", 10, True),
)
STEP_NAMES = tuple(s.name for s in STEPS)
BY_NAME = {s.name: s for s in STEPS}
# The optional steps, most valuable first: the harness on a GPU (issue 43's targets), the GPU
# tests (the H200's open timer question), energy, memory, then the paths never finished yet.
VALUE = (
    "overhead",
    "benchwall",
    "pytest_gpu",
    "energy",
    "memory",
    "ops",
    "profile",
    "pipeline",
    "jax",
    "modes",
)
SESSION_START = "session"  # the shared worker's start (spawn, torch, CUDA context): measured too


# -- sizes: the GPU's and the dry run's ---------------------------------------------------------

GPU_SIZES: dict[str, Any] = {
    # the largest FC of the run (its bf16 utilization is a headline) and a ResNet-like CNN
    "energy": [
        ("fc", {"layers": 8, "nodes": 8192, "input": 2000, "output": 1000, "batch": 8192}),
        ("cnn", {"blocks": 2, "filters": 64, "image": 224, "output": 1000, "batch": 64}),
    ],
    "energy_precisions": ("fp32", "bf16"),
    "two": [
        ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 256}),
        ("cnn", {"blocks": 1, "filters": 32, "image": 64, "output": 1000, "batch": 32}),
    ],
    "overhead": [
        # host-bound at H100 speed (issue 43: 1.16× and 1.08× on the first run), then larger
        ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 128}),
        ("fc", {"layers": 32, "nodes": 512, "input": 2000, "output": 1000, "batch": 64}),
        ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 512}),
        ("cnn", {"blocks": 1, "filters": 32, "image": 64, "output": 1000, "batch": 64}),
        (
            "rnn",
            {"layers": 1, "embed": 256, "length": 20, "vocab": 1000, "batch": 128, "cell": "lstm"},
        ),
    ],
    "pipeline": ("cnn", {"blocks": 1, "filters": 32, "image": 64, "batch": 64}),
    "profile": ("fc", {"layers": 4, "nodes": 2048, "input": 2000, "output": 1000, "batch": 512}),
    "memory": ["0", "4", "8", "1", "5"],  # memory_prediction.CONFIGS: FC, CNN, LSTM, FC, CNN
    "timing": {
        "min_time_s": 0.3,
        "max_time_s": 2.0,
        "warmup_max_time_s": 3.0,
        "target_ci_rel": 0.05,
    },
    "calibrate_budget": 4.0,  # per precision, shared by calibrate's three math paths
    "overhead_rounds": "3",
    "wall_rounds": "3",
    "wall_runs": "12",
    "doctor_budget": "12",  # the whole command's, its CUDA start-up included (docs/gpu.md)
    "ops": {"precisions": ("fp32", "bf16"), "names": None},
    "sample": {"platform": None, "max_step_s": 0.05},  # platform: the GPU's datasheet entry
}
_TINY = {
    "fc": {"layers": 2, "nodes": 32, "input": 16, "output": 8, "batch": 8},
    "cnn": {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 4},
    "rnn": {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": 4, "cell": "lstm"},
}
DRY_SIZES: dict[str, Any] = {
    "energy": [("fc", _TINY["fc"]), ("cnn", _TINY["cnn"])],
    "energy_precisions": ("fp32",),
    "two": [("fc", _TINY["fc"])],  # a CPU compile takes tens of seconds: one config
    "overhead": [("fc", _TINY["fc"]), ("cnn", _TINY["cnn"]), ("rnn", _TINY["rnn"])],
    "pipeline": ("cnn", {"blocks": 1, "filters": 4, "image": 16, "batch": 4}),
    "profile": ("fc", _TINY["fc"]),
    "memory": ["4", "6", "10", "8", "0"],
    "timing": {
        "min_samples": 3,
        "min_time_s": 0.02,
        "max_time_s": 0.1,
        "warmup_min_steps": 1,
        "warmup_min_time_s": 0.0,
        "warmup_max_time_s": 0.2,
        "target_ci_rel": 0.5,
    },
    "calibrate_budget": 1.0,
    "overhead_rounds": "1",
    "wall_rounds": "1",
    "wall_runs": "3",
    "doctor_budget": "1",
    "ops": {"precisions": ("fp32",), "names": ("matmul-2048",)},
    # a 32-core Skylake prices the steps (the CPU has no datasheet entry); a tiny budget
    "sample": {"platform": "skylake-n1-32", "max_step_s": 0.001, "budget_s": 4.0},
}
# The dry run's estimates: its own seconds on the 2-core EPYC VM these tests run on, beside other
# jobs (load average ~6, 2026-11-27), rounded up. Its plan takes every step, caps × the dry slack.
DRY_SECONDS: dict[str, float] = {
    SESSION_START: 5,
    "doctor": 45,
    "calibrate": 15,
    "sample": 125,
    "energy": 10,
    "ops": 85,
    "profile": 5,
    "pipeline": 20,
    "overhead": 45,
    "benchwall": 35,
    "pytest_gpu": 15,
    "memory": 65,
    "jax": 15,
    "modes": 240,
    "hostprofile": 35,
    "validate": 2,
}


# -- the plan: caps from measured seconds -------------------------------------------------------


def load_costs(path: Path = COSTS) -> dict[str, Any]:
    """The measured seconds file (empty when absent or unreadable: the defaults then apply)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"schema_version": 1, "devices": {}}
    data.setdefault("devices", {})
    return data


def estimate(name: str, costs: dict[str, Any], device: str) -> tuple[float, str]:
    """A step's expected seconds on `device` (a device slug) and where the figure comes from:
    this device's last measurement (a timeout: its cap × GROWTH), else the largest measurement
    on another device, else the step's default (an estimate, said as one)."""

    def value(entry: dict[str, Any]) -> float:
        s = float(entry["seconds"])
        return s * GROWTH if entry.get("status") == "timeout" else s

    def said(dev: str, entry: dict[str, Any]) -> str:
        more = " (stopped at its cap: × growth)" if entry.get("status") == "timeout" else ""
        return f"measured on {dev} {entry.get('date', '?')}{more}"

    devices = costs.get("devices", {})
    mine = (devices.get(device) or {}).get("steps", {}).get(name)
    if mine and mine.get("seconds") is not None:
        return value(mine), said(device, mine)
    others = [
        (value(d["steps"][name]), dev, d["steps"][name])
        for dev, d in sorted(devices.items())
        if (d.get("steps") or {}).get(name, {}).get("seconds") is not None
    ]
    if others:
        v, dev, entry = max(others, key=lambda t: t[0])
        return v, said(dev, entry)
    default = BY_NAME[name].default_s if name in BY_NAME else 10.0
    return float(default), "default estimate (never measured)"


def _shares(names: set[str]) -> bool:
    return any(BY_NAME[n].kind == "session" for n in names)


@dataclass(frozen=True)
class Planned:
    step: Step
    cap_s: float
    estimate_s: float
    source: str
    included: bool
    reason: str | None = None


@dataclass(frozen=True)
class Plan:
    """The steps of a run with their caps, and the accounting: `total_s` (every included cap,
    the shared worker's start, this script's own) ≤ `budget_s`."""

    steps: tuple[Planned, ...]
    session_cap_s: float
    session_source: str
    own_s: float
    budget_s: float
    sample_budget_s: float
    slack: float

    @property
    def total_s(self) -> float:
        caps = sum(p.cap_s for p in self.steps if p.included)
        session = any(p.included and p.step.kind == "session" for p in self.steps)
        return self.own_s + caps + (self.session_cap_s if session else 0.0)

    def included(self) -> list[Planned]:
        return [p for p in self.steps if p.included]

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget_s": self.budget_s,
            "total_s": round(self.total_s, 1),
            "own_s": self.own_s,
            "slack": self.slack,
            "session_start_cap_s": round(self.session_cap_s, 1),
            "session_start_source": self.session_source,
            "sample_budget_s": round(self.sample_budget_s, 1),
            "steps": [
                {
                    "step": p.step.name,
                    "kind": p.step.kind,
                    "core": p.step.core,
                    "cap_s": round(p.cap_s, 1),
                    "estimate_s": round(p.estimate_s, 1),
                    "source": p.source,
                    "included": p.included,
                    "reason": p.reason,
                }
                for p in self.steps
            ],
        }


def make_plan(
    names: list[str] | None,
    costs: dict[str, Any],
    device: str,
    *,
    budget_s: float = TOTAL_BUDGET_S,
    slack: float = SLACK,
    floor_s: float = FLOOR_S,
    sample_target_s: float = SAMPLE_TARGET_S,
    dry: bool = False,
) -> Plan:
    """The run's plan. `names`: the steps asked for (None: the core steps and what fits of the
    optional ones, by VALUE). Every cap is an estimate × `slack`, at least `floor_s`; the dry
    run's estimates are DRY_SECONDS. The sample gets what the other core steps leave, up to
    `sample_target_s`; an optional step comes in only when its cap still fits."""

    def est(name: str) -> tuple[float, str]:
        if dry:
            return DRY_SECONDS.get(name, 10.0), "dry-run estimate (DRY_SECONDS)"
        return estimate(name, costs, device)

    def cap(seconds: float) -> float:
        return max(floor_s, seconds * slack)

    wanted = set(names) if names else None
    session_est, session_src = est(SESSION_START)
    session_cap = cap(session_est)
    fixed: dict[str, tuple[float, float, str]] = {}
    for s in STEPS:
        if s.name != "sample":
            e, src = est(s.name)
            fixed[s.name] = (cap(e), e, src)
    # the rehearsal runs every step (its caps are the dry estimates × the dry slack)
    chosen = {s.name for s in STEPS if (s.name in wanted if wanted else s.core or dry)}
    spent = OWN_S + sum(fixed[n][0] for n in chosen if n != "sample")
    if _shares(chosen):
        spent += session_cap
    sample_budget = sample_cap = 0.0
    if "sample" in chosen:
        if dry:
            sample_budget = float(DRY_SIZES["sample"]["budget_s"])
            sample_cap = DRY_SECONDS["sample"] * slack
        else:
            sample_budget = max(0.0, min(sample_target_s, budget_s - spent - SAMPLE_TAIL_S))
            sample_cap = sample_budget + SAMPLE_TAIL_S
        spent += sample_cap
    planned: dict[str, Planned] = {}
    reasons: dict[str, str] = {}
    if dry:  # the rehearsal runs what it planned, whatever that adds up to
        budget_s = max(budget_s, spent)
    if not wanted and not dry:  # the optional steps, by value, while they fit
        for name in VALUE:
            c = fixed[name][0]
            # a shared step after none: the shared worker's start comes with it
            extra = session_cap if BY_NAME[name].kind == "session" and not _shares(chosen) else 0
            if spent + c + extra <= budget_s:
                chosen.add(name)
                spent += c + extra
            else:
                left = max(0.0, budget_s - spent)
                reasons[name] = (
                    f"deferred: its cap of {c:.0f} s does not fit the {left:.0f} s the plan "
                    f"leaves of {budget_s:.0f} s (`--steps {name}` runs it)"
                )
    for s in STEPS:
        if s.name == "sample":
            e, src = sample_budget, f"sized to {sample_budget:.0f} s (what the plan leaves)"
            c = sample_cap if s.name in chosen else 0.0
        else:
            c, e, src = fixed[s.name]
        included = s.name in chosen
        reason = None if included else reasons.get(s.name, "not asked for (--steps)")
        planned[s.name] = Planned(s, c, e, src, included, reason)
    return Plan(
        steps=tuple(planned[s.name] for s in STEPS),
        session_cap_s=session_cap,
        session_source=session_src,
        own_s=OWN_S,
        budget_s=budget_s,
        sample_budget_s=sample_budget,
        slack=slack,
    )


def record_costs(
    costs: dict[str, Any],
    device: str,
    results: dict[str, dict[str, Any]],
    session_start_s: float | None,
    sample_costs: dict[str, Any] | None,
    date: str,
) -> dict[str, Any]:
    """The measured seconds file with this run's figures: each step that ran (ok, failed, or
    stopped at its cap, said so), the shared worker's start, the sample's per-run costs."""
    out = json.loads(json.dumps(costs))
    dev = out.setdefault("devices", {}).setdefault(device, {})
    steps = dev.setdefault("steps", {})
    for name, rec in results.items():
        if rec.get("status") in ("ok", "failed", "timeout", "partial"):
            steps[name] = {"seconds": rec["seconds"], "status": rec["status"], "date": date}
    if session_start_s is not None:
        steps[SESSION_START] = {"seconds": round(session_start_s, 2), "status": "ok", "date": date}
    if sample_costs:
        dev["sample_costs"] = {**sample_costs, "date": date}
    out["schema_version"] = 1
    return out


# -- the run's context ----------------------------------------------------------------------


@dataclass
class Ctx:
    out: Path
    dry: bool
    python: str = sys.executable
    sizes: dict[str, Any] = field(default_factory=dict)
    device_slug: str = "cpu"
    dataset: Path | None = None  # the sample's database
    seed: int | None = None
    sample_budget_s: float = 0.0
    sample_costs: Any = None  # api.sample.SampleCosts
    gpu_name: str | None = None

    @property
    def device(self) -> str:
        return "cpu" if self.dry else "cuda"

    @property
    def work(self) -> Path:
        return self.out / "work"

    def db(self, name: str) -> str:
        return str(self.work / f"{name}.db")

    def paradnn(self, *args: str) -> list[str]:
        return [self.python, "-m", "paradnn", *args]

    def sweep_file(
        self,
        name: str,
        runs: list[tuple[str, dict[str, Any]]],
        precisions: tuple[str, ...] = ("fp32",),
    ) -> str:
        """A sweep file of explicit [[runs]] with the run's timing budgets."""
        body = "".join(
            f'[[runs]]\nfamily = "{fam}"\nconfig = {{ '
            + ", ".join(f"{k} = {json.dumps(v)}" for k, v in cfg.items())
            + " }\n"
            for fam, cfg in runs
        )
        timing = "".join(f"{k} = {json.dumps(v)}\n" for k, v in self.sizes["timing"].items())
        path = self.work / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'name = "{name}"\nprecisions = {json.dumps(list(precisions))}\n{body}'
            f"[timing]\n{timing}"
        )
        return str(path)


def gpu_test_files(root: Path = ROOT) -> list[str]:
    """The test files that hold GPU tests (collecting all of them needs every test dependency)."""
    marks = ("pytest.mark.gpu", "pytestmark = pytest.mark.gpu")
    return sorted(
        str(p.relative_to(root))
        for p in (root / "tests").glob("test_*.py")
        if any(m in p.read_text(encoding="utf-8") for m in marks)
    )


def _assign(cfg: dict[str, Any]) -> list[str]:
    return [f"{k}={v}" for k, v in cfg.items()]


def command(step: str, ctx: Ctx) -> list[str]:
    """The command line of a subprocess step (paradnn's real CLI flags; `--help` documents
    them)."""
    s, dev = ctx.sizes, ctx.device
    run = ("--device", dev, "--progress", "jsonl")
    if step == "doctor":
        return ctx.paradnn("doctor", "--device", dev, "--budget", s["doctor_budget"], "--json")
    if step == "pytest_gpu":
        return [
            ctx.python,
            "-m",
            "pytest",
            "-m",
            "gpu",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *gpu_test_files(),
        ]
    if step == "hostprofile":
        db = str(ctx.dataset) if ctx.dataset else ctx.db("runs")
        return ctx.paradnn("calibrate", "--host-only", "--device", dev, "--db", db, "--force")
    if step == "modes":
        f = ctx.sweep_file("gpu-modes", s["two"][:1])  # a compile per mode: one config
        return ctx.paradnn(
            "run",
            "--preset",
            f,
            "--db",
            ctx.db("modes"),
            *run,
            "--mode",
            "compile",
            "--mode",
            "reduce-overhead",
        )
    if step == "jax":
        f = ctx.sweep_file("gpu-jax", s["two"])
        return ctx.paradnn("run", "--preset", f, "--db", ctx.db("jax"), *run, "--backend", "jax")
    if step == "memory":
        return [
            ctx.python,
            str(ROOT / "benchmarks" / "memory_prediction.py"),
            "--device",
            dev,
            "--precision",
            "fp32" if ctx.dry else "bf16",
            "--configs",
            *s["memory"],
            "--out",
            str(ctx.work / "memory.json"),
        ]
    if step == "overhead":
        f = ctx.sweep_file("gpu-overhead", s["overhead"])
        return [
            ctx.python,
            str(ROOT / "benchmarks" / "harness_overhead.py"),
            "--device",
            dev,
            "--preset",
            f,
            "--rounds",
            s["overhead_rounds"],
            "--precision",
            "fp32",
            "--out",
            str(ctx.work / "overhead.json"),
        ]
    if step == "benchwall":
        return [
            ctx.python,
            str(ROOT / "benchmarks" / "harness_wall.py"),
            "--device",
            dev,
            "--rounds",
            s["wall_rounds"],
            "--runs",
            s["wall_runs"],
            "--out",
            str(ctx.work / "benchwall.json"),
        ]
    subprocess_steps = ", ".join(x.name for x in STEPS if x.kind == "process")
    raise ValueError(f"step = {step!r}: must be one of {subprocess_steps}")


# -- time -----------------------------------------------------------------------------------


class Budget:
    """The run's wall clock, a net under the plan: each step gets min(its cap, what is left),
    and is not started when less than FLOOR_S is left. The clock is injectable (tests play any
    timeline)."""

    def __init__(self, total_s: float, clock: Callable[[], float] = time.monotonic):
        self.total_s, self.clock, self.t0 = total_s, clock, clock()

    def left(self) -> float:
        return self.total_s - (self.clock() - self.t0)

    def admit(self, cap_s: float, floor_s: float = FLOOR_S) -> tuple[float | None, str | None]:
        """(timeout for the step, None), or (None, why it is skipped)."""
        left = self.left()
        if left < min(floor_s, cap_s):
            return None, (
                f"{max(left, 0):.0f} s of the {self.total_s:.0f} s budget left, below the "
                f"minimum of {min(floor_s, cap_s):.0f} s a step is started with"
            )
        return min(cap_s, left), None


# -- running one step -----------------------------------------------------------------------


def _env(ctx: Ctx) -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: measured peaks, not 75%
    if ctx.dry:
        env["CUDA_VISIBLE_DEVICES"] = ""  # the rehearsal never touches a GPU
    return env


def execute(
    argv: list[str], timeout_s: float, env: dict[str, str], cwd: Path, log: Path
) -> dict[str, Any]:
    """Run argv in its own process group; at the timeout the whole group (workers included) is
    terminated, then killed. Returns status, returncode, seconds, stdout, stderr."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as e:
        return {
            "status": "failed",
            "returncode": None,
            "seconds": 0.0,
            "stdout": "",
            "stderr": "",
            "error": f"could not start: {e}",
        }
    try:
        out, err = p.communicate(timeout=timeout_s)
        status = "ok" if p.returncode == 0 else "failed"
        error = None if p.returncode == 0 else f"exit status {p.returncode}"
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, err = p.communicate()
        status, error = "timeout", f"stopped at its {timeout_s:.0f} s cap"
    except BaseException:  # Ctrl-C or SIGTERM of this script: never leave the step running
        _kill_group(p)
        raise
    seconds = round(time.monotonic() - t0, 2)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(argv)}\n--- stdout\n{out}\n--- stderr\n{err}\n")
    return {
        "status": status,
        "returncode": p.returncode,
        "seconds": seconds,
        "stdout": out,
        "stderr": err,
        "error": error,
    }


def _kill_group(p: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _record(p: Planned, timeout: float | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "step": p.step.name,
        "what": p.step.what,
        "kind": p.step.kind,
        "cap_s": round(p.cap_s, 1),
        "estimate_s": round(p.estimate_s, 1),
        "estimate_source": p.source,
        "timeout_s": None if timeout is None else round(timeout, 1),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": None,
        "status": None,
        "reason": None,
        "returncode": None,
        "seconds": 0.0,
        "stdout_tail": "",
        "stderr_tail": "",
        "log": None,
        "data": None,
        "data_error": None,
    }


def _write(ctx: Ctx, rec: dict[str, Any]) -> dict[str, Any]:
    (ctx.out / f"{rec['step']}.json").write_text(json.dumps(rec, indent=1, default=str) + "\n")
    return rec


def run_process_step(
    p: Planned,
    ctx: Ctx,
    timeout: float,
    runner: Callable[..., dict[str, Any]] = execute,
) -> dict[str, Any]:
    """A subprocess step in its own process group, stopped at `timeout`."""
    rec = _record(p, timeout)
    try:
        argv = command(p.step.name, ctx)
    except Exception as e:  # building the command (a sweep file) failed: still recorded
        rec.update(status="failed", reason=f"could not build the command: {e}")
        return rec
    log = ctx.out / "logs" / f"{p.step.name}.log"
    got = runner(argv, timeout, _env(ctx), ROOT, log)
    rec.update(
        command=argv,
        status=got["status"],
        reason=got["error"],
        returncode=got["returncode"],
        seconds=got["seconds"],
        stdout_tail=got["stdout"][-TAIL_CHARS:],
        stderr_tail=got["stderr"][-TAIL_CHARS:],
        log=str(log.relative_to(ctx.out)),
    )
    try:
        rec["data"] = extract(p.step.name, ctx, got["stdout"])
    except Exception as e:  # what the step left is partial: say so, keep going
        rec["data_error"] = f"{type(e).__name__}: {e}"[:500]
    return rec


class _Log:
    """A session step's lines: kept for its log file and the record's tail."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(f"{time.monotonic():.2f} {line}")

    def event(self, e: Any) -> None:
        """A supervisor event as a line (the sweep's jsonl, shortened)."""
        if e.kind == "result" and e.record is not None:
            r = e.record
            self(
                f"[{e.done}/{e.total}] {r.family} {r.precision} {r.status} "
                f"{(r.step_time_s or 0) * 1e3:.3f} ms {r.error or ''}".rstrip()
            )
        elif e.kind == "result" and e.row is not None:
            self(f"[{e.done}/{e.total}] {e.row.get('status')} {e.row.get('error') or ''}")
        elif e.kind in ("start", "remeasure"):
            self(f"{e.kind}: {e.total} units; " + "; ".join(e.notes))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def run_session_step(p: Planned, ctx: Ctx, timeout: float, session: Any) -> dict[str, Any]:
    """A library call in the shared worker, inside a time box of `timeout` seconds."""
    from paradnn.api import TimeBoxExpired

    rec = _record(p, timeout)
    log = _Log()
    t0 = time.monotonic()
    starts = len(session.starts)
    try:
        with session.time_box(timeout):
            rec["command"] = SESSION_CALLS[p.step.name](ctx, log)
        rec.update(status="ok")
    except TimeBoxExpired:
        rec.update(status="timeout", reason=f"stopped at its {timeout:.0f} s cap")
    except Exception as e:  # every failure is recorded; the next step still runs
        rec.update(status="failed", reason=f"{type(e).__name__}: {e}"[:500])
    seconds = time.monotonic() - t0
    # the shared worker's first start is the session's, not this step's (the plan counts it)
    first = session.starts[0] if starts == 0 and session.starts else 0.0
    rec["seconds"] = round(seconds - first, 2)
    # the workers this step had to start beyond the session's own (a recycled or killed one)
    rec["worker_starts_s"] = [round(s, 2) for s in session.starts[max(starts, 1) :]]
    path = ctx.out / "logs" / f"{p.step.name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(log.text + "\n")
    rec["log"] = str(path.relative_to(ctx.out))
    rec["stdout_tail"] = log.text[-TAIL_CHARS:]
    try:
        rec["data"] = extract(p.step.name, ctx, "")
    except Exception as e:
        rec["data_error"] = f"{type(e).__name__}: {e}"[:500]
    if p.step.name == "sample" and rec["status"] == "timeout":
        rec.update(sample_stopped(rec.get("data"), timeout))
    return rec


def sample_stopped(data: dict[str, Any] | None, cap_s: float) -> dict[str, str]:
    """A sample stopped at its cap is `partial` when it stored ok runs: it is sized by an
    estimate, the time box stops it between runs, and its draws run in random order, so the
    runs done are a random sample of Table 2 too (a smaller one). With no ok run it stays a
    timeout."""
    ok = ((data or {}).get("statuses") or {}).get("ok", 0)
    if not ok:
        return {}
    drawn = (data or {}).get("drawn")
    of = f" of {drawn} drawn" if drawn is not None else ""
    return {
        "status": "partial",
        "reason": f"stopped at its {cap_s:.0f} s cap after {data['runs']}{of} runs "
        f"({ok} ok); the draws run in random order, so these are a random sample too",
    }


def _timing(ctx: Ctx) -> Any:
    from paradnn.config import TimingPolicy

    return TimingPolicy(**ctx.sizes["timing"])


def _calibrate(ctx: Ctx, log: _Log) -> str:
    from paradnn import api

    budget = float(ctx.sizes["calibrate_budget"])
    api.calibrate(ctx.device, db=str(ctx.dataset), budget_s=budget, force=True, progress=log)
    return f"api.calibrate({ctx.device!r}, db={str(ctx.dataset)!r}, budget_s={budget})"


def _sample(ctx: Ctx, log: _Log) -> str:
    from paradnn import api
    from paradnn.config import SweepSettings

    drawn = draw_sample(ctx)
    meta = ctx.dataset.with_suffix(".json")  # type: ignore[union-attr]
    meta.write_text(json.dumps(sample_meta(ctx, drawn), indent=1) + "\n")
    n, est = len(drawn.plan.specs), drawn.estimated_s
    log(f"sample: {n} runs, estimated {est:.0f} s, seed {ctx.seed}")
    settings = SweepSettings(
        timeout_s=60.0, recycle_every=100_000, remeasure=1, remeasure_backoff_s=1.0
    )
    api.run(drawn.plan, device=ctx.device, db=str(ctx.dataset), settings=settings,
            on_event=log.event)  # fmt: skip
    return f"api.run(api.table2_sample({ctx.seed}, budget_s={ctx.sample_budget_s:.0f}, ...))"


def draw_sample(ctx: Ctx) -> Any:
    """This loan's sample (api.table2_sample), priced on the GPU's datasheet entry."""
    from paradnn import api

    sizes = ctx.sizes["sample"]
    platform = sizes["platform"] or sample_platform(ctx.gpu_name)
    return api.table2_sample(
        ctx.seed or 0,
        budget_s=max(ctx.sample_budget_s, 1e-3),
        platform=platform,
        device=ctx.device,
        max_step_s=sizes["max_step_s"],
        costs=ctx.sample_costs,
        timing=_timing(ctx) if ctx.dry else None,  # the GPU's: api.sample.SAMPLE_TIMING
    )


def sample_platform(gpu: str | None) -> str:
    """The platform database entry that prices the sample: the GPU's own, else the H100's."""
    from paradnn import platforms

    plat = platforms.match(gpu) if gpu else None
    return plat.id if plat is not None else "h100-sxm"


def sample_meta(ctx: Ctx, drawn: Any) -> dict[str, Any]:
    """What sits beside the sample's database: how it was drawn, on what, by which paradnn."""
    return {
        "schema_version": 1,
        "database": ctx.dataset.name if ctx.dataset else None,
        "device_name": ctx.gpu_name,
        "device_slug": ctx.device_slug,
        "dry": ctx.dry,
        "drawn_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": _git(),
        **drawn.as_dict(),
        "about": "api.table2_sample: uniform within each family's Table 2 axes (families "
        "weighted), skipping draws the memory model says do not fit and steps the step-time "
        "model prices above max_step_s (docs/gpu.md)",
    }


def _energy(ctx: Ctx, log: _Log) -> str:
    from paradnn import api
    from paradnn.config import SweepSettings

    f = ctx.sweep_file("gpu-energy", ctx.sizes["energy"], tuple(ctx.sizes["energy_precisions"]))
    api.run(api.plan(f), device=ctx.device, db=ctx.db("runs"), energy=True, energy_idle_s=0.0,
            settings=SweepSettings(remeasure=0), on_event=log.event)  # fmt: skip
    return f"api.run({f!r}, energy=True)"


def _ops(ctx: Ctx, log: _Log) -> str:
    from paradnn import api

    o = ctx.sizes["ops"]
    api.ops(ctx.device, list(o["precisions"]), names=o["names"], db=ctx.db("runs"), force=True,
            progress=log)  # fmt: skip
    return f"api.ops({ctx.device!r}, {list(o['precisions'])})"


def _profile(ctx: Ctx, log: _Log) -> str:
    from paradnn import api

    fam, cfg = ctx.sizes["profile"]
    api.bench(fam, cfg, device=ctx.device, db=ctx.db("profile"), profile=True,
              timing=_timing(ctx), on_event=log.event)  # fmt: skip
    return f"api.bench({fam!r}, {cfg}, profile=True)"


def _pipeline(ctx: Ctx, log: _Log) -> str:
    from paradnn import api

    fam, cfg = ctx.sizes["pipeline"]
    api.bench(fam, cfg, device=ctx.device, db=ctx.db("pipeline"), timing=_timing(ctx),
              data_source="pipeline", pin_memory=True, loader_workers=2,
              on_event=log.event)  # fmt: skip
    return f"api.bench({fam!r}, {cfg}, data_source='pipeline', pin_memory=True)"


SESSION_CALLS: dict[str, Callable[[Ctx, _Log], str]] = {
    "calibrate": _calibrate,
    "sample": _sample,
    "energy": _energy,
    "ops": _ops,
    "profile": _profile,
    "pipeline": _pipeline,
}


def run_local_step(p: Planned, ctx: Ctx) -> dict[str, Any]:
    """`validate`: the step-time model on this loan's sample (torch-free, in this process)."""
    from paradnn import api

    rec = _record(p)
    t0 = time.monotonic()
    db = str(ctx.dataset)
    # the dry run's CPU has no datasheet entry: it is priced as the 32-core Skylake (as a
    # 1-second calibrate on a busy CPU leaves no ceiling to build a chip from)
    platform = "skylake-n1-32" if ctx.dry else None
    rec["command"] = f"api.simulate_validate(db={db!r}, platform={platform!r}, model='step')"
    try:
        got = api.simulate_validate(db=db, platform=platform, model="step")
        rec["data"] = {"summary": got.summary.as_dict(), "runs": len(got.rows)}
        rec["status"] = "ok"
    except Exception as e:
        rec.update(status="failed", reason=f"{type(e).__name__}: {e}"[:500])
    rec["seconds"] = round(time.monotonic() - t0, 2)
    return rec


# -- what each step produced ------------------------------------------------------------------

RUN_FIELDS = (
    "family",
    "config",
    "precision",
    "mode",
    "backend",
    "data_source",
    "status",
    "error",
    "step_time_s",
    "examples_per_s",
    "achieved_flops",
    "flops_per_step",
    "utilization_datasheet",
    "utilization_measured",
    "peak_mem_bytes",
    "predicted_mem_bytes",
    "energy_j",
    "energy_window_s",
    "avg_power_w",
    "energy_per_sample_j",
    "energy_method",
    "quality",
    "quality_reasons",
    "nulls",
)


def _runs(db: str, sweep: str | None = None) -> list[dict[str, Any]]:
    if not Path(db).exists():
        return []
    from paradnn.store import open_store

    with open_store(db, readonly=True) as store:
        rows = store.runs(sweep=sweep)
    out = []
    for r in rows:
        d = {k: r.get(k) for k in RUN_FIELDS}
        d["nulls"] = {k: v for k, v in (r.get("nulls") or {}).items() if k in RUN_FIELDS}
        out.append(d)
    return out


def _json_out(stdout: str) -> Any:
    """The JSON a command printed (the last top-level object when logs precede it)."""
    text = stdout.strip()
    start = text.find("{")
    return json.loads(text[start:]) if start >= 0 else None


def _datasheet(name: str | None) -> dict[str, Any] | None:
    from paradnn import platforms

    plat = platforms.match(name) if name else None
    if plat is None:
        return None
    peaks = {p: plat.peak(p) for p in ("fp32", "tf32", "bf16", "fp16")}
    return {"platform": plat.id, "peaks": peaks, "mem_bandwidth": plat.mem_bandwidth}


def _ceilings(db: str) -> dict[str, Any]:
    from paradnn.store import open_store

    with open_store(db, readonly=True) as store:
        rows = store.rows("ceilings")
    name = rows[-1]["device_name"] if rows else None
    sheet = _datasheet(name)
    out = []
    for r in rows:
        ref = None
        if sheet and r["kind"] == "matmul":
            ref = sheet["peaks"].get(r["precision"])
        elif sheet and r["kind"] in ("copy", "triad"):
            ref = sheet["mem_bandwidth"]
        d = r.get("detail") or {}
        out.append(
            {
                "kind": r["kind"],
                "precision": r["precision"],
                "value": r["value"],
                "unit": r["unit"],
                "best_size": d.get("best_size"),
                "too_small": d.get("too_small"),
                "datasheet": ref,
                "fraction_of_datasheet": r["value"] / ref if ref and r["value"] else None,
            }
        )
    return {"device_name": name, "datasheet_platform": sheet and sheet["platform"], "ceilings": out}


def sample_figures(db: str, timing: Any = None) -> dict[str, Any]:
    """The sample's runs by status, and what its runs cost beyond their predicted steps: the
    mean per-run overhead (from one run's end to the next one's, less its first step, warm-up
    and timed blocks), each family's mean first step, and the mean stretch of a run's warm-up
    and timed seconds over the least `timing` allows (api.sample.SAMPLE_TIMING by default):
    the next loan's sizing. Means, not medians: the budget is a sum of runs."""
    from paradnn.api.sample import SAMPLE_TIMING
    from paradnn.store import open_store

    timing = timing or SAMPLE_TIMING

    with open_store(db, readonly=True) as store:
        rows = [r for r in store.runs() if str(r.get("sweep") or "").startswith("table2-sample")]
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    ok = [r for r in rows if r["status"] == "ok"]
    firsts: dict[str, list[float]] = {}
    for r in ok:
        firsts.setdefault(r["family"], []).append(r["first_step_s"] or 0.0)

    def timed(r: dict[str, Any]) -> float:  # its warm-up and timed blocks
        return (r["warmup_s"] or 0) + sum(r["samples"] or []) * (r["steps_per_sample"] or 1)

    stretches = [timed(r) / timing.least_seconds(r["step_time_s"]) for r in ok
                 if r["step_time_s"] and timing.least_seconds(r["step_time_s"]) > 0]  # fmt: skip
    overheads = []
    for prev, r in itertools.pairwise(ok):
        try:
            gap = (
                datetime.fromisoformat(r["finished_at"])
                - datetime.fromisoformat(prev["finished_at"])
            ).total_seconds()
        except (TypeError, ValueError):
            continue
        overheads.append(gap - (r["first_step_s"] or 0) - timed(r))
    meta = Path(db).with_suffix(".json")  # how it was drawn (sample_meta), beside it
    try:
        drawn = json.loads(meta.read_text()).get("runs") if meta.exists() else None
    except (OSError, ValueError):
        drawn = None
    return {
        "runs": len(rows),
        "drawn": drawn,
        "statuses": statuses,
        "noisy": sum(1 for r in ok if r.get("quality") == "noisy"),
        "per_run_overhead_s": round(statistics.fmean(overheads), 4) if overheads else None,
        "per_run_overhead_median_s": round(statistics.median(overheads), 4) if overheads else None,
        "per_run_overhead_target_s": RUN_OVERHEAD_TARGET_S,
        "first_step_s": {f: round(statistics.fmean(v), 4) for f, v in sorted(firsts.items())},
        "stretch": round(statistics.fmean(stretches), 3) if stretches else None,
    }


def extract(step: str, ctx: Ctx, stdout: str) -> dict[str, Any] | None:
    """The figures a step left (its stdout, its database or its JSON file)."""
    if step == "doctor":
        return _json_out(stdout)
    if step == "pytest_gpu":
        counts = dict.fromkeys(("passed", "failed", "skipped", "error", "errors"), 0)
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", stdout):
            counts[word] += int(n)
        counts["error"] += counts.pop("errors")
        return counts
    if step == "calibrate":
        return _ceilings(str(ctx.dataset))
    if step == "sample":
        if not (ctx.dataset and ctx.dataset.exists()):
            return None
        return sample_figures(str(ctx.dataset), _timing(ctx) if ctx.dry else None)
    if step == "hostprofile":
        from paradnn.store import open_store

        with open_store(str(ctx.dataset), readonly=True) as store:
            rows = store.rows("host_profile")
        return {"host_profile": rows[-1] if rows else None}
    if step == "ops":
        from paradnn.store import open_store

        with open_store(ctx.db("runs"), readonly=True) as store:
            rows = store.rows("ops")
        drop = {"env", "detail", "samples", "shapes", "shape"}
        return {"ops": [{k: v for k, v in r.items() if k not in drop} for r in rows]}
    if step == "energy":
        return {"runs": _runs(ctx.db("runs"), "gpu-energy")}
    if step in ("modes", "jax", "pipeline", "profile"):
        runs = _runs(ctx.db(step))
        data: dict[str, Any] = {"runs": runs}
        if step == "profile" and Path(ctx.db("profile")).exists():
            from paradnn.store import open_store

            with open_store(ctx.db("profile"), readonly=True) as store:
                data["op_profile_rows"] = len(store.rows("op_profile"))
        return data
    if step in ("memory", "overhead", "benchwall"):
        path = ctx.work / f"{step}.json"
        return json.loads(path.read_text()) if path.exists() else None
    return None


# -- the headline figures -------------------------------------------------------------------


def headline(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The figures the issues ask for, each None with the reason when the run did not give it."""
    h: dict[str, Any] = {"nulls": {}}
    nulls = h["nulls"]

    def data(step: str) -> Any:
        r = results.get(step) or {}
        if r.get("data") is None:
            why = r.get("reason") or r.get("data_error") or r.get("status") or "not run"
            return None, f"{step}: {why}"
        return r["data"], None

    cal, why = data("calibrate")
    ceilings = {c["precision"]: c for c in (cal or {}).get("ceilings", []) if c["kind"] == "matmul"}
    h["matmul_ceiling"] = {
        p: {
            "flop_per_s": c["value"],
            "reason": c["too_small"] if c["value"] is None else None,
            "datasheet_flop_per_s": c["datasheet"],
            "fraction_of_datasheet": c["fraction_of_datasheet"],
            "best_size": c["best_size"],
        }
        for p, c in ceilings.items()
    } or None
    if not ceilings:
        nulls["matmul_ceiling"] = why or "calibrate stored no matmul ceiling"
    copy = next((c for c in (cal or {}).get("ceilings", []) if c["kind"] == "copy"), None)
    h["copy_bytes_per_s"] = copy and copy["value"]
    h["copy_fraction_of_datasheet"] = copy and copy["fraction_of_datasheet"]
    if copy is None:
        nulls["copy_bytes_per_s"] = why or "calibrate stored no copy ceiling"

    sample, why = data("sample")
    h["sample_runs"] = sample and sample["runs"]
    h["sample_drawn"] = sample and sample.get("drawn")
    h["sample_statuses"] = sample and sample["statuses"]
    h["sample_database"] = (results.get("sample") or {}).get("database")
    # the target is issue 43's median; the mean (beside it) sizes the next sample
    h["per_run_overhead_s"] = sample and sample.get(
        "per_run_overhead_median_s", sample["per_run_overhead_s"]
    )
    h["per_run_overhead_target_s"] = RUN_OVERHEAD_TARGET_S
    if not sample:
        nulls["sample_runs"] = why or "the sample stored no run"

    energy, why = data("energy")
    runs = [r for r in (energy or {}).get("runs", []) if r["status"] == "ok"]
    fc = [r for r in runs if r["family"] == "fc" and r["precision"] == "bf16"]
    big = max(fc, key=lambda r: r["flops_per_step"] or 0, default=None)
    h["fc_bf16_utilization_measured"] = big and big["utilization_measured"]
    h["fc_bf16_config"] = big and big["config"]
    h["fc_bf16_target"] = FC_HEADLINE_TARGET
    h["fc_bf16_utilization_of"] = big and big["utilization_measured"] is not None and "its database"
    # the energy runs' database (work/runs.db) holds no ceiling: calibrate stores its own in the
    # sample's database, so the run's achieved rate is set against the bf16 ceiling calibrate
    # measured on this loan, and the summary says so
    bf16 = (h["matmul_ceiling"] or {}).get("bf16") or {}
    own = big is not None and big["utilization_measured"] is not None
    if big is not None and not own and bf16.get("flop_per_s") and big.get("achieved_flops"):
        h["fc_bf16_utilization_measured"] = big["achieved_flops"] / bf16["flop_per_s"]
        h["fc_bf16_utilization_of"] = "the bf16 ceiling calibrate measured on this loan"
    if big is None:
        nulls["fc_bf16_utilization_measured"] = why or "no ok FC bf16 run"
    elif h["fc_bf16_utilization_measured"] is None:
        nulls["fc_bf16_utilization_measured"] = (big["nulls"] or {}).get(
            "utilization_measured", "no measured ceiling for bf16"
        )
    h["energy"] = [
        {
            "family": r["family"],
            "precision": r["precision"],
            "avg_power_w": r["avg_power_w"],
            "energy_per_sample_j": r["energy_per_sample_j"],
            "energy_method": r["energy_method"],
            "reason": None
            if r["energy_j"] is not None
            else (r["nulls"] or {}).get("energy_j", "not measured"),
        }
        for r in runs
    ] or None
    if not runs:
        nulls["energy"] = why or "no ok run with energy"

    ov, why = data("overhead")
    h["harness_overhead_ratio"] = ov and ov.get("median_ratio")
    h["harness_overhead_max_ratio"] = ov and max(
        (c["ratio"] for c in ov.get("configs", [])), default=None
    )
    h["harness_overhead_by_config"] = ov and [
        {"family": c["family"], "config": c["config"], "ratio": round(c["ratio"], 3)}
        for c in ov.get("configs", [])
    ]
    h["harness_overhead_target"] = OVERHEAD_TARGET
    # each config's rounds give a range of ratios: met, not met, or inconclusive where the
    # range straddles the target (harness_overhead.verdict); older files carry no verdict
    h["harness_overhead_verdict"] = (ov and ov.get("verdict")) or None
    # a run stopped at its cap leaves the configs it finished (harness_overhead.py writes after
    # each): said as partial, with how many of how many
    h["harness_overhead_partial"] = (
        ov
        and ov.get("complete") is False
        and f"{len(ov.get('configs', []))} of {ov.get('configs_planned', '?')} configs"
    ) or None
    if not ov:
        nulls["harness_overhead_ratio"] = why or "overhead.json missing"

    wall, why = data("benchwall")
    cand = ((wall or {}).get("summary") or {}).get("candidate") or {}
    h["bench_wall_s"] = cand.get("bench_wall_s")
    h["bench_wall_target_s"] = BENCH_WALL_TARGET_S
    h["sweep_per_run_overhead_s"] = cand.get("per_run_overhead_s")
    if not cand:
        nulls["bench_wall_s"] = why or "benchwall.json has no summary"

    val, why = data("validate")
    summary = (val or {}).get("summary") or []
    h["simulator_mdape"] = {
        s["family"]: s.get("mdape") for s in summary if s.get("family") is not None
    } or None
    if not h["simulator_mdape"] and val is not None and val.get("runs") == 0:
        got = sample or {}
        nulls["simulator_mdape"] = (
            f"simulate validate compared no run: the sample stored {got.get('statuses')}, "
            f"{got.get('noisy')} of them noisy (left out, as compare does)"
        )
    elif not h["simulator_mdape"]:
        nulls["simulator_mdape"] = why or "simulate validate printed no summary"
    mem, why = data("memory")
    h["memory_total_vs_peak"] = mem and (mem.get("summary") or {}).get("total_vs_peak")
    h["memory_peak_kind"] = mem and mem.get("peak")
    if not mem:
        nulls["memory_total_vs_peak"] = why or "memory.json missing"
    return h


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def markdown(summary: dict[str, Any]) -> str:
    """summary.md: the headline figures, one line per step, the plan's accounting."""
    h, nulls = summary["headline"], summary["headline"]["nulls"]
    mode = "dry run on the CPU (tiny sizes: no GPU figure)" if summary["dry"] else "GPU run"
    plan = summary.get("plan") or {}
    lines = [
        f"# GPU acceptance run: {summary['device_name']}",
        "",
        f"{mode}; {summary['started_at']}; {summary['wall_s']:.0f} s of wall time, plan "
        f"{plan.get('total_s', 0):.0f} s of {summary['budget_s']:.0f} s; paradnn "
        f"{summary['git'] or 'n/a'}; torch {summary['versions'].get('torch') or 'n/a'}.",
        "",
        "## Headline figures",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for p, c in (h.get("matmul_ceiling") or {}).items():
        sheet = c["datasheet_flop_per_s"]
        ref = (
            f" = {_pct(c['fraction_of_datasheet'])} of datasheet {sheet / 1e12:.4g}"
            if sheet
            else ""
        )
        if c["flop_per_s"] is None:
            lines.append(f"| matmul ceiling {p} | n/a ({c['reason']}) |")
            continue
        lines.append(f"| matmul ceiling {p} | {c['flop_per_s'] / 1e12:.4g} TFLOP/s{ref} |")
    if h.get("matmul_ceiling") is None:
        lines.append(f"| matmul ceiling | n/a ({nulls.get('matmul_ceiling')}) |")
    cp = h.get("copy_bytes_per_s")
    lines.append(
        f"| memory copy | {cp / 1e9:.4g} GB/s "
        f"({_pct(h['copy_fraction_of_datasheet'])} of datasheet) |"
        if cp
        else f"| memory copy | n/a ({nulls.get('copy_bytes_per_s')}) |"
    )
    n = h.get("sample_runs")
    drawn = h.get("sample_drawn")
    of = f" of {drawn} drawn" if drawn is not None and drawn != n else ""
    lines.append(
        f"| sample of Table 2 | {n}{of} runs {h.get('sample_statuses')} in "
        f"{h.get('sample_database')}; per-run overhead {h.get('per_run_overhead_s')} s "
        f"(target ≤ {RUN_OVERHEAD_TARGET_S} s) |"
        if n is not None
        else f"| sample of Table 2 | n/a ({nulls.get('sample_runs')}) |"
    )
    md = h.get("simulator_mdape")
    lines.append(
        "| step-time model on the sample (MdAPE by family) | "
        + ", ".join(f"{f} {_pct(v)}" for f, v in md.items())
        + " |"
        if md
        else f"| step-time model on the sample | n/a ({nulls.get('simulator_mdape')}) |"
    )
    u = h.get("fc_bf16_utilization_measured")
    lines.append(
        f"| FC bf16 utilization of the measured ceiling ({h['fc_bf16_config']}) | {_pct(u)} "
        f"(target ≥ {h['fc_bf16_target']:.0%}; of {h.get('fc_bf16_utilization_of')}) |"
        if u is not None
        else f"| FC bf16 utilization | n/a ({nulls.get('fc_bf16_utilization_measured')}) |"
    )
    r = h.get("harness_overhead_ratio")
    lines.append(
        f"| harness overhead (paradnn / plain loop) | median {r:.3f}×, max "
        f"{h['harness_overhead_max_ratio']:.3f}× (target ≤ {OVERHEAD_TARGET}× on every "
        f"config"
        + (f": {h['harness_overhead_verdict']}" if h.get("harness_overhead_verdict") else "")
        + ")"
        + (
            f"; partial: {h['harness_overhead_partial']}"
            if h.get("harness_overhead_partial")
            else ""
        )
        + " |"
        if r is not None
        else f"| harness overhead | n/a ({nulls.get('harness_overhead_ratio')}) |"
    )
    w = h.get("bench_wall_s")
    lines.append(
        f"| `bench` wall time, small FC | {w:.2f} s (target ≤ {BENCH_WALL_TARGET_S} s); a "
        f"sweep's per-run overhead {h.get('sweep_per_run_overhead_s')} s |"
        if w is not None
        else f"| `bench` wall time | n/a ({nulls.get('bench_wall_s')}) |"
    )
    for e in h.get("energy") or []:
        if e["avg_power_w"] is not None:
            per = e["energy_per_sample_j"]
            value = (
                f"{e['avg_power_w']:.1f} W, "
                + (f"{per:.4g} J/sample" if per is not None else "J/sample n/a")
                + f" ({e['energy_method']})"
            )
        else:
            value = f"n/a ({e['reason']})"
        lines.append(f"| power {e['family']} {e['precision']} | {value} |")
    if h.get("energy") is None:
        lines.append(f"| power and J/sample | n/a ({nulls.get('energy')}) |")
    mt = h.get("memory_total_vs_peak")
    lines.append(
        f"| memory prediction vs {h['memory_peak_kind']} (|error| median / max) | "
        f"{_pct(mt['median_abs'])} / {_pct(mt['max_abs'])} |"
        if mt
        else f"| memory prediction | n/a ({nulls.get('memory_total_vs_peak')}) |"
    )
    lines += [
        "",
        "## Steps",
        "",
        "| step | status | seconds | cap | note |",
        "|---|---|---|---|---|",
    ]
    for s in summary["steps"]:
        note = (s["reason"] or s["data_error"] or "").replace("|", "/").replace("\n", " ")[:140]
        if s.get("earlier"):
            note = f"an earlier run's (started {s['earlier']})" + (f"; {note}" if note else "")
        lines.append(
            f"| {s['step']} | {s['status']} | {s['seconds']:.1f} | {s['cap_s']:.0f} | {note} |"
        )
    if plan:
        lines += [
            "",
            f"The plan: {plan['total_s']:.0f} s of {plan['budget_s']:.0f} s by its own "
            f"accounting (caps = measured × {plan['slack']}, at least {FLOOR_S:.0f} s; the "
            f"shared worker's start {plan['session_start_cap_s']:.0f} s; this script "
            f"{plan['own_s']:.0f} s). Caps come from benchmarks/results/gpu/step_seconds.json, "
            "which this run updated.",
        ]
    return "\n".join(lines) + "\n"


# -- the whole run --------------------------------------------------------------------------


def installed_versions() -> dict[str, str | None]:
    """The installed distribution of each module the run uses (None: not installed)."""
    from importlib import metadata

    dist = {"pynvml": "nvidia-ml-py"}
    out: dict[str, str | None] = {}
    for m in MODULES:
        try:
            out[m] = metadata.version(dist.get(m, m))
        except metadata.PackageNotFoundError:
            out[m] = None
    return out


def available_modules() -> dict[str, bool]:
    return {m: importlib.util.find_spec(m) is not None for m in MODULES}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown-device"


def gpu_name() -> tuple[str | None, str | None]:
    """(the first GPU's name, None) via NVML, torch-free; (None, why) without one."""
    try:
        from paradnn import host

        with host.nvml() as nv:
            if nv.nvmlDeviceGetCount() < 1:
                return None, "NVML sees no GPU"
            return host.text(nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(0))), None
    except Exception as e:
        return None, str(e)


def _git() -> str | None:
    try:
        p = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return p.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def dataset_path(folder: Path, device: str, when: datetime) -> Path:
    """`<folder>/<device>-<date>.sqlite`, with -2, -3, … when a loan of the same day has one."""
    base = f"{device}-{when.strftime('%Y-%m-%d')}"
    path, n = folder / f"{base}.sqlite", 1
    while path.exists():
        n += 1
        path = folder / f"{base}-{n}.sqlite"
    return path


def _sample_costs(costs: dict[str, Any], device: str) -> Any:
    """The sample's per-run costs measured on this device's last loan (else the defaults)."""
    from paradnn.api.sample import SampleCosts

    got = (costs.get("devices", {}).get(device) or {}).get("sample_costs") or {}
    default = SampleCosts()
    first = {**default.first_step_s, **(got.get("first_step_s") or {})}
    over = got.get("per_run_overhead_s")
    stretch = got.get("stretch")
    return SampleCosts(
        overhead_s=default.overhead_s if over is None else over,
        first_step_s=first,
        stretch=default.stretch if stretch is None else stretch,
    )


@contextlib.contextmanager
def _shared(active: bool) -> Iterator[Any]:
    if not active:
        yield None
        return
    from paradnn import api

    with api.shared_workers() as session:
        yield session


# What a step leaves under work/ (a JSON file, a database): removed before the run, so that a
# step stopped at its cap, or one that failed, is never summarised from an earlier run's file (a
# warm machine keeps ignored files between calls, and work/ holds files from earlier loans).
STEP_OUTPUTS: dict[str, tuple[str, ...]] = {
    "memory": ("memory.json",),
    "overhead": ("overhead.json",),
    "benchwall": ("benchwall.json",),
    "energy": ("runs.db",),
    "ops": ("runs.db",),
    "modes": ("modes.db",),
    "jax": ("jax.db",),
    "profile": ("profile.db",),
    "pipeline": ("pipeline.db",),
}


def clear_outputs(ctx: Ctx, names: list[str]) -> list[str]:
    """Remove what the named steps will write under work/; returns the paths removed."""
    removed = []
    for name in names:
        for f in STEP_OUTPUTS.get(name, ()):
            for path in (ctx.work / f, ctx.work / f"{f}-wal", ctx.work / f"{f}-shm"):
                if path.exists():
                    path.unlink()
                    removed.append(str(path))
    return removed


def run(
    ctx: Ctx,
    plan: Plan,
    budget: Budget,
    device_name: str,
    available: dict[str, bool] | None = None,
    runner: Callable[..., dict[str, Any]] = execute,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every included step in order (the rest recorded as skipped with the reason), then
    summary.json and summary.md; returns the summary."""
    ctx.work.mkdir(parents=True, exist_ok=True)
    clear_outputs(ctx, [p.step.name for p in plan.included()])
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    available = available_modules() if available is None else available
    results: dict[str, dict[str, Any]] = {}
    session_start: list[float] = []
    planned = {p.step.name: p for p in plan.steps}
    sessions = [p for p in plan.included() if p.step.kind == "session"]
    later = [p for p in plan.included() if p.step.kind != "session" and p.step.name != "doctor"]
    first = [p for p in plan.included() if p.step.name == "doctor"]

    def one(p: Planned, session: Any = None) -> None:
        say(f"[{budget.left():5.0f} s left] {p.step.name}: {p.step.what} (cap {p.cap_s:.0f} s)")
        missing = [m for m in p.step.needs if not available.get(m, False)]
        timeout, why = budget.admit(p.cap_s)
        if missing:
            why = f"not installed: {', '.join(missing)}"
            rec = {**_record(p), "status": "skipped", "reason": why}
        elif timeout is None:
            rec = {**_record(p), "status": "skipped", "reason": why}
        elif p.step.kind == "process":
            rec = run_process_step(p, ctx, timeout, runner)
        elif p.step.kind == "session":
            rec = run_session_step(p, ctx, timeout, session)
        else:
            rec = run_local_step(p, ctx)
        if p.step.name == "sample":
            rec["database"] = str(ctx.dataset)
            rec["seed"] = ctx.seed
        results[p.step.name] = _write(ctx, rec)
        say(
            f"    → {rec['status']} in {rec['seconds']:.1f} s"
            + (f" ({rec['reason']})" if rec["reason"] else "")
        )

    for p in first:
        one(p)
    with _shared(bool(sessions)) as session:
        for p in sessions:
            one(p, session)
        if session is not None and session.starts:
            session_start.append(session.starts[0])
    for p in later:
        one(p)
    for p in plan.steps:  # what the plan deferred is recorded too (not what --steps left out)
        if not p.included and (p.reason or "").startswith("deferred"):
            results[p.step.name] = _write(ctx, {**_record(p), "status": "skipped",
                                                "reason": p.reason})  # fmt: skip
    # a run of a few steps (--steps, a second call on the same loan) keeps the day's earlier
    # records of the others in its summary, each said to be from its earlier run
    earlier = earlier_records(ctx, set(results), started[:10])
    doctor = (results.get("doctor") or earlier.get("doctor") or {}).get("data") or {}
    # without the doctor step (a --steps subset), the installed versions, read without importing
    versions = dict(doctor.get("software") or installed_versions())
    order = [s.name for s in STEPS]
    summary = {
        "schema_version": SCHEMA_VERSION,
        "dry": ctx.dry,
        "device": ctx.device,
        "device_name": device_name,
        "started_at": started,
        "wall_s": round(time.monotonic() - t0, 1),
        "budget_s": plan.budget_s,
        "git": _git(),
        "python": sys.version.split()[0],
        "versions": versions,
        "modules": available,
        "plan": plan.as_dict(),
        "session_start_s": session_start[0] if session_start else None,
        "steps": [
            {k: results[n].get(k) for k in SUMMARY_KEYS}
            for n in order
            if n in results and planned[n].included
        ]
        + [
            {k: results[n].get(k) for k in SUMMARY_KEYS}
            for n in order
            if n in results and not planned[n].included
        ]
        + [
            {**{k: earlier[n].get(k) for k in SUMMARY_KEYS}, "earlier": earlier[n]["started_at"]}
            for n in order
            if n in earlier
        ],
        "headline": None,
    }
    try:
        summary["headline"] = headline({**earlier, **results})
        text = markdown(summary)
    except Exception as e:  # a summary bug must not lose the steps' files: say so, keep them
        summary["headline"] = {"nulls": {}, "error": f"{type(e).__name__}: {e}"[:500]}
        text = f"# GPU acceptance run: {device_name}\n\nsummary failed: {summary['headline']}\n"
    (ctx.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (ctx.out / "summary.md").write_text(text)
    summary["_results"] = results
    return summary


SUMMARY_KEYS = ("step", "status", "reason", "seconds", "cap_s", "data_error")


def earlier_records(ctx: Ctx, ran: set[str], day: str) -> dict[str, dict[str, Any]]:
    """The step records under --out that this run did not write, started on `day` (UTC) and
    not skipped: what an earlier call on the same loan measured."""
    got = {}
    for name in STEP_NAMES:
        path = ctx.out / f"{name}.json"
        if name in ran or not path.exists():
            continue
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(rec, dict)
            and rec.get("schema_version") == SCHEMA_VERSION
            and str(rec.get("started_at") or "")[:10] == day
            and rec.get("status") not in (None, "skipped")
        ):
            got[name] = rec
    return got


def parse_steps(text: str | None) -> list[str] | None:
    if not text:
        return None
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in wanted if s not in STEP_NAMES]
    if bad or not wanted:
        raise ValueError(f"--steps {text!r}: each must be one of {', '.join(STEP_NAMES)}")
    return [s.name for s in STEPS if s.name in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dry",
        action="store_true",
        help="Rehearse on the CPU: every step at tiny sizes (no GPU needed)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="Results folder (default benchmarks/results/gpu/<device-slug>/)",
    )
    ap.add_argument(
        "--steps",
        default=None,
        help=f"Comma-separated subset of: {', '.join(STEP_NAMES)} (default: the core steps "
        "and the optional ones that fit, by value)",
    )
    ap.add_argument(
        "--slack",
        type=float,
        default=None,
        help=f"Caps = estimate × this (default {SLACK}; 6 with --dry: a busy CPU is slow to "
        "import torch and start workers)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=TOTAL_BUDGET_S,
        help=f"Seconds for the whole run, by the plan's accounting (default {TOTAL_BUDGET_S:.0f})",
    )
    ap.add_argument("--seed", type=int, default=None, help="The sample's seed (default: the time)")
    ap.add_argument(
        "--sample-seconds",
        type=float,
        default=SAMPLE_TARGET_S,
        help=f"The sample's estimated seconds at most (default {SAMPLE_TARGET_S:.0f}; less "
        "leaves room for optional steps)",
    )
    ap.add_argument("--plan", action="store_true", help="Print the plan and its accounting only")
    args = ap.parse_args(argv)
    try:
        names = parse_steps(args.steps)
    except ValueError as e:
        ap.error(str(e))
    if not (0 < args.budget <= 3600):
        ap.error(f"--budget {args.budget}: must be in (0, 3600] seconds")
    slack = args.slack if args.slack is not None else (6.0 if args.dry else SLACK)
    if not (1 <= slack <= 20):
        ap.error(f"--slack {slack}: must be in [1, 20]")
    if args.seed is not None and not (0 <= args.seed < 2**63):
        ap.error(f"--seed {args.seed}: must be in [0, 2^63)")
    if not (10 <= args.sample_seconds <= 600):
        ap.error(f"--sample-seconds {args.sample_seconds}: must be in [10, 600]")
    if args.dry:
        from paradnn import host

        name = host.cpu_model()
        gpu = None
    else:
        name, why = gpu_name()
        if name is None:
            print(f"error: no GPU ({why}); `--dry` rehearses the run on the CPU", file=sys.stderr)
            return 2
        gpu = name
    device = "cpu-dry" if args.dry else slug(name)
    out = (args.out or RESULTS / slug(name)).resolve()
    costs_path = out / "step_seconds.json" if args.dry else COSTS
    costs = load_costs(costs_path if costs_path.exists() else COSTS)
    budget_s = args.budget * (slack if args.dry else 1.0)
    plan = make_plan(
        names,
        costs,
        device,
        budget_s=budget_s,
        slack=slack,
        sample_target_s=args.sample_seconds,
        dry=args.dry,
    )
    if args.plan:
        print(json.dumps(plan.as_dict(), indent=1))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    folder = out / "data" if args.dry else DATASETS
    folder.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(
        out=out,
        dry=args.dry,
        sizes=DRY_SIZES if args.dry else GPU_SIZES,
        device_slug=device,
        dataset=dataset_path(folder, slug(name), now),
        seed=args.seed if args.seed is not None else int(now.strftime("%Y%m%d%H%M%S")),
        sample_budget_s=plan.sample_budget_s,
        sample_costs=_sample_costs(costs, device),
        gpu_name=gpu,
    )
    # SIGTERM (a lease ending) unwinds like Ctrl-C: the running step's group is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # the wall clock's net sits a little above the plan: a stopped step takes seconds to end
    summary = run(ctx, plan, Budget(plan.budget_s + 30.0 * (slack if args.dry else 1.0)), name)
    results = summary.pop("_results")
    sample = (results.get("sample") or {}).get("data") or {}
    sample_costs = None
    if sample.get("per_run_overhead_s") is not None:
        sample_costs = {
            "per_run_overhead_s": sample["per_run_overhead_s"],
            "first_step_s": sample["first_step_s"],
            "stretch": sample.get("stretch"),
        }
    costs_path.write_text(
        json.dumps(
            record_costs(
                load_costs(costs_path) if costs_path.exists() else costs,
                device,
                {n: r for n, r in results.items() if n in STEP_NAMES},
                summary["session_start_s"],
                sample_costs,
                now.strftime("%Y-%m-%d"),
            ),
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"{summary['wall_s']:.0f} s; results in {ctx.out} (summary.md); sample {ctx.dataset}")
    bad = [
        s["step"]
        for s in summary["steps"]
        if s["status"] in ("failed", "timeout") and not s.get("earlier")
    ]
    if bad:
        print(f"not ok: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
