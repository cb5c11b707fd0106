"""One rank of a data-parallel run, and paradnn's rank entry point (docs/scaling.md).

Two ways in:
- the worker starts N of these (`runner/distributed.py`) with `--launch FILE --rank R`: the
  launch file (runner/launch.py) holds the run whole, one rank's batch, the ranks' cores and
  the rendezvous (tcp://127.0.0.1:PORT); the rank writes its result (or its error) to
  `rank<R>.json` beside it, and dies with the worker (PR_SET_PDEATHSIG; it exits at once if the
  worker is already gone);
- torch's launcher across machines: `torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d
  --rdzv-endpoint HOST:29500 -m paradnn.runner.rank fc layers=1 nodes=32 batch=8 --db r.db`;
  ranks meet through torchrun's environment (env://), rank 0 stores the row in `--db`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import os
import platform
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paradnn.axes import BY_FIELD

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.runner.launch import Launch

PARENT_ENV = "PARADNN_RANK_PARENT"  # = runner.distributed.PARENT_ENV (read before torch loads)

FAULT_ENV = "PARADNN_FAULT_RANK"  # tests: "<rank>=<SIGNAL|hang|oom>" after the step's timing
COLLECTIVE_TIMEOUT_ENV = "PARADNN_COLLECTIVE_TIMEOUT_S"
COLLECTIVE_TIMEOUT_S = 300.0  # a collective waiting longer: a rank is hung or gone
# The study axes a torchrun launch takes (`--precision` ...): the rest keep their defaults.
TORCHRUN_AXES = ("precision", "optimizer", "strategy", "scaling")


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # pragma: no cover - not glibc Linux
        pass
    parent = os.environ.get(PARENT_ENV)
    if parent and os.getppid() != int(parent):  # the worker died before prctl took effect
        os._exit(1)


def collective_timeout_s() -> float:
    raw = os.environ.get(COLLECTIVE_TIMEOUT_ENV)
    return float(raw) if raw else COLLECTIVE_TIMEOUT_S


def _fault(rank: int) -> None:
    """Test hook: PARADNN_FAULT_RANK="1=SIGKILL" kills rank 1 (or hangs it, or raises an OOM)
    between the step's timing and the no_sync timing, with every other rank mid-run."""
    spec = os.environ.get(FAULT_ENV, "")
    who, _, what = spec.partition("=")
    if not spec or who.strip() != str(rank):
        return
    if what == "hang":
        time.sleep(10**6)
    if what == "oom":
        raise MemoryError(f"rank {rank}: injected out of memory ({FAULT_ENV})")
    os.kill(os.getpid(), getattr(signal, what, signal.SIGKILL))


def measure_rank(launch: Launch, rank: int, device: Any) -> dict[str, Any]:
    """Build the model on this rank, wrap it (DDP or FSDP2), time the step in lock step with
    the other ranks (the one timer, agreeing through `Agree`), then the step under no_sync,
    then isolated all-reduces; rank 0's result carries everything (the others return their
    own medians only)."""
    import torch
    import torch.distributed as dist

    from paradnn import families
    from paradnn.measure import flops
    from paradnn.measure import precision as prec
    from paradnn.measure.collectives import SMALL_BYTES, Agree, RankClock, allreduce_time
    from paradnn.measure.quality import LoadProbe
    from paradnn.measure.step import TrainStep
    from paradnn.measure.timer import measure

    run, options, world = launch.run, launch.run.options, launch.world
    fam = families.get(run.family)
    values = dict(run.config)
    if "batch" in values:
        values["batch"] = launch.rank_batch
    cfg = fam.config(values)
    policy = options.timing
    precision, strategy = options.precision, options.strategy
    torch.manual_seed(options.seed)  # the same initial weights on every rank
    torch.set_flush_denormal(True)
    with prec.tf32_flags(precision):
        with torch.device(device):
            built = fam.build(cfg, device, precision)
        params = [p for p in built.module.parameters() if p.requires_grad]
        grad_bytes = sum(p.numel() * p.element_size() for p in params)
        dtype = params[0].dtype if params else torch.float32
        module, nosync = wrap(built.module, strategy, device)
        step = TrainStep(
            dataclasses.replace(built, module=module), options.optimizer, precision, device
        )
        del built
        agree = Agree(device)
        cpus = launch.plan.cpus
        probe = LoadProbe(cpus=cpus[rank]) if cpus else LoadProbe()
        clock = RankClock(agree)
        main = measure(step, clock, policy, window=probe, agree=agree)
        _fault(rank)
        cap = min(len(main.samples), max(policy.min_samples, 10))
        with nosync():
            k = main.steps_per_sample
            comp = measure(step, clock, policy, agree=agree, k=k, samples_cap=cap)
        sizes = sorted({SMALL_BYTES, grad_bytes, 4 * grad_bytes})
        ladder = [allreduce_time(b, dtype, agree, policy) for b in sizes if b > 0]
        try:
            count = flops.count_step(step, device)
            counted: dict[str, Any] = {"total": count.total, "device": count.device}
        except Exception as e:  # a counter that cannot see through the wrapper: null, said why
            counted = {"total": None, "reason": f"{type(e).__name__}: {e}"[:200]}
        loss = step.final_loss()
    loads: list[Any] = [None] * world
    dist.all_gather_object(loads, probe.result)
    peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    peaks: list[Any] = [None] * world
    dist.all_gather_object(peaks, peak)
    medians = [sorted(s)[len(s) // 2] for s in main.per_rank]
    if rank != 0:
        return {"rank": rank, "ok": True}
    return {
        "rank": 0,
        "ok": True,
        "world": world,
        "step": main.as_dict(),
        "compute": comp.as_dict(),
        "per_rank_step_s": medians,
        "per_rank_compute_s": [sorted(s)[len(s) // 2] for s in comp.per_rank],
        "grad_bytes": grad_bytes,
        "grad_dtype": str(dtype).replace("torch.", ""),
        "allreduce": ladder,
        "flops_rank": counted,
        "final_loss": loss,
        "loads": loads,
        "peak_mem_bytes": max((p for p in peaks if p is not None), default=None),
        "threads": torch.get_num_threads(),
        "cpus": launch.plan.cpus,
        "strategy": strategy,
    }


def wrap(module: Any, strategy: str, device: Any) -> tuple[Any, Any]:
    """(the module to train, a context manager that turns gradient sync off): DDP and its
    `no_sync`, or FSDP2's `fully_shard` and `set_requires_gradient_sync(False)`."""
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        sharded = fully_shard(module)

        @contextlib.contextmanager
        def no_grad_sync():
            sharded.set_requires_gradient_sync(False)
            try:
                yield
            finally:
                sharded.set_requires_gradient_sync(True)

        return sharded, no_grad_sync
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    ddp = DistributedDataParallel(module, device_ids=ids)
    return ddp, ddp.no_sync


def init(backend: str, init_method: str, rank: int, world: int) -> None:
    import datetime as dt

    import torch.distributed as dist

    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=world,
        timeout=dt.timedelta(seconds=collective_timeout_s()),
    )


def error_of(exc: BaseException, rank: int) -> dict[str, Any]:
    from paradnn.measure.faults import classify, one_line
    from paradnn.records import Status

    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    status = classify(exc)
    text = one_line(exc)
    low = text.lower()
    if status == Status.CRASHED and ("timed out" in low or "timeout" in low):
        status = Status.TIMEOUT  # a collective past its timeout: some rank is hung or gone
    return {"rank": rank, "ok": False, "status": status, "error": text, "where": where}


def _write(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**payload, "at": time.time()}))
    tmp.replace(path)  # whole or absent: the watchdog never reads half a result


def spawned(path: str, rank: int) -> int:
    """A rank the worker started: pin, join the group, measure, write the result file."""
    from paradnn.runner.launch import Launch

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to handle
    launch = Launch.from_json(Path(path).read_text())
    out = Path(path).parent / f"rank{rank}.json"
    plan = launch.plan
    if plan.cpus:
        os.sched_setaffinity(0, plan.cpus[rank])
    threads = int(plan.threads)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(threads)
        device = torch.device(plan.device_type, rank) if plan.device_type == "cuda" else None
        if device is not None:
            torch.cuda.set_device(device)
        else:
            device = torch.device("cpu")
        init(plan.backend, launch.init_method, rank, launch.world)
        try:
            result = measure_rank(launch, rank, device)
        finally:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
    except BaseException as e:  # every failure becomes the rank's error
        _write(out, error_of(e, rank))
        return 1
    _write(out, result)
    return 0


def launched(argv: list[str]) -> int:
    """A rank torchrun started (env://): every rank measures; rank 0 builds the record and
    stores it in --db (and prints it as JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m paradnn.runner.rank")
    parser.add_argument("family")
    parser.add_argument("assignments", nargs="*")
    parser.add_argument("--db", default="paradnn.db")
    for field in TORCHRUN_AXES:  # each as paradnn/axes.py declares it: flag, default, words
        axis = BY_FIELD[field]
        parser.add_argument(axis.flag, default=axis.default, choices=axis.allowed())
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--min-time", type=float, default=None)
    parser.add_argument("--max-time", type=float, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return torchrun_main(args)


def torchrun_main(args: Any) -> int:
    """`torchrun … -m paradnn.runner.rank FAMILY key=value …`: every rank measures (env://
    rendezvous, device by LOCAL_RANK); rank 0 stores the record in --db."""
    import torch
    import torch.distributed as dist

    from paradnn.config import RunSpec, TimingPolicy, with_fields
    from paradnn.measure.environment import prepare
    from paradnn.records import Status
    from paradnn.runner.core import finish
    from paradnn.runner.distributed import launch_of, merge
    from paradnn.runner.launch import RankPlan
    from paradnn.runner.start import dist_backend, start_record
    from paradnn.store import open_store
    from paradnn.validate import parse_assignments

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    gpu = torch.cuda.is_available()
    device_spec = f"cuda:{local}" if gpu else "cpu"
    policy = TimingPolicy()
    if args.min_time is not None or args.max_time is not None:
        lo = args.min_time if args.min_time is not None else policy.min_time_s
        hi = args.max_time if args.max_time is not None else max(policy.max_time_s, lo)
        policy = dataclasses.replace(policy, min_time_s=lo, max_time_s=hi)
    given = {k: getattr(args, k) for k in (*TORCHRUN_AXES, "threads")}
    fields = {**given, "device": device_spec, "procs": world, "timing": policy}
    options = with_fields(None, "torchrun option", fields)
    values = parse_assignments(args.assignments, what=f"{args.family} config")
    # threads: --threads, or every core this rank may use
    device, env = prepare(options.device, options.threads)
    if gpu:
        torch.cuda.set_device(device)
    rec = start_record(RunSpec(args.family, values, options), env)
    if rec.status == Status.INVALID:
        print(rec.error, file=sys.stderr)
        return 2
    threads = torch.get_num_threads()
    plan = RankPlan(dist_backend(device.type), device.type, threads, None)
    launch = launch_of(rec, options, plan)  # env://: torchrun's rendezvous
    init(plan.backend, launch.init_method, rank, world)
    try:
        res = measure_rank(launch, rank, device)
    except BaseException as e:
        res = error_of(e, rank)
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    if rank != 0:
        return 0 if res.get("ok") else 1
    if not res.get("ok"):
        res = {**res, "error": f"rank {rank}: {res['error']}"}
    rec = finish(merge(rec, res, options, plan))
    rec = rec.with_part(
        dataclasses.replace(
            rec.parallel_part,
            parallel={
                **(rec.parallel or {}),
                "launcher": "torchrun",
                "rank0_host": platform.node(),
            },
        )
    )
    with open_store(args.db) as store:
        rec = store.insert_record(rec)
    if args.json:
        print(json.dumps({k: v for k, v in rec.as_dict().items() if k != "env"}, default=str))
    return 0 if rec.status == Status.OK else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--launch"]:
        return spawned(argv[1], int(argv[3]))
    return launched(argv)


def leave(code: int) -> None:
    """End the rank without interpreter finalization. Its result is already written (or
    stored, rank 0 under torchrun), and gloo's C++ threads can abort the teardown ("terminate
    called without an active exception", SIGABRT: 1 exit in 6 on a 2-core machine), which
    the launcher reads as a failed rank."""
    import logging

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover - a process of its own
    leave(main())
