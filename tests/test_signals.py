"""SIGTERM and SIGINT end `paradnn run` with every child ended before it exits (issue 46): the
workers, one still starting, and multiprocessing's resource tracker. Before, the tracker and
a spawned worker were still alive a second after the command had gone."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paradnn.runner import signals
from paradnn.store.claims import process_alive

from conftest import TINY, write_sweep


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def _sweep(tmp_path: Path, db: Path) -> subprocess.Popen:
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in range(4, 40)]
    sweep = write_sweep(tmp_path / "s.toml", runs)
    cmd = [sys.executable, "-m", "paradnn", "run", "--preset", str(sweep), "--db", str(db),
           "--device", "cpu", "--threads", "1", "--quiet"]  # fmt: skip
    # a background job may inherit SIGINT ignored: give the child the default, as a terminal
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(proc: subprocess.Popen, ready, what: str) -> list[int]:
    """Poll until `ready(children)` holds; the children (pids) then."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the sweep ended before {what}: {proc.communicate()[1]}"
        found = signals.descendants(proc.pid)
        if ready(found):
            return found
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"never saw {what}")


def _is_worker(pid: int) -> bool:
    return "multiprocessing.spawn" in _cmdline(pid)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "words"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
)
@pytest.mark.parametrize("when", ["measuring", "starting"])
def test_a_signal_ends_every_child_before_the_command_exits(tmp_path, signum, code, words, when):
    db = tmp_path / "r.db"
    proc = _sweep(tmp_path, db)
    if when == "measuring":  # a worker at work, a result stored
        deadline = time.monotonic() + 180
        while _rows(db) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        found = _wait_for(proc, lambda pids: any(_is_worker(p) for p in pids), "a worker")
    else:  # the first worker spawned, still importing: not yet in the supervisor's slots
        found = _wait_for(proc, lambda pids: any(_is_worker(p) for p in pids), "a worker")
    assert any("resource_tracker" in _cmdline(p) for p in found), [_cmdline(p) for p in found]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    alive = [p for p in found if process_alive(p, None)]  # at the moment the command is gone
    assert alive == [], [_cmdline(p) for p in alive]
    assert proc.returncode == code, err
    if when == "measuring":
        assert words in err and "run the same command again to resume" in err, err
    assert "Traceback" not in err, err


def test_terminated_is_an_interrupt_with_the_signals_exit_code():
    e = signals.Terminated(signal.SIGTERM)
    assert isinstance(e, KeyboardInterrupt) and e.args == ("SIGTERM",)
    assert signals.exit_code(e) == 143 and signals.exit_code(KeyboardInterrupt()) == 130


def test_terminating_turns_sigterm_into_terminated_once():
    import os

    with pytest.raises(signals.Terminated), signals.terminating():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises here
    before = signal.getsignal(signal.SIGTERM)
    with signals.terminating():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_kill_tree_ends_a_process_and_its_children(tmp_path):
    code = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not signals.children(parent.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    (child,) = signals.children(parent.pid)
    assert signals.descendants(parent.pid) == [child]
    signals.kill_tree(parent.pid)
    deadline = time.monotonic() + 10
    while process_alive(child, None) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not process_alive(child, None)
    parent.kill()
    parent.wait()
