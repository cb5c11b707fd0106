"""The timer's clock stock, pinned (issue 46, item 6): a clock whose marks are made ahead (CUDA
events) is stocked once, after the window opens and before the first timed mark, with two
marks per block of a whole chunk; a clock without a stock is left alone."""

from __future__ import annotations

from paradnn.measure.timer import TimingPolicy, measure
from test_timer import POLICY, FakeClock


class StockedClock(FakeClock):
    def __init__(self, durations, events):
        super().__init__(durations)
        self.events = events

    def mark(self):
        self.events.append("mark")
        return super().mark()

    def stock(self, n):
        self.events.append(("stock", n))


class Window:
    def __init__(self, events):
        self.events = events

    def begin(self):
        self.events.append("begin")

    def end(self):
        self.events.append("end")


def _first_timed(events):
    return events[events.index("begin") :][:3]


def test_a_whole_chunk_of_marks_is_stocked_when_the_window_opens():
    # 10 ms steps under a 10 s cap: chunks of min(50, 0.1 · 10 s / 10 ms) = 50 blocks
    events = []
    clock = StockedClock(lambda i: 0.010, events)
    measure(clock.step, clock, POLICY, Window(events))
    assert _first_timed(events) == ["begin", ("stock", 100), "mark"]
    assert sum(1 for e in events if isinstance(e, tuple)) == 1
    # 3 s steps: the cap is 10 samples of 3 s, a chunk of one block: two marks
    events = []
    clock = StockedClock(lambda i: 3.0, events)
    measure(clock.step, clock, POLICY, Window(events))
    assert _first_timed(events) == ["begin", ("stock", 2), "mark"]
    # a smaller max_chunk bounds the stock too
    events = []
    clock = StockedClock(lambda i: 0.010, events)
    small = TimingPolicy(min_time_s=1.0, max_time_s=10.0, warmup_min_time_s=0.3, max_chunk=7)
    measure(clock.step, clock, small, Window(events))
    assert _first_timed(events) == ["begin", ("stock", 14), "mark"]


def test_a_clock_without_a_stock_is_timed_as_before():
    clock = FakeClock(lambda i: 0.010)
    t = measure(clock.step, clock, POLICY)
    assert t.converged and clock.marks > 0


def _timing(ci_low, ci_high):
    from paradnn.measure.stats import Summary
    from paradnn.measure.timer import Timing

    s = Summary(5, 2.0, 2.25, 1.5, 3.5, 1.75, 2.5, ci_low, ci_high)
    return Timing(
        first_step_s=9.0,
        warmup_steps=12,
        warmup_s=0.75,
        warmup_converged=True,
        steps_per_sample=4,
        samples=[1.5, 1.75, 2.0, 2.5, 3.5],
        summary=s,
        converged=False,
        stop_reason="max_time",
        measure_wall_s=50.0,
        host_step_s=2.5,
        steps=20,
    )


def test_a_timing_s_record_figures_cross_as_plain_values():
    t = _timing(1.5, 3.0)
    d = t.as_dict()
    assert d == {
        "median": 2.0,
        "mean": 2.25,
        "min": 1.5,
        "q1": 1.75,
        "q3": 2.5,
        "ci_low": 1.5,
        "ci_high": 3.0,
        "ci_rel": t.summary.ci_rel,
        "n": 5,
        "steps_per_sample": 4,
        "converged": False,
        "stop_reason": "max_time",
        "first_step_s": 9.0,
        "warmup_steps": 12,
        "warmup_s": 0.75,
        "host_step_s": 2.5,
        "samples": [1.5, 1.75, 2.0, 2.5, 3.5],
    }
    assert d["ci_rel"] == 0.5 and d["samples"] is not t.samples
    assert _timing(None, None).as_dict()["ci_rel"] is None  # no CI: no figure, never ∞
