"""The busy-machine policy of a sweep: when a noisy run is measured again.

Re-measuring a run while the load that made it noisy is still there measures the load again
(issue 45: a 6-run sweep tripled, 26 → 86 s, without one good run). So the supervisor looks at
the load first (the same sample `host.sample_load` takes before a sweep, over the worker's own
CPUs) and compares it with the load the noisy attempt saw:
* the load has dropped (the CPUs are quiet now, by the rule that flags a run noisy): measure it
  again now;
* it has not: defer the run to the end of the sweep (said once), where the load is looked at
  again, once, after `--remeasure-backoff` seconds if it is still busy; still busy then: the
  noisy attempt is kept, said so, and nothing loops.
Torch-free; the sampler is injected (tests play any load without one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paradnn import host
from paradnn.measure.quality import OTHERS_CPU_LIMIT, machine_busy

LOAD_WINDOW_S = 0.3  # one load sample: as long as the one before a sweep's first run

Sampler = Callable[[Sequence[int] | None], host.LoadSample]


def sample_now(cpus: Sequence[int] | None = None) -> host.LoadSample:
    """The load on `cpus` (this process's CPUs when None) over LOAD_WINDOW_S."""
    return host.sample_load(LOAD_WINDOW_S, cpus=cpus)


@dataclass(frozen=True)
class Decision:
    """What becomes of a noisy run: `now` (the load dropped), else deferred or kept."""

    now: bool
    words: str  # the load then and now, for the note that says why


def _pct(frac: float | None) -> str:
    return "unknown" if frac is None else f"{frac:.0%}"


def decide(attempt_frac: float | None, now: host.LoadSample) -> Decision:
    """Whether the load that made an attempt noisy has dropped: the CPUs are quiet now (other
    processes take at most OTHERS_CPU_LIMIT of them). A load that cannot be read now is judged
    by the attempt's: a run that was noisy without load (its samples alone were spread) is
    measured again, one that saw load is not, since nothing says the load has gone."""
    then = f"other processes took {_pct(attempt_frac)} of its CPUs then"
    frac = now.others_frac
    if frac is None:
        quiet_then = attempt_frac is None or attempt_frac <= OTHERS_CPU_LIMIT
        return Decision(quiet_then, f"{then}, now unknown: {now.reason}")
    top = ", ".join(f"{p.name} {p.cores:.1f}" for p in now.processes[:3])
    words = f"{then}, {_pct(frac)} now" + (f": {top}" if top else "")
    return Decision(not machine_busy(now), words)
