"""The energy window: sources read at both edges of the timed window, a sampler in between.

`begin()` and `end()` are called by the timer (measure/timer.py) right at the edges of the
timed phase, after a device sync, so energy and throughput share one window. Attribution per
source (reference/energy.md §3.4): the counter difference, wrap-corrected, when a counter
exists; else trapezoidal integration of the power samples (held flat to the window edges); the
1 s average is integrated the same way and flagged `smoothed`. Anything that cannot be
attributed is null with a reason code; a window shorter than the sources need for ≤1% error is
null with `window_too_short`. Average power is always E / t.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paradnn.measure.energy import nvml as nvml_mod
from paradnn.measure.energy import rapl
from paradnn.measure.energy.base import REASONS, Reading, Unavailable, reason_text
from paradnn.measure.energy.sampler import MIN_PERIOD_S, Sampler
from paradnn.records import ENERGY_FIELDS, Energy

# Columns of `runs` this module fills (schema v4; docs/energy.md documents them).
ENERGY_COLUMNS = ENERGY_FIELDS
POWER_METHOD = {"instant": "nvml_power_instant", "average": "nvml_power_average"}


def fold_counter(
    readings: Sequence[Reading], max_interval_s: float | None
) -> tuple[float | None, str | None]:
    """Energy between the first and last counter reading, wrap-corrected; (None, reason) when
    the counter went backwards without a known wrap point, or reads were too far apart to rule
    out an unseen wrap."""
    rs = [r for r in readings if r.counter_j is not None]
    if len(rs) < 2:
        return None, "read_failed"
    total = 0.0
    for a, b in itertools.pairwise(rs):
        d = b.counter_j - a.counter_j  # type: ignore[operator]
        if b.range_j is not None and max_interval_s is not None and b.t - a.t > max_interval_s:
            return None, "counter_invalid"
        if d < 0:
            if b.range_j is None:  # a 64-bit counter going backwards: a reset (driver reload)
                return None, "counter_invalid"
            d += b.range_j
        total += d
    if total <= 0:  # a flat counter over a whole window is broken, not idle
        return None, "counter_invalid"
    return total, None


def integrate_power(readings: Sequence[Reading], t0: float, t1: float) -> float | None:
    """Trapezoids over the power samples, the first and last value held out to t0 and t1."""
    pts = [(r.t, r.power_w) for r in readings if r.power_w is not None]
    if not pts:
        return None
    pts = [(t0, pts[0][1])] + [p for p in pts if t0 <= p[0] <= t1] + [(t1, pts[-1][1])]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in itertools.pairwise(pts))


class EnergyMeter:
    """Energy of the run's device (the headline: `gpu:N`, or `cpu` = every package zone) and of
    whatever else this machine lets us measure, over one window."""

    def __init__(
        self,
        sources: Sequence[Any],
        headline: str,
        *,
        unavailable: dict[str, tuple[str, str]] | None = None,
        skipped: dict[str, str] | None = None,
        period_s: float = MIN_PERIOD_S,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], Any] | None = None,
        sync: Callable[[], None] | None = None,
    ):
        self.sources = list(sources)
        self.headline = headline
        self.unavailable = dict(unavailable or {})
        self.skipped = dict(skipped or {})
        self.period_s, self.clock = period_s, clock
        self.sync = sync or (lambda: None)
        self.sampler = Sampler(self.sources, period_s, clock=clock, wait=wait)
        self.t0: float | None = None
        self.t1: float | None = None
        # Keep energy from windows shorter than the ≤1% minimum (the idle baseline only; the
        # quantisation bound is reported next to it).
        self.allow_short_window = False
        self._begin: dict[str, Reading | Unavailable] = {}
        self._end: dict[str, Reading | Unavailable] = {}
        self._start_index: dict[str, int] = {}

    @property
    def min_window_s(self) -> float:
        """The shortest window whose counter resolution keeps every source within 1%."""
        return max((s.min_window_s for s in self.sources), default=0.0)

    def _read_all(self) -> dict[str, Reading | Unavailable]:
        out: dict[str, Reading | Unavailable] = {}
        for s in self.sources:
            try:
                out[s.id] = s.read()
            except Unavailable as e:
                out[s.id] = e
        return out

    def begin(self, *, threaded: bool = True) -> None:
        self.sync()
        self._start_index = {s.id: len(self.sampler.readings[s.id]) for s in self.sources}
        self.t0 = self.clock()
        self._begin = self._read_all()
        if threaded and self.sources:
            self.sampler.start()

    def end(self) -> None:
        self.sync()
        self.t1 = self.clock()
        self._end = self._read_all()
        self.sampler.stop()

    def close(self) -> None:
        """Stop the sampler (a run that failed mid-window leaves it running) and the sources."""
        self.sampler.stop()
        for s in self.sources:
            s.close()

    # -- attribution -------------------------------------------------------------------------
    def _device(self, s: Any) -> dict[str, Any]:
        t0, t1 = self.t0, self.t1
        assert t0 is not None and t1 is not None, "begin() and end() first"
        out: dict[str, Any] = {
            "id": s.id,
            "kind": s.kind,
            "scope": s.scope,
            "method": None,
            "energy_j": None,
            "reason": None,
            "smoothed": False,
            **s.info(),
        }
        first, last = self._begin.get(s.id), self._end.get(s.id)
        for edge in (first, last):
            if isinstance(edge, Unavailable):
                out.update(reason=edge.reason, detail=edge.detail)
                return out
        middle = self.sampler.readings[s.id][self._start_index[s.id] :]
        inside = sorted((r for r in middle if t0 <= r.t <= last.t), key=lambda r: r.t)
        rs = [first, *inside, last]
        powers = [r.power_w for r in rs if r.power_w is not None]
        out["peak_power_w"] = max(powers) if powers else None
        counter_e, counter_reason = (None, None)
        if s.has_counter:
            counter_e, counter_reason = fold_counter(rs, getattr(s, "max_read_interval_s", None))
        power_e = integrate_power(rs, t0, t1) if s.has_power else None
        duration = t1 - t0
        if counter_e is not None:
            out.update(method=s.method, energy_j=counter_e)
            period = getattr(s, "update_period_s", None)
            peak = out["peak_power_w"] or counter_e / duration
            out["quantization_bound_j"] = None if period is None else peak * period
            if power_e is not None:
                out["cross_check"] = {
                    "method": POWER_METHOD.get(getattr(s, "power_field", ""), "power"),
                    "energy_j": power_e,
                    "ratio": power_e / counter_e,
                }
        elif power_e is not None and power_e > 0:
            method = POWER_METHOD[s.power_field]
            out.update(method=method, energy_j=power_e, smoothed=method == "nvml_power_average")
            if counter_reason:
                out["counter"] = counter_reason
        else:
            flat = "counter_invalid" in str(getattr(s, "notes", {}).get("counter", ""))
            out["reason"] = counter_reason or ("counter_invalid" if flat else "read_failed")
            if power_e is not None:
                out["detail"] = "every power reading was zero: a sensor fault, not a measurement"
            return out
        need = (
            s.min_window_s
            if out["method"] == getattr(s, "method", None)
            else (nvml_mod.POWER_MIN_WINDOW_S)
        )
        if duration < need and not self.allow_short_window:
            out.update(energy_j=None, reason="window_too_short", min_window_s=need)
            return out
        if duration < need:  # kept on request (the idle baseline), with its bound beside it
            out["below_min_window_s"] = need
        out["avg_power_w"] = out["energy_j"] / duration
        return out

    def result(self, steps: int | None = None, examples_per_step: int | None = None) -> dict:
        """The window's JSON block (stored in `runs.energy`) with per-device figures, totals and
        derived metrics; `headline` holds the values of the run's own device."""
        duration = self.t1 - self.t0  # type: ignore[operator]
        samples = steps * examples_per_step if steps and examples_per_step else None
        devices = [self._device(s) for s in self.sources]
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for d in devices:
            by_kind.setdefault(d["kind"], []).append(d)
        missing = [d["id"] for d in devices if d["energy_j"] is None] + sorted(self.unavailable)

        def total(kind: str) -> float | None:
            ds = by_kind.get(kind, [])
            if not ds or any(d["energy_j"] is None for d in ds):
                return None
            return sum(d["energy_j"] for d in ds)

        totals = {
            "accelerator_energy_j": total("gpu"),
            "cpu_energy_j": total("cpu"),
            "dram_energy_j": total("dram"),
            "measured_energy_j": sum(d["energy_j"] for d in devices if d["energy_j"] is not None)
            or None,
            "complete": not missing,
            "missing": missing,
        }
        head = self._headline(devices, totals)
        derived = {"headline": _derived(head["energy_j"], duration, steps, samples)}
        system = totals["measured_energy_j"] if not missing else None
        derived["system_measured"] = _derived(system, duration, steps, samples) if system else None
        return {
            "window": {
                "duration_s": duration,
                "steps": steps,
                "samples": samples,
                "min_window_s": self.min_window_s,
            },
            "headline": head,
            "devices": devices,
            "unavailable": [
                {"id": k, "reason": r, "detail": d}
                for k, (r, d) in sorted(self.unavailable.items())
            ],
            "skipped_zones": self.skipped,
            "sampling": self.sampler.health(self.t0, self.t1),
            "totals": totals,
            "derived": derived,
        }

    def _headline(self, devices: list[dict[str, Any]], totals: dict[str, Any]) -> dict[str, Any]:
        """The run's device: one GPU, or the sum of the CPU packages (DRAM reported apart)."""
        if self.headline in self.unavailable:
            reason, detail = self.unavailable[self.headline]
            scope = "cpu_package" if self.headline == "cpu" else "gpu"
            return _head(None, None, scope, reason, detail)
        if self.headline == "cpu":
            cpus = [d for d in devices if d["kind"] == "cpu"]
            bad = next((d for d in cpus if d["energy_j"] is None), None)
            if not cpus or bad is not None:
                reason = bad["reason"] if bad else "no_rapl"
                return _head(None, None, "cpu_package", reason, (bad or {}).get("detail", ""))
            return _head(totals["cpu_energy_j"], "rapl_powercap", "cpu_package", None, "")
        d = next((d for d in devices if d["id"] == self.headline), None)
        if d is None:
            return _head(None, None, None, "no_gpu", f"{self.headline} not measured")
        return _head(d["energy_j"], d["method"], d["scope"], d["reason"], d.get("detail", ""))


def _head(energy, method, scope, reason, detail) -> dict[str, Any]:
    return {
        "energy_j": energy,
        "method": method,
        "scope": scope,
        "reason": reason,
        "detail": detail or (REASONS.get(reason, "") if reason else ""),
    }


def _derived(energy: float | None, duration: float, steps, samples) -> dict[str, Any] | None:
    if energy is None:
        return None
    return {
        "energy_j": energy,
        "avg_power_w": energy / duration,
        "joules_per_step": energy / steps if steps else None,
        "joules_per_sample": energy / samples if samples else None,
        "samples_per_joule": samples / energy if samples else None,
    }


def open_meter(
    device: str,
    *,
    period_s: float = MIN_PERIOD_S,
    nvml: Any = None,
    powercap: Path = rapl.POWERCAP,
    read: Callable[[Path], str] = rapl._read,
    cpuinfo: Path = Path("/proc/cpuinfo"),
    markers: tuple[str, ...] = rapl.CONTAINER_MARKERS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    wait: Callable[[float], Any] | None = None,
    sync: Callable[[], None] | None = None,
) -> EnergyMeter:
    """A meter for a run on `device` (cpu, cuda:N): that device first, then whatever else of
    this host can be measured (RAPL packages and DRAM next to a GPU)."""
    sources: list[Any] = []
    unavailable: dict[str, tuple[str, str]] = {}
    headline = "cpu"
    if device.startswith("cuda"):
        index = int(device.split(":")[1]) if ":" in device else 0
        headline = f"gpu:{index}"
        try:
            src = nvml_mod.open_nvml(index, nvml, clock=clock, sleep=sleep)
            headline = src.id
            sources.append(src)
        except Unavailable as e:
            unavailable[headline] = (e.reason, e.detail)
    skipped: dict[str, str] = {}
    try:
        zones, skipped = rapl.discover(powercap, read, cpuinfo=cpuinfo, markers=markers)
        sources += [rapl.RaplSource(z, read, clock) for z in zones]
        if not any(z.kind == "dram" for z in zones):
            unavailable["dram"] = ("no_dram_domain", REASONS["no_dram_domain"])
    except Unavailable as e:
        unavailable["cpu"] = (e.reason, e.detail)
    return EnergyMeter(
        sources,
        headline,
        unavailable=unavailable,
        skipped=skipped,
        period_s=period_s,
        clock=clock,
        wait=wait,
        sync=sync,
    )


def measure_idle(meter: EnergyMeter, seconds: float, sleep=time.sleep) -> dict[str, Any]:
    """Average power of every source over `seconds` of nothing (reported, never subtracted).
    A short idle window is allowed: its quantisation bound is reported with it."""
    meter.allow_short_window = True
    meter.begin()
    try:
        sleep(seconds)
    finally:
        meter.end()
    res = meter.result()
    head = res["headline"]
    return {
        "window_s": res["window"]["duration_s"],
        "power_w": None
        if head["energy_j"] is None
        else head["energy_j"] / res["window"]["duration_s"],
        "reason": head["reason"],
        "method": head["method"],
        "devices": {
            d["id"]: {
                "power_w": d.get("avg_power_w"),
                "method": d["method"],
                "reason": d["reason"],
                "quantization_bound_w": None
                if d.get("quantization_bound_j") is None
                else d["quantization_bound_j"] / res["window"]["duration_s"],
            }
            for d in res["devices"]
        },
        "note": "measured before the sweep with no run in flight; reported, not subtracted",
    }


def with_idle(part: Energy, idle: dict[str, Any] | None) -> Energy:
    """The sweep's idle baseline on an energy run's part (reported, never subtracted)."""
    nulls = dict(part.nulls)
    if idle is None:
        nulls["idle_power_w"] = "not_measured: no idle baseline (energy_idle = 0)"
        return dataclasses.replace(part, idle_power_w=None, nulls=nulls)
    detail = None if part.energy is None else {**part.energy, "idle": idle}
    if idle["power_w"] is None:
        nulls["idle_power_w"] = reason_text(idle["reason"] or "not_measured")
        return dataclasses.replace(part, idle_power_w=None, energy=detail, nulls=nulls)
    nulls.pop("idle_power_w", None)
    return dataclasses.replace(part, idle_power_w=idle["power_w"], energy=detail, nulls=nulls)


def energy_part(
    res: dict[str, Any] | None, period_s: float, reason: str = "", detail: str = ""
) -> Energy:
    """A window's result as a record's energy part; nulls get `code: hint`."""
    if res is None:
        why = reason_text(reason or "not_measured", detail)
        return Energy(nulls={col: why for col in ENERGY_COLUMNS})
    head = res["headline"]
    nulls: dict[str, str] = {}
    values: dict[str, Any] = {
        "energy": res,
        "energy_window_s": res["window"]["duration_s"],
        "energy_period_s": period_s,
        "energy_scope": head["scope"],
    }
    derived = res["derived"]["headline"]
    if derived is None:
        why = reason_text(head["reason"], head["detail"])
        for col in ENERGY_COLUMNS:
            if col not in ("energy_window_s", "energy_period_s", "energy_scope", "idle_power_w"):
                nulls[col] = why
        return Energy(**values, nulls=nulls)
    values.update(
        energy_method=head["method"],
        energy_j=derived["energy_j"],
        avg_power_w=derived["avg_power_w"],
        energy_per_step_j=derived["joules_per_step"],
        energy_per_sample_j=derived["joules_per_sample"],
        samples_per_j=derived["samples_per_joule"],
    )
    for col in ("energy_per_step_j", "energy_per_sample_j", "samples_per_j"):
        if values[col] is None:
            nulls[col] = "no step count for this window"
    return Energy(**values, nulls=nulls)
