"""CPU package and DRAM energy through a fake powercap tree on a virtual clock: nested zones not
double-counted, wrap-around, permissions (injected: tests run as root), absent trees."""

import pytest

from paradnn.measure.energy import open_meter, rapl
from paradnn.measure.energy.base import Unavailable
from paradnn.measure.energy.fakes import FakeRaplZone, VirtualClock, build_powercap, reader

BIG = 262143328850  # a real max_energy_range_uj


def zone(name, rng=BIG):
    return {"name": name, "energy_uj": 0, "max_energy_range_uj": rng}


def intel_tree(root):
    return build_powercap(
        root,
        {
            "intel-rapl:0": zone("package-0"),
            "intel-rapl:0/intel-rapl:0:0": zone("core"),
            "intel-rapl:0/intel-rapl:0:1": zone("dram"),
            "intel-rapl:1": zone("package-1"),
            "intel-rapl:2": zone("psys"),
            "intel-rapl-mmio:0": zone("package-0"),
        },
    )


def cpu_window(root, read, clock, seconds, tmp_path, tick=True, period=0.05, steps=100):
    meter = open_meter(
        "cpu", period_s=period, powercap=root, read=read, cpuinfo=tmp_path / "cpuinfo",
        markers=(), clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    meter.begin(threaded=False)
    end = clock() + seconds
    while tick and clock() + period <= end:
        clock.advance(period)
        meter.sampler.tick()
    clock.advance(end - clock())
    meter.end()
    return meter, meter.result(steps, 8)


def test_packages_summed_dram_apart_core_psys_and_mmio_never_added(tmp_path):
    clock = VirtualClock()
    root = intel_tree(tmp_path / "powercap")
    live = {
        "intel-rapl:0": FakeRaplZone(clock, 50.0, BIG),
        "intel-rapl:0:0": FakeRaplZone(clock, 20.0, BIG),
        "intel-rapl:0:1": FakeRaplZone(clock, 10.0, BIG),
        "intel-rapl:1": FakeRaplZone(clock, 30.0, BIG),
        "intel-rapl:2": FakeRaplZone(clock, 150.0, BIG),
        "intel-rapl-mmio:0": FakeRaplZone(clock, 50.0, BIG),
    }
    meter, res = cpu_window(root, reader(live), clock, 5.0, tmp_path)
    ids = sorted(d["id"] for d in res["devices"])
    assert ids == ["cpu:package-0", "cpu:package-1", "dram:package-0"]
    assert meter.min_window_s == pytest.approx(0.1)
    head = res["headline"]
    assert head["method"] == "rapl_powercap" and head["scope"] == "cpu_package"
    assert head["energy_j"] == pytest.approx(80.0 * 5, rel=1e-3)  # packages only
    assert res["totals"]["dram_energy_j"] == pytest.approx(10.0 * 5, rel=1e-3)
    assert res["totals"]["complete"] is True
    assert res["derived"]["system_measured"]["energy_j"] == pytest.approx(90.0 * 5, rel=1e-3)
    assert res["derived"]["headline"]["avg_power_w"] == pytest.approx(80.0, rel=1e-3)
    skipped = res["skipped_zones"]
    assert "inside package-0" in skipped["intel-rapl:0:0"]
    assert "psys" in skipped["intel-rapl:2"] and "duplicate" in skipped["intel-rapl-mmio:0"]


def test_reads_too_sparse_to_rule_out_an_unseen_wrap_are_invalid(tmp_path):
    clock = VirtualClock()
    rng = 20_000_000  # 20 J: reads must be < range/(2·1000 W) = 10 ms apart; the sampler: 50 ms
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": zone("package-0", rng)})
    live = {"intel-rapl:0": FakeRaplZone(clock, 50.0, rng, start_uj=rng - 1_000_000)}
    _, res = cpu_window(root, reader(live), clock, 5.0, tmp_path)
    assert res["headline"]["energy_j"] is None
    assert res["headline"]["reason"] == "counter_invalid"


def test_wraps_are_corrected_with_a_realistic_range(tmp_path):
    clock = VirtualClock()
    rng = 300_000_000  # 300 J: read-interval limit 0.15 s, wraps every 6 s at 50 W
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": zone("package-0", rng)})
    live = {"intel-rapl:0": FakeRaplZone(clock, 50.0, rng, start_uj=rng - 5_000_000)}
    _, res = cpu_window(root, reader(live), clock, 20.0, tmp_path)
    assert res["headline"]["energy_j"] == pytest.approx(50.0 * 20, rel=1e-4)  # 4 wraps


def test_several_wraps_without_the_sampler_are_invalid_not_wrong(tmp_path):
    clock = VirtualClock()
    rng = 300_000_000
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": zone("package-0", rng)})
    live = {"intel-rapl:0": FakeRaplZone(clock, 50.0, rng)}
    _, res = cpu_window(root, reader(live), clock, 20.0, tmp_path, tick=False)
    assert res["headline"]["energy_j"] is None
    assert res["headline"]["reason"] == "counter_invalid"


def test_unreadable_range_invalidates_a_wrap_instead_of_going_negative(tmp_path):
    clock = VirtualClock()
    rng = 300_000_000
    files = {"name": "package-0", "energy_uj": 0}  # no max_energy_range_uj
    root = build_powercap(tmp_path / "pc", {"intel-rapl:0": files})
    live = {"intel-rapl:0": FakeRaplZone(clock, 50.0, rng, start_uj=rng - 5_000_000)}
    _, res = cpu_window(root, reader(live), clock, 2.0, tmp_path)
    assert res["headline"]["reason"] == "counter_invalid"
    # and without a wrap the same zone measures fine
    live = {"intel-rapl:0": FakeRaplZone(clock, 50.0, rng)}
    _, res = cpu_window(root, reader(live), clock, 2.0, tmp_path)
    assert res["headline"]["energy_j"] == pytest.approx(100.0, rel=1e-4)


def test_permission_denied_on_the_packages_is_the_reason(tmp_path):
    clock = VirtualClock()
    root = intel_tree(tmp_path / "pc")
    _, res = cpu_window(root, reader(denied=("energy_uj",)), clock, 1.0, tmp_path)
    assert res["devices"] == []
    assert res["headline"]["energy_j"] is None
    assert res["headline"]["reason"] == "permission_denied"
    assert "udev" in res["headline"]["detail"] or "energy_uj" in res["headline"]["detail"]


def test_permission_denied_on_dram_only_keeps_the_packages(tmp_path):
    clock = VirtualClock()
    root = intel_tree(tmp_path / "pc")
    live = {"intel-rapl:0": FakeRaplZone(clock, 40.0, BIG),
            "intel-rapl:1": FakeRaplZone(clock, 40.0, BIG)}  # fmt: skip
    read = reader(live, denied=("intel-rapl:0:1/energy_uj",))
    _, res = cpu_window(root, read, clock, 1.0, tmp_path)
    assert res["headline"]["energy_j"] == pytest.approx(80.0, rel=1e-3)
    assert res["skipped_zones"]["intel-rapl:0:1"] == "permission_denied"
    assert res["totals"]["dram_energy_j"] is None and res["derived"]["system_measured"] is None


def test_amd_dies_are_packages_and_no_dram_domain_is_said(tmp_path):
    clock = VirtualClock()
    root = build_powercap(
        tmp_path / "pc",
        {"intel-rapl:0": zone("package-0-die-0"), "intel-rapl:1": zone("package-0-die-1")},
    )
    live = {"intel-rapl:0": FakeRaplZone(clock, 60.0, BIG),
            "intel-rapl:1": FakeRaplZone(clock, 70.0, BIG)}  # fmt: skip
    _, res = cpu_window(root, reader(live), clock, 1.0, tmp_path)
    assert res["headline"]["energy_j"] == pytest.approx(130.0, rel=1e-3)
    assert {"id": "dram", "reason": "no_dram_domain"}.items() <= res["unavailable"][0].items()
    assert res["totals"]["complete"] is False and res["derived"]["system_measured"] is None


@pytest.mark.parametrize(
    ("flags", "marker", "reason"),
    [
        ("flags\t: fpu sse hypervisor avx\n", False, "vm_guest"),
        ("flags\t: fpu sse avx\n", True, "container_masked"),
        ("flags\t: fpu sse avx\n", False, "no_rapl"),
    ],
)
def test_absent_tree_says_why(tmp_path, flags, marker, reason):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(flags)
    markers = (str(tmp_path / ".dockerenv"),)
    if marker:
        (tmp_path / ".dockerenv").write_text("")
    with pytest.raises(Unavailable) as e:
        rapl.discover(tmp_path / "nope", cpuinfo=cpuinfo, markers=markers)
    assert e.value.reason == reason


def test_this_machine_gets_numbers_or_a_reason_never_zero():
    meter = open_meter("cpu")
    meter.begin(threaded=False)
    meter.end()
    head = meter.result(1, 1)["headline"]
    assert (head["energy_j"] is None) == (head["reason"] is not None)
    assert head["energy_j"] != 0
