"""Two or more sweeps on one database (issue 46): each configuration is measured once, a sweep
killed mid-run loses nothing, and any number of processes may open a new or an old database
at the same moment. The claims themselves (store/claims.py) are tested in process."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paradnn.store import claims, open_store
from paradnn.store.schema import LATEST, MIGRATIONS

TESTS = Path(__file__).resolve().parent
DRIVER = TESTS / "share_driver.py"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}


def _rows(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
            return conn.execute("SELECT run_key, attempt, status FROM runs").fetchall()
    except sqlite3.Error:
        return []


def _start(db: Path, gate: Path, n: int) -> subprocess.Popen:
    cmd = [sys.executable, str(DRIVER), str(db), str(gate), str(n)]
    return subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


def _once_each(db: Path, n_specs: int) -> None:
    """Every configuration stored exactly once, measured, and no claim left behind."""
    rows = _rows(db)
    assert len(rows) == n_specs, rows  # nothing lost, nothing twice
    assert len({r[0] for r in rows}) == n_specs
    assert {r[1] for r in rows} == {1} and {r[2] for r in rows} == {"ok"}
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 4])
def test_sweeps_started_together_measure_each_configuration_once(tmp_path, n):
    from share_driver import SPECS

    db, gate = tmp_path / "shared.db", tmp_path / "gate"
    gate.mkdir()
    procs = [_start(db, gate, n) for _ in range(n)]
    done = [_finish(p) for p in procs]
    # each sweep had planned every configuration before any was measured: without claims,
    # each would have measured all of them (n rows per configuration)
    assert [d["planned"] for d in done] == [len(SPECS)] * n
    assert sum(d["stored"] for d in done) == len(SPECS)
    _once_each(db, len(SPECS))
    helped = [d for d in done if d["stored"] < len(SPECS)]
    assert helped, done
    for d in helped:  # a sweep the others helped says so
        assert any("measured by another sweep on this database" in note for note in d["notes"])


@pytest.mark.slow
def test_a_sweep_killed_mid_run_leaves_its_work_to_the_other(tmp_path):
    from share_driver import SPECS

    db, gate = tmp_path / "shared.db", tmp_path / "gate"
    gate.mkdir()
    victim, survivor = _start(db, gate, 2), _start(db, gate, 2)
    deadline = time.monotonic() + 300
    while victim.poll() is None and len(_rows(db)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert victim.poll() is None, victim.communicate()[1].decode()[-3000:]
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    at_kill = len(_rows(db))
    done = _finish(survivor)
    _once_each(db, len(SPECS))
    # every row stored after the kill is the survivor's: what the killed sweep had claimed and
    # not stored (its run in flight) was taken over, not lost
    assert done["stored"] >= len(SPECS) - at_kill


def test_a_claim_is_held_while_its_owner_lives_and_taken_over_when_it_stops(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        conn = store.conn
        me, other = claims.Owner.here(), claims.Owner.here()
        assert claims.claim(conn, me, "k", 0).kind == claims.CLAIMED
        held = claims.claim(conn, other, "k", 0)
        assert held.kind == claims.HELD and held.holder == me
        assert claims.claim(conn, me, "k", 0).kind == claims.CLAIMED  # its own: still its own
        claims.release(conn, me, "k")
        assert claims.claim(conn, other, "k", 0).kind == claims.CLAIMED
        # a process that has ended (a pid that ran and was reaped) holds nothing
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        gone = claims.Owner(me.host, dead.pid, claims.process_start(os.getpid()), "gone")
        conn.execute("UPDATE claims SET pid = ?, token = 'gone' WHERE run_key = 'k'", (dead.pid,))
        taken = claims.claim(conn, me, "k", 0)
        assert taken.kind == claims.CLAIMED and taken.taken_from.pid == gone.pid


def test_a_zombie_and_a_reused_pid_are_not_the_owner():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # exited, not reaped: a zombie
        state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.02)
    assert not claims.process_alive(child.pid, None)
    child.wait()
    me = os.getpid()
    assert claims.process_alive(me, claims.process_start(me))
    assert not claims.process_alive(me, "1")  # same pid, another start time: another process


def test_a_claim_from_another_host_holds_until_it_expires(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        conn = store.conn
        far = claims.Owner("elsewhere", 1, None, "far")
        me = claims.Owner.here()
        t0 = 1_000_000.0
        assert claims.claim(conn, far, "k", 0, now=t0).kind == claims.CLAIMED
        assert claims.claim(conn, me, "k", 0, now=t0 + claims.LEASE_S - 1).kind == claims.HELD
        assert claims.renew(conn, far, now=t0 + 100) == 1  # renewed: held for a lease more
        assert claims.claim(conn, me, "k", 0, now=t0 + claims.LEASE_S + 50).kind == claims.HELD
        late = claims.claim(conn, me, "k", 0, now=t0 + 100 + claims.LEASE_S + 1)
        assert late.kind == claims.CLAIMED and late.taken_from == far


def test_a_key_stored_since_the_plan_is_not_claimed(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        conn = store.conn
        cols = "run_key, family, config, precision, optimizer, mode, device, status, attempt"
        conn.execute(
            f"INSERT INTO runs ({cols}) VALUES ('k', 'fc', '{{}}', 'fp32', 'sgd', 'eager', "
            "'cpu', 'ok', 1)"
        )
        me = claims.Owner.here()
        assert claims.claim(conn, me, "k", 0).kind == claims.STORED  # planned before it landed
        assert claims.claim(conn, me, "k", 1).kind == claims.CLAIMED  # a re-measure of attempt 1
        assert [h[0] for h in claims.holders(conn)] == ["k"]


def _old_db(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("".join(MIGRATIONS[:version]) + f"\nPRAGMA user_version = {version};")
    conn.close()


@pytest.mark.parametrize("old", [None, 3], ids=["new", "schema v3"])
def test_processes_opening_one_database_at_once_all_succeed(tmp_path, old):
    """Eight processes open the same new (or old) database at one moment, five times: every
    open succeeds and the schema is made once (before: 30 of 40 opens failed, e.g. `migration
    to schema v4 failed: duplicate column name: energy_j`)."""
    import share_driver

    ctx = mp.get_context("spawn")
    n, answers = 8, []
    for trial in range(5):
        path = tmp_path / f"open{trial}.db"
        if old:
            _old_db(path, old)
        go, out = ctx.Barrier(n), ctx.Queue()
        args = (str(path), go, out)
        procs = [ctx.Process(target=share_driver.open_once, args=args) for _ in range(n)]
        for p in procs:
            p.start()
        answers += [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert answers == ["ok"] * (5 * n), sorted(set(answers))


def test_release_without_a_key_drops_every_claim_of_its_owner_and_no_other(tmp_path):
    with open_store(tmp_path / "c.db") as store:
        conn = store.conn
        me, other = claims.Owner.here(), claims.Owner.here()
        for key in ("a", "b"):
            assert claims.claim(conn, me, key, 0).kind == claims.CLAIMED
        assert claims.claim(conn, other, "c", 0).kind == claims.CLAIMED
        claims.release(conn, me)  # the sweep ends: all of its claims at once
        assert [(k, o.token) for k, o, _ in claims.holders(conn)] == [("c", other.token)]


def test_the_keeper_renews_claims_and_outlives_a_failed_renewal(tmp_path):
    """A renewal that fails (the database cannot be opened: a full or vanished disk) is tried
    again at the next tick: the keeper's thread goes on instead of dying with the error."""
    db = tmp_path / "c.db"
    with open_store(db) as store:
        me = claims.Owner.here()
        assert claims.claim(store.conn, me, "k", 0).kind == claims.CLAIMED
        store.conn.execute("UPDATE claims SET expires_at = 1")
    keeper = claims.Keeper(str(db), me, every_s=0.01)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open_store(db, readonly=True) as store:
                ((_, _, expires),) = claims.holders(store.conn)
            if expires > time.time():
                break
            time.sleep(0.02)
        assert expires > time.time()  # renewed: pushed a lease ahead
    finally:
        keeper.close()
    broken = claims.Keeper(str(tmp_path / "no" / "such" / "folder.db"), me, every_s=0.01)
    try:
        time.sleep(0.2)  # several failed renewals
        assert broken._thread.is_alive()
    finally:
        broken.close()
    assert not broken._thread.is_alive()


def test_a_schema_that_cannot_be_locked_in_time_says_another_program_holds_it(tmp_path):
    """The busy timeout ran out before the EXCLUSIVE lock that creates or upgrades a schema:
    one StoreError naming the file and why, and nothing half made."""
    from paradnn.errors import StoreError
    from paradnn.store import db as store_db

    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program is writing: readers go on, no lock
    conn = sqlite3.connect(path, timeout=0.05, isolation_level=None)
    try:
        with pytest.raises(StoreError) as e:
            store_db.migrate(conn, str(path))
        text = str(e.value)
        assert text.startswith(f"{path}: cannot lock the database to create or upgrade its schema")
        assert text.endswith("another program holds it")
    finally:
        conn.close()
        holder.execute("ROLLBACK")
        holder.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 0


def test_a_damaged_file_that_does_not_change_is_judged_at_once(tmp_path, monkeypatch):
    """A file is read again only when it changed while it was read (another process making
    it); one that stays as it is gets its verdict at the first read, without waiting."""
    from paradnn.errors import StoreError
    from paradnn.store import db as store_db

    path = tmp_path / "bad.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # a header, then garbage
    waits: list[float] = []
    monkeypatch.setattr(store_db.time, "sleep", waits.append)
    with pytest.raises(StoreError):
        store_db._check_existing(str(path))
    assert waits == []


def test_a_namesake_host_in_another_container_is_judged_by_its_lease():
    """Same host name, another boot or pid namespace (two containers on one volume): its pid
    says nothing here, so its claim holds until the lease expires."""
    here = claims.machine()
    twin = claims.Owner(here.split("/")[0] + "/other/1", os.getpid() + 10**6, None, "t")
    assert not twin.stopped(expires_at=100.0, now=50.0)  # a pid absent here: still held
    assert twin.stopped(expires_at=100.0, now=150.0)
    assert twin.words() == f"pid {twin.pid} on {here.split('/')[0]}"
    me = claims.Owner.here()
    dead = claims.Owner(me.host, os.getpid() + 10**6, None, "d")
    assert dead.stopped(expires_at=100.0, now=50.0)  # this machine: its pid is gone
