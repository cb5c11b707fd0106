"""Several attempts of one config (issue 31): noisy runs are re-measured, not dropped; every
consumer (results, compare, report, findings, sim) uses the same attempt of a config (its best
good one, else its latest); and a gate never passes on nothing."""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn import api, attempts
from paradnn.analysis import findings
from paradnn.sim import fidelity

import faults
import synth
from conftest import run_cli

SPACE = {"layers": [4, 8], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8, 16]}
X = {"layers": 4, "nodes": 64, "input": 20, "output": 10, "batch": 8}  # the re-measured config
NOISY = ["other processes used 55% of the run's CPUs"]


# --- the choice ------------------------------------------------------------------------------


def _frame(kinds, widths=None):
    """One run key's attempts 1..n: good (ok), noisy (ok, flagged) or failed (crashed)."""
    rows = []
    for i, k in enumerate(kinds):
        w = (widths or {}).get(i, 0.02)
        rows.append(
            {
                "id": 10 + i, "db_index": 0, "run_key": "k", "attempt": i + 1,
                "status": "crashed" if k == "failed" else "ok",
                "quality": {"good": "good", "noisy": "noisy", "failed": None}[k],
                "step_time_s": None if k == "failed" else 1.0,
                "step_time_ci_low_s": None if k == "failed" else 1.0 - w,
                "step_time_ci_high_s": None if k == "failed" else 1.0 + w,
            }
        )  # fmt: skip
    return attempts.add_quality(pd.DataFrame(rows))


@pytest.mark.parametrize("kinds", list(itertools.permutations(["good", "noisy", "failed"])))
def test_the_good_attempt_is_chosen_in_any_order(kinds):
    out = attempts.choose(_frame(kinds))
    assert len(out) == 1
    assert out["attempt"].item() == kinds.index("good") + 1
    assert out["attempt_choice"].item() == attempts.BEST_GOOD
    assert out["attempts"].item() == 3 and out["good_attempts"].item() == 1


@pytest.mark.parametrize("kinds", [("noisy", "failed"), ("failed", "noisy"), ("noisy", "noisy")])
def test_without_a_good_attempt_the_latest_is_chosen_and_says_so(kinds):
    out = attempts.choose(_frame(kinds))
    assert out["attempt"].item() == 2 and out["good_attempts"].item() == 0
    assert out["attempt_choice"].item() == attempts.LATEST_NONE_GOOD


def test_of_several_good_attempts_the_narrowest_ci_not_the_fastest():
    f = _frame(["good", "good", "good"], widths={0: 0.05, 1: 0.01, 2: 0.03})
    f.loc[2, "step_time_s"] = 0.5  # the fastest median, but a wider CI: not chosen for speed
    f.loc[2, ["step_time_ci_low_s", "step_time_ci_high_s"]] = [0.48, 0.52]  # ±4% relative
    assert attempts.choose(f)["attempt"].item() == 2
    same = _frame(["good", "good"], widths={0: 0.02, 1: 0.02})
    assert attempts.choose(same)["attempt"].item() == 2  # a tie: the latest


def test_choosing_twice_changes_nothing_and_notes_count_configs():
    f = pd.concat([_frame(["noisy", "good"]), _frame(["noisy"]).assign(run_key="j", id=20)])
    once = attempts.choose(f)
    assert attempts.choose(once) is once
    assert attempts.choice_counts(once) == {attempts.BEST_GOOD: 1, attempts.LATEST_NONE_GOOD: 0}
    note = attempts.choice_note(once)
    assert note.startswith("1 config with several stored attempts: 1 use the best")


# --- every consumer, the same attempt --------------------------------------------------------


def _attempt_row(kind: str, seed: int) -> dict:
    """Config X at fp32: good (util 0.1), noisy (3× slower, flagged) or failed."""
    if kind == "failed":
        return synth.row("fc", X, None, status="crashed", error="worker died", precision="fp32")
    util = 0.1 if kind == "good" else 0.03
    extra = {"quality": "noisy", "quality_reasons": NOISY} if kind == "noisy" else {}
    return synth.row("fc", X, util, n_samples=20, spread=0.02, seed=seed, **extra)


def _db(tmp_path, kinds, name="a.db"):
    """fp32 and bf16 (1.25× faster) runs of 8 configs; X at fp32 has one attempt per kind."""
    others = [c for c in synth.grid(SPACE) if c != X]
    rows = [
        synth.row("fc", c, 0.1, n_samples=20, spread=0.02, seed=i) for i, c in enumerate(others)
    ]
    rows += [
        synth.row("fc", c, 0.125, n_samples=20, spread=0.02, seed=50 + i, precision="bf16")
        for i, c in enumerate(synth.grid(SPACE))
    ]
    db = synth.write_db(tmp_path / name, rows)
    for i, k in enumerate(kinds):  # the same run key each time: attempts 1, 2, 3
        synth.write_db(db, [_attempt_row(k, 100 + i)])
    return db


def _x_speedup(c) -> float:
    x = c.pairs[(c.pairs["layers"] == 4) & (c.pairs["nodes"] == 64) & (c.pairs["batch"] == 8)]
    return float(x["speedup"].item())


@pytest.mark.parametrize("kinds", list(itertools.permutations(["good", "noisy", "failed"])))
def test_results_compare_findings_and_sim_use_the_same_attempt(tmp_path, kinds):
    db = _db(tmp_path, kinds)
    good_attempt = kinds.index("good") + 1
    rows = api.results(db)
    assert len(rows) == 18  # every stored attempt is kept
    chosen = api.results(db, chosen=True)
    assert len(chosen) == 16  # one attempt per config
    chosen = [r for r in chosen if r["precision"] == "fp32" and r["config"] == X]
    assert [r["attempt"] for r in chosen] == [good_attempt]
    assert chosen[0]["attempt_choice"] == attempts.BEST_GOOD
    data = A.load([db])
    c = A.compare(data, "precision", "fp32", "bf16")
    assert len(c.pairs) == 8 and c.noisy_left_out == {"fp32": 0, "bf16": 0}
    assert _x_speedup(c) == pytest.approx(1.25, rel=0.05)  # the noisy one would give ~4.2
    kept, _ = A.frames.without_noisy(data)  # what evaluate() and the report's sections read
    assert "over 8 configs" in findings.precision_helps(kept).evidence
    fp32 = kept.runs[kept.runs["precision"] == "fp32"]
    assert len(fp32) == 8 and fp32["attempt"].max() == good_attempt
    frame = pd.DataFrame(rows)  # what `simulate validate` reads: every stored row
    ok = fidelity.choose(frame)
    fp32_x = ok[(ok["precision"] == "fp32") & ok["config"].map(lambda v: v == X)]
    assert fp32_x["attempt"].tolist() == [good_attempt]


def test_the_report_counts_the_same_attempts_as_compare(tmp_path):
    """The issue's case: a good run, then a noisy one (and a failure last): the report kept the
    config out ('1 of 2 ok runs were flagged noisy'). The sections that count and compare, fed
    as `report.build` feeds them (the whole report takes seconds more: tests/test_report.py)."""
    from paradnn.report.build import _noisy_note
    from paradnn.report.sections import findings, speedups, summary
    from paradnn.report.writer import Writer

    db = _db(tmp_path, ("good", "noisy", "failed"))
    full = A.load([db])
    data, noisy = A.frames.without_noisy(full)
    assert len(noisy) == 0 and _noisy_note(full, noisy) is None
    w = Writer(tmp_path / "out")
    summary.SECTION.build(data, w, every=full)
    speedups.SECTION.build(data, w)
    findings.SECTION.build(data, w)
    status = pd.read_csv(tmp_path / "out" / "tables" / "status-by-family.csv")
    assert status.iloc[0]["ok"] == 16 and "of which noisy" not in status
    assert "crashed" not in status  # the failure is not the config's attempt
    speed = pd.read_csv(tmp_path / "out" / "tables" / "speedup-precision-bf16-over-fp32.csv")
    assert speed.iloc[-1]["n"] == 8
    verdicts = pd.read_csv(tmp_path / "out" / "tables" / "findings.csv")
    assert verdicts["evidence"].str.contains("over 8 configs").any()
    note = attempts.choice_note(A.frames.choose(full.runs))
    assert note.startswith("1 config with several stored attempts: 1 use the best")


def test_a_family_left_out_as_noisy_is_named_not_missing():
    rows = synth.rows("fc", SPACE, lambda c: 0.1, quality="noisy", quality_reasons=NOISY)
    data, _ = A.frames.without_noisy(A.from_frames(rows))
    by_id = {f.id: f for f in findings.evaluate(data, include_noisy=True)}
    ev = by_id["fc-width-over-depth"].evidence
    assert ev.startswith("no fc runs kept: 8 fc configs ran ok with no good attempt"), ev


# --- the gate --------------------------------------------------------------------------------


def _gate(capsys, db, a, b, *more):
    return run_cli(
        capsys, "compare", "--db", db, "--by", "precision", "--a", a, "--b", b,
        "--fail-if-slower", "5", *more,
    )  # fmt: skip


@pytest.mark.parametrize("a,b", [("fp32", "bf16"), ("bf16", "fp32")])
def test_the_gate_fails_when_every_run_is_noisy(tmp_path, capsys, a, b):
    rows = synth.rows("fc", SPACE, lambda c: 0.1, n_samples=20, quality="noisy")
    rows += synth.rows(
        "fc", SPACE, lambda c: 0.1, n_samples=20, precision="bf16", quality="noisy", seed=3
    )
    db = synth.write_db(tmp_path / "n.db", rows)
    code, _out, err = _gate(capsys, db, a, b)
    assert code == 3, err
    assert f"compared 0 configs; left out as noisy: {a} 8, {b} 8" in err
    assert "ok in one group only" in err and "--include-noisy" in err
    assert "no config is slower" not in err  # nothing judged is not a pass
    code, _out, err = _gate(capsys, db, a, b, "--include-noisy")
    assert code == 0 and "compared 8 configs" in err


@pytest.mark.parametrize("a,b", [("fp32", "bf16"), ("bf16", "fp32")])
def test_the_gate_fails_when_no_config_matches(tmp_path, capsys, a, b):
    rows = synth.rows("fc", {**SPACE, "layers": [4]}, lambda c: 0.1, n_samples=20)
    rows += synth.rows(
        "fc", {**SPACE, "layers": [8]}, lambda c: 0.1, n_samples=20, precision="bf16"
    )
    db = synth.write_db(tmp_path / "m.db", rows)
    code, out, err = _gate(capsys, db, a, b, "--format", "json")
    assert code == 3, err
    assert json.loads(out)["compared"] == 0
    assert f"compared 0 configs; left out as noisy: {a} 0, {b} 0; ok in one group only: " in err
    assert f"{a} 4, {b} 4" in err and "Run the same configs in both groups" in err


def test_min_configs_asks_for_more_and_is_checked(tmp_path, capsys):
    db = _db(tmp_path, ("good",))
    code, _out, err = _gate(capsys, db, "fp32", "bf16", "--min-configs", "9")
    assert code == 3 and "8 configs compared, fewer than --min-configs 9" in err
    code, _out, err = _gate(capsys, db, "fp32", "bf16", "--min-configs", "8")
    assert code == 0 and "compared 8 configs" in err
    code, _out, err = run_cli(
        capsys, "compare", "--db", db, "--by", "precision", "--a", "fp32", "--b", "bf16",
        "--min-configs", "0",
    )  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "--min-configs" in err


# --- re-measuring ----------------------------------------------------------------------------


@pytest.fixture
def load_file(tmp_path, monkeypatch):
    """A fake load that makes the next N measurements of the `noisy` fault config noisy."""
    monkeypatch.setenv("PARADNN_FAMILIES", "fault=faults")
    path = tmp_path / "load"
    monkeypatch.setenv(faults.NOISY_LOAD_FILE, str(path))
    monkeypatch.delenv("PARADNN_REMEASURE", raising=False)  # conftest's off switch
    return path


def test_a_sweep_remeasures_noisy_runs_and_keeps_a_good_attempt(
    tmp_path, capsys, load_file, monkeypatch
):
    """Two configs under a load that lasts 3 measurements, `run --remeasure 1`, the machine
    quiet whenever the supervisor looks (runner/busy.py): width 8 is noisy twice (its
    re-measure used up), width 9 is good when measured again."""
    from paradnn import host
    from paradnn.runner import busy

    from conftest import write_sweep

    quiet = host.LoadSample((0, 1), 0.3, 0.0, {}, (), None, 0.1)
    monkeypatch.setattr(busy, "sample_now", lambda cpus=None: quiet)
    load_file.write_text("3")
    sweep = write_sweep(
        tmp_path / "s.toml", [("fault", {"fault": "noisy", "width": w}) for w in (8, 9)]
    )
    db = str(tmp_path / "r.db")
    code, _out, err = run_cli(
        capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu", "--threads", "1",
        "--remeasure", "1", "--remeasure-backoff", "0",
    )  # fmt: skip
    assert code == 0, err
    # w8 noisy, w9 noisy, w8 again noisy (no re-measure left), w9 again good
    rows = api.results(db)
    got = [(r["config"]["width"], r["attempt"], r["quality"]) for r in rows]
    assert got == [(8, 1, "noisy"), (9, 1, "noisy"), (8, 2, "noisy"), (9, 2, "good")]
    said = [line for line in err.splitlines() if "re-measuring" in line]
    assert len(said) == 2 and all(faults.INJECTED in line for line in said)
    assert "re-measuring fault fp32 fault=noisy, width=8, batch=4 (attempt 1 was noisy" in said[0]
    assert "the load has dropped" in said[0] and "re-measure 1 of 1" in said[0]
    chosen = {
        r["config"]["width"]: (r["attempt"], r["attempt_choice"])
        for r in api.results(db, chosen=True)
    }
    assert chosen == {8: (2, attempts.LATEST_NONE_GOOD), 9: (2, attempts.BEST_GOOD)}


def test_remeasure_options_are_checked_before_any_work(capsys):
    for cmd in (["bench", "fc"], ["run", "--dry-run"]):
        for opt in (["--remeasure", "-1"], ["--remeasure", "11"], ["--remeasure-backoff", "-1"]):
            code, _out, err = run_cli(capsys, *cmd, *opt)
            assert code == 2 and "remeasure" in err and err.count("\n") == 1, (cmd, opt, err)


def test_jsonl_progress_carries_the_remeasure_note(capsys):
    from paradnn.cli.progress import JsonlReporter
    from paradnn.runner.supervisor import Event

    note = "re-measuring fc fp32 layers=4 (attempt 1 was noisy: load); the load has dropped (…)"
    JsonlReporter()(Event("remeasure", 1, 3, {"ok": 1}, notes=[note]))
    event = json.loads(capsys.readouterr().out)
    assert event["event"] == "remeasure" and event["notes"] == [note] and event["total"] == 3
