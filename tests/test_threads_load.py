"""Threads that fit the machine: the load sampler, the cgroup quota and the thread choice, on
fake /proc and cgroup files (no real load, no real waiting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paradnn import host

HZ = host._ticks_per_s()


def _stat(busy: dict[int, float], steal: float = 0.0) -> str:
    """A /proc/stat whose CPUs were busy `busy[c]` seconds (user time) since boot."""
    lines = ["cpu  1 1 1 1 1 1 1 1 0 0"]
    for c, s in busy.items():
        lines.append(f"cpu{c} {int(s * HZ)} 0 0 {int(1000 * HZ)} 0 0 0 {int(steal * HZ)} 0 0")
    return "\n".join([*lines, "intr 1 2 3", ""])


def _pid_stat(pid: int, name: str, cpu_s: float) -> str:
    # pid (comm) state, then fields 4..13, utime (14), stime (15), ...
    rest = ["S", *["0"] * 10, str(int(cpu_s * HZ)), "0", *["0"] * 30]
    return f"{pid} ({name}) {' '.join(rest)}\n"


class FakeProc:
    """A /proc tree in a folder; `sleep` moves it to its second snapshot."""

    def __init__(self, root: Path, cgroup: str = "0::/\n"):
        self.root = root / "proc"
        (self.root / "self").mkdir(parents=True)
        (self.root / "self" / "cgroup").write_text(cgroup)
        (self.root / "loadavg").write_text("1.50 1.20 0.90 3/200 999\n")
        self.now = 100.0

    def snapshot(self, busy: dict[int, float], procs: dict[int, tuple[str, float, str]]) -> None:
        (self.root / "stat").write_text(_stat(busy))
        for pid, (name, cpu_s, allowed) in procs.items():
            d = self.root / str(pid)
            d.mkdir(exist_ok=True)
            (d / "stat").write_text(_pid_stat(pid, name, cpu_s))
            (d / "status").write_text(f"Name:\t{name}\nCpus_allowed_list:\t{allowed}\n")

    def sample(self, then, window=1.0, cpus=(0, 1), cgroup_root=None, own=(0.0, 0.0)):
        own_times = list(own)

        def sleep(s):
            self.now += window
            then()

        return host.sample_load(
            window,
            cpus=cpus,
            proc=str(self.root),
            cgroup=str(cgroup_root or self.root / "nocgroup"),
            sleep=sleep,
            clock=lambda: self.now,
            own_cpu=lambda: own_times.pop(0),
        )


def test_two_busy_loops_on_two_cores_leave_one_thread(tmp_path):
    fake = FakeProc(tmp_path)
    fake.snapshot({0: 10.0, 1: 20.0}, {7: ("python3", 5.0, "0"), 8: ("python3", 9.0, "1")})
    s = fake.sample(
        lambda: fake.snapshot(
            {0: 11.0, 1: 20.8}, {7: ("python3", 6.0, "0"), 8: ("python3", 9.8, "1")}
        )
    )
    assert s.others_cores == pytest.approx(1.8) and s.per_cpu[0] == pytest.approx(1.0)
    assert [(p.pid, p.cores) for p in s.processes] == [(7, 1.0), (8, 0.8)]
    assert s.words() == "2 other processes use 1.8 of 2 cores (python3 1.0, python3 0.8)"
    assert s.loadavg == 1.5 and s.quota_cores is None and s.others_frac == pytest.approx(0.9)
    c = host.choose_threads(None, s)
    assert (c.threads, c.free, c.usable, c.requested) == (1, 1, 2, None)
    assert "other processes use 1.8 cores" in c.reason and c.warning is None
    w = host.choose_threads(2, s)
    assert w.threads == 2 and w.requested == 2
    assert w.warning.startswith("--threads 2 exceeds the 1 free core(s) of 2")
    assert host.choose_threads(1, s).warning is None  # at the free count: no warning


def test_the_sampler_leaves_out_its_own_time_and_processes_elsewhere(tmp_path):
    fake = FakeProc(tmp_path)
    me = __import__("os").getpid()
    fake.snapshot({0: 0.0, 1: 0.0}, {me: ("pytest", 0.0, "0-1"), 9: ("elsewhere", 0.0, "5")})
    after = {me: ("pytest", 0.5, "0-1"), 9: ("elsewhere", 1.0, "5")}
    s = fake.sample(lambda: fake.snapshot({0: 0.5, 1: 0.0}, after), own=(3.0, 3.4))
    # 0.5 CPU-s busy, 0.4 of it ours: others took 0.1 of a core; the one pinned to CPU 5 and
    # this process are not named
    assert s.others_cores == pytest.approx(0.1) and s.processes == ()
    assert host.choose_threads(None, s).threads == 2  # 0.1 of a core holds none
    assert s.words() == "other processes use 0.1 of 2 cores"
    one = host.LoadSample((0, 1), 1.0, 1.0, {}, (host.BusyProcess(3, "yes", 1.0),), None, None)
    assert one.words() == "1 other process uses 1.0 of 2 cores (yes 1.0)"


@pytest.mark.parametrize(
    ("others", "threads"),
    [(0.49, 4), (0.51, 3), (1.49, 3), (1.51, 2), (3.9, 1), (4.0, 1)],
)
def test_a_core_counts_busy_from_half_of_it(tmp_path, others, threads):
    s = host.LoadSample((0, 1, 2, 3), 1.0, others, {}, (), None, None)
    assert host.choose_threads(None, s).threads == threads


def test_the_cgroup_quota_caps_the_threads(tmp_path):
    cg = tmp_path / "cg"
    (cg / "job" / "step").mkdir(parents=True)
    (cg / "cpu.max").write_text("max 100000\n")  # the root: unlimited
    (cg / "job" / "cpu.max").write_text("250000 100000\n")  # 2.5 cores
    (cg / "job" / "step" / "cpu.max").write_text("max 100000\n")
    fake = FakeProc(tmp_path, cgroup="0::/job/step\n")
    fake.snapshot({c: 0.0 for c in range(4)}, {})
    s = fake.sample(lambda: fake.snapshot({c: 0.0 for c in range(4)}, {}), cpus=(0, 1, 2, 3),
                    cgroup_root=cg)  # fmt: skip
    assert s.quota_cores == pytest.approx(2.5)
    c = host.choose_threads(None, s)
    assert c.threads == 2 and "cgroup quota 2.5 cores" in c.reason
    assert host.choose_threads(3, s).warning.startswith("--threads 3 exceeds the 2 free")
    # a quota at or above the CPUs changes nothing
    s4 = host.LoadSample((0, 1), 1.0, 0.0, {}, (), 2.0, None)
    assert host.choose_threads(None, s4).threads == 2


def test_cgroup_v1_quota(tmp_path):
    cg = tmp_path / "cg"
    (cg / "cpu,cpuacct").mkdir(parents=True)
    (cg / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("150000\n")
    (cg / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc" / "self"
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text("4:memory:/x\n1:cpu,cpuacct:/\n")
    assert host.cpu_quota(str(tmp_path / "proc"), str(cg)) == pytest.approx(1.5)
    (cg / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")  # unlimited
    assert host.cpu_quota(str(tmp_path / "proc"), str(cg)) is None


def test_an_unreadable_proc_stat_says_why_and_keeps_every_core(tmp_path):
    fake = FakeProc(tmp_path)
    s = fake.sample(lambda: None)  # no stat file at all
    assert s.others_cores is None and "unreadable" in s.reason
    assert s.words().startswith("load unknown")
    c = host.choose_threads(None, s)
    assert c.threads == 2 and "load unknown" in c.reason
    assert "load not measured" in host.choose_threads(None, None, usable=3).reason


def test_the_real_host_can_be_sampled():
    """On this machine, whatever its load: a short window, numbers in range."""
    s = host.sample_load(0.05)
    assert s.cpus == tuple(host.usable_cpus())
    if s.others_cores is not None:
        assert 0.0 <= s.others_cores <= len(s.cpus)
    assert 1 <= host.choose_threads(None, s).threads <= len(s.cpus)


def _busy(others: float, cpus: tuple[int, ...] = (0, 1)) -> host.LoadSample:
    procs = (host.BusyProcess(7, "python3", 1.0), host.BusyProcess(8, "python3", 0.8))
    return host.LoadSample(cpus, 1.0, others, {}, procs if others else (), None, 2.0)


def test_quiet_check_warns_waits_and_gives_up(capsys, monkeypatch):
    import typer

    from paradnn.cli import progress

    s = progress.quiet_check(False, 60.0, sampler=lambda: _busy(1.8))
    err = " ".join(capsys.readouterr().err.split())  # rich wraps at the console's width
    assert s.others_cores == 1.8 and "2 other processes use 1.8 of 2 cores" in err
    assert err.startswith("warning: busy machine:") and "--wait-for-idle" in err
    # a process name that looks like console markup is shown as it is
    bracket = host.LoadSample((0, 1), 1.0, 1.0, {}, (host.BusyProcess(3, "[kworker]", 1.0),),
                              None, None)  # fmt: skip
    progress.quiet_check(False, 60.0, sampler=lambda: bracket)
    assert "([kworker] 1.0)" in capsys.readouterr().err
    assert progress.quiet_check(False, 60.0, sampler=lambda: _busy(0.0)).others_cores == 0.0
    assert capsys.readouterr().err == ""  # quiet: nothing said
    # --wait-for-idle: holds while busy, says so (not on every sample), then says it is quiet
    samples = [_busy(1.8), _busy(1.8), _busy(1.0), _busy(0.0)]
    s = progress.quiet_check(True, 60.0, sampler=lambda: samples.pop(0))
    err = " ".join(capsys.readouterr().err.split())
    assert s.others_cores == 0.0 and samples == []
    assert err.count("waiting for a quiet machine") == 1 and "quiet now" in err
    # bounded: gives up after --max-wait and runs anyway, saying so
    s = progress.quiet_check(True, 0.0, sampler=lambda: _busy(2.0))
    assert "still busy after 0 s" in " ".join(capsys.readouterr().err.split())
    # Ctrl-C while waiting: nothing run, exit 130

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as e:
        progress.quiet_check(True, 60.0, sampler=interrupted)
    assert e.value.exit_code == 130
    assert "nothing was run" in " ".join(capsys.readouterr().err.split())


def test_max_wait_out_of_range_is_one_line(capsys, tmp_path):
    from conftest import run_cli

    code, _, err = run_cli(capsys, "run", "--max-wait", "-1", "--db", str(tmp_path / "r.db"))
    assert code == 2 and "--max-wait = -1" in err and len(err.strip().splitlines()) == 1


def test_a_busy_machine_gets_fewer_threads_and_the_record_says_why(tmp_path):
    from paradnn import api

    from conftest import TINY, TINY_POLICY

    cpus = tuple(host.usable_cpus())
    events = []
    rec = api.bench("fc", TINY["fc"], device="cpu", timing=TINY_POLICY, db=str(tmp_path / "t.db"),
                    load=_busy(float(len(cpus)), cpus), on_event=events.append)  # fmt: skip
    choice = rec.env["threads_choice"]
    assert rec.status == "ok" and rec.threads == 1 == choice["threads"]
    assert choice["requested"] is None and choice["usable"] == len(cpus)
    assert f"other processes use {len(cpus):.1f} cores" in choice["reason"]
    start = next(e for e in events if e.kind == "start")
    if len(cpus) > 1:
        assert any(n.startswith("threads: 1 (") for n in start.notes), start.notes


def test_a_requested_count_above_the_free_cores_is_kept_and_warned_about():
    from paradnn.config import RunOptions, SweepSettings
    from paradnn.runner.supervisor import Supervisor

    sup = Supervisor(None, RunOptions(device="cpu", threads=2), SweepSettings(), load=_busy(2.0))
    choice = sup._choose_threads()
    assert choice.threads == 2 and choice.requested == 2 and choice.free == 1
    (note,) = sup._threads_notes(choice)
    assert note.startswith("warning: --threads 2 exceeds the 1 free core(s) of 2")
    quiet = Supervisor(None, RunOptions(device="cpu", threads=2), SweepSettings(), load=_busy(0.0))
    assert quiet._threads_notes(quiet._choose_threads()) == []
    # one requested thread is never sampled for: it cannot exceed the free cores
    one = Supervisor(None, RunOptions(device="cpu", threads=1), SweepSettings())
    assert one._choose_threads().threads == 1 and one.load is None


def _sweep_run(db, sweep, hostname, threads, env):
    from paradnn.store import open_store

    with open_store(str(db)) as store:
        store.conn.execute(
            "INSERT INTO runs (run_key, family, config, precision, optimizer, mode, device, "
            "status, sweep, hostname, threads, env) VALUES (?, 'fc', '{}', 'fp32', 'rmsprop', "
            "'eager', 'cpu', 'ok', ?, ?, ?, ?)",
            (f"k{threads}{sweep}", sweep, hostname, threads, env),
        )
        store.conn.commit()


def test_a_resumed_sweep_keeps_the_threads_it_began_with_unless_told(tmp_path):
    """The thread count is part of every run key: a resume under another load keeps the
    sweep's first choice (so `make demo` again has nothing left to do), with a note; a
    --threads, another host, another sweep or a damaged env record keep nothing."""
    import json
    import platform

    from paradnn.config import RunOptions, SweepSettings
    from paradnn.runner.supervisor import Supervisor
    from paradnn.store import open_store

    db = tmp_path / "r.db"
    me = platform.node()
    auto = json.dumps({"threads_choice": {"threads": 2, "requested": None, "reason": "x"}})
    _sweep_run(db, "quick", me, 2, auto)
    _sweep_run(db, "other", me, 2, "{not json")
    _sweep_run(db, "given", me, 2, json.dumps({"threads_choice": {"requested": 2}}))
    _sweep_run(db, "elsewhere", me + "-b", 2, auto)
    busy = _busy(2.0, (0, 1))
    with open_store(str(db)) as store:

        def choose(sweep, threads=None):
            opts = RunOptions(device="cpu", threads=threads)
            sup = Supervisor(store, opts, SweepSettings(), sweep=sweep, load=busy)
            return sup, sup._choose_threads()

        sup, kept = choose("quick")
        assert kept.threads == 2 and kept.requested is None and kept.free == 1
        assert kept.reason.startswith("as when this sweep began in this database (now: 1, ")
        (note,) = sup._threads_notes(kept)
        assert note.startswith("threads: 2, as when this sweep began") and "--threads N" in note
        for sweep in ("other", "given", "elsewhere", "new"):
            assert choose(sweep)[1].threads == 1, sweep  # the load decides
        told = choose("quick", threads=1)[1]
        assert told.threads == 1 and told.requested == 1
        assert store.sweep_threads("quick", me) == 2 and store.sweep_threads("given", me) is None
