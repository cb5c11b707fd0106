"""Claims on run keys: two sweeps on one database share the work instead of doing it twice.

A sweep claims a run key (one row of `claims`) in the same transaction that checks no other
sweep has stored it since it planned; another sweep that meets the claim skips the key while its
owner lives. A claim names its owner: host, pid, the pid's start time (a pid the kernel gave to
a new process is not the owner) and a token per sweep, and it expires unless the owner renews
it (`Keeper`, a thread). So `kill -9` of a sweep loses nothing: on its own host its pid is gone
and its claims are taken over at once; from another host (a database on a shared file system)
they are taken over once they expire. Standard library only; torch-free.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

LEASE_S = 120.0  # a claim not renewed for this long is stale (the owner is on another host)
RENEW_S = 20.0  # the owner renews its claims this often (well inside the lease)
CLAIMED, HELD, STORED = "claimed", "held", "stored"


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (/proc/PID/stat, field 22),
    or None where it cannot be read (no such process, no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, start: str | None) -> bool:
    """Whether process `pid` (started at `start`, when known) still runs on this host. A zombie
    (killed, not yet reaped by its parent) has stopped; a pid now held by a process that
    started at another time is not the one that claimed."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux): the signal said it exists
        return True
    rest = text[text.rfind(")") + 2 :].split()
    if rest and rest[0] in ("Z", "X"):
        return False
    return start is None or (len(rest) > 19 and rest[19] == start)


@functools.cache
def machine() -> str:
    """This host as a claim names it: its name, and where they can be read, its boot and its
    pid namespace, so that two containers sharing a host name and a database volume do not
    take each other's pids for their own (each then waits for the other's lease to expire)."""
    parts = [platform.node()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8])
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    return "/".join(parts)


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: a sweep (its token) in process `pid` on `host`."""

    host: str
    pid: int
    pid_start: str | None
    token: str

    @classmethod
    def here(cls) -> Owner:
        pid = os.getpid()
        return cls(machine(), pid, process_start(pid), uuid.uuid4().hex)

    def words(self) -> str:
        return f"pid {self.pid} on {self.host.split('/')[0]}"

    def stopped(self, expires_at: float, now: float, host: str | None = None) -> bool:
        """Whether this owner's claim no longer holds: on this host, its process has ended;
        from another host, it was not renewed before `expires_at`."""
        if self.host == (host if host is not None else machine()):
            return not process_alive(self.pid, self.pid_start)
        return now > expires_at


def _owner(row: tuple) -> Owner:
    host, pid, pid_start, token = row
    return Owner(str(host), int(pid), pid_start, str(token))


@dataclass(frozen=True)
class Outcome:
    """What a claim found: CLAIMED (ours now; `taken_from` the stopped owner it replaced, if
    any), HELD (`holder` measures it) or STORED (a newer attempt is stored: another sweep
    measured it since this one planned)."""

    kind: str
    holder: Owner | None = None
    taken_from: Owner | None = None


def claim(
    conn: sqlite3.Connection,
    owner: Owner,
    run_key: str,
    known_attempt: int,
    *,
    sweep: str | None = None,
    now: float | None = None,
) -> Outcome:
    """Claim `run_key` for `owner` unless a newer attempt than `known_attempt` is stored or a
    live owner holds it; one IMMEDIATE transaction, so two sweeps never both claim a key."""
    now = time.time() if now is None else now
    conn.execute("BEGIN IMMEDIATE")
    try:
        newest = conn.execute(
            "SELECT COALESCE(MAX(attempt), 0) FROM runs WHERE run_key = ?", (run_key,)
        ).fetchone()[0]
        if newest > known_attempt:
            conn.execute("COMMIT")
            return Outcome(STORED)
        row = conn.execute(
            "SELECT host, pid, pid_start, token, expires_at FROM claims WHERE run_key = ?",
            (run_key,),
        ).fetchone()
        taken = None
        if row is not None and row[3] != owner.token:
            holder = _owner(row[:4])
            if not holder.stopped(float(row[4]), now, owner.host):
                conn.execute("COMMIT")
                return Outcome(HELD, holder=holder)
            taken = holder
        later = now + LEASE_S
        conn.execute(
            "INSERT OR REPLACE INTO claims (run_key, sweep, host, pid, pid_start, token, "
            "claimed_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*(run_key, sweep, owner.host, owner.pid, owner.pid_start), owner.token, now, later),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return Outcome(CLAIMED, taken_from=taken)


def release(conn: sqlite3.Connection, owner: Owner, run_key: str | None = None) -> None:
    """Drop `owner`'s claim on `run_key` (its result is stored), or all of them (None)."""
    if run_key is None:
        conn.execute("DELETE FROM claims WHERE token = ?", (owner.token,))
    else:
        conn.execute("DELETE FROM claims WHERE run_key = ? AND token = ?", (run_key, owner.token))


def renew(conn: sqlite3.Connection, owner: Owner, now: float | None = None) -> int:
    """Push back the expiry of every claim `owner` holds; how many it holds."""
    now = time.time() if now is None else now
    cur = conn.execute(
        "UPDATE claims SET expires_at = ? WHERE token = ?", (now + LEASE_S, owner.token)
    )
    return cur.rowcount


def holders(conn: sqlite3.Connection) -> list[tuple[str, Owner, float]]:
    """Every claim: (run key, owner, expiry)."""
    rows = conn.execute(
        "SELECT run_key, host, pid, pid_start, token, expires_at FROM claims ORDER BY run_key"
    ).fetchall()
    return [(str(r[0]), _owner(r[1:5]), float(r[5])) for r in rows]


class Keeper:
    """Renews an owner's claims every RENEW_S seconds from a thread with its own connection,
    so a long worker start or a long run in the main thread never lets them lapse. A failed
    renewal (a locked or full disk) is tried again at the next tick; the claims then hold at
    least until they expire."""

    def __init__(self, path: str, owner: Owner, every_s: float = RENEW_S):
        self.path, self.owner, self.every_s = path, owner, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paradnn-claims", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            with contextlib.suppress(sqlite3.Error):
                conn = sqlite3.connect(self.path, timeout=5, isolation_level=None)
                try:
                    renew(conn, self.owner)
                finally:
                    conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


__all__ = [
    "CLAIMED",
    "HELD",
    "LEASE_S",
    "STORED",
    "Keeper",
    "Outcome",
    "Owner",
    "claim",
    "holders",
    "process_alive",
    "process_start",
    "release",
    "renew",
]
