"""The simulator held to measured runs, pinned whole (sim.fidelity): which runs are predicted
(status, noise, device, precision, analytic family, the chosen attempt), every row of both
models, the leave-one-out calibration, the per-family summary, the host profile each run is
predicted with and the line naming it (given, per device, the chip file's, stored for the host,
damaged, defaults), and the refusals (tests/pinned.py, tests/data/sim_pinned/fidelity.json)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pandas as pd

import pinned
from paradnn.errors import ConfigError
from paradnn.sim import chip as chips
from paradnn.sim import fidelity
from paradnn.sim import hostprofile as hp

CPU = "Pinned CPU 3"
AT = "2026-11-25T09:00:00"
CEILINGS = [
    {"device": "cpu", "device_name": CPU, "kind": "matmul", "precision": "fp32", "value": 2e11,
     "measured_at": AT},
    {"device": "cpu", "device_name": CPU, "kind": "copy", "precision": None, "value": 3e10,
     "measured_at": AT},
]  # fmt: skip
V100 = "Tesla V100-SXM2-16GB"
PROFILE = {"id": 7, "hostname": "host-a", "device_type": "cuda", "status": "ok",
           "measured_at": AT, "forward_op_s": 9e-6, "autograd_node_s": 8e-6,
           "optimizer_step_s": 3e-5, "sync_s": 1e-5, "optimizer_loop_s": 4e-6,
           "optimizer_foreach_s": 1e-6, "kernel_launch_s": 3e-6}  # fmt: skip


def _run(i, family="fc", config=None, **kw):
    cfg = config or {"layers": 1 + i % 2, "nodes": 64 * (1 + i), "batch": 32}
    r = {"run_key": f"k{i}", "attempt": 1, "id": i, "family": family, "config": cfg,
         "precision": "fp32", "optimizer": "sgd", "status": "ok", "noisy": False,
         "step_time_s": 1e-3 * (1 + i), "device_name": V100, "hostname": "host-a"}  # fmt: skip
    return {**r, **kw}


def _runs():
    return pd.DataFrame(
        [
            _run(0), _run(1), _run(2, optimizer="momentum"),
            _run(3, family="cnn", config={"filters": 4, "batch": 2, "image": 16, "blocks": 1}),
            _run(4, family="cnn", config={"filters": 8, "batch": 2, "image": 16, "blocks": 1}),
            _run(5, device_name=CPU, hostname="host-b"),
            _run(6, device_name=CPU, hostname="host-b", config='{"layers": 2, "nodes": 8}'),
            _run(7, status="oom"), _run(8, noisy=True), _run(9, step_time_s=None),
            _run(10, precision="bf16"), _run(11, precision="int8"),
            _run(12, device_name="Unknown GPU 9"), _run(13, family="resnet50", config={"batch": 2}),
            _run(0, attempt=2, id=20, step_time_s=5e-3, noisy=True),
            _run(14, hostname=None),
        ]
    )  # fmt: skip


def _try(f):
    try:
        return {"ok": f()}
    except ConfigError as e:
        return {"refused": str(e)}


def test_predicted_vs_measured_pinned():
    runs = _runs()
    cpu = chips.from_ceilings(CEILINGS, CPU)
    v100 = chips.load("v100-sxm2")
    devices = fidelity.device_chips(runs, CEILINGS)
    damaged = {**PROFILE, "id": 8, "measured_at": "2026-12-01", "sync_s": -1.0}
    custom = replace(hp.default("cuda"), forward_op_s=2e-5, detail={"origin": "my file"})
    filed = replace(v100, host=replace(hp.default("cuda"), forward_op_s=3e-5))
    p = fidelity.predicted_vs_measured
    got = {
        "devices": sorted(devices),
        "step": p(runs, devices),
        "roofline": p(runs, devices, "roofline"),
        "noisy-in": p(runs, devices, include_noisy=True),
        "one-chip": p(runs, v100),
        "by-name": p(runs, "v100-sxm2", "roofline"),
        "stored": p(runs, devices, host_profiles=[PROFILE]),
        "damaged": p(runs, devices, host_profiles=[PROFILE, damaged]),
        "cpu-profile": p(runs, devices, host_profiles=[{**PROFILE, "device_type": "cpu"}]),
        "defaults": p(runs, devices, host="defaults", host_profiles=[PROFILE]),
        "given": p(runs, devices, host=custom),
        "per-device": p(runs, devices, host={V100: custom}),
        "chip-file": p(runs, {V100: filed, CPU: cpu}),
        "empty": p(pd.DataFrame(), v100),
        "bad-model": _try(lambda: p(runs, v100, "exact")),
    }
    got["summary"] = fidelity.summary(got["step"])
    got["summary-empty"] = fidelity.summary(got["empty"])
    got["host-for"] = [
        fidelity.host_for([], "host-a", "cuda"),
        fidelity.host_for([PROFILE], "", "cuda"),
        fidelity.host_for([PROFILE], "host-a", "cpu"),
        fidelity.host_for([PROFILE, {**PROFILE, "id": 9, "device_type": "cpu"}], "host-a", "cpu"),
        fidelity.host_for([{**PROFILE, "status": "failed"}], "host-a", "cuda"),
    ]
    pinned.check("fidelity", got)


def test_validate_pinned():
    runs = _runs()
    v = fidelity.validate_frame
    got = {
        "devices": v(runs, CEILINGS),
        "platform": v(runs, [], "v100-sxm2", model="roofline"),
        "empty": _try(lambda: v(pd.DataFrame(), [], db="a.db")),
        "empty-no-db": _try(lambda: v(pd.DataFrame(), [])),
        "undescribed": _try(lambda: v(runs[runs["device_name"] == "Unknown GPU 9"], [], db="b.db")),
        "data": fidelity.validate_data(
            SimpleNamespace(runs=runs, ceilings=pd.DataFrame(CEILINGS),
                            host_profile=pd.DataFrame([PROFILE]))
        ),
        "data-none": [
            fidelity.validate_data(SimpleNamespace(runs=None, ceilings=None)),
            fidelity.validate_data(SimpleNamespace(runs=pd.DataFrame(), ceilings=None)),
            fidelity.validate_data(
                SimpleNamespace(runs=runs[runs["device_name"] == "Unknown GPU 9"], ceilings=None)
            ),
        ],
        "records": [fidelity._records(None), fidelity._records(pd.DataFrame()),
                    fidelity._records(pd.DataFrame([{"a": 1.0, "b": None}, {"a": None, "b": 2}]))],
    }  # fmt: skip
    pinned.check("fidelity_validate", got)
