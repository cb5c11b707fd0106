"""The claims on run keys (store/claims.py), pinned in process: two owners in one process, fake
pids and /proc, a fake clock. tests/test_shared_db.py runs real sweeps side by side; here every
answer, every stored field and every boundary of the lease is checked on its own."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from paradnn.store import claims, open_store

T0 = 1_000_000.0
LEASE = claims.LEASE_S


def _stat(state: str, start: str | None = "4242", name: str = "python") -> str:
    """A /proc/PID/stat line: pid (name) state, then fields 4.. with field 22 = `start`."""
    rest = [state, *[str(i) for i in range(4, 22)]]
    if start is not None:
        rest.append(start)
        rest += ["0", "0"]
    return f"77 ({name}) " + " ".join(rest) + "\n"


class _Proc:
    """A fake /proc: pid -> stat text (absent: no such file) and the pids `os.kill` finds."""

    def __init__(self, monkeypatch, stats: dict[int, str], kill: dict[int, type | None]):
        self.stats, self.kill, self.signals = stats, kill, []
        proc = self

        class FakePath:
            def __init__(self, text: str):
                self.text = text

            def read_text(self) -> str:
                pid = int(self.text.split("/")[2])
                if self.text != f"/proc/{pid}/stat" or pid not in proc.stats:
                    raise FileNotFoundError(self.text)
                return proc.stats[pid]

        def fake_kill(pid: int, sig: int) -> None:
            proc.signals.append((pid, sig))
            err = proc.kill.get(pid, ProcessLookupError)
            if err is not None:
                raise err(pid)

        monkeypatch.setattr(claims, "Path", FakePath)
        monkeypatch.setattr(claims.os, "kill", fake_kill)


# -- process_start --------------------------------------------------------------------------
def test_process_start_is_field_22_of_the_stat_line(monkeypatch):
    _Proc(monkeypatch, {7: _stat("S", "123456"), 8: _stat("R", "99", name="a) (b c")}, {})
    assert claims.process_start(7) == "123456"
    assert claims.process_start(8) == "99"  # a name holding spaces and parentheses
    assert claims.process_start(9) is None  # no such process


@pytest.mark.parametrize(("fields", "found"), [(19, None), (20, "f22"), (21, "f22")])
def test_process_start_of_a_short_stat_line(monkeypatch, fields, found):
    rest = ["S", *[f"f{i}" for i in range(4, 24)]][:fields]
    _Proc(monkeypatch, {5: "5 (p) " + " ".join(rest)}, {})
    assert claims.process_start(5) == found


def test_process_start_of_this_process_matches_proc():
    text = Path("/proc/self/stat").read_text()
    expected = text[text.rfind(")") + 2 :].split()[19]
    assert claims.process_start(os.getpid()) == expected
    assert claims.process_start(os.getpid()).isdigit()


# -- process_alive --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("state", "start", "asked", "alive"),
    [
        ("S", "4242", None, True),  # runs; its start not known when it claimed
        ("R", "4242", "4242", True),  # the very process that claimed
        ("S", "4242", "4243", False),  # the pid was given to a process started later
        ("Z", "4242", "4242", False),  # a zombie: killed, not yet reaped
        ("X", "4242", None, False),  # dead
        ("D", "4242", "4242", True),
        ("S", None, "4242", False),  # a stat line too short to name its start
        ("S", None, None, True),
    ],
)
def test_process_alive_reads_the_state_and_the_start(monkeypatch, state, start, asked, alive):
    proc = _Proc(monkeypatch, {31: _stat(state, start)}, {31: None})
    assert claims.process_alive(31, asked) is alive
    assert proc.signals == [(31, 0)]  # signal 0: asks whether it exists, sends nothing


def test_process_alive_at_the_length_boundary(monkeypatch):
    twenty = "31 (p) " + " ".join(["S", *[str(i) for i in range(4, 22)], "s22"])
    _Proc(monkeypatch, {31: twenty, 32: twenty.rsplit(" ", 1)[0]}, {31: None, 32: None})
    assert claims.process_alive(31, "s22") is True  # 20 fields after the name: field 22 is there
    assert claims.process_alive(32, "21") is False  # 19 fields: no start to match
    assert claims.process_alive(32, None) is True


def test_process_alive_without_the_process_or_proc(monkeypatch):
    _Proc(monkeypatch, {41: _stat("Z")}, {40: None, 41: PermissionError, 42: PermissionError})
    assert claims.process_alive(39, None) is False  # the signal finds no such process
    assert claims.process_alive(40, "1") is True  # exists, but no /proc: the signal decides
    assert claims.process_alive(41, None) is False  # another user's zombie
    assert claims.process_alive(42, "1") is True  # another user's process, no /proc entry


def test_process_alive_reads_the_state_after_the_last_parenthesis(monkeypatch):
    _Proc(monkeypatch, {31: _stat("S", "7", name="a) Z (b")}, {31: None})
    assert claims.process_alive(31, "7") is True  # a name that looks like a zombie's state


def test_process_alive_with_an_empty_stat_remainder(monkeypatch):
    _Proc(monkeypatch, {5: "5 (p)"}, {5: None})
    assert claims.process_alive(5, None) is True
    assert claims.process_alive(5, "1") is False


def test_process_alive_for_real():
    me = os.getpid()
    assert claims.process_alive(me, None) is True
    assert claims.process_alive(me, claims.process_start(me)) is True
    assert claims.process_alive(me, claims.process_start(me) + "0") is False


# -- machine, Owner -------------------------------------------------------------------------
@pytest.fixture
def fresh_machine():
    claims.machine.cache_clear()
    yield
    claims.machine.cache_clear()


def test_machine_names_the_host_its_boot_and_its_pid_namespace(monkeypatch, fresh_machine):
    class St:
        st_ino = 4026531836

    files = {"/proc/sys/kernel/random/boot_id": "0123456789abcdef-rest\n"}

    class FakePath:
        def __init__(self, text):
            self.text = text

        def read_text(self):
            return files[self.text]

    monkeypatch.setattr(claims.platform, "node", lambda: "box")
    monkeypatch.setattr(claims, "Path", FakePath)
    monkeypatch.setattr(claims.os, "stat", lambda p: St() if p == "/proc/self/ns/pid" else None)
    assert claims.machine() == "box/01234567/4026531836"
    assert claims.machine() == "box/01234567/4026531836"  # cached


def test_machine_without_proc_is_the_host_name(monkeypatch, fresh_machine):
    class FakePath:
        def __init__(self, text):
            self.text = text

        def read_text(self):
            raise PermissionError(self.text)

    def no_stat(p):
        raise FileNotFoundError(p)

    monkeypatch.setattr(claims.platform, "node", lambda: "box")
    monkeypatch.setattr(claims, "Path", FakePath)
    monkeypatch.setattr(claims.os, "stat", no_stat)
    assert claims.machine() == "box"


def test_machine_here_for_real(fresh_machine):
    import platform

    parts = claims.machine().split("/")
    assert parts[0] == platform.node()
    if Path("/proc/sys/kernel/random/boot_id").exists():
        assert parts[1] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    assert parts[-1] == str(os.stat("/proc/self/ns/pid").st_ino)


def test_owner_here_is_this_process_with_a_fresh_token():
    a, b = claims.Owner.here(), claims.Owner.here()
    here = (claims.machine(), os.getpid(), claims.process_start(os.getpid()))
    assert (a.host, a.pid, a.pid_start) == here and a.pid_start is not None
    assert len(a.token) == 32 and int(a.token, 16) >= 0
    assert a.token != b.token  # two sweeps in one process are two owners


def test_owner_words_name_the_pid_and_the_host_name_only():
    assert claims.Owner("box/0123/456", 12, None, "t").words() == "pid 12 on box"
    assert claims.Owner("box", 3, "9", "t").words() == "pid 3 on box"


def test_owner_stopped_on_its_own_host_asks_the_process(monkeypatch):
    asked = []

    def alive(pid, start):
        asked.append((pid, start))
        return pid == 1

    monkeypatch.setattr(claims, "process_alive", alive)
    live, dead = claims.Owner("h", 1, "s1", "a"), claims.Owner("h", 2, None, "b")
    # on its own host the lease does not matter, only the process
    assert live.stopped(expires_at=T0, now=T0 + 10**6, host="h") is False
    assert dead.stopped(expires_at=T0 + 10**6, now=T0, host="h") is True
    assert asked == [(1, "s1"), (2, None)]


def test_owner_stopped_from_another_host_at_the_lease_boundary(monkeypatch):
    monkeypatch.setattr(claims, "process_alive", lambda pid, start: pytest.fail("asked"))
    far = claims.Owner("far", 1, None, "a")
    assert far.stopped(expires_at=T0, now=T0 - 1, host="near") is False
    assert far.stopped(expires_at=T0, now=T0, host="near") is False  # expires after, not at
    assert far.stopped(expires_at=T0, now=T0 + 0.001, host="near") is True


def test_owner_stopped_defaults_to_this_machine(monkeypatch):
    monkeypatch.setattr(claims, "machine", lambda: "here")
    monkeypatch.setattr(claims, "process_alive", lambda pid, start: pid == 1)
    assert claims.Owner("here", 2, None, "a").stopped(expires_at=T0 + 99, now=T0) is True
    assert claims.Owner("here", 1, None, "a").stopped(expires_at=T0 - 99, now=T0) is False
    assert claims.Owner("there", 2, None, "a").stopped(expires_at=T0 + 99, now=T0) is False


# -- claim, release, renew, holders -------------------------------------------------------
@pytest.fixture
def conn():
    store = open_store(":memory:")
    yield store.conn
    store.close()


@pytest.fixture
def alive(monkeypatch):
    """Pids 1 and 2 run on host "h"; every other pid there has ended."""
    monkeypatch.setattr(claims, "process_alive", lambda pid, start: pid in (1, 2))


def _rows(conn) -> list[tuple]:
    sql = "SELECT run_key, sweep, host, pid, pid_start, token, claimed_at, expires_at FROM claims"
    return [tuple(r) for r in conn.execute(sql + " ORDER BY run_key")]


def _store_run(conn, key: str, attempt: int) -> None:
    conn.execute(
        "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, status, "
        "attempt) VALUES (?, 'fc', '{}', 'fp32', 'sgd', 'eager', 'cpu', 'ok', ?)",
        (key, attempt),
    )


A = claims.Owner("h", 1, "s1", "tok-a")
B = claims.Owner("h", 2, "s2", "tok-b")


def test_a_claim_stores_its_owner_and_a_lease_from_now(conn, alive):
    out = claims.claim(conn, A, "k", 0, sweep="sw", now=T0)
    assert out == claims.Outcome(claims.CLAIMED, holder=None, taken_from=None)
    assert _rows(conn) == [("k", "sw", "h", 1, "s1", "tok-a", T0, T0 + LEASE)]
    assert not conn.in_transaction
    claims.claim(conn, B, "j", 0, now=T0 + 5)  # no sweep given: NULL
    assert _rows(conn)[0] == ("j", None, "h", 2, "s2", "tok-b", T0 + 5, T0 + 5 + LEASE)


def test_a_claim_without_a_clock_takes_the_time_now(conn, alive, monkeypatch):
    monkeypatch.setattr(claims.time, "time", lambda: 1234.5)
    claims.claim(conn, A, "k", 0)
    assert _rows(conn) == [("k", None, "h", 1, "s1", "tok-a", 1234.5, 1234.5 + LEASE)]


def test_a_live_holder_keeps_its_claim(conn, alive):
    claims.claim(conn, A, "k", 0, sweep="a", now=T0)
    out = claims.claim(conn, B, "k", 0, sweep="b", now=T0 + 10 * LEASE)
    assert out == claims.Outcome(claims.HELD, holder=A, taken_from=None)
    assert out.holder.pid_start == "s1" and isinstance(out.holder.pid, int)
    assert _rows(conn) == [("k", "a", "h", 1, "s1", "tok-a", T0, T0 + LEASE)]  # unchanged
    assert not conn.in_transaction


def test_its_own_claim_is_claimed_again_with_a_new_lease(conn, alive):
    claims.claim(conn, A, "k", 0, sweep="a", now=T0)
    out = claims.claim(conn, A, "k", 0, sweep="a2", now=T0 + 7)
    assert out == claims.Outcome(claims.CLAIMED)
    assert _rows(conn) == [("k", "a2", "h", 1, "s1", "tok-a", T0 + 7, T0 + 7 + LEASE)]


def test_a_stopped_holders_claim_is_taken_over(conn, alive):
    gone = claims.Owner("h", 3, "s3", "tok-gone")  # pid 3 has ended
    claims.claim(conn, gone, "k", 0, now=T0)
    out = claims.claim(conn, A, "k", 0, now=T0 + 1)  # at once: its lease is no matter
    assert out == claims.Outcome(claims.CLAIMED, taken_from=gone)
    assert _rows(conn) == [("k", None, "h", 1, "s1", "tok-a", T0 + 1, T0 + 1 + LEASE)]


def test_a_claim_from_another_host_is_judged_by_its_lease(conn, alive):
    far = claims.Owner("far", 1, None, "tok-far")  # pid 1 runs here, but that is not it
    claims.claim(conn, far, "k", 0, now=T0)
    at_expiry = claims.claim(conn, A, "k", 0, now=T0 + LEASE)
    assert at_expiry == claims.Outcome(claims.HELD, holder=far)
    past = claims.claim(conn, A, "k", 0, now=T0 + LEASE + 0.5)
    assert past == claims.Outcome(claims.CLAIMED, taken_from=far)


def test_the_claimers_host_decides_whose_pids_are_known(conn, monkeypatch):
    """The holder is judged from the claiming owner's host, not from this machine's name."""
    monkeypatch.setattr(claims, "machine", lambda: "elsewhere")
    monkeypatch.setattr(claims, "process_alive", lambda pid, start: False)
    claims.claim(conn, claims.Owner("h", 9, None, "x"), "k", 0, now=T0)
    out = claims.claim(conn, A, "k", 0, now=T0 + 1)  # same host "h": pid 9 has ended
    assert out.kind == claims.CLAIMED and out.taken_from.pid == 9


@pytest.mark.parametrize(
    ("stored", "known", "kind"),
    [(1, 0, "stored"), (1, 1, "claimed"), (2, 1, "stored"), (2, 3, "claimed")],
)
def test_a_newer_stored_attempt_is_not_claimed(conn, alive, stored, known, kind):
    for attempt in range(1, stored + 1):
        _store_run(conn, "k", attempt)
    _store_run(conn, "other", 5)
    out = claims.claim(conn, A, "k", known, now=T0)
    assert out == claims.Outcome(kind)
    assert len(_rows(conn)) == (kind == claims.CLAIMED)
    assert not conn.in_transaction


def test_a_key_never_stored_is_claimed_at_attempt_zero(conn, alive):
    _store_run(conn, "other", 3)
    assert claims.claim(conn, A, "k", 0, now=T0).kind == claims.CLAIMED


class _FailingCommit:
    """A connection whose COMMIT fails the way a full disk does: SQLite has rolled the
    transaction back already, so the claim must not roll back again (that would hide why)."""

    def __init__(self, conn: sqlite3.Connection, rolled_back: bool):
        self._conn, self._rolled_back = conn, rolled_back

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def execute(self, sql: str, *args):
        if sql == "COMMIT":
            if self._rolled_back:
                self._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)


@pytest.mark.parametrize("rolled_back", [True, False])
def test_a_failed_claim_leaves_no_transaction_and_raises_its_own_error(conn, alive, rolled_back):
    with pytest.raises(sqlite3.OperationalError, match=r"^database or disk is full$"):
        claims.claim(_FailingCommit(conn, rolled_back), A, "k", 0, now=T0)
    assert not conn.in_transaction
    assert _rows(conn) == []  # nothing claimed
    assert claims.claim(conn, A, "k", 0, now=T0).kind == claims.CLAIMED  # usable again


def test_a_claim_interrupted_mid_way_is_rolled_back(conn, alive):
    class Interrupting(_FailingCommit):
        def execute(self, sql, *args):
            if sql.startswith("INSERT OR REPLACE"):
                self._conn.execute(sql, *args)
                raise KeyboardInterrupt
            return self._conn.execute(sql, *args)

    with pytest.raises(KeyboardInterrupt):
        claims.claim(Interrupting(conn, False), A, "k", 0, now=T0)
    assert not conn.in_transaction and _rows(conn) == []


def test_release_one_key_drops_only_that_claim_of_that_owner(conn, alive):
    for key, owner in (("a", A), ("b", A), ("c", B)):
        claims.claim(conn, owner, key, 0, now=T0)
    claims.release(conn, B, "a")  # not its claim: nothing happens
    claims.release(conn, A, "c")
    assert [r[0] for r in _rows(conn)] == ["a", "b", "c"]
    claims.release(conn, A, "a")
    assert [(r[0], r[5]) for r in _rows(conn)] == [("b", "tok-a"), ("c", "tok-b")]
    claims.release(conn, A)  # every claim of A
    assert [(r[0], r[5]) for r in _rows(conn)] == [("c", "tok-b")]
    claims.release(conn, A)
    assert len(_rows(conn)) == 1


def test_renew_pushes_back_only_its_owners_claims(conn, alive, monkeypatch):
    for key, owner in (("a", A), ("b", A), ("c", B)):
        claims.claim(conn, owner, key, 0, now=T0)
    assert claims.renew(conn, A, now=T0 + 50) == 2
    assert [(r[0], r[6], r[7]) for r in _rows(conn)] == [
        ("a", T0, T0 + 50 + LEASE),
        ("b", T0, T0 + 50 + LEASE),
        ("c", T0, T0 + LEASE),
    ]
    monkeypatch.setattr(claims.time, "time", lambda: T0 + 80)
    assert claims.renew(conn, B) == 1
    assert _rows(conn)[2][7] == T0 + 80 + LEASE
    assert claims.renew(conn, claims.Owner("h", 1, None, "none")) == 0


def test_holders_lists_every_claim_by_key(conn, alive):
    far = claims.Owner("far", 8, None, "tok-far")
    claims.claim(conn, far, "z", 0, now=T0)
    claims.claim(conn, A, "m", 0, now=T0 + 1)
    found = claims.holders(conn)
    assert found == [("m", A, T0 + 1 + LEASE), ("z", far, T0 + LEASE)]
    assert [type(x) for x in found[0]] == [str, claims.Owner, float]
    assert claims.holders(conn) == found
    claims.release(conn, A)
    claims.release(conn, far)
    assert claims.holders(conn) == []


def test_an_owner_read_back_has_its_types():
    assert claims._owner(("h", "12", None, 345)) == claims.Owner("h", 12, None, "345")
    assert claims._owner(("h", 12, "9", "t")).pid_start == "9"


def test_lease_and_renewal_periods():
    assert claims.RENEW_S * 3 < claims.LEASE_S  # a claim outlives two missed renewals
    assert (claims.CLAIMED, claims.HELD, claims.STORED) == ("claimed", "held", "stored")


# -- Keeper ---------------------------------------------------------------------------------
class _Ticks:
    """A stop event whose wait returns False `n` times (a tick each), then True (stopped)."""

    def __init__(self, n: int):
        self.n, self.waits = n, []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        self.n -= 1
        return self.n < 0

    def set(self) -> None:
        self.n = -1


def _keeper(path: str, owner: claims.Owner, every_s: float = 3600.0) -> claims.Keeper:
    keeper = claims.Keeper(path, owner, every_s=every_s)
    keeper.close()  # its own thread ends at once; _run is driven below
    return keeper


def test_the_keeper_renews_on_each_tick_in_autocommit(tmp_path, monkeypatch):
    db = tmp_path / "c.db"
    with open_store(db) as store:
        claims.claim(store.conn, A, "k", 0, now=T0)
    keeper = _keeper(str(db), A, every_s=7.5)
    opened, closed = [], []
    real = sqlite3.connect

    class Conn(sqlite3.Connection):
        def close(self):
            closed.append(True)
            super().close()

    def connect(path, **kw):
        opened.append((path, kw))
        return real(path, factory=Conn, **kw)

    monkeypatch.setattr(claims.sqlite3, "connect", connect)
    monkeypatch.setattr(claims.time, "time", lambda: T0 + 500)
    keeper._stop = _Ticks(2)
    keeper._run()
    assert keeper._stop.waits == [7.5, 7.5, 7.5]
    assert opened == [(str(db), {"timeout": 5, "isolation_level": None})] * 2
    assert closed == [True, True]
    with open_store(db, readonly=True) as store:
        assert claims.holders(store.conn) == [("k", A, T0 + 500 + LEASE)]  # committed


def test_a_failed_renewal_is_tried_again_at_the_next_tick(tmp_path, monkeypatch):
    keeper = _keeper(str(tmp_path / "c.db"), A)
    calls, closed = [], []

    class Conn:
        def close(self):
            closed.append(True)

    def renew(conn, owner):
        calls.append(owner)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database is locked")
        return 1

    monkeypatch.setattr(claims.sqlite3, "connect", lambda path, **kw: Conn())
    monkeypatch.setattr(claims, "renew", renew)
    keeper._stop = _Ticks(3)
    keeper._run()
    assert calls == [A, A, A] and closed == [True, True, True]


def test_a_keeper_that_cannot_open_goes_on(monkeypatch):
    keeper = _keeper("/nonexistent/folder/c.db", A)
    tries = []

    def connect(path, **kw):
        tries.append(path)
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(claims.sqlite3, "connect", connect)
    keeper._stop = _Ticks(2)
    keeper._run()
    assert tries == ["/nonexistent/folder/c.db"] * 2


def test_another_error_ends_the_keeper(monkeypatch):
    keeper = _keeper("x.db", A)

    def connect(path, **kw):
        raise RuntimeError("not a database error")

    monkeypatch.setattr(claims.sqlite3, "connect", connect)
    keeper._stop = _Ticks(2)
    with pytest.raises(RuntimeError):
        keeper._run()


def test_a_keeper_is_a_daemon_thread_that_stops_when_closed(monkeypatch):
    started = []
    real = threading.Thread

    def thread(**kw):
        started.append(kw)
        return real(**kw)

    monkeypatch.setattr(claims.threading, "Thread", thread)
    keeper = claims.Keeper("x.db", A)
    try:
        assert (keeper.path, keeper.owner, keeper.every_s) == ("x.db", A, claims.RENEW_S)
        ((kw),) = started
        assert kw["name"] == "paradnn-claims" and kw["daemon"] is True
        assert kw["target"] == keeper._run
        assert keeper._thread.is_alive() and keeper._thread.daemon
        assert not keeper._stop.is_set()
    finally:
        keeper.close()
    assert keeper._stop.is_set() and not keeper._thread.is_alive()


def test_close_waits_a_bounded_time_for_the_thread():
    keeper = _keeper("x.db", A)
    joined = []

    class Thread:
        def join(self, timeout=None):
            joined.append(timeout)

    keeper._stop, keeper._thread = threading.Event(), Thread()
    keeper.close()
    assert keeper._stop.is_set() and joined == [10]
