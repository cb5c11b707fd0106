"""The GPU acceptance run: every GPU path of paradnn exercised once, in one command, in 8 minutes.

A GPU machine is lent now and then, for minutes, with no network; this script is written and
tested on CPU so that it runs in one go there (docs/gpu.md). Each step is a subprocess with a
time cap (its process group is killed at the cap) and writes `<step>.json` whatever happens:
its command, status (ok, failed, timeout, skipped), seconds, the tail of its output, and the
figures it produced. The caps add up to at most TOTAL_BUDGET_S; a step whose minimum no longer
fits in what is left is recorded as skipped with the reason, never started. At the end,
summary.json and summary.md hold the headline figures (matmul ceiling per precision against
the datasheet, FC bf16 utilization, harness overhead, power and J/sample, simulator error).

    PYTHONPATH=src python3 benchmarks/gpu_check.py            # on the GPU: make gpu-check
    PYTHONPATH=src python3 benchmarks/gpu_check.py --dry --out /tmp/gc   # CPU rehearsal
    ... --steps doctor,profile                               # a subset

Results go to benchmarks/results/gpu/<device-slug>/ (the GPU's name, lower case) unless --out.
Only what the GPU machine has is used: python3 with torch (JAX, pandas, scipy, matplotlib),
paradnn from src/ — no install step, no network. `--dry` runs every step on the CPU at tiny
sizes and short budgets, writing the same files.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:  # `python3 benchmarks/gpu_check.py` needs no PYTHONPATH
    sys.path.insert(0, str(ROOT / "src"))
RESULTS = ROOT / "benchmarks" / "results" / "gpu"
SCHEMA_VERSION = 1
TOTAL_BUDGET_S = 560.0  # a device call runs at most 600 s; the rest is start-up and copying
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
OVERHEAD_TARGET = 1.01  # issue 33: harness time / minimal loop on a GPU


@dataclass(frozen=True)
class Step:
    """One step of the acceptance run: at most `cap_s` seconds; not started with less than
    `min_s` left. `needs`: modules it cannot run without."""

    name: str
    what: str
    cap_s: float
    min_s: float
    needs: tuple[str, ...] = ()


# The caps follow the first H100 run (2026-11-26, benchmarks/results/gpu/nvidia-h100-80gb-hbm3/):
# each worker pays 3-5 s of CUDA start-up, so a step of n runs needs n × that on top of its
# timing. The sum stays ≤ TOTAL_BUDGET_S; the order puts the headline figures first.
PLAN: tuple[Step, ...] = (
    Step("doctor", "paradnn doctor --json: facts and sanity checks", 20, 8),
    Step("calibrate", "every native precision's matmul ceiling, HBM copy, triad", 30, 20),
    Step("quick", "run: FC + CNN in fp32, tf32, bf16, fp16 with --energy", 130, 60),
    Step("overhead", "harness_overhead.py: paradnn vs a minimal loop on FC, CNN, RNN", 30, 15),
    Step("sweep", "run: 8 small FC/CNN/LSTM configs in fp32 and bf16 (for simulate fit)", 45, 20),
    Step("simfit", "simulate fit on this run's runs: the held-out error", 10, 5),
    Step("pytest_gpu", "pytest -m gpu over the files holding GPU tests", 50, 25, ("pytest",)),
    Step("ops", "the accelerator study's op micro-benchmarks (fp32, bf16)", 60, 25),
    Step("memory", "memory_prediction.py: prediction vs max_memory_allocated, 5 configs", 30, 15),
    Step("profile", "bench fc --profile", 30, 15),
    Step("pipeline", "bench cnn --data pipeline --pin-memory", 30, 15),
    Step("jax", "run --backend jax on two configs", 40, 20, ("jax",)),
    Step("modes", "run --mode compile --mode reduce-overhead on an FC", 50, 25),
)
STEP_NAMES = tuple(s.name for s in PLAN)


# -- sizes: the GPU's and the dry run's ---------------------------------------------------------

GPU_SIZES: dict[str, Any] = {
    # the largest FC of the run (its bf16 utilization is a headline) and a ResNet-like CNN
    "quick": [
        ("fc", {"layers": 8, "nodes": 8192, "input": 2000, "output": 1000, "batch": 8192}),
        ("cnn", {"blocks": 2, "filters": 64, "image": 224, "output": 1000, "batch": 64}),
    ],
    "sweep": [
        *[
            ("fc", {"layers": la, "nodes": n, "input": 2000, "output": 1000, "batch": 1024})
            for la in (2, 4)
            for n in (1024, 4096)
        ],
        *[
            ("cnn", {"blocks": 1, "filters": f, "image": 64, "output": 1000, "batch": 64})
            for f in (16, 32)
        ],
        *[
            (
                "rnn",
                {
                    "layers": 1,
                    "embed": e,
                    "length": 20,
                    "vocab": 1000,
                    "batch": 256,
                    "cell": "lstm",
                },
            )
            for e in (256, 1024)
        ],
    ],
    "two": [
        ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 256}),
        ("cnn", {"blocks": 1, "filters": 32, "image": 64, "output": 1000, "batch": 32}),
    ],
    "overhead": [
        ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 512}),
        ("cnn", {"blocks": 1, "filters": 32, "image": 64, "output": 1000, "batch": 64}),
        (
            "rnn",
            {"layers": 1, "embed": 256, "length": 20, "vocab": 1000, "batch": 128, "cell": "lstm"},
        ),
    ],
    "pipeline": ["cnn", "blocks=1", "filters=32", "image=64", "batch=64"],
    "profile": ["fc", "layers=4", "nodes=2048", "input=2000", "output=1000", "batch=512"],
    "memory": ["0", "4", "8", "1", "5"],  # memory_prediction.CONFIGS: FC, CNN, LSTM, FC, CNN
    "timing": {
        "min_time_s": 0.3,
        "max_time_s": 2.0,
        "warmup_max_time_s": 3.0,
        "target_ci_rel": 0.05,
    },
    "calibrate_budget": "4",
    "overhead_rounds": "2",
    "doctor_budget": "12",  # the whole command's, its CUDA start-up included (docs/gpu.md)
}
_TINY = {
    "fc": {"layers": 2, "nodes": 32, "input": 16, "output": 8, "batch": 8},
    "cnn": {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 4},
    "rnn": {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": 4, "cell": "lstm"},
}
DRY_SIZES: dict[str, Any] = {
    "quick": [("fc", _TINY["fc"]), ("cnn", _TINY["cnn"])],
    "sweep": [
        *[("fc", {**_TINY["fc"], "nodes": n}) for n in (16, 64)],
        *[("cnn", {**_TINY["cnn"], "filters": f}) for f in (4, 8)],
        *[("rnn", {**_TINY["rnn"], "embed": e}) for e in (8, 16)],
    ],
    "two": [("fc", _TINY["fc"])],  # a CPU compile takes tens of seconds: one config
    "overhead": [("fc", _TINY["fc"]), ("cnn", _TINY["cnn"]), ("rnn", _TINY["rnn"])],
    "pipeline": ["cnn", "blocks=1", "filters=4", "image=16", "batch=4"],
    "profile": ["fc", "layers=2", "nodes=32", "input=16", "output=8", "batch=8"],
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
    "calibrate_budget": "1",
    "overhead_rounds": "1",
    "doctor_budget": "1",
}


# -- the run's context ----------------------------------------------------------------------


def scaled(steps: list[Step], factor: float) -> list[Step]:
    """The steps with caps and minimums times `factor` (a dry run on a busy CPU needs slack)."""
    return [Step(s.name, s.what, s.cap_s * factor, s.min_s * factor, s.needs) for s in steps]


@dataclass
class Ctx:
    out: Path
    dry: bool
    python: str = sys.executable
    sizes: dict[str, Any] = field(default_factory=dict)

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


def command(step: str, ctx: Ctx) -> list[str]:
    """The command line of a step (paradnn's real CLI flags; `--help` of each documents them)."""
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
    if step == "calibrate":
        return ctx.paradnn(
            "calibrate",
            "--device",
            dev,
            "--db",
            ctx.db("runs"),
            "--budget",
            s["calibrate_budget"],
            "--force",
            "--no-host",  # the ceilings only: the host profile would not fit the step's cap
        )
    if step == "ops":
        names = ("--name", "matmul-2048") if ctx.dry else ()
        return ctx.paradnn(
            "ops",
            "--device",
            dev,
            "--db",
            ctx.db("runs"),
            "-p",
            "fp32",
            *(() if ctx.dry else ("-p", "bf16")),
            *names,
            "--force",
        )
    if step == "quick":
        f = ctx.sweep_file("gpu-quick", s["quick"], ("fp32", "tf32", "bf16", "fp16"))
        return ctx.paradnn(
            "run", "--preset", f, "--db", ctx.db("runs"), *run, "--energy", "--energy-idle", "0"
        )
    if step == "sweep":
        f = ctx.sweep_file("gpu-sweep", s["sweep"], ("fp32", "bf16"))
        return ctx.paradnn("run", "--preset", f, "--db", ctx.db("runs"), *run)
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
    if step == "pipeline":
        return ctx.paradnn(
            "bench",
            *s["pipeline"],
            "--device",
            dev,
            "--db",
            ctx.db("pipeline"),
            "--data",
            "pipeline",
            "--pin-memory",
            "--loader-workers",
            "2",
            "--max-time",
            "2",
            "--json",
        )
    if step == "jax":
        f = ctx.sweep_file("gpu-jax", s["two"])
        return ctx.paradnn("run", "--preset", f, "--db", ctx.db("jax"), *run, "--backend", "jax")
    if step == "profile":
        return ctx.paradnn(
            "bench",
            *s["profile"],
            "--device",
            dev,
            "--db",
            ctx.db("profile"),
            "--profile",
            "--max-time",
            "2",
            "--json",
        )
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
    if step == "simfit":
        return ctx.paradnn(
            "simulate",
            "fit",
            "--db",
            ctx.db("runs"),
            "--format",
            "json",
            "--out",
            str(ctx.work / "fitted.toml"),
            # a busy CPU's 1 s calibrate leaves no ceiling to build a chip from: the dry run
            # fits against the database's CPU entry (a GPU falls back to its datasheet itself)
            *(("--platform", "skylake-n1-32") if ctx.dry else ()),
        )
    raise ValueError(f"step = {step!r}: must be one of {', '.join(STEP_NAMES)}")


# -- time -----------------------------------------------------------------------------------


class Budget:
    """The run's seconds: each step gets min(its cap, what is left), and is not started when
    less than its minimum is left. The clock is injectable (tests play any timeline)."""

    def __init__(self, total_s: float, clock: Callable[[], float] = time.monotonic):
        self.total_s, self.clock, self.t0 = total_s, clock, clock()

    def left(self) -> float:
        return self.total_s - (self.clock() - self.t0)

    def admit(self, step: Step) -> tuple[float | None, str | None]:
        """(timeout for the step, None), or (None, why it is skipped)."""
        left = self.left()
        if left < step.min_s:
            return None, (
                f"{max(left, 0):.0f} s of the {self.total_s:.0f} s budget left, below the "
                f"step's minimum of {step.min_s:.0f} s"
            )
        return min(step.cap_s, left), None


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


def run_step(
    step: Step,
    ctx: Ctx,
    budget: Budget,
    *,
    argv: list[str] | None = None,
    available: dict[str, bool] | None = None,
    runner: Callable[..., dict[str, Any]] = execute,
) -> dict[str, Any]:
    """Run one step (or record why not) and write <out>/<step>.json; returns what it wrote."""
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "step": step.name,
        "what": step.what,
        "cap_s": step.cap_s,
        "min_s": step.min_s,
        "timeout_s": None,
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
    missing = [m for m in step.needs if available is not None and not available.get(m, False)]
    timeout, why = budget.admit(step)
    if missing:
        rec.update(status="skipped", reason=f"not installed: {', '.join(missing)}")
    elif timeout is None:
        rec.update(status="skipped", reason=why)
    else:
        try:
            argv = argv if argv is not None else command(step.name, ctx)
        except Exception as e:  # building the command (a sweep file) failed: still recorded
            rec.update(status="failed", reason=f"could not build the command: {e}")
        if rec["status"] is None:
            log = ctx.out / "logs" / f"{step.name}.log"
            got = runner(argv, timeout, _env(ctx), ROOT, log)
            rec.update(
                command=argv,
                timeout_s=round(timeout, 1),
                status=got["status"],
                reason=got["error"],
                returncode=got["returncode"],
                seconds=got["seconds"],
                stdout_tail=got["stdout"][-TAIL_CHARS:],
                stderr_tail=got["stderr"][-TAIL_CHARS:],
                log=str(log.relative_to(ctx.out)),
            )
            try:
                rec["data"] = extract(step.name, ctx, got["stdout"])
            except Exception as e:  # what the step left is partial: say so, keep going
                rec["data_error"] = f"{type(e).__name__}: {e}"[:500]
    (ctx.out / f"{step.name}.json").write_text(json.dumps(rec, indent=1, default=str) + "\n")
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
        from paradnn.store import open_store

        with open_store(ctx.db("runs"), readonly=True) as store:
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
        return {
            "device_name": name,
            "datasheet_platform": sheet and sheet["platform"],
            "ceilings": out,
        }
    if step == "ops":
        from paradnn.store import open_store

        with open_store(ctx.db("runs"), readonly=True) as store:
            rows = store.rows("ops")
        drop = {"env", "detail", "samples", "shapes", "shape"}
        return {"ops": [{k: v for k, v in r.items() if k not in drop} for r in rows]}
    if step in ("quick", "sweep"):
        return {"runs": _runs(ctx.db("runs"), f"gpu-{step}")}
    if step in ("modes", "jax", "pipeline", "profile"):
        runs = _runs(ctx.db(step))
        data: dict[str, Any] = {"runs": runs}
        if step == "profile" and Path(ctx.db("profile")).exists():
            from paradnn.store import open_store

            with open_store(ctx.db("profile"), readonly=True) as store:
                data["op_profile_rows"] = len(store.rows("op_profile"))
        return data
    if step in ("memory", "overhead"):
        path = ctx.work / f"{step}.json"
        return json.loads(path.read_text()) if path.exists() else None
    if step == "simfit":
        return _json_out(stdout)
    return None


# -- the headline figures -------------------------------------------------------------------


def headline(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The figures the issue asks for, each None with the reason when the run did not give it."""
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

    quick, why = data("quick")
    runs = [r for r in (quick or {}).get("runs", []) if r["status"] == "ok"]
    fc = [r for r in runs if r["family"] == "fc" and r["precision"] == "bf16"]
    big = max(fc, key=lambda r: r["flops_per_step"] or 0, default=None)
    h["fc_bf16_utilization_measured"] = big and big["utilization_measured"]
    h["fc_bf16_config"] = big and big["config"]
    h["fc_bf16_target"] = FC_HEADLINE_TARGET
    if big is None:
        nulls["fc_bf16_utilization_measured"] = why or "no ok FC bf16 run"
    elif big["utilization_measured"] is None:
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
    h["harness_overhead_by_family"] = ov and {
        c["family"]: round(c["ratio"], 3) for c in ov.get("configs", [])
    }
    h["harness_overhead_target"] = OVERHEAD_TARGET
    if not ov:
        nulls["harness_overhead_ratio"] = why or "overhead.json missing"

    fit, why = data("simfit")
    if fit and fit.get("summary"):
        held = [s for s in fit["summary"] if s.get("split") == "holdout"]
        h["simulator_holdout_mdape"] = {s["family"]: s["mdape"] for s in held} or None
        h["simulator_fit"] = {
            "status": fit.get("status"),
            "fitted_runs": fit.get("fitted_runs"),
            "holdout_runs": fit.get("holdout_runs"),
        }
        if not held:
            nulls["simulator_holdout_mdape"] = "no run fell in the held-out part"
    else:
        h["simulator_holdout_mdape"] = None
        h["simulator_fit"] = None
        nulls["simulator_holdout_mdape"] = why or "simulate fit printed no summary"
    mem, why = data("memory")
    h["memory_total_vs_peak"] = mem and (mem.get("summary") or {}).get("total_vs_peak")
    h["memory_peak_kind"] = mem and mem.get("peak")
    if not mem:
        nulls["memory_total_vs_peak"] = why or "memory.json missing"
    return h


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def markdown(summary: dict[str, Any]) -> str:
    """summary.md: the headline figures and one line per step."""
    h, nulls = summary["headline"], summary["headline"]["nulls"]
    mode = "dry run on the CPU (tiny sizes: no GPU figure)" if summary["dry"] else "GPU run"
    lines = [
        f"# GPU acceptance run: {summary['device_name']}",
        "",
        f"{mode}; {summary['started_at']}; {summary['wall_s']:.0f} s of the "
        f"{summary['budget_s']:.0f} s budget; paradnn {summary['git'] or 'n/a'}; "
        f"torch {summary['versions'].get('torch') or 'n/a'}.",
        "",
        "## Headline figures",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    for p, c in (h["matmul_ceiling"] or {}).items():
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
    if h["matmul_ceiling"] is None:
        lines.append(f"| matmul ceiling | n/a ({nulls.get('matmul_ceiling')}) |")
    cp = h["copy_bytes_per_s"]
    lines.append(
        f"| memory copy | {cp / 1e9:.4g} GB/s "
        f"({_pct(h['copy_fraction_of_datasheet'])} of datasheet) |"
        if cp
        else f"| memory copy | n/a ({nulls.get('copy_bytes_per_s')}) |"
    )
    u = h["fc_bf16_utilization_measured"]
    lines.append(
        f"| FC bf16 utilization of the measured ceiling ({h['fc_bf16_config']}) | {_pct(u)} "
        f"(target ≥ {h['fc_bf16_target']:.0%}) |"
        if u is not None
        else f"| FC bf16 utilization | n/a ({nulls.get('fc_bf16_utilization_measured')}) |"
    )
    r = h["harness_overhead_ratio"]
    lines.append(
        f"| harness overhead (paradnn / minimal loop, median) | {r:.3f}× (target ≤ "
        f"{h['harness_overhead_target']}×; by family {h['harness_overhead_by_family']}) |"
        if r is not None
        else f"| harness overhead | n/a ({nulls.get('harness_overhead_ratio')}) |"
    )
    for e in h["energy"] or []:
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
    if h["energy"] is None:
        lines.append(f"| power and J/sample | n/a ({nulls.get('energy')}) |")
    md = h["simulator_holdout_mdape"]
    lines.append(
        "| simulator held-out error (MdAPE by family) | "
        + ", ".join(f"{f} {_pct(v)}" for f, v in md.items())
        + " |"
        if md
        else f"| simulator held-out error | n/a ({nulls.get('simulator_holdout_mdape')}) |"
    )
    mt = h["memory_total_vs_peak"]
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
        note = (s["reason"] or s["data_error"] or "").replace("|", "/").replace("\n", " ")[:120]
        lines.append(
            f"| {s['step']} | {s['status']} | {s['seconds']:.1f} | {s['cap_s']:.0f} | {note} |"
        )
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


def run(
    ctx: Ctx,
    steps: list[Step],
    budget: Budget,
    device_name: str,
    available: dict[str, bool] | None = None,
    runner: Callable[..., dict[str, Any]] = execute,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every step in order, then summary.json and summary.md; returns the summary."""
    ctx.work.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    available = available_modules() if available is None else available
    results: dict[str, dict[str, Any]] = {}
    for step in steps:
        say(f"[{budget.left():5.0f} s left] {step.name}: {step.what} (cap {step.cap_s:.0f} s)")
        rec = run_step(step, ctx, budget, available=available, runner=runner)
        results[step.name] = rec
        say(
            f"    → {rec['status']} in {rec['seconds']:.1f} s"
            + (f" ({rec['reason']})" if rec["reason"] else "")
        )
    doctor = (results.get("doctor") or {}).get("data") or {}
    # without the doctor step (a --steps subset), the installed versions, read without importing
    versions = dict(doctor.get("software") or installed_versions())
    summary = {
        "schema_version": SCHEMA_VERSION,
        "dry": ctx.dry,
        "device": ctx.device,
        "device_name": device_name,
        "started_at": started,
        "wall_s": round(time.monotonic() - t0, 1),
        "budget_s": budget.total_s,
        "git": _git(),
        "python": sys.version.split()[0],
        "versions": versions,
        "modules": available,
        "plan": [asdict(s) for s in PLAN],
        "steps": [
            {
                k: results[s.name][k]
                for k in ("step", "status", "reason", "seconds", "cap_s", "data_error")
            }
            for s in steps
        ],
        "headline": None,
    }
    try:
        summary["headline"] = headline(results)
        text = markdown(summary)
    except Exception as e:  # a summary bug must not lose the steps' files: say so, keep them
        summary["headline"] = {"nulls": {}, "error": f"{type(e).__name__}: {e}"[:500]}
        text = f"# GPU acceptance run: {device_name}\n\nsummary failed: {summary['headline']}\n"
    (ctx.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (ctx.out / "summary.md").write_text(text)
    return summary


def parse_steps(text: str | None) -> list[Step]:
    if not text:
        return list(PLAN)
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in wanted if s not in STEP_NAMES]
    if bad or not wanted:
        raise ValueError(f"--steps {text!r}: each must be one of {', '.join(STEP_NAMES)}")
    return [s for s in PLAN if s.name in wanted]


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
        "--steps", default=None, help=f"Comma-separated subset of: {', '.join(STEP_NAMES)}"
    )
    ap.add_argument(
        "--slack",
        type=float,
        default=None,
        help="Multiply every cap and the budget (default 1; 6 with --dry: a busy "
        "CPU is slow to import torch and start workers)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=TOTAL_BUDGET_S,
        help=f"Seconds for the whole run (default {TOTAL_BUDGET_S:.0f})",
    )
    args = ap.parse_args(argv)
    try:
        steps = parse_steps(args.steps)
    except ValueError as e:
        ap.error(str(e))
    if not (0 < args.budget <= 3600):
        ap.error(f"--budget {args.budget}: must be in (0, 3600] seconds")
    slack = args.slack if args.slack is not None else (6.0 if args.dry else 1.0)
    if not (1 <= slack <= 20):
        ap.error(f"--slack {slack}: must be in [1, 20]")
    steps = scaled(steps, slack)
    if args.dry:
        from paradnn import host

        name = host.cpu_model()
    else:
        name, why = gpu_name()
        if name is None:
            print(f"error: no GPU ({why}); `--dry` rehearses the run on the CPU", file=sys.stderr)
            return 2
    out = args.out or RESULTS / slug(name)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(out=out.resolve(), dry=args.dry, sizes=DRY_SIZES if args.dry else GPU_SIZES)
    # SIGTERM (a lease ending) unwinds like Ctrl-C: the running step's group is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summary = run(ctx, steps, Budget(args.budget * slack), name)
    print(f"{summary['wall_s']:.0f} s; results in {ctx.out} (summary.md)")
    bad = [s["step"] for s in summary["steps"] if s["status"] in ("failed", "timeout")]
    if bad:
        print(f"not ok: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
