"""The backends a run can ask for, known from one registry (torch-free: no backend imported).

A backend is a module whose `BACKEND` class measures one run for the measuring core
(runner/core.py). The registry says, for each name, which module that is and the three facts
the torch-free side needs before any worker imports it: whether a user may ask for it by name,
which installed package's version makes its runs other measurements (jax: another jax is
another run key), and whether each run gets a fresh worker process. Add one in `_BUILT_IN`,
or without touching paradnn: `PARADNN_BACKENDS="name=package.module,other=mod"` (read at
each call, so a test or a plugin set before a run is seen by it and by its workers).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from paradnn.errors import ConfigError

ENV = "PARADNN_BACKENDS"


@dataclass(frozen=True)
class Backend:
    """One registered backend: its module and what is known of it without importing it."""

    name: str
    module: str
    selectable: bool = True  # a user may name it (`ranks` is chosen by procs > 1 instead)
    package: str | None = None  # an installed package whose version enters the run key
    fresh_worker: bool = True  # each run in a worker of its own (no state between runs)
    infeed: bool = False  # runs the host data infeed study (data_source host or pipeline)


_BUILT_IN = (
    # PyTorch in the worker (eager runs share a worker; compiled modes ask for a fresh one)
    Backend("torch", "paradnn.runner.execute", fresh_worker=False, infeed=True),
    # JAX/XLA (docs/jax.md): peak memory is the process's high-water mark, XLA's caches stay
    Backend("jax", "paradnn.runner.jax_execute", package="jax"),
    # N data-parallel torch ranks (docs/scaling.md): torch with procs > 1, never named
    Backend("ranks", "paradnn.runner.distributed", selectable=False, fresh_worker=False),
)


def registry() -> dict[str, Backend]:
    """Every backend: the built-in ones, then those PARADNN_BACKENDS adds (a built-in name
    there is ignored: a name never changes meaning). Extra backends run in a fresh worker."""
    return dict(_registry(os.environ.get(ENV, "")))


@functools.cache
def _registry(extra: str) -> tuple[tuple[str, Backend], ...]:
    found = {b.name: b for b in _BUILT_IN}
    for item in filter(None, extra.split(",")):
        name, _, module = (part.strip() for part in item.partition("="))
        if name and module:
            found.setdefault(name, Backend(name, module))
    return tuple(found.items())


def names() -> tuple[str, ...]:
    """The backends a user may ask for (`--backend`, `backends = [...]`), torch first."""
    return tuple(name for name, b in registry().items() if b.selectable)


def running(backend: str, procs: int) -> str:
    """The backend that runs a run of `backend` on `procs` processes: torch with procs > 1 is
    N ranks (`ranks`); any other backend is itself."""
    return "ranks" if backend == "torch" and procs > 1 else backend


def get(name: str) -> Backend:
    """The registered backend `name` (`ranks` too); an unknown name is one ConfigError."""
    found = registry()
    if not isinstance(name, str) or name not in found:
        raise ConfigError("backend", name, "must be one of " + ", ".join(names()))
    return found[name]


__all__ = ["ENV", "Backend", "get", "names", "registry", "running"]
