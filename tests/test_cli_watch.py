"""Watching a sweep (issue 37): `paradnn run`'s live view shows the latest results over the bar
and its ETA, fed by the supervisor's events (plain lines when not a terminal); `report --watch`
builds the report again when a database changes and the page reloads itself. No test sleeps:
the loop's sleep and the database state are the test's."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from paradnn.cli.progress import LIVE_ROWS, BarReporter, ProgressMode
from paradnn.records import RunRecord
from paradnn.report import watch as W
from paradnn.runner.supervisor import Event

import synth
from conftest import run_cli


def _record(mode: str, batch: int) -> RunRecord:
    r = synth.row("fc", {"layers": 2, "nodes": 64, "batch": batch}, 0.1, mode=mode)
    r.pop("torch_version"), r.pop("hostname")
    return RunRecord.flat(**r)


def _stream(n: int) -> list[Event]:
    """What the supervisor sends for n runs: start, then a result each, the ETA shrinking."""
    events = [Event("start", 0, n, {}, eta_s=60.0 * n)]
    for i in range(n):
        rec = _record("eager" if i % 2 else "compile", 8 * (i + 1))
        events.append(Event("result", i + 1, n, {"ok": i + 1}, record=rec, eta_s=60.0 * (n - i)))
    return events


def _view(reporter: BarReporter) -> str:
    console = Console(record=True, width=160, file=io.StringIO())
    for part in reporter.bar.get_renderables():
        console.print(part)
    return console.export_text()


def test_the_live_view_shows_the_latest_results_and_the_eta():
    terminal = Console(file=io.StringIO(), force_terminal=True, width=160)
    reporter = BarReporter(ProgressMode.bar, console=terminal)
    events = _stream(LIVE_ROWS + 2)
    with reporter:
        for e in events[:4]:
            reporter(e)
        text = _view(reporter)
        assert "latest 3 of 3 results" in text and "ETA" in text and "3/10" in text
        assert "mode" in text and "compile" in text and "eager" in text  # what differs
        assert "2x64 b24 " in text and " b32 " not in text
        for e in events[4:]:
            reporter(e)
        text = _view(reporter)
    assert f"latest {LIVE_ROWS} of 10 results" in text and "10/10" in text
    assert " b80 " in text and " b16 " not in text  # the oldest ones scrolled out


def test_no_live_view_before_a_result_and_plain_lines_off_a_terminal(capsys):
    terminal = Console(file=io.StringIO(), force_terminal=True, width=160)
    reporter = BarReporter(ProgressMode.bar, console=terminal)
    reporter(Event("start", 0, 2, {}, eta_s=120.0))
    assert reporter.latest_table() is None and "ETA 2m" in _view(reporter).replace(" 0s", "")
    log = Console(file=io.StringIO(), force_terminal=False)
    plain = BarReporter(ProgressMode.bar, console=log)
    for e in _stream(2):
        plain(e)
    err = capsys.readouterr().err
    assert "[1/2] fc fp32" in err and "[2/2]" in err and "ms/step" in err


class FakeDb:
    """A database state the test changes by hand; the loop's sleep ticks it."""

    def __init__(self, changes_at: set[int]):
        self.tick, self.version, self.changes_at = 0, 0, changes_at

    def state(self, paths):
        return (("db", self.version, 0),)

    def sleep(self, seconds):
        assert seconds == 5.0
        self.tick += 1
        if self.tick in self.changes_at:
            self.version += 1


def test_watch_builds_again_only_after_a_change_and_the_page_reloads_only_then(tmp_path):
    html = tmp_path / "report.html"
    pages, latest = [], []

    def build() -> Path:
        html.write_text("<html>\n<head>\n<title>r</title>\n</head><body>b</body></html>\n")
        return html

    def built(path, n):
        pages.append(path.read_text())
        latest.append((path.parent / W.SIDECAR).read_text())

    db = FakeDb(changes_at={2, 3})
    W.watch(build, ["x.db"], 5.0, on_build=built, sleep=db.sleep, state=db.state, rounds=6)
    assert len(pages) == 3  # the first build, then one after each of the two changes
    mine = [re.search(r'const mine = "([^"]+)"', p).group(1) for p in pages]
    assert len(set(mine)) == 3  # each build names itself ...
    assert latest == [f'window.paradnnBuild = "{m}";\n' for m in mine]  # ... and the sidecar it
    for p in pages:  # one script, in the head; it reloads only on another build, no meta refresh
        assert p.count("data-paradnn-watch") == 1 and p.index("<script") > p.index("<head>")
        assert "5000" in p and "window.paradnnBuild !== mine" in p and "refresh" not in p
    assert "data-paradnn-watch" not in html.read_text()  # watching stopped: a plain page again
    assert not (tmp_path / W.SIDECAR).exists()


def test_ctrl_c_stops_the_watch_cleanly(tmp_path, capsys, monkeypatch):
    from paradnn import api
    from paradnn.report import watch as module

    html = tmp_path / "r" / "report.html"
    html.parent.mkdir()

    class Built:
        def __init__(self):
            html.write_text("<html><head></head><body></body></html>")
            self.html = html

    monkeypatch.setattr(api, "report", lambda *a, **kw: Built())

    def interrupt(seconds):
        raise KeyboardInterrupt

    real = module.watch
    monkeypatch.setattr(module, "watch", lambda *a, **kw: real(*a, **kw, sleep=interrupt))
    code, out, err = run_cli(capsys, "report", "--db", "x.db", "--watch", "2")
    assert code == 0, err
    assert "report 1:" in out and "Stopped watching" in out
    assert "data-paradnn-watch" not in html.read_text()


def test_the_real_state_sees_a_stored_run_and_not_a_read(tmp_path):
    from paradnn import analysis as A

    db = synth.write_db(tmp_path / "w.db", [synth.row("fc", {"batch": 8}, 0.1)])
    versions = W.Versions()
    try:
        before = versions([db])
        A.load([db])  # the report's own read closes the WAL: its size and mtime move, not data
        assert versions([db]) == before
        synth.write_db(db, [synth.row("fc", {"batch": 16}, 0.1)])
        after = versions([db])
        assert after != before and versions([db]) == after
        assert versions([str(tmp_path / "none.db")]) == ()
        junk = tmp_path / "junk.db"  # not SQLite: its size and mtime stand in
        junk.write_bytes(b"x" * 200)
        assert versions([str(junk)])[0][2] == 200
    finally:
        versions.close()


def test_a_bad_watch_interval_is_one_line_exit_2(capsys):
    for bad in ("0", "-1", "nan", "soon", "1e9"):
        code, _, err = run_cli(capsys, "report", "--watch", bad)
        assert code == 2 and err.startswith("error: --watch = ") and err.count("\n") == 1, err
        assert "must be a number in [1, 86400]" in err, err
