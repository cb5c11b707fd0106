"""Energy around the timed window: the sampler thread, the timer's window extension, options,
the store (schema v4), tables, and `bench --energy` end to end on this CPU."""

import itertools
import json
import sqlite3
import threading
import time

import pytest

from paradnn.cli.tables import energy_notes, rich_table
from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.measure.energy import (
    Reading,
    Sampler,
    energy_part,
    measure_idle,
    open_meter,
    with_idle,
)
from paradnn.measure.energy.fakes import FakeRaplZone, VirtualClock, build_powercap, reader
from paradnn.measure.timer import TimingPolicy, measure
from paradnn.records import RunRecord
from paradnn.store import open_store
from paradnn.store.db import schema_version
from paradnn.store.schema import LATEST, MIGRATIONS

from conftest import TINY, run_cli

FAST = ["--device", "cpu", "--threads", "1", "--min-time", "0", "--max-time", "0.2"]


class Counting:
    id, kind = "fake:0", "cpu"

    def __init__(self, clock):
        self.clock, self.n = clock, 0

    def read(self):
        self.n += 1
        return Reading(self.clock(), counter_j=float(self.n))


def test_sampler_thread_on_a_virtual_clock_records_gaps_and_late_ticks():
    clock = VirtualClock(0.0)
    calls = []

    def wait(s):  # the 6th wait overruns by 0.3 s; stop after 40 waits
        calls.append(s)
        clock.advance(s + (0.3 if len(calls) == 6 else 0.0))
        if len(calls) == 40:
            sampler._stop.set()

    sampler = Sampler([Counting(clock)], 0.05, clock=clock, wait=wait)
    sampler.start()
    sampler._thread.join(timeout=5)
    assert not sampler.running
    h = sampler.health()
    assert h["n_samples"] == len(sampler.ticks) == 40
    assert h["gap_count"] == 1 and h["gaps"][0]["duration_s"] == pytest.approx(0.35)
    assert h["max_gap_s"] == pytest.approx(0.35) and h["late_count"] == 1
    # drift-free: every other interval is exactly one period
    ticks = sampler.ticks
    normal = [b - a for a, b in itertools.pairwise(ticks) if b - a < 0.1]
    assert all(d == pytest.approx(0.05) for d in normal)


def test_sampler_refuses_polling_faster_than_50_ms():
    with pytest.raises(ValueError, match=r"0\.05"):
        Sampler([], 0.01)


def test_sampler_thread_stops_and_joins_on_real_time():
    before = threading.active_count()
    src = Counting(time.monotonic)
    sampler = Sampler([src], 0.05)
    sampler.start()
    hang = time.monotonic() + 60  # only catches a sampler that never reads
    while len(sampler.readings.get("fake:0", [])) < 2 and time.monotonic() < hang:
        time.sleep(0.05)
    sampler.stop()
    assert not sampler.running and threading.active_count() == before
    assert len(sampler.readings["fake:0"]) >= 2


class FakeClock:
    def __init__(self, step_s):
        self.t, self.step_s, self.events = 0.0, step_s, []

    def step(self):
        self.t += self.step_s

    def now(self):
        return self.t

    def sync(self):
        self.events.append(("sync", self.t))

    def mark(self):
        return self.t

    def elapsed(self, pairs):
        return [b - a for a, b in pairs]


class Window:
    def __init__(self, clock):
        self.clock, self.edges = clock, []

    def begin(self):
        self.edges.append(("begin", self.clock.t, self.clock.events[-1]))

    def end(self):
        self.edges.append(("end", self.clock.t, self.clock.events[-1]))


def test_timer_extends_the_window_to_the_minimum_and_brackets_it_with_syncs():
    clock = FakeClock(0.01)
    policy = TimingPolicy(min_time_s=0.5, max_time_s=2.0, warmup_min_time_s=0.1,
                          min_window_s=12.0)  # fmt: skip
    w = Window(clock)
    t = measure(clock.step, clock, policy, window=w)
    (b, b_t, b_ev), (e, e_t, e_ev) = w.edges
    assert (b, e) == ("begin", "end")
    assert e_t - b_t >= 12.0  # past the 2 s cap: the window decides
    assert b_ev == ("sync", b_t) and e_ev == ("sync", e_t)  # a sync right before each edge
    assert t.steps == pytest.approx((e_t - b_t) / 0.01, abs=1)
    # without a minimum window the same policy stops at the CI target, long before 12 s
    other = FakeClock(0.01)
    short = measure(other.step, other, TimingPolicy(min_time_s=0.5, max_time_s=2.0,
                                                    warmup_min_time_s=0.1))  # fmt: skip
    assert short.measure_wall_s < 2.5 and short.steps == pytest.approx(short.measure_wall_s / 0.01)


def test_energy_options_are_validated_and_enter_the_key_only_when_on():
    with pytest.raises(ConfigError, match=r"energy_period = 0.01: must be seconds in \[0.05"):
        RunOptions(energy_period_s=0.01)
    with pytest.raises(ConfigError, match="energy_idle = -1"):
        RunOptions(energy_idle_s=-1)
    assert "energy" not in RunOptions().key_fields()
    assert RunOptions(energy=True).key_fields()["energy"] is True


def test_cli_rejects_a_fast_energy_period_in_one_line(capsys, tmp_path):
    db = tmp_path / "r.db"
    args = ["bench", "fc", "--energy", "--energy-period", "0.01", "--db", str(db), *FAST]
    code, _, err = run_cli(capsys, *args)
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --energy-period = 0.01: must be a number in [0.05, 10] (NVML polled faster "
        "than 50 ms returns zeros)"
    ]
    assert not db.exists()


def test_bench_energy_on_this_cpu_stores_numbers_or_a_reason_and_prints_it(capsys, tmp_path):
    db = tmp_path / "r.db"
    cfg = [f"{k}={v}" for k, v in TINY["fc"].items()]
    code, out, err = run_cli(capsys, "bench", "fc", *cfg, "--energy", "--db", str(db), *FAST)
    assert code == 0, err
    with open_store(db) as s:
        (row,) = s.runs()
    assert row["status"] == "ok" and row["energy"]["window"]["steps"] > 0
    assert row["energy_window_s"] > 0 and row["energy_period_s"] == 0.05
    if row["energy_j"] is None:  # this VM: no RAPL
        why = row["nulls"]["energy_j"]
        code_ = why.split(":")[0]
        assert code_ in ("vm_guest", "no_rapl", "container_masked", "permission_denied")
        assert all(row["nulls"][c].startswith(code_) for c in ("avg_power_w", "samples_per_j"))
        assert f"energy: n/a ({why})" in out.replace("\n", "")
        assert f"n/a ({code_})" in out  # the table's W and J/sample cells
        assert row["energy"]["headline"]["reason"] == code_
    else:  # a machine with readable RAPL
        assert row["energy_j"] > 0 and row["energy_method"] == "rapl_powercap"
        assert row["avg_power_w"] == pytest.approx(row["energy_j"] / row["energy_window_s"])
        assert "energy: " in out and " J over " in out
    assert row["idle_power_w"] is not None or "idle_power_w" in row["nulls"]


def test_runs_without_energy_say_so_and_tables_leave_the_columns_out():
    from paradnn.records import null_energy

    rec = _record().with_part(null_energy("not_requested"))
    assert rec.nulls["energy_j"].startswith("not_requested") and rec.energy_j is None
    assert rec.nulls["avg_power_w"] == rec.nulls["energy_j"]
    assert energy_notes([rec.as_dict()]) == []
    headers = [c.header for c in rich_table([rec.as_dict()]).columns]
    assert "W" not in headers and "J/sample" not in headers and "quality" in headers


def test_idle_baseline_is_average_power_over_an_idle_window(tmp_path):
    clock = VirtualClock()
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": {
        "name": "package-0", "energy_uj": 0, "max_energy_range_uj": 262143328850}})  # fmt: skip
    live = {"intel-rapl:0": FakeRaplZone(clock, 18.0, 262143328850)}
    meter = open_meter("cpu", powercap=root, read=reader(live), cpuinfo=tmp_path / "x",
                       markers=(), clock=clock)  # fmt: skip
    idle = measure_idle(meter, 2.0, sleep=clock.advance)
    meter.close()
    assert idle["power_w"] == pytest.approx(18.0, rel=1e-3) and idle["reason"] is None
    assert idle["window_s"] == pytest.approx(2.0) and idle["method"] == "rapl_powercap"
    assert "not subtracted" in idle["note"]


def _rapl_result(tmp_path, watts=45.0, seconds=3.0, steps=300, batch=16):
    clock = VirtualClock()
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": {
        "name": "package-0", "energy_uj": 0, "max_energy_range_uj": 262143328850}})  # fmt: skip
    live = {"intel-rapl:0": FakeRaplZone(clock, watts, 262143328850)}
    meter = open_meter("cpu", powercap=root, read=reader(live), cpuinfo=tmp_path / "x",
                       markers=(), clock=clock)  # fmt: skip
    meter.begin(threaded=False)
    for _ in range(int(seconds / 0.05)):
        clock.advance(0.05)
        meter.sampler.tick()
    meter.end()
    return meter.result(steps, batch)


def _record():
    return RunRecord.flat(
        run_key="k",
        family="fc",
        config={"batch": 16},
        precision="fp32",
        optimizer="sgd",
        device="cpu",
        status="ok",
        examples_per_step=16,
        nulls={"energy_j": "not_measured: x", "idle_power_w": "not_measured: x"},
    )


def test_measured_energy_fills_the_columns_clears_their_nulls_and_roundtrips(tmp_path, store):
    part = energy_part(_rapl_result(tmp_path), 0.05)
    part = with_idle(part, {"power_w": 12.5, "reason": None, "method": "rapl_powercap"})
    rec = _record().with_part(part)
    assert rec.energy_j == pytest.approx(135.0, rel=1e-3)
    assert rec.avg_power_w == pytest.approx(45.0, rel=1e-3)
    assert rec.energy_per_step_j == pytest.approx(135.0 / 300, rel=1e-3)
    assert rec.energy_per_sample_j == pytest.approx(135.0 / 4800, rel=1e-3)
    assert rec.samples_per_j == pytest.approx(4800 / 135.0, rel=1e-3)
    assert (rec.energy_method, rec.energy_scope) == ("rapl_powercap", "cpu_package")
    assert rec.idle_power_w == 12.5 and rec.energy["idle"]["power_w"] == 12.5
    assert not {"energy_j", "idle_power_w"} & set(rec.nulls)
    store.insert(rec)
    (row,) = store.runs()
    assert (
        row["energy_j"] == rec.energy_j and row["energy"]["headline"]["method"] == "rapl_powercap"
    )
    (line,) = energy_notes([row])
    assert line.startswith("energy: 135 J over 3 s = 45 W, 0.0281 J/sample, 35.6 samples/J")
    assert "idle 12.5 W" in line


def test_results_table_shows_energy_columns_when_present(tmp_path):
    from rich.console import Console

    rec = _record().with_part(energy_part(_rapl_result(tmp_path), 0.05))
    row = rec.as_dict()
    con = Console(width=250, record=True)
    con.print(rich_table([row]))
    text = con.export_text()
    assert "J/sample" in text and "45" in text and "0.0281" in text


def test_v3_database_migrates_to_v4_keeping_its_rows(tmp_path):
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path)
    conn.executescript("".join(MIGRATIONS[:3]) + "\nPRAGMA user_version = 3;")
    conn.execute(
        "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, status,"
        " step_time_s, nulls) VALUES ('a', 'fc', '{}', 'fp32', 'sgd', 'eager', 'cpu', 'ok', 0.5,"
        " '{}')"
    )
    conn.commit()
    conn.close()
    with open_store(path) as s:
        assert schema_version(s.conn) == LATEST >= 4
        (row,) = s.runs()
        assert row["step_time_s"] == 0.5 and row["energy_j"] is None and row["energy"] is None
        cols = {r[1] for r in s.conn.execute("PRAGMA table_info(runs)")}
        assert {"energy_j", "avg_power_w", "energy_per_sample_j", "energy"} <= cols
        s.insert(_record())
        assert json.loads(s.conn.execute("SELECT nulls FROM runs WHERE id = 2").fetchone()[0])


@pytest.mark.gpu
def test_gpu_energy_counter_on_a_steady_matmul():
    """On a real GPU: the counter is chosen, the window meets its minimum, and the instant
    power agrees within 10% on a steady load (reference/energy.md §3.8 items 1–2, short)."""
    import torch

    dev = torch.device("cuda:0")
    a = torch.randn(4096, 4096, device=dev)
    meter = open_meter("cuda:0", sync=lambda: torch.cuda.synchronize(dev))
    try:
        meter.begin()
        end = time.monotonic() + max(meter.min_window_s, 1.0) + 0.5
        steps = 0
        while time.monotonic() < end:
            a @ a
            steps += 1
        meter.end()
        res = meter.result(steps, 1)
    finally:
        meter.close()
    (gpu,) = [d for d in res["devices"] if d["kind"] == "gpu"]
    assert gpu["energy_j"] is not None and gpu["energy_j"] > 0, gpu
    assert gpu["method"] in ("nvml_energy_counter", "nvml_power_instant")
    if "cross_check" in gpu:
        assert 0.9 < gpu["cross_check"]["ratio"] < 1.1


def _fake_rapl_meter(tmp_path, watts):
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": {
        "name": "package-0", "energy_uj": 0, "max_energy_range_uj": 262143328850}})  # fmt: skip
    live = {"intel-rapl:0": FakeRaplZone(time.monotonic, watts, 262143328850)}

    def fake_open_meter(device, **kw):
        return open_meter(device, powercap=root, read=reader(live), cpuinfo=tmp_path / "x",
                          markers=(), **kw)  # fmt: skip

    return fake_open_meter


def test_execute_measures_the_timed_window_on_a_fake_rapl_package(monkeypatch, tmp_path):
    from paradnn.measure import energy
    from paradnn.runner.execute import execute

    monkeypatch.setattr(energy, "open_meter", _fake_rapl_meter(tmp_path, 25.0))
    policy = TimingPolicy(
        min_samples=5,
        min_time_s=0.0,
        max_time_s=0.05,
        warmup_min_steps=2,
        warmup_min_time_s=0.0,
        warmup_max_steps=12,
        target_ci_rel=0.5,
    )
    opts = RunOptions(device="cpu", threads=1, timing=policy, energy=True)
    rec = execute(RunSpec("fc", TINY["fc"], opts))
    assert rec.status == "ok", rec.error
    assert rec.energy_window_s >= 0.1  # extended past max_time to RAPL's 1% minimum
    assert rec.energy_j == pytest.approx(25.0 * rec.energy_window_s, rel=0.02)
    steps = rec.energy["window"]["steps"]
    assert steps == rec.n_samples * rec.steps_per_sample
    assert rec.energy_per_sample_j == pytest.approx(rec.energy_j / (steps * 4))
    assert (rec.energy_method, rec.energy_scope) == ("rapl_powercap", "cpu_package")
    assert "energy_j" not in rec.nulls and rec.energy["sampling"]["n_samples"] >= 1


def test_an_energy_failure_nulls_the_energy_never_the_run(monkeypatch, tiny_policy):
    from paradnn.measure import energy
    from paradnn.runner.execute import execute

    def boom(device, **kw):
        raise RuntimeError("sensor on fire")

    monkeypatch.setattr(energy, "open_meter", boom)
    opts = RunOptions(device="cpu", threads=1, timing=tiny_policy, energy=True)
    rec = execute(RunSpec("fc", TINY["fc"], opts))
    assert rec.status == "ok" and rec.step_time_s is not None
    assert rec.energy_j is None
    assert rec.nulls["energy_j"] == "read_failed: RuntimeError: sensor on fire"


def test_energy_refuses_parallel_workers_that_would_share_a_package(store):
    from paradnn.config import SweepSettings
    from paradnn.runner.supervisor import Supervisor

    with pytest.raises(ConfigError, match="workers = 2: --energy needs 1"):
        Supervisor(store, RunOptions(device="cpu", energy=True), SweepSettings(workers=2))
