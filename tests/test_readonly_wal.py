"""A WAL database copied without its -shm onto a read-only file system (issue 46): SQLite can
read its -wal only with a -shm it cannot make there, so the read failed ("unable to open
database file"). Now an empty -wal is read as an immutable file, and a -wal holding results
from a copy in a temporary folder (where SQLite replays it), each with a warning line; every
result is read. The folder is made read-only for real: a read-only bind mount in a mount
namespace of the test's own (root), else its mode (others)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paradnn.records import RunRecord
from paradnn.store import open_store

ROWS = 6


def _record(i: int) -> RunRecord:
    return RunRecord.flat(
        run_key=f"k{i}",
        family="fc",
        config={"layers": 1, "nodes": 8 + i},
        precision="fp32",
        optimizer="rmsprop",
        device="cpu",
        status="ok",
        step_time_s=0.01 * (i + 1),
        samples=[0.01 * (i + 1)] * 12,
        env={"torch": "2.13.0", "hostname": "h"},
    )


def _copy_without_shm(tmp_path: Path, *, empty_wal: bool) -> Path:
    """The database and its -wal as a writer left them (results still in the -wal, unless
    `empty_wal`), copied into a folder of their own without the -shm."""
    src = tmp_path / "live.db"
    store = open_store(src)
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")  # the results stay in the -wal
    for i in range(ROWS):
        store.insert(_record(i))
    if empty_wal:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copyfile(src, ro / "r.db")
    shutil.copyfile(f"{src}-wal", ro / "r.db-wal")  # copied while the writer has it open
    store.close()
    assert (Path(f"{ro}/r.db-wal").stat().st_size == 0) == empty_wal
    return ro / "r.db"


def _read_only(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    """`paradnn <args>` with `folder` read-only to it."""
    cmd = [sys.executable, "-m", "paradnn", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if os.geteuid() != 0:  # the mode is enough for anyone but root
        folder.chmod(0o555)
        try:
            return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        finally:
            folder.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: no way to make a folder read-only to this process")
    quoted = " ".join(f"'{a}'" for a in cmd)
    script = f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && {quoted}"
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "mount:" in done.stderr and done.returncode != 0:
        pytest.skip(f"cannot mount read-only here: {done.stderr.strip()[:200]}")
    return done


@pytest.mark.parametrize("empty_wal", [False, True], ids=["results in the -wal", "empty -wal"])
def test_a_wal_copy_without_shm_on_a_read_only_folder_is_read_whole(tmp_path, empty_wal):
    db = _copy_without_shm(tmp_path, empty_wal=empty_wal)
    before = {p.name: p.read_bytes() for p in db.parent.iterdir()}
    done = _read_only(db.parent, ["results", "--db", str(db), "--format", "json"])
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert sorted(r["run_key"] for r in rows) == [f"k{i}" for i in range(ROWS)]
    warned = [ln for ln in done.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1, done.stderr
    if empty_wal:
        note = f"{db}: read as an immutable file (its folder cannot be written and it has no "
        assert note + "-shm file; its -wal is empty)" in warned[0], warned
    else:
        assert (
            f"{db}: read from a copy in a temporary folder" in warned[0]
            and "cannot be read in place" in warned[0]
        )
    assert {p.name: p.read_bytes() for p in db.parent.iterdir()} == before  # nothing made
    assert "Traceback" not in done.stderr


def test_without_the_note_sqlite_alone_cannot_read_it(tmp_path):
    """What the reader met before: SQLite's own read-only open of such a copy fails."""
    db = _copy_without_shm(tmp_path, empty_wal=False)
    code = (
        "import sqlite3, sys; c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
        "c.execute('SELECT COUNT(*) FROM runs')"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if os.geteuid() == 0:
        script = (
            f"mount --bind {db.parent} {db.parent} && mount -o remount,ro,bind {db.parent} && "
            f'{sys.executable} -c "{code}" {db}'
        )
        raw = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
            env=env,
            capture_output=True,
            text=True,
        )
    else:
        db.parent.chmod(0o555)
        try:
            raw = subprocess.run(
                [sys.executable, "-c", code, str(db)], capture_output=True, text=True
            )
        finally:
            db.parent.chmod(0o755)
    assert raw.returncode != 0 and "unable to open database file" in raw.stderr, raw.stderr
