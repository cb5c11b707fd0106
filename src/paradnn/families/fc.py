"""ParaDnn fully connected models: input → layers × (Linear(nodes) + ReLU) → Linear(output)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import (
    AUTOCAST,
    ActivationMemory,
    Built,
    Family,
    activation_itemsize,
    cross_entropy_saved_bytes,
    input_dtype,
)
from paradnn.families.shapes import Gemm, Shape
from paradnn.space import arithmetic, geometric
from paradnn.validate import limits


@dataclass(frozen=True)
class FCConfig:
    layers: int = 4
    nodes: int = 1024
    input: int = 2000
    output: int = 1000
    batch: int = 128

    # (low, high) per field, docs/limits.md: 4× the paper's deepest and widest model, 128×
    # its input and output sizes, 64× its largest batch; the product keeps every count of a
    # config (FLOPs per step ≤ 3.9e18) inside SQLite's 64-bit INTEGER.
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "layers": (1, 512),
        "nodes": (1, 32_768),
        "input": (1, 1 << 20),
        "output": (2, 1 << 20),
        "batch": (1, 1 << 20),
    }

    def __post_init__(self) -> None:
        limits("fc", self, self.LIMITS)


class FC(Family):
    name = "fc"
    title = "Fully connected (ParaDnn)"
    config_cls = FCConfig
    paper_space = {
        "layers": geometric(4, 128, 2),
        "nodes": geometric(32, 8192, 2),
        "input": arithmetic(2000, 8000, 2000),
        "output": arithmetic(200, 1000, 200),
        "batch": geometric(64, 16384, 2),
    }
    paper_fixed = {"layers": 32, "input": 2000, "output": 1000}

    def params(self, cfg: FCConfig) -> int:
        hidden = (cfg.layers - 1) * (cfg.nodes * cfg.nodes + cfg.nodes)
        return cfg.input * cfg.nodes + cfg.nodes + hidden + cfg.nodes * cfg.output + cfg.output

    def shapes(self, cfg: FCConfig) -> list[Shape]:
        b = cfg.batch
        out: list[Shape] = [Gemm("fc1", b, cfg.nodes, cfg.input, input_grad=False)]
        out += [Gemm(f"fc{i + 2}", b, cfg.nodes, cfg.nodes) for i in range(cfg.layers - 1)]
        out.append(Gemm("head", b, cfg.output, cfg.nodes))
        return out

    def _saved_bytes(self, cfg: FCConfig, precision: str, device_type: str) -> int:
        """Each Linear saves its input and each ReLU its output, which is the next Linear's input
        (one tensor); fc1's input is the batch. Under autocast a Linear also saves its 16-bit
        weight copy when its input needs a gradient, i.e. all but fc1. Same on CPU and CUDA."""
        b, size = cfg.batch, activation_itemsize(precision)
        saved = b * cfg.input * size + cfg.layers * b * cfg.nodes * size
        saved += b * 8 + cross_entropy_saved_bytes(b, cfg.output)  # int64 targets
        if precision in AUTOCAST:
            saved += 2 * ((cfg.layers - 1) * cfg.nodes**2 + cfg.output * cfg.nodes)
        return saved

    def _cast_bytes(self, cfg: FCConfig, precision: str, device_type: str) -> int:
        """fc1's weight copy (its input is data, so backward never needs it) and every bias."""
        if precision not in AUTOCAST:
            return 0
        return 2 * (cfg.nodes * cfg.input + cfg.layers * cfg.nodes + cfg.output)

    def activation_memory(
        self, cfg: FCConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        """The floor is all of `saved`: each tensor counted is one a derivative formula of these
        ops requires."""
        saved = self._saved_bytes(cfg, precision, device_type)
        return ActivationMemory(
            saved=saved,
            floor=saved,
            casts=self._cast_bytes(cfg, precision, device_type),
        )

    def build(self, cfg: FCConfig, device: Any, precision: str = "fp32") -> Built:
        import torch
        from torch import nn

        mods: list[nn.Module] = []
        width = cfg.input
        for _ in range(cfg.layers):
            mods += [nn.Linear(width, cfg.nodes), nn.ReLU()]
            width = cfg.nodes
        mods.append(nn.Linear(width, cfg.output))
        module = nn.Sequential(*mods).to(device)
        dtype = input_dtype(precision)

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.empty(cfg.batch, cfg.input, device=device, dtype=dtype).uniform_(-0.5, 0.5)
            y = torch.randint(0, cfg.output, (cfg.batch,), device=device)
            return x, y

        return Built(module, make_batch, nn.functional.cross_entropy)

    def build_jax(self, cfg: Any, precision: str = "fp32") -> Any:
        """The JAX model (docs/jax.md): the same layers, parameters and FLOP-carrying shapes."""
        from paradnn.families import _jax_nets

        return _jax_nets.fc(cfg, precision)


FAMILY = FC()
