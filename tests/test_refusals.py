"""What `bench`, `scale` and `run` refuse before any work (issue 41): a config whose predicted
memory cannot fit in what the device has free (one line, exit 2, nothing built; `--force` runs
it), a precision the device does not run natively (naming what it runs and how to ask for
emulation); and a command that measured nothing exits 1. Free memory and CPU flags are faked,
so no test allocates much or depends on this machine's CPU; the GPU paths use the fake NVML."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from paradnn import api, host, memory
from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError, Refused
from paradnn.measure.energy.fakes import FakeNvml, VirtualClock
from paradnn.records import RunRecord, Status
from paradnn.runner import supervisor

from conftest import TINY, run_cli, write_sweep

GiB = 2**30
BIG_FC = ["layers=8", "nodes=8192", "batch=1024"]  # ~2.2 GiB of weights: a lower bound ~6 GiB
AVX2 = "avx2 fma"  # a CPU without native bf16 or fp16


class Built(BaseException):
    """Raised where a command would start a worker (a BaseException: the CLI's error boundary
    turns every Exception into one line; this one reaches the test)."""


@pytest.fixture(autouse=True)
def _no_gpu_and_no_workers(monkeypatch):
    """No NVML (a CPU machine unless a test fakes one), 4 GiB of host memory free, and a
    sentinel where a supervisor would be built."""

    @contextlib.contextmanager
    def no_nvml():
        raise host.NvmlUnavailable("no NVML in this test")
        yield  # pragma: no cover

    def built(*args, **kwargs):
        raise Built

    monkeypatch.setattr(host, "nvml", no_nvml)
    monkeypatch.setattr(host, "available_memory_bytes", lambda *a, **k: 4 * GiB)
    monkeypatch.setattr(supervisor.Supervisor, "__init__", built)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# -- memory --------------------------------------------------------------------------------


def test_an_oversized_bench_is_refused_in_one_line_before_anything_is_built(capsys, tmp_path):
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "bench", "fc", *BIG_FC, "--device", "cpu", "--db", str(db))
    assert code == 2 and not out
    line = _one_line(err)
    assert line.startswith("error: fc layers=8 nodes=8192 ")
    assert "4.00 GiB of host memory is free" in line and "--force runs it anyway" in line
    assert "needs at least" in line and "(predicted " in line
    assert not db.exists()  # no database, no worker (the sentinel was never reached)


def test_force_runs_it_anyway_and_a_fitting_config_is_not_refused(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    with pytest.raises(Built):
        run_cli(capsys, "bench", "fc", *BIG_FC, "--device", "cpu", "--force", "--db", db)
    with pytest.raises(Built):
        run_cli(capsys, "bench", "fc", "layers=1", "--device", "cpu", "--db", db)


def test_the_api_raises_refused_and_passes_force_to_the_worker_check(monkeypatch, tmp_path):
    cfg = {"layers": 8, "nodes": 8192, "batch": 1024}
    with pytest.raises(Refused, match="host memory is free"):
        api.bench("fc", cfg, device="cpu", db=str(tmp_path / "r.db"))
    seen = {}

    def built(self, store, options, settings, **kw):
        seen["predict"] = settings.predict
        raise Built

    monkeypatch.setattr(supervisor.Supervisor, "__init__", built)
    with pytest.raises(Built):
        api.bench("fc", cfg, device="cpu", db=str(tmp_path / "r.db"), force=True)
    assert seen == {"predict": False}  # forced: the worker's own check is off too
    with pytest.raises(Built):
        api.bench("fc", TINY["fc"], device="cpu", db=str(tmp_path / "r.db"))
    assert seen == {"predict": True}  # not forced: the worker checks again, as `run` does
    with pytest.raises(ConfigError, match="force"):
        api.bench("fc", TINY["fc"], device="cpu", db=str(tmp_path / "r.db"), force="yes")


def test_one_check_for_bench_and_run_at_the_same_numbers():
    """The pre-worker check (bench, scale) and the supervisor's (run) are memory.check on the
    same estimate: refused by one exactly when stored predicted_oom by the other."""
    from paradnn import families

    cfg = families.get("fc").config({"layers": 8, "nodes": 8192, "batch": 1024})
    est = memory.predict("fc", cfg, "fp32", "rmsprop", device_type="cpu")
    for free in (est.lower_bound // 2, int(est.lower_bound / 1.1) - 1, est.lower_bound):
        verdict = memory.check(est, free, "host memory")
        assert verdict.fits == memory.fits(est, free)
        hello = {"capacity_bytes": 64 * GiB, "capacity_kind": "host", "free_bytes": free,
                 "env": {"device_type": "cpu"}}  # fmt: skip
        mem = supervisor.memory_for(hello)
        assert memory.check(est, mem.free_bytes, mem.where).fits == verdict.fits
        pre = api.check_can_run
        with _free(free):
            if verdict.fits:
                pre(RunSpec("fc", cfg.__dict__, RunOptions(device="cpu")))
            else:
                with pytest.raises(Refused):
                    pre(RunSpec("fc", cfg.__dict__, RunOptions(device="cpu")))


@contextlib.contextmanager
def _free(n: int):
    old = host.available_memory_bytes
    host.available_memory_bytes = lambda *a, **k: n  # type: ignore[assignment]
    try:
        yield
    finally:
        host.available_memory_bytes = old  # type: ignore[assignment]


def test_memory_check_words_copies_and_unknown_free_memory():
    from paradnn import families

    cfg = families.get("fc").config(TINY["fc"])
    est = memory.predict("fc", cfg, "fp32", "rmsprop", device_type="cpu")
    one = memory.check(est, 10 * GiB, "host memory")
    four = memory.check(est, 10 * GiB, "host memory", copies=4)
    assert four.lower_bytes == 4 * one.lower_bytes and " for 4 ranks " in four.words()
    assert memory.check(est, None, "GPU memory").fits is None  # unknown: never a refusal
    assert "unknown of GPU memory is free" in memory.check(est, None, "GPU memory").words()
    assert memory.copies("cpu", 4, "weak") == 4
    assert memory.copies("cpu", 4, "strong") == 1  # the whole config once: a lower bound
    assert memory.copies("cuda", 4, "weak") == 1  # a rank per GPU
    with pytest.raises(ValueError, match="copies"):
        memory.check(est, 1, "host memory", copies=0)


def test_workers_sharing_the_host_split_its_free_memory():
    hello = {"capacity_bytes": 64 * GiB, "capacity_kind": "host", "free_bytes": 8 * GiB,
             "env": {"device_type": "cpu"}}  # fmt: skip
    assert supervisor.memory_for(hello, 4).free_bytes == 2 * GiB
    gpu = {**hello, "capacity_kind": "device", "env": {"device_type": "cuda"}}
    assert supervisor.memory_for(gpu, 4) == supervisor.Memory(8 * GiB, "cuda", "GPU memory")
    older = {k: v for k, v in hello.items() if k != "free_bytes"}  # a worker without it
    assert supervisor.memory_for(older).free_bytes == 64 * GiB


def test_scale_refuses_ranks_that_cannot_fit_together(capsys, tmp_path):
    """Two weak-scaling ranks on one host each hold the whole config: a config that fits once
    but not twice is refused, naming the ranks."""
    from paradnn import families

    cfg = families.get("fc").config({"layers": 4, "nodes": 4096, "batch": 64})
    lower = memory.predict("fc", cfg, "fp32", "rmsprop", device_type="cpu").lower_bound
    with _free(int(lower * 1.5)):
        code, _, err = run_cli(capsys, "scale", "fc", "layers=4", "nodes=4096", "batch=64",
                               "--procs", "1,2", "--device", "cpu", "--threads", "1",
                               "--db", str(tmp_path / "s.db"))  # fmt: skip
        assert code == 2 and "for 2 ranks" in _one_line(err)
        assert not (tmp_path / "s.db").exists()
        with pytest.raises(Built):  # strong scaling splits the batch: the whole config once
            run_cli(capsys, "scale", "fc", "layers=4", "nodes=4096", "batch=64", "--procs",
                    "1,2", "--scaling", "strong", "--device", "cpu", "--threads", "1",
                    "--db", str(tmp_path / "s.db"))  # fmt: skip


# -- precision -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("bench", "fc"), ("scale", "fc", "--procs", "1")])
def test_a_precision_the_cpu_lacks_is_refused_naming_what_it_runs(
    capsys, monkeypatch, tmp_path, command
):
    monkeypatch.setenv(host.FLAGS_ENV, AVX2)
    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, *command, "-p", "fp16", "--device", "cpu", "--db", str(db))
    line = _one_line(err)
    assert code == 2 and "precision = 'fp16': this CPU has no native fp16" in line
    assert "this CPU runs fp32 natively" in line and "--allow-emulated runs it emulated" in line
    assert not db.exists()
    with pytest.raises(Built):  # asked for: an emulated run, labelled so
        run_cli(capsys, *command, "-p", "fp16", "--allow-emulated", "--device", "cpu",
                "--db", str(db))  # fmt: skip
    code, _, err = run_cli(capsys, "bench", "fc", "-p", "tf32", "--allow-emulated",
                           "--device", "cpu", "--db", str(db))  # fmt: skip
    assert code == 2 and "paradnn has no emulation of it" in _one_line(err)


def test_run_refuses_a_precision_asked_for_by_name_even_in_a_dry_run(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(host.FLAGS_ENV, AVX2)
    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    for extra in ([], ["--dry-run"]):
        code, out, err = run_cli(capsys, "run", "--preset", str(sweep), "-p", "fp32", "-p",
                                 "bf16", "--device", "cpu", "--db", str(tmp_path / "r.db"),
                                 *extra)  # fmt: skip
        assert code == 2 and not out
        assert "--precision = 'bf16': this CPU has no native bf16" in _one_line(err)
    assert not (tmp_path / "r.db").exists()
    # a sweep file's own precisions are not refused: the CPU that lacks one stores `unsupported`
    bf16 = write_sweep(tmp_path / "b.toml", [("fc", TINY["fc"])], ("fp32", "bf16"))
    code, _, err = run_cli(capsys, "run", "--preset", str(bf16), "--dry-run", "--device",
                           "cpu", "--db", str(tmp_path / "r.db"))  # fmt: skip
    assert code == 0, err


def test_the_api_refuses_the_same_precisions(monkeypatch, tmp_path):
    monkeypatch.setenv(host.FLAGS_ENV, AVX2)
    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    db = str(tmp_path / "r.db")
    with pytest.raises(ConfigError, match="precision = 'bf16': this CPU has no native bf16"):
        api.run(str(sweep), precisions=["fp32", "bf16"], device="cpu", db=db)
    with pytest.raises(ConfigError, match="precision = 'fp16'"):
        api.bench("fc", TINY["fc"], precision="fp16", device="cpu", db=db)
    with pytest.raises(Built):
        api.run(str(sweep), precisions=["bf16"], device="cpu", db=db, allow_emulated=True)
    with pytest.raises(ConfigError, match="precision = 'fp8'"):
        api.unsupported_precision("fp8")
    with pytest.raises(ConfigError, match="device = 'tpu'"):
        api.unsupported_precision("fp32", "tpu")


def test_a_native_precision_passes_and_the_isa_cap_counts(monkeypatch):
    monkeypatch.setenv(host.FLAGS_ENV, "avx2 fma avx512f avx512_bf16")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert api.unsupported_precision("bf16", "cpu") is None
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # the hardware has it, oneDNN may not use it
    why = api.unsupported_precision("bf16", "cpu")
    assert why and "oneDNN is capped below" in why and "--allow-emulated runs it" in why


def _fake_gpu(monkeypatch, capability=(7, 0), free=79 * GiB) -> FakeNvml:
    nv = FakeNvml(VirtualClock())
    monkeypatch.setattr(nv, "nvmlDeviceGetCudaComputeCapability", lambda h: capability)
    monkeypatch.setattr(
        nv, "nvmlDeviceGetMemoryInfo", lambda h: type("M", (), {"free": free, "total": 80 * GiB})
    )

    @contextlib.contextmanager
    def fake():
        yield nv

    monkeypatch.setattr(host, "nvml", fake)
    return nv


def test_on_a_gpu_the_capability_decides_and_nothing_emulates(monkeypatch):
    _fake_gpu(monkeypatch, capability=(7, 0))  # a V100
    why = api.unsupported_precision("bf16", "cuda", allow_emulated=True)
    assert why == (
        "bf16 needs compute capability ≥ 8.0; this GPU is 7.0; this GPU runs fp32, fp16 "
        "natively; paradnn has no emulation of it"
    )
    assert api.unsupported_precision("fp16", "cuda") is None
    _fake_gpu(monkeypatch, capability=(9, 0))
    assert api.unsupported_precision("bf16", "cuda:0") is None


def test_a_gpu_s_free_memory_comes_from_nvml_through_cuda_visible_devices(monkeypatch):
    nv = _fake_gpu(monkeypatch, capability=(9, 0), free=3 * GiB)
    assert api.free_memory("cuda") == (3 * GiB, "GPU memory")
    assert api.free_memory("auto") == (3 * GiB, "GPU memory")
    cfg = {"layers": 8, "nodes": 8192, "batch": 1024}
    with pytest.raises(Refused, match=r"3\.00 GiB of GPU memory is free"):
        api.check_can_run(RunSpec("fc", cfg, RunOptions(device="cuda")))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{nv.uuid}")  # torch's cuda:0 is that GPU
    assert api.free_memory("cuda:0") == (3 * GiB, "GPU memory")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-abc")  # a MIG slice: not known here
    assert api.free_memory("cuda:0") == (None, "GPU memory")
    api.check_can_run(RunSpec("fc", cfg, RunOptions(device="cuda")))  # unknown: the worker decides


def test_a_gpu_nvml_cannot_see_is_left_to_the_worker():
    """No NVML (the autouse fixture): neither the precision nor the memory of `cuda` is known
    before the worker; nothing is refused here (the worker stores unsupported or
    predicted_oom, and `bench` then exits 1)."""
    assert api.unsupported_precision("bf16", "cuda") is None
    assert api.free_memory("cuda") == (None, "GPU memory")
    api.check_can_run(RunSpec("fc", {"layers": 128, "nodes": 8192}, RunOptions(device="cuda")))


# -- host memory ---------------------------------------------------------------------------


def test_available_host_memory_reads_meminfo_and_the_cgroup(tmp_path, monkeypatch):
    monkeypatch.undo()  # the real function, on fake files
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 32000000 kB\nMemFree: 1000 kB\nMemAvailable: 8000000 kB\n")
    cg = tmp_path / "cg"
    cg.mkdir()
    read = host.available_memory_bytes
    assert read(str(meminfo), str(cg)) == 8_000_000 * 1024  # no cgroup limit files
    (cg / "memory.max").write_text("max\n")  # v2 without a limit
    (cg / "memory.current").write_text("123\n")
    assert read(str(meminfo), str(cg)) == 8_000_000 * 1024
    (cg / "memory.max").write_text(f"{4 * GiB}\n")  # a 4 GiB container using 3 GiB,
    (cg / "memory.current").write_text(f"{3 * GiB}\n")  # 1 GiB of it inactive file cache
    (cg / "memory.stat").write_text(f"anon 100\ninactive_file {GiB}\n")
    assert read(str(meminfo), str(cg)) == 2 * GiB
    assert read(str(tmp_path / "none"), str(cg)) is None  # no MemAvailable: unknown
    assert isinstance(read(), int | type(None))  # this machine's, whatever it is


# -- a command that measured nothing -------------------------------------------------------


def _record(status: str) -> RunRecord:
    import synth

    ok = status == Status.OK
    r = synth.row("fc", TINY["fc"], 0.5 if ok else None, status=status,
                  error=None if ok else f"{status}: why")  # fmt: skip
    r.pop("torch_version"), r.pop("hostname")
    if ok:
        r |= {"n_samples": 30, "first_step_s": 0.5, "converged": True, "quality": "good"}
    return RunRecord.flat(**r)


def test_bench_exits_1_when_it_measured_nothing(capsys, monkeypatch):
    monkeypatch.setattr(api, "bench", lambda *a, **kw: _record(Status.UNSUPPORTED))
    code, out, err = run_cli(capsys, "bench", "fc", "--mode", "reduce-overhead")
    assert code == 1 and "unsupported: why" in out  # what was stored is printed first
    assert "error: nothing was measured: the run ended unsupported" in err
    code, out, err = run_cli(capsys, "bench", "fc", "--json")
    assert code == 1 and out.startswith("{")  # the JSON is whole on stdout, the line on stderr
    monkeypatch.setattr(api, "bench", lambda *a, **kw: _record(Status.OK))
    assert run_cli(capsys, "bench", "fc")[0] == 0


def test_run_exits_1_only_when_every_run_failed(capsys, monkeypatch, tmp_path):
    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    args = ["run", "--preset", str(sweep), "--db", str(tmp_path / "r.db"), "--quiet"]
    monkeypatch.setattr("paradnn.cli.run.quiet_check", lambda *a: None)
    for got, want in (
        ([Status.PREDICTED_OOM, Status.UNSUPPORTED], 1),
        ([Status.OK, Status.UNSUPPORTED], 0),
        ([], 0),  # a resumed sweep with nothing left to do
    ):
        monkeypatch.setattr(api, "run", lambda *a, got=got, **kw: [_record(s) for s in got])
        code, _, err = run_cli(capsys, *args)
        assert code == want, err
        if want:
            assert "all 2 runs ended 1 predicted_oom, 1 unsupported" in err


def test_the_exit_status_is_documented():
    limits = (Path(__file__).parents[1] / "docs" / "limits.md").read_text()
    assert "## A command that measured nothing" in limits
    assert "exit status 1" in limits.split("## A command that measured nothing")[1][:800]
