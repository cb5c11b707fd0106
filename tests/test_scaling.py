"""Data-parallel runs, the fast half (docs/scaling.md): options and keys, rank placement, the
record part and its migration, the analysis (efficiency, Karp–Flatt, Amdahl, observation 3),
the simulator's check, bad input at the command line. Torch-free except the DDP fake."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from paradnn import sweep
from paradnn.analysis import frames
from paradnn.analysis import scaling as S
from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.measure.collectives import busbw, overlap_fraction
from paradnn.records import Parallel
from paradnn.runner import distributed as D
from paradnn.runner.start import start_record
from paradnn.sim import scaling_check as C
from paradnn.sim.interconnect import Link, Topology, allreduce

import synth
from conftest import run_cli

ENV = {"device": "cpu", "fingerprint": "f", "device_type": "cpu", "threads": 1}
FC = {"layers": 1, "nodes": 32, "batch": 8}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("procs", 0, "procs = 0: must be an integer in [1, 4096]"),
        ("procs", True, "procs = True: must be an integer in [1, 4096]"),
        ("strategy", "zero", "strategy = 'zero': must be one of ddp, fsdp"),
        ("scaling", "wide", "scaling = 'wide': must be one of weak, strong"),
    ],
)
def test_bad_options_are_one_line_naming_field_value_and_choices(field, value, message):
    with pytest.raises(ConfigError) as e:
        RunOptions(**{field: value})
    assert str(e.value) == message


def test_the_key_names_n_strategy_scaling_and_backend_only_for_several_processes():
    assert "procs" not in RunOptions().key_fields()  # old run keys never change
    assert "strategy" not in RunOptions(strategy="fsdp").key_fields()  # one process: no replicas
    key = RunOptions(procs=2, strategy="fsdp", scaling="strong").key_fields()
    assert (key["procs"], key["strategy"], key["scaling"]) == (2, "fsdp", "strong")
    one = start_record(RunSpec("fc", FC, RunOptions()), ENV)
    two = start_record(RunSpec("fc", FC, RunOptions(procs=2)), ENV)
    fsdp = start_record(RunSpec("fc", FC, RunOptions(procs=2, strategy="fsdp")), ENV)
    assert len({one.run_key, two.run_key, fsdp.run_key}) == 3
    assert one.procs == 1 and one.nulls["allreduce_s"].startswith("one process")
    assert (two.dist_backend, two.global_batch, two.rank_batch) == ("gloo", 16, 8)
    assert two.examples_per_step == 16 and two.flops_analytic == 2 * one.flops_analytic


def test_strong_scaling_splits_the_batch_or_refuses_it_in_one_line():
    rec = start_record(RunSpec("fc", FC, RunOptions(procs=2, scaling="strong")), ENV)
    assert (rec.status, rec.global_batch, rec.rank_batch) == ("ok", 8, 4)
    bad = start_record(
        RunSpec("fc", {**FC, "batch": 9}, RunOptions(procs=2, scaling="strong")), ENV
    )
    assert bad.status == "invalid"
    assert (
        bad.error == "batch = 9: strong scaling splits it over procs = 2 ranks; use a multiple of 2"
    )


def test_a_sweep_file_takes_procs_as_an_axis():
    text = (
        'procs = [1, 2]\nstrategies = ["ddp"]\n[[runs]]\nfamily = "fc"\nconfig = { layers = 1 }\n'
    )
    s = sweep.parse(text, label="s.toml", source="s.toml", name="s")
    assert [spec.options.procs for spec in s.specs()] == [1, 2]
    with pytest.raises(sweep.SweepError, match=r"procs\[0\] = 0"):
        sweep.parse(text.replace("[1, 2]", "[0]"), label="s.toml", source="s.toml", name="s")


def test_ranks_are_pinned_to_disjoint_cores_and_refused_past_them():
    plan = D.plan_ranks(RunOptions(procs=2), "cpu", [0, 1, 2, 3])
    assert (plan.backend, plan.threads, plan.cpus) == ("gloo", 2, [[0, 1], [2, 3]])
    assert D.plan_ranks(RunOptions(procs=2, threads=1), "cpu", [0, 1, 2, 3]).cpus == [[0], [1]]
    assert "needs 3 CPU cores" in D.plan_ranks(RunOptions(procs=3), "cpu", [0, 1])
    assert "needs 4 CPU cores" in D.plan_ranks(RunOptions(procs=2, threads=2), "cpu", [0, 1])
    gpu = D.plan_ranks(RunOptions(procs=2, device="cuda"), "cuda", [0, 1, 2, 3], gpus=2)
    assert (gpu.backend, gpu.threads) == ("nccl", 2)
    assert D.plan_ranks(RunOptions(procs=2), "cuda", [0, 1], gpus=1).startswith("procs = 2 needs")


def test_on_gpus_each_rank_wraps_its_own_device(monkeypatch):
    import torch
    from torch.nn import parallel

    from paradnn.runner import rank

    seen = {}

    class FakeDDP:
        def __init__(self, module, device_ids=None):
            seen["ids"] = device_ids
            self.no_sync = lambda: None

    monkeypatch.setattr(parallel, "DistributedDataParallel", FakeDDP)
    rank.wrap(torch.nn.Linear(2, 2), "ddp", torch.device("cuda", 1))
    assert seen["ids"] == [1]
    rank.wrap(torch.nn.Linear(2, 2), "ddp", torch.device("cpu"))
    assert seen["ids"] is None


def test_bandwidth_and_overlap_follow_their_definitions():
    assert busbw(100.0, 2) == 100.0 and busbw(100.0, 4) == 150.0  # algbw · 2(n−1)/n
    assert overlap_fraction(2.0, 1.0, 2.5) == (0.5, 0.5)
    assert overlap_fraction(2.0, 1.0, 4.0) == (0.0, -1.0)  # slower than serial: clipped
    assert math.isnan(overlap_fraction(1.0, 0.0, 1.0)[0])


def test_the_root_cause_is_the_rank_that_failed_not_the_peers_that_noticed():
    failed = [
        {
            "rank": 0,
            "ok": False,
            "status": "crashed",
            "error": "Connection closed by peer",
            "at": 1,
        },
        {"rank": 1, "ok": False, "status": "oom", "error": "MemoryError: out of memory", "at": 2},
    ]
    got = D._first_failure(failed, [], {})
    assert got["rank"] == 1 and got["status"] == "oom" and got["error"].startswith("rank 1: ")


def test_karp_flatt_and_amdahl():
    assert S.karp_flatt(1.6, 2) == pytest.approx(0.25)
    assert S.karp_flatt(2.0, 2) == pytest.approx(0.0)
    assert math.isnan(S.karp_flatt(1.0, 1))
    ns = [2, 4, 8]
    fit = S.amdahl_fit(
        ns,
        [
            float(S.amdahl_speedup(n, 0.1)) * (1 + e)
            for n, e in zip(ns, [0.01, -0.01, 0.005], strict=True)
        ],
    )
    assert fit.serial_fraction == pytest.approx(0.1, abs=0.02)
    assert fit.ci_low < fit.serial_fraction < fit.ci_high and fit.points == 3
    one = S.amdahl_fit([2], [1.6], low=[1.5], high=[1.7])
    assert one.serial_fraction == pytest.approx(0.25)
    assert one.ci_low == pytest.approx(S.karp_flatt(1.7, 2))
    assert one.ci_high == pytest.approx(S.karp_flatt(1.5, 2))
    assert S.amdahl_fit([1], [1.0]).reason == "no speedup at N > 1 to fit"


def _row(procs, step, family="fc", batch=8, **kw):
    """A stored-like run: N = 1 or N ranks of one weak-scaled config."""
    return synth.scale_row(procs, step, family, batch, **kw)


def test_efficiency_is_computed_against_the_stored_single_process_run():
    data = frames.from_frames([_row(1, 0.010), _row(2, 0.0125, allreduce_s=0.002)])
    t = S.efficiency_table(data)
    assert len(t) == 1
    r = t.iloc[0]
    assert r.speedup == pytest.approx(1.6) and r.efficiency == pytest.approx(0.8)
    assert r.karp_flatt == pytest.approx(0.25)
    assert r.speedup_low < 1.6 < r.speedup_high
    assert r.utilization == pytest.approx(0.8)  # per rank FLOP/s over the single process's
    assert pd.isna(r.compute_inflation)  # no no_sync time: no inflation
    t = S.efficiency_table(
        frames.from_frames([_row(1, 0.010), _row(2, 0.0125, compute_nosync_s=0.011)])
    )
    assert t.iloc[0].compute_inflation == pytest.approx(1.1)
    assert t.iloc[0].comm_exposed_frac == pytest.approx(0.12)
    assert not len(S.efficiency_table(frames.from_frames([_row(2, 0.01)])))  # no baseline


def test_observation3_gets_a_computed_verdict():
    rows = [_row(1, 0.010, batch=b) for b in (8, 16, 32)]
    rows += [_row(2, 0.0125 * b / 8 * (1 + i / 50), batch=b) for i, b in enumerate((8, 16, 32))]
    verdict, evidence, rule = S.observation3(frames.from_frames(rows))
    assert verdict == "holds" and "median e =" in evidence and "ρ(batch, e)" in evidence
    assert "0.05" in rule
    fast = [_row(1, 0.010), _row(2, 0.010)]  # perfect weak scaling: e = 0
    assert S.observation3(frames.from_frames(fast))[0] == "does not hold"
    assert S.observation3(frames.from_frames([_row(1, 0.01)]))[0] == "untestable"
    from paradnn.analysis import findings

    got = {f.id: f for f in findings.evaluate(frames.from_frames(rows))}
    assert got["multi-chip"].verdict == "holds"


def test_the_simulator_recovers_a_ring_it_was_fitted_on():
    n, link = 2, Link(bandwidth=1e9, latency_s=20e-6)
    ring = Topology("ring", (n,))
    ladder = [
        {"bytes": b, "time_s": allreduce(b, ring, link).time_s} for b in (4096, 10**6, 4 * 10**6)
    ]
    fit = C.fit_link(ladder, n, exclude=10**6)
    assert fit.bandwidth == pytest.approx(1e9) and fit.latency_s == pytest.approx(20e-6)
    row = _row(2, 0.0125, allreduce_s=ladder[1]["time_s"], allreduce_bytes=10**6, ladder=ladder)
    row["compute_nosync_s"] = 0.0125 - ladder[1]["time_s"]  # no overlap: the model's bound
    t = S.efficiency_table(frames.from_frames([_row(1, 0.010), row]))
    check = C.check_frame(t)
    assert check.allreduce_error == pytest.approx(0.0, abs=1e-9)
    assert check.efficiency_error == pytest.approx(0.0, abs=1e-9)
    assert "all-reduce time error 0.0%" in check.summary()
    assert check.summary().endswith("scaling efficiency error 0.0 points (median, absolute)")
    worse = dataclasses.replace(check, allreduce_error=0.25, efficiency_error=0.031)
    assert worse.summary() == (
        f"simulator check over {len(check.rows)} run(s): all-reduce time error 25.0% "
        "(geometric mean), scaling efficiency error 3.1 points (median, absolute)"
    )
    assert C.check_frame(pd.DataFrame()).reason.startswith("no data-parallel run")
    flat = [{"bytes": 4096, "time_s": 1e-3}, {"bytes": 8192, "time_s": 1e-3}]
    assert "not slower" in C.fit_link(flat, 2, exclude=None)
    assert check.rows[0]["config_key"] == t.iloc[0]["config_key"] is not None
    # a ladder no link can be fitted to: the check says why instead of predicting
    reason = C.check([{**t.iloc[0].to_dict(), "allreduce_ladder": flat}]).reason
    assert reason == C.fit_link(flat, 2, exclude=10**6)
    no_ladder = {**t.iloc[0].to_dict(), "allreduce_ladder": None}
    assert C.check([no_ladder]).reason == "no all-reduce ladder"
    # the link is fitted from the smallest and the largest size: a noisy middle is ignored
    sizes = (4096, 10**5, 10**6, 4 * 10**6)
    noisy = [{"bytes": b, "time_s": allreduce(b, ring, link).time_s} for b in sizes]
    noisy[1]["time_s"] *= 3
    got = C.fit_link(noisy, n, exclude=10**6)
    assert got.bandwidth == pytest.approx(1e9) and got.latency_s == pytest.approx(20e-6)


def test_the_part_is_stored_and_read_back(store):
    rec = start_record(RunSpec("fc", FC, RunOptions(procs=2)), ENV)
    part = Parallel(
        procs=2, strategy="ddp", scaling="weak", dist_backend="gloo", allreduce_s=0.001,
        allreduce_busbw=1e8, parallel={"allreduce_ladder": [{"bytes": 1, "time_s": 0.1}]},
        nulls={},
    )  # fmt: skip
    store.insert_record(rec.with_part(part))
    (row,) = store.runs()
    assert (row["procs"], row["strategy"], row["allreduce_busbw"]) == (2, "ddp", 1e8)
    assert row["parallel"]["allreduce_ladder"][0]["time_s"] == 0.1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--procs", "1,x"], "--procs = '1,x': comma-separated integers in [1, 4096]"),
        (["--procs", "1,٣"], "--procs = '1,٣': comma-separated integers in [1, 4096]"),
        (["--procs", "1,1"], "--procs = '1,1': each value once (1 is given twice)"),
        (["--procs", "1,0"], "--procs = 0: must be an integer in [1, 4096]"),
        (["--procs", "1,2", "--scaling", "strong", "batch=3"], "batch = 3: strong scaling"),
        (["--procs", "1,4096", "--device", "cpu"], "procs = 4096: × threads = 1 needs 4096"),
        (["--strategy", "zero"], "strategy = 'zero'"),
    ],
)
def test_scale_refuses_bad_input_in_one_line_before_any_work(capsys, tmp_path, args, message):
    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, "scale", "fc", "layers=1", *args, "--db", str(db))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_compare_by_procs_pairs_a_config_with_its_single_process_run():
    from paradnn.analysis import speedup

    rows = [_row(1, 0.010), _row(2, 0.0125), _row(1, 0.02, precision="bf16")]
    c = speedup.compare(frames.from_frames(rows), "procs", "1", "2")
    assert len(c.pairs) == 1 and c.pairs.iloc[0]["speedup"] == pytest.approx(1.6)
    by_prec = speedup.compare(frames.from_frames(rows), "precision", "fp32", "bf16")
    assert len(by_prec.pairs) == 1  # the N = 2 run has no bf16 twin: never paired across N


def test_the_report_section_shows_the_figure_the_verdict_and_the_check(tmp_path):
    from paradnn.report.sections.scaling import SECTION
    from paradnn.report.writer import Writer

    n = 2
    ladder = [{"bytes": b, "time_s": 1e-4 + b / 1e9} for b in (4096, 10**6, 4 * 10**6)]
    rows = [_row(1, 0.010), _row(1, 0.010, family="cnn")]
    for fam in ("fc", "cnn"):
        rows.append(
            _row(n, 0.0125, family=fam, allreduce_s=1.1e-3, allreduce_bytes=10**6,
                 compute_nosync_s=0.011, ladder=ladder)
        )  # fmt: skip
    w = Writer(tmp_path)
    s = SECTION.build(frames.from_frames(rows), w)
    assert s.empty is None and len(s.figures) == 3
    assert {p.name for p in w.figures} >= {"scaling-speedup.png", "scaling-serial.png"}
    assert s.notes[0].startswith("Observation 3 (seed 000 §4.3): holds. median e = 0.250")
    assert "FC median e 0.250 vs CNN 0.250" in s.notes[0]
    assert "simulator check over 2 run(s)" in s.notes[1]
    empty = SECTION.build(frames.from_frames([_row(1, 0.01)]), w)
    assert "paradnn scale" in empty.empty and not empty.figures


def test_a_gpu_launch_names_nccl_and_one_device_per_rank():
    from paradnn.runner.launch import Launch

    opts = RunOptions(procs=2, device="cuda", strategy="fsdp")
    env = {**ENV, "device": "cuda:0", "device_type": "cuda"}
    rec = start_record(RunSpec("fc", FC, opts), env)
    assert rec.dist_backend == "nccl"
    plan = D.plan_ranks(opts, "cuda", [0, 1, 2, 3], gpus=2)
    launch = D.launch_of(rec, opts, plan)
    assert (launch.plan.backend, launch.plan.device_type, launch.world) == ("nccl", "cuda", 2)
    assert launch.run.options == opts and launch.run.family == "fc"  # the run, whole
    assert launch.plan.cpus == [[0, 1], [2, 3]] and launch.rank_batch == 8
    assert Launch.from_json(launch.to_json()) == launch  # the ranks' launch file


def test_a_collective_timeout_is_a_timeout_and_names_the_silent_rank(tmp_path):
    from paradnn.runner import rank

    err = rank.error_of(RuntimeError("[gloo] Timed out waiting 5000ms for recv"), 0)
    assert err["status"] == "timeout" and err["rank"] == 0
    assert rank.error_of(MemoryError("out of memory"), 1)["status"] == "oom"

    class Alive:
        def poll(self):
            return None

    got = D._first_failure([{**err, "at": 1.0}], [Alive(), Alive()], {0: err})
    assert got["rank"] == 1 and got["error"].startswith("rank(s) [1] never answered; rank 0:")
    (tmp_path / "rank1.err").write_text("noise\nRuntimeError: boom\n")
    died = D._died(1, -9, tmp_path)
    assert died["status"] == "crashed" and died["error"] == (
        "rank 1 died with signal SIGKILL (-9): RuntimeError: boom"
    )


def test_a_slowdown_at_every_n_is_a_serial_fraction_of_one_not_more():
    # two processes 2× slower, four 2.5× slower: nothing parallelizes, and a fraction is ≤ 1
    fit = S.amdahl_fit([1, 2, 4], [1.0, 0.5, 0.4])
    assert fit.serial_fraction == pytest.approx(1.0) and fit.ci_high <= 1.0


def test_the_fit_per_config_maps_the_speedup_interval_at_one_n():
    t = S.efficiency_table(frames.from_frames([_row(1, 0.010), _row(2, 0.0125)]))
    fit = S.fits(t).iloc[0]
    assert fit.method == "karp-flatt at one N, its speedup CI mapped" and pd.isna(fit.reason)
    assert fit.ci_low < fit.serial_fraction < fit.ci_high
    assert fit.serial_fraction == pytest.approx(0.25)
    # an unnamed strategy or scaling (a null in the key) is a group of its own, still fitted
    fit = S.fits(t.assign(scaling=None, strategy=None)).iloc[0]
    assert fit.serial_fraction == pytest.approx(0.25) and pd.isna(fit.scaling)


def test_observation3s_interval_is_the_documented_seeded_bootstrap():
    # docs/scaling.md: a percentile bootstrap of the median e, 1,000 resamples from a fixed
    # seed, so the same runs give the same interval (and verdict) on every report
    import numpy as np

    es = (0.22, 0.122, 0.145, 0.141, 0.262, 0.041, 0.127, 0.16)  # e of eight configs
    batches = [8 * (i + 1) for i in range(len(es))]
    rows = [_row(1, 0.010, batch=b) for b in batches]
    rows += [_row(2, 0.010 * (1 + e), batch=b) for e, b in zip(es, batches, strict=True)]
    data = frames.from_frames(rows)
    e = S.efficiency_table(data)["karp_flatt"].to_numpy()
    rng = np.random.default_rng(0)
    boots = [np.median(rng.choice(e, len(e))) for _ in range(1000)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    r = S.observation3_result(data)
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo, abs=0), pytest.approx(hi, abs=0))
    assert S.observation3_result(data) == r and r.n == 8
    assert (r.ci_low, r.ci_high) == (pytest.approx(0.122), pytest.approx(0.194725))


def test_runs_of_n_above_one_without_a_single_process_run_are_not_enough_data():
    r = S.observation3_result(frames.from_frames([_row(2, 0.0125)]))
    assert r.verdict == "not enough data" and "no N = 1 run" in r.evidence
    t = S.efficiency_table(frames.from_frames([_row(1, 0.010), _row(2, 0.0125)]))
    assert t.iloc[0]["threads"] == 1  # each rank's threads, as the table shows them
