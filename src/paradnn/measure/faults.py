"""What a failure was: `oom`, `unsupported` or `crashed`, from the exception alone.

One home for the classification every measurement shares (training runs, ceilings, ops): an
allocation failure is `oom`, a kernel that does not exist for the dtype or ISA (oneDNN's "could
not create a primitive", ATen's "not implemented for") is `unsupported`, anything else `crashed`.
"""

from __future__ import annotations

import torch

from paradnn.records import Status

UNSUPPORTED_PATTERNS = ("not implemented for", "could not create a primitive", "not supported")
OOM_PATTERNS = (
    "out of memory",
    "can't allocate memory",
    "cublas_status_alloc_failed",
    "failed to allocate",
)


def classify(exc: BaseException) -> Status:
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return Status.OOM
    msg = str(exc).lower()
    if any(p in msg for p in OOM_PATTERNS):
        return Status.OOM
    if isinstance(exc, NotImplementedError) or any(p in msg for p in UNSUPPORTED_PATTERNS):
        return Status.UNSUPPORTED
    return Status.CRASHED


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:500]
