"""Hostile databases and output paths (issue 32), over every command that takes --db or writes a
file: a missing, empty, foreign, damaged, read-only or future database, one with a dropped table
or malformed rows, a folder where a file belongs, a path under a regular file, a folder that
cannot be written. The answer is a result or one line naming the file, exit 2 before any work
(exit 1 only for a failure during it); never a traceback. A database a command refuses or only
reads keeps every byte, and gains no -wal/-shm file.

Commands that measure (bench, run, scale, calibrate, ops, versions) never measure here: where
they would start working, a sentinel stops them (`Started`) and the case says so."""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradnn.store.schema import LATEST

import synth
from conftest import run_cli, write_sweep


class Started(BaseException):
    """Raised where a command would start measuring or installing (a BaseException: the CLI's
    error boundary turns every Exception into one line, this one reaches the test)."""


@pytest.fixture(autouse=True)
def _never_measure(monkeypatch):
    def stop(*args, **kwargs):
        raise Started

    monkeypatch.setattr("paradnn.runner.supervisor.Supervisor.__init__", stop)
    monkeypatch.setattr("paradnn.runner.kernels.calibrate", stop)
    monkeypatch.setattr("paradnn.runner.kernels.host_profile", stop)
    monkeypatch.setattr("paradnn.runner.kernels.ops", stop)
    monkeypatch.setattr("paradnn.runner.envs.env_dir", stop)
    # The report reads every database the same way whatever it draws: its first section only
    # keeps the matrix fast (the figures are tests/test_report.py's).
    report_build = importlib.import_module("paradnn.report.build")  # the package's `build`
    # is the function of the same name
    monkeypatch.setattr(report_build, "SECTIONS", report_build.SECTIONS[:1])


# -- the databases -------------------------------------------------------------------------

CFGS = [{"layers": 1, "nodes": 16, "input": 8, "output": 4, "batch": 4}]
CFGS += [{**CFGS[0], "nodes": n} for n in (32, 64, 128, 256, 512)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> dict[str, bytes]:
    """The bytes of a good database (fp32 and bf16 runs of six fc configs, a ceiling, an op),
    and of the same with four malformed rows and a ceiling with text that is not UTF-8."""
    where = tmp_path_factory.mktemp("pristine")
    rows = [
        synth.row("fc", c, 0.1 + 0.01 * i, precision=p, platform="SynthCPU")
        for p in ("fp32", "bf16")
        for i, c in enumerate(CFGS)
    ]
    ceiling = {
        "device": "cpu",
        "device_name": "SynthCPU",
        "fingerprint": "f",
        "kind": "matmul",
        "precision": "fp32",
        "value": 1e12,
        "unit": "FLOP/s",
        "measured_at": "2026-01-01T00:00:00",
    }
    good = synth.write_db(where / "good.db", rows, [ceiling], [synth.op_row("matmul-64", 10, 1)])
    conn = sqlite3.connect(good)
    conn.execute(  # a host profile of another host: read, and set aside by `simulate step`
        "INSERT INTO host_profile (device, device_type, device_name, hostname, fingerprint, "
        "forward_op_s, autograd_node_s, optimizer_loop_s, optimizer_step_s, sync_s, detail, "
        "measured_at) VALUES ('cpu', 'cpu', 'SynthCPU', 'synth-host', 'f', 9e-6, 7e-6, 3e-5, "
        "2e-5, 0.0, '{}', '2026-01-01T00:00:00')"
    )
    conn.commit()
    conn.close()
    bad = where / "bad.db"
    shutil.copy(good, bad)
    conn = sqlite3.connect(bad)
    cols = "run_key, family, config, precision, optimizer, mode, device, status, step_time_s"
    for key, config, step in (
        ("bad-json", "{not json", 0.01),
        ("bad-list", "[]", 0.01),
        ("bad-step", '{"layers": 1}', "fast"),
    ):
        conn.execute(
            f"INSERT INTO runs ({cols}) VALUES (?, 'fc', ?, 'fp32', 'rmsprop', 'eager', 'cpu', "
            "'ok', ?)",
            (key, config, step),
        )
    conn.execute(  # bytes that are not UTF-8 in a text column: sqlite3 alone would raise
        f"INSERT INTO runs ({cols}) VALUES ('bad-text', CAST(x'66ff63' AS TEXT), "
        """'{"layers": 1}', 'fp32', 'rmsprop', 'eager', 'cpu', 'ok', 0.01)"""
    )
    conn.execute("UPDATE ceilings SET device_name = CAST(x'53ff' AS TEXT)")
    conn.execute("UPDATE host_profile SET detail = '{not json'")
    conn.commit()
    conn.close()
    return {"good": Path(good).read_bytes(), "malformed": bad.read_bytes()}


@pytest.fixture
def good_bytes(pristine):
    """The good database's bytes behind a call (Hypothesis would print them in a failure)."""
    return lambda: pristine["good"]


def _read_only(path: Path, monkeypatch) -> None:
    """Take write permission away; root may write anyway, so its os.access is told too."""
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH | (stat.S_IXUSR if path.is_dir() else 0))
    if os.geteuid() == 0:
        real = os.access
        denied = str(path)
        monkeypatch.setattr(
            os,
            "access",
            lambda p, mode, *a, **k: (
                False if str(p) == denied and mode & os.W_OK else real(p, mode, *a, **k)
            ),
        )


def _make_db(case: str, tmp: Path, pristine: dict[str, bytes], monkeypatch) -> Path:
    """The database path of `case` (created as the case says)."""
    db = tmp / "r.db"
    good = pristine["good"]
    if case == "missing":
        return db
    if case == "empty":
        db.write_bytes(b"")
    elif case == "empty sqlite":  # a SQLite file whose only table was dropped: no tables
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")
        conn.close()
        assert db.stat().st_size > 0
    elif case == "foreign":
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        conn.commit()
        conn.close()
    elif case == "not sqlite":
        db.write_text("this is my thesis, not a database\n" * 200)
    elif case == "truncated":
        db.write_bytes(good[: len(good) // 2 + 100])
    elif case == "future":
        db.write_bytes(good)
        conn = sqlite3.connect(db)
        conn.execute(f"PRAGMA user_version = {LATEST + 1}")
        conn.close()
    elif case == "no runs table":
        db.write_bytes(good)
        conn = sqlite3.connect(db)
        conn.execute("DROP TABLE runs")
        conn.close()
    elif case == "schema not UTF-8":  # SQLite's own error message then holds the bad byte
        db.write_bytes(good)
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = CAST(CAST(sql AS BLOB) || x'ff' AS TEXT) "
            "WHERE name = 'ops'"
        )
        conn.commit()
        conn.close()
    elif case == "malformed rows":
        db.write_bytes(pristine["malformed"])
    elif case == "read-only file":
        db.write_bytes(good)
        _read_only(db, monkeypatch)
    elif case == "read-only folder":
        folder = tmp / "locked"
        folder.mkdir()
        db = folder / "r.db"
        db.write_bytes(good)
        _read_only(folder, monkeypatch)
    elif case == "folder":
        db.mkdir()
    elif case == "under a file":
        (tmp / "plain").write_text("a file\n")
        return tmp / "plain" / "r.db"
    for sibling in ("-wal", "-shm"):  # every case starts clean: what appears, a command made
        assert not Path(f"{db}{sibling}").exists()
    return db


def _state(db: Path) -> dict[str, str | None]:
    """sha256 of the database and its -wal/-shm siblings (None: absent; 'dir': a folder)."""

    def digest(p: Path) -> str | None:
        if p.is_dir():
            return "dir:" + ",".join(sorted(x.name for x in p.iterdir()))
        if not p.is_file():
            return None
        return hashlib.sha256(p.read_bytes()).hexdigest()

    return {s: digest(Path(f"{db}{s}")) for s in ("", "-wal", "-shm")}


# -- the commands ------------------------------------------------------------------------

READERS = {
    "results": lambda db, tmp: ["results", "--db", db],
    "results --format json": lambda db, tmp: ["results", "--db", db, "-f", "json"],
    "results --table ceilings": lambda db, tmp: ["results", "--db", db, "--table", "ceilings"],
    "results --table host_profile": lambda db, tmp: [
        *("results", "--db", db, "--table", "host_profile"),
    ],
    "simulate step --db": lambda db, tmp: [
        *("simulate", "step", "fc", "layers=1", "--platform", "h100-sxm", "--db", db),
    ],
    "report": lambda db, tmp: ["report", "--db", db, "--out", str(tmp / "rep")],
    "compare": lambda db, tmp: [
        *("compare", "--db", db, "--by", "precision", "--a", "fp32", "--b", "bf16"),
    ],
    "simulate validate": lambda db, tmp: ["simulate", "validate", "--db", db],
    "simulate fit": lambda db, tmp: ["simulate", "fit", "--db", db, "--platform", "tpu-v3"],
    "run --dry-run": lambda db, tmp: [
        *("run", "--dry-run", "--preset", str(tmp / "s.toml"), "--db", db, "--device", "cpu"),
    ],
    "doctor": lambda db, tmp: ["doctor", "--db", db, "--device", "cpu", "--no-checks"],
}
WRITERS = {
    "bench": lambda db, tmp: ["bench", "fc", "layers=1", "--db", db, "--device", "cpu"],
    "run": lambda db, tmp: ["run", "--preset", str(tmp / "s.toml"), "--db", db, "--device", "cpu"],
    "scale": lambda db, tmp: ["scale", "fc", "--procs", "1", "--db", db, "--device", "cpu"],
    "calibrate": lambda db, tmp: ["calibrate", "--db", db, "--device", "cpu", "-p", "fp32"],
    "calibrate --host-only": lambda db, tmp: [
        *("calibrate", "--host-only", "--db", db, "--device", "cpu"),
    ],
    "ops": lambda db, tmp: ["ops", "--db", db, "--device", "cpu"],
    "versions": lambda db, tmp: [
        *("versions", "--torch", "2.13.0", "--db", db, "--cache", str(tmp / "envs")),
    ],
}
CASES = [
    "missing",
    "empty",
    "empty sqlite",
    "foreign",
    "not sqlite",
    "truncated",
    "future",
    "no runs table",
    "schema not UTF-8",
    "malformed rows",
    "read-only file",
    "read-only folder",
    "folder",
    "under a file",
]
HOST_READERS = ("results --table host_profile", "simulate step --db")
CEILINGS_ONLY = ("results --table ceilings", "doctor")  # read the ceilings table alone
EMPTY = ("empty", "empty sqlite")  # nothing to lose: a writer adopts it, a reader refuses it
REFUSED_BY = {  # what each case's one line says (beside the path): one of these
    "missing": ("no such database",),
    "empty": ("empty file (0 bytes)",),
    "empty sqlite": ("an empty SQLite database",),
    "foreign": ("not a paradnn database",),
    "not sqlite": ("cannot open as a SQLite database: file is not a database",),
    "truncated": ("damaged database", "database disk image is malformed"),
    "future": ("written by a newer paradnn",),
    "no runs table": ("without the table runs",),
    "schema not UTF-8": ("its schema is not UTF-8 text",),
    "read-only file": ("the database is read-only",),
    "read-only folder": ("is read-only",),
    "folder": ("is a folder",),
    "under a file": ("plain is a file, not a folder", "no such database"),
}


def _expect(command: str, case: str) -> str:
    """'read' (the same answer as on the good database), 'started' (a writer got as far as its
    work) or 'refused' (exit 2, one line, nothing changed)."""
    if command in WRITERS:
        return "started" if case in ("missing", *EMPTY, "malformed rows") else "refused"
    if command == "run --dry-run":  # plans what `run` would do: adopts what run adopts,
        # reads a read-only database
        usable = ("missing", *EMPTY, "malformed rows", "read-only file", "read-only folder")
        return "read" if case in usable else "refused"
    return "read" if case in ("malformed rows", "read-only file", "read-only folder") else "refused"


def _cli(capsys, args):
    try:
        code, out, err = run_cli(capsys, *args)
    except Started:
        capsys.readouterr()
        return "started", None, "", ""
    return "answered", code, out, err


def _one_line(err: str, *needles: str) -> None:
    assert "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], (n, err)


@pytest.fixture
def tmp(tmp_path):
    write_sweep(tmp_path / "s.toml", [("fc", CFGS[0])])
    return tmp_path


_BASELINE: dict[str, tuple[int, str]] = {}


def _baseline(capsys, command: str, tmp: Path, pristine) -> tuple[int, str]:
    """A reader's answer on the good database (the answer a readable hostile one must give)."""
    if command not in _BASELINE:
        db = tmp / "base" / "good.db"
        db.parent.mkdir()
        db.write_bytes(pristine["good"])
        kind, code, _, err = _cli(capsys, READERS[command](str(db), tmp / "base"))
        assert kind == "answered" and "Traceback" not in err, err
        _BASELINE[command] = (code, err)
    return _BASELINE[command]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", [*READERS, *WRITERS])
def test_a_hostile_database(capsys, monkeypatch, tmp, pristine, command, case):
    db = _make_db(case, tmp, pristine, monkeypatch)
    before = _state(db)
    build = READERS.get(command) or WRITERS[command]
    kind, code, _, err = _cli(capsys, build(str(db), tmp))
    expect = _expect(command, case)
    if expect == "started":
        assert kind == "started", (code, err)
        return  # a writer at work on a database it may use: its changes are its job
    assert kind == "answered", f"{command} started work on a {case} database"
    assert "Traceback" not in err, err
    assert _state(db) == before, f"{command} changed a {case} database it " + (
        "only reads" if expect == "read" else "refused"
    )
    if expect == "refused":
        assert code == 2, err
        _one_line(err, str(db))
        assert any(words in err for words in REFUSED_BY[case]), err
        return
    if command == "run --dry-run":
        assert code == 0, err
        return
    base_code, _ = _baseline(capsys, command, tmp, pristine)
    assert code == base_code, err
    if code != 0:
        _one_line(err)
    if case == "malformed rows" and command in HOST_READERS:  # a bad host profile row: skipped
        warned = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        assert len(warned) == 1 and "host_profile row 1: its detail" in warned[0], err
        return
    if case == "malformed rows" and command not in CEILINGS_ONLY:
        warned = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        skipped = [ln for ln in warned if " skipped run " in ln]
        assert len(skipped) == 4, err
        others = [ln for ln in warned if ln not in skipped]  # commands that read the ceiling
        # and the runs' host profiles: validate, and the report's data (compare reads it too)
        hosts = command.startswith("simulate validate") or command in ("report", "compare")
        assert all(
            "ceilings row 1: its device_name 'S\ufffd' is not valid UTF-8" in ln
            or (hosts and "host_profile row 1: its detail" in ln)
            for ln in others
        ), err
        assert "its config '{not json' is not valid JSON" in skipped[0]
        assert "its config '[]' is not an object" in skipped[1]
        assert "its step_time_s 'fast' is not a number" in skipped[2]
        assert "its family 'f\ufffdc' is not valid UTF-8 text" in skipped[3]
        assert all(f"{db}: skipped run " in ln for ln in skipped)
    if case == "malformed rows" and command in CEILINGS_ONLY:
        skipped = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        assert len(skipped) == 1 and "device_name 'S\ufffd' is not valid UTF-8" in skipped[0], err


def test_the_report_names_the_rows_it_skipped(capsys, tmp, pristine, monkeypatch):
    db = _make_db("malformed rows", tmp, pristine, monkeypatch)
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--out", str(tmp / "rep"))
    assert code == 0, err
    html = (tmp / "rep" / "report.html").read_text()
    # 4 runs, the ceilings row and the host profile row (the prediction section reads it)
    assert "6 stored rows could not be read and are left out" in html
    assert "step_time_s" in html


def test_a_read_only_snapshot_sees_a_running_writer(tmp_path, pristine):
    """A sweep holding the database open (its -wal exists): a reader sees its newest rows."""
    from paradnn.store import open_store

    db = tmp_path / "live.db"
    db.write_bytes(pristine["good"])
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("UPDATE runs SET sweep = 'live' WHERE id = 1")
    assert Path(f"{db}-wal").exists()
    with open_store(db, readonly=True) as store:
        assert store.runs(sweep="live")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.conn.execute("DELETE FROM runs")
    writer.close()


def test_an_older_schema_is_read_without_migrating_the_file(tmp_path):
    from paradnn.store import open_store
    from paradnn.store.schema import MIGRATIONS

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0] + "\nPRAGMA user_version = 1;")
    conn.close()
    before = _state(db)
    with open_store(db, readonly=True) as store:
        assert store.runs() == [] and store.rows("ceilings") == []  # v3's tables, in the copy
    assert _state(db) == before


def test_debug_shows_the_traceback(capsys, tmp_path):
    code, _, err = run_cli(capsys, "results", "--db", str(tmp_path / "none.db"))
    assert code == 2 and "Traceback" not in err
    from paradnn.errors import StoreError

    with pytest.raises(StoreError, match="no such database"):
        run_cli(capsys, "--debug", "results", "--db", str(tmp_path / "none.db"))


def test_an_unexpected_error_is_one_line_and_exit_1(capsys, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "r.csv"))

    monkeypatch.setattr("paradnn.api.simulate_precision_study", broken)
    code, _, err = run_cli(capsys, "simulate", "precision-study")
    assert code == 1
    _one_line(err, "r.csv: No space left on device")

    def bug(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr("paradnn.api.simulate_precision_study", bug)
    code, _, err = run_cli(capsys, "simulate", "precision-study")
    assert code == 1
    _one_line(err, "KeyError", "--debug")


# -- output paths ------------------------------------------------------------------------

FILE_OUTPUTS = {
    "simulate step --csv": lambda p, db: [
        *("simulate", "step", "fc", "--platform", "tpu-v3", "--csv", p),
    ],
    "simulate scaling --csv": lambda p, db: [
        *("simulate", "scaling", "fc", "--platform", "tpu-v3", "--max-chips", "4", "--csv", p),
    ],
    "simulate mxu-study --csv": lambda p, db: ["simulate", "mxu-study", "--csv", p],
    "simulate precision-study --csv": lambda p, db: ["simulate", "precision-study", "--csv", p],
    "simulate validate --csv": lambda p, db: ["simulate", "validate", "--db", db, "--csv", p],
    "simulate fit --out": lambda p, db: [
        *("simulate", "fit", "--db", db, "--platform", "tpu-v3", "--out", p),
    ],
}
FOLDER_OUTPUTS = {
    "report --out": lambda p, db: ["report", "--db", db, "--out", p],
    "versions --cache": lambda p, db: ["versions", "--torch", "2.13.0", "--db", db, "--cache", p],
}
PATH_CASES = ["empty", "folder", "under a file", "no such folder", "read-only folder", "file"]


def _make_output(case: str, tmp: Path, monkeypatch, suffix: str) -> str:
    out = tmp / "out" / f"x{suffix}"
    out.parent.mkdir()
    if case == "empty":
        return ""
    if case == "folder":
        out.mkdir()
    elif case == "under a file":
        (tmp / "out" / "plain").write_text("a file\n")
        return str(tmp / "out" / "plain" / f"x{suffix}")
    elif case == "no such folder":
        return str(tmp / "out" / "nowhere" / f"x{suffix}")
    elif case == "read-only folder":
        _read_only(out.parent, monkeypatch)
    elif case == "file":
        out.write_text("mine\n")
        _read_only(out, monkeypatch)  # a file: read-only (a file option), or not a folder
    return str(out)


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


# A folder option takes an existing folder and creates missing parents (--out a/b/c): those two
# cases are not refusals for it.
OUTPUT_CASES = [(c, k) for c in FILE_OUTPUTS for k in PATH_CASES] + [
    (c, k) for c in FOLDER_OUTPUTS for k in PATH_CASES if k not in ("folder", "no such folder")
]


@pytest.mark.parametrize(("command", "case"), OUTPUT_CASES)
def test_an_output_path_that_cannot_be_written(capsys, monkeypatch, tmp, pristine, command, case):
    db = tmp / "r.db"
    db.write_bytes(pristine["good"])
    build = FILE_OUTPUTS.get(command) or FOLDER_OUTPUTS[command]
    suffix = ".csv" if command in FILE_OUTPUTS else ""
    suffix = ".toml" if command.endswith("fit --out") else suffix
    path = _make_output(case, tmp, monkeypatch, suffix)
    before = _tree(tmp)
    kind, code, _, err = _cli(capsys, build(path, str(db)))
    assert kind == "answered", f"{command} started work with an unwritable {case}"
    assert code == 2, err
    option = command.split()[-1]
    _one_line(err, option, path)
    assert _tree(tmp) == before, "a refused command wrote something"


def test_versions_refuses_a_database_it_could_not_store_into(capsys, tmp, pristine, monkeypatch):
    db = _make_db("read-only file", tmp, pristine, monkeypatch)
    kind, code, _, err = _cli(
        capsys, ["versions", "--torch", "2.13.0", "--db", str(db), "--cache", str(tmp / "e")]
    )
    assert kind == "answered" and code == 2
    _one_line(err, str(db), "read-only")
    assert not (tmp / "e").exists()


def test_an_empty_db_path_is_refused(capsys, tmp):
    for args in (["bench", "fc", "--db", ""], ["results", "--db", ""], ["calibrate", "--db", ""]):
        kind, code, _, err = _cli(capsys, args)
        assert kind == "answered" and code == 2, (args, err)
        _one_line(err, "--db")


# -- damaged bytes, drawn ------------------------------------------------------------------


@settings(
    max_examples=20,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    how=st.sampled_from(["cut", "flip", "splice"]),
    command=st.sampled_from(["results", "compare", "simulate validate"]),
)
def test_damaged_bytes_are_read_or_refused_never_changed(
    capsys, tmp_path, good_bytes, data, how, command
):
    """Any damage to a good database's bytes: the reader answers (skipping what it cannot
    read) or refuses in one line; it never tracebacks and never changes the file."""
    good = good_bytes()
    if how == "cut":
        body = good[: data.draw(st.integers(0, len(good) - 1), label="length")]
    elif how == "flip":
        at = data.draw(st.lists(st.integers(0, len(good) - 1), min_size=1, max_size=8), label="at")
        body = bytearray(good)
        for i in at:
            body[i] ^= 0xFF
        body = bytes(body)
    else:
        at = data.draw(st.integers(0, len(good)), label="at")
        body = good[:at] + data.draw(st.binary(min_size=1, max_size=64), label="junk") + good[at:]
    db = tmp_path / f"fuzz-{how}.db"
    db.write_bytes(body)
    before = _state(db)
    kind, code, _, err = _cli(capsys, READERS[command](str(db), tmp_path))
    assert kind == "answered" and "Traceback" not in err, err
    assert code in (0, 2), err
    if code == 2:
        _one_line(err, str(db))
    assert _state(db) == before
    db.unlink()


def test_a_flipped_byte_anywhere_is_read_or_refused(capsys, tmp_path, pristine):
    """A byte flipped in each page of the file (header, cell pointers, cells): the draws above
    found damage that only the integrity check or the migration saw (it ended in exit 1)."""
    good = pristine["good"]
    db = tmp_path / "flip.db"
    page = 4096  # SQLite's default: a b-tree page header, its cell pointers, middle, end
    for at in sorted({p + d for p in range(0, len(good), page) for d in (3, 107, 2047, 4091)}):
        body = bytearray(good)
        body[at] ^= 0xFF
        db.write_bytes(bytes(body))
        before = _state(db)
        kind, code, _, err = _cli(capsys, ["results", "--db", str(db)])
        assert kind == "answered" and "Traceback" not in err, (at, err)
        assert code in (0, 2), (at, err)
        assert _state(db) == before, at
