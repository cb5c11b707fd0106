"""The simulator's tables pinned as a person reads them (cli/sim_tables.py): the wide table at
several terminal widths (columns dropped in their order, a shared config, one reason said once,
one platform named in the title), the breakdown of one step and of one config on several
platforms, each header and cell (tests/pinned.py, tests/data/sim_pinned/sim_tables.json)."""

from __future__ import annotations

import json

from rich.console import Console

import pinned
from paradnn.cli import sim_tables as T
from paradnn.sim import chip as chips
from paradnn.sim import model
from paradnn.sim import steptime as st

FC = {"layers": 2, "nodes": 300, "input": 100, "output": 10, "batch": 64}


def _text(table, width: int = 160) -> str:
    con = Console(width=width, record=True, color_system=None, force_terminal=False)
    con.print(table)
    return con.export_text()


def _step_rows():
    v100, tpu = chips.load("v100-sxm2"), chips.load("tpu-v2")
    return [
        st.predict_step("fc", FC, v100, "fp16").row(),
        st.predict_step("fc", {**FC, "nodes": 512}, v100, "fp16", chips=1).row(),
        st.predict_step("cnn", {"filters": 8, "batch": 4}, tpu, "bf16", chips=4).row(),
    ]


def test_tables_pinned():
    v100, tpu = chips.load("v100-sxm2"), chips.load("tpu-v3")
    preds = [model.predict("fc", {**FC, "batch": b}, v100, "fp32").row() for b in (16, 64)]
    board = [model.predict("fc", FC, tpu, "bf16", chips=n).row() for n in (1, 8)]
    steps = _step_rows()
    narrow = [{k: v for k, v in r.items() if k not in T.STEP_DETAIL} for r in steps]
    reasons = [
        {**preds[0], "predicted_step_s": None, "reason": "no peak"},
        {**preds[1], "predicted_step_s": None, "reason": "no peak"},
    ]
    two_reasons = [{**reasons[0], "reason": "a"}, {**reasons[1], "reason": "b"}]
    jsoned = [{**r, "config": json.dumps(r["config"])} for r in preds]
    errors = [
        {
            "op": "matmul-2048",
            "split": "fit",
            "rows": 3,
            "mdape": 0.0123,
            "mape": 0.5,
            "ape": 0.25,
            "band": 0.1,
            "utilization": 0.456,
            "pass": True,
            "x×y": 0.5,
            "a×b/c": 0.5,
            "measured_s": 1.5e-3,
            "predicted_s": None,
            "bus_bytes_per_s": 2.5e10,
            "examples_per_s": 1234.5,
            "kind": "prediction",
            "config": "not json",
            "count": 3,
        }
    ]
    got = {}
    for w in (None, 250, 120, 80, 50):
        got[f"steps-{w}"] = _text(T.sim_table(narrow, "predicted", width=w), 260)
        got[f"preds-{w}"] = _text(T.sim_table(preds + board, width=w), 260)
    got["one-platform-title"] = _text(T.sim_table(preds, "fc on v100-sxm2"))
    got["one-platform-no-title"] = _text(T.sim_table(preds))
    got["reasons"] = _text(T.sim_table(reasons, "why"))
    got["two-reasons"] = _text(T.sim_table(two_reasons, "why"))
    got["one-reason-one-row"] = _text(T.sim_table(reasons[:1], "why"))
    got["json-config"] = _text(T.sim_table(jsoned, "j"))
    got["errors"] = _text(T.sim_table(errors, "e"))
    got["empty"] = _text(T.sim_table([], "nothing"))
    got["all-none"] = _text(T.sim_table([{"a_s": None, "b": None}], "n"))
    got["breakdown"] = [_text(T.breakdown_table(r)) for r in steps]
    got["breakdown-zero"] = _text(T.breakdown_table({**steps[0], "predicted_step_s": 0.0}))
    got["breakdown-bare"] = _text(T.breakdown_table({"family": "fc", "gemm_s": 1e-3}))
    got["breakdown-profile"] = _text(
        T.breakdown_table({**steps[0], "host_profile": "host profile x"})
    )
    got["breakdown-no-waits"] = _text(
        T.breakdown_table({k: v for k, v in steps[0].items() if k != "host_waits"})
    )
    got["breakdowns"] = _text(T.breakdowns_table(steps))
    got["breakdowns-gap"] = _text(
        T.breakdowns_table([steps[0], {**steps[1], "gemm_s": None, "params_source": None}])
    )
    cols = [
        "predicted_step_s",
        "bus_bytes_per_s",
        "examples_per_s",
        "mdape",
        "precision",
        "gemm_compute_s",
        "x_s",
        "_s",
        "bytes_per_s",
        "plain",
        "allreduce_s",
    ]
    got["headers"] = [[c, T.unit(c), T.name(c), T.header(c)] for c in cols]
    got["configs"] = [T._config(v) for v in ({"a": 1}, '{"a": 1}', "{x", "[1]", '{"a"', 3, None)]
    pinned.check("sim_tables", got)
