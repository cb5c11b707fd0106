"""The accelerator study's Table 4 ops, torch-free: shapes, FLOPs, names and thread lists, so a
sweep of ops can be planned and validated by the supervisor without torch (ops/bench.py times
them; its docstring has the paper's table and the FLOP accounting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paradnn import host
from paradnn.errors import ConfigError

PASSES = ("fwd", "fwd+bwd")
BWD_FACTOR = 3  # fwd + dgrad + wgrad, each as many FLOPs as the forward

UTILIZATION_NULLS = {
    "utilization_datasheet": "not computed by ops.run_ops: filled from the platform DB",
    "utilization_measured": "not computed by ops.run_ops: filled from the measured ceilings",
}


@dataclass(frozen=True)
class MicroBenchmark:
    """One op micro-benchmark of Table 4: the op, its name and shapes."""

    op: str  # matmul | conv2d
    name: str
    n: int = 0  # matmul: N×N by N×N
    batch: int = 0  # conv2d, paper's F(batch, height, width, in_channels)
    height: int = 0
    width: int = 0
    in_channels: int = 0
    out_channels: int = 0  # paper's K(kernel, kernel, in_channels, out_channels)
    kernel: int = 0
    stride: int = 1

    @property
    def out_hw(self) -> tuple[int, int]:
        """Output height and width with valid padding."""
        return (
            (self.height - self.kernel) // self.stride + 1,
            (self.width - self.kernel) // self.stride + 1,
        )

    def flops(self, pass_: str = "fwd") -> int:
        if pass_ not in PASSES:
            raise ConfigError("pass", pass_, "must be fwd or fwd+bwd")
        if self.op == "matmul":
            fwd = 2 * self.n**3
        else:
            ho, wo = self.out_hw
            fwd = 2 * self.batch * ho * wo * self.out_channels * self.in_channels * self.kernel**2
        return fwd * (BWD_FACTOR if pass_ == "fwd+bwd" else 1)

    def shape(self) -> dict[str, Any]:
        if self.op == "matmul":
            return {"a": [self.n, self.n], "b": [self.n, self.n]}
        ho, wo = self.out_hw
        return {
            "input_nhwc": [self.batch, self.height, self.width, self.in_channels],
            "kernel_hwio": [self.kernel, self.kernel, self.in_channels, self.out_channels],
            "stride": [self.stride, self.stride],
            "padding": "valid",
            "output_nhwc": [self.batch, ho, wo, self.out_channels],
            "layout": "NCHW (torch default, contiguous)",
        }

    def scaled(self, scale: float) -> MicroBenchmark:
        if scale == 1.0:
            return self
        if not scale > 0:
            raise ConfigError("scale", scale, "must be > 0")

        def s(d: int, floor: int = 1) -> int:
            return max(floor, round(d * scale))

        name = f"{self.name}@{scale:g}"
        if self.op == "matmul":
            return MicroBenchmark("matmul", name, n=s(self.n))
        return MicroBenchmark(
            "conv2d",
            name,
            batch=s(self.batch),
            height=s(self.height, self.kernel),
            width=s(self.width, self.kernel),
            in_channels=s(self.in_channels),
            out_channels=s(self.out_channels),
            kernel=self.kernel,
            stride=self.stride,
        )


TABLE4: dict[str, MicroBenchmark] = {
    s.name: s
    for s in (
        MicroBenchmark("matmul", "matmul-2048", n=2048),
        MicroBenchmark("matmul", "matmul-4096", n=4096),
        MicroBenchmark("matmul", "matmul-8192", n=8192),
        MicroBenchmark(
            "conv2d",
            "conv2d-I",
            batch=256,
            height=224,
            width=224,
            in_channels=3,
            out_channels=64,
            kernel=7,
            stride=2,
        ),
        MicroBenchmark(
            "conv2d",
            "conv2d-II",
            batch=128,
            height=112,
            width=112,
            in_channels=64,
            out_channels=128,
            kernel=3,
            stride=1,
        ),
        MicroBenchmark(
            "conv2d",
            "conv2d-III",
            batch=256,
            height=56,
            width=56,
            in_channels=128,
            out_channels=256,
            kernel=3,
            stride=1,
        ),
    )
}

# The FLOPs row of Table 4, as printed (three significant digits).
PAPER_FLOPS = {
    "matmul-2048": 1.72e10,
    "matmul-4096": 1.37e11,
    "matmul-8192": 1.10e12,
    "conv2d-I": 5.72e10,
    "conv2d-II": 2.28e11,
    "conv2d-III": 4.40e11,
}


def op_names() -> tuple[str, ...]:
    return tuple(TABLE4)


def spec(name: str, scale: float = 1.0) -> MicroBenchmark:
    if name not in TABLE4:
        raise ConfigError("op", name, f"must be one of {', '.join(TABLE4)}")
    return TABLE4[name].scaled(scale)


def default_threads_list(cores: int | None = None) -> list[int]:
    """1, 2, 4, … up to the core count, plus the core count itself (the study's Figs. 5–6)."""
    if cores is None:
        cores = len(host.usable_cpus())
    out, t = set(), 1
    while t <= cores:
        out.add(t)
        t *= 2
    out.add(cores)
    return sorted(out)
