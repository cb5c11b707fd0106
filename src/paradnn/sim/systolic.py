"""Cycles of a GEMM on systolic arrays: SCALE-Sim v2's stall-free closed forms.

A GEMM ``x[M, K] @ w[K, N]`` is laid onto an R×C array by its dataflow (reference note
modelling.md §1.3): output-stationary keeps M×N on the array and streams K; weight-stationary
(the TPU MXU) keeps K×N and streams M; input-stationary keeps K×M and streams N. Each R×C tile of
the stationary operand is a *fold*, and a partial fold costs as much as a full one, which is
where a large array loses utilization on small layers. The formulas matched scalesim==2.0.2
exactly on every case in §1.4; the tests hold them to those numbers.

Several arrays (MXUs per core × cores) share a layer's folds round-robin: the busiest array
sets the time. That is optimistic (it ignores the bandwidth needed to feed many arrays), as the
note says of its own MXU-size table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from paradnn.errors import ConfigError
from paradnn.validate import int_at_least

Dataflow = Literal["os", "ws", "is"]
DATAFLOWS: tuple[str, ...] = ("os", "ws", "is")


@dataclass(frozen=True)
class Arrays:
    """``per_core`` systolic arrays of rows×cols in each of ``cores`` cores (TPU: MXUs)."""

    rows: int
    cols: int
    per_core: int = 1
    cores: int = 1

    def __post_init__(self) -> None:
        for name in ("rows", "cols", "per_core", "cores"):
            int_at_least(f"arrays.{name}", getattr(self, name), 1)

    @property
    def units(self) -> int:
        return self.per_core * self.cores

    @property
    def macs(self) -> int:
        """Multiply-accumulators in all arrays: one MAC per PE per cycle."""
        return self.rows * self.cols * self.units

    def label(self) -> str:
        return f"{self.units}×{self.rows}×{self.cols}"


def check_dataflow(dataflow: str) -> None:
    if dataflow not in DATAFLOWS:
        raise ConfigError("dataflow", dataflow, "must be one of " + ", ".join(DATAFLOWS))


def mapping(m: int, n: int, k: int, dataflow: str) -> tuple[int, int, int]:
    """(spatial rows Sr, spatial cols Sc, temporal T) of a GEMM under a dataflow (§1.3)."""
    check_dataflow(dataflow)
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    return k, m, n


def folds(m: int, n: int, k: int, rows: int, cols: int, dataflow: str) -> int:
    sr, sc, _ = mapping(m, n, k, dataflow)
    return math.ceil(sr / rows) * math.ceil(sc / cols)


def fold_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str) -> int:
    """Cycles of one fold: OS fills and drains (T + R + C − 2); WS and IS also preload the
    stationary operand (2R + C + T − 2)."""
    _, _, t = mapping(m, n, k, dataflow)
    if dataflow == "os":
        return t + rows + cols - 2
    return 2 * rows + cols + t - 2


def gemm_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str = "ws") -> int:
    """Stall-free cycles of one GEMM on one array: ``folds · fold_cycles − 1`` (§1.4)."""
    for name, v in (("m", m), ("n", n), ("k", k)):
        int_at_least(f"gemm.{name}", v, 1)
    return folds(m, n, k, rows, cols, dataflow) * fold_cycles(m, n, k, rows, cols, dataflow) - 1


def array_cycles(m: int, n: int, k: int, arrays: Arrays, dataflow: str = "ws") -> int:
    """Cycles of one GEMM on several arrays, its folds dealt round-robin (the busiest array's
    share of folds, each at full fold cost)."""
    f = folds(m, n, k, arrays.rows, arrays.cols, dataflow)
    per = fold_cycles(m, n, k, arrays.rows, arrays.cols, dataflow)
    return math.ceil(f / arrays.units) * per - 1


def utilization(m: int, n: int, k: int, cycles: int, arrays: Arrays) -> float:
    """SCALE-Sim's "Overall Util": useful MACs ÷ (cycles × all PEs)."""
    return m * n * k / (cycles * arrays.macs)


def mapping_efficiency(m: int, n: int, k: int, rows: int, cols: int, dataflow: str) -> float:
    """Used PEs ÷ all PEs, averaged over folds (SCALE-Sim's "Mapping Efficiency")."""
    sr, sc, _ = mapping(m, n, k, dataflow)
    fr, fc = math.ceil(sr / rows), math.ceil(sc / cols)
    return (sr * sc) / (fr * rows * fc * cols)
