"""The simulator's checks against measured runs pinned whole (sim.scaling_check,
sim.infeed_check): ladders that fit, that cannot (one size, a flat or falling ladder, one
process), rows without a ladder, host-fed runs serial and overlapped, input-bound or not, with
and without a measured share — every row, every error and the summary a user reads
(tests/pinned.py, tests/data/sim_pinned/checks.json)."""

from __future__ import annotations

import pandas as pd

import pinned
from paradnn.sim import infeed_check, scaling_check

LADDER = [
    {"bytes": 1_000, "time_s": 2e-5},
    {"bytes": 1_000_000, "time_s": 1e-3},
    {"bytes": 4_000_000, "time_s": 3.5e-3},
    {"bytes": 100, "time_s": None},
]


def _row(n=4, ladder=LADDER, **kw):
    r = {
        "family": "fc",
        "config_key": f"k{n}",
        "procs": n,
        "allreduce_ladder": ladder,
        "allreduce_bytes": 1_000_000,
        "allreduce_s": 1.2e-3,
        "compute_nosync_s": 0.01,
        "step_time_s": 0.0115,
        "base_step_time_s": 0.01,
        "examples_ratio": 1.0,
        "efficiency": 0.85,
    }
    return {**r, **kw}


def test_fit_link_pinned():
    got = {
        "fits": scaling_check.fit_link(LADDER, 4, 1_000_000),
        "all": scaling_check.fit_link(LADDER, 8, None),
        "steep-start": scaling_check.fit_link(
            [{"bytes": 10, "time_s": 1e-6}, {"bytes": 1e6, "time_s": 1e-2}], 2, None
        ),
        "one-size": scaling_check.fit_link(LADDER[:2], 4, 1_000_000),
        "one-proc": scaling_check.fit_link(LADDER, 1, None),
        "flat": scaling_check.fit_link(
            [{"bytes": 10, "time_s": 1e-3}, {"bytes": 1e6, "time_s": 1e-3}], 4, None
        ),
        "falling": scaling_check.fit_link(
            [{"bytes": 10, "time_s": 2e-3}, {"bytes": 1e6, "time_s": 1e-3}], 4, None
        ),
    }
    pinned.check("fit_link", got)


def _scaling(c: scaling_check.Check) -> dict:
    return {"check": c, "summary": c.summary()}


def test_scaling_check_pinned():
    got = {
        "one": _scaling(scaling_check.check([_row()])),
        "three": _scaling(
            scaling_check.check(
                [
                    _row(),
                    _row(2, allreduce_s=4e-4, efficiency=0.95, examples_ratio=1.0),
                    _row(8, allreduce_s=2e-3, efficiency=0.5, step_time_s=0.02),
                ]
            )
        ),
        "two-even": _scaling(scaling_check.check([_row(), _row(2, efficiency=0.2)])),
        "skips": _scaling(
            scaling_check.check([_row(ladder=None), _row(allreduce_s=None), _row(2)])
        ),
        "no-ladder": _scaling(scaling_check.check([_row(ladder="x")])),
        "unfit": _scaling(scaling_check.check([_row(ladder=LADDER[:2])])),
        "none": _scaling(scaling_check.check([])),
        "frame": _scaling(scaling_check.check_frame(pd.DataFrame([_row(), _row(2)]))),
        "frame-empty": _scaling(scaling_check.check_frame(pd.DataFrame())),
        "frame-none": _scaling(scaling_check.check_frame(None)),
        "exact": _scaling(
            scaling_check.check(
                [
                    _row(
                        2,
                        ladder=[{"bytes": 0, "time_s": 0.0}, {"bytes": 2_000_000, "time_s": 2e-3}],
                        allreduce_s=1e-3,
                        efficiency=1.0 / 1.1,
                    )
                ]
            )
        ),
    }
    pinned.check("scaling_check", got)


def _fed(**kw):
    r = {
        "family": "cnn",
        "config_key": "c",
        "data_source": "loader",
        "loader_workers": 2,
        "model_only_examples_per_s": 1000.0,
        "loader_examples_per_s": 800.0,
        "step_time_s": 0.04,
        "examples_per_s": 800.0,
        "infeed_share": 0.2,
        "input_bound": True,
    }
    return {**r, **kw}


def _infeed(c: infeed_check.InfeedCheck) -> dict:
    return {"check": c, "summary": c.summary()}


def test_infeed_check_pinned():
    got = {
        "overlapped": _infeed(infeed_check.check([_fed()])),
        "serial-host": _infeed(infeed_check.check([_fed(data_source="host")])),
        "serial-no-workers": _infeed(infeed_check.check([_fed(loader_workers=0)])),
        "fast-loader": _infeed(
            infeed_check.check([_fed(loader_examples_per_s=5000.0, input_bound=False)])
        ),
        "equal": _infeed(
            infeed_check.check([_fed(loader_examples_per_s=1000.0, input_bound=False)])
        ),
        "flag-wrong": _infeed(infeed_check.check([_fed(input_bound=False)])),
        "no-share": _infeed(infeed_check.check([_fed(infeed_share=None, input_bound=None)])),
        "mixed": _infeed(
            infeed_check.check(
                [
                    _fed(),
                    _fed(data_source="host", step_time_s=0.1, infeed_share=0.6),
                    _fed(loader_examples_per_s=2000.0, infeed_share=0.05, input_bound=False),
                    _fed(model_only_examples_per_s=None),
                    _fed(step_time_s=0),
                ]
            )
        ),
        "none": _infeed(infeed_check.check([_fed(loader_examples_per_s=None)])),
        "empty": _infeed(infeed_check.check([])),
    }
    pinned.check("infeed_check", got)
