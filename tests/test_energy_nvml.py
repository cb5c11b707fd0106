"""GPU energy through a fake NVML on a virtual clock: counter, instant and 1 s average paths,
their sensor artefacts (quantisation, 25%-duty aliasing, smoothing), faults and null reasons."""

import sys

import pytest

from paradnn.measure.energy import nvml as nvml_mod
from paradnn.measure.energy import open_meter
from paradnn.measure.energy.base import Unavailable
from paradnn.measure.energy.fakes import FakeNvml, VirtualClock

STEPS, BATCH = 400, 32


@pytest.fixture(autouse=True)
def _no_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def window(nvml, clock, seconds, tmp_path, period=0.05, steps=STEPS):
    """Open a meter on cuda:0, sample for `seconds` of virtual time, return (meter, result)."""
    meter = open_meter(
        "cuda:0", period_s=period, nvml=nvml, powercap=tmp_path / "none",
        cpuinfo=tmp_path / "cpuinfo", markers=(), clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    meter.begin(threaded=False)
    end = clock() + seconds
    while clock() + period <= end:
        clock.advance(period)
        meter.sampler.tick()
    clock.advance(end - clock())
    meter.end()
    return meter, meter.result(steps, BATCH)


def gpu(res):
    (d,) = [d for d in res["devices"] if d["kind"] == "gpu"]
    return d


def test_counter_gives_p_times_t_within_its_quantisation_bound(tmp_path):
    clock = VirtualClock()
    meter, res = window(FakeNvml(clock, lambda t: 300.0), clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["method"] == "nvml_energy_counter" and d["scope"] == "gpu"
    assert d["counter_update_period_s"] == pytest.approx(0.1, rel=0.05)  # probed, not assumed
    assert meter.min_window_s == pytest.approx(10.0, rel=0.05)  # 100 updates: ≤1% error
    assert d["quantization_bound_j"] == pytest.approx(300 * 0.1, rel=0.05)
    assert abs(d["energy_j"] - 3600.0) <= d["quantization_bound_j"]
    head, der = res["headline"], res["derived"]["headline"]
    assert head["method"] == "nvml_energy_counter" and head["reason"] is None
    assert der["avg_power_w"] == pytest.approx(d["energy_j"] / 12.0)
    assert der["joules_per_step"] == pytest.approx(d["energy_j"] / STEPS)
    assert der["joules_per_sample"] == pytest.approx(d["energy_j"] / (STEPS * BATCH))
    assert der["samples_per_joule"] == pytest.approx(STEPS * BATCH / d["energy_j"])
    # the instant power agrees on a steady load (the cross-check)
    assert d["cross_check"]["ratio"] == pytest.approx(1.0, abs=0.01)
    assert abs(res["sampling"]["n_samples"] - 240) <= 1 and res["sampling"]["gap_count"] == 0


def test_window_shorter_than_the_counter_needs_is_null_not_a_guess(tmp_path):
    clock = VirtualClock()
    _, res = window(FakeNvml(clock, lambda t: 300.0), clock, 2.0, tmp_path)
    d = gpu(res)
    assert d["energy_j"] is None and d["reason"] == "window_too_short"
    assert res["headline"]["reason"] == "window_too_short"
    assert res["derived"]["headline"] is None


def square(t, high=400.0, low=100.0, period=0.1):
    """High in the first half of every 100 ms, low in the second: the 25 ms instant window at
    the end of each 100 ms only ever sees the low half."""
    return high if (t % period) < period / 2 else low


def test_square_wave_aliases_in_instant_power_but_not_in_the_counter(tmp_path):
    clock = VirtualClock()
    _, res = window(FakeNvml(clock, square), clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["method"] == "nvml_energy_counter"
    assert d["energy_j"] == pytest.approx(250.0 * 12, rel=0.01)
    assert d["cross_check"]["method"] == "nvml_power_instant"
    assert d["cross_check"]["ratio"] == pytest.approx(100 / 250, rel=0.02)  # aliased


def test_pascal_falls_back_to_integrated_instant_power_with_the_method_recorded(tmp_path):
    clock = VirtualClock()
    nvml = FakeNvml(clock, lambda t: 200.0 + 20.0 * (t % 1.0), counter=False)
    meter, res = window(nvml, clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["method"] == "nvml_power_instant" and res["headline"]["method"] == d["method"]
    assert "not_supported" in d["notes"]["counter"]
    assert meter.min_window_s == nvml_mod.POWER_MIN_WINDOW_S
    assert d["energy_j"] == pytest.approx(210.0 * 12, rel=0.01)
    assert not d["smoothed"] and "cross_check" not in d


def test_one_second_average_is_the_last_resort_and_flagged_smoothed(tmp_path):
    clock = VirtualClock()
    nvml = FakeNvml(clock, lambda t: 150.0, counter=False, instant=False)
    _, res = window(nvml, clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["method"] == "nvml_power_average" and d["smoothed"] is True
    assert d["energy_j"] == pytest.approx(150.0 * 12, rel=0.01)


def test_one_second_average_lags_a_power_step(tmp_path):
    """The boxcar smears a step over 1 s: the smoothed figure misses ~(ΔP × 0.5 s)."""
    clock = VirtualClock()
    start = clock() + 0.5  # before the probe and the window
    nvml = FakeNvml(clock, lambda t: 100.0 if t < start + 1 else 300.0, counter=False,
                    instant=False)  # fmt: skip
    _, res = window(nvml, clock, 12.0, tmp_path)
    truth = nvml.energy(clock()) - nvml.energy(clock() - 12.0)
    d = gpu(res)
    assert d["smoothed"] and d["energy_j"] < truth
    assert truth - d["energy_j"] == pytest.approx(200 * 0.5, rel=0.2)


def test_counter_reset_is_invalid_and_falls_back_to_measured_power(tmp_path):
    clock = VirtualClock()
    nvml = FakeNvml(clock, lambda t: 250.0, reset_at=clock() + 5.0)
    _, res = window(nvml, clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["counter"] == "counter_invalid"
    assert d["method"] == "nvml_power_instant"
    assert d["energy_j"] == pytest.approx(250.0 * 12, rel=0.01)


def test_counter_reset_without_any_power_reading_is_null_counter_invalid(tmp_path, monkeypatch):
    clock = VirtualClock()
    nvml = FakeNvml(clock, lambda t: 250.0, reset_at=clock() + 5.0, instant=False)
    monkeypatch.setattr(nvml, "nvmlDeviceGetPowerUsage", _not_supported)
    _, res = window(nvml, clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["energy_j"] is None and d["reason"] == "counter_invalid"
    assert res["headline"]["reason"] == "counter_invalid"


def _not_supported(h):
    raise FakeNvml.NVMLError(3)


def test_idle_gpu_at_zero_watts_never_reports_zero_joules(tmp_path):
    clock = VirtualClock()
    _, res = window(FakeNvml(clock, lambda t: 0.0), clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["energy_j"] is None and d["reason"] == "counter_invalid"
    assert res["derived"]["headline"] is None


def test_not_supported_bursts_are_missing_samples_never_zeros(tmp_path):
    clock = VirtualClock()
    t0 = clock()
    nvml = FakeNvml(clock, lambda t: 220.0, counter=False,
                    not_supported=lambda t: t0 + 4 < t < t0 + 6)  # fmt: skip
    _, res = window(nvml, clock, 12.0, tmp_path)
    d = gpu(res)
    assert d["energy_j"] == pytest.approx(220.0 * 12, rel=0.01)
    assert d["peak_power_w"] == pytest.approx(220.0)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"init_error": 12}, "no_gpu"),  # NVML_ERROR_LIBRARY_NOT_FOUND
        ({"init_error": 9}, "no_gpu"),  # driver not loaded
        ({"init_error": 4}, "permission_denied"),
        ({"init_error": 999}, "nvml_init_failed"),
    ],
)
def test_nvml_failures_become_reasons(tmp_path, kwargs, reason):
    clock = VirtualClock()
    _, res = window(FakeNvml(clock, **kwargs), clock, 0.2, tmp_path)
    assert res["devices"] == [] and res["headline"]["energy_j"] is None
    assert res["headline"]["reason"] == reason
    assert "gpu:0" in res["totals"]["missing"] and res["totals"]["complete"] is False


def test_gpu_without_counter_or_power_is_unsupported(monkeypatch):
    clock = VirtualClock()
    nvml = FakeNvml(clock, counter=False, instant=False)
    monkeypatch.setattr(nvml, "nvmlDeviceGetPowerUsage", _not_supported)
    with pytest.raises(Unavailable) as e:
        nvml_mod.open_nvml(0, nvml, clock=clock, sleep=clock.sleep)
    assert e.value.reason == "unsupported_gpu"


def test_missing_bindings_are_library_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(Unavailable) as e:
        nvml_mod.load_nvml()
    assert e.value.reason == "library_absent"


def test_cuda_visible_devices_maps_to_nvml_indices_and_uuids():
    assert nvml_mod.nvml_index(1, "3,5") == 5
    assert nvml_mod.nvml_index(0, "GPU-abc,1") == "GPU-abc"
    assert nvml_mod.nvml_index(2, "") == 2
    with pytest.raises(Unavailable, match="no_gpu"):
        nvml_mod.nvml_index(2, "0,1")


def test_idle_baseline_keeps_a_short_counter_window_with_its_bound(tmp_path):
    from paradnn.measure.energy import measure_idle

    clock = VirtualClock()
    meter = open_meter(
        "cuda:0", nvml=FakeNvml(clock, lambda t: 70.0), powercap=tmp_path / "none",
        cpuinfo=tmp_path / "cpuinfo", markers=(), clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    idle = measure_idle(meter, 2.0, sleep=clock.advance)
    meter.close()
    assert idle["method"] == "nvml_energy_counter" and idle["reason"] is None
    bound_w = idle["devices"]["gpu:0"]["quantization_bound_w"]
    assert bound_w == pytest.approx(70 * 0.1 / 2.0, rel=0.05)  # 5% of 70 W at 2 s
    assert abs(idle["power_w"] - 70.0) <= bound_w
