"""A run's quality verdict, pinned whole (issue 46, item 6): the load probe's every field on a
played machine, each reason's and each tip's exact words, the thresholds from both sides, the
noisy summary's counting and ordering, and the record part. Fractions are exact binary ones,
so no verdict here hangs on a float's last bit."""

from __future__ import annotations

import contextlib
import types

import pytest

from paradnn import host
from paradnn.measure import quality as Q

# -- the load probe ----------------------------------------------------------------------------


class Machine:
    """A played machine: a clock, /proc/stat's (busy, steal) of the probe's CPUs, own CPU."""

    def __init__(self, readings, own, clock, loads=(1.5, 2.5)):
        self.readings, self.owns, self.clocks = list(readings), list(own), list(clock)
        self.loads = list(loads)
        self.asked: list[list[int]] = []

    def cpu_times(self, cpus):
        self.asked.append(list(cpus))
        return self.readings.pop(0)

    def own(self):
        return self.owns.pop(0)

    def clock(self):
        return self.clocks.pop(0)

    def loadavg(self):
        return self.loads.pop(0)

    def probe(self, cpus=(0, 1), gpu=None) -> Q.LoadProbe:
        return Q.LoadProbe(list(cpus), self.cpu_times, self.own, self.clock, self.loadavg, gpu)


def test_the_probe_measures_others_and_steal_over_its_window():
    m = Machine([(10.0, 1.0), (11.5, 1.25)], own=[2.0, 2.5], clock=[100.0, 101.0])
    p = m.probe()
    p.end()  # before begin: nothing
    assert p.result == {}
    p.begin()
    assert p.result == {"loadavg_before": 1.5, "cpus": 2}
    p.end()
    assert p.result == {
        "loadavg_before": 1.5,
        "cpus": 2,
        "window_s": 1.0,
        "loadavg_after": 2.5,
        "others_cpu_frac": 0.5,  # (1.5 busy − 0.5 own) / (1 s × 2 CPUs)
        "steal_frac": 0.125,
    }
    assert m.asked == [[0, 1], [0, 1]]


def test_the_probe_clips_its_fractions_and_rounds_them_to_four_places():
    m = Machine([(0.0, 5.0), (9.0, 4.0)], own=[0.0, 0.0], clock=[0.0, 2.0])
    p = m.probe()
    p.begin()
    p.end()
    assert (p.result["others_cpu_frac"], p.result["steal_frac"]) == (1.0, 0.0)
    m = Machine([(0.0, 0.0), (1.0, 1 / 3)], own=[0.0, 2.0], clock=[0.0, 1.0])
    p = m.probe(cpus=(0,))
    p.begin()
    p.end()
    assert (p.result["others_cpu_frac"], p.result["steal_frac"]) == (0.0, 0.3333)
    m = Machine([(0.0, 0.0), (0.2, 0.0)], own=[0.0, 0.0], clock=[0.0, 1.5])
    p = m.probe(cpus=(0, 1, 2))
    p.begin()
    p.end()
    assert p.result["others_cpu_frac"] == 0.0444


@pytest.mark.parametrize("window, known", [(0.0625, True), (0.05, True), (0.046875, False)])
def test_a_window_below_proc_stats_resolution_says_so(window, known):
    m = Machine([(0.0, 0.0), (0.0, 0.0)], own=[0.0, 0.0], clock=[0.0, window])
    p = m.probe()
    p.begin()
    p.end()
    if known:
        assert p.result["others_cpu_frac"] == 0.0 and "reason" not in p.result
    else:
        assert p.result["others_cpu_frac"] is None and "steal_frac" not in p.result
        assert p.result["reason"] == "window 47 ms is below /proc/stat's resolution"


@pytest.mark.parametrize("readings", [[None, (1.0, 0.0)], [(1.0, 0.0), None], [None, None]])
def test_unreadable_proc_stat_is_unknown_with_its_reason(readings):
    m = Machine(readings, own=[0.0, 0.0], clock=[0.0, 5.0])
    p = m.probe()
    p.begin()
    p.end()
    assert p.result == {
        "loadavg_before": 1.5,
        "cpus": 2,
        "window_s": 5.0,
        "loadavg_after": 2.5,
        "others_cpu_frac": None,
        "reason": "/proc/stat unreadable: other processes' CPU time unknown",
    }


def test_the_gpu_s_other_processes_are_read_and_a_failure_is_context_only():
    m = Machine([(0.0, 0.0), (0.0, 0.0)], own=[0.0, 0.0], clock=[0.0, 1.0])
    p = m.probe(gpu=lambda: [{"pid": 7}])
    p.begin()
    p.end()
    assert p.result["gpu_other_processes"] == [{"pid": 7}] and "gpu_reason" not in p.result

    def broken():
        raise RuntimeError("x" * 300)

    m = Machine([(0.0, 0.0), (0.0, 0.0)], own=[0.0, 0.0], clock=[0.0, 1.0])
    p = m.probe(gpu=broken)
    p.begin()
    p.end()
    assert p.result["gpu_other_processes"] is None
    assert p.result["gpu_reason"] == ("RuntimeError: " + "x" * 300)[:200]
    assert len(p.result["gpu_reason"]) == 200


def test_read_cpu_times_sums_the_cpus_it_finds(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "_ticks_per_s", lambda: 100)
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  1 1 1 1 1 1 1 1\n"
        "cpu0 100 0 100 900 0 0 0 50\n"
        "cpu1 300 0 0 700 0 0 0 25\n"
        "cpu2 1 1 1 1 1 1 1 1\n"
    )
    assert Q.read_cpu_times([0, 1], str(stat)) == (5.0, 0.75)
    assert Q.read_cpu_times([1, 9], str(stat)) == (3.0, 0.25)
    assert Q.read_cpu_times([9], str(stat)) is None
    assert Q.read_cpu_times([0], str(tmp_path / "absent")) is None


def test_nvml_lists_the_other_compute_processes(monkeypatch):
    me = Q.os.getpid()
    procs = [
        types.SimpleNamespace(pid=me, usedGpuMemory=1),
        types.SimpleNamespace(pid=41, usedGpuMemory=2048),
        types.SimpleNamespace(pid="42"),
    ]
    seen = []

    class Nv:
        def nvmlDeviceGetHandleByIndex(self, i):
            seen.append(i)
            return f"h{i}"

        def nvmlDeviceGetComputeRunningProcesses(self, h):
            seen.append(h)
            return procs

    @contextlib.contextmanager
    def fake():
        yield Nv()

    monkeypatch.setattr(host, "nvml", fake)
    assert Q.nvml_other_processes(3)() == [
        {"pid": 41, "used_memory_bytes": 2048},
        {"pid": 42, "used_memory_bytes": None},
    ]
    assert seen == [3, "h3"]


# -- the CI figures ----------------------------------------------------------------------------


def test_the_ci_half_width_and_the_larger_gap():
    assert Q.ci_half_rel(2.0, 1.0, 2.5) == 0.375
    assert Q.ci_gap_rel(2.0, 1.0, 2.5) == 0.5
    assert Q.ci_gap_rel(2.0, 1.5, 3.0) == 0.5
    for f in (Q.ci_half_rel, Q.ci_gap_rel):
        assert f(2.0, None, 2.5) is None and f(2.0, 1.0, None) is None
        assert f(0.0, 1.0, 2.5) is None and f(-2.0, 1.0, 2.5) is None
    row = {"step_time_s": 4.0, "step_time_ci_low_s": 3.0, "step_time_ci_high_s": 4.5}
    assert Q.step_ci(row) == 0.25
    assert Q.step_ci({"step_time_ci_low_s": 3.0, "step_time_ci_high_s": 4.5}) is None
    assert (
        Q.step_ci({"step_time_s": None, "step_time_ci_low_s": 1, "step_time_ci_high_s": 2}) is None
    )


def test_ci_words():
    assert Q.ci_words(0.06875) == "±6.9%"
    assert Q.ci_words(0.25) == "±25.0%"
    assert Q.ci_words(0.0) == "±0.0%"
    for bad in (None, float("nan"), float("inf"), float("-inf")):
        assert Q.ci_words(bad) == ""


# -- the verdict -------------------------------------------------------------------------------


def judge(median=1.0, lo=0.96875, hi=1.03125, q1=0.9375, q3=1.0625, target=0.03125, load=None,
          stop="ci"):  # fmt: skip
    return Q.judge(median=median, ci_low=lo, ci_high=hi, q1=q1, q3=q3, stop_reason=stop,
                   target_ci_rel=target, load=load)  # fmt: skip


def test_a_ci_at_its_target_and_a_quiet_machine_are_good():
    v = judge()
    assert v == Q.Verdict("good", [], 0.03125, 0.125)
    assert judge(load={"others_cpu_frac": 0.1, "steal_frac": 0.05}).quality == "good"
    assert judge(load={"gpu_other_processes": []}).quality == "good"
    assert judge(median=0.0, lo=None).iqr_rel is None


def test_every_reason_in_its_words():
    procs = [{"pid": p} for p in range(101, 108)]
    load = {"others_cpu_frac": 0.5, "steal_frac": 0.25, "gpu_other_processes": procs}
    v = judge(hi=1.0625, load=load, stop="max_time")
    assert v == Q.Verdict(
        "noisy",
        [
            "CI reaches ±6.2% > ±3% target (stopped at max_time)",
            "other processes used 50% of the run's CPUs (> 10%)",
            "the hypervisor stole 25% of the run's CPU time (> 5%)",
            "7 other process(es) on the GPU (pid 101, 102, 103, 104, 105; > 0)",
        ],
        0.046875,
        0.125,
    )
    none = judge(lo=None, stop="max_samples")
    assert none.reasons == ["no CI (too few samples for ±3%; stopped at max_samples)"]
    assert none.ci_half_rel is None


@pytest.mark.parametrize(
    "load, noisy",
    [
        ({"others_cpu_frac": 0.1}, False),
        ({"others_cpu_frac": 0.1000001}, True),
        ({"steal_frac": 0.05}, False),
        ({"steal_frac": 0.0500001}, True),
        ({"others_cpu_frac": None, "steal_frac": None, "gpu_other_processes": None}, False),
    ],
)
def test_each_limit_from_both_sides(load, noisy):
    assert (judge(load=load).quality == "noisy") is noisy
    assert (judge(target=0.03125).quality, judge(target=0.03).quality) == ("good", "noisy")


# -- the advice --------------------------------------------------------------------------------

TAIL = ", or pinning this run and the other jobs to separate cores (taskset -c)"
QUIET = "a quieter time (`paradnn run --wait-for-idle`)"
STEAL = "a quieter time on this VM's host, or a dedicated machine (CPU time stolen)"
GPU = "the GPU to itself (nvidia-smi names the other processes)"
LONGER = "a longer --max-time (more samples narrow the CI)"


def row(others=None, cpus=None, threads=None, **load):
    return {
        "others_cpu_frac": others,
        "threads": threads,
        "load": {"cpus": cpus, **load},
        "step_time_s": 1.0,
        "step_time_ci_low_s": 0.96875,
        "step_time_ci_high_s": 1.03125,
    }


def test_busy_cpus_suggest_the_free_cores_when_fewer_than_the_threads():
    assert Q.advice(row(0.5, cpus=8, threads=8)) == [
        f"--threads 4 (other processes held 4 of 8 cores), {QUIET}{TAIL}"
    ]
    assert Q.advice(row(0.5, cpus=8, threads=5)) == [
        f"--threads 4 (other processes held 4 of 8 cores), {QUIET}{TAIL}"
    ]
    # as many free cores as threads: just fewer threads
    assert Q.advice(row(0.5, cpus=8, threads=4)) == [f"fewer threads, {QUIET}{TAIL}"]
    # all held: at least one core is free
    assert Q.advice(row(1.0, cpus=4, threads=2)) == [
        f"--threads 1 (other processes held 4 of 4 cores), {QUIET}{TAIL}"
    ]
    assert Q.advice(row(0.5, cpus=None, threads=8)) == [f"fewer threads, {QUIET}{TAIL}"]
    assert Q.advice(row(0.5, cpus=0, threads=8)) == [f"fewer threads, {QUIET}{TAIL}"]
    assert Q.advice(row(0.5, cpus=8, threads=None)) == [f"fewer threads, {QUIET}{TAIL}"]
    assert Q.advice(row(0.5, cpus=8, threads=1)) == [f"{QUIET}{TAIL}"]  # one is not fewer
    assert Q.advice(row(0.5, cpus=8, threads=2)) == [f"fewer threads, {QUIET}{TAIL}"]


def test_the_load_s_own_fraction_is_read_when_the_row_has_none():
    r = row(cpus=4, threads=4, others_cpu_frac=0.5)
    del r["others_cpu_frac"]
    assert Q.advice(r) == [f"--threads 2 (other processes held 2 of 4 cores), {QUIET}{TAIL}"]
    r["others_cpu_frac"] = 0.0625  # the row's own figure comes first
    assert Q.advice(r) == []


def test_each_cause_its_fix_and_the_limits_from_both_sides():
    assert Q.advice(row(0.1, cpus=8, threads=8)) == []
    assert Q.advice(row(0.1000001, cpus=8, threads=8))[0].startswith("--threads 7 (other")
    assert Q.advice(row(steal_frac=0.05)) == []
    assert Q.advice(row(steal_frac=0.0500001)) == [STEAL]
    assert Q.advice(row(gpu_other_processes=[{"pid": 1}])) == [GPU]
    assert Q.advice(row(gpu_other_processes=[])) == []
    assert Q.advice(row(0.5, cpus=2, threads=1, steal_frac=0.25, gpu_other_processes=[1])) == [
        f"{QUIET}{TAIL}",
        STEAL,
        GPU,
    ]


def test_a_ci_wider_than_its_target_alone_asks_for_more_samples():
    assert Q.advice(row(target_ci_rel=0.03125)) == []
    assert Q.advice(row(target_ci_rel=0.03)) == [LONGER]
    assert Q.advice(row()) == []  # no target known: a CI is not judged
    no_ci = {**row(target_ci_rel=0.5), "step_time_ci_low_s": None}
    assert Q.advice(no_ci) == [LONGER]
    assert Q.advice({}) == [LONGER]  # nothing measured at all: no CI
    assert Q.advice(row(target_ci_rel=0.03, steal_frac=0.25)) == [STEAL]  # a cause first


def test_the_warning_line():
    assert Q.warning_line("fc", "good", ["x"]) is None
    assert Q.warning_line("fc", None, ["x"]) is None
    assert Q.warning_line("fc fp32", "noisy", ["a", "b"], row(steal_frac=0.25)) == (
        f"noisy: fc fp32: a; b. It is stored, flagged, and left out of compare/report; what "
        f"would help: {STEAL}."
    )
    quiet = row(target_ci_rel=0.5)
    assert Q.warning_line("fc", "noisy", None, quiet) == (
        "noisy: fc: . It is stored, flagged, and left out of compare/report; what would help: "
        "re-run it: the cause was not measured."
    )
    assert Q.warning_line("fc", "noisy", ["r"]).endswith(f"what would help: {LONGER}.")


# -- the summary of many -----------------------------------------------------------------------


def rec(key, quality, status="ok", ci=(1.0, 0.96875, 1.03125), others=None, reasons=None,
        name="fc", **load):  # fmt: skip
    med, lo, hi = ci
    return {
        "run_key": key,
        "status": status,
        "quality": quality,
        "family": name,
        "precision": "fp32",
        "config": {"nodes": key},
        "step_time_s": med,
        "step_time_ci_low_s": lo,
        "step_time_ci_high_s": hi,
        "others_cpu_frac": others,
        "quality_reasons": reasons,
        "threads": 1,
        "load": {"cpus": 2, **load},
    }


def test_no_noisy_attempt_no_summary_and_one_alone_is_its_own_warning():
    assert Q.noisy_summary([]) is None
    assert Q.noisy_summary([rec(1, "good"), rec(2, "noisy", status="crashed")]) is None
    one = rec(1, "noisy", reasons=["r"], steal_frac=0.25)
    assert Q.noisy_summary([one]) == (
        f"noisy: fc fp32 nodes=1: r. It is stored, flagged, and left out of compare/report; "
        f"what would help: {STEAL}."
    )
    assert Q.noisy_summary([one], label=lambda r: "L") == Q.warning_line("L", "noisy", ["r"], one)


def test_the_summary_counts_configs_attempts_and_recoveries():
    rows = [
        rec(1, "noisy", ci=(1.0, 0.9375, 1.125), others=0.25, reasons=["other processes used 25%"]),
        rec(1, "good"),
        rec(2, "noisy", ci=(1.0, 0.75, 1.0625), others=0.5,
            reasons=["CI reaches ±25%", "other processes used 50%"], steal_frac=0.25),
        rec(3, "noisy", ci=(1.0, None, None), reasons=["no CI (too few)"]),
        rec(3, "noisy", status="oom"),
    ]  # fmt: skip
    assert Q.noisy_summary(rows) == (
        "noisy: 2 of 3 configs kept noisy, 1 good once measured again (3 noisy attempts); "
        "worst CI ±25.0% (fc fp32 nodes=2); other processes used 25%–50% of their CPUs; "
        "why: CI wider than its target (2), other processes on its CPUs (2). They are stored, "
        f"flagged, and left out of compare/report; what would help: {QUIET}{TAIL}; {STEAL}; "
        f"{LONGER}."
    )
    assert Q.kept_noisy(rows) == 2


def test_a_summary_whose_configs_all_recovered_says_so():
    rows = [rec(1, "noisy", others=0.25, reasons=["the hypervisor stole 9%"]), rec(1, "good")]
    rows.append(rec(2, "noisy", others=0.25, reasons=["2 other process(es) on the GPU (pid 1)"]))
    rows.append(rec(2, "good"))
    assert Q.noisy_summary(rows) == (
        "noisy: 0 of 2 configs kept noisy, 2 good once measured again (2 noisy attempts); "
        "worst CI ±3.1% (fc fp32 nodes=2); other processes used 25% of their CPUs; why: CPU "
        "time stolen (1), other processes on the GPU (1). Each config has a good attempt now, "
        "the one compare/report use; the noisy ones are stored and flagged."
    )
    assert Q.kept_noisy(rows) == 0


def test_one_config_two_attempts_in_the_singular_and_unmeasured_load():
    rows = [rec(1, "noisy", reasons=None), rec(1, "noisy", reasons=["odd reason"])]
    assert Q.noisy_summary(rows) == (
        "noisy: 1 of 1 config kept noisy (2 noisy attempts); worst CI ±3.1% (fc fp32 nodes=1); "
        "the load on their CPUs was not measured; why: odd reason (1), rated noisy (1). They "
        "are stored, flagged, and left out of compare/report; what would help: re-run them: "
        "the cause was not measured."
    )
    single = [rec(1, "noisy", reasons=["r"], ci=(1.0, None, None)), rec(2, "crashed")]
    assert Q.noisy_summary(single).startswith(
        "noisy: 1 of 1 config kept noisy (1 noisy attempt); the load on their CPUs"
    )


def test_the_worst_ci_tie_goes_by_name_and_rows_without_a_key_count_apart():
    a = rec(None, "noisy", name="zz", reasons=["r"])
    b = rec(None, "noisy", name="aa", reasons=["r"])
    for rows in ([a, b], [b, a]):
        assert "worst CI ±3.1% (zz fp32 nodes=None)" in Q.noisy_summary(rows)
        assert Q.noisy_summary(rows).startswith("noisy: 2 of 2 configs kept noisy (2 noisy")


def test_at_most_three_tips_each_once():
    rows = [
        rec(1, "noisy", others=0.5, reasons=["a"], steal_frac=0.25, gpu_other_processes=[1]),
        rec(2, "noisy", others=0.5, reasons=["a"], steal_frac=0.25),
        rec(3, "noisy", reasons=["a"], target_ci_rel=0.001),
    ]
    out = Q.noisy_summary(rows)
    assert out.endswith(f"what would help: {QUIET}{TAIL}; {STEAL}; {GPU}.")
    assert "why: a (3)." in out


def test_kept_noisy_counts_ok_configs_with_no_good_attempt():
    rows = [rec(1, "noisy"), rec(1, "noisy"), rec(2, "noisy", status="crashed"), rec(3, "good")]
    assert Q.kept_noisy(rows) == 1
    assert Q.kept_noisy([rec(2, "noisy"), rec(2, "good", status="oom")]) == 1
    assert Q.kept_noisy([]) == 0


# -- a busy machine ----------------------------------------------------------------------------


def sample(others, cpus=(0, 1), reason=None, procs=()):
    return host.LoadSample(tuple(cpus), 2.0, others, {}, procs, None, 1.0, reason)


def test_busy_is_above_the_limit_and_unknown_is_not_busy():
    assert not Q.machine_busy(sample(0.2))  # 0.2 of 2 cores: 10 %
    assert Q.machine_busy(sample(0.25))
    assert not Q.machine_busy(sample(None, reason="no /proc"))
    assert Q.busy_line(sample(0.2)) is None
    assert Q.busy_line(sample(None, reason="no /proc")) == (
        "machine load unknown (no /proc): runs are judged by their own windows"
    )
    s = sample(1.5, procs=(host.BusyProcess(9, "python3", 1.0),))
    assert Q.busy_line(s) == (
        f"busy machine: {s.words()} (measured over 2.0 s; runs are flagged noisy above 10%); "
        "--wait-for-idle holds the sweep until it is quiet"
    )


def test_wait_for_quiet_returns_the_first_quiet_sample_or_gives_up_at_its_limit():
    busy, quiet = sample(1.0), sample(0.0)
    seq = iter([busy, busy, quiet])
    heard = []
    clock = iter([10.0, 11.0, 13.0]).__next__
    s, ok = Q.wait_for_quiet(lambda: next(seq), 5.0, lambda s, w: heard.append(w), clock)
    assert (s, ok, heard) == (quiet, True, [1.0, 3.0])
    seq = iter([busy, busy, busy])
    heard = []
    clock = iter([10.0, 12.0, 15.0]).__next__
    s, ok = Q.wait_for_quiet(lambda: next(seq), 5.0, lambda s, w: heard.append(w), clock)
    assert (s, ok, heard) == (busy, False, [2.0])  # 5 s waited: the limit is reached
    s, ok = Q.wait_for_quiet(lambda: quiet, 0.0)
    assert (s, ok) == (quiet, True)
    seq = iter([busy, quiet])
    assert Q.wait_for_quiet(lambda: next(seq), 5.0) == (quiet, True)  # the default listener


# -- the record part ---------------------------------------------------------------------------

TIMING = {"median": 1.0, "ci_low": 0.96875, "ci_high": 1.0625, "q1": 0.9375, "q3": 1.0625,
          "stop_reason": "max_time"}  # fmt: skip


def test_the_quality_part_carries_the_verdict_the_load_and_its_nulls():
    load = {"others_cpu_frac": 0.5, "cpus": 2}
    q = Q.quality_part(TIMING, load, 0.03125, scope="slowest rank")
    assert q.quality == "noisy"
    assert q.quality_reasons == [
        "CI reaches ±6.2% > ±3% target (stopped at max_time)",
        "other processes used 50% of the run's CPUs (> 10%)",
    ]
    assert (q.ci_half_rel, q.iqr_rel, q.others_cpu_frac) == (0.046875, 0.125, 0.5)
    assert q.load == {"others_cpu_frac": 0.5, "cpus": 2, "target_ci_rel": 0.03125,
                      "scope": "slowest rank"}  # fmt: skip
    assert q.nulls == {}
    assert load == {"others_cpu_frac": 0.5, "cpus": 2}  # the caller's dict is left alone
    mine = Q.quality_part(TIMING, {"reason": "no /proc"}, 0.0625)
    assert mine.quality == "good" and mine.quality_reasons == []
    assert mine.load == {"reason": "no /proc", "target_ci_rel": 0.0625}
    assert mine.others_cpu_frac is None and mine.nulls == {"others_cpu_frac": "no /proc"}
    assert Q.quality_part(TIMING, {}, 0.0625).nulls == {"others_cpu_frac": "unknown"}


def test_the_probe_s_readers_of_this_machine(monkeypatch):
    import posix

    monkeypatch.setattr(Q.os, "getloadavg", lambda: (1.23456, 7.0, 9.0))
    monkeypatch.setattr(Q.os, "times", lambda: posix.times_result((1.5, 0.25, 8.0, 9.0, 99.0)))
    monkeypatch.setattr(host, "usable_cpus", lambda: [2, 5])
    assert Q._loadavg() == 1.23 and Q._own_cpu_s() == 1.75 and Q._usable_cpus() == [2, 5]
    assert Q.LoadProbe().cpus == [2, 5]


def test_the_causes_are_counted_most_first_then_by_name():
    rows = [
        rec(1, "noisy", reasons=["CI reaches ±9%", "other processes used 50%"]),
        rec(2, "noisy", reasons=["other processes used 20%", "other processes used 30%"]),
        rec(3, "noisy", reasons=["the hypervisor stole 9%"]),
    ]
    out = Q.noisy_summary(rows)
    assert "why: other processes on its CPUs (2), CI wider than its target (1), CPU time " in out
    assert "stolen (1)." in out


def test_a_run_s_label_is_family_precision_and_its_config_in_order():
    assert Q._label({"family": "fc", "precision": "bf16", "config": {"b": 2, "a": 1}}) == (
        "fc bf16 b=2 a=1"
    )
    assert Q._label({"family": "cnn", "precision": "fp32", "config": None}) == "cnn fp32"
    assert Q._label({}) == "None None"
