"""The mutation tool's own rules (benchmarks/mutation.py): which mutants it may call equivalent
and how it states a sampled score. It runs on purpose, not in CI, so these rules are checked here
where a wrong one would otherwise only show as a flattering score."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "benchmarks/mutation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # stdlib only at import: mutmut is imported when it runs
    return mod


def _diff(old: str, new: str) -> str:
    return f"--- a.py\n+++ a.py\n@@ -1 +1 @@\n-{old}\n+{new}\n"


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ('db.execute("SELECT * FROM runs")', 'db.execute("select * from runs")', True),
        # a dict key beside SQL text: the key's case matters
        ('d["KEY"] = "SELECT 1"', 'd["key"] = "SELECT 1"', False),
        # a case change in a string that is not SQL is a different program (a message, a key)
        ('say("first step")', 'say("FIRST STEP")', False),
        # a change beyond case is never equivalent by this rule
        ('db.execute("SELECT a FROM runs")', 'db.execute("SELECT b FROM runs")', False),
        ('db.execute("SELECT a FROM runs")', 'db.execute("SELECT a FROM runs")', False),
    ],
)
def test_only_a_case_change_in_sql_text_is_equivalent_by_rule(tool, old, new, same):
    assert tool.sql_case_only(_diff(old, new)) is same


def test_a_sampled_score_comes_with_its_exact_interval(tool):
    # Clopper-Pearson for 9 of 10: [0.5550, 0.9975] (beta quantiles, tabulated)
    assert tool.score_interval(9, 10) == pytest.approx([0.5550, 0.9975], abs=1e-4)
    lo, hi = tool.score_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.6915, abs=1e-4)  # (α/2)^(1/10)
    assert tool.score_interval(0, 0) is None


def test_every_equivalence_names_the_line_it_was_judged_on(tool):
    """An equivalence is keyed by mutmut's name and checked against a fragment of the diff, so
    a renumbered mutant is never marked equivalent by mistake; each has a reason."""
    for name, (reason, line) in tool.EQUIVALENT.items():
        assert name.startswith("paradnn.") and "__mutmut_" in name, name
        assert len(reason) > 20 and line.strip(), name
        assert any(tool._in_group(name, globs) for globs, _ in tool.GROUPS.values()), name


def test_only_survivors_retests_the_checked_survivors_not_a_samples_unchecked_rest(
    tool, monkeypatch, tmp_path
):
    (tmp_path / "mutants").mkdir()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    # mutmut's exit codes: 1 killed, 0 survived, 33 no tests, 2 unknown (suspicious), None unrun
    codes = {1: 1, 2: 0, 3: 33, 4: 2, 5: None}
    results = {
        f"paradnn.memory.x_f__mutmut_{i}": (Path("m.py"), c, 1.0, 1.0) for i, c in codes.items()
    }
    monkeypatch.setattr(tool, "_load_results", lambda: results)

    def picked(only):
        return sorted(int(n.rsplit("_", 1)[1]) for n in tool._names("memory", only))

    assert picked("survivors") == [2, 3, 4]
    assert picked("unchecked") == [4, 5]
    assert tool._names("memory", None) == list(tool.GROUPS["memory"][0])


def test_a_sample_on_a_fresh_clone_generates_the_mutants_first(tool, monkeypatch, tmp_path):
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    calls, writes = [], []

    def fake_run(cmd, cwd):
        calls.append(cmd)
        if writes:
            (cwd / "mutants").mkdir()
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(tool.subprocess, "run", fake_run)
    assert not tool._ensure_mutants(2)  # the step "succeeded" but wrote nothing: say so
    assert calls[-1][-2:] == ["--mutmut-generate", "2"]

    writes.append(True)
    assert tool._ensure_mutants(2) and (tmp_path / "mutants").is_dir()
    calls.clear()
    assert tool._ensure_mutants(2) and calls == []  # mutants exist: nothing to generate
