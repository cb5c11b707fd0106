"""The rows a small sweep stores, field by field, against a fixture written before the runner's
refactor (issue 34): one measuring core, the record built once, one kind of work unit. What is
not measured (config, key, family, status, precision, counts, prediction, errors, the structure
of nested parts) must come out exactly as before; what is measured or read from the machine
(times, rates, loads, host facts, ids, timestamps, versions) only null where it was null and of
the same type.

`PARADNN_GOLDEN_WRITE=1 pytest tests/test_golden_rows.py` rewrites the fixture (only on purpose,
from code whose rows are right).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from paradnn import api, host
from paradnn.runner import kernels
from paradnn.runner.supervisor import SweepSettings
from paradnn.store import open_store

from conftest import TINY, TINY_POLICY, write_sweep

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).parent / "data" / "golden_rows.json"
TWO_CORES = len(host.usable_cpus()) >= 2
KiB = 1024

# Columns whose values are measured, or facts of this machine and moment: compared for
# null-or-not and type only (every `*_s` column is a time or a rate). Every other column must
# be equal: config, key, family, status, precision, counted FLOPs and params, the prediction,
# errors, the study's settings.
MEASURED = {
    *("examples_per_s", "achieved_flops", "final_loss", "ci_rel", "n_samples", "samples"),
    *("steps_per_sample", "converged", "stop_reason", "warmup_steps", "quality", "iqr_rel"),
    *("quality_reasons", "ci_half_rel", "peak_mem_bytes", "avg_power_w", "idle_power_w"),
    *("energy_j", "energy_per_sample_j", "energy_per_step_j", "samples_per_j", "energy"),
    *("energy_method", "energy_scope", "utilization_datasheet", "utilization_measured"),
    "ceiling_beaten",  # follows utilization_measured (null when it is)
    *("started_at", "finished_at", "measured_at", "worker_pid", "worker_index", "id", "env"),
    *("fingerprint", "device_name", "hostname", "cpu_model", "gpu_name", "paradnn_version"),
    *("torch_version", "python_version", "cuda_version", "cudnn_version", "driver_version"),
    *("value", "detail", "parallel", "overlap_frac", "allreduce_algbw", "allreduce_busbw"),
    *("infeed_share", "input_bound", "host_cpu_cores", "host_cpu_share"),
    *("infeed", "op_profile", "recompiles", "graph_count", "graph_breaks", "cudagraphs"),
    *("graph_break_reasons", "compile_detail", "flags", "run_key", "task_key", "xla_flops"),
    *("xla_bytes", "xla_flops_ratio", "xla_flops_mismatch", "xla_detail"),
}


def _measured(col: str) -> bool:
    return col.endswith("_s") or col in MEASURED


# Where a null's reason or an error names a measured quantity of this machine.
MACHINE_WORDS = re.compile(r"\d+(\.\d+)?( ?GiB| ?s\b| ?ms\b|%)")
# Measured nested parts whose keys (what was recorded) are compared, not their values.
KEYED = ("detail", "parallel", "flags", "infeed", "xla_detail", "compile_detail", "load")
# Measured where the machine lets them be (the load around a short window is sometimes not
# readable): null on either side is allowed, and their keys in `nulls` with them.
SOMETIMES = ("others_cpu_frac", "load")
HOST_TYPES = {int: "number", float: "number", bool: "bool", str: "str", list: "list"}
# Six timed samples at least: the fewest for which a median has a 95% CI (measure/stats.py), so
# whether a run's CI is null never depends on how fast or busy this machine is (with the tiny
# policy's five, a CNN step slowed past 40 ms by load or by the AVX2 cap had no CI).
POLICY = dataclasses.replace(TINY_POLICY, min_samples=6)


def _sweep(tmp: Path) -> dict[str, list[dict[str, Any]]]:
    """fc/cnn/rnn, a predicted-OOM config, an unsupported precision, a host-data run, an
    invalid 2-rank split, a JAX and a 2-rank data-parallel run; then calibrate and ops units."""
    db = str(tmp / "golden.db")
    runs = [
        ("fc", TINY["fc"]),
        ("cnn", TINY["cnn"]),
        ("rnn", TINY["rnn"]),
        ("fc", {"layers": 512, "nodes": 32_768, "batch": 65_536}),  # predicted_oom
    ]
    path = write_sweep(tmp / "s.toml", runs, precisions=("fp32",))
    settings = SweepSettings(timeout_s=300.0)
    api.run(str(path), device="cpu", threads=1, timing=POLICY, db=db, settings=settings)
    bench = dict(device="cpu", threads=1, timing=POLICY, db=db, timeout_s=300.0)
    # unsupported on a CPU: a sweep file's precision is stored so (`bench -p tf32` is refused)
    tf32 = write_sweep(tmp / "tf32.toml", [("fc", TINY["fc"])], precisions=("tf32",))
    api.run(str(tf32), device="cpu", threads=1, timing=POLICY, db=db, settings=settings)
    api.bench("fc", TINY["fc"], data_source="host", **bench)
    # invalid (strong scaling of a batch 2 ranks do not split): never reaches a worker
    api.bench("fc", {**TINY["fc"], "batch": 3}, procs=2, scaling="strong", **bench)
    try:
        import jax  # noqa: F401

        api.bench("fc", TINY["fc"], backend="jax", **bench)
    except ImportError:
        pass
    if TWO_CORES:
        api.bench("fc", {"layers": 1, "nodes": 32, "batch": 8}, procs=2, **bench)
    with open_store(db) as store:
        kernels.calibrate(  # every default path; a budget no loaded machine runs out of at n=32
            store, "cpu", ["fp32"], threads=1, sizes=(16, 32), stream_bytes=64 * KiB,
            kinds=("matmul", "copy"), budget_s=30,
        )  # fmt: skip
        kernels.ops(store, "cpu", ["fp32", "tf32"], names=["matmul-2048"], passes=["fwd"],
                    scale=0.01)  # fmt: skip
        return {
            "runs": store.runs(),
            "ceilings": store.rows("ceilings"),
            "ops": store.rows("ops"),
        }


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return HOST_TYPES.get(type(v), "dict" if isinstance(v, dict) else type(v).__name__)


def _shape(v: Any) -> Any:
    """A nested part's structure: its keys, recursively (values of measured things vary)."""
    if isinstance(v, dict):
        return {k: _shape(x) for k, x in v.items()}
    return None


def _text(v: Any) -> Any:
    return MACHINE_WORDS.sub("N", v) if isinstance(v, str) else v


def _same(table: str, i: int, got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    where = f"{table}[{i}] {want.get('family') or want.get('kind') or want.get('op')}"
    bad = []
    if set(got) != set(want):
        bad.append(f"{where}: columns {sorted(set(got) ^ set(want))} on one side only")
    same_host = got.get("fingerprint") == want.get("fingerprint")
    for col in sorted(set(got) & set(want)):
        a, b = got[col], want[col]
        if col in SOMETIMES:
            continue
        if col == "nulls" and isinstance(a, dict) and isinstance(b, dict):
            a, b = (sorted(set(x) - set(SOMETIMES)) for x in (a, b))
            if a != b:
                bad.append(f"{where}.nulls: keys {sorted(set(a) ^ set(b))} on one side only")
            continue
        if col in ("run_key", "task_key") and same_host:
            if a != b:
                bad.append(f"{where}.{col}: {a!r} != {b!r}")
            continue
        if _measured(col):
            if _kind(a) != _kind(b):
                bad.append(f"{where}.{col}: {_kind(a)} now, {_kind(b)} before ({a!r} / {b!r})")
            elif isinstance(a, dict) and col in KEYED and set(a) != set(b):
                bad.append(f"{where}.{col}: keys {sorted(set(a) ^ set(b))} differ")
            continue
        if _text(a) != _text(b):
            bad.append(f"{where}.{col}: {a!r} now, {b!r} before")
    return bad


def test_a_small_sweep_stores_the_same_rows_as_before_the_refactor(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    got = json.loads(json.dumps(_sweep(tmp_path), default=str))
    if os.environ.get("PARADNN_GOLDEN_WRITE"):
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(FIXTURE.read_text())
    if not TWO_CORES:  # the fixture's 2-rank row is not measured here
        want["runs"] = [r for r in want["runs"] if r["procs"] != 2 or r["status"] == "invalid"]
    if not any(r.get("backend") == "jax" for r in got["runs"]):
        want["runs"] = [r for r in want["runs"] if r.get("backend") != "jax"]
    bad = []
    for table in ("runs", "ceilings", "ops"):
        who = [(r.get("family"), r.get("status"), r.get("precision")) for r in got[table]]
        was = [(r.get("family"), r.get("status"), r.get("precision")) for r in want[table]]
        assert who == was, table
        for i, (g, w) in enumerate(zip(got[table], want[table], strict=True)):
            bad += _same(table, i, g, w)
    assert not bad, "\n".join(bad)
    statuses = {r["status"] for r in got["runs"]}
    assert {"ok", "invalid", "predicted_oom", "unsupported"} <= statuses  # the paths it covers
