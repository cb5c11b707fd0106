"""`paradnn doctor`: what this machine is and whether its numbers can be trusted (facts, then a
few seconds of pass/warn/fail checks, among them what it measures against the ceilings
`calibrate` stored). The work is `paradnn.measure.doctor`'s; this checks the input and reads
the database first, so bad input is one line before torch is imported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from paradnn.api.returns import DoctorReport
from paradnn.config import check_device
from paradnn.store import DEFAULT_DB
from paradnn.validate import number_in

MIN_BUDGET_S, MAX_BUDGET_S = 1.0, 600.0


def doctor(
    device: str = "auto",
    *,
    budget_s: float | None = None,
    checks: bool = True,
    nvml: Any = None,
    progress: Callable[[str], None] | None = None,
    db: str | None = None,
    startup_s: float = 0.0,
) -> DoctorReport:
    """The doctor's report (docs/gpu.md lists its keys): software, CPU, precisions, GPUs,
    power, the datasheet entry, and the checks with their verdicts.

    `budget_s`: seconds for the whole report (1 to 600; default 5 on a CPU, 10 on a GPU),
    counted from `startup_s` seconds before the call (the CLI passes its own start-up); each
    check is planned from what is left, and one that would not fit is skipped, saying so.
    `db`: the database whose ceilings the measured matmuls and copy are compared with, read
    through `side_table` before any measuring (a database that cannot be read is refused
    then); None: `paradnn.db` when it exists here, else no comparison (the check says why)."""
    import time

    started = time.monotonic() - startup_s  # before torch's import: it is part of the budget
    check_device(device)
    if budget_s is not None:
        number_in("--budget", budget_s, MIN_BUDGET_S, MAX_BUDGET_S)
    number_in("startup_s", startup_s, 0.0, 86_400.0)
    # a database named is read (or refused) even without checks: bad input is never ignored
    stored, where = _stored_ceilings(db) if checks or db is not None else (None, None)
    from paradnn.measure import doctor as doc

    facts = doc.doctor(
        device,
        budget_s=budget_s,
        checks=checks,
        nvml=nvml,
        progress=progress,
        stored=stored,
        stored_where=where,
        started=started,
    )
    return DoctorReport(**facts)


def _stored_ceilings(db: str | None) -> tuple[list[dict[str, Any]] | None, str]:
    """(the `ceilings` rows of `db`, the database's name); (None, why) without one. An
    explicit `db` must be readable (StoreError, one line, exit 2); the default is optional."""
    from paradnn.api.runs import side_table

    if db is None:
        if not Path(DEFAULT_DB).is_file():
            return None, f"no --db, and no {DEFAULT_DB} here (`paradnn calibrate` stores them)"
        db = DEFAULT_DB
    return side_table("ceilings", db).as_dict(), db
