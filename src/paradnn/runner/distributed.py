"""A data-parallel run: the worker starts N rank processes and watches them (docs/scaling.md).

The supervisor's contract is kept: one worker per run, killed on timeout. Inside it, for
`procs > 1`, this module
- plans the ranks: on CPU each rank pinned to its own disjoint cores with as many torch threads
  (more ranks than usable cores: `unsupported`); on GPUs one rank per GPU (NCCL);
- starts them (`python -m paradnn.runner.rank --launch FILE --rank R`: the run whole,
  runner/launch.py) in one process group of their own, each
  dying with the worker (PR_SET_PDEATHSIG), so a killed worker leaves no rank behind;
- watches them: the first rank that dies or reports an error ends the run at once (the others
  are killed), stored with that rank's error; a rank hung in a collective makes the others'
  collectives time out (init_process_group's timeout), which ends it the same way;
- turns rank 0's gathered result into the record's parts (times of the slowest rank, the
  no_sync compute, the isolated all-reduce, its algbw/busbw, the overlap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from paradnn.config import RunOptions, RunSpec
from paradnn.measure.collectives import busbw, overlap_fraction
from paradnn.measure.quality import quality_part
from paradnn.records import Memory, Parallel, RunRecord, Status
from paradnn.runner.core import Run, step_times
from paradnn.runner.launch import Launch, RankPlan
from paradnn.runner.start import dist_backend

PARENT_ENV = "PARADNN_RANK_PARENT"  # the worker's pid: a rank whose parent is gone exits
# (runner/rank.py holds the same name: it reads it before it imports torch, or this module)
POLL_S = 0.05
CPU_PEAK_NULL = "host memory of N rank processes is not separated per run"


def plan_ranks(
    options: RunOptions,
    device_type: str,
    usable: list[int],
    gpus: int = 0,
) -> RankPlan | str:
    """The ranks' placement, or why it cannot be done here (`unsupported`). CPU: disjoint cores,
    `threads` each (default: the usable cores split evenly); GPU: one rank per GPU."""
    n = options.procs
    backend = dist_backend(device_type)
    if device_type == "cuda":
        if n > gpus:
            return f"procs = {n} needs one GPU per rank; {gpus} visible"
        per = max(1, len(usable) // n)
        threads = options.threads or per
        cpus = [usable[r * per : (r + 1) * per] for r in range(n)] if len(usable) >= n else None
        return RankPlan(backend, device_type, threads, cpus)
    if n > len(usable):
        return (
            f"procs = {n} needs {n} CPU cores (one rank per core at least, pinned apart); "
            f"this process may use {len(usable)}"
        )
    per = options.threads or len(usable) // n
    if per * n > len(usable):
        return (
            f"procs = {n} × threads = {per} needs {per * n} CPU cores pinned apart; "
            f"this process may use {len(usable)}"
        )
    cpus = [usable[r * per : (r + 1) * per] for r in range(n)]
    return RankPlan(backend, device_type, per, cpus)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RanksBackend:
    """N data-parallel rank processes started and watched by this one (the worker)."""

    def start(self, run: Run) -> None:
        return None

    def unsupported(self, run: Run) -> str | None:
        from paradnn.measure import precision as prec

        reason = prec.unsupported_reason(run.options.precision, run.device)
        if reason and not run.rec.emulated:
            return reason
        if run.options.optimizer_impl != "auto" or run.rec.precision_policy != "mixed":
            return (  # docs/optimizers.md
                "data-parallel ranks run torch's default optimizer implementation under the "
                "mixed precision policy (optimizer_impl auto, precision_policy mixed)"
            )
        plan = _plan(run)
        return plan if isinstance(plan, str) else None

    def measure(self, run: Run) -> None:
        plan = _plan(run)
        assert isinstance(plan, RankPlan)  # unsupported() said why otherwise
        launch = launch_of(run.rec, run.options, plan)
        run.say({"phase": f"{run.options.procs} ranks ({plan.backend})"})
        outcome = run_ranks(launch)
        run.rec = merge(run.rec, outcome, run.options, plan)

    def failure(self, run: Run, exc: BaseException, status: str, error: str) -> RunRecord:
        return run.rec.replace(status=status, error=error)

    def cleanup(self, run: Run) -> None:
        return None  # run_ranks leaves no rank running, whatever happens


BACKEND = RanksBackend


def _plan(run: Run) -> RankPlan | str:
    import torch

    from paradnn import host

    device = run.device
    gpus = torch.cuda.device_count() if device.type == "cuda" else 0
    return plan_ranks(run.options, device.type, host.usable_cpus(), gpus)


def launch_of(rec: RunRecord, options: RunOptions, plan: RankPlan) -> Launch:
    """What the ranks of the prepared run `rec` start from: its description, whole."""
    return Launch(RunSpec(rec.family, rec.config, options), rec.rank_batch, plan)


def run_ranks(launch: Launch) -> dict[str, Any]:
    """Start the launch's ranks and wait for all of them, or for the first failure; always
    leaves no rank running. Returns rank 0's result, or {"ok": False, "rank", "status",
    "error"}."""
    tmp = Path(tempfile.mkdtemp(prefix="paradnn-ranks-"))
    launch = dataclasses.replace(launch, init_method=f"tcp://127.0.0.1:{free_port()}")
    path = tmp / "launch.json"
    path.write_text(launch.to_json())
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    procs: list[subprocess.Popen] = []
    pgid = 0
    try:
        for r in range(launch.world):
            with open(tmp / f"rank{r}.err", "wb") as err:
                p = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "paradnn.runner.rank",
                        "--launch",
                        str(path),
                        "--rank",
                        str(r),
                    ],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    process_group=pgid,  # all ranks in one group: one killpg ends them
                )
            pgid = pgid or p.pid
            procs.append(p)
        return _watch(procs, tmp)
    finally:
        _kill_all(procs, pgid)
        shutil.rmtree(tmp, ignore_errors=True)


def _watch(procs: list[subprocess.Popen], tmp: Path) -> dict[str, Any]:
    """Poll result files and exit codes until every rank has a result or one has failed."""
    results: dict[int, dict[str, Any]] = {}
    while True:
        for r, p in enumerate(procs):
            if r in results:
                continue
            f = tmp / f"rank{r}.json"
            if f.exists():
                results[r] = json.loads(f.read_text())
            elif p.poll() is not None:  # gone without a word: a signal, or an exit before
                time.sleep(POLL_S)  # its file lands (written before exit; look once more)
                if f.exists():
                    results[r] = json.loads(f.read_text())
                else:
                    return _died(r, p.returncode, tmp)
        failed = [v for v in results.values() if not v.get("ok")]
        if failed:
            return _first_failure(failed, procs, results)
        if len(results) == len(procs):
            return results[0]
        time.sleep(POLL_S)


def _died(rank: int, code: int | None, tmp: Path) -> dict[str, Any]:
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        status = Status.OOM if code == -signal.SIGKILL and _oom_hint(tmp, rank) else Status.CRASHED
        error = f"rank {rank} died with signal {name} ({code})"
    else:
        status, error = Status.CRASHED, f"rank {rank} exited with code {code} without a result"
    tail = _tail(tmp / f"rank{rank}.err")
    return {
        "ok": False,
        "rank": rank,
        "status": status,
        "error": error + (f": {tail}" if tail else ""),
    }


def _oom_hint(tmp: Path, rank: int) -> bool:
    return "out of memory" in _tail(tmp / f"rank{rank}.err").lower()


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _first_failure(
    failed: list[dict[str, Any]], procs: list[subprocess.Popen], results: dict[int, Any]
) -> dict[str, Any]:
    """The root cause among the ranks' errors: one that is not a collective's complaint about
    a peer (a timeout or a closed connection) if there is one, else the earliest. A collective
    timeout names the ranks that never answered."""

    def echo(e: dict[str, Any]) -> bool:
        low = e["error"].lower()
        return e["status"] == Status.TIMEOUT or "connection" in low or "peer" in low

    first = sorted(failed, key=lambda e: (echo(e), e.get("at", 0.0)))[0]
    out = {**first, "error": f"rank {first['rank']}: {first['error']} ({first.get('where', '?')})"}
    if first["status"] == Status.TIMEOUT:
        silent = [r for r, p in enumerate(procs) if r not in results and p.poll() is None]
        if silent:
            out["rank"] = silent[0]
            out["error"] = f"rank(s) {silent} never answered; " + out["error"]
    return out


def _kill_all(procs: list[subprocess.Popen], pgid: int) -> None:
    alive = [p for p in procs if p.poll() is None]
    if alive and pgid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def merge(rec: RunRecord, res: dict[str, Any], options: RunOptions, plan: RankPlan) -> RunRecord:
    """Rank 0's gathered result as record parts; a failure keeps what the start knew."""
    part = rec.parallel_part
    base = dataclasses.replace(part, rank_threads=plan.threads)
    if not res.get("ok"):
        why = f"not measured: rank {res.get('rank')} failed"
        nulls = {**part.nulls, **{k: why for k in part.nulls if k != "failed_rank"}}
        nulls.pop("failed_rank", None)
        nulls.pop("rank_threads", None)
        failed = dataclasses.replace(base, failed_rank=res.get("rank"), nulls=nulls)
        return rec.with_part(failed).replace(status=res["status"], error=res["error"][:500])
    n = options.procs
    step, comp = res["step"], res["compute"]
    ladder = res["allreduce"]
    grad = next((a for a in ladder if a["bytes"] >= res["grad_bytes"]), ladder[-1])
    over, raw = overlap_fraction(comp["median"], grad["time_s"], step["median"])
    counted = res["flops_rank"]
    total = counted["total"] * n if counted.get("total") is not None else None
    detail = {
        "per_rank_step_s": res["per_rank_step_s"],
        "per_rank_compute_s": res["per_rank_compute_s"],
        "rank_cpus": res["cpus"],
        "allreduce_ladder": ladder,
        "grad_dtype": res["grad_dtype"],
        "overlap_raw": raw,
        "compute": {k: v for k, v in comp.items() if k != "samples"},
        "compute_samples": comp["samples"],
        "loads": res["loads"],
        "overlap_rule": "(compute_nosync + allreduce - step) / allreduce, clipped to [0, 1]",
    }
    new = dataclasses.replace(
        base,
        compute_nosync_s=comp["median"],
        allreduce_bytes=int(grad["bytes"]),
        allreduce_s=grad["time_s"],
        allreduce_algbw=grad["algbw"],
        allreduce_busbw=busbw(grad["algbw"], n),
        overlap_frac=over,
        parallel=detail,
        nulls={"failed_rank": "no rank failed"},
    )
    rec = rec.with_part(new).replace(threads=plan.threads)
    rec = rec.replace(flops_per_step=total, flops_count_device=counted.get("device"))
    if total is None:
        rec = rec.with_part(
            dataclasses.replace(rec.counts, nulls={"flops_per_step": counted.get("reason", "")})
        )
    rec = rec.with_part(step_times(step, rec.counts, res["final_loss"]))
    load, scope = _most_loaded(res["loads"]), "the most loaded rank's cores"
    rec = rec.with_part(quality_part(step, load, options.timing.target_ci_rel, scope=scope))
    if res.get("peak_mem_bytes") is not None:
        return rec.with_part(Memory(int(res["peak_mem_bytes"])))
    return rec.with_part(Memory(None, nulls={"peak_mem_bytes": CPU_PEAK_NULL}))


def _most_loaded(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """The slowest-rank samples are judged under the most loaded rank's cores."""
    known = [ld for ld in loads if ld and ld.get("others_cpu_frac") is not None]
    return max(known, key=lambda ld: ld["others_cpu_frac"]) if known else (loads[0] or {})


__all__ = ["BACKEND", "Parallel", "RankPlan", "merge", "plan_ranks", "run_ranks"]
