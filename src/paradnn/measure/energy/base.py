"""What every energy source shares: readings, reason codes for absence, unit conversions.

A source converts to joules and watts at its boundary (NVML mJ/mW, RAPL µJ) so nothing above it
handles units. Absence is data: a source that cannot measure raises `Unavailable(reason)` with a
code from `REASONS`, and the code ends up next to the null in the store — never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass

# Closed vocabulary of why an energy figure is null (reference/energy.md §3.6), with a hint.
REASONS: dict[str, str] = {
    "not_requested": "the run was measured without --energy",
    "not_measured": "the run did not reach its timed window",
    "no_gpu": "NVML sees no NVIDIA driver or GPU",
    "library_absent": "nvidia-ml-py is not installed (pip install nvidia-ml-py)",
    "nvml_init_failed": "NVML failed to initialise",
    "unsupported_gpu": "this GPU exposes neither an energy counter nor a power reading via NVML",
    "permission_denied": "access refused (RAPL energy_uj is root-only since Linux 5.10: grant "
    "read access with a udev/sysfs rule, or run as root)",
    "no_rapl": "no RAPL powercap zones under /sys/class/powercap",
    "no_dram_domain": "RAPL has no DRAM domain here (AMD Zen exposes none)",
    "vm_guest": "running in a virtual machine: the hypervisor exposes no RAPL counters",
    "container_masked": "powercap is hidden by the container runtime (bind-mount "
    "/sys/class/powercap to measure)",
    "counter_invalid": "the counter went backwards, stayed flat or may have wrapped unseen",
    "window_too_short": "the timed window was shorter than the counter needs for ≤1% error",
    "no_power_interface": "this device has no power or energy interface",
    "read_failed": "reading the sensor failed during the window",
}


def reason_text(code: str, detail: str = "") -> str:
    """`code: hint` (the form stored in a record's `nulls` map); the code is the first word."""
    return f"{code}: {detail or REASONS.get(code, '')}".rstrip(": ")


class Unavailable(Exception):
    """A source cannot measure; `reason` is a code from REASONS."""

    def __init__(self, reason: str, detail: str = ""):
        assert reason in REASONS, reason
        self.reason, self.detail = reason, detail or REASONS[reason]
        super().__init__(f"{reason}: {self.detail}")


@dataclass(frozen=True)
class Reading:
    """One read of a source at monotonic time `t` (s). `counter_j` is the raw cumulative counter
    in joules (None without one), `range_j` its wrap point (None: 64-bit, never wraps);
    `power_w` the power reading (None without one)."""

    t: float
    counter_j: float | None = None
    range_j: float | None = None
    power_w: float | None = None
