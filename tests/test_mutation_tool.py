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
        # a message that happens to hold "and": not SQL (a mutant once passed for equivalent)
        (
            'return "CPU time unreadable: no /proc and no psutil"',
            'return "cpu time unreadable: no /proc and no psutil"',
            False,
        ),
        # the second literal of an INSERT split over two lines
        ('"a, b) VALUES (?, ?)",', '"a, b) values (?, ?)",', True),
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


def _group(run_of: str, killed: int, survived: int, unchecked: int) -> dict:
    zero = ("killed_at_set-up", "timeout", "suspicious", "no_tests", "skipped")
    out = dict.fromkeys((*zero, "caught_by_type_check"), 0)
    judged = killed + survived
    out |= {"killed": killed, "survived": survived, "equivalent": 2, "unchecked": unchecked}
    out |= {"mutants": judged + 2 + unchecked, "score": killed / judged, "score_ci95": [0, 1]}
    out |= {"survivors": [{"name": f"m{i}"} for i in range(survived)]}
    return out | {"run_of": run_of, "date": "d", "complete": unchecked == 0, "target": 0.9}


def test_a_samples_estimate_counts_its_drawn_mutants_alone_and_outlives_their_tests(tool):
    # seed 6 drew 100 of a fresh group: 82 killed, 18 survived, 2 equivalent
    drawn = _group("", 82, 18, 0)
    first = _group("random sample of 100 (seed 6)", 82, 18, 7498)
    tool._keep_fresh_sample(first, None, drawn)
    fresh = first["fresh_sample"]
    assert (fresh["killed"], fresh["judged"], fresh["score"]) == (82, 100, 0.82)
    assert fresh["score_ci95"] == tool.score_interval(82, 100)
    assert fresh["survivors"] == [f"m{i}" for i in range(18)]
    assert first["score_ci95"] is None  # the group's checked set: not where the estimate lives
    assert first["meets_target"] is False  # [73.0%, 89.0%] lies below 90%

    # the same mutants after their survivors got tests: 98 of 98 says nothing new of the group
    after = _group("survivors", 98, 0, 7498)
    tool._keep_fresh_sample(after, first)
    assert after["fresh_sample"] == fresh and after["meets_target"] is False

    # seed 7 draws 100 more: 86 of its own, not 184 of 198 with seed 6's dealt-with survivors
    second = _group("random sample of 100 (seed 7)", 184, 14, 7398)
    tool._keep_fresh_sample(second, after, _group("", 86, 14, 0))
    assert second["fresh_sample"]["score"] == 0.86 and second["meets_target"] is None

    # a complete group's score is exact: kept as it is
    done = _group("all", 270, 10, 0)
    tool._keep_fresh_sample(done, second)
    assert done["score"] == 270 / 280 and done["score_ci95"] == [0, 1]


@pytest.mark.parametrize(
    ("ci", "unchecked", "meets"),
    [
        ([0.91, 0.99], 7000, True),  # the interval wholly above the target
        ([0.85, 0.95], 7000, None),  # straddles it: undecided
        (None, 7000, None),  # no estimate at all
        (None, 10, True),  # 300 of 300 + 10 unchecked: at worst 300 / 310 = 96.8%
        (None, 40, None),  # at worst 300 / 340 = 88.2%: it depends on the unchecked
    ],
)
def test_an_incomplete_group_meets_its_target_only_when_it_must(tool, ci, unchecked, meets):
    g = _group("all", 300, 0, unchecked)
    if ci:
        g["fresh_sample"] = {"score_ci95": ci}
    assert tool._verdict(g) is meets


def test_the_measure_group_samples_its_own_mutants_only(tool, monkeypatch, tmp_path):
    (tmp_path / "mutants").mkdir()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    names = [
        "paradnn.measure.quality.x_judge__mutmut_1",
        "paradnn.measure.infeed.xǁFeedǁstats__mutmut_2",
        "paradnn.measure.collectives.x_busbw__mutmut_3",
        "paradnn.measure.faults.x_classify__mutmut_4",
        "paradnn.runner.supervisor.x__death__mutmut_5",
        "paradnn.runner.units.xǁRunUnitǁfailed__mutmut_6",
        "paradnn.runner.supervisor.xǁSupervisorǁ_collect__mutmut_7",  # the process loop: out
        "paradnn.measure.timer.x_measure__mutmut_8",  # timer-stats' own
        "paradnn.measure.quality.x_judge__mutmut_9",  # already checked: not drawn again
    ]
    results = {n: (Path("m.py"), None, 1.0, 1.0) for n in names}
    results[names[-1]] = (Path("m.py"), 1, 1.0, 1.0)
    monkeypatch.setattr(tool, "_load_results", lambda: results)
    drawn = tool._sample("measure", 100, seed=1)
    assert sorted(int(n.rsplit("_", 1)[1]) for n in drawn) == [1, 2, 3, 4, 5, 6]
    assert len(tool._sample("measure", 2, seed=1)) == 2
    assert tool._names("measure", None) == list(tool.GROUPS["measure"][0])
