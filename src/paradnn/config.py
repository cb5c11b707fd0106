"""Run options: everything besides the model config that changes what a measurement means."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from paradnn.errors import ConfigError
from paradnn.measure.timer import TimingPolicy
from paradnn.precisions import PRECISIONS, precision_flags
from paradnn.validate import SEED_MAX, int_at_least, number_in, one_of

__all__ = ["MODES", "OPTIMIZERS", "PRECISIONS", "RunOptions", "check_device", "precision_flags"]

OPTIMIZERS = ("rmsprop", "sgd", "momentum")
MODES = ("eager",)
MAX_THREADS = 4096  # more than the cores of any host torch runs on (docs/limits.md)
MAX_ENERGY_IDLE_S = 600.0  # ten minutes of idle baseline is already far past what it needs


def check_device(spec: str) -> None:
    """Syntax only (torch-free): whether the device exists is the worker's to find out."""
    if not isinstance(spec, str) or not re.fullmatch(r"auto|cpu|cuda(:[0-9]{1,4})?", spec):
        raise ConfigError("device", spec, "must be auto, cpu, cuda or cuda:N")


@dataclass(frozen=True)
class RunOptions:
    precision: str = "fp32"
    optimizer: str = "rmsprop"
    device: str = "auto"
    threads: int | None = None  # None: every core this process may use
    mode: str = "eager"
    seed: int = 0
    profile: bool = False  # also record a per-op profile of one extra step (not in the key)
    energy: bool = False  # measure energy over the timed window (docs/energy.md)
    energy_period_s: float = 0.05  # power sampling period; NVML polled faster returns junk
    energy_idle_s: float = 2.0  # idle baseline before a sweep (0: none); reported, not subtracted
    allow_emulated: bool = False  # run a low precision the device lacks, labelled emulated
    timing: TimingPolicy = field(default_factory=TimingPolicy)

    def __post_init__(self) -> None:
        one_of("precision", self.precision, PRECISIONS)
        one_of("optimizer", self.optimizer, OPTIMIZERS)
        one_of("mode", self.mode, MODES)
        check_device(self.device)
        if self.threads is not None:
            int_at_least("threads", self.threads, 1, MAX_THREADS)
        int_at_least("seed", self.seed, 0, SEED_MAX)
        for name in ("energy", "allow_emulated", "profile"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "must be true or false")
        ok = isinstance(self.energy_period_s, (int, float)) and not isinstance(
            self.energy_period_s, bool
        )
        if not ok or not 0.05 <= self.energy_period_s <= 10:
            raise ConfigError(
                "energy_period",
                self.energy_period_s,
                "must be seconds in [0.05, 10] (NVML polled faster than 50 ms returns zeros)",
            )
        number_in("energy_idle", self.energy_idle_s, 0.0, MAX_ENERGY_IDLE_S)
        if not isinstance(self.timing, TimingPolicy):
            raise ConfigError("timing", self.timing, "must be a TimingPolicy")

    def key_fields(self) -> dict[str, object]:
        """What enters the run key (timing budgets do not: they change precision, not meaning).

        An energy run is its own measurement (a longer window, a sampler thread beside the
        steps), so `energy` enters the key, only when on: keys of other runs are unchanged."""
        key: dict[str, object] = {
            "precision": self.precision,
            "optimizer": self.optimizer,
            "mode": self.mode,
        }
        if self.energy:
            key["energy"] = True
        return key
