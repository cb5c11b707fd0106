"""A report replaces the last one whole (issue 46): a rebuild leaves no stale file (before: 49
files where a fresh folder got 27), a build killed part-way leaves the last good report as it
was (before: new CSV tables beside the old HTML), and what else the folder holds is the
user's and stays."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paradnn.report import publish

import synth
from conftest import TINY, run_cli


def _files(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def _db(path: Path, nodes=(4, 8, 16)) -> str:
    rows = [synth.row("fc", {**TINY["fc"], "nodes": n}, 0.1 + n / 100) for n in nodes]
    return synth.write_db(path, rows)


@pytest.fixture
def few_sections(monkeypatch):
    import importlib

    build = importlib.import_module("paradnn.report.build")
    monkeypatch.setattr(build, "SECTIONS", build.SECTIONS[:3])


def test_a_rebuild_leaves_no_stale_file_and_keeps_the_users(capsys, tmp_path, few_sections):
    db, out = _db(tmp_path / "r.db"), tmp_path / "rep"
    code, _, err = run_cli(capsys, "report", "--db", db, "--out", str(out))
    assert code == 0, err
    fresh = _files(out)
    # what an earlier build of another database left, and a file of the user's
    (out / "figures" / "old-figure.png").write_bytes(b"old")
    (out / "tables" / "old-table.csv").write_text("old\n")
    (out / "notes.txt").write_text("mine\n")
    code, _, err = run_cli(capsys, "report", "--db", db, "--out", str(out))
    assert code == 0, err
    after = _files(out)
    assert set(after) == set(fresh) | {"notes.txt"}, sorted(set(after) ^ set(fresh))
    assert (out / "notes.txt").read_text() == "mine\n"
    assert [p.name for p in out.iterdir() if p.name.startswith(publish.STAGING)] == []


def test_a_build_that_fails_leaves_the_last_report_as_it_was(capsys, monkeypatch, tmp_path):
    db, out = _db(tmp_path / "r.db"), tmp_path / "rep"
    code, _, err = run_cli(capsys, "report", "--db", db, "--out", str(out))
    assert code == 0, err
    before = _files(out)
    import importlib

    build = importlib.import_module("paradnn.report.build")  # the package's `build` is a function

    def broken(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C in the middle: its tables are written, the HTML not

    monkeypatch.setattr(build, "_render", broken)
    code, _, err = run_cli(capsys, "report", "--db", _db(tmp_path / "s.db", (5, 6)), "--out",
                           str(out))  # fmt: skip
    assert code == 130, err
    assert _files(out) == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


@pytest.mark.slow
def test_a_build_killed_mid_way_leaves_the_last_report_whole(capsys, tmp_path):
    """kill -9 while the new report is half written: the folder holds the last report, byte
    for byte; the next build removes what the killed one left and publishes whole."""
    db, out = _db(tmp_path / "r.db"), tmp_path / "rep"
    code, _, err = run_cli(capsys, "report", "--db", db, "--out", str(out))
    assert code == 0, err
    before = _files(out)
    other = _db(tmp_path / "s.db", (5, 6, 7, 9))
    cmd = [sys.executable, "-m", "paradnn", "report", "--db", other, "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    staged: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        staged = [p for p in out.glob(f"{publish.STAGING}*") if any(p.rglob("*.csv"))]
        if staged:
            break
        time.sleep(0.01)
    assert staged, f"never saw the build in progress: {proc.communicate()[1][-2000:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert {k: v for k, v in _files(out).items() if not k.startswith(".")} == before
    code, _, err = run_cli(capsys, "report", "--db", other, "--out", str(out))
    assert code == 0, err
    assert not any(p.name.startswith(publish.STAGING) for p in out.iterdir())
    fresh = tmp_path / "fresh"
    code, _, err = run_cli(capsys, "report", "--db", other, "--out", str(fresh))
    assert code == 0, err
    assert sorted(_files(out)) == sorted(_files(fresh))


def test_publish_exchanges_each_part_and_drops_parts_the_new_report_lacks(tmp_path):
    out, stage = tmp_path / "out", tmp_path / "out" / ".stage"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "a.png").write_text("old a")
    (out / "tables").mkdir()
    (out / "tables" / "t.csv").write_text("old t")
    (out / "report.html").write_text("old")
    (stage / "figures").mkdir(parents=True)
    (stage / "figures" / "b.png").write_text("new b")
    (stage / "report.html").write_text("new")
    publish.publish(stage, out)
    assert _files(out).keys() == {"figures/b.png", "report.html"}
    assert (out / "report.html").read_text() == "new" and not stage.exists()
