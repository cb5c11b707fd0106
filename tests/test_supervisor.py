"""The sweep supervisor with real worker processes: faults, resume, parallel workers, kill -9."""

import dataclasses
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paradnn.config import RunOptions, RunSpec, SweepSettings
from paradnn.errors import ParadnnError
from paradnn.runner.supervisor import Supervisor, _death

from conftest import TINY, TINY_POLICY

TESTS = Path(__file__).parent


@pytest.fixture(autouse=True)
def _fault_family_in_workers(monkeypatch):
    monkeypatch.setenv("PARADNN_FAMILIES", "fault=faults")


OPTS = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)


def _spec(family, config, precision="fp32", options=OPTS):
    """A run of this sweep: the supervisor's device, threads and timing, at `precision`."""
    return RunSpec(family, config, dataclasses.replace(options, precision=precision))


def _run(store, specs, **settings):
    events = []
    options = OPTS
    sup = Supervisor(store, options, SweepSettings(**settings), sweep="t", on_event=events.append)
    return sup.run(specs), events


def _fault(name):
    return _spec("fault", {"fault": name})


def test_every_fault_becomes_a_row_and_the_sweep_goes_on(store):
    specs = [
        _fault("none"),
        _fault("oom"),
        _fault("segfault"),
        _fault("hang"),
        _fault("nan"),
        _fault("crash"),
        _fault("sigkill"),
        _spec("fc", {"layers": 0}),
        _spec("fc", TINY["fc"], "tf32"),
        _spec("fc", TINY["fc"]),
    ]
    # The hang costs the whole timeout; 15 s, not less, because a healthy first run in a fresh
    # worker (lazy torch init, oneDNN JIT) took over 5 s on a 2-core machine under full load.
    records, events = _run(store, specs, timeout_s=15.0)
    got = {(r.config.get("fault"), r.precision): (r.status, r.error) for r in records}
    assert len(records) == len(specs) == store.count()
    status = {k: v[0] for k, v in got.items()}
    assert status[("none", "fp32")] == "ok"
    assert status[("oom", "fp32")] == "oom"
    assert status[("segfault", "fp32")] == "crashed"
    assert "SIGSEGV" in got[("segfault", "fp32")][1]
    assert status[("hang", "fp32")] == "timeout"
    assert status[("nan", "fp32")] == "nan"
    assert status[("crash", "fp32")] == "crashed"
    assert status[("sigkill", "fp32")] == "oom"
    assert "out-of-memory killer" in got[("sigkill", "fp32")][1]
    assert status[(None, "tf32")] == "unsupported"
    assert [r.status for r in records if r.family == "fc" and r.precision == "fp32"] == [
        "invalid",
        "ok",
    ]
    # the run after a crash got a fresh worker; the healthy fc run was measured for real
    fc_ok = next(r for r in records if r.family == "fc" and r.status == "ok")
    assert fc_ok.step_time_s > 0 and fc_ok.worker_pid is not None
    # a dead or killed worker's row names that worker: which process died is part of the fault
    dead = [r for r in records if r.config.get("fault") in ("segfault", "hang", "sigkill")]
    assert all(isinstance(r.worker_pid, int) and r.worker_pid > 0 for r in dead), dead
    assert len({r.worker_pid for r in dead}) == 3  # each fault killed its own worker
    assert events[0].kind == "start" and events[-1].kind == "end"
    assert events[-1].counts["ok"] == 2


def test_resume_skips_finished_runs_and_retries_failures_on_request(store):
    specs = [_spec("fc", TINY["fc"]), _fault("crash")]
    first, _ = _run(store, specs)
    assert [r.status for r in first] == ["ok", "crashed"]
    again, events = _run(store, specs)
    assert again == [] and events[0].skipped == 2
    retried, _ = _run(store, specs, retry_failed=True)
    assert [(r.config.get("fault"), r.attempt) for r in retried] == [("crash", 2)]
    rows = store.runs()
    assert len(rows) == 3 and len({(r["run_key"], r["attempt"]) for r in rows}) == 3


def test_parallel_cpu_workers_split_the_cores(store):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    events = []
    options = RunOptions(device="cpu", timing=TINY_POLICY)  # threads: each worker's cores
    specs = [_spec("fc", {**TINY["fc"], "nodes": n}, options=options) for n in (8, 9, 10, 11)]
    sup = Supervisor(store, options, SweepSettings(workers=2), on_event=events.append)
    records = sup.run(specs)
    assert [r.status for r in records] == ["ok"] * 4
    assert len({r.worker_pid for r in records}) == 2
    cores = len(os.sched_getaffinity(0))
    assert {r.threads for r in records} == {cores // 2}
    assert max(len(e.running) for e in events) == 2  # two configs really ran at once


def test_duplicate_specs_run_once(store):
    spec = _spec("fc", TINY["fc"])
    records, events = _run(store, [spec, spec])
    assert len(records) == 1 and events[0].skipped == 1


def test_cuda_without_a_gpu_is_one_clear_error(store):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    options = RunOptions(device="cuda", timing=TINY_POLICY)
    with pytest.raises(ParadnnError, match="no CUDA device is visible"):
        Supervisor(store, options, SweepSettings()).run([_spec("fc", TINY["fc"])])
    assert store.count() == 0


def test_more_than_one_worker_needs_the_cpu(store):
    with pytest.raises(ParadnnError, match="workers = 2: more than 1 needs --device cpu"):
        Supervisor(store, RunOptions(device="cuda"), SweepSettings(workers=2))


def test_death_classification():
    assert _death(-9)[0] == "oom"
    assert _death(-11) == ("crashed", "worker died with signal SIGSEGV (-11)")
    assert _death(3)[0] == "crashed" and "code 3" in _death(3)[1]


def _children(pid):
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _running(pid):
    """Alive and not a zombie (an exited child whose new parent has not reaped it yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def _rows(db) -> int:
    """Rows the supervisor has committed so far (0 before the database exists)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_kill_9_at_random_moments_loses_nothing_and_duplicates_nothing(tmp_path):
    """SIGKILL the supervisor at random points, resume each time: exact results, no duplicates."""
    from sweep_driver import SPECS

    db = tmp_path / "k.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    rng = random.Random(7)
    cmd = [sys.executable, str(TESTS / "sweep_driver.py"), str(db)]
    counts = []
    # Four kills, each at a random point of the sweep's progress (a row count, not a time, so a
    # slow or loaded machine tests the same thing), then a run to completion.
    targets = sorted(rng.sample(range(1, len(SPECS)), 4))
    for target in targets:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        hang = time.monotonic() + 300  # only catches a hang
        while proc.poll() is None and _rows(db) < target and time.monotonic() < hang:
            time.sleep(rng.uniform(0.0, 0.1))
        if proc.poll() is None:
            workers = _children(proc.pid)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            deadline = time.monotonic() + 15  # a worker still importing torch needs a moment
            while (alive := [w for w in workers if _running(w)]) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert alive == [], f"outlived their supervisor: {[_cmdline(w) for w in alive]}"
        counts.append(sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    final = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert final.returncode == 0, final.stderr.decode()[-2000:]
    assert counts[0] < len(SPECS), "the first kill came after the sweep had finished"
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT run_key, attempt, status, config FROM runs").fetchall()
    assert len(rows) == len(SPECS)  # nothing lost, nothing twice
    assert len({r[0] for r in rows}) == len(SPECS)
    assert {r[1] for r in rows} == {1} and {r[2] for r in rows} == {"ok"}
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_predicted_oom_skips_the_run_unless_prediction_is_off(store, monkeypatch):
    from paradnn.runner import supervisor

    real = supervisor.memory_for
    # a worker whose host has 1 KiB free: even the tiny config's lower bound cannot fit
    monkeypatch.setattr(
        supervisor, "memory_for", lambda hello, sharing=1: real({**hello, "free_bytes": 1024})
    )
    spec = _spec("fc", TINY["fc"])
    (skipped,), _ = _run(store, [spec])
    assert skipped.status == "predicted_oom" and skipped.worker_pid is None
    assert "0.00 GiB of host memory is free; --force runs it anyway" in skipped.error
    (ran,), _ = _run(store, [spec], predict=False, retry_failed=True)
    assert ran.status == "ok" and ran.attempt == 2
    assert ran.predicted_mem_bytes >= ran.predicted_mem_lower_bytes > 0


def test_workers_are_recycled_every_n_runs(store):
    specs = [_spec("fc", {**TINY["fc"], "nodes": n}) for n in (5, 6, 7)]
    records, _ = _run(store, specs, recycle_every=2)
    pids = [r.worker_pid for r in records]
    assert pids[0] == pids[1] != pids[2]
    assert [r.worker_index for r in records] == [0, 1, 0]
