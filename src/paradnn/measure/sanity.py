"""What `paradnn doctor`'s measured rates say, decided on numbers (torch-free, so every branch
is tested without timing anything): a rate with its 95 % interval, its verdict against a peak
(a datasheet's or the derived CPU peak) with advice that matches the finding and the device,
its agreement with the ceiling `calibrate` stored, and the doctor's time budget.

Every verdict reads intervals, never a point: a rate is below half its peak only when its whole
interval is, above the peak only when its whole interval is; an interval across a threshold is
inconclusive and says so. A measurement whose interval is wider than ±FAILED_CI_REL of its
median is a failed measurement: it is reported as such, never as a number.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOW_FRACTION = 0.5  # a rate wholly below half its peak warns
FAILED_CI_REL = 0.5  # a step time's 95 % CI wider than ±50 %: no figure at all
EPS = 1e-9  # a bound within rounding of a threshold counts as straddling it


@dataclass(frozen=True)
class Rate:
    """`work` per second of a timed kernel: the median's rate and the rates at the ends of the
    median's 95 % CI (`low` from its upper end). `failed` says why there is no figure."""

    value: float | None
    low: float | None
    high: float | None
    ci_rel: float | None  # the step time's CI half-width over its median (None: no CI)
    n_samples: int
    size: int | None = None  # the kernel's size: a matmul's n, a copy's bytes per array
    failed: str | None = None

    @classmethod
    def from_times(
        cls,
        work: float,
        median_s: float,
        ci_low_s: float | None,
        ci_high_s: float | None,
        n_samples: int,
        size: int | None = None,
    ) -> Rate:
        """The rate of `work` done in `median_s` seconds; failed when the CI is missing or
        wider than ±FAILED_CI_REL (a measurement that says nothing is not a number)."""
        if ci_low_s is None or ci_high_s is None or median_s <= 0 or ci_low_s <= 0:
            why = f"no confidence interval from {n_samples} samples"
            return cls(None, None, None, None, n_samples, size, why)
        ci_rel = max(median_s - ci_low_s, ci_high_s - median_s) / median_s
        if ci_rel > FAILED_CI_REL:
            why = (
                f"a failed measurement: its 95% CI was ±{ci_rel:.0%} of the median over "
                f"{n_samples} samples (at most ±{FAILED_CI_REL:.0%} says anything)"
            )
            return cls(None, None, None, ci_rel, n_samples, size, why)
        return cls(work / median_s, work / ci_high_s, work / ci_low_s, ci_rel, n_samples, size)

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "ci_rel": self.ci_rel,
            "n_samples": self.n_samples,
            "size": self.size,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Verdict:
    """A check's status, the words of its finding, what to do (None: nothing), and which of
    the findings it is: failed, no_peak, above, below, inconclusive or within."""

    status: str
    finding: str
    advice: str | None = None
    kind: str = "within"


def busy_advice(device_type: str) -> str:
    """What makes a device slow or a measurement noisy, for this kind of device: GPU clocks
    and power on a GPU, load, threads and the governor on a CPU (never nvidia-smi there)."""
    if device_type == "cuda":
        return (
            "clocks locked low or throttled (`nvidia-smi -q -d CLOCK,PERFORMANCE`), power "
            "capping or thermals, or another process on the GPU (see `others`)"
        )
    return (
        "other processes on these CPUs (see `others`), fewer threads than cores (affinity, a "
        "cgroup quota, OMP_NUM_THREADS), a power-saving frequency governor (`cpupower "
        "frequency-info`), or the hypervisor's steal on a VM"
    )


def against_peak(
    rate: Rate, peak: Mapping[str, Any] | None, device_type: str, unit: str = "FLOP/s"
) -> Verdict:
    """A rate against `peak` ({"source": "datasheet"|"derived", "value": …, "derivation" or
    "platform"}): failed → warn (no figure); no peak → skip; wholly above → warn about the
    peak (its assumption is wrong, not the machine); wholly below half → warn with the
    device's advice; across half → warn, inconclusive; otherwise pass."""
    if rate.value is None:
        return Verdict(
            "warn", f"no figure: {rate.failed}", "re-run when " + _quiet(device_type), "failed"
        )
    if not peak or not peak.get("value"):
        return Verdict("skip", "no peak to hold it against", None, "no_peak")
    ref, source = float(peak["value"]), peak.get("source", "datasheet")
    lo, hi = rate.low / ref, rate.high / ref  # type: ignore[operator]
    share = f"{rate.value / ref:.0%} ({lo:.0%}–{hi:.0%}) of the {source} peak {show(ref, unit)}"
    if lo > 1.0 + EPS:
        if source == "derived":
            why = (
                "above the derived peak, so its assumptions do not hold on this CPU (more "
                "or wider FMA units, a matrix unit, or a clock above the one read): "
                f"{peak.get('derivation', 'see `paradnn platforms`')}. Utilization against "
                "it would read over 100 %; runs are held against `paradnn calibrate`'s "
                "measured ceiling instead"
            )
        else:
            why = (
                f"above the datasheet peak of {peak.get('platform', 'this device')}: a wrong "
                "datasheet match (`paradnn platforms`), a clock the datasheet does not count, "
                "or a timer error (see `timer`)"
            )
        return Verdict("warn", share + "; above the peak", why, "above")
    if hi < LOW_FRACTION - EPS:
        return Verdict("warn", share + "; below half the peak", busy_advice(device_type), "below")
    if lo < LOW_FRACTION + EPS:
        return Verdict(
            "warn",
            share + f"; inconclusive: its interval spans {LOW_FRACTION:.0%} of the peak",
            "re-run with a larger --budget when " + _quiet(device_type),
            "inconclusive",
        )
    return Verdict("pass", share)


def _quiet(device_type: str) -> str:
    return "the GPU is idle" if device_type == "cuda" else "the machine is quiet (see `others`)"


def show(value: float, unit: str) -> str:
    """A rate in the unit's usual scale: TFLOP/s or GB/s."""
    if unit == "FLOP/s":
        return f"{value / 1e12:.3g} TFLOP/s"
    return f"{value / 1e9:.3g} GB/s"


# -- the stored ceilings ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    """The stored ceiling a measured rate is compared with: the best `ok` row of its kind and
    precision for this device (the one runs divide by, utilization.measured_ceiling), its
    interval at the same size when its detail has that size, else its value alone."""

    value: float
    low: float
    high: float
    same_size: bool
    threads: int | None
    measured_at: str | None
    row_id: Any


def stored_ceiling(
    rows: Sequence[Mapping[str, Any]],
    device_name: str | None,
    kind: str,
    precision: str | None,
    size: int | None,
) -> Stored | None:
    """The best ok `kind` row (matmul of `precision`, or copy) of `device_name` in `rows` (the
    `ceilings` table as api.side_table reads it), compared at the same `size` (a matmul's n,
    a copy's bytes per array) when its detail has it. Detail fields are read where present
    and ignored where not, so rows of other calibrate versions (more paths, shapes) work."""
    mine = [
        r
        for r in rows
        if r.get("kind") == kind
        and r.get("device_name") == device_name
        and (r.get("status") or "ok") == "ok"
        and isinstance(r.get("value"), int | float)
        and r["value"] > 0
        and (kind != "matmul" or r.get("precision") == precision)
    ]
    if not mine:
        return None
    best = max(mine, key=lambda r: (r["value"], str(r.get("measured_at") or "")))
    detail = best.get("detail") if isinstance(best.get("detail"), dict) else {}
    value = float(best["value"])
    low = high = value
    same = False
    timing = detail
    if kind == "matmul":
        sizes = detail.get("sizes") if isinstance(detail.get("sizes"), dict) else {}
        timing = sizes.get(str(size)) if size is not None else None
        same = isinstance(timing, dict)
        timing = timing if same else sizes.get(str(detail.get("best_size")))
    else:  # a copy: the same array size (calibrate's and the doctor's default)
        same = size is not None and detail.get("bytes_per_array") == size
    work = _work(timing, kind)
    if isinstance(timing, dict) and work:
        lo_s, hi_s, med_s = (timing.get(k) for k in ("ci_low_s", "ci_high_s", "median_s"))
        if all(isinstance(x, int | float) and x > 0 for x in (lo_s, hi_s, med_s)):
            value, low, high = work / med_s, work / hi_s, work / lo_s
    elif kind == "matmul":
        same = False
    threads = detail.get("threads")
    return Stored(
        value,
        low,
        high,
        same,
        threads if isinstance(threads, int) else None,
        best.get("measured_at"),
        best.get("id"),
    )


def _work(timing: Any, kind: str) -> float | None:
    if not isinstance(timing, dict):
        return None
    w = timing.get("flops") if kind == "matmul" else timing.get("bytes_moved")
    return float(w) if isinstance(w, int | float) and w > 0 else None


def against_stored(
    rate: Rate, stored: Stored | None, unit: str, threads: int | None
) -> tuple[str, str]:
    """('agree'|'above'|'below'|'unknown', words): a measured rate against the stored
    ceiling, each with its interval. 'below' only against the same size (the doctor's matmul
    is smaller than the one that set the ceiling); 'above' against any size."""
    if stored is None:
        return "unknown", "no stored ceiling"
    at = "its best size"
    if stored.same_size and rate.size:
        at = f"n={rate.size}" if unit == "FLOP/s" else f"{rate.size >> 20} MiB per array"
    was = f"stored {show(stored.value, unit)} at {at}"
    if stored.measured_at:
        was += f" ({str(stored.measured_at)[:10]})"
    if rate.value is None:
        return "unknown", f"{was}; not compared: {rate.failed}"
    now = f"{show(rate.value, unit)} now"
    if threads and stored.threads and threads != stored.threads:
        was += f", with {stored.threads} threads (now {threads})"
    if rate.low > stored.high * (1 + EPS):  # type: ignore[operator]
        return "above", f"{now} is above the {was}, beyond both intervals"
    if stored.same_size and rate.high < stored.low * (1 - EPS):  # type: ignore[operator]
        return "below", f"{now} is below the {was}, beyond both intervals"
    return "agree", f"{now}, {was}: they agree within their intervals"


# -- the budget -------------------------------------------------------------------------------


class Budget:
    """The doctor's seconds: counted from `started` (a monotonic time: the command's start when
    the CLI knows it), so the start-up counts; each check asks what is `left`, and `share`s
    out what remains."""

    def __init__(
        self,
        total_s: float,
        started: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        startup_s: float = 0.0,
    ):
        self.total_s, self.started, self.clock = total_s, started, clock
        self.startup_s = startup_s  # of the spent seconds: Python's and torch's start-up
        self.load: tuple[float | None, int | None] = (None, None)  # load average, CPUs

    def spent(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return self.total_s - self.spent()

    def share(self, parts: int, reserve: float = 0.0) -> float:
        """What one of `parts` equal checks may take of what is left after `reserve`."""
        return max(0.0, self.left() - reserve) / max(1, parts)

    def skip_words(self, needs_s: float) -> str:
        """Why a check that needs `needs_s` is skipped; when the start-up alone took most of
        the budget, that, and the machine's load when it is busy."""
        why = (
            f"skipped: {max(self.left(), 0.0):.1f} s of the {self.total_s:g} s budget left, "
            f"it needs about {needs_s:.1f} s"
        )
        if self.startup_s >= 0.5 * self.total_s:
            why += f" (starting Python and torch took {self.startup_s:.1f} s"
            load, cpus = self.load
            if load is not None and cpus and load > cpus:
                why += f"; the load average is {load:g} on {cpus} CPUs: a busy machine"
            why += ")"
        return why + "; raise --budget"
