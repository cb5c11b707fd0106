"""The timer in lock step (measure/timer.py with measure/collectives.py's agreement and clock)
and the isolated all-reduce, in process, on a fake clock and fake collectives: every number is
known, so a wrong rank taken as the sample, a wrong block size or sample count, or a wrong
bandwidth formula fails here (the real runs are only reached through subprocesses, which
mutation testing cannot see)."""

from __future__ import annotations

import types

import pytest
import torch

from paradnn.config import TimingPolicy
from paradnn.measure import collectives as C
from paradnn.measure.timer import measure


class Clock:
    def __init__(self) -> None:
        self.t = 100.0
        self.barriers = 0

    def __call__(self) -> float:
        return self.t

    def tick(self, dt: float) -> None:
        self.t += dt


class FakeAgree:
    """`world` ranks; every other rank reports this rank's values times `slow`."""

    def __init__(self, world: int = 2, slow: float = 1.5) -> None:
        self.device = torch.device("cpu")
        self.world, self.slow = world, slow
        self.barriers = 0

    def sync(self) -> None:
        pass

    def barrier(self) -> None:
        self.barriers += 1

    def gather(self, values: list[float]) -> list[list[float]]:
        return [list(values)] + [[v * self.slow for v in values]] * (self.world - 1)

    def max(self, value: float) -> float:
        return max(v[0] for v in self.gather([value]))


def lockstep(step, agree, policy, **kw):
    """The one timer in lock step, as a rank runs it (runner/rank.py)."""
    return measure(step, C.RankClock(agree), policy, agree=agree, **kw)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(C, "time", types.SimpleNamespace(perf_counter=c))
    return c


def _policy(**kw) -> TimingPolicy:
    base = dict(min_samples=3, max_samples=5, min_time_s=0.0, max_time_s=10.0,
                warmup_min_steps=2, warmup_min_time_s=0.0, warmup_max_steps=50,
                warmup_max_time_s=100.0, target_ci_rel=0.02, min_block_s=0.05)  # fmt: skip
    return TimingPolicy(**(base | kw))


def test_busbw_and_overlap_at_their_edges():
    assert C.busbw(8.0, 4) == pytest.approx(12.0)  # 2 (n − 1) / n = 1.5
    assert C.busbw(8.0, 2) == pytest.approx(8.0) and C.busbw(8.0, 1) == 0.0
    assert C.overlap_fraction(1.0, 0.5, 1.0) == (1.0, 1.0)  # fully hidden
    assert C.overlap_fraction(1.0, 0.5, 1.5) == (0.0, 0.0)  # fully exposed
    assert C.overlap_fraction(1.0, 0.5, 2.0) == (0.0, -1.0)  # slower than serial: clipped
    clipped, raw = C.overlap_fraction(1.0, 0.5, 0.5)
    assert (clipped, raw) == (1.0, 2.0)
    clipped, raw = C.overlap_fraction(1.0, 0.0, 1.0)
    assert clipped != clipped and raw != raw  # no all-reduce: no fraction (NaN), not 0


def test_a_fixed_block_lockstep_takes_the_slowest_rank_of_each_block(clock):
    agree = FakeAgree(world=2, slow=1.5)
    window = types.SimpleNamespace(calls=[])
    window.begin = lambda: window.calls.append(("begin", clock.t))
    window.end = lambda: window.calls.append(("end", clock.t))
    r = lockstep(lambda: clock.tick(0.010), agree, _policy(), k=2, samples_cap=4,
                   window=window)  # fmt: skip
    assert r.first_step_s == pytest.approx(0.015)  # the slower rank's first step
    assert r.warmup_steps == 2  # a fixed k warms up for warmup_min_steps only
    assert r.steps_per_sample == 2 and r.steps == 8 and len(r.samples) == 4
    assert r.samples == pytest.approx([0.015] * 4)  # per step, the slowest rank
    assert r.per_rank[0] == pytest.approx([0.010] * 4)
    assert r.per_rank[1] == pytest.approx([0.015] * 4)
    assert (r.stop_reason, r.converged) == ("fixed_count", False)
    assert r.summary.median == pytest.approx(0.015) and r.summary.n == 4
    assert [w for w, _ in window.calls] == ["begin", "end"]
    assert window.calls[1][1] - window.calls[0][1] == pytest.approx(8 * 0.010)
    assert r.measure_wall_s == pytest.approx(0.080)
    assert agree.barriers == 1 + 4  # before the first step and before each block


def test_lockstep_sizes_its_blocks_from_the_warm_up_and_stops_at_the_ci_target(clock):
    r = lockstep(lambda: clock.tick(0.010), FakeAgree(), _policy(max_samples=50))
    # warm-up until stable: at least 10 steps, then the last five against the five before
    assert r.warmup_steps == 10
    # block = ceil(min_block_s / the agreed step) = ceil(0.05 / 0.015) = 4 steps
    assert r.steps_per_sample == 4
    # identical samples: a zero-width CI meets the target as soon as the median has a 95%
    # interval at all (6 samples; min_samples is 3)
    assert (r.stop_reason, r.converged, len(r.samples)) == ("ci_target", True, 6)
    assert r.steps == 24 and r.summary.ci_rel == 0.0


def test_lockstep_stops_at_max_samples_or_at_its_time_cap_without_converging(clock):
    times = iter([0.010, 0.030] * 1000)  # alternating: the CI never meets 0.1%
    step = lambda: clock.tick(next(times))  # noqa: E731
    r = lockstep(step, FakeAgree(), _policy(target_ci_rel=0.001), k=1)
    assert (r.stop_reason, r.converged, len(r.samples)) == ("max_samples", False, 5)
    # a time cap shorter than min_samples blocks: the blocks min_samples need, not fewer
    times = iter([0.010, 0.030] * 1000)
    r = lockstep(step, FakeAgree(), _policy(target_ci_rel=0.001, max_time_s=0.0,
                                              max_samples=50))  # fmt: skip
    assert r.stop_reason == "max_time" and not r.converged
    assert len(r.samples) == 3  # min_samples: the cap is met by then


@pytest.mark.parametrize(("max_time_s", "count"), [(0.1, 10), (10.0, 83)])
def test_an_isolated_allreduce_times_blocks_of_reps_on_the_slowest_rank(
    clock, monkeypatch, max_time_s, count
):
    calls = []

    def all_reduce(buf):
        calls.append(buf.numel())
        clock.tick(0.002)

    monkeypatch.setattr(C, "dist", types.SimpleNamespace(all_reduce=all_reduce))
    agree = FakeAgree(world=4, slow=1.5)
    out = C.allreduce_time(4000, torch.float32, agree, _policy(max_time_s=max_time_s,
                                                                min_samples=10, max_samples=500,
                                                                min_block_s=0.01))  # fmt: skip
    # warm-up 2 ms per call, agreed 3 ms (the slowest rank): reps = ceil(0.01 / 0.003) = 4;
    # samples = max(min_samples, min(200, int(budget / (reps · 3 ms)))), budget =
    # min(1 s, max(max_time_s, 0.05)): 0.1 s -> 8 -> 10; 10 s -> 1 s -> 83
    assert out["reps_per_sample"] == 4 and out["n_samples"] == count
    assert len(calls) == 3 + 4 * count and set(calls) == {1000}  # 4000 bytes of fp32
    assert out["bytes"] == 4000
    assert out["time_s"] == pytest.approx(0.003)
    assert out["ci_low_s"] == pytest.approx(0.003) and out["ci_high_s"] == pytest.approx(0.003)
    assert out["algbw"] == pytest.approx(4000 / 0.003)
    assert out["busbw"] == pytest.approx(4000 / 0.003 * 1.5)  # 2 (4 − 1) / 4


def test_an_allreduce_smaller_than_one_element_sends_one(clock, monkeypatch):
    monkeypatch.setattr(C, "dist", types.SimpleNamespace(all_reduce=lambda buf: clock.tick(0.001)))
    out = C.allreduce_time(3, torch.float32, FakeAgree(world=2), _policy(min_samples=3))
    assert out["bytes"] == 4 and out["busbw"] == pytest.approx(out["algbw"])


def test_the_ranks_warm_up_goes_on_until_the_step_time_settles_relative_to_itself(clock):
    # six slow warm-up steps, then steps half as long: the last five differ from the five
    # before by 100% of the step (not by 0.015 s × 0.015 s), so the warm-up goes on until
    # the five before have settled too, at step 14
    times = iter([0.020] + [0.020] * 6 + [0.010] * 1000)
    r = lockstep(lambda: clock.tick(next(times)), FakeAgree(), _policy(max_samples=50))
    assert r.warmup_steps == 14
    assert r.steps_per_sample == 4  # ceil(0.05 / 0.015): sized on the settled step


def test_agree_gathers_every_ranks_values_over_a_real_process_group(tmp_path):
    import torch.distributed as dist

    if dist.is_initialized():  # pragma: no cover - another test left a group behind
        pytest.skip("a default process group already exists in this process")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rdv'}", rank=0, world_size=1)
    try:
        agree = C.Agree(torch.device("cpu"))
        assert agree.world == 1
        assert agree.gather([1.0, 2.5]) == [[1.0, 2.5]]
        # in float64: a time of 0.1 s or 2^24 + 1 ns comes back whole (float32 would round)
        assert agree.gather([0.1, 16777217.0]) == [[0.1, 16777217.0]]
        assert agree.max(0.25) == 0.25
        agree.barrier()  # a CPU group: no device to synchronise, the group's barrier alone
    finally:
        dist.destroy_process_group()


def test_a_16_bit_allreduce_sends_its_own_dtype(clock, monkeypatch):
    sent = []

    def all_reduce(buf):
        sent.append((buf.numel(), buf.dtype))
        clock.tick(0.001)

    monkeypatch.setattr(C, "dist", types.SimpleNamespace(all_reduce=all_reduce))
    out = C.allreduce_time(4000, torch.bfloat16, FakeAgree(world=2), _policy(min_samples=3))
    assert set(sent) == {(2000, torch.bfloat16)} and out["bytes"] == 4000


def test_a_warm_up_of_steps_too_short_to_time_ends_at_its_cap(clock):
    # the clock does not move during the warm-up (steps below its resolution): no relative
    # change to compute, so the warm-up runs to warmup_max_steps instead of dividing by zero
    times = iter([0.010] + [0.0] * 12 + [0.010] * 1000)
    r = lockstep(lambda: clock.tick(next(times)), FakeAgree(),
                   _policy(warmup_max_steps=12, min_block_s=1e-9, max_samples=20))  # fmt: skip
    assert r.warmup_steps == 12 and r.steps_per_sample == 1 and r.summary.n >= 3


def test_the_time_cap_is_min_samples_blocks_at_the_warm_up_pace(clock):
    # warm-up at 20 ms a step (agreed 30 ms): blocks of k = ceil(0.05 / 0.03) = 2 steps and a
    # cap of min_samples × k × 30 ms = 0.18 s; the timed steps then run at 10 ms (agreed 15),
    # 30 ms of agreed time a block, so the cap is reached after 6 blocks, not after 3
    import itertools

    timed = itertools.cycle([0.009, 0.009, 0.011, 0.011])  # blocks alternate: no convergence
    times = itertools.chain([0.020] * 11, timed)
    r = lockstep(lambda: clock.tick(next(times)), FakeAgree(),
                   _policy(max_time_s=0.0, target_ci_rel=0.001, max_samples=50))  # fmt: skip
    assert (r.warmup_steps, r.steps_per_sample) == (10, 2)
    assert r.stop_reason == "max_time" and len(r.samples) == 6


def test_a_cuda_agreement_synchronises_its_device_before_the_barrier(monkeypatch):
    events = []
    monkeypatch.setattr(C.torch.cuda, "synchronize", lambda d: events.append(("sync", str(d))))
    monkeypatch.setattr(C, "dist", types.SimpleNamespace(barrier=lambda: events.append("barrier")))
    agree = C.Agree.__new__(C.Agree)
    agree.device, agree.world = torch.device("cuda:1"), 2
    agree.barrier()
    assert events == [("sync", "cuda:1"), "barrier"]
    events.clear()
    agree.device = torch.device("cpu")
    agree.barrier()
    assert events == ["barrier"]


def test_a_rank_clock_marks_after_its_device_finished(clock):
    syncs = []
    agree = types.SimpleNamespace(sync=lambda: syncs.append(clock()))
    rc = C.RankClock(agree)
    assert rc.agree is agree and rc.now() == 100.0 and syncs == []
    clock.tick(0.5)
    assert rc.mark() == 100.5 and syncs == [100.5]
    rc.sync()
    assert syncs == [100.5, 100.5]
    assert rc.elapsed([(1.0, 1.5), (2.0, 4.0)]) == [0.5, 2.0]


@pytest.mark.parametrize(
    ("policy", "tick", "reps", "count"),
    [
        # a quick policy (max_time_s 0): a budget of 0.05 s, 4 × 3 ms a sample -> 4 samples
        (dict(max_time_s=0.0, min_samples=3, min_block_s=0.01), 0.002, 4, 4),
        # 3 ms a sample under a 1 s budget: 333, at most 200
        (dict(max_time_s=10.0, min_samples=3, min_block_s=1e-9), 0.002, 1, 200),
        # never fewer than min_samples, whatever the budget
        (dict(max_time_s=0.0, min_samples=7, min_block_s=0.01), 0.002, 4, 7),
    ],
)
def test_the_allreduce_ladder_s_sample_count_and_its_bounds(clock, monkeypatch, policy, tick,
                                                           reps, count):  # fmt: skip
    monkeypatch.setattr(C, "dist", types.SimpleNamespace(all_reduce=lambda buf: clock.tick(tick)))
    base = dict(max_samples=500)
    out = C.allreduce_time(4000, torch.float32, FakeAgree(world=4), _policy(**(base | policy)))
    assert (out["reps_per_sample"], out["n_samples"]) == (reps, count)


def test_an_allreduce_too_quick_to_time_has_no_bandwidth(clock, monkeypatch):
    monkeypatch.setattr(C, "dist", types.SimpleNamespace(all_reduce=lambda buf: None))
    out = C.allreduce_time(4000, torch.float32, FakeAgree(world=2), _policy(min_block_s=1e-9))
    assert out["time_s"] == 0.0 and out["reps_per_sample"] == 1 and out["n_samples"] == 200
    assert out["algbw"] != out["algbw"] and out["busbw"] != out["busbw"]  # NaN, never ∞ or 0
