"""A full disk, a quota, a file made read-only, mid-sweep (issue 46): one line naming the file,
the cause and what was kept, exit status 1; every result stored before is kept and the same
command resumes. Before: `error: database: cannot rollback - no transaction is active`.

Faked without privileges (SQLite's own page limit, `PRAGMA max_page_count`, fails a write with
the very error a full disk gives, SQLITE_FULL; the other causes with their SQLite codes), and
for real on a small tmpfs where this process may mount one (root, in a mount namespace of its
own: nothing outside the test sees it)."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from paradnn.errors import WorkFailed
from paradnn.records import RunRecord
from paradnn.store import db as store_db
from paradnn.store import open_store

from conftest import TINY, run_cli, write_sweep


def _record(key: str) -> RunRecord:
    return RunRecord.flat(
        run_key=key,
        family="fc",
        config={"layers": 4, "nodes": 16},
        precision="fp32",
        optimizer="rmsprop",
        device="cpu",
        status="ok",
        step_time_s=0.5,
        samples=[0.5] * 200,
        env={},
    )


def test_a_full_database_is_one_line_and_keeps_what_it_had(tmp_path):
    path = tmp_path / "r.db"
    with open_store(path) as store:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 1}")
        stored = 0
        with pytest.raises(WorkFailed) as e:
            for i in range(100):
                store.insert(_record(f"k{i}"))
                stored += 1
        words = str(e.value)
        assert words.startswith(f"{path}: the database reached its size limit (PRAGMA")
        assert "the result of fc fp32" in words and "could not be stored" in words
        assert f"every result stored before it is kept ({stored} runs in it)" in words
        assert words.endswith("run the same command again to resume")
        assert "\n" not in words
        store.conn.execute("PRAGMA max_page_count = 1000000")
        store.insert(_record("after"))  # the connection is usable: nothing is left half done
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == stored + 1
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    e = sqlite3.OperationalError(message)
    e.sqlite_errorcode = code
    return e


@pytest.mark.parametrize(
    ("message", "code", "words"),
    [
        ("database or disk is full", 13, "the disk is full ("),  # SQLITE_FULL
        ("attempt to write a readonly database", 8, "became read-only"),  # SQLITE_READONLY
        ("disk I/O error", 778, "refused a write (disk I/O error): over its quota"),  # IOERR_WRITE
    ],
)
def test_each_cause_is_named_with_the_file_and_what_was_kept(tmp_path, message, code, words):
    path = tmp_path / "r.db"
    with open_store(path) as store:
        store.insert(_record("a"))
        with pytest.raises(WorkFailed) as e, store.writing("the result of x"):
            raise _sqlite_error(message, code)
    text = str(e.value)
    assert text.startswith(f"{path}: ") and words in text, text
    assert "the result of x could not be stored" in text
    assert "every result stored before it is kept (1 run in it)" in text
    if code == 13:
        assert f"bytes free in {tmp_path}" in text


def test_any_other_database_error_goes_on_as_it_was(tmp_path):
    store = open_store(tmp_path / "r.db")
    with store, pytest.raises(sqlite3.OperationalError), store.writing("x"):
        raise _sqlite_error("no such table: nope", 1)


def test_a_failure_after_the_work_began_is_exit_1(capsys, monkeypatch, tmp_path):
    def full(*args, **kwargs):
        raise WorkFailed("r.db: the disk is full (0 bytes free in /x); …")

    from paradnn import api

    monkeypatch.setattr(api, "run", full)
    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    code, _, err = run_cli(capsys, "run", "--preset", str(sweep), "--db", str(tmp_path / "r.db"))
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 1 and errors == ["error: r.db: the disk is full (0 bytes free in /x); …"], err


@pytest.mark.slow
def test_a_sweep_whose_database_fills_up_stops_in_one_line_and_resumes(
    capsys, monkeypatch, tmp_path
):
    """The whole sweep, faked: the database may grow by a few pages only."""
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in range(4, 10)]
    sweep = write_sweep(tmp_path / "s.toml", runs)
    db = tmp_path / "r.db"
    opened = store_db._open_writer

    def small(path, *, create=False):
        conn = opened(path, create=create)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return conn

    monkeypatch.setattr(store_db, "_open_writer", small)
    cmd = ["run", "--preset", str(sweep), "--db", str(db), "--device", "cpu", "--threads", "1"]
    code, _, err = run_cli(capsys, *cmd, "--quiet")
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 1 and len(lines) == 1, err
    assert "size limit" in lines[0] and "run the same command again to resume" in lines[0]
    assert "Traceback" not in err and "cannot rollback" not in err
    kept = sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert 0 < kept < len(runs), err
    assert f"({kept} run{'s' if kept != 1 else ''} in it)" in lines[0]
    monkeypatch.setattr(store_db, "_open_writer", opened)  # space was freed
    code, _, err = run_cli(capsys, *cmd, "--quiet")
    assert code == 0, err
    rows = sqlite3.connect(db).execute("SELECT run_key, attempt FROM runs").fetchall()
    assert len(rows) == len(runs) == len({k for k, _ in rows})  # each once, nothing lost


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
    )  # fmt: skip
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _can_mount(), reason="needs root and unshare to mount a small tmpfs")
def test_a_sweep_on_a_filesystem_that_fills_up(tmp_path):
    """For real: a 300 KiB tmpfs fills during the sweep; the line names the disk; the
    filesystem grown (as if space were freed), the same command resumes and finishes."""
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in range(4, 16)]
    sweep = write_sweep(tmp_path / "s.toml", runs)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = mnt / "r.db"
    run = (
        f"{sys.executable} -m paradnn run --preset {sweep} --db {db} --device cpu "
        "--threads 1 --quiet"
    )
    script = (
        f"mount -t tmpfs -o size=300k tmpfs {mnt} || exit 99\n"
        f"{run} 2> {tmp_path}/first.err; echo $? > {tmp_path}/first.code\n"
        f"python3 -c \"import sqlite3; print(sqlite3.connect('{db}').execute("
        f"'SELECT COUNT(*) FROM runs').fetchone()[0])\" > {tmp_path}/kept\n"
        f"mount -o remount,size=20m {mnt}\n"
        f"{run} 2> {tmp_path}/second.err; echo $? > {tmp_path}/second.code\n"
        f"cp {db} {tmp_path}/final.db\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    first = (tmp_path / "first.err").read_text()
    errors = [ln for ln in first.splitlines() if ln.startswith("error:")]
    assert (tmp_path / "first.code").read_text().strip() == "1", first
    assert len(errors) == 1 and f"{db}: the disk is full (" in errors[0], first
    assert "run the same command again to resume" in errors[0]
    kept = int((tmp_path / "kept").read_text())
    assert kept < len(runs) and f"({kept} run" in errors[0], first
    assert (tmp_path / "second.code").read_text().strip() == "0", (
        tmp_path / "second.err"
    ).read_text()
    rows = sqlite3.connect(tmp_path / "final.db").execute("SELECT run_key FROM runs").fetchall()
    assert len(rows) == len(runs) == len(set(rows))


def test_a_report_that_cannot_be_written_keeps_the_last_one(capsys, monkeypatch, tmp_path):
    """The disk fills while the report is built: one line naming the file, exit 1, and the
    last report as it was (its bytes), with no half-built folder left."""
    from paradnn.report import writer

    import synth

    rows = [synth.row("fc", {**TINY["fc"], "nodes": n}, 0.1 + n / 100) for n in (4, 8, 16)]
    db = synth.write_db(tmp_path / "r.db", rows)
    out = tmp_path / "rep"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--out", str(out))
    assert code == 0, err
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real = writer.Writer.table

    def full(self, name, *args, **kwargs):
        if len(self.tables) >= 2:
            path = self.out / "tables" / f"{name}.csv"
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(writer.Writer, "table", full)
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--out", str(out))
    assert code == 1, err
    said = [x for x in err.strip().splitlines() if not x.startswith("report: section ")]
    assert len(said) == 1 and said[0].startswith("error: "), err  # after the build's progress
    assert "No space left on device: the report could not be written; the last report in" in err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (14, "cannot open as a SQLite database"),  # SQLITE_CANTOPEN
        (14 | 2 << 8, "cannot open as a SQLite database"),  # CANTOPEN_ISDIR: extended codes too
        (13, "the disk is full ("),  # SQLITE_FULL on opening: a write refused, nothing changed
        (778, "refused a write"),  # IOERR_WRITE
    ],
)
def test_a_database_that_cannot_be_opened_is_told_from_a_refused_write(tmp_path, code, words):
    """Opening: a file SQLite cannot open (any CANTOPEN, extended codes included) says so; a
    write refused while opening (a full disk) names its cause and that nothing was changed."""
    from paradnn.store import db

    text = str(db._sqlite_error(str(tmp_path / "r.db"), _sqlite_error("boom", code)))
    assert words in text, text
    assert text.endswith("nothing was changed") == ("cannot open" not in words), text
