"""Power and energy of a run's timed window: NVML for GPUs, RAPL for CPU packages and DRAM.

Torch-free: the device sync is passed in as a callable. See docs/energy.md.
"""

from paradnn.measure.energy.base import REASONS, Reading, Unavailable, reason_text
from paradnn.measure.energy.meter import (
    ENERGY_COLUMNS,
    EnergyMeter,
    energy_part,
    measure_idle,
    open_meter,
    with_idle,
)
from paradnn.measure.energy.sampler import MIN_PERIOD_S, Sampler

__all__ = [
    "ENERGY_COLUMNS",
    "MIN_PERIOD_S",
    "REASONS",
    "EnergyMeter",
    "Reading",
    "Sampler",
    "Unavailable",
    "energy_part",
    "measure_idle",
    "open_meter",
    "reason_text",
    "with_idle",
]
