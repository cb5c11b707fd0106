"""`paradnn doctor`: facts and checks on this CPU, the NVML paths with the fake NVML, the
verdict thresholds on numbers, bad input, and (with `-m gpu`) the real thing on a GPU."""

import json
import os

import pytest
import torch

from paradnn.api.returns import DoctorReport
from paradnn.measure import doctor as doc
from paradnn.measure import quality
from paradnn.measure.energy.fakes import (
    FakeNvml,
    FakeProcess,
    FakeRaplZone,
    VirtualClock,
    build_powercap,
    reader,
)

from conftest import run_cli

CPU = torch.device("cpu")
TOP_KEYS = {
    "schema_version", "device", "device_type", "device_name", "software", "cpu", "precisions",
    "gpus", "power", "datasheet", "checks", "summary", "nulls", "seconds", "budget_s",
    "startup_s",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_verdicts_at_their_thresholds():
    assert doc.timer_verdict(1.0) == "pass"
    assert doc.timer_verdict(1.049) == "pass" and doc.timer_verdict(0.951) == "pass"
    assert doc.timer_verdict(1.06) == "warn" and doc.timer_verdict(0.85) == "warn"
    assert doc.timer_verdict(1.21) == "fail" and doc.timer_verdict(0.7) == "fail"
    assert doc.timer_verdict(None) == "skip"
    assert doc.power_verdict(300.0, 700.0) == "pass"
    assert doc.power_verdict(0.0, 700.0) == "fail"
    assert doc.power_verdict(740.0, 700.0) == "warn"
    assert doc.power_verdict(730.0, 700.0) == "pass"  # within the 5% transient margin
    assert doc.power_verdict(None, 700.0) == "skip"
    assert doc.power_verdict(1200.0, None, 1000.0) == "warn"  # RAPL: no limit, a plausible max
    with pytest.raises(ValueError, match="status"):
        doc.Check("x", "ok", "m")


def test_gpu_facts_through_nvml_with_nulls_and_reasons():
    nv = FakeNvml(VirtualClock())
    nv.unsupported = ("ecc",)
    nv.processes = (FakeProcess(4242, 1 << 30), FakeProcess(os.getpid()))
    nulls: dict[str, str] = {}
    (g,) = doc.gpu_facts(nv, nulls)
    assert g["name"] == "Fake H100" and g["capability"] == "9.0"
    assert g["driver"] == "560.35.03" and g["cuda_driver"] == "12.6"
    assert g["memory_total_bytes"] == 80 << 30 and g["memory_free_bytes"] == 79 << 30
    assert (g["sm_clock_mhz"], g["mem_clock_max_mhz"]) == (1980, 2619)
    assert g["power_limit_w"] == 700.0 and g["power_draw_w"] > 0
    assert g["persistence_mode"] is True and g["mig_mode"] is False
    assert g["ecc_mode"] is None and "NVMLError" in nulls["gpus.0.ecc_mode"]
    # this process is not "another process"
    assert g["other_processes"] == [{"pid": 4242, "kind": "compute", "used_memory_bytes": 1 << 30}]


def test_no_nvml_is_an_empty_list_with_the_reason():
    nv = FakeNvml(VirtualClock(), init_error=9)
    nulls: dict[str, str] = {}
    assert doc.gpu_facts(nv, nulls) == []
    assert nulls["gpus"].startswith("NVML unavailable")


def test_gpu_power_check_reads_nvml_and_judges_it():
    clock = VirtualClock()
    c = doc.check_power(torch.device("cuda", 0), FakeNvml(clock, lambda t: 300.0),
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    assert c.status == "pass", c
    assert c.measured["power_w"] == pytest.approx(300.0, rel=0.01)
    assert c.reference == {"source": "nvml", "power_limit_w": 700.0}
    clock = VirtualClock()
    zero = FakeNvml(clock, lambda t: 0.0, counter=False)
    c = doc.check_power(torch.device("cuda", 0), zero, clock=clock, sleep=clock.sleep)
    assert c.status == "fail" and "0 W" in c.advice
    c = doc.check_power(torch.device("cuda", 0), FakeNvml(clock, init_error=9))
    assert c.status == "skip" and "no_gpu" in c.message


def test_cpu_power_check_reads_rapl(tmp_path):
    clock = VirtualClock()
    root = build_powercap(tmp_path, {"intel-rapl:0": {"name": "package-0", "energy_uj": 0,
                                                      "max_energy_range_uj": 2**32}})  # fmt: skip
    zone = FakeRaplZone(clock, power=65.0, range_uj=2**32, start_uj=2**32 - 5_000_000)
    c = doc.check_power(CPU, powercap=root, read=reader({"intel-rapl:0": zone}),
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    assert c.status == "pass"  # across a wrap of the counter
    assert c.measured["power_w"] == pytest.approx(65.0, rel=1e-3)
    c = doc.check_power(CPU, powercap=tmp_path / "none")
    assert c.status == "skip" and c.message.startswith("RAPL unreadable")


def _probe(busy_per_s, steal_per_s=0.0):
    clock = VirtualClock()

    def cpu_times(cpus):
        return busy_per_s * (clock() - 100), steal_per_s * (clock() - 100)

    return quality.LoadProbe(cpus=[0, 1], cpu_times=cpu_times, own_cpu=lambda: 0.0,
                             clock=clock, loadavg=lambda: 1.0), clock  # fmt: skip


def test_others_check_warns_on_busy_cpus_and_gpu_processes():
    probe, clock = _probe(busy_per_s=0.02)
    c = doc.check_others(CPU, None, probe, sleep=clock.sleep)
    assert c.status == "pass" and "1%" in c.message
    probe, clock = _probe(busy_per_s=1.0)  # one of two CPUs busy with someone else's work
    c = doc.check_others(CPU, None, probe, sleep=clock.sleep)
    assert c.status == "warn" and "50%" in c.message and c.advice
    probe, clock = _probe(busy_per_s=0.0, steal_per_s=0.4)
    assert doc.check_others(CPU, None, probe, sleep=clock.sleep).status == "warn"
    probe, clock = _probe(busy_per_s=0.0)
    c = doc.check_others(torch.device("cuda", 0), [{"pid": 7}], probe, sleep=clock.sleep)
    assert c.status == "warn" and "pid 7" in c.message


def test_a_check_that_raises_is_a_fail_and_the_others_still_run(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("no luck")

    monkeypatch.setattr(doc, "check_timer", boom)
    monkeypatch.setattr(doc, "check_copy", boom)
    quick = (doc.Check("matmul:fp32", "pass", "m"), None)
    monkeypatch.setattr(doc, "check_matmul", lambda *a: quick)
    env = {"native_precisions": ["fp32"]}
    cpu = {"derived_peaks": {}}
    got = doc.run_checks(CPU, env, None, cpu, [], None, 10.0, lambda m: None)
    names = [c.name for c in got]
    assert names == ["timer", "matmul:fp32", "copy", "stored", "power", "others"]
    assert got[0].status == "fail" and "no luck" in got[0].message
    assert got[2].status == "fail" and got[1].status == "pass"
    assert all(c.status in doc.STATUSES for c in got)


def test_doctor_on_this_cpu_reports_every_key_and_runs_every_check():
    from paradnn import host

    # a stored ceiling of 1 FLOP/s for this CPU: whatever the doctor measures is above it
    tiny = {"id": 7, "kind": "matmul", "precision": "fp32", "device_name": host.cpu_model(),
            "value": 1.0, "status": "ok", "detail": {"sizes": {}}}  # fmt: skip
    r = doc.doctor("cpu", budget_s=8.0, stored=[tiny], stored_where="t.db")
    assert set(r) == TOP_KEYS
    assert r["device"] == "cpu" and r["gpus"] == [] and r["nulls"]["gpus"]
    assert r["software"]["torch"] == torch.__version__
    assert r["cpu"]["model"] and r["cpu"]["usable_cpus"] >= 1
    assert "fp32" in r["precisions"]["native"]
    names = [c["name"] for c in r["checks"]]
    assert names[0] == "timer" and names[-2:] == ["power", "others"]
    assert {f"matmul:{p}" for p in r["precisions"]["native"]} <= set(names)
    for c in r["checks"]:
        assert c["status"] in doc.STATUSES and c["message"]
    assert sum(r["summary"].values()) == len(r["checks"])
    # a None fact at the top of a section names its reason
    for section in ("software", "cpu"):
        for k, v in r[section].items():
            if v is None:
                assert any(key.endswith(k) for key in r["nulls"]), (section, k)
    timer = r["checks"][0]
    if timer["status"] != "skip":  # a busy machine may leave it no time: then it says so
        assert timer["measured"]["timer_s"] > 0 and timer["measured"]["wall_s"] > 0
    else:
        assert "raise --budget" in timer["message"]
    assert r["budget_s"] == 8.0 and r["seconds"] > 0 and r["startup_s"] >= 0
    stored = next(c for c in r["checks"] if c["name"] == "stored")
    fp32 = next(c for c in r["checks"] if c["name"] == "matmul:fp32")
    if fp32["measured"].get("flop_per_s"):  # measured (a busy machine may not): compared
        assert stored["status"] == "warn" and "matmul:fp32" in stored["message"]
        assert stored["measured"]["matmul:fp32"]["verdict"] == "above"
        assert "paradnn calibrate --force --db t.db" in stored["advice"]
    else:
        assert stored["status"] == "skip"


def test_cli_json_without_checks(capsys):
    code, out, _ = run_cli(capsys, "doctor", "--device", "cpu", "--no-checks", "--json")
    assert code == 0
    r = json.loads(out)
    assert set(r) == TOP_KEYS and r["checks"] == [] and "checks" in r["nulls"]
    code, out, _ = run_cli(capsys, "doctor", "--device", "cpu", "--no-checks")
    assert code == 0 and "native precisions" in out and "fp32" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--budget", "0"), "--budget"),
        (("--budget", "nan"), "--budget"),
        (("--device", "tpu"), "device"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, args, needle):
    code, _, err = run_cli(capsys, "doctor", *args)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.gpu
def test_doctor_on_a_gpu():
    r = doc.doctor("cuda", budget_s=10.0)
    assert r["device_type"] == "cuda" and r["gpus"]
    g = r["gpus"][0]
    assert g["name"] and g["memory_total_bytes"] and g["driver"]
    assert r["software"]["cuda"] and r["software"]["cudnn"]
    assert r["power"]["nvml"]["readable"], r["power"]
    bad = [c for c in r["checks"] if c["status"] == "fail"]
    assert not bad, bad


def test_the_table_prints_gpu_facts_and_their_nulls(capsys):
    """The GPU rows of the human output, through the fake NVML (a GPU's first run must not be
    the first time they are printed)."""
    from paradnn.cli import doctor as cli_doctor

    nv = FakeNvml(VirtualClock())
    nv.unsupported = ("ecc", "persistence")
    r = doc.doctor("cpu", checks=False, nvml=nv)
    (g,) = r["gpus"]
    assert g["name"] == "Fake H100" and g["ecc_mode"] is None
    cli_doctor._print(DoctorReport(**r))
    out = capsys.readouterr().out
    assert "Fake H100 (cc 9.0), driver 560.35.03" in out
    assert "85.9 GB" in out and "1980" in out
    assert "n/a (NVML: NVMLError" in out  # ecc and persistence: null with the reason
