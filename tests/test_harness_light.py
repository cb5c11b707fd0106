"""A harness as light as the step it times (issue 43), held without a clock: what the supervisor
imports, what a timed step calls beside a plain loop's, what a block of CUDA events creates,
what a worker re-imports, and what is counted once. benchmarks/harness_wall.py and
benchmarks/harness_overhead.py measure the seconds; these tests hold the causes."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import types
from multiprocessing import spawn
from pathlib import Path

import pytest
import torch

from paradnn import families
from paradnn.config import RunOptions, RunSpec
from paradnn.measure import stats
from paradnn.measure.device import CudaEventClock
from paradnn.measure.step import TrainStep
from paradnn.runner import supervisor
from paradnn.runner.core import execute

from conftest import TINY, TINY_POLICY

SRC = Path(__file__).resolve().parents[1] / "src"


def test_the_supervisor_of_a_bench_never_imports_torch(tmp_path):
    """The worker's hello and result cross the pipe as plain values: unpickling them must not
    import torch into the supervisor (~1 s of a `bench`'s wall time when it did)."""
    code = (
        "import json, sys\n"
        "from paradnn import api\n"
        "from paradnn.config import TimingPolicy\n"
        f"p = TimingPolicy(**{json.dumps(vars(TINY_POLICY))})\n"
        f"r = api.bench('fc', {TINY['fc']!r}, device='cpu', threads=1, timing=p, "
        f"db={str(tmp_path / 'b.db')!r})\n"
        "print(json.dumps([r.status, type(r.env['torch']).__name__, 'torch' in sys.modules]))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    status, version_type, torch_loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert status == "ok" and version_type == "str" and torch_loaded is False


def _python_calls(fn, steps=20) -> float:
    """Python-level calls per call of `fn` (deterministic: counted, not timed)."""
    count = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            count["call"] += 1

    sys.setprofile(profile)
    try:
        for _ in range(steps):
            fn()
    finally:
        sys.setprofile(None)
    return count["call"] / steps


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_timed_step_calls_what_a_plain_loop_calls(precision):
    """TrainStep's step against the plainest loop on the same model and optimizer: one Python
    call more (`forward_loss`, the part a compiled mode replaces), nothing else."""
    fam = families.get("fc")
    cpu = torch.device("cpu")
    step = TrainStep(fam.build(fam.config(TINY["fc"]), cpu, precision), "rmsprop", precision, cpu)
    model, loss_fn, x, y, opt = step.module, step.loss_fn, step.x, step.y, step.opt

    def plain() -> None:
        opt.zero_grad(set_to_none=True)
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):  # first calls fill caches on both sides
        step()
        plain()
    ours, theirs = _python_calls(step), _python_calls(plain)
    assert ours - theirs == pytest.approx(1.0), (ours, theirs)


def test_median_ci_ranks_are_exact_and_agree_with_scipy():
    """The exact integer ranks (no scipy.stats import in a worker's timed phase) are scipy's
    ranks wherever they are used (n ≤ EXACT_UP_TO)."""
    ns = [*range(1, 300), 500, 999, 1000, 2048, stats.EXACT_UP_TO]
    for conf in (0.5, 0.9, 0.95, 0.99):
        for n in ns:
            assert stats._exact_ranks(n, conf) == stats._scipy_ranks(n, conf), (n, conf)
    assert stats.median_ci_ranks(stats.EXACT_UP_TO + 1) == stats._scipy_ranks(
        stats.EXACT_UP_TO + 1, 0.95
    )


class _CountedEvent:
    made = 0

    def __init__(self, enable_timing=False):
        _CountedEvent.made += 1
        self.t = 0.0

    def record(self):
        self.t += 1.0

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1.0


def test_cuda_event_marks_inside_timed_blocks_create_no_event(monkeypatch):
    monkeypatch.setattr(torch.cuda, "Event", _CountedEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    clock = CudaEventClock(torch.device("cuda", 0))
    clock.sync()  # before a timed phase: the events are made here
    made = _CountedEvent.made
    for _ in range(3):  # three chunks of 50 blocks
        pairs = [(clock.mark(), clock.mark()) for _ in range(50)]
        assert clock.elapsed(pairs) == [0.001] * 50
    assert _CountedEvent.made == made  # every mark recorded an event made ahead


def test_a_worker_started_from_the_console_script_does_not_re_run_it(monkeypatch):
    """spawn re-runs the main module in a worker; paradnn's own console script is left out (a
    user's script is not: it may define what it runs)."""
    script = types.ModuleType("__main__")
    script.__file__ = "/usr/bin/paradnn"

    def main():  # what the console script imports: `from paradnn.cli import main`
        return 0

    main.__module__ = "paradnn.cli"
    script.main = main
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert "init_main_from_path" in spawn.get_preparation_data("w")
    with supervisor._cli_main_left_out():
        data = spawn.get_preparation_data("w")
        assert "init_main_from_path" not in data and "init_main_from_name" not in data
    assert sys.modules["__main__"] is script
    main.__module__ = "my_script"  # a user's script with a main() of its own: re-run as usual
    with supervisor._cli_main_left_out():
        assert "init_main_from_path" in spawn.get_preparation_data("w")


def test_flops_are_counted_once_per_config_in_a_process():
    opts = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)
    config = {**TINY["fc"], "nodes": 24}
    phases: list[list[str]] = [[], []]
    recs = []
    for i in range(2):
        heard = phases[i].append
        recs.append(execute(RunSpec("fc", dict(config), opts), progress=lambda m, h=heard: h(
            str(m.get("phase")))))  # fmt: skip
    assert "counting FLOPs" in phases[0] and "counting FLOPs" not in phases[1]
    assert recs[0].flops_per_step == recs[1].flops_per_step == recs[0].flops_analytic


def test_harness_overhead_keeps_each_config_it_finished(tmp_path, monkeypatch):
    """benchmarks/harness_overhead.py writes its JSON after every config (complete: false, how
    many were planned), so gpu_check's cap stopping it keeps what it measured; the last write
    says complete."""
    import importlib.util

    path = SRC.parent / "benchmarks" / "harness_overhead.py"
    spec = importlib.util.spec_from_file_location("harness_overhead_t", path)
    ho = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ho)
    timing = "".join(f"{k} = {json.dumps(v)}\n" for k, v in vars(TINY_POLICY).items())
    runs = "".join(
        f'[[runs]]\nfamily = "fc"\nconfig = {{ layers = 1, nodes = {n}, input = 4, output = 2, '
        "batch = 2 }\n"
        for n in (4, 8)
    )
    sweep = tmp_path / "two.toml"
    sweep.write_text(f'precisions = ["fp32"]\n{runs}[timing]\n{timing}')
    out = tmp_path / "o.json"
    monkeypatch.setattr(ho, "hand_step_time", lambda *a, **k: 1e-3)
    seen = []
    real = ho.execute

    def stop_on_the_second(spec):
        seen.append(spec)
        if len(seen) > 1:  # the cap: the second config is never finished
            raise KeyboardInterrupt
        return real(spec)

    monkeypatch.setattr(ho, "execute", stop_on_the_second)
    # --denormals keep: the script sets the flag for the whole process (flushing subnormals
    # would break every later hypothesis test on this worker), and keep is torch's default
    args = ["--device", "cpu", "--threads", "1", "--rounds", "1", "--preset", str(sweep),
            "--out", str(out), "--denormals", "keep"]  # fmt: skip
    threads = torch.get_num_threads()
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the worker's own stays
    with pytest.raises(KeyboardInterrupt):
        ho.main(args)
    got = json.loads(out.read_text())
    assert got["complete"] is False and got["configs_planned"] == 2
    assert [c["config"]["nodes"] for c in got["configs"]] == [4]
    assert got["max_ratio"] == got["configs"][0]["ratio"] > 0
    monkeypatch.setattr(ho, "execute", real)
    final = ho.main(args)
    got = json.loads(out.read_text())
    assert got == final and got["complete"] is True and len(got["configs"]) == 2
    for c in got["configs"]:  # one round against a plain loop of 1 ms: a point range
        assert c["ratio_range"] == [c["ratio"], c["ratio"]]
        assert c["verdict"] == "inconclusive"  # one round a side says nothing of the noise
    assert got["verdict"] == "inconclusive"
    assert not out.with_name(out.name + ".tmp").exists()
    assert torch.get_num_threads() == threads
    assert not _subnormals_flushed()


def _subnormals_flushed() -> bool:
    tiny = torch.tensor(1e-310, dtype=torch.float64)
    return (tiny * 1.0).item() == 0.0


def test_harness_overhead_judges_each_config_by_the_range_its_rounds_allow():
    """A few rounds give a range, not an interval: met only when all of it is within the
    target, not met when all of it is above, inconclusive when it straddles (the 2026-11-27
    H100 run: ratios 0.93 to 1.10 with three rounds each)."""
    import importlib.util

    path = SRC.parent / "benchmarks" / "harness_overhead.py"
    spec = importlib.util.spec_from_file_location("harness_overhead_v", path)
    ho = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ho)
    assert ho.ratio_range([2.0, 2.2, 2.1], [2.0, 1.9, 2.05]) == (2.0 / 2.05, 2.2 / 1.9)
    assert ho.verdict(0.95, 1.02, 1.02) == "met"  # at the target: within it
    assert ho.verdict(0.95, 1.0201, 1.02) == "inconclusive"
    assert ho.verdict(1.02, 1.3, 1.02) == "inconclusive"  # the low end at the target
    assert ho.verdict(1.0201, 1.3, 1.02) == "not met"
    assert ho.verdict(1.5, 1.5, 1.02, rounds=1) == "inconclusive"
    assert ho.verdict(0.9, 0.9, 1.02, rounds=1) == "inconclusive"
    assert ho.verdict(1.5, 1.5, 1.02, rounds=2) == "not met"
