"""Design studies the seed argues from: how big should a matrix unit be?

Seed 001: four 128×128 MXUs reach 37–48 % on convolutional models, 1.6× one 256×256 MXU
(22–30 %), at about the same area; sixteen 64×64 reach 38–52 % but cost more area (their wires,
not their multipliers, set it). `mxu_study` recomputes the compute-only side of that argument
with the systolic closed forms, every design holding 65,536 MACs. Area and wiring are outside a
cycle model, and feeding 16 arrays would need bandwidth this model does not charge.
"""

from __future__ import annotations

from typing import Any

from paradnn import families
from paradnn.families.lowering import Op, lower_all
from paradnn.sim.systolic import Arrays, array_cycles, check_dataflow
from paradnn.sim.topologies import resnet50_forward
from paradnn.validate import int_at_least

MAX_BATCH = 1 << 16  # `mxu-study --batch`: 64× the largest batch the papers use

DESIGNS = (Arrays(256, 256, 1), Arrays(128, 128, 4), Arrays(64, 64, 16))


def utilization(ops: list[Op], arrays: Arrays, dataflow: str = "ws") -> float:
    """Useful MACs ÷ (cycles × PEs) over a list of GEMMs run one after another."""
    cycles = sum(array_cycles(o.m, o.n, o.k, arrays, dataflow) * o.count for o in ops)
    return sum(o.macs for o in ops) / (cycles * arrays.macs)


def workloads(batch: int) -> list[tuple[str, list[Op]]]:
    """ResNet-50 as SCALE-Sim lays it out (forward, no padding) and ParaDnn's CNNs at the
    paper's fixed values (6 blocks, 300 px, 1000 classes), 32 and 64 filters, whole training
    step (forward, data- and weight-gradients)."""
    cnn = families.get("cnn")
    out: list[tuple[str, list[Op]]] = [
        (f"ResNet-50 fwd (SCALE-Sim), batch {batch}", resnet50_forward(batch))
    ]
    for block in ("residual", "bottleneck"):
        for filters in (32, 64):
            cfg = cnn.config(dict(cnn.paper_fixed, filters=filters, block=block, batch=batch))
            name = f"ParaDnn CNN {block} filters={filters}, train step, batch {batch}"
            out.append((name, lower_all(cnn.shapes(cfg))))
    return out


def mxu_study(
    batch: int = 8, dataflow: str = "ws", designs: tuple[Arrays, ...] = DESIGNS
) -> list[dict[str, Any]]:
    """One row per workload: utilization of each design and the ratio of the second to the
    first (the seed's 1.6×). Predictions of a cycle model, labelled so."""
    int_at_least("--batch", batch, 1, MAX_BATCH)
    check_dataflow(dataflow)
    rows = []
    for name, ops in workloads(batch):
        row: dict[str, Any] = {"kind": "prediction", "workload": name, "dataflow": dataflow}
        utils = [utilization(ops, d, dataflow) for d in designs]
        for d, u in zip(designs, utils, strict=True):
            row[d.label()] = u
        row[f"{designs[1].label()} / {designs[0].label()}"] = utils[1] / utils[0]
        rows.append(row)
    return rows
