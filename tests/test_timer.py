"""The timing policy, driven by a fake clock: no test here depends on real time."""

import math
import random

import pytest

from paradnn.errors import ConfigError
from paradnn.measure.stats import median_ci_ranks, summarize
from paradnn.measure.timer import HostClock, TimingPolicy, measure


class FakeClock:
    """A virtual device: each step advances time by a duration drawn from `durations`."""

    def __init__(self, durations):
        self.t = 0.0
        self.durations = durations
        self.syncs = 0
        self.steps = 0
        self.marks = 0

    def step(self):
        self.t += self.durations(self.steps)
        self.steps += 1

    def now(self):
        return self.t

    def sync(self):
        self.syncs += 1

    def mark(self):
        self.marks += 1
        return self.t

    def elapsed(self, pairs):
        return [b - a for a, b in pairs]


POLICY = TimingPolicy(min_time_s=1.0, max_time_s=10.0, warmup_min_time_s=0.3)


def test_steady_step_converges_to_the_true_median():
    clock = FakeClock(lambda i: 0.010)
    t = measure(clock.step, clock, POLICY)
    assert t.summary.median == pytest.approx(0.010)
    assert t.converged and t.stop_reason == "ci_target"
    assert t.summary.n >= POLICY.min_samples
    # the minimum time is honoured before stopping
    assert sum(t.samples) * t.steps_per_sample >= POLICY.min_time_s - 1e-9
    assert t.warmup_converged


def test_first_step_is_timed_on_its_own():
    clock = FakeClock(lambda i: 2.0 if i == 0 else 0.01)
    t = measure(clock.step, clock, POLICY)
    assert t.first_step_s == pytest.approx(2.0)
    assert 2.0 not in t.samples
    assert t.summary.max == pytest.approx(0.01)


def test_warmup_runs_until_step_time_is_stable():
    # a clock ramp: steps start 2× slower and settle exponentially
    clock = FakeClock(lambda i: 0.01 * (1 + math.exp(-i / 10)))
    t = measure(clock.step, clock, POLICY)
    assert t.warmup_converged
    assert t.warmup_steps >= 20  # windows of 5 differ by >5% until about step 25
    assert t.summary.median == pytest.approx(0.01, rel=0.02)


def test_warmup_gives_up_at_its_cap_and_says_so():
    clock = FakeClock(lambda i: 0.001 * 1.02**i)  # each window of 5 is 10% slower: never stable
    t = measure(clock.step, clock, POLICY)
    assert not t.warmup_converged
    assert t.warmup_steps == POLICY.warmup_max_steps or t.warmup_s >= POLICY.warmup_max_time_s


def test_short_steps_are_timed_in_blocks_without_syncs_inside():
    clock = FakeClock(lambda i: 0.0001)  # 0.1 ms: 10 steps per 1 ms block
    t = measure(clock.step, clock, POLICY)
    assert t.steps_per_sample == 10
    assert t.summary.median == pytest.approx(0.0001)
    # marks bracket blocks, so two marks per sample
    assert clock.marks == 2 * t.summary.n
    steps_measured = t.summary.n * t.steps_per_sample
    warm_and_cold = 1 + t.warmup_steps
    assert clock.steps == steps_measured + warm_and_cold
    # syncs: cold step (2) + one per warm-up step + one at the end, never per measured step
    assert clock.syncs == 2 + t.warmup_steps + 1


def test_noisy_steps_hit_the_time_cap_and_say_so():
    rng = random.Random(0)
    clock = FakeClock(lambda i: 0.01 * rng.lognormvariate(0, 0.5))
    t = measure(clock.step, clock, POLICY)
    assert not t.converged
    assert t.stop_reason == "max_time"
    spent = sum(t.samples) * t.steps_per_sample
    assert POLICY.max_time_s <= spent <= POLICY.max_time_s * 1.15


def test_moderate_noise_converges_within_two_percent():
    rng = random.Random(1)
    clock = FakeClock(lambda i: 0.01 * (1 + rng.gauss(0, 0.03)))
    t = measure(clock.step, clock, POLICY)
    assert t.converged
    assert t.summary.ci_rel <= 0.02
    assert t.summary.median == pytest.approx(0.01, rel=0.02)


def test_slow_steps_still_give_the_minimum_sample_count():
    clock = FakeClock(lambda i: 3.0)  # 3 s per step, 10 s cap
    policy = TimingPolicy(
        min_time_s=1.0,
        max_time_s=10.0,
        warmup_min_steps=1,
        warmup_max_steps=12,
        warmup_max_time_s=30.0,
    )
    t = measure(clock.step, clock, policy)
    assert t.summary.n >= policy.min_samples


def test_max_samples_bound():
    clock = FakeClock(lambda i: 0.01 * (1 + 0.5 * (i % 2)))
    policy = TimingPolicy(min_time_s=0.0, max_time_s=86_400.0, max_samples=30, max_chunk=7)
    t = measure(clock.step, clock, policy)
    assert t.stop_reason == "max_samples"
    assert 30 <= t.summary.n < 30 + 7


def test_host_clock_reads_monotonic_time():
    c = HostClock()
    a = c.mark()
    b = c.mark()
    assert c.elapsed([(a, b)])[0] >= 0


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"min_samples": 1}, "timing.min_samples"),
        ({"max_samples": 3}, "timing.max_samples"),
        ({"target_ci_rel": 0}, "timing.target_ci_rel"),
        ({"confidence": 1.0}, "timing.confidence"),
        ({"min_time_s": 5.0, "max_time_s": 1.0}, "timing.max_time_s"),
    ],
)
def test_policy_validation(kw, field):
    with pytest.raises(ConfigError, match=field):
        TimingPolicy(**kw)


def test_median_ci_ranks():
    assert median_ci_ranks(5) is None  # too few samples for a 95% interval
    assert median_ci_ranks(10) == (1, 8)  # x_(2)..x_(9), coverage 97.9%
    from scipy.stats import binom

    for n in (6, 10, 37, 100, 1000):
        lo, hi = median_ci_ranks(n)
        coverage = binom.cdf(hi, n, 0.5) - binom.cdf(lo, n, 0.5)
        assert coverage >= 0.95
        # and it is the tightest symmetric one
        tighter = binom.cdf(hi - 1, n, 0.5) - binom.cdf(lo + 1, n, 0.5)
        assert tighter < 0.95


def test_summary_statistics():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert s.median == 5.5 and s.min == 1.0 and s.max == 10.0 and s.mean == 5.5
    assert (s.ci_low, s.ci_high) == (2.0, 9.0)
    assert s.iqr == pytest.approx(4.5)
    assert s.ci_rel == pytest.approx(3.5 / 5.5)
    assert math.isinf(summarize([1.0, 2.0]).ci_rel)
