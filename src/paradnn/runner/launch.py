"""What each rank process of a data-parallel run starts from (docs/scaling.md), whole: the
run's description, the batch one rank trains, where the ranks sit and where they meet. The
worker writes it as the ranks' launch file; a rank reads it before it imports torch (its cores
and threads are set first), so this module is torch-free and imports only the run's
description."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from paradnn.config import RunSpec


@dataclass(frozen=True)
class RankPlan:
    """Where the ranks sit: the collectives' backend (gloo, nccl), the device type, torch
    threads per rank, and each rank's cores (CPU; None: not pinned)."""

    backend: str
    device_type: str
    threads: int  # torch threads per rank
    cpus: list[list[int]] | None  # per rank, its cores (CPU); None: not pinned


@dataclass(frozen=True)
class Launch:
    """One data-parallel run as its ranks start it: the run (`procs` ranks of it), one rank's
    batch (the config's under weak scaling, its share under strong), the plan, and the
    rendezvous (tcp://127.0.0.1:PORT from the worker, env:// under torchrun)."""

    run: RunSpec
    rank_batch: int | None
    plan: RankPlan
    init_method: str = "env://"

    @property
    def world(self) -> int:
        return self.run.options.procs

    def to_json(self) -> str:
        return json.dumps(
            {
                "run": self.run.as_dict(),
                "rank_batch": self.rank_batch,
                "plan": dataclasses.asdict(self.plan),
                "init_method": self.init_method,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Launch:
        data = json.loads(text)
        run = RunSpec.from_dict(data["run"])
        return cls(run, data["rank_batch"], RankPlan(**data["plan"]), data["init_method"])


__all__ = ["Launch", "RankPlan"]
