"""Op micro-benchmarks (the accelerator study's Table 4: matmul and conv2d).

The table (`ops.table4`) is torch-free; the timing (`ops.bench`) imports torch, lazily, so that
planning an op sweep does not.
"""

from typing import Any

from paradnn.ops.table4 import (
    PAPER_FLOPS,
    PASSES,
    TABLE4,
    MicroBenchmark,
    default_threads_list,
    op_names,
    spec,
)

__all__ = [
    "PAPER_FLOPS",
    "PASSES",
    "TABLE4",
    "MicroBenchmark",
    "default_threads_list",
    "op_names",
    "run_ops",
    "spec",
    "thread_sweep",
]


def __getattr__(name: str) -> Any:
    if name in ("run_ops", "thread_sweep"):
        from paradnn.ops import bench

        return getattr(bench, name)
    raise AttributeError(name)
