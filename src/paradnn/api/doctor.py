"""`paradnn doctor`: what this machine is and whether its numbers can be trusted (facts, then a
few seconds of pass/warn/fail checks). The work is `paradnn.measure.doctor`'s; this checks the
input first, so bad input is one line before torch is imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paradnn.api.returns import DoctorReport
from paradnn.config import check_device
from paradnn.validate import number_in

MAX_BUDGET_S = 600.0


def doctor(
    device: str = "auto",
    *,
    budget_s: float = 5.0,
    checks: bool = True,
    nvml: Any = None,
    progress: Callable[[str], None] | None = None,
) -> DoctorReport:
    """The doctor's report (docs/gpu.md lists its keys): software, CPU, precisions, GPUs,
    power, the datasheet entry, and the checks with their verdicts. `budget_s` is the seconds
    the checks aim for (1 to 600; the matmuls take at least 1 s per native precision)."""
    check_device(device)
    number_in("--budget", budget_s, 1.0, MAX_BUDGET_S)
    from paradnn.measure import doctor as doc

    facts = doc.doctor(device, budget_s=budget_s, checks=checks, nvml=nvml, progress=progress)
    return DoctorReport(**facts)
