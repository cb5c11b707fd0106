"""What the timer tells people and how its rules are sized, pinned exactly: the progress words,
the quiet period before a kernel's progress is news, the confidence the stopping rule uses, and
the warm-up's two five-step windows. Driven by a fake clock with binary-fraction durations (exact
sums). Each test fails for mutants that survived `make mutation` (group `timer-stats`)."""

from __future__ import annotations

import math

import pytest

from paradnn.measure import timer as T
from paradnn.measure.stats import summarize
from paradnn.measure.timer import HostClock, TimingPolicy, measure, progress_words, told_after
from test_timer_contract import Exact


@pytest.mark.parametrize(
    ("info", "words"),
    [
        ({"phase": "first step"}, "first step"),
        ({"phase": "warm-up", "steps": 0, "step_s": 0.5}, "warm-up"),  # no steps yet: no rate
        ({"phase": "warm-up", "steps": 3, "step_s": 0.0123456}, "warm-up, 3 steps, 12.3 ms/step"),
        ({"phase": "timed", "samples": 0, "steps_per_sample": 2}, "timed"),
        (
            {"phase": "timed", "samples": 12, "median_s": 0.25, "ci_rel": 0.0125},
            "timed, 12 samples, median 250 ms, CI ±1.2%",
        ),
        # an interval not known yet (one sample) is left out, not printed as ±inf%
        ({"phase": "timed", "samples": 1, "median_s": 0.002, "ci_rel": math.inf},
         "timed, 1 samples, median 2 ms"),
        ({"phase": "timed", "samples": 4, "median_s": 0.002, "ci_rel": None},
         "timed, 4 samples, median 2 ms"),
        # milliseconds are seconds × 1000 exactly: 0.9 s is 900 ms, not 901
        ({"phase": "timed", "samples": 4, "median_s": 0.9, "ci_rel": None},
         "timed, 4 samples, median 900 ms"),
        # the supervisor adds the worker's seconds on the job
        ({"phase": "timed", "samples": 4, "median_s": 0.002, "ci_rel": 0.5, "elapsed_s": 41.6},
         "timed, 4 samples, median 2 ms, CI ±50.0%, 42 s"),
        ({"phase": "warm-up", "steps": 2, "step_s": 1.5, "elapsed_s": 0.0},
         "warm-up, 2 steps, 1.5e+03 ms/step, 0 s"),
        # a phase's numbers are read only in that phase; an unknown phase is just its name
        ({"phase": "warm-up", "samples": 5, "median_s": 1.0}, "warm-up"),
        ({"phase": "timed", "steps": 5, "step_s": 1.0}, "timed"),
        ({"elapsed_s": 3.0}, "3 s"),
    ],
)  # fmt: skip
def test_progress_words(info, words):
    assert progress_words(info) == words


class Monotonic:
    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_told_after_is_silent_until_the_quiet_period_has_passed(monkeypatch):
    now = Monotonic(100.0)
    monkeypatch.setattr(T.time, "monotonic", now)
    said: list[str] = []
    heard = told_after(said.append, "matmul-4096", quiet_s=2.0)
    heard({"phase": "first step"})
    now.t = 101.999
    heard({"phase": "warm-up", "steps": 1, "step_s": 0.5})
    assert said == []
    now.t = 102.0  # exactly the quiet period: news from now on
    heard({"phase": "warm-up", "steps": 2, "step_s": 0.5})
    now.t = 250.0
    heard({"phase": "timed", "samples": 3, "median_s": 0.5, "ci_rel": 0.02})
    assert said == [
        "matmul-4096: warm-up, 2 steps, 500 ms/step",
        "matmul-4096: timed, 3 samples, median 500 ms, CI ±2.0%",
    ]


def test_told_after_defaults_to_the_module_quiet_period(monkeypatch):
    now = Monotonic(0.0)
    monkeypatch.setattr(T.time, "monotonic", now)
    said: list[str] = []
    heard = told_after(said.append, "conv")
    now.t = T.QUIET_S - 1e-3
    heard({"phase": "first step"})
    now.t = T.QUIET_S
    heard({"phase": "first step"})
    assert said == ["conv: first step"]


def test_host_clock_elapsed_is_end_minus_start():
    assert HostClock().elapsed([(1.0, 3.5), (10.0, 10.25)]) == [2.5, 0.25]


def test_a_fresh_speaker_may_speak_without_being_forced():
    heard: list[dict] = []
    clock = Exact(lambda i: 0.0)
    say = T._Speaker(heard.append, clock)
    assert say.due()
    say({"phase": "warm-up"})
    assert heard == [{"phase": "warm-up"}]
    say({"phase": "warm-up", "steps": 1})  # no time has passed: rate-limited
    assert len(heard) == 1


def _scattered(i: int) -> float:
    return 0.25 + ((i * 3) % 13) / 64  # 13 durations from 0.25 to 0.4375 s, exact


POLICY_99 = dict(
    warmup_min_time_s=0, warmup_max_steps=10, min_samples=10, min_time_s=0, max_time_s=1000,
    max_samples=500, max_chunk=1, min_block_s=0, target_ci_rel=0.2,
)  # fmt: skip


def test_the_stopping_rule_the_summary_and_the_reports_use_the_policys_confidence():
    heard: list[dict] = []
    clock = Exact(_scattered)
    t = measure(
        clock.step, clock, TimingPolicy(confidence=0.99, **POLICY_99), progress=heard.append
    )
    # at 99% the ±20% target is first met at 18 samples (at 95% it would be at 10)
    assert (len(t.samples), t.stop_reason) == (18, "ci_target")
    for n in range(10, 18):
        assert summarize(t.samples[:n], 0.99).ci_rel > 0.2
    assert summarize(t.samples[:10], 0.95).ci_rel <= 0.2
    at99, at95 = summarize(t.samples, 0.99), summarize(t.samples, 0.95)
    assert (at99.ci_low, at99.ci_high) != (at95.ci_low, at95.ci_high)
    assert (t.summary.ci_low, t.summary.ci_high) == (at99.ci_low, at99.ci_high)
    reports = [e for e in heard if e["phase"] == "timed" and e["samples"] > 0]
    assert reports
    differs = 0
    for e in reports:
        first = t.samples[: e["samples"]]
        assert e["ci_rel"] == summarize(first, 0.99).ci_rel
        differs += e["ci_rel"] != summarize(first, 0.95).ci_rel
    assert differs  # the reports would read otherwise at the default confidence


def test_the_ci_target_is_met_at_equality():
    clock = Exact(_scattered)
    probe = measure(clock.step, clock, TimingPolicy(confidence=0.99, **POLICY_99))
    exact = summarize(probe.samples[:12], 0.99).ci_rel  # the interval at 12 samples, as a target
    assert summarize(probe.samples[:11], 0.99).ci_rel > exact  # not met one sample earlier
    policy = TimingPolicy(
        confidence=0.99, **{**POLICY_99, "min_samples": 11, "target_ci_rel": exact}
    )
    clock = Exact(_scattered)
    t = measure(clock.step, clock, policy)
    assert (len(t.samples), t.stop_reason) == (12, "ci_target")


# Warm-up durations (s) after a 3 s cold step: found so that the two windows of exactly five
# steps settle within 25% first at step 17 (median 1.0 of steps 13–17 against 1.25 of 8–12, a
# gap of exactly the tolerance), while windows of six, a window starting at step 6, or a strict
# comparison would stop at 15, 16 or 22.
WARM = [2.0, 1.25, 1.0, 1.25, 1.25, 0.5, 1.25, 1.0, 0.75, 1.25, 0.75, 0.5, 0.75, 1.0, 1.0, 0.75,
        1.5, 1.0, 1.25, 1.0, 1.5, 1.0, 2.0, 1.25]  # fmt: skip


def test_the_warm_up_compares_two_windows_of_exactly_five_steps():
    clock = Exact(lambda i: 3.0 if i == 0 else WARM[i - 1] if i <= len(WARM) else 1.0)
    policy = TimingPolicy(
        warmup_min_steps=12, warmup_min_time_s=0, warmup_max_steps=1000, warmup_tolerance=0.25,
        min_block_s=1.0, min_samples=10, min_time_s=0, max_chunk=1, target_ci_rel=0.5,
    )  # fmt: skip
    t = measure(clock.step, clock, policy)
    assert (t.warmup_steps, t.warmup_converged) == (17, True)
    assert t.warmup_s == sum(WARM[:17])
    # the step estimate is the median of the last five warm-up steps (1.0 s): one step fills
    # a 1 s block; the median of six (0.875 s) would need two
    assert t.steps_per_sample == 1
