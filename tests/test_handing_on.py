"""Values checked before another program sees them, and a refused command that creates
nothing (issue 46): a torch version for pip, an index URL, a database path for SQLite, a
`bench` refused by its worker; and a resumed sweep that says what it keeps."""

from __future__ import annotations

import sqlite3

import pytest

from paradnn.config import SweepSettings
from paradnn.runner import envs, resume
from paradnn.runner.supervisor import Supervisor

from conftest import TINY, TINY_POLICY, run_cli, write_sweep


class Installed(BaseException):
    """Raised where `versions` would build an environment (pip or uv would run)."""


@pytest.fixture
def no_install(monkeypatch):
    def stop(*args, **kwargs):
        raise Installed

    monkeypatch.setattr(envs, "env_dir", stop)  # the first step of building one


@pytest.mark.parametrize(
    ("torch", "shown"),
    [
        ("٣.١.٠", "'٣.١.٠'"),  # Arabic-Indic digits: \d would take them
        ("2.13.0\n", "'2.13.0\\n'"),  # a newline: stripped away before, handed on
        ("2.13.0\\n", "'2.13.0\\\\n'"),  # a backslash and an n, as a shell passes '...\n'
        ("2.13.0\t,2.11.0", "'2.13.0\\t'"),
        ("２.13.0", "'２.13.0'"),
    ],
)
def test_a_torch_version_that_is_not_one_is_refused_before_pip(
    capsys, tmp_path, no_install, torch, shown
):
    db = str(tmp_path / "v.db")
    code, _, err = run_cli(
        capsys, "versions", "--torch", torch, "--db", db, "--cache", str(tmp_path)
    )
    assert code == 2, err
    assert (
        err.startswith(f"error: --torch = {shown}: must be a release version")
        and len(err.strip().splitlines()) == 1
    ), err
    assert not (tmp_path / "v.db").exists()


@pytest.mark.parametrize(
    "url",
    ["not a url", "download.pytorch.org/whl/cpu", "https://", "ftp://x/y", "https://x/ y",
     "https://ｘ.org/", "https://x/\n", "http://[::1", "file://"],
)  # fmt: skip
def test_an_index_url_that_is_not_one_is_refused_before_pip(capsys, tmp_path, no_install, url):
    args = ["versions", "--torch", "2.13.0", "--index-url", url, "--db", str(tmp_path / "v.db")]
    code, _, err = run_cli(capsys, *args, "--cache", str(tmp_path))
    assert code == 2, err
    assert "--index-url = " in err and "must be a package index URL" in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "url", ["https://download.pytorch.org/whl/cpu", "http://localhost:8080/simple", "file:///w"]
)
def test_an_index_url_reaches_the_installer(capsys, tmp_path, no_install, url):
    args = ["versions", "--torch", "2.13.0", "--index-url", url, "--db", str(tmp_path / "v.db")]
    with pytest.raises(Installed):
        run_cli(capsys, *args, "--cache", str(tmp_path))


@pytest.mark.parametrize("name", ["r\n.db", "r.db\n", "r\x1b[31m.db", "r\u2028.db", "a\tb.db"])
@pytest.mark.parametrize("command", ["bench", "results", "run --dry-run"])
def test_a_database_path_with_a_control_character_is_refused(capsys, tmp_path, name, command):
    db = str(tmp_path / name)
    args = {
        "bench": ["bench", "fc", "--device", "cpu"],
        "results": ["results"],
        "run --dry-run": ["run", "--dry-run", "--device", "cpu"],
    }[command]
    code, _, err = run_cli(capsys, *args, "--db", db)
    assert code == 2, err
    assert "--db = " in err and "must be a plain file name" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_the_library_refuses_such_a_path_too(tmp_path):
    from paradnn.errors import ConfigError
    from paradnn.store import open_store

    with pytest.raises(ConfigError, match="plain file name"):
        open_store(tmp_path / "r\n.db")
    with pytest.raises(ConfigError, match="plain file name"):
        open_store(tmp_path / "r\n.db", readonly=True)
    assert list(tmp_path.iterdir()) == []
    open_store(tmp_path / "räksmörgås.db").close()  # non-ASCII letters are a plain name


@pytest.mark.slow
def test_a_bench_its_worker_refuses_creates_no_database(capsys, tmp_path):
    """`bench --device cuda:99` on a machine without that GPU: the worker refuses it; before,
    a new 94 KB database was left behind."""
    db = tmp_path / "sub" / "new.db"
    code, _, err = run_cli(capsys, "bench", "fc", "--device", "cuda:99", "--db", str(db))
    assert code == 2, err
    assert "cuda:99" in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []  # no database, no folder


# -- a resumed sweep -----------------------------------------------------------------------


def test_the_notes_name_what_changed_and_how_to_measure_again():
    now = {"timing": {"min_time_s": 1.0, "max_time_s": 10.0}, "energy": False, "profile": False}
    was = {"timing": {"min_time_s": 0.0, "max_time_s": 10.0}, "energy": False, "profile": False}
    assert resume.differences(was, now) == ["timing.min_time_s 0.0 → 1.0"]
    assert resume.differences(now, now) == [] and resume.differences(None, now) == []
    kept = [resume.Kept(f"fc fp32 nodes={n}", "quick", was) for n in range(5)]
    kept += [resume.Kept("fc fp32 nodes=9", "old-name", now)]
    kept += [resume.Kept("fc fp32 nodes=10", "quick", None)]
    notes = resume.kept_notes(kept, now, "quick")
    assert notes[0].startswith(
        "kept 5 stored configurations measured with other settings (timing.min_time_s 0.0 → "
        "1.0): fc fp32 nodes=0; fc fp32 nodes=1; fc fp32 nodes=2; and 2 more; "
        "--remeasure-changed measures them again"
    ), notes
    assert notes[1].startswith("kept 1 stored configuration of sweep 'old-name'"), notes
    assert "`paradnn results --sweep old-name`" in notes[1]
    assert notes[2].startswith("kept 1 stored configuration measured before paradnn recorded")
    assert resume.kept_notes([resume.Kept("x", "quick", now)], now, "quick") == []


@pytest.mark.slow
def test_a_resumed_sweep_says_what_it_keeps_and_remeasures_it_when_asked(capsys, tmp_path):
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in (4, 5, 6)]
    sweep = write_sweep(tmp_path / "s.toml", runs)
    db = str(tmp_path / "r.db")
    cmd = ["run", "--preset", str(sweep), "--db", db, "--device", "cpu", "--threads", "1"]
    code, _, err = run_cli(capsys, *cmd, "--progress", "jsonl")
    assert code == 0, err
    # the sweep file asks for a stricter timing: the stored configs are kept, and it says so
    write_sweep(tmp_path / "s.toml", runs, policy=TINY_POLICY.__class__(
        **{**vars(TINY_POLICY), "min_samples": 7}))  # fmt: skip
    code, _, err = run_cli(capsys, *cmd)
    assert code == 0, err
    assert "kept 3 stored configurations measured with other settings (timing.min_samples " \
        "5 → 7)" in " ".join(err.split()), err  # fmt: skip
    assert "--remeasure-changed" in err
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
    code, _, err = run_cli(capsys, *cmd, "--remeasure-changed")
    assert code == 0, err
    rows = sqlite3.connect(db).execute("SELECT run_key, attempt FROM runs").fetchall()
    assert sorted(a for _, a in rows) == [1, 1, 1, 2, 2, 2]  # each measured again, once
    code, _, err = run_cli(capsys, *cmd, "--remeasure-changed")  # now nothing differs
    assert code == 0 and "kept" not in err, err
    assert len(sqlite3.connect(db).execute("SELECT * FROM runs").fetchall()) == 6


def test_a_renamed_sweep_says_where_its_results_are(store):
    from paradnn.config import RunOptions, RunSpec
    from paradnn.runner.supervisor import Memory

    options = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)
    env = {"device": "cpu", "fingerprint": "f", "threads": 1, "cpu_model": "X"}
    specs = [RunSpec("fc", {**TINY["fc"], "nodes": n}, options) for n in (4, 5)]
    first = Supervisor(store, options, SweepSettings(), sweep="before")
    units, _ = first.plan(specs, env, Memory(None, "cpu", "host memory"))
    for u in units:
        store.insert(u.record.replace(finished_at="now"))
    renamed = Supervisor(store, options, SweepSettings(), sweep="after")
    units, skipped = renamed.plan(specs, env, Memory(None, "cpu", "host memory"))
    assert (units, skipped) == ([], 2)
    assert any("kept 2 stored configurations of sweep 'before'" in n for n in renamed.notes)
