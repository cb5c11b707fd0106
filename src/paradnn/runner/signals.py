"""SIGTERM ends a command the way Ctrl-C does: every child process is ended before it exits.

Python's default for SIGTERM is to die on the spot: the workers then outlive the supervisor
until their parent-death signal arrives (none yet for one still starting), and
multiprocessing's resource tracker, which leaves only when every holder of its pipe has gone,
lives on with them. `terminating()` turns SIGTERM (and SIGHUP, a closed terminal) into
`Terminated`, a KeyboardInterrupt, so the paths that stop workers on Ctrl-C stop them on
SIGTERM too; `end_children()` then ends what is left (the resource tracker, and after an
interruption any other descendant) before the process exits. Linux reads the process tree
from /proc; elsewhere only the resource tracker is ended. Torch-free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

CAUGHT = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to end (SIGTERM, SIGHUP): handled as Ctrl-C is, and the command
    exits with 128 + the signal's number, as a process killed by it would."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


def exit_code(e: BaseException) -> int:
    """The exit status of a command ended by `e`: 128 + its signal (130 for Ctrl-C)."""
    return int(getattr(e, "exit_code", 128 + signal.SIGINT))


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """Inside, SIGTERM and SIGHUP raise Terminated in the main thread (once: a second signal
    while the first is handled is ignored, so the clean-up is not cut short). Outside the main
    thread, where Python cannot install handlers, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = [False]

    def handler(signum: int, frame: object) -> None:
        if raised[0]:
            return
        raised[0] = True
        raise Terminated(signum)

    saved = {s: signal.signal(s, handler) for s in CAUGHT}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def children(pid: int) -> list[int]:
    """The direct children of `pid` (from /proc; [] where it cannot be read)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    found, todo = [], children(pid)
    while todo:
        child = todo.pop(0)
        if child not in found:
            found.append(child)
            todo += children(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL the processes below `pid` (a worker's own children: a data loader's workers,
    a compiler's), deepest first, then `pid` itself is left to its caller."""
    for child in reversed(descendants(pid)):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)


def stop_resource_tracker(grace_s: float = 2.0) -> None:
    """End multiprocessing's resource tracker of this process, if it started one: its pipe is
    closed (it then cleans up and exits, as at interpreter exit), and it is killed if it is
    still there after `grace_s` (a process that inherited its pipe still holds it)."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
    if fd is None or pid is None:
        return
    with contextlib.suppress(OSError):
        os.close(fd)
    tracker._fd = tracker._pid = None
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def end_children(*, interrupted: bool) -> None:
    """Before the process exits: after an interruption every descendant is killed (a worker
    still starting, its children), then the resource tracker is ended and every child reaped,
    so none outlives the command."""
    if interrupted:
        kill_tree(os.getpid())
    stop_resource_tracker()
    if interrupted:
        _reap()


def _reap() -> None:
    for _ in range(100):
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:  # children left that are not done: they were killed, they will be soon
            time.sleep(0.01)


__all__ = [
    "Terminated",
    "children",
    "descendants",
    "end_children",
    "exit_code",
    "kill_tree",
    "stop_resource_tracker",
    "terminating",
]
