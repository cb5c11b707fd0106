"""Sweeps on cluster executors: a two-node Ray cluster on this machine and submitit's local
executor stand in for a real cluster and Slurm. The contract under test is the store's: the
same result set as local workers, nothing lost or duplicated when a node dies, resume by run
key across executors, one clear line for what cannot work."""

from __future__ import annotations

import sys
import threading

import pytest

from paradnn import api
from paradnn.config import ExecutorSettings, SweepSettings
from paradnn.errors import ConfigError
from paradnn.store import open_store

FC = '[[runs]]\nfamily = "fc"\nconfig = {{ layers = {}, nodes = 16, batch = 4, input = 8 }}\n'
TIMING = (
    "[timing]\nmin_time_s = {}\nmax_time_s = 3\nwarmup_min_time_s = 0.05\ntarget_ci_rel = 0.5\n"
)


def sweep_file(tmp_path, layers, min_time=0.05):
    path = tmp_path / "tiny.toml"
    path.write_text(TIMING.format(min_time) + "".join(FC.format(n) for n in layers))
    return str(path)


def rows(db):
    with open_store(db, readonly=True) as s:
        return s.runs()


def outcome(db):
    """What a sweep left in the store: each run key once, with its status and config."""
    return sorted((r["run_key"], r["status"], r["config"]["layers"]) for r in rows(db))


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from paradnn.runner.ray_engine import wait_for_nodes

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    wait_for_nodes(3)
    yield cluster, nodes
    ray.shutdown()
    cluster.shutdown()


def test_ray_gives_the_local_result_set_and_survives_a_killed_node(tmp_path, ray_cluster):
    cluster, nodes = ray_cluster
    sweep = sweep_file(tmp_path, [1, 2, 3, 4], min_time=1.0)
    local_db, ray_db = str(tmp_path / "local.db"), str(tmp_path / "ray.db")
    api.run(sweep, db=local_db, threads=1, device="cpu")

    killed = threading.Event()

    def on_event(e):  # a node dies while the sweep has work on both
        if e.kind == "result" and not killed.is_set():
            killed.set()
            cluster.remove_node(nodes[1], allow_graceful=False)

    ray_exec = ExecutorSettings(kind="ray", address=cluster.address, cpus_per_task=1)
    got = api.run(sweep, db=ray_db, device="cpu", executor=ray_exec, on_event=on_event)
    assert killed.is_set()
    assert len(got) == 4
    assert outcome(ray_db) == outcome(local_db)  # same keys (same machine), all ok, once each
    assert {r["status"] for r in rows(ray_db)} == {"ok"}
    assert all(r["threads"] == 1 for r in rows(ray_db))  # the CPUs the task asked for

    # resume across executors: what local workers finished, Ray does not run again
    assert api.run(sweep, db=local_db, device="cpu", executor=ray_exec) == []
    assert len(rows(local_db)) == 4


def test_slurm_path_runs_arrays_split_below_max_array_size_and_resumes(tmp_path, monkeypatch):
    submitit = pytest.importorskip("submitit")
    sweep = sweep_file(tmp_path, [1, 2, 3])
    db = str(tmp_path / "slurm.db")
    one = tmp_path / "one.toml"  # the first config, finished by local workers beforehand
    one.write_text(TIMING.format(0.05) + FC.format(1))
    api.run(str(one), db=db, threads=1, device="cpu")

    arrays = []
    real = submitit.AutoExecutor.map_array

    def counted(self, fn, *iterables):
        arrays.append(len(iterables[0]))
        return real(self, fn, *iterables)

    monkeypatch.setattr(submitit.AutoExecutor, "map_array", counted)
    slurm = ExecutorSettings(
        kind="slurm", cluster="local", folder=str(tmp_path / "slurm"), cpus_per_task=1,
        configs_per_job=1, max_array_size=1,
    )  # fmt: skip
    got = api.run(sweep, db=db, device="cpu", executor=slurm)
    assert arrays == [1, 1]  # two configs left, one per element, one element per array
    assert sorted(r.config["layers"] for r in got) == [2, 3]
    assert sorted(r["config"]["layers"] for r in rows(db)) == [1, 2, 3]
    assert {r["status"] for r in rows(db)} == {"ok"}


def test_a_requeued_slurm_element_runs_only_what_it_had_not_finished(monkeypatch):
    pytest.importorskip("submitit")
    from types import SimpleNamespace

    from paradnn.runner import isolated
    from paradnn.runner.slurm_engine import _element_class

    ran = []
    monkeypatch.setattr(isolated, "run_one", lambda u, s, t: ran.append(u.id) or f"record {u.id}")
    element = _element_class()()
    element.done = [(0, "kept")]  # what it had stored before Slurm preempted it
    units = [SimpleNamespace(id=i) for i in range(3)]
    assert element(units, None, 1.0) == [(0, "kept"), (1, "record 1"), (2, "record 2")]
    assert ran == [1, 2]
    resubmission = element.checkpoint(units, None, 1.0)  # what submitit requeues
    assert resubmission.function is element


@pytest.mark.parametrize("kind", ["ray", "slurm"])
def test_a_missing_extra_is_one_line_before_any_work(tmp_path, monkeypatch, kind):
    monkeypatch.setitem(sys.modules, "ray" if kind == "ray" else "submitit", None)
    db = tmp_path / "never.db"
    executor = ExecutorSettings(kind=kind, cpus_per_task=1)
    with pytest.raises(ConfigError, match=rf"executor = '{kind}': needs the optional extra"):
        api.run(sweep_file(tmp_path, [1]), db=str(db), device="cpu", executor=executor)
    assert not db.exists()


def test_cluster_runs_refuse_what_only_local_workers_do(tmp_path):
    sweep = sweep_file(tmp_path, [1])
    ray = ExecutorSettings(kind="ray")
    with pytest.raises(ConfigError, match="workers = 2: local workers only"):
        api.run(sweep, executor=ray, settings=SweepSettings(workers=2), db=str(tmp_path / "a"))
    with pytest.raises(ConfigError, match="energy = True: needs --executor local"):
        api.run(sweep, executor=ray, energy=True, db=str(tmp_path / "b"))
    with pytest.raises(ConfigError, match="procs = 2: needs --executor local"):
        api.run(sweep, executor=ray, axes={"procs": [1, 2]}, db=str(tmp_path / "c"))
    assert not any((tmp_path / n).exists() for n in "abc")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "rey"], "--executor = 'rey': must be one of local, ray, slurm"),
        (
            ["--executor", "slurm", "--configs-per-job", "0"],
            "--configs-per-job = 0: must be an integer in [1, 10000]",
        ),
        (["--cpus-per-task", "0"], "--cpus-per-task = 0: must be an integer in [1, 4096]"),
    ],
)
def test_bad_executor_options_are_one_line_and_exit_2(tmp_path, args, message):
    import subprocess

    db = tmp_path / "never.db"
    cmd = [sys.executable, "-m", "paradnn", "run", *args, "--db", str(db)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not db.exists()


class FakeRay:
    """Just enough of Ray's API for the engine's resource decisions (no cluster started)."""

    class exceptions:
        RayError = Exception

    def __init__(self, cpus_per_node, gpus=0):
        self.cpus_per_node, self.gpus, self.asked = cpus_per_node, gpus, []

    def init(self, **kw):
        self.init_kw = kw

    def cluster_resources(self):
        return {"CPU": float(sum(self.cpus_per_node)), "GPU": float(self.gpus)}

    def nodes(self):
        return [{"Alive": True, "Resources": {"CPU": float(c)}} for c in self.cpus_per_node]

    def remote(self, **need):
        self.asked.append(need)
        return lambda fn: fn


@pytest.mark.parametrize(
    ("device", "cpus_per_node", "gpus", "cpus_per_task", "need", "slots", "threads"),
    [
        ("cuda", [8, 8], 2, None, {"num_gpus": 1, "num_cpus": 1}, 2, None),  # whole GPUs
        ("auto", [8, 8], 4, None, {"num_gpus": 1, "num_cpus": 1}, 4, None),
        ("cpu", [8, 4], 0, None, {"num_cpus": 4}, 3, 4),  # default: the smallest node
        ("cpu", [8, 8], 0, 2, {"num_cpus": 2}, 8, 2),
    ],
)
def test_ray_tasks_ask_for_whole_resources(
    monkeypatch, device, cpus_per_node, gpus, cpus_per_task, need, slots, threads
):
    from paradnn.config import RunOptions
    from paradnn.runner.ray_engine import MAX_RETRIES, RayEngine

    fake = FakeRay(cpus_per_node, gpus)
    monkeypatch.setitem(sys.modules, "ray", fake)
    executor = ExecutorSettings(kind="ray", cpus_per_task=cpus_per_task)
    engine = RayEngine(executor, RunOptions(device=device), 60.0)
    assert fake.asked[0] == need  # the probe
    assert fake.asked[1] == {**need, "max_retries": MAX_RETRIES, "retry_exceptions": False}
    assert (engine.slots(), engine.threads) == (slots, threads)
    assert engine.settings.device == ("cpu" if threads else "cuda")
    assert engine.settings.threads == threads


def test_ray_refuses_a_gpu_run_on_a_cluster_without_gpus_and_too_many_cpus(monkeypatch):
    from paradnn.config import RunOptions
    from paradnn.runner.ray_engine import RayEngine

    monkeypatch.setitem(sys.modules, "ray", FakeRay([4], 0))
    with pytest.raises(ConfigError, match="device = 'cuda': the Ray cluster has no GPU"):
        RayEngine(ExecutorSettings(kind="ray"), RunOptions(device="cuda"), 60.0)
    with pytest.raises(ConfigError, match=r"cpus_per_task = 8: no node .* \(largest: 4\)"):
        RayEngine(ExecutorSettings(kind="ray", cpus_per_task=8), RunOptions(device="cpu"), 60.0)


class _ToyEngine:
    """An engine that only remembers how it was opened."""

    def __init__(self, executor, options, timeout_s):
        self.opened = (executor.kind, options.device, timeout_s)


def test_an_engine_is_opened_from_the_registry_alone(monkeypatch):
    """config.ENGINES is the one list: the executor's words (`--executor`, its help, the
    sweep's [executor] kind) are made from it, and open_engine imports what it names."""
    from paradnn.config import ENGINES, EXECUTORS, RunOptions
    from paradnn.runner.cluster import open_engine

    assert ("local", *ENGINES) == EXECUTORS
    monkeypatch.setitem(ENGINES, "ray", f"{__name__}:_ToyEngine")
    engine = open_engine(ExecutorSettings(kind="ray"), RunOptions(device="cpu"), 12.0)
    assert isinstance(engine, _ToyEngine) and engine.opened == ("ray", "cpu", 12.0)
    with pytest.raises(ConfigError, match="executor = 'local': a cluster executor: ray or slurm"):
        open_engine(ExecutorSettings(kind="local"), RunOptions(), 1.0)
