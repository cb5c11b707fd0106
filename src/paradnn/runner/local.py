"""Run a list of specs one after another in this process, storing each result as it lands."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from paradnn.config import RunOptions
from paradnn.presets import RunSpec
from paradnn.records import RunRecord
from paradnn.runner.execute import execute
from paradnn.store import Store

Progress = Callable[[int, int, RunSpec, RunRecord | None], None]


def run_specs(
    specs: Sequence[RunSpec],
    options: RunOptions,
    store: Store,
    *,
    sweep: str | None = None,
    progress: Progress | None = None,
) -> list[RunRecord]:
    """Each result is committed before the next run starts, so an interruption (Ctrl-C, a crash)
    loses at most the run in flight."""
    done: list[RunRecord] = []
    for i, spec in enumerate(specs):
        if progress:
            progress(i, len(specs), spec, None)
        opts = dataclasses.replace(options, precision=spec.precision, optimizer=spec.optimizer)
        rec = execute(spec.family, dict(spec.config), opts, sweep=sweep)
        store.insert(rec)
        done.append(rec)
        if progress:
            progress(i + 1, len(specs), spec, rec)
    return done
