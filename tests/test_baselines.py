"""Baselines and history (issue 45, item 2): a named set of runs, the newest runs compared
against it with compare's intervals (across two databases, in both orientations), a history of
one configuration, and compare's Markdown and JUnit output read back by a parser."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET

import pytest

from paradnn import api
from paradnn.errors import ConfigError, StoreError
from paradnn.store.schema import LATEST

import synth
from conftest import run_cli

CFGS = [{"layers": 2, "nodes": n, "input": 12, "output": 5, "batch": 4} for n in (8, 16, 32)]
JAN, FEB, MAR = "2026-01-01T00:00:00", "2026-02-01T00:00:00", "2026-03-01T00:00:00"


def _rows(when: str, factor: dict[int, float] | None = None, **kw):
    """One ok fc run per config (30 raw samples, ±1% noise); `factor`: nodes -> speed."""
    factor = factor or {}
    return [
        synth.row("fc", c, 0.5 * factor.get(c["nodes"], 1.0), n_samples=30, seed=i,
                  started_at=when, **kw)
        for i, c in enumerate(CFGS)
    ]  # fmt: skip


@pytest.fixture
def two(tmp_path):
    """main saved in a.db (January); b.db holds February's runs, nodes=16 20% slower."""
    a = synth.write_db(tmp_path / "a.db", _rows(JAN))
    b = synth.write_db(tmp_path / "b.db", _rows(FEB, {16: 0.8}))
    api.baseline_save("main", a)
    return a, b


def test_a_baseline_is_stored_in_its_database_by_name(two):
    a, b = two
    (saved,) = api.baseline_list(a)
    assert (saved.name, saved.db, saved.runs) == ("main", a, 3) and saved.saved_at
    assert api.baseline_list(b) == []
    with sqlite3.connect(a) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        ids = [r[0] for r in conn.execute("SELECT run_id FROM baselines WHERE name = 'main'")]
    assert sorted(ids) == [1, 2, 3]


@pytest.mark.parametrize("order", ["baseline first", "baseline second"])
def test_the_newest_runs_against_a_baseline_in_another_database(two, order):
    a, b = two
    dbs = [a, b] if order == "baseline first" else [b, a]
    c = api.compare_baseline("main", dbs)
    assert (c.by, c.a, c.b) == ("baseline", "main", "newest") and len(c.pairs) == 3
    calls = dict(zip(c.pairs["nodes"], c.pairs["call"], strict=True))
    assert calls == {8: "no detectable change", 16: "slower", 32: "no detectable change"}
    slow = c.pairs[c.pairs["nodes"] == 16].iloc[0]
    assert slow["ci_low"] < 0.8 < slow["ci_high"] or slow["speedup"] == pytest.approx(0.8)
    assert slow["ci_high"] < 1 and slow["value_b"] < slow["value_a"]


def test_faster_is_faster_the_other_way_round(tmp_path):
    a = synth.write_db(tmp_path / "a.db", _rows(JAN, {16: 0.8}))
    b = synth.write_db(tmp_path / "b.db", _rows(FEB))
    api.baseline_save("slow", a)
    c = api.compare_baseline("slow", [a, b])
    calls = dict(zip(c.pairs["nodes"], c.pairs["call"], strict=True))
    assert calls[16] == "faster" and calls[8] == calls[32] == "no detectable change"


def test_in_one_database_newer_attempts_count_and_older_runs_do_not(tmp_path):
    db = synth.write_db(tmp_path / "r.db", _rows(FEB))
    api.baseline_save("main", db)
    c = api.compare_baseline("main", db)
    assert len(c.pairs) == 0 and c.unmatched == {"main": 3, "newest": 0}  # nothing newer yet
    synth.write_db(tmp_path / "r.db", _rows(JAN, {8: 0.5}) + _rows(MAR, {16: 1.5})[1:2])
    c = api.compare_baseline("main", db)
    # January's runs are older than the baseline: no news; March's nodes=16 is
    assert list(c.pairs["nodes"]) == [16] and c.pairs["call"].iloc[0] == "faster"
    assert c.unmatched == {"main": 2, "newest": 0}


def test_save_list_delete_and_their_refusals(two, tmp_path):
    a, _ = two
    with pytest.raises(ConfigError, match="baseline = 'main': is saved already; --replace"):
        api.baseline_save("main", a)
    assert api.baseline_save("main", a, replace=True, where={"precision": "fp32"}).runs == 3
    assert api.baseline_save("bf16-only", a, replace=False).runs == 3
    with pytest.raises(ConfigError, match="would name no runs"):
        api.baseline_save("none", a, where={"precision": "bf16"})
    with pytest.raises(ConfigError, match="printable ASCII"):
        api.baseline_save("", a)
    assert [b.name for b in api.baseline_list(a)] == ["bf16-only", "main"]
    assert api.baseline_delete("main", a).runs == 3
    with pytest.raises(ConfigError, match=r"no such baseline in .*; saved: bf16-only"):
        api.baseline_delete("main", a)
    with pytest.raises(ConfigError, match="baseline = 'main': no such baseline"):
        api.compare_baseline("main", a)
    assert len(api.results(a)) == 3  # deleting a name keeps its runs
    with pytest.raises(StoreError, match="no such database"):
        api.baseline_save("x", str(tmp_path / "missing.db"))


def test_the_cli_commands(two, capsys):
    a, _ = two
    code, out, _ = run_cli(capsys, "baseline", "list", "--db", a)
    assert code == 0 and "main" in out
    code, out, _ = run_cli(capsys, "baseline", "list", "--db", a, "--format", "json")
    assert [r["name"] for r in json.loads(out)] == ["main"]
    code, out, _ = run_cli(capsys, "baseline", "save", "fp32", "--db", a, "-p", "fp32")
    assert code == 0 and "3 runs" in out
    code, _, err = run_cli(capsys, "baseline", "save", "fp32", "--db", a)
    assert code == 2 and err.count("\n") == 1 and "--replace" in err
    code, out, _ = run_cli(capsys, "baseline", "delete", "fp32", "--db", a)
    assert code == 0 and "the runs stay" in out
    code, _, err = run_cli(capsys, "compare", "--baseline", "main", "--by", "precision")
    assert code == 2 and "not with --baseline" in err
    code, _, err = run_cli(capsys, "compare", "--a", "fp32", "--b", "bf16", "--db", a)
    assert code == 2 and "--by: is required (or --baseline NAME)" in err


def _junit(capsys, *args):
    code, out, _ = run_cli(capsys, "compare", *args, "--format", "junit")
    root = ET.fromstring(out)
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert int(root.get("failures")) == int(suite.get("failures")) == len(failed)
    assert int(suite.get("tests")) == len(cases)
    return code, cases, failed


def test_junit_a_failing_gate_is_a_failed_testcase(two, capsys):
    a, b = two
    base = ("--baseline", "main", "--db", a, "--db", b)
    code, cases, failed = _junit(capsys, *base, "--fail-if-slower", "10")
    assert code == 1
    names = [c.get("name") for c in cases]
    assert len(names) == 3 + 2 and names[-2:] == ["geomean", "configs compared"]
    assert failed == ["fc input=12 layers=2 nodes=16 output=5 batch=4"]
    # no gate: every case passes, exit 0; a gate of 30 % passes too
    code, cases, failed = _junit(capsys, *base)
    assert code == 0 and failed == [] and len(cases) == 4  # no --min-configs case without a gate
    code, _, failed = _junit(capsys, *base, "--fail-if-slower", "30")
    assert code == 0 and failed == []
    # the geomean judged instead of each config: 0.93× whose interval reaches past 0.99×
    code, _, failed = _junit(capsys, *base, "--fail-if-slower", "1", "--fail-on", "geomean")
    assert code == 0 and failed == []


def test_junit_the_geomean_gate_fails_when_every_config_is_slower(tmp_path, capsys):
    a = synth.write_db(tmp_path / "a.db", _rows(JAN))
    b = synth.write_db(tmp_path / "b.db", _rows(FEB, {8: 0.8, 16: 0.8, 32: 0.8}))
    api.baseline_save("main", a)
    base = ("--baseline", "main", "--db", a, "--db", b, "--fail-on", "geomean")
    code, _, failed = _junit(capsys, *base, "--fail-if-slower", "10")
    assert code == 1 and failed == ["geomean"]
    code, _, failed = _junit(capsys, *base, "--fail-if-slower", "30")
    assert code == 0 and failed == []


def test_junit_a_gate_that_compared_nothing_fails(tmp_path, capsys):
    db = synth.write_db(tmp_path / "r.db", _rows(FEB))
    api.baseline_save("main", db)
    code, cases, failed = _junit(capsys, "--baseline", "main", "--db", db, "--fail-if-slower", "5")
    assert code == 3 and failed == ["configs compared"] and len(cases) == 1


def _table(md: str) -> list[list[str]]:
    """The Markdown table's rows as cells (pipes escaped as \\| stay inside a cell)."""
    import re

    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    return [
        [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines
    ]


def test_markdown_is_a_table_a_pull_request_renders(two, capsys):
    a, b = two
    code, out, _ = run_cli(
        capsys, "compare", "--baseline", "main", "--db", a, "--db", b,
        "--fail-if-slower", "10", "--format", "markdown",
    )  # fmt: skip
    assert code == 1 and out.startswith("### paradnn compare: newest over main")
    rows = _table(out)
    head, rule, *body = rows
    assert head == ["family", "config", "main", "newest", "speedup (±95% CI)", "call"]
    assert all(set(c) == {"-"} for c in rule) and len(rule) == len(head)
    assert len(body) == 3 and all(len(r) == len(head) for r in body)
    assert body[0][1].startswith("input=12 layers=2 nodes=16") and body[0][-1] == "slower"
    assert "❌ failed (configs): 1 config(s) slower than 0.9×" in out
    assert "✅ passed (compared): 3 config(s) compared" in out
    code, out, _ = run_cli(capsys, "compare", "--by", "db", "--a", a, "--b", b, "--db", a,
                           "--db", b, "--format", "markdown")  # fmt: skip
    assert code == 0 and len(_table(out)) == 2 + 3  # compare --by works the same way


def test_history_of_one_configuration_across_time_and_baselines(two, capsys, tmp_path):
    a, b = two
    newer = _rows(MAR, torch_version="2.14.0")[1:2]
    synth.write_db(tmp_path / "b.db", newer)
    found = api.history("fc", CFGS[1], db=[b, a])
    assert [r["started_at"] for r in found] == [JAN, FEB, MAR]  # oldest first
    assert [r["baselines"] for r in found] == ["main", "", ""]
    assert [r["torch_version"] for r in found] == ["2.13.0", "2.13.0", "2.14.0"]
    assert all(r["chosen"] and r["status"] == "ok" for r in found)
    assert found[1]["examples_per_s"] < found[0]["examples_per_s"]
    assert api.history("fc", CFGS[1], db=[a, b], where={"precision": "bf16"}).rows == ()
    with pytest.raises(ConfigError, match="where = 'colour'"):
        api.history("fc", CFGS[1], db=a, where={"colour": "red"})
    code, out, _ = run_cli(capsys, "history", "fc", "layers=2", "nodes=16", "input=12",
                           "output=5", "batch=4", "--db", a, "--db", b)  # fmt: skip
    assert code == 0 and "3 attempts" in out and "2.14.0" in out and "main" in out
    code, out, _ = run_cli(capsys, "history", "fc", "nodes=16", "--db", a, "--format", "json")
    assert code == 0 and json.loads(out) == []  # the defaults are another configuration


def test_history_fits_a_narrow_terminal(two, monkeypatch):
    """`history` at 80 columns: the start, the step time and its interval whole on one line,
    the host, versions and baselines left out first and named under the table."""
    from rich.console import Console

    from paradnn.cli import baselines as cli_baselines

    a, _ = two
    found = list(api.history("fc", CFGS[1], db=a))
    narrow = Console(width=80, record=True)
    monkeypatch.setattr(cli_baselines, "out", narrow)
    narrow.print(cli_baselines.history_table(found, "fc"))
    text = narrow.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    from paradnn.cli import tables

    for r in found:
        assert tables._ms(r) in text and str(r["started_at"])[:16].replace("T", " ") in text
    assert "not shown at 80 columns:" in text and "baselines" in text.split("not shown")[1]
