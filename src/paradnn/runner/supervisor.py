"""The sweep supervisor: runs configurations in worker processes and survives what they do.

The supervisor never imports torch or touches a device. It spawns workers, sends each one unit
of work at a time (runner/units.py: a training run, a calibrate or ops kernel), and writes
every outcome to the store in its own transaction:
- a result from the worker is stored as it is (`ok`, `oom`, `nan`, `unsupported`, …);
- a worker past its deadline is killed: `timeout`; one that dies: `crashed` (with the signal or
  exit code), or `oom` when the kernel's OOM killer sent SIGKILL;
- a config the memory model says cannot fit is stored as `predicted_oom` without running;
- workers are replaced after an OOM, a crash or a timeout, and every `recycle_every` runs.
Resuming is by run key: a key whose newest row is finished is skipped (failures are re-run with
`retry_failed`), so a `kill -9` at any moment loses at most the runs in flight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import os
import platform
import signal
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from paradnn import host
from paradnn.config import RunOptions, RunSpec, SweepSettings
from paradnn.errors import ConfigError, ParadnnError
from paradnn.presets import resolve_native
from paradnn.records import Prediction, RunRecord, Status
from paradnn.runner import busy, resume, sharing
from paradnn.runner.sharing import POLL_S, Sharing
from paradnn.runner.signals import kill_tree
from paradnn.runner.start import start_record
from paradnn.runner.tasks import KernelUnit
from paradnn.runner.units import RunUnit, Stored, Unit
from paradnn.runner.worker import WorkerSettings
from paradnn.runner.worker import main as worker_main
from paradnn.store import Store

FAILURES = (Status.OOM, Status.TIMEOUT, Status.CRASHED, Status.PREDICTED_OOM)
RECYCLE_AFTER = (Status.OOM, Status.CRASHED, Status.TIMEOUT)
FINAL = (Status.OK, Status.UNSUPPORTED)  # a kernel unit with this status is not measured again
HELLO_TIMEOUT_S = 600.0
LOAD_WINDOW_S = 0.3  # the load sample before a run whose threads paradnn chooses (host.py)
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "1073741824", "MALLOC_TRIM_THRESHOLD_": "4294967296"}


@dataclass
class Event:
    """What the supervisor tells its caller: `start`, `run`, `progress`, `result` (one per stored
    row), `remeasure` (a noisy run queued again: `notes` says which, why and when), `note`
    (another sweep shares the database: `notes` says what it did), `end`."""

    kind: str
    done: int
    total: int
    counts: dict[str, int]
    record: RunRecord | None = None
    running: list[Unit] = field(default_factory=list)
    skipped: int = 0
    eta_s: float | None = None
    notes: list[str] = field(default_factory=list)  # `start`: what the plan resolved to
    progress: dict[str, Any] | None = None  # `progress`: the running unit's phase and samples
    row: dict[str, Any] | None = None  # `result` of a kernel unit (a ceiling or an op): its row
    nodes: dict[str, int] = field(default_factory=dict)  # results per host (cluster executors)


@dataclass
class _Worker:
    process: Any
    conn: Connection
    hello: dict[str, Any]
    settings: WorkerSettings | None = None  # what it was started with (a session parks by it)
    unit: Unit | None = None
    started: float = 0.0
    runs: int = 0
    progress: dict[str, Any] | None = None  # the last progress message of the running unit


# A worker starts by re-importing the caller's main module (multiprocessing's spawn). A script
# that calls paradnn at import time, outside `if __name__ == "__main__":`, calls it again in the
# worker, whose own start then fails: that worker exits with this code and the parent says why.
MAIN_GUARD_EXIT = 3
MAIN_GUARD = (
    "a worker process could not start because the script that calls paradnn runs it at import "
    "time: worker processes re-import the main module, so put the calls under "
    '`if __name__ == "__main__":` (docs/api.md)'
)


@contextlib.contextmanager
def _cli_main_left_out() -> Iterator[None]:
    """While a worker is spawned from paradnn's own console script, hide that script from
    spawn, which would otherwise run it again in the worker as its main module: the whole
    command line (typer, rich, every command's module: 0.2-0.5 s) imported in each worker for
    nothing, since a worker runs only paradnn's functions. Any other main module (a user's
    script, `python -m paradnn`, whose `__main__` spawn skips itself) is left as it is."""
    main = sys.modules.get("__main__")
    entry = getattr(main, "main", None)
    ours = getattr(entry, "__module__", None) == "paradnn.cli"
    if main is None or not ours or getattr(main, "__spec__", None) is not None:
        yield
        return
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__: nothing to re-run
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class TimeBoxExpired(Exception):
    """A call inside `Session.time_box` ran past its seconds: the unit in flight was stopped
    (not stored, as after Ctrl-C), and every unit finished before it is stored."""


class Session:
    """Workers shared by the calls made while it is open (`shared_workers`): a sweep, bench,
    calibrate or ops call takes the idle worker of its device and thread count instead of
    starting one, and leaves it idle at its end, so one torch import and one CUDA context serve
    them all. A worker's thread choice is the first call's (its record says so, as in a sweep);
    a worker that must go (recycled, crashed, killed, a compiled run's) goes as it always does.
    `time_box(seconds)` bounds the calls inside it."""

    def __init__(self) -> None:
        self.parked: dict[tuple[str, int | None], _Worker] = {}
        self.deadline: float | None = None
        self.starts: list[float] = []  # seconds each worker it started took to say hello

    @contextlib.contextmanager
    def time_box(self, seconds: float) -> Iterator[None]:
        """Calls inside stop when `seconds` have passed: no unit is sent after the deadline,
        the one in flight is stopped, and TimeBoxExpired is raised."""
        saved, self.deadline = self.deadline, time.monotonic() + seconds
        try:
            yield
        finally:
            self.deadline = saved

    def take(self, settings: WorkerSettings) -> _Worker | None:
        w = self.parked.pop(_park_key(settings), None)
        if w is not None and not w.process.is_alive():
            _stop(w, kill=True)
            return None
        return w

    def park(self, w: _Worker) -> bool:
        key = _park_key(w.settings)
        if w.settings.cpus or key in self.parked or not w.process.is_alive() or w.unit:
            return False
        self.parked[key] = w
        return True

    def close(self) -> None:
        for w in self.parked.values():
            _stop(w, kill=False)
        self.parked.clear()


def _park_key(settings: WorkerSettings) -> tuple[str, int | None]:
    return (settings.device, settings.threads)


_SESSION: list[Session] = []  # the open session, if any (one at a time)


@contextlib.contextmanager
def shared_workers() -> Iterator[Session]:
    """A `Session` for the calls made inside: their workers are shared, and stopped at the
    end. Sessions do not nest."""
    if _SESSION:
        raise ParadnnError("shared_workers: a session is open already (sessions do not nest)")
    session = Session()
    _SESSION.append(session)
    try:
        yield session
    finally:
        _SESSION.clear()
        session.close()


def _session() -> Session | None:
    return _SESSION[0] if _SESSION else None


def _check_deadline() -> None:
    session = _session()
    deadline = session.deadline if session is not None else None
    if deadline is not None and time.monotonic() >= deadline:
        raise TimeBoxExpired("the time box of this call ran out")


def _until_deadline() -> float:
    session = _session()
    if session is None or session.deadline is None:
        return float("inf")
    return session.deadline - time.monotonic()


class _Pool:
    def __init__(self, settings: WorkerSettings):
        self.ctx = mp.get_context("spawn")
        self.settings = settings

    def start(self) -> _Worker:
        session = _session()
        if session is not None and not self.settings.cpus:
            parked = session.take(self.settings)
            if parked is not None:
                return parked
        t0 = time.monotonic()
        w = self._spawn()
        if session is not None:
            session.starts.append(time.monotonic() - t0)
        return w

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=worker_main, args=(child, self.settings), daemon=True)
        # glibc returns freed model memory to the OS and faults it back in, which makes the
        # first configs in a process up to ~50% slower on CPU; large thresholds stop that.
        # glibc reads them at process start, so they go into the worker's environment.
        for key, value in MALLOC_ENV.items():
            os.environ.setdefault(key, value)
        try:
            with _cli_main_left_out():
                proc.start()
        except RuntimeError as e:  # we are a worker, still importing an unguarded main module
            if "bootstrapping phase" not in str(e):
                raise
            raise SystemExit(MAIN_GUARD_EXIT) from None
        child.close()
        try:
            return self._hello(proc, parent)
        except BaseException:  # Ctrl-C, SIGTERM, a time box: no worker outlives its start
            if proc.is_alive():
                kill_tree(proc.pid)
                proc.kill()
            proc.join()
            raise

    def _hello(self, proc: Any, parent: Connection) -> _Worker:
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while time.monotonic() < deadline:
            if _until_deadline() <= 0:  # a session's time box ran out while it started
                proc.kill()
                proc.join()
                raise TimeBoxExpired("the time box ran out while a worker started")
            ready = wait([parent, proc.sentinel], timeout=max(0.0, min(1.0, _until_deadline())))
            if parent in ready:
                try:
                    hello = parent.recv()
                except EOFError:
                    break
                if hello["type"] == "error":
                    proc.join(timeout=10)
                    raise ParadnnError(hello["message"])
                return _Worker(proc, parent, hello, settings=self.settings)
            if proc.sentinel in ready:
                break
        proc.kill()
        proc.join()
        if proc.exitcode == MAIN_GUARD_EXIT:
            raise ParadnnError(MAIN_GUARD)
        raise ParadnnError(f"a worker process failed to start (exit code {proc.exitcode})")


def _stop(w: _Worker, *, kill: bool) -> None:
    if kill or not w.process.is_alive():
        if w.process.pid is not None:
            kill_tree(w.process.pid)  # a data loader's workers, a compiler's: none outlive it
        w.process.kill()
    else:
        try:
            w.conn.send(None)
        except OSError:
            w.process.kill()
    w.process.join(timeout=10)
    if w.process.is_alive():
        w.process.kill()
        w.process.join()
    w.conn.close()


@contextlib.contextmanager
def _held(slots: list[_Worker | None]) -> Iterator[None]:
    """Workers for the length of a sweep: stopped when it ends (left idle for the next call in
    a `Session`), killed on Ctrl-C (which goes on up, so the caller can say how to resume); at
    the end of a time box the busy ones are killed and the idle ones kept. Any other error
    leaves them to die with us."""
    try:
        yield
    except KeyboardInterrupt:
        _stop_all(slots, kill=True)
        raise
    except TimeBoxExpired:
        for w in slots:
            if w is not None and w.unit is not None:
                _stop(w, kill=True)
            elif w is not None:
                _release(w)
        raise
    for w in slots:
        if w is not None:
            _release(w)


def _release(w: _Worker) -> None:
    """A worker the sweep is done with: parked in the open session, else stopped."""
    session = _session()
    if session is None or w.settings is None or not session.park(w):
        _stop(w, kill=False)


def _stop_all(slots: list[_Worker | None], *, kill: bool) -> None:
    for w in slots:
        if w is not None:
            _stop(w, kill=kill)


def _death(exitcode: int | None) -> tuple[str, str]:
    if exitcode == -signal.SIGKILL:
        return Status.OOM, (
            "worker killed by SIGKILL (exit -9): most likely the host's out-of-memory killer"
        )
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return Status.CRASHED, f"worker died with signal {name} ({exitcode})"
    return Status.CRASHED, f"worker exited with code {exitcode} before returning a result"


def _label(rec: RunRecord) -> str:
    """A run as notes name it: family, precision, config."""
    return sharing.words(rec.family, rec.precision, rec.config)


@dataclass(frozen=True)
class Memory:
    """The memory free for one run, from a worker's hello (`memory_for`)."""

    free_bytes: int | None
    device_type: str
    where: str  # "host memory" or "GPU memory", for the words of memory.check


def memory_for(hello: dict[str, Any], sharing: int = 1) -> Memory:
    """What one of `sharing` runs that share the worker's memory may take: the free memory the
    hello reports (its total when a worker reports none), split evenly when the memory
    is the host's (parallel CPU workers, cluster tasks on one node)."""
    free = hello.get("free_bytes")
    if free is None:  # an older worker, or a device that cannot say: judged on its total
        free = hello["capacity_bytes"]
    host_memory = hello["capacity_kind"] == "host"
    if free is not None and host_memory:
        free //= max(1, sharing)
    return Memory(free, hello["env"]["device_type"], "host memory" if host_memory else "GPU memory")


def _cpu_sets(workers: int) -> list[tuple[int, ...] | None]:
    """Disjoint CPU sets, one per worker, so parallel CPU workers don't share cores."""
    if workers == 1:
        return [None]
    cpus = host.usable_cpus()
    if len(cpus) < workers:
        raise ConfigError("workers", workers, f"at most {len(cpus)} on this machine's CPUs")
    per = len(cpus) // workers
    return [tuple(cpus[i * per : (i + 1) * per]) for i in range(workers)]


class Supervisor:
    def __init__(
        self,
        store: Store,
        options: RunOptions,
        settings: SweepSettings,
        *,
        sweep: str | None = None,
        on_event: Callable[[Event], None] | None = None,
        load: host.LoadSample | None = None,
        load_sampler: busy.Sampler | None = None,
    ):
        if settings.workers > 1 and not options.device.startswith("cpu"):
            raise ConfigError(
                "workers", settings.workers, "more than 1 needs --device cpu (one run per GPU)"
            )
        if settings.workers > 1 and options.energy:
            raise ConfigError(
                "workers",
                settings.workers,
                "--energy needs 1 (RAPL and NVML measure whole devices: parallel runs would "
                "share their energy)",
            )
        self.store, self.options, self.settings = store, options, settings
        self.sweep = sweep
        self.on_event = on_event or (lambda e: None)
        self.counts: Counter[str] = Counter()
        self.done = 0
        self.total = 0
        self.cost_done = 0.0
        self.cost_left = 0.0
        self.measured_s = 0.0
        self._last: Stored | None = None  # the newest stored outcome
        self.idle: dict[str, Any] | None = None  # the idle power baseline (--energy)
        self.notes: list[str] = []
        self.heartbeat_s = 2.0  # a `progress` event at least this often while a unit runs
        self.load = load  # the machine's load before the sweep (sampled here when None)
        self.threads_choice: host.ThreadsChoice | None = None
        self.sharing: Sharing | None = None  # a sweep's claims (runner/sharing.py)
        self.measured_with: dict[str, Any] | None = None  # runner/resume.py
        # the busy-machine policy (runner/busy.py): the load now, noisy runs deferred to the end
        self.sample_load = load_sampler or busy.sample_now  # a test may replace sample_now
        self.deferred: list[tuple[Unit, float | None]] = []  # with its attempt's load
        self.ending = False  # the deferred runs were looked at: a noisy one is kept from now on
        self._cpu_sets: list[tuple[int, ...] | None] = [None]

    # -- planning ----------------------------------------------------------------------------
    def plan(
        self, specs: Sequence[RunSpec], env: dict[str, Any], capacity: Memory
    ) -> tuple[list[RunUnit], int]:
        """The runs still to do, each with its record prepared (identity, run key, analytic
        counts, the memory prediction: what a worker never writes), and how many specs were
        skipped as already finished. `capacity`: the memory free for one run (`memory_for`)."""
        latest = self.store.latest_status()
        stored_with = self.store.measured_with() if latest else {}
        now_with = self.measured_with = resume.measured_with(self.options)  # in each record
        seen: set[str] = set()
        records: list[tuple[RunRecord, RunSpec]] = []
        kept: list[resume.Kept] = []
        skipped = 0
        for spec in specs:
            rec = start_record(spec, env, sweep=self.sweep)
            status = latest.get(rec.run_key)
            was = stored_with.get(rec.run_key, (None, None))
            changed = self.settings.remeasure_changed and resume.differences(was[1], now_with)
            retry = self.settings.force or (self.settings.retry_failed and status in FAILURES)
            if rec.run_key in seen or (status is not None and not (retry or changed)):
                skipped += 1
                if rec.run_key not in seen:
                    kept.append(resume.Kept(_label(rec), *was))
                    seen.add(rec.run_key)
                continue
            seen.add(rec.run_key)
            records.append((self._predict(rec, spec, capacity), spec))
        self.notes += resume.kept_notes(kept, now_with, self.sweep)
        flops = sorted(rec.flops_analytic or 0 for rec, _ in records)
        typical = max(flops[len(flops) // 2], 1) if flops else 1
        # relative cost: a fixed part (warm-up, minimum time) plus the work
        units = [
            RunUnit(id=i, cost=1.0 + (rec.flops_analytic or 0) / typical, record=rec, spec=spec)
            for i, (rec, spec) in enumerate(records)
        ]
        return units, skipped

    def _predict(self, rec: RunRecord, spec: RunSpec, capacity: Memory) -> RunRecord:
        """The record with its memory prediction; `predicted_oom` when the run cannot fit
        in the memory free for it (memory.check_run, as `bench` refuses) and must not run."""
        if rec.status != Status.OK:
            return rec
        from paradnn import memory

        verdict = memory.check_run(spec, capacity.device_type, capacity.free_bytes, capacity.where)
        est = verdict.estimate
        if est is None:  # no memory model (a model of your own): unknown, never guessed
            from paradnn.families.user import NO_PREDICTION

            why = dict.fromkeys(("predicted_mem_bytes", "predicted_mem_lower_bytes"), NO_PREDICTION)
            return rec.with_part(Prediction(nulls=why))
        rec = rec.with_part(Prediction(int(est.total), int(est.lower_bound)))
        if not self.settings.predict or verdict.fits is not False:
            return rec
        return rec.replace(
            status=Status.PREDICTED_OOM,
            error=f"{verdict.words()}; --force runs it anyway",
        )

    # -- running -----------------------------------------------------------------------------
    def _eta(self, running: int) -> float | None:
        if self.cost_done <= 0:
            return None
        return self.measured_s / self.cost_done * self.cost_left / max(1, running)

    def _emit(
        self,
        kind: str,
        slots: list[_Worker | None],
        skipped: int = 0,
        progress: dict[str, Any] | None = None,
    ) -> None:
        running = [w.unit for w in slots if w is not None and w.unit is not None]
        self.on_event(
            Event(
                kind,
                self.done,
                self.total,
                dict(self.counts),
                self._last.record if kind == "result" and self._last else None,
                running,
                skipped,
                self._eta(len(slots)),
                notes=list(self.notes) if kind in ("start", "remeasure", "note") else [],
                progress=progress,
                row=self._last.row if kind == "result" and self._last else None,
            )
        )

    def _choose_threads(self) -> host.ThreadsChoice:
        """The threads of a one-worker sweep, from the load once before it (host.choose_threads),
        sampled here unless the caller measured it; one requested thread never exceeds the
        free cores, so it needs no sample."""
        if self.load is None and (self.options.threads or 2) > 1:
            self.load = host.sample_load(LOAD_WINDOW_S)
        choice = host.choose_threads(self.options.threads, self.load)
        kept = self._resumed_threads()
        if kept is not None and kept != choice.threads and kept <= choice.usable:
            why = (
                f"as when this sweep began in this database (now: {choice.threads}, "
                f"{choice.reason}); --threads N measures anew"
            )
            choice = dataclasses.replace(choice, threads=kept, reason=why)
        return choice

    def _resumed_threads(self) -> int | None:
        """The thread count paradnn chose for this sweep's earlier runs on this host, when the
        user gives none: a resume keeps it (the thread count is part of every run key)."""
        if self.options.threads is not None or self.store is None or not self.sweep:
            return None
        return self.store.sweep_threads(self.sweep, platform.node())

    def _threads_notes(self, choice: host.ThreadsChoice) -> list[str]:
        if choice.warning:
            return [f"warning: {choice.warning}"]
        if choice.requested is None and choice.reason.startswith("as when this sweep began"):
            return [f"threads: {choice.threads}, {choice.reason}"]
        if choice.requested is None and choice.threads < choice.usable:
            return [
                f"threads: {choice.threads} ({choice.reason}), so "
                "torch's threads do not fight other work for the cores; --threads N chooses"
            ]
        return []

    def run(self, specs: Sequence[RunSpec]) -> list[RunRecord]:
        threads = self.options.threads
        cpu_sets = self._cpu_sets = _cpu_sets(self.settings.workers)
        choice = None
        if self.settings.workers > 1 and threads is None:
            threads = len(cpu_sets[0] or ())
        elif self.settings.workers == 1:
            self.threads_choice = self._choose_threads()
            choice = self.threads_choice.as_dict()
        pools = [_Pool(WorkerSettings(self.options.device, threads, c, choice)) for c in cpu_sets]
        slots: list[_Worker | None] = [None] * self.settings.workers
        results: list[RunRecord] = []
        with _held(slots), self._shared():
            slots[0] = pools[0].start()  # its hello tells the environment, hence the run keys
            hello = slots[0].hello
            specs, self.notes = resolve_native(list(specs), hello["env"]["native_precisions"])
            if self.threads_choice is not None:
                self.notes += self._threads_notes(self.threads_choice)
            # parallel CPU workers share the host's memory
            capacity = memory_for(hello, self.settings.workers)
            if self.sweep is not None:  # before planning: what it finds stored is known
                self.sharing = Sharing.of(self.store, self.sweep)
            units, skipped = self.plan(specs, hello["env"], capacity)
            self.total, self.cost_left = len(units), sum(u.cost for u in units)
            if self.options.energy and units and self.options.energy_idle_s > 0:
                self.idle = self._idle_baseline(hello["env"]["device"])
            self._emit("start", slots, skipped)
            self._drive(list(units), slots, pools, results)
            self._say(self.sharing.summary() if self.sharing else [])
        self._emit("end", [])
        return results

    # -- sharing the database with other sweeps (runner/sharing.py) ---------------------------
    @contextlib.contextmanager
    def _shared(self) -> Iterator[None]:
        """Claims dropped when the sweep ends, however it ends (a killed one's lapse)."""
        try:
            yield
        finally:
            if self.sharing is not None:
                self.sharing.close()

    def _take(self, unit: Unit) -> bool:
        """Whether this sweep measures `unit` now: it claimed it, or no other sweep shares the
        database. A unit another sweep stored meanwhile leaves the plan."""
        if self.sharing is None:
            return True
        before = self.sharing.by_others
        mine = self.sharing.take(unit)
        self._dropped(self.sharing.by_others - before, unit.cost)
        self._say(self.sharing.notes)
        return mine

    def _waiting(self, queue: list[Unit]) -> bool:
        """Whether units wait for another sweep; those it can take now join `queue`."""
        if self.sharing is None or not self.sharing.waiting:
            return False
        waited = list(self.sharing.waiting)
        due = self.sharing.due()
        queue += due
        left = {id(u) for u in (*due, *self.sharing.waiting)}
        for unit in waited:  # stored by another sweep meanwhile: off the plan, at its own cost
            if id(unit) not in left:
                self._dropped(1, unit.cost)
        self._say(self.sharing.notes)
        return bool(self.sharing.waiting)

    def _dropped(self, n: int, cost: float) -> None:
        self.total -= n
        self.cost_left -= n * cost

    def _say(self, notes: list[str]) -> None:
        if notes:
            saved, self.notes = self.notes, list(notes)
            self._emit("note", [])
            self.notes = saved
            notes.clear()

    def _drive(
        self, queue: list[Unit], slots: list[_Worker | None], pools: list[_Pool], results: list[Any]
    ) -> None:
        """Hand out units and collect outcomes until every unit is stored (or a session's time
        box runs out: TimeBoxExpired)."""
        while (
            self._waiting(queue)
            or queue
            or any(w is not None and w.unit for w in slots)
            or self._deferred_due(queue)
        ):  # fmt: skip
            _check_deadline()
            self._dispatch(queue, slots, pools, results)
            if not any(w is not None and w.unit for w in slots) and not queue:
                # only configurations another sweep is measuring: see what becomes of them
                n = len(self.sharing.waiting) if self.sharing else 0
                what = f"waiting for {n} configuration{'s' if n != 1 else ''} another sweep"
                self._emit("progress", slots, progress={"phase": f"{what} is measuring"})
                time.sleep(max(0.0, min(POLL_S, _until_deadline())))
            self._collect(slots, results, queue)

    def _idle_baseline(self, device: str) -> dict[str, Any]:
        """Idle power of the sweep's device, measured here (torch-free) while the first worker
        waits with its device set up and nothing runs; once per sweep, before any unit."""
        from paradnn.measure.energy import measure_idle, open_meter

        try:
            meter = open_meter(device, period_s=self.options.energy_period_s)
        except Exception as e:  # the baseline is context: never the reason a sweep fails
            return {"power_w": None, "reason": "read_failed", "method": None, "detail": str(e)}
        try:
            if not meter.sources:  # nothing to measure: no point waiting
                meter.begin(threaded=False)
                meter.end()
                head = meter.result()["headline"]
                return {"power_w": None, "reason": head["reason"], "method": None}
            return measure_idle(meter, self.options.energy_idle_s)
        except Exception as e:
            return {"power_w": None, "reason": "read_failed", "method": None, "detail": str(e)}
        finally:
            meter.close()

    def _dispatch(
        self,
        queue: list[Unit],
        slots: list[_Worker | None],
        pools: list[_Pool],
        results: list[Any],
    ) -> None:
        for i in range(len(slots)):
            while slots[i] is None or slots[i].unit is None:
                unit = queue.pop(0) if queue else None
                if unit is None:
                    break
                if not self._take(unit):  # another sweep measures it (runner/sharing.py)
                    continue
                settled = unit.settled()
                if settled is not None:  # invalid, predicted_oom: never reaches a worker
                    self._finish(settled, unit, None, results, slots)
                    continue
                if slots[i] is not None and unit.fresh_worker and slots[i].runs:
                    _stop(slots[i], kill=False)  # a compiled run starts in a fresh worker
                    slots[i] = None
                if slots[i] is None:
                    slots[i] = pools[i].start()
                w = slots[i]
                w.started = time.monotonic()
                w.conn.send(unit)
                w.unit = unit.sent()
                self._emit("run", slots)

    def _finish(
        self,
        outcome: Any,
        unit: Unit,
        measured_s: float | None,
        results: list[Any],
        slots: list[_Worker | None],
        queue: list[Unit] | None = None,
        cpus: tuple[int, ...] | None = None,
    ) -> None:
        """Store one outcome (its own transaction) and account for it in counts and the ETA."""
        if isinstance(outcome, RunRecord) and self.measured_with is not None:
            # how it was measured beyond its run key: a resumed sweep compares (runner/resume.py)
            outcome = outcome.replace(
                env={**(outcome.env or {}), "measured_with": self.measured_with}
            )
        stored = unit.store(outcome, self.store, self.idle)
        if self.sharing is not None:
            self.sharing.stored(unit, stored.attempt)
        self.done += 1
        self.counts[stored.status] += 1
        self.cost_left -= unit.cost
        if measured_s is not None:  # units that never reached a worker say nothing about speed
            self.cost_done += unit.cost
            self.measured_s += measured_s
        results.append(stored.value)
        self._last = stored
        self._emit("result", slots)
        if queue is not None:
            self._remeasure(stored, unit, queue, cpus)

    def _remeasure(
        self, stored: Stored, unit: Unit, queue: list[Unit], cpus: tuple[int, ...] | None
    ) -> None:
        """A noisy ok run with re-measures left (runner/busy.py): measured again now when the
        load that made it noisy has dropped, else deferred to the end of the sweep (said once);
        at the end, kept as it is. Each decision says why (a `remeasure` event)."""
        reasons = unit.noisy(stored)
        if reasons is None or unit.remeasured >= self.settings.remeasure:
            return
        then = stored.record.others_cpu_frac if stored.record is not None else None
        decision = busy.decide(then, self.sample_load(cpus))
        again = dataclasses.replace(unit, remeasured=unit.remeasured + 1)
        label = sharing.label(unit)
        why = f"attempt {stored.attempt} was noisy: {'; '.join(reasons)}"
        if decision.now:
            queue.append(again)
            self.total += 1
            self.cost_left += unit.cost
            self._say_remeasure(
                f"re-measuring {label} ({why}); the load has dropped ({decision.words}); "
                f"re-measure {again.remeasured} of {self.settings.remeasure}"
            )
        elif self.ending:  # the deferred runs were looked at once: never loop
            self._say_remeasure(
                f"kept {label} as measured ({why}): the machine is still busy ({decision.words})"
            )
        else:
            self.deferred.append((again, then))
            if len(self.deferred) == 1:  # said once: the summary at the end counts them
                self._say_remeasure(
                    f"the machine is busy ({decision.words}): noisy runs wait for the end of "
                    "the sweep instead of being measured again under the load that made them "
                    f"noisy (first: {label}; {why})"
                )

    def _deferred_due(self, queue: list[Unit]) -> bool:
        """At the end of the sweep (nothing queued, nothing running): whether the deferred noisy
        runs go back in `queue`. The load is sampled once, and once more after
        `remeasure_backoff_s` when it is still high; the runs whose load has dropped are
        measured again, the others keep their noisy attempt (said so). Never loops: it runs
        once per sweep."""
        if not self.deferred or self.ending:
            return False
        self.ending = True
        deferred, self.deferred = self.deferred, []
        now = self.sample_load(None)
        if not all(busy.decide(then, now).now for _, then in deferred):
            wait_s = min(self.settings.remeasure_backoff_s, max(0.0, _until_deadline()))
            if wait_s > 0:
                self._say_remeasure(
                    f"{len(deferred)} noisy run{'s' if len(deferred) != 1 else ''} deferred; "
                    f"the machine is still busy ({now.words()}): looking again in {wait_s:g} s"
                )
                time.sleep(wait_s)
                now = self.sample_load(None)
        taken = [unit for unit, then in deferred if busy.decide(then, now).now]
        kept = len(deferred) - len(taken)
        if taken:
            queue += taken
            self.total += len(taken)
            self.cost_left += sum(u.cost for u in taken)
        words = (
            f"the load has dropped ({now.words()})"
            if taken
            else f"the machine is still busy ({now.words()})"
        )
        self._say_remeasure(
            f"end of the sweep, {words}: re-measuring {len(taken)} deferred noisy "
            f"run{'s' if len(taken) != 1 else ''}"
            + (f", keeping {kept} as measured (stored, flagged noisy)" if kept else "")
        )
        return bool(taken)

    def _say_remeasure(self, note: str) -> None:
        self.notes = [note]
        self._emit("remeasure", [])
        self.notes = []

    def run_kernels(
        self, plan: Callable[[dict[str, Any]], list[KernelUnit]], notes: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Run the ceilings or ops that `plan(environment)` returns, one unit each, in workers;
        units whose newest row of the same key is `ok` or `unsupported` are skipped unless
        `force` (a crash, a hang or an OOM is measured again)."""
        pool = _Pool(WorkerSettings(self.options.device, self.options.threads, None))
        slots: list[_Worker | None] = [None]
        results: list[dict[str, Any]] = []
        with _held(slots):
            slots[0] = pool.start()
            planned = plan(slots[0].hello["env"])
            self.notes = list(notes or [])  # what the plan left out, said at `start`
            done: dict[str, str] = {}
            for table in {u.table for u in planned}:
                done.update(self.store.task_status(table))
            # what is known stays known: `ok` and `unsupported`; a crash, hang or OOM is retried
            todo = [u for u in planned if self.settings.force or done.get(u.key) not in FINAL]
            units: list[Unit] = [dataclasses.replace(u, id=i) for i, u in enumerate(todo)]
            self.total, self.cost_left = len(units), float(len(units))
            self._emit("start", slots, len(planned) - len(todo))
            self._drive(units, slots, [pool], results)
        self._emit("end", [])
        return results

    def _collect(
        self, slots: list[_Worker | None], results: list[Any], queue: list[Unit] | None = None
    ) -> None:
        """Wait for a result, a death or a deadline; store each outcome (a noisy run measured
        again joins `queue`); retire spent workers."""
        busy = [w for w in slots if w is not None and w.unit is not None]
        if not busy:
            return
        timeout = self.settings.timeout_s
        first_deadline = min(w.started + timeout for w in busy)
        until = min(first_deadline - time.monotonic(), self.heartbeat_s, _until_deadline())
        ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], max(0.0, until))
        for i, w in enumerate(slots):
            if w is None or w.unit is None:
                continue
            unit, outcome, kill = w.unit, None, False
            if w.conn in ready:
                try:
                    msg = w.conn.recv()
                    if msg.get("type") == "progress":  # the unit goes on: tell the caller
                        w.progress = {**msg, "elapsed_s": time.monotonic() - w.started}
                        self._emit("progress", slots, progress=w.progress)
                        continue
                    outcome = msg["outcome"]
                    w.runs += 1
                except (EOFError, OSError):
                    pass  # it died mid-send: judged by its exit code below
            pid = w.process.pid
            if outcome is None and (w.process.sentinel in ready or w.conn in ready):
                w.process.join(timeout=5)
                status, error = _death(w.process.exitcode)
                outcome = unit.failed(status, error, pid=pid, index=w.runs)
            elif outcome is None and time.monotonic() >= w.started + timeout:
                error = f"no result within {timeout:g} s; the worker was killed"
                if w.progress and w.progress.get("phase"):  # e.g. a compile that never ended
                    error += f" (last phase: {w.progress['phase']})"
                outcome = unit.failed(Status.TIMEOUT, error, pid=pid, index=w.runs)
                kill = True
            if outcome is None:
                if not ready:  # a quiet stretch (one long step): a heartbeat for the caller
                    beat = {**(w.progress or {"phase": "starting"})}
                    beat["elapsed_s"] = time.monotonic() - w.started
                    self._emit("progress", slots, progress=beat)
                continue
            w.unit = None
            w.progress = None
            retire = kill or unit.status(outcome) in RECYCLE_AFTER or not w.process.is_alive()
            if retire or w.runs >= self.settings.recycle_every or unit.fresh_worker:
                _stop(w, kill=retire)
                slots[i] = None  # a fresh worker starts when there is work for it
            took = time.monotonic() - w.started
            self._finish(outcome, unit, took, results, slots, queue, self._cpu_sets[i])
