"""The doctor's sanity checks pinned whole (issue 46, item 6): every field of a rate, every
word of a verdict and of a comparison with the stored ceiling, each threshold from both sides
(an interval exactly at a threshold, within EPS of it, and beyond it), the stored ceiling's
row filters and its same-size rule, and the budget's arithmetic on a fake clock. Rates are
built from exact binary fractions, so no verdict here hangs on a float's last bit."""

from __future__ import annotations

import pytest

from paradnn.measure import sanity as S

CPU_ADVICE = (
    "other processes on these CPUs (see `others`), fewer threads than cores (affinity, a "
    "cgroup quota, OMP_NUM_THREADS), a power-saving frequency governor (`cpupower "
    "frequency-info`), or the hypervisor's steal on a VM"
)
GPU_ADVICE = (
    "clocks locked low or throttled (`nvidia-smi -q -d CLOCK,PERFORMANCE`), power "
    "capping or thermals, or another process on the GPU (see `others`)"
)


# -- a rate from a step time and its CI --------------------------------------------------------


def test_a_rate_is_work_over_the_median_and_its_ends_over_the_ci_ends():
    r = S.Rate.from_times(12.0, 2.0, 1.5, 3.0, 11, size=64)
    assert r == S.Rate(6.0, 4.0, 8.0, 0.5, 11, 64, None)  # ci_rel 0.5 is still a figure
    assert r.as_dict() == {
        "value": 6.0,
        "low": 4.0,
        "high": 8.0,
        "ci_rel": 0.5,
        "n_samples": 11,
        "size": 64,
        "failed": None,
    }
    # the larger one-sided gap sets ci_rel, whichever side it is on
    assert S.Rate.from_times(8.0, 4.0, 3.0, 4.5, 10).ci_rel == 0.25
    assert S.Rate.from_times(8.0, 4.0, 3.5, 5.0, 10).ci_rel == 0.25
    assert S.Rate.from_times(8.0, 4.0, 3.5, 5.0, 10).size is None


def test_a_ci_just_past_half_the_median_is_a_failed_measurement():
    r = S.Rate.from_times(12.0, 2.0, 1.5, 3.25, 7, size=8)
    assert r == S.Rate(
        None,
        None,
        None,
        0.625,
        7,
        8,
        "a failed measurement: its 95% CI was ±62% of the median over 7 samples (at most "
        "±50% says anything)",
    )
    low_side = S.Rate.from_times(12.0, 2.0, 0.75, 2.5, 7)
    assert low_side.value is None and low_side.ci_rel == 0.625


@pytest.mark.parametrize(
    "median, lo, hi",
    [(2.0, None, 3.0), (2.0, 1.5, None), (0.0, 1.5, 3.0), (-1.0, 1.5, 3.0), (2.0, 0.0, 3.0)],
)
def test_no_usable_ci_is_no_figure(median, lo, hi):
    r = S.Rate.from_times(12.0, median, lo, hi, 3, size=5)
    assert r == S.Rate(None, None, None, None, 3, 5, "no confidence interval from 3 samples")


def test_a_tiny_positive_median_and_low_end_still_give_a_figure():
    r = S.Rate.from_times(1.0, 0.5, 0.25, 0.625, 4)
    assert (r.value, r.low, r.high, r.failed) == (2.0, 1.6, 4.0, None)


# -- against a peak ----------------------------------------------------------------------------


def test_the_advice_is_the_device_s_and_a_gpu_is_only_cuda():
    assert S.busy_advice("cuda") == GPU_ADVICE
    assert S.busy_advice("cpu") == CPU_ADVICE
    assert S.busy_advice("mps") == CPU_ADVICE


def test_show_scales_each_unit():
    assert S.show(123456e9, "FLOP/s") == "123 TFLOP/s"
    assert S.show(1.5e12, "FLOP/s") == "1.5 TFLOP/s"
    assert S.show(2.5e9, "B/s") == "2.5 GB/s"
    assert S.show(123456e6, "bytes") == "123 GB/s"


def rate(low: float, high: float, value: float | None = None) -> S.Rate:
    return S.Rate(value if value is not None else (low + high) / 2, low, high, 0.1, 20, 1024)


PEAK = {"source": "derived", "value": 1e12, "derivation": "2 cores × 2 GHz × 32 FLOP"}


def test_a_failed_rate_is_no_figure_with_the_device_s_quiet_time():
    failed = S.Rate(None, None, None, None, 3, None, "no confidence interval from 3 samples")
    assert S.against_peak(failed, PEAK, "cpu") == S.Verdict(
        "warn",
        "no figure: no confidence interval from 3 samples",
        "re-run when the machine is quiet (see `others`)",
        "failed",
    )
    assert S.against_peak(failed, None, "cuda") == S.Verdict(
        "warn",
        "no figure: no confidence interval from 3 samples",
        "re-run when the GPU is idle",
        "failed",
    )


@pytest.mark.parametrize("peak", [None, {}, {"source": "datasheet"}, {"value": 0.0}])
def test_no_peak_is_a_skip(peak):
    v = S.against_peak(rate(0.6e12, 0.8e12), peak, "cpu")
    assert v == S.Verdict("skip", "no peak to hold it against", None, "no_peak")
    assert S.Verdict("pass", "x") == S.Verdict("pass", "x", None, "within")


def test_wholly_above_a_derived_peak_blames_the_derivation():
    v = S.against_peak(rate(1.25e12, 1.5e12, 1.375e12), PEAK, "cuda")
    assert v.status == "warn" and v.kind == "above"
    assert v.finding == "138% (125%–150%) of the derived peak 1 TFLOP/s; above the peak"
    assert v.advice == (
        "above the derived peak, so its assumptions do not hold on this CPU (more "
        "or wider FMA units, a matrix unit, or a clock above the one read): "
        "2 cores × 2 GHz × 32 FLOP. Utilization against "
        "it would read over 100 %; runs are held against `paradnn calibrate`'s "
        "measured ceiling instead"
    )
    bare = S.against_peak(rate(1.25e12, 1.5e12), {"source": "derived", "value": 1e12}, "cpu")
    assert ": see `paradnn platforms`. Utilization" in bare.advice


def test_wholly_above_a_datasheet_peak_blames_the_match():
    sheet = {"value": 2e9, "platform": "h100-sxm"}  # no source: a datasheet's
    v = S.against_peak(rate(2.5e9, 3e9, 2.75e9), sheet, "cuda", unit="B/s")
    assert v == S.Verdict(
        "warn",
        "138% (125%–150%) of the datasheet peak 2 GB/s; above the peak",
        "above the datasheet peak of h100-sxm: a wrong datasheet match (`paradnn platforms`), "
        "a clock the datasheet does not count, or a timer error (see `timer`)",
        "above",
    )
    anon = S.against_peak(rate(2.5e9, 3e9), {"source": "datasheet", "value": 2e9}, "cpu")
    assert anon.advice.startswith("above the datasheet peak of this device: a wrong")


def test_the_peak_itself_is_not_above_it_and_eps_is_rounding():
    ref = 1.0
    peak = {"source": "datasheet", "value": ref}
    assert S.against_peak(rate(1.0, 1.5), peak, "cpu").kind == "within"
    assert S.against_peak(rate(1.0 + 0.5e-9, 1.5), peak, "cpu").kind == "within"
    assert S.against_peak(rate(1.0 + 2e-9, 1.5), peak, "cpu").kind == "above"


def test_wholly_below_half_warns_with_the_device_s_advice():
    peak = {"source": "datasheet", "value": 1.0}
    cpu = S.against_peak(rate(0.25, 0.375, 0.3125), peak, "cpu")
    assert cpu == S.Verdict(
        "warn", "31% (25%–38%) of the datasheet peak 1e-12 TFLOP/s; below half the peak",
        CPU_ADVICE, "below",
    )  # fmt: skip
    assert S.against_peak(rate(0.25, 0.375), peak, "cuda").advice == GPU_ADVICE
    # the upper end at half, or within EPS of it: not wholly below, so inconclusive
    assert S.against_peak(rate(0.25, 0.5), peak, "cpu").kind == "inconclusive"
    assert S.against_peak(rate(0.25, 0.5 - 0.5e-9), peak, "cpu").kind == "inconclusive"
    assert S.against_peak(rate(0.25, 0.5 - 2e-9), peak, "cpu").kind == "below"


def test_an_interval_across_half_is_inconclusive_and_says_what_would_decide():
    peak = {"source": "datasheet", "value": 1.0}
    v = S.against_peak(rate(0.375, 0.625, 0.5), peak, "cpu")
    assert v == S.Verdict(
        "warn",
        "50% (38%–62%) of the datasheet peak 1e-12 TFLOP/s; inconclusive: its interval spans "
        "50% of the peak",
        "re-run with a larger --budget when the machine is quiet (see `others`)",
        "inconclusive",
    )
    gpu = S.against_peak(rate(0.375, 0.625), peak, "cuda")
    assert gpu.advice == "re-run with a larger --budget when the GPU is idle"
    # the lower end at half or within EPS above it: still inconclusive; beyond: a pass
    assert S.against_peak(rate(0.5, 0.75), peak, "cpu").kind == "inconclusive"
    assert S.against_peak(rate(0.5 + 0.5e-9, 0.75), peak, "cpu").kind == "inconclusive"
    ok = S.against_peak(rate(0.5 + 2e-9, 0.75, 0.625), peak, "cpu")
    assert ok == S.Verdict("pass", "62% (50%–75%) of the datasheet peak 1e-12 TFLOP/s")


# -- the stored ceiling ------------------------------------------------------------------------


def matmul_row(value, **kw):
    row = {
        "kind": "matmul",
        "device_name": "cpu0",
        "precision": "fp32",
        "status": "ok",
        "value": value,
        "measured_at": "2026-11-20T10:00:00",
        "id": 7,
        "detail": {},
    }
    return {**row, **kw}


def timing(flops=8.0, med=2.0, lo=1.0, hi=4.0):
    return {"flops": flops, "median_s": med, "ci_low_s": lo, "ci_high_s": hi}


def test_the_best_ok_row_of_this_device_kind_and_precision_is_the_ceiling():
    rows = [
        matmul_row(50.0, id=1),
        matmul_row(900.0, kind="copy", id=2),
        matmul_row(800.0, device_name="gpu0", id=3),
        matmul_row(700.0, precision="bf16", id=4),
        matmul_row(600.0, status="oom", id=5),
        matmul_row("500", id=6),
        matmul_row(60.0, status=None, id=8),
        matmul_row(40.0, id=9),
    ]
    s = S.stored_ceiling(rows, "cpu0", "matmul", "fp32", None)
    assert s == S.Stored(60.0, 60.0, 60.0, False, None, "2026-11-20T10:00:00", 8)
    no_status = {k: v for k, v in matmul_row(70.0, id=10).items() if k != "status"}
    assert S.stored_ceiling([*rows, no_status], "cpu0", "matmul", "fp32", None).row_id == 10
    for bad in (0, -5.0, None):
        assert S.stored_ceiling([matmul_row(bad)], "cpu0", "matmul", "fp32", None) is None
    assert S.stored_ceiling([], "cpu0", "matmul", "fp32", None) is None
    assert S.stored_ceiling(rows, "cpu0", "matmul", "fp16", None) is None
    # a tie of values goes to the later measurement, whatever the order of the rows
    a = matmul_row(60.0, measured_at="2026-11-21", id=11)
    b = matmul_row(60.0, measured_at="2026-11-22", id=12)
    c = matmul_row(60.0, measured_at=None, id=13)
    for order in ([a, b, c], [c, b, a]):
        assert S.stored_ceiling(order, "cpu0", "matmul", "fp32", None).row_id == 12


def test_a_copy_ceiling_ignores_precision_and_matches_its_array_size():
    copy = matmul_row(
        9.0,
        kind="copy",
        precision=None,
        detail={"bytes_per_array": 64, "bytes_moved": 16.0, "median_s": 2.0,
                "ci_low_s": 1.0, "ci_high_s": 4.0, "threads": 4},
    )  # fmt: skip
    s = S.stored_ceiling([copy], "cpu0", "copy", "fp32", 64)
    assert s == S.Stored(8.0, 4.0, 16.0, True, 4, "2026-11-20T10:00:00", 7)
    assert S.stored_ceiling([copy], "cpu0", "copy", None, 32).same_size is False
    assert S.stored_ceiling([copy], "cpu0", "copy", None, None).same_size is False
    no_work = {**copy, "detail": {**copy["detail"], "bytes_moved": 0}}
    assert S.stored_ceiling([no_work], "cpu0", "copy", None, 64) == S.Stored(
        9.0, 9.0, 9.0, True, 4, "2026-11-20T10:00:00", 7
    )


def test_a_matmul_ceiling_reads_the_same_size_or_its_best_size():
    detail = {"sizes": {"256": timing(8.0), "512": timing(16.0)}, "best_size": 512, "threads": 2}
    row = matmul_row(9.0, detail=detail)
    assert S.stored_ceiling([row], "cpu0", "matmul", "fp32", 256) == S.Stored(
        4.0, 2.0, 8.0, True, 2, "2026-11-20T10:00:00", 7
    )
    assert S.stored_ceiling([row], "cpu0", "matmul", "fp32", 1024) == S.Stored(
        8.0, 4.0, 16.0, False, 2, "2026-11-20T10:00:00", 7
    )
    assert S.stored_ceiling([row], "cpu0", "matmul", "fp32", None).same_size is False
    # the same size without a usable timing: its value alone, and not the same size
    bare = matmul_row(9.0, detail={"sizes": {"256": {"median_s": 2.0}}, "threads": "2"})
    assert S.stored_ceiling([bare], "cpu0", "matmul", "fp32", 256) == S.Stored(
        9.0, 9.0, 9.0, False, None, "2026-11-20T10:00:00", 7
    )
    for broken in (timing(lo=0.0), timing(med=-1.0), timing(hi=None), timing(flops=-1.0)):
        r = matmul_row(9.0, detail={"sizes": {"256": broken}})
        s = S.stored_ceiling([r], "cpu0", "matmul", "fp32", 256)
        assert (s.value, s.low, s.high) == (9.0, 9.0, 9.0), broken
    for detail in ("not a dict", {"sizes": "not a dict"}, None):
        s = S.stored_ceiling([matmul_row(9.0, detail=detail)], "cpu0", "matmul", "fp32", 256)
        assert s == S.Stored(9.0, 9.0, 9.0, False, None, "2026-11-20T10:00:00", 7)


# -- against the stored ceiling ----------------------------------------------------------------


def stored(value=4.0, low=3.0, high=5.0, same=True, threads=None, at="2026-11-20T10:00:00"):
    return S.Stored(value, low, high, same, threads, at, 1)


def test_no_stored_ceiling_or_no_figure_is_unknown():
    r = S.Rate(4e12, 3e12, 5e12, 0.1, 20, 4096)
    assert S.against_stored(r, None, "FLOP/s", 4) == ("unknown", "no stored ceiling")
    failed = S.Rate(None, None, None, None, 3, 4096, "no confidence interval from 3 samples")
    assert S.against_stored(failed, stored(4e12), "FLOP/s", 4) == (
        "unknown",
        "stored 4 TFLOP/s at n=4096 (2026-11-20); not compared: no confidence interval from "
        "3 samples",
    )


def test_the_words_name_the_size_the_date_and_other_threads():
    r = S.Rate(4e12, 3e12, 5e12, 0.1, 20, 4096)
    s = stored(4e12, 3e12, 5e12, threads=8)
    assert S.against_stored(r, s, "FLOP/s", 4) == (
        "agree",
        "4 TFLOP/s now, stored 4 TFLOP/s at n=4096 (2026-11-20), with 8 threads (now 4): "
        "they agree within their intervals",
    )
    assert S.against_stored(r, s, "FLOP/s", 8)[1] == (
        "4 TFLOP/s now, stored 4 TFLOP/s at n=4096 (2026-11-20): they agree within their intervals"
    )
    assert ", with" not in S.against_stored(r, s, "FLOP/s", None)[1]
    assert ", with" not in S.against_stored(r, stored(4e12, 3e12, 5e12), "FLOP/s", 4)[1]
    other = stored(4e12, 3e12, 5e12, same=False, at=None)
    assert S.against_stored(r, other, "FLOP/s", None)[1] == (
        "4 TFLOP/s now, stored 4 TFLOP/s at its best size: they agree within their intervals"
    )
    copy = S.Rate(4e9, 3e9, 5e9, 0.1, 20, 3 << 20)
    assert S.against_stored(copy, stored(4e9, 3e9, 5e9), "B/s", None)[1] == (
        "4 GB/s now, stored 4 GB/s at 3 MiB per array (2026-11-20): they agree within their "
        "intervals"
    )
    no_size = S.Rate(4e9, 3e9, 5e9, 0.1, 20, None)
    assert "at its best size" in S.against_stored(no_size, stored(4e9), "B/s", None)[1]


def test_above_and_below_only_beyond_both_intervals():
    s = stored(4.0, 3.0, 5.0)
    above = S.against_stored(S.Rate(6.0, 5.5, 7.0, 0.1, 9, 64), s, "FLOP/s", None)
    assert above == (
        "above",
        "6e-12 TFLOP/s now is above the stored 4e-12 TFLOP/s at n=64 (2026-11-20), beyond "
        "both intervals",
    )
    below = S.against_stored(S.Rate(2.0, 1.0, 2.5, 0.1, 9, 64), s, "FLOP/s", None)
    assert below == (
        "below",
        "2e-12 TFLOP/s now is below the stored 4e-12 TFLOP/s at n=64 (2026-11-20), beyond "
        "both intervals",
    )
    # below is judged only at the same size; above at any size
    other = stored(4.0, 3.0, 5.0, same=False)
    assert S.against_stored(S.Rate(2.0, 1.0, 2.5, 0.1, 9, 64), other, "FLOP/s", None)[0] == "agree"
    assert S.against_stored(S.Rate(6.0, 5.5, 7.0, 0.1, 9, 64), other, "FLOP/s", None)[0] == "above"
    # touching ends, or within EPS of them, agree
    for lo in (5.0, 5.0 * (1 + 0.5e-9)):
        assert S.against_stored(S.Rate(6.0, lo, 7.0, 0.1, 9, 64), s, "FLOP/s", None)[0] == "agree"
    assert (
        S.against_stored(S.Rate(6.0, 5.0 * (1 + 4e-9), 7.0, 0.1, 9, 64), s, "FLOP/s", None)[0]
        == "above"
    )
    for hi in (3.0, 3.0 * (1 - 0.5e-9)):
        assert S.against_stored(S.Rate(2.0, 1.0, hi, 0.1, 9, 64), s, "FLOP/s", None)[0] == "agree"
    assert (
        S.against_stored(S.Rate(2.0, 1.0, 3.0 * (1 - 4e-9), 0.1, 9, 64), s, "FLOP/s", None)[0]
        == "below"
    )


# -- the budget --------------------------------------------------------------------------------


class Clock:
    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_the_budget_counts_from_its_start_and_shares_what_is_left():
    clock = Clock(12.0)
    b = S.Budget(10.0, 10.0, clock)
    assert (b.total_s, b.started, b.startup_s, b.load) == (10.0, 10.0, 0.0, (None, None))
    assert (b.spent(), b.left()) == (2.0, 8.0)
    assert b.share(4) == 2.0 and b.share(4, reserve=2.0) == 1.5
    assert b.share(0) == 8.0 and b.share(1) == 8.0  # at least one part
    assert b.share(2, reserve=9.0) == 0.0  # never negative
    clock.t = 25.0
    assert b.left() == -5.0 and b.share(3) == 0.0


def test_skip_words_say_what_is_left_and_blame_a_slow_start_up():
    clock = Clock(9.0)
    quick = S.Budget(10.0, 0.0, clock, startup_s=4.5)  # under half the budget: not named
    assert quick.skip_words(2.25) == (
        "skipped: 1.0 s of the 10 s budget left, it needs about 2.2 s; raise --budget"
    )
    clock.t = 12.0
    assert quick.skip_words(2.0).startswith("skipped: 0.0 s of the 10 s budget left")
    slow = S.Budget(10.0, 0.0, clock, startup_s=5.0)  # exactly half: named
    assert slow.skip_words(2.0) == (
        "skipped: 0.0 s of the 10 s budget left, it needs about 2.0 s (starting Python and "
        "torch took 5.0 s); raise --budget"
    )
    slow.load = (4.5, 4)
    assert slow.skip_words(2.0) == (
        "skipped: 0.0 s of the 10 s budget left, it needs about 2.0 s (starting Python and "
        "torch took 5.0 s; the load average is 4.5 on 4 CPUs: a busy machine); raise --budget"
    )
    for load in ((4.0, 4), (None, 4), (9.0, None), (9.0, 0)):  # not above its CPUs, or unknown
        slow.load = load
        assert "load average" not in slow.skip_words(2.0), load
    # a default start-up of nothing never blames it, even for a budget of a second
    assert "starting Python" not in S.Budget(1.5, 0.0, Clock(0.5)).skip_words(0.25)
