"""A test-only family whose training step misbehaves on request: OOM, NaN, exceptions, and
(in sweep workers) a segfault, a hang or a SIGKILL. Workers find it through
PARADNN_FAMILIES=fault=faults with tests/ on the path."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paradnn.families.base import Built, Family
from paradnn.families.shapes import Gemm, Shape
from paradnn.validate import int_at_least, one_of

FAULTS = ("none", "oom", "nan", "crash", "unsupported", "build_oom", "segfault", "hang", "sigkill")
FAULTS += ("noisy",)  # judged noisy while a load file says so (_judge_by_load_file)
# "noisy": the path of a file holding how many more measurements are judged noisy (a count the
# fake load decrements; 0 or missing: the load has stopped and runs are judged good), whatever
# the machine really does, so a test of re-measuring is deterministic on a busy machine.
NOISY_LOAD_FILE = "PARADNN_FAULT_NOISY_FILE"
INJECTED = "injected load: other processes used 60% of the run's CPUs"


@dataclass(frozen=True)
class FaultConfig:
    fault: str = "none"
    width: int = 8
    batch: int = 4

    def __post_init__(self) -> None:
        one_of("fault.fault", self.fault, FAULTS)
        int_at_least("fault.width", self.width, 1)
        int_at_least("fault.batch", self.batch, 1)


class Faulty(Family):
    name = "fault"
    title = "Fault injection (tests only)"
    config_cls = FaultConfig
    paper_space = {"fault": FAULTS}

    def params(self, cfg: FaultConfig) -> int:
        return cfg.width * cfg.width + cfg.width

    def shapes(self, cfg: FaultConfig) -> list[Shape]:
        return [Gemm("lin", cfg.batch, cfg.width, cfg.width, input_grad=False)]

    def build(self, cfg: FaultConfig, device: Any, precision: str = "fp32") -> Built:
        import torch
        from torch import nn

        if cfg.fault == "build_oom" and str(device) != "meta":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

        class Broken(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = nn.Linear(cfg.width, cfg.width)
                self.calls = 0

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                self.calls += 1
                if x.device.type != "meta" and self.calls > 3:
                    if cfg.fault == "oom":
                        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8 GiB")
                    if cfg.fault == "crash":
                        raise RuntimeError("something broke inside the model")
                    if cfg.fault == "unsupported":
                        raise NotImplementedError("op not implemented for this dtype")
                    if cfg.fault == "segfault":
                        ctypes.string_at(0)  # a real SIGSEGV in this process
                    if cfg.fault == "hang":
                        time.sleep(3600)
                    if cfg.fault == "sigkill":  # what the kernel's OOM killer does
                        os.kill(os.getpid(), signal.SIGKILL)
                y = self.lin(x)
                return y * float("nan") if cfg.fault == "nan" else y

        module = Broken().to(device)
        if cfg.fault == "noisy" and str(device) != "meta":
            _judge_by_load_file()

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.randn(cfg.batch, cfg.width, device=device)
            return x, torch.randint(0, cfg.width, (cfg.batch,), device=device)

        return Built(module, make_batch, nn.functional.cross_entropy)


FAMILY = Faulty()


def _judge_by_load_file() -> None:
    """Replace the worker's quality verdict by one the test controls (see NOISY_LOAD_FILE):
    the real verdict's numbers, with quality and reasons from the load file."""
    import dataclasses

    from paradnn.measure import quality

    real = getattr(quality.judge, "real", quality.judge)

    def judge(**kw: Any) -> Any:
        v = real(**kw)
        path = os.environ[NOISY_LOAD_FILE]
        try:
            left = int(Path(path).read_text().strip() or 0)
        except FileNotFoundError:
            left = 0
        if left > 0:
            Path(path).write_text(str(left - 1))
            return dataclasses.replace(v, quality="noisy", reasons=[INJECTED])
        return dataclasses.replace(v, quality="good", reasons=[])

    judge.real = real
    quality.judge = judge  # quality_part (every backend's verdict) looks it up here
