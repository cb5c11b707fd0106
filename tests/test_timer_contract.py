"""The timer's contract beyond its stopping rule: what it tells a listener and when, how many
steps its window held, how it sizes a chunk of blocks, and the statistics' edge cases. Driven
by a fake clock (no real time). Each test fails for a mutant that survived `make mutation`
(benchmarks/results/mutation.json, group `timer-stats`)."""

from __future__ import annotations

import numpy as np
import pytest

from paradnn.measure.stats import median_ci_ranks, summarize
from paradnn.measure.timer import TimingPolicy, measure


class Clock:
    """A virtual device whose steps take `step_s`; it records how the timer asks for times."""

    def __init__(self, step_s: float):
        self.t, self.step_s, self.steps, self.batches = 0.0, step_s, 0, []

    def step(self):
        self.t += self.step_s
        self.steps += 1

    def now(self):
        return self.t

    def sync(self):
        pass

    def mark(self):
        return self.t

    def elapsed(self, pairs):
        self.batches.append(len(pairs))
        return [b - a for a, b in pairs]


FAST = TimingPolicy(min_time_s=0.5, max_time_s=5.0, warmup_min_time_s=0.1)


def test_every_phase_change_is_told_even_between_rate_limited_reports():
    heard: list[dict] = []
    clock = Clock(0.001)  # the warm-up's last report is < 1 s before the timed phase starts
    t = measure(clock.step, clock, FAST, progress=heard.append)
    assert heard[0] == {"phase": "first step"}
    assert heard[1] == {"phase": "warm-up", "steps": 0, "step_s": pytest.approx(0.001)}
    timed = {"phase": "timed", "samples": 0, "steps_per_sample": t.steps_per_sample}
    assert heard.count(timed) == 1
    later = heard[heard.index(timed) + 1 :]
    assert all(e["phase"] == "timed" and e["samples"] > 0 for e in later)


def test_the_window_counts_exactly_the_timed_steps():
    clock = Clock(0.001)
    t = measure(clock.step, clock, TimingPolicy(min_time_s=0.5, min_block_s=0.002))
    assert t.steps_per_sample == 2
    assert t.steps == clock.steps - 1 - t.warmup_steps  # not the first step, not the warm-up
    assert t.steps == len(t.samples) * t.steps_per_sample
    assert t.host_step_s == pytest.approx(t.measure_wall_s / t.steps)


@pytest.mark.parametrize(
    ("step_s", "policy", "chunk"),
    [
        (0.001, FAST, 50),  # short steps: as many blocks per read-out as max_chunk allows
        (1.0, TimingPolicy(min_time_s=1, max_time_s=10, warmup_min_time_s=0), 1),  # 10% of cap
        # min_samples × block outlasts max_time: the cap (and so the chunk) grows with it
        (0.01, TimingPolicy(min_samples=1000, max_samples=1000, max_time_s=1, max_chunk=10**6,
                            warmup_min_time_s=0, target_ci_rel=1.0), 100),
        # an energy window's minimum length lifts the cap too
        (0.01, TimingPolicy(min_window_s=20, max_time_s=1, max_chunk=10**6, min_time_s=0,
                            warmup_min_time_s=0, target_ci_rel=1.0), 200),
    ],
)  # fmt: skip
def test_a_chunk_is_a_tenth_of_the_cap_in_blocks(step_s, policy, chunk):
    clock = Clock(step_s)
    t = measure(clock.step, clock, policy)
    assert t.steps_per_sample == 1
    assert clock.batches[0] == chunk


def test_the_median_interval_includes_a_rank_whose_tail_is_exactly_alpha_over_two():
    # n = 2 at 50%: P(B ≤ 0) = 0.25 = α/2 exactly, so x_(1)..x_(2) covers 50%
    assert median_ci_ranks(2, 0.5) == (0, 1)
    assert median_ci_ranks(1, 0.5) is None


def test_summarize_uses_the_confidence_it_is_given():
    x = list(range(1, 21))
    wide, narrow = summarize(x, 0.99), summarize(x, 0.5)
    assert (wide.ci_low, wide.ci_high) == (4.0, 17.0)
    assert (narrow.ci_low, narrow.ci_high) == (8.0, 13.0)  # P(B ≤ 7) = 0.13 ≤ 0.25 < P(B ≤ 8)


def test_summarize_takes_integer_samples_and_refuses_none():
    s = summarize(np.arange(1, 11))
    assert (s.ci_low, s.median, s.ci_high) == (2.0, 5.5, 9.0)
    assert summarize([3.0]).median == 3.0  # one sample is a summary (without an interval)
    with pytest.raises(ValueError, match=r"^no samples to summarize$"):
        summarize([])


class Exact(Clock):
    """Durations in binary fractions (exact sums) from a function of the step index, on a clock
    that does not start at zero (so a sign slip in `now() - start` shows)."""

    def __init__(self, durations):
        super().__init__(0.0)
        self.t, self.durations = 1024.0, durations

    def step(self):
        self.t += self.durations(self.steps)
        self.steps += 1


def test_warm_up_and_timed_phase_stop_exactly_at_their_bounds():
    clock = Exact(lambda i: 0.125)
    policy = TimingPolicy(
        warmup_min_steps=5, warmup_min_time_s=1.25, min_samples=10, min_time_s=1.25,
        min_window_s=1.25, max_time_s=60, max_chunk=1, target_ci_rel=0.02,
    )  # fmt: skip
    t = measure(clock.step, clock, policy)
    assert t.first_step_s == 0.125
    assert (t.warmup_steps, t.warmup_s, t.warmup_converged) == (10, 1.25, True)  # 10 × 0.125
    assert (len(t.samples), t.converged, t.stop_reason) == (10, True, "ci_target")
    assert t.measure_wall_s == 1.25 and t.steps == 10 and t.host_step_s == 0.125


def test_a_time_cap_and_the_minimum_sample_count_stop_at_equality():
    # warm-up never settles (5-step windows alternate), so it stops at its step cap; the timed
    # steps alternate 0.5/0.25 s (no CI target met) until 8 samples fill the 3 s cap exactly
    clock = Exact(lambda i: 0.5 if i % 2 else 0.25)
    policy = TimingPolicy(
        warmup_min_steps=5, warmup_max_steps=10, warmup_min_time_s=0, min_samples=8,
        min_time_s=0, max_time_s=3.0, max_chunk=1, target_ci_rel=0.01,
    )  # fmt: skip
    t = measure(clock.step, clock, policy)
    assert (t.warmup_steps, t.warmup_converged) == (10, False)
    assert t.warmup_s == 3.75  # 5 × (0.5 + 0.25)
    assert (len(t.samples), t.stop_reason, t.converged) == (8, "max_time", False)


def test_the_warm_up_time_cap_stops_at_equality():
    clock = Exact(lambda i: 0.5 if i % 2 else 0.25)
    policy = TimingPolicy(warmup_max_steps=1000, warmup_max_time_s=3.75, max_chunk=1)
    assert measure(clock.step, clock, policy).warmup_steps == 10


def test_steps_that_take_no_time_end_at_the_sample_cap_without_dividing_by_zero():
    clock = Exact(lambda i: 0.0)
    policy = TimingPolicy(
        min_block_s=0,
        min_samples=10,
        max_samples=20,
        warmup_max_steps=30,
        max_chunk=1,
        warmup_min_time_s=0,
    )
    t = measure(clock.step, clock, policy)
    assert (t.warmup_steps, t.warmup_converged) == (30, False)
    assert (len(t.samples), t.stop_reason) == (20, "max_samples")


def test_rate_limited_reports_carry_the_current_numbers():
    heard: list[dict] = []
    clock = Exact(lambda i: 0.5)
    policy = TimingPolicy(warmup_min_time_s=0, min_samples=8, max_chunk=1, min_time_s=4)
    measure(clock.step, clock, policy, progress=heard.append)
    # the speaker spoke at step 0 of the warm-up; 1 s later (exactly) it may speak again
    assert heard[2] == {"phase": "warm-up", "steps": 2, "step_s": 0.5}
    timed = [e for e in heard if e["phase"] == "timed" and e["samples"] >= 8]
    assert timed and timed[0] == {"phase": "timed", "samples": timed[0]["samples"],
                                  "median_s": 0.5, "ci_rel": 0.0}  # fmt: skip


def test_windows_begin_in_order_and_end_in_reverse_skipping_none():
    from paradnn.measure.timer import Windows

    seen: list[str] = []

    class W:
        def __init__(self, name):
            self.name = name

        def begin(self):
            seen.append("begin " + self.name)

        def end(self):
            seen.append("end " + self.name)

    w = Windows(W("energy"), None, W("load"))
    assert len(w.windows) == 2
    w.begin()
    w.end()
    assert seen == ["begin energy", "begin load", "end load", "end energy"]


@pytest.mark.parametrize("step_s", [1e-4, 0.01, 0.2])
@pytest.mark.parametrize("warmup_min_steps", [1, 5, 12])
def test_the_estimates_least_seconds_are_what_the_timer_spends_at_least(step_s, warmup_min_steps):
    """The dry run and the GPU sample budget a run by TimingPolicy.least_seconds: a steady step
    never converges sooner than warmup_least_steps (two windows of 5 to compare), and its
    warm-up plus timed phase never take less than least_seconds says."""
    policy = TimingPolicy(
        min_time_s=0.5, max_time_s=5.0, warmup_min_time_s=0.1, warmup_min_steps=warmup_min_steps
    )
    clock = Clock(step_s)
    t = measure(clock.step, clock, policy)
    assert policy.warmup_least_steps == max(warmup_min_steps, 10)
    assert t.warmup_steps >= policy.warmup_least_steps
    if policy.warmup_max_steps * step_s < policy.warmup_min_time_s:  # the step cap stops it
        assert not t.warmup_converged and t.warmup_steps == policy.warmup_max_steps
    elif policy.warmup_least_steps * step_s > 2 * policy.warmup_min_time_s:  # steps decide
        assert t.warmup_converged and t.warmup_steps == policy.warmup_least_steps
    assert t.warmup_s + t.measure_wall_s >= policy.least_seconds(step_s) * (1 - 1e-9)
    warm = min(
        max(policy.warmup_min_time_s, policy.warmup_least_steps * step_s),
        policy.warmup_max_steps * step_s,
    )
    timed = max(policy.min_time_s, policy.min_samples * max(step_s, policy.min_block_s))
    assert policy.least_seconds(step_s) == pytest.approx(warm + timed)
