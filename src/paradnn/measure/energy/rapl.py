"""CPU package and DRAM energy through Linux RAPL (the powercap tree).

Zones (reference/energy.md §1.4): top-level `intel-rapl:N` are packages (`package-N`, AMD's
`package-N-die-D`) or `psys`; sub-zones `intel-rapl:N:M` are `core`, `uncore` (inside the package:
never added to it) and `dram` (DIMMs, outside the package: reported separately, never added to
it). `psys` covers the package and is left out. `intel-rapl-mmio:*` duplicates of an MSR zone
are dropped. AMD uses the same tree, with packages and no DRAM. The root and the file reader are
injectable: tests build a fake tree and inject PermissionError (CI runs as root, so chmod does
not produce one).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from paradnn import host
from paradnn.measure.energy.base import REASONS, Reading, Unavailable

POWERCAP = Path("/sys/class/powercap")
ZONE_RE = re.compile(r"^(intel-rapl(?:-mmio)?):(\d+)(?::(\d+))?$")
# RAPL counters update about every 1 ms (kernel amd_energy docs); 100 updates give ≤1% edge error.
RAPL_UPDATE_S = 0.001
# Power no package zone exceeds; reads further apart than range/(2·this) may hide a wrap.
RAPL_MAX_POWER_W = 1000.0
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")


def _read(path: Path) -> str:
    return path.read_text().strip()


@dataclass(frozen=True)
class Zone:
    id: str  # cpu:package-0, dram:package-0
    kind: str  # cpu | dram
    name: str  # the zone's name file
    path: Path
    range_j: float | None  # max_energy_range_uj in J; None when unreadable


def absent_reason(
    cpuinfo: Path = Path("/proc/cpuinfo"), markers: tuple[str, ...] = CONTAINER_MARKERS
) -> str:
    """Why there is no RAPL tree: a VM guest, a container that masks it, or none at all."""
    if host.is_vm_guest(cpuinfo):
        return "vm_guest"
    if any(Path(m).exists() for m in markers):
        return "container_masked"
    return "no_rapl"


def discover(
    root: Path = POWERCAP,
    read: Callable[[Path], str] = _read,
    *,
    cpuinfo: Path = Path("/proc/cpuinfo"),
    markers: tuple[str, ...] = CONTAINER_MARKERS,
) -> tuple[list[Zone], dict[str, str]]:
    """The zones to measure, and what was left out and why (zone → note).

    Raises Unavailable when there is nothing to measure: no tree (`vm_guest`,
    `container_masked`, `no_rapl`) or every package unreadable (`permission_denied`)."""
    try:
        entries = sorted(p for p in root.iterdir() if ZONE_RE.match(p.name))
    except OSError:
        code = absent_reason(cpuinfo, markers)
        raise Unavailable(code, f"{REASONS[code]} ({root} does not exist)") from None
    # sysfs lists sub-zones both at the root and nested under their parent; collect both.
    for p in list(entries):
        with contextlib.suppress(OSError):
            entries += [c for c in p.iterdir() if ZONE_RE.match(c.name) and c not in entries]
    names: dict[str, str] = {}
    for p in entries:
        try:
            names[p.name] = read(p / "name")
        except OSError:
            continue
    skipped: dict[str, str] = {}
    zones: list[Zone] = []
    seen: set[tuple[str, str]] = set()
    denied: list[str] = []
    # MSR zones first, so an MMIO zone of the same name is the duplicate.
    for p in sorted(entries, key=lambda p: (ZONE_RE.match(p.name)[1] != "intel-rapl", p.name)):
        if p.name not in names:
            continue
        m = ZONE_RE.match(p.name)
        name = names[p.name]
        top = m[3] is None
        parent = names.get(f"{m[1]}:{m[2]}", f"package-{m[2]}")
        if name.startswith("package") and top:
            kind, label = "cpu", name
        elif name == "dram":
            kind, label = "dram", parent if not top else name
        elif name == "psys":
            skipped[p.name] = "psys covers the packages: never added to them"
            continue
        else:  # core, uncore: inside the package
            skipped[p.name] = f"{name} is inside {parent}: counted by the package"
            continue
        key = (kind, label)
        if key in seen:
            skipped[p.name] = f"duplicate of {kind}:{label}"
            continue
        try:
            float(read(p / "energy_uj"))
        except PermissionError:
            denied.append(p.name)
            skipped[p.name] = "permission_denied"
            continue
        except (OSError, ValueError):
            skipped[p.name] = "energy_uj unreadable"
            continue
        seen.add(key)
        try:
            range_j: float | None = float(read(p / "max_energy_range_uj")) / 1e6
        except (OSError, ValueError):
            range_j = None  # a wrap then invalidates the window rather than going negative
        zones.append(Zone(f"{kind}:{label}", kind, name, p, range_j))
    if not any(z.kind == "cpu" for z in zones):
        if denied:
            raise Unavailable("permission_denied", f"cannot read {root}/{denied[0]}/energy_uj")
        raise Unavailable("no_rapl", f"no readable package zone under {root}")
    return zones, skipped


class RaplSource:
    """One RAPL zone as an energy source: its raw µJ counter, in joules, with its wrap point."""

    method = "rapl_powercap"

    def __init__(
        self,
        zone: Zone,
        read: Callable[[Path], str] = _read,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.zone, self._read, self.clock = zone, read, clock
        self.id, self.kind = zone.id, zone.kind
        self.scope = "cpu_package" if zone.kind == "cpu" else "dram"
        self.has_counter, self.has_power = True, False
        self.smoothed = False
        self.update_period_s = RAPL_UPDATE_S
        self.min_window_s = 100 * RAPL_UPDATE_S

    @property
    def max_read_interval_s(self) -> float | None:
        """Reads further apart than this may hide a whole wrap."""
        if self.zone.range_j is None:
            return None
        return self.zone.range_j / (2 * RAPL_MAX_POWER_W)

    def read(self) -> Reading:
        try:
            uj = float(self._read(self.zone.path / "energy_uj"))
        except PermissionError:
            raise Unavailable("permission_denied") from None
        except (OSError, ValueError) as e:
            raise Unavailable("read_failed", f"{self.zone.path}/energy_uj: {e}") from None
        return Reading(self.clock(), counter_j=uj / 1e6, range_j=self.zone.range_j)

    def info(self) -> dict[str, object]:
        return {
            "zone": self.zone.name,
            "path": str(self.zone.path),
            "max_energy_range_j": self.zone.range_j,
            "counter_update_period_s": RAPL_UPDATE_S,
            "update_period_source": "kernel amd_energy documentation (1 ms); not probed",
        }

    def close(self) -> None:
        return None


def open_rapl(
    root: Path = POWERCAP,
    read: Callable[[Path], str] = _read,
    clock: Callable[[], float] = time.monotonic,
    **kw: object,
) -> tuple[list[RaplSource], dict[str, str]]:
    zones, skipped = discover(root, read, **kw)  # type: ignore[arg-type]
    return [RaplSource(z, read, clock) for z in zones], skipped
