"""The roofline model and its parts pinned whole (sim.model, sim.interconnect, sim.traffic,
sim.systolic, sim.studies, sim.topologies): representative predictions — each family, GPU,
TPU, boards with and without overlap, fed and starved infeeds, a chip that fits and one that
does not — with every field and every op; the all-reduce on every topology kind; topologies
parsed and refused; systolic cycle counts on every dataflow; the MXU study
(tests/pinned.py, tests/data/sim_pinned/model.json)."""

from __future__ import annotations

from dataclasses import replace

import pinned
from paradnn.errors import ConfigError
from paradnn.families.lowering import Op
from paradnn.sim import chip as chips
from paradnn.sim import interconnect as ic
from paradnn.sim import model, studies, systolic, topologies
from paradnn.sim import traffic as mem
from paradnn.sim.systolic import Arrays

FC = {"layers": 2, "nodes": 300, "input": 100, "output": 10, "batch": 64}
BIG = {"layers": 4, "nodes": 4096, "input": 2048, "output": 1000, "batch": 1024}
CNN = {"blocks": 1, "filters": 16, "image": 16, "output": 3, "batch": 8}
RNN = {"layers": 1, "embed": 32, "length": 6, "vocab": 50, "batch": 8, "cell": "gru"}


def _try(f):
    try:
        return {"ok": f()}
    except ConfigError as e:
        return {"refused": str(e)}


def test_predictions_pinned():
    v100, tpu, a100 = chips.load("v100-sxm2"), chips.load("tpu-v3"), chips.load("a100-40gb-sxm")
    small = replace(v100, platform=replace(v100.platform, memory_bytes=1e6))
    unknown = replace(v100, platform=replace(v100.platform, memory_bytes=None))
    p = model.predict
    got = {
        "fc-v100-fp32": p("fc", FC, v100, "fp32"),
        "fc-v100-fp16-sgd": p("fc", FC, v100, "fp16", optimizer="sgd"),
        "fc-v100-fp16-pure": p("fc", FC, v100, "fp16", policy="pure"),
        "fc-big-v100-fp16": p("fc", BIG, v100, "fp16"),
        "fc-big-tpu": p("fc", BIG, tpu, "bf16"),
        "cnn-tpu": p("cnn", CNN, tpu, "bf16", optimizer="momentum"),
        "rnn-a100-tf32": p("rnn", RNN, a100, "tf32"),
        "fc-board-8": p("fc", FC, tpu, "bf16", chips=8),
        "fc-board-8-overlap": p("fc", FC, tpu, "bf16", chips=8, overlap=0.5),
        "fc-board-16-concurrent": p("fc", BIG, tpu, "bf16", chips=16, concurrent=True, overlap=1.0),
        "fc-ring-4": p("fc", FC, a100, "fp16", chips=4, topology=ic.Topology("ring", (4,))),
        "fc-fed": p("fc", FC, v100, "fp32", loader_examples_per_s=1e5),
        "fc-fed-serial": p(
            "fc", FC, v100, "fp32", loader_examples_per_s=1e5, loader_overlapped=False
        ),
        "fc-fed-fast": p("fc", BIG, v100, "fp32", loader_examples_per_s=1e12),
        "fc-small-memory": p("fc", BIG, small, "fp32"),
        "fc-unknown-memory": p("fc", FC, unknown, "fp32"),
        "refusals": [
            _try(lambda: p("fc", FC, v100, "fp32", chips=2, topology=ic.Topology("ring", (4,)))),
            _try(lambda: p("fc", FC, v100, "fp32", chips=0)),
            _try(lambda: p("fc", FC, v100, "fp32", chips=2)),
            _try(lambda: p("fc", FC, v100, "bf16")),
            _try(lambda: p("fc", FC, v100, "fp32", loader_examples_per_s=0)),
            _try(lambda: p("fc", FC, v100, "fp32", loader_examples_per_s=-1.0)),
        ],
        "input-step": [
            model.input_step(1.0, 10, 5.0),
            model.input_step(1.0, 10, 10.0),
            model.input_step(1.0, 10, 20.0),
            model.input_step(1.0, 10, 5.0, False),
            model.input_step(3.0, 10, 5.0, False),
        ],
        "op": [model.predict_op(Op("l", "fwd", 100, 200, 300, 2), c, "bf16") for c in (tpu, a100)],
        "scaling-tpu": model.scaling("fc", FC, tpu, "bf16", max_chips=16),
        "scaling-tpu-overlap": model.scaling(
            "cnn", CNN, tpu, "bf16", max_chips=8, overlap=0.5, optimizer="sgd", concurrent=True
        ),
        "scaling-one": model.scaling("fc", FC, tpu, "bf16", max_chips=1),
        "scaling-refused": _try(lambda: model.scaling("fc", FC, tpu, "bf16", max_chips=0)),
    }
    for k in [k for k, v in got.items() if isinstance(v, model.Prediction)]:
        p = got[k]
        got[k] = {
            "prediction": p,
            "row": p.row(),
            "ops": [[o.time_s, o.bound] for o in p.ops],
        }
    got["op-bounds"] = [
        [o.time_s, o.bound]
        for o in (
            model.OpPrediction("l", "fwd", 1, 1, 1, 1, 2, 8, 1.0, 1.0, None),
            model.OpPrediction("l", "fwd", 1, 1, 1, 1, 2, 8, 1.0, 2.0, None),
            model.OpPrediction("l", "fwd", 1, 1, 1, 1, 2, 8, 2.0, 1.0, None),
        )
    ]
    pinned.check("model", got)


def test_interconnect_pinned():
    link = ic.Link(1e11, 2e-6)
    topos = [
        ic.Topology("ring", (8,)),
        ic.Topology("biring", (8,)),
        ic.Topology("ring", (1,)),
        ic.Topology("torus2d", (4, 4)),
        ic.Topology("torus2d", (2, 8)),
        ic.Topology("torus2d", (1, 4)),
        ic.Topology("torus3d", (2, 2, 2)),
        ic.Topology("torus3d", (4, 4, 8)),
        ic.Topology("torus3d", (1, 1, 3)),
    ]
    got = {
        t.label(): {
            "chips": t.chips,
            "ar": ic.allreduce(1e8, t, link),
            "ar-time": ic.allreduce(1e8, t, link).time_s,
            "concurrent": ic.allreduce(1e8, t, link, concurrent=True),
            "bisection": [ic.bisection_links(t), ic.bisection_bandwidth(t, link)],
        }
        for t in topos
    }
    got["ring-bound"] = [ic.ring_bound_bytes(1e6, n) for n in (1, 2, 3, 8)]
    got["step"] = [
        ic.step_time(1.0, 0.5, ic.allreduce(1e9, topos[0], link), overlap=o)
        for o in (0.0, 0.3, 1.0)
    ]
    got["counts"] = [ic.chip_counts(n) for n in (1, 2, 3, 1024, 1000)]
    got["defaults"] = [
        ic.default_topology(k, n).label()
        for k in ic.KINDS
        for n in (1, 2, 6, 8, 12, 16, 64, 96, 1024)
    ]
    texts = [
        "ring:8",
        "biring:4",
        "torus2d:16x16",
        "torus3d:4x4x8",
        " ring:8 ",
        "ring:0",
        "ring",
        "mesh:4",
        "torus2d:4",
        "torus2d:4x4x4",
        "ring:4x",
        "ring:1234567890",
        "torus3d:2x2x2x2",
        8,
        "x" * 101,
        "ring:99999",
    ]
    got["parsed"] = [_try(lambda t=t: ic.parse_topology(t).label()) for t in texts]
    got["built"] = [
        _try(lambda k=k, d=d: ic.Topology(k, d).label())
        for k, d in (
            ("mesh", (2,)),
            ("ring", (2, 2)),
            ("torus2d", (0, 4)),
            ("ring", (2048,)),
            ("torus2d", (32, 32)),
            ("torus3d", (2, 2, 2)),
        )
    ]
    got["default-refused"] = _try(lambda: ic.default_topology("mesh", 4))
    got["more-refusals"] = [
        _try(lambda: ic.Topology("ring", (ic.MAX_CHIPS + 1,)).label()),
        _try(lambda: ic.Topology("ring", (ic.MAX_CHIPS,)).label()),
        _try(lambda: ic.allreduce(-1.0, topos[0], link)),
        _try(lambda: ic.allreduce(0.0, topos[0], link).time_s),
        _try(lambda: ic.step_time(1.0, 0.5, ic.allreduce(1e6, topos[0], link), overlap=-0.1)),
        _try(lambda: ic.step_time(1.0, 0.5, ic.allreduce(1e6, topos[0], link), overlap=1.1)),
    ]
    pinned.check("interconnect", got)


def test_traffic_and_systolic_pinned():
    ops = [
        Op("l", ph, m, n, k, c)
        for ph, m, n, k, c in (
            ("fwd", 1, 1, 1, 1),
            ("fwd", 64, 128, 256, 1),
            ("dgrad", 1000, 7, 129, 3),
            ("wgrad", 129, 257, 255, 2),
        )
    ]
    arrays = [Arrays(128, 128), Arrays(128, 128, 2, 2), Arrays(8, 32, 4, 1), Arrays(1, 1)]
    got = {
        "op-bytes": [[mem.op_bytes(o, s) for s in (1, 2, 4)] for o in ops],
        "roofline": [
            mem.roofline(f, b, 1e12, 1e11) for f, b in ((1e9, 1e6), (1e6, 1e9), (1e9, 1e8))
        ],
        "roofline-props": [
            [r.lower_s, r.upper_s, r.bound]
            for r in (
                mem.roofline(f, b, 1e12, 1e11) for f, b in ((1e9, 1e6), (1e6, 1e9), (1e9, 1e8))
            )
        ],
        "bad-optimizer": _try(lambda: mem.optimizer_bytes(10, "lion")),
        "attainable": [mem.attainable(i, 1e12, 1e11) for i in (0.1, 10.0, 1000.0)],
        "optimizer": [
            [mem.optimizer_bytes(1000, o, impl) for impl in ("fused", "foreach", "loop")]
            for o in ("sgd", "momentum", "rmsprop", "adam")
        ],
        "elementwise": [
            [mem.elementwise_bytes(100, k, s) for s in (2, 4)]
            for k in ("gemm", "conv2d", "recurrent", "attention", "pool")
        ],
        "cycles": {
            df: [
                [systolic.gemm_cycles(o.m, o.n, o.k, a.rows, a.cols, df) for a in arrays]
                + [systolic.array_cycles(o.m, o.n, o.k, a, df) for a in arrays]
                + [
                    systolic.mapping(o.m, o.n, o.k, df),
                    systolic.folds(o.m, o.n, o.k, 128, 64, df),
                    systolic.fold_cycles(o.m, o.n, o.k, 128, 64, df),
                    systolic.mapping_efficiency(o.m, o.n, o.k, 128, 64, df),
                ]
                for o in ops
            ]
            for df in systolic.DATAFLOWS
        },
        "utilization": [systolic.utilization(64, 128, 256, 500, a) for a in arrays],
        "arrays": [[a.units, a.macs, a.label()] for a in arrays],
        "bad": [_try(lambda: systolic.check_dataflow("rs")), _try(lambda: Arrays(0, 4))],
        "studies": studies.mxu_study(),
        "studies-os": studies.mxu_study(batch=2, dataflow="os"),
        "studies-bad": [
            _try(lambda: studies.mxu_study(batch=0)),
            _try(lambda: studies.mxu_study(dataflow="x")),
        ],
        "workloads": studies.workloads(4),
        "study-util": studies.utilization(ops, arrays[1], "is"),
        "resnet": topologies.resnet50_forward(2),
        "conv-gemm": [
            topologies.conv_gemm("c", 28, 30, 3, 5, 64, 128, 1),
            topologies.conv_gemm("c", 29, 29, 3, 3, 64, 128, 2, batch=3),
        ],
    }
    pinned.check("traffic_systolic", got)
