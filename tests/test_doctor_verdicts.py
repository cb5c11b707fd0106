"""`paradnn doctor`'s verdicts on numbers (issue 41): a failed measurement is no figure, advice
matches the finding and the device (above a peak: the peak is wrong; below half: clocks on a
GPU, load and threads on a CPU, never nvidia-smi there), an interval across a threshold is
inconclusive, the stored ceilings are compared beyond both intervals, and the budget is planned
from what is left (a fake clock: no test depends on this machine's speed)."""

from __future__ import annotations

import torch

from paradnn.measure import doctor as doc
from paradnn.measure import sanity as S

from conftest import run_cli

CPU, GPU = "cpu", "cuda"
DERIVED = {"source": "derived", "value": 100.0, "derivation": "2 cores × 2.6 GHz × 32 FLOP"}
SHEET = {"source": "datasheet", "value": 100.0, "platform": "h100-sxm"}


def rate(value: float, half: float = 0.02, size: int | None = 1024) -> S.Rate:
    """A rate of `value` whose interval is ±`half` of it (as a step time's CI makes it)."""
    return S.Rate(value, value * (1 - half), value * (1 + half), half, 20, size)


# -- a rate and its interval ------------------------------------------------------------------


def test_a_ci_of_ten_thousand_percent_is_a_failed_measurement_not_a_number():
    # the 0.17 ms matmul whose 5-sample CI reached ±10318.7 %
    r = S.Rate.from_times(3.4e7, 0.17e-3, 0.16e-3, 0.17e-3 * 104.187, 5, 256)
    assert r.value is None and r.low is None and r.failed
    assert "failed measurement" in r.failed and "±10319%" in r.failed
    v = S.against_peak(r, DERIVED, CPU)
    assert v.status == "warn" and v.kind == "failed" and v.finding.startswith("no figure")
    ok = S.Rate.from_times(2e9, 1e-2, 0.99e-2, 1.01e-2, 20, 1024)
    assert ok.value == 2e11 and ok.low < ok.value < ok.high and not ok.failed
    assert S.Rate.from_times(1.0, 1.0, None, None, 1).failed  # no CI: nothing to say


def test_above_the_peak_blames_the_peak_and_never_the_clocks():
    for device in (CPU, GPU):
        v = S.against_peak(rate(118.0), DERIVED, device)  # the 118 %
        assert (v.status, v.kind) == ("warn", "above")
        assert "derived peak" in v.advice and "2 cores × 2.6 GHz" in v.advice
        assert "nvidia-smi" not in v.advice and "below half" not in v.finding
    v = S.against_peak(rate(118.0), SHEET, GPU)
    assert v.kind == "above" and "datasheet" in v.advice and "h100-sxm" in v.advice
    # an interval across 100 %: at the peak, not above it (either side of the line)
    for value in (99.0, 101.0):
        assert S.against_peak(rate(value, 0.05), DERIVED, CPU).status == "pass"


def test_below_half_advice_is_the_device_s():
    cpu = S.against_peak(rate(30.0), DERIVED, CPU)
    gpu = S.against_peak(rate(30.0), SHEET, GPU)
    assert cpu.kind == gpu.kind == "below" and cpu.status == gpu.status == "warn"
    assert "nvidia-smi" not in cpu.advice and "governor" in cpu.advice
    assert "threads" in cpu.advice and "others" in cpu.advice
    assert "nvidia-smi" in gpu.advice and "governor" not in gpu.advice


def test_an_interval_across_half_is_inconclusive_either_way():
    for value in (48.0, 52.0):  # below and above the line, each interval spanning it
        v = S.against_peak(rate(value, 0.06), DERIVED, CPU)
        assert (v.status, v.kind) == ("warn", "inconclusive") and "50%" in v.finding
    assert S.against_peak(rate(60.0), DERIVED, CPU).status == "pass"
    assert S.against_peak(rate(40.0), DERIVED, CPU).kind == "below"
    # an interval touching the line within rounding straddles it
    touching = S.Rate(60.0, 50.0, 70.0, 0.2, 20, 1024)
    assert S.against_peak(touching, DERIVED, CPU).kind == "inconclusive"
    assert S.against_peak(rate(60.0), None, CPU).status == "skip"  # nothing to hold it against


# -- the stored ceilings --------------------------------------------------------------------


def _ceiling(value, size=1024, *, kind="matmul", precision="fp32", name="SynthCPU", **kw):
    """A `ceilings` row as calibrate stores it: the best size's timing in detail["sizes"]."""
    flops = 2 * size**3
    median = flops / value
    timing = {"median_s": median, "ci_low_s": 0.99 * median, "ci_high_s": 1.01 * median,
              "flops": flops, "n_samples": 30}  # fmt: skip
    detail = {"sizes": {str(size): timing}, "best_size": size, "threads": 2}
    if kind == "copy":
        detail = {"median_s": 1.0, "ci_low_s": 0.99, "ci_high_s": 1.01, "bytes_moved": value,
                  "bytes_per_array": size}  # fmt: skip
    return {"id": kw.pop("id", 1), "kind": kind, "precision": precision if kind == "matmul"
            else None, "device_name": name, "value": value, "status": kw.pop("status", "ok"),
            "detail": {**detail, **kw}, "measured_at": "2026-05-01T10:00:00"}  # fmt: skip


def test_the_stored_ceiling_is_the_best_ok_row_of_this_device_and_precision():
    rows = [
        _ceiling(2e11, id=1),
        _ceiling(3e11, id=2, status="crashed"),  # a failed unit is no ceiling
        _ceiling(9e11, id=3, name="Other CPU"),
        _ceiling(5e11, id=4, precision="bf16"),
        _ceiling(2.5e11, 2048, id=5, path="F.linear", paths={"mm": 1}),  # a newer calibrate
        _ceiling(57.8e9, 64 << 20, kind="copy", id=6),
    ]
    best = S.stored_ceiling(rows, "SynthCPU", "matmul", "fp32", 1024)
    assert best.row_id == 5 and not best.same_size  # its detail has no n=1024: value only
    assert abs(best.value - 2.5e11) < 1 and best.low < best.value < best.high
    same = S.stored_ceiling(rows[:1], "SynthCPU", "matmul", "fp32", 1024)
    assert same.same_size and same.threads == 2
    copy = S.stored_ceiling(rows, "SynthCPU", "copy", None, 64 << 20)
    assert copy.row_id == 6 and abs(copy.value - 57.8e9) < 1 and copy.same_size
    assert not S.stored_ceiling(rows, "SynthCPU", "copy", None, 32 << 20).same_size
    assert S.stored_ceiling(rows, "SynthCPU", "matmul", "fp16", 1024) is None
    junk = [{"kind": "matmul", "precision": "fp32", "device_name": "SynthCPU", "value": 1e11,
             "detail": "not a dict"}]  # fmt: skip
    assert S.stored_ceiling(junk, "SynthCPU", "matmul", "fp32", 1024).value == 1e11


def test_measured_against_stored_in_both_directions():
    stored = S.stored_ceiling([_ceiling(2e11)], "SynthCPU", "matmul", "fp32", 1024)
    assert S.against_stored(rate(2.01e11), stored, "FLOP/s", 2)[0] == "agree"
    call, words = S.against_stored(rate(3e11), stored, "FLOP/s", 2)
    assert call == "above" and "beyond both intervals" in words
    call, words = S.against_stored(rate(1e11), stored, "FLOP/s", 1)
    assert call == "below" and "with 2 threads (now 1)" in words
    # against another size only an "above" means anything: a smaller matmul runs slower
    other = S.stored_ceiling([_ceiling(2e11, 4096)], "SynthCPU", "matmul", "fp32", 1024)
    assert S.against_stored(rate(1e11), other, "FLOP/s", 2)[0] == "agree"
    assert S.against_stored(rate(3e11), other, "FLOP/s", 2)[0] == "above"
    failed = S.Rate(None, None, None, 3.0, 5, 1024, "a failed measurement")
    assert S.against_stored(failed, stored, "FLOP/s", 2)[0] == "unknown"
    assert S.against_stored(rate(1.0), None, "FLOP/s", 2) == ("unknown", "no stored ceiling")


def test_the_stored_check_says_which_disagree_and_to_recalibrate():
    rows = [_ceiling(2e11), _ceiling(57.8e9, 64 << 20, kind="copy", id=2)]
    copy = S.Rate(3.2e9, 3.1e9, 3.3e9, 0.03, 20, 64 << 20)  # the 3.2 GB/s vs 57.8
    got = doc.check_stored({"matmul:fp32": rate(2e11), "copy": copy}, rows, "SynthCPU", 2, "a.db")
    assert got.status == "warn" and "copy 3.2 GB/s now is below the stored 57.8 GB/s" in got.message
    assert "matmul:fp32" in got.message and "agree" in got.message
    assert "`paradnn calibrate --force --db a.db`" in got.advice
    assert got.measured["copy"]["verdict"] == "below"
    up = doc.check_stored({"matmul:fp32": rate(4e11)}, rows, "SynthCPU", 2, "a.db")
    assert up.status == "warn" and "reads too high" in up.advice
    fine = doc.check_stored({"matmul:fp32": rate(2e11)}, rows, "SynthCPU", 2, "a.db")
    assert fine.status == "pass" and fine.advice is None
    none = doc.check_stored({"matmul:fp32": rate(2e11)}, None, "SynthCPU", 2, "no --db")
    assert none.status == "skip" and "no --db" in none.message
    elsewhere = doc.check_stored({"matmul:fp32": rate(2e11)}, rows, "Another CPU", 2, "a.db")
    assert elsewhere.status == "skip" and "no stored ceiling" in elsewhere.message


# -- the budget -----------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class FakeDeviceClock:
    """A device clock on the fake time: a mark is the time now, elapsed the differences."""

    def __init__(self, clock):
        self.clock = clock

    def mark(self):
        return self.clock.t

    def elapsed(self, pairs):
        return [b - a for a, b in pairs]


def _stepper(clock, times):
    """A step that advances the fake clock by the next of `times` (the last one repeats)."""
    it = iter(times)
    last = [times[0]]

    def step():
        last[0] = next(it, last[0])
        clock.t += last[0]

    return step


def test_a_timing_meets_its_target_or_stops_at_its_deadline():
    clock = Clock()
    steady = doc.timed_until(_stepper(clock, [0.005]), torch.device("cpu"), 2.0, 1e9, 1024,
                             FakeDeviceClock(clock), clock)  # fmt: skip
    assert abs(steady.value / (1e9 / 0.005) - 1) < 1e-6 and steady.n_samples >= doc.MIN_SAMPLES
    assert clock.t - 100.0 < 1.0  # converged long before its deadline
    # a busy machine: the warm-up promised 5 ms steps, then each takes 0.4 s
    clock = Clock()
    busy = doc.timed_until(_stepper(clock, [0.005] * 3 + [0.4]), torch.device("cpu"), 1.5, 1e9,
                           1024, FakeDeviceClock(clock), clock)  # fmt: skip
    assert busy.value is None and "failed measurement" in busy.failed
    assert f"at least {doc.MIN_SAMPLES}" in busy.failed
    assert clock.t - 100.0 <= 1.5 + 2 * 0.4  # the deadline, give or take one block


def test_sizes_and_rounds_are_planned_from_the_time_left():
    assert doc.pick_size((512, 1024, 2048), 512, 0.001, 2.0) == 2048
    assert doc.pick_size((512, 1024, 2048), 512, 0.001, 0.35) == 1024
    assert doc.pick_size((512, 1024, 2048), 512, 0.05, 0.3) is None  # a busy machine
    assert doc.timer_rounds(0.001, 1.0) == 3
    assert doc.timer_rounds(0.02, 0.9) == 1
    assert doc.timer_rounds(0.5, 0.9) == 0


def test_the_checks_share_the_budget_and_skip_what_will_not_fit(monkeypatch):
    """Each check takes the slot it was given on a fake clock: the plan keeps the whole run
    within the budget and skips, saying so, what no longer fits."""
    clock = Clock()
    slots: dict[str, float] = {}

    def spend(name, seconds, *more):
        slots[name] = seconds
        clock.t += seconds
        return (doc.Check(name, "pass", "m"), S.Rate(1.0, 0.9, 1.1, 0.1, 10)) if more else (
            doc.Check(name, "pass", "m"))  # fmt: skip

    monkeypatch.setattr(doc, "check_timer", lambda dev, slot: spend("timer", slot))
    monkeypatch.setattr(
        doc, "check_matmul", lambda dev, p, peak, slot, why: spend(f"matmul:{p}", slot, 1)
    )
    monkeypatch.setattr(doc, "check_copy", lambda dev, sheet, slot: spend("copy", slot, 1))
    monkeypatch.setattr(doc, "check_power", lambda dev, nv, window_s: spend("power", window_s))
    monkeypatch.setattr(doc, "check_others", lambda dev, p, window_s: spend("others", window_s))
    env = {"native_precisions": ["fp32", "bf16"], "threads": 1}
    ran = {}
    for total, startup in ((5.0, 1.5), (5.0, 4.5), (2.0, 0.0)):
        clock.t, slots = 100.0, {}
        budget = S.Budget(total, clock.t - startup, clock, startup_s=startup)
        got = doc.run_checks(torch.device("cpu"), env, None, {"derived_peaks": {}}, [], None,
                             budget, lambda m: None)  # fmt: skip
        assert [c.name for c in got] == [
            "timer",
            "matmul:fp32",
            "matmul:bf16",
            "copy",
            "stored",
            "power",
            "others",
        ]
        assert budget.spent() <= total + 1e-9, (total, startup, slots)
        for c in got:
            if c.status == "skip" and c.name != "stored":
                assert "raise --budget" in c.message and "budget left" in c.message
        ran[(total, startup)] = dict(slots)
    # 3.5 s left: every check, the timer its 15 %, the two matmuls an equal share
    full = ran[(5.0, 1.5)]
    assert set(full) == {"timer", "matmul:fp32", "matmul:bf16", "copy", "power", "others"}
    assert abs(full["timer"] - 0.75) < 1e-9
    assert abs(full["matmul:fp32"] - full["matmul:bf16"]) < 1e-9
    # 0.5 s left after the start-up: only the two short windows still fit
    assert set(ran[(5.0, 4.5)]) == {"power", "others"}
    assert set(ran[(2.0, 0.0)]) == set(full)  # 2 s: each at its least


def test_a_start_up_that_ate_the_budget_is_named_with_the_load():
    clock = Clock()
    b = S.Budget(5.0, clock.t - 5.8, clock, startup_s=5.8)
    b.load = (6.4, 2)
    words = b.skip_words(0.3)
    assert "0.0 s of the 5 s budget left" in words and "took 5.8 s" in words
    assert "load average is 6.4 on 2 CPUs" in words and words.endswith("raise --budget")
    b = S.Budget(5.0, clock.t, clock)
    assert "took" not in b.skip_words(0.3)


# -- the command ------------------------------------------------------------------------------


def test_an_explicit_database_must_be_readable_the_default_is_optional(capsys, tmp_path,
                                                                       monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)  # no paradnn.db here
    code, _, err = run_cli(capsys, "doctor", "--device", "cpu", "--db", str(tmp_path / "no.db"))
    assert code == 2 and "no such database" in err and len(err.strip().splitlines()) == 1
    stored, where = __import__("paradnn.api.doctor", fromlist=["x"])._stored_ceilings(None)
    assert stored is None and "no paradnn.db here" in where
