"""A busy machine (issue 45 item 5): a noisy run is measured again only when the load that made
it noisy has dropped, else deferred to the end of the sweep (said once) and kept when the load
is still there (never a loop); one summary of the noisy runs; one CI figure everywhere. The
load is played by an injected sampler and the verdicts by the `noisy` fault config: nothing
here depends on the machine's real load."""

from __future__ import annotations

import pytest

from paradnn import api, host
from paradnn.cli import tables
from paradnn.measure import quality
from paradnn.runner import busy

import faults
from conftest import run_cli, write_sweep


def sample(others_cores: float | None, cpus=(0, 1), reason: str | None = None) -> host.LoadSample:
    procs = (host.BusyProcess(7, "python3", others_cores),) if others_cores else ()
    why = reason if others_cores is None else None
    return host.LoadSample(tuple(cpus), 0.3, others_cores, {}, procs, None, 2.0, why)


def quiet() -> host.LoadSample:
    return sample(0.0)


def busy_sample() -> host.LoadSample:
    return sample(1.9)


# --- the decision ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "then,now,measure_now",
    [
        (0.9, 0.0, True),  # the load dropped: measure again now
        (0.9, 0.2, True),  # 10% of 2 cores: at the limit a run is still good
        (0.9, 1.9, False),  # still busy: defer
        (0.05, 1.9, False),  # noisy from its spread, busy now: a re-measure would be noisy
        (None, 1.9, False),
        (None, None, True),  # nothing known either way: as before the policy, measure again
        (0.05, None, True),  # quiet then (noisy from its samples), unknown now
        (0.9, None, False),  # busy then, unknown now: nothing says the load went
    ],
)
def test_the_load_then_and_now_decide(then, now, measure_now):
    d = busy.decide(then, sample(now, reason="no /proc"))
    assert d.now is measure_now
    assert ("unknown" if then is None else f"{then:.0%}") in d.words
    assert ("now unknown: no /proc" if now is None else f"{now / 2:.0%} now") in d.words


# --- a sweep under a played load -------------------------------------------------------------


@pytest.fixture
def played(tmp_path, monkeypatch):
    """(db, sweep, loads): two `noisy` fault configs (widths 8 and 9), the verdicts noisy while
    the load file's count lasts, and the load the supervisor sees taken from `loads` in turn
    (the last one repeats); `loads.calls` counts the samples."""
    monkeypatch.setenv("PARADNN_FAMILIES", "fault=faults")
    load_file = tmp_path / "load"
    monkeypatch.setenv(faults.NOISY_LOAD_FILE, str(load_file))
    monkeypatch.delenv("PARADNN_REMEASURE", raising=False)

    class Loads(list):
        calls = 0

    loads = Loads()

    def sampler(cpus=None):
        loads.calls += 1
        return loads.pop(0) if len(loads) > 1 else loads[0]

    monkeypatch.setattr(busy, "sample_now", sampler)
    sweep = write_sweep(
        tmp_path / "s.toml", [("fault", {"fault": "noisy", "width": w}) for w in (8, 9)]
    )
    return str(tmp_path / "r.db"), sweep, load_file, loads


def _sweep(capsys, db, sweep, *extra):
    return run_cli(
        capsys, "run", "--preset", str(sweep), "--db", db, "--device", "cpu", "--threads", "1",
        *extra,
    )  # fmt: skip


def test_a_load_that_stays_is_not_measured_again(capsys, played):
    """Every run noisy, the machine busy whenever it is looked at: each config is measured once,
    deferred (said once), kept at the end (said so), and one summary says what was kept."""
    db, sweep, load_file, loads = played
    load_file.write_text("100")
    loads.append(busy_sample())
    code, _out, err = _sweep(capsys, db, sweep, "--remeasure", "2", "--remeasure-backoff", "0")
    assert code == 0, err
    got = [(r["config"]["width"], r["attempt"], r["quality"]) for r in api.results(db)]
    assert got == [(8, 1, "noisy"), (9, 1, "noisy")]  # no attempt under the same load
    assert loads.calls == 3  # after each noisy run, once at the end: never a loop
    assert err.count("the machine is busy (") == 1  # the deferral, said once
    assert "wait for the end of the sweep" in err
    end = [ln for ln in err.splitlines() if ln.startswith("end of the sweep")]
    assert len(end) == 1 and "re-measuring 0 deferred noisy runs, keeping 2 as measured" in end[0]
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning: noisy")]
    assert len(warnings) == 1  # one summary, not one warning per run
    assert "2 of 2 configs kept noisy (2 noisy attempts)" in warnings[0]


def test_deferred_runs_are_measured_at_the_end_once_the_load_dropped(capsys, played):
    """Busy after both noisy runs and at the first look at the end, quiet after the back-off:
    both deferred runs are measured again at the end, and are good."""
    db, sweep, load_file, loads = played
    load_file.write_text("2")  # the first two measurements are noisy
    loads += [busy_sample(), busy_sample(), busy_sample(), quiet()]
    code, _out, err = _sweep(capsys, db, sweep, "--remeasure", "2", "--remeasure-backoff", "0.01")
    assert code == 0, err
    got = [(r["config"]["width"], r["attempt"], r["quality"]) for r in api.results(db)]
    assert got == [(8, 1, "noisy"), (9, 1, "noisy"), (8, 2, "good"), (9, 2, "good")]
    assert loads.calls == 4
    assert "still busy" in err and "looking again in 0.01 s" in err
    assert "the load has dropped" in err and "re-measuring 2 deferred noisy runs" in err
    summary = [ln for ln in err.splitlines() if "noisy: " in ln and "kept noisy" in ln]
    assert len(summary) == 1 and not summary[0].startswith("warning")  # news, not a warning
    assert "0 of 2 configs kept noisy, 2 good once measured again" in summary[0]
    assert "Each config has a good attempt now" in summary[0]


def test_a_noisy_remeasure_at_the_end_is_kept(capsys, played):
    """Deferred, re-measured at the end (the load looked gone), noisy again: kept, not deferred
    again, whatever --remeasure allows."""
    db, sweep, load_file, loads = played
    load_file.write_text("100")
    loads += [busy_sample(), busy_sample(), quiet(), busy_sample()]
    code, _out, err = _sweep(capsys, db, sweep, "--remeasure", "3", "--remeasure-backoff", "0")
    assert code == 0, err
    got = [(r["config"]["width"], r["attempt"]) for r in api.results(db)]
    assert got == [(8, 1), (9, 1), (8, 2), (9, 2)]
    assert err.count("kept fault fp32") == 2 and "still busy" in err


# --- one summary -----------------------------------------------------------------------------


def _row(key, quality_, *, ci=(0.977, 1.068), others=0.9, reasons=None, family="fc"):
    return {
        "run_key": key,
        "family": family,
        "precision": "fp32",
        "config": {"layers": 2, "nodes": int(key[1:] or 1)},
        "status": "ok",
        "quality": quality_,
        "quality_reasons": reasons
        if reasons is not None
        else [
            "CI reaches ±6.8% > ±5% target (stopped at max_time)",
            "other processes used 90% of the run's CPUs (> 10%)",
        ],
        "step_time_s": 1.0,
        "step_time_ci_low_s": ci[0],
        "step_time_ci_high_s": ci[1],
        "others_cpu_frac": others,
        "threads": 2,
        "load": {"cpus": 2, "others_cpu_frac": others},
    }


def test_one_summary_counts_the_noisy_runs():
    rows = [
        _row("k1", "noisy", others=0.45),
        _row("k2", "noisy", ci=(0.9, 1.2), others=0.98),
        _row("k2", "good", others=0.0, reasons=[]),
        _row("k3", "good", others=0.0, reasons=[]),
    ]
    line = quality.noisy_summary(rows)
    assert quality.kept_noisy(rows) == 1 and line.count("noisy:") == 1
    assert "1 of 2 configs kept noisy, 1 good once measured again (2 noisy attempts)" in line
    assert "worst CI ±20.0% (fc fp32 layers=2 nodes=2)" in line
    assert "other processes used 45%–98% of their CPUs" in line
    assert "other processes on its CPUs (2)" in line and "CI wider than its target (2)" in line
    assert "what would help: --threads 1" in line


def test_the_summary_of_nothing_noisy_is_none_and_of_one_run_is_its_warning():
    assert quality.noisy_summary([_row("k1", "good", reasons=[])]) is None
    assert quality.noisy_summary([]) is None
    one = _row("k1", "noisy")
    assert quality.noisy_summary([one]) == quality.warning_line(
        "fc fp32 layers=2 nodes=1", "noisy", one["quality_reasons"], one
    )


@pytest.mark.parametrize("order", [1, -1])
def test_the_worst_ci_ties_break_by_name(order):
    rows = [_row("k1", "noisy", family="rnn"), _row("k2", "noisy", family="cnn")][::order]
    assert "worst CI ±6.8% (rnn fp32" in quality.noisy_summary(rows)


# --- one CI figure ---------------------------------------------------------------------------


def test_one_ci_figure_in_the_table_the_verdict_and_the_summary():
    """A median's CI is lopsided: 0.977–1.068 around 1.0 is ±4.55% by half its width and 6.8%
    on its wide side. The verdict judges the wide side, so every place prints ±6.8%."""
    row = _row("k1", "noisy")
    assert tables.ci_text(tables.step_ci(row)) == " ±6.8%"
    assert "±6.8%" in tables._ms(row) and "±4.6%" not in tables._ms(row)
    v = quality.judge(
        median=1.0, ci_low=0.977, ci_high=1.068, q1=0.99, q3=1.01, stop_reason="max_time",
        target_ci_rel=0.05, load=None,
    )  # fmt: skip
    assert v.reasons == ["CI reaches ±6.8% > ±5% target (stopped at max_time)"]
    assert "worst CI ±6.8%" in quality.noisy_summary([row, _row("k2", "noisy", family="rnn")])
    assert quality.ci_words(None) == "" and quality.ci_words(float("inf")) == ""
