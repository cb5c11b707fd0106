"""Op micro-benchmarks (the accelerator study's Table 4: matmul and conv2d)."""

from paradnn.ops.bench import (
    PAPER_FLOPS,
    PASSES,
    TABLE4,
    OpSpec,
    default_threads_list,
    op_names,
    run_ops,
    spec,
    thread_sweep,
)

__all__ = [
    "PAPER_FLOPS",
    "PASSES",
    "TABLE4",
    "OpSpec",
    "default_threads_list",
    "op_names",
    "run_ops",
    "spec",
    "thread_sweep",
]
