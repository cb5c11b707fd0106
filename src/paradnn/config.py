"""Run options: everything besides the model config that changes what a measurement means."""

from __future__ import annotations

from dataclasses import dataclass, field

from paradnn.measure.timer import TimingPolicy
from paradnn.validate import int_at_least, one_of

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
OPTIMIZERS = ("rmsprop", "sgd", "momentum")
MODES = ("eager",)


@dataclass(frozen=True)
class RunOptions:
    precision: str = "fp32"
    optimizer: str = "rmsprop"
    device: str = "auto"
    threads: int | None = None  # None: every core this process may use
    mode: str = "eager"
    seed: int = 0
    timing: TimingPolicy = field(default_factory=TimingPolicy)

    def __post_init__(self) -> None:
        one_of("precision", self.precision, PRECISIONS)
        one_of("optimizer", self.optimizer, OPTIMIZERS)
        one_of("mode", self.mode, MODES)
        if self.threads is not None:
            int_at_least("threads", self.threads, 1)
        int_at_least("seed", self.seed, 0)

    def key_fields(self) -> dict[str, object]:
        """What enters the run key (timing budgets do not: they change precision, not meaning)."""
        return {"precision": self.precision, "optimizer": self.optimizer, "mode": self.mode}
