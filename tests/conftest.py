from __future__ import annotations

import os

import pytest
import torch

from paradnn import families
from paradnn.measure.timer import TimingPolicy
from paradnn.store import open_store

families.register("fault", "faults")
# pytest-xdist runs one worker per core: more than one torch thread each would oversubscribe.
torch.set_num_threads(1)

# Budgets small enough for a 2-core CI machine; the rules are the production ones.
TINY_POLICY = TimingPolicy(
    min_samples=5,
    min_time_s=0.0,
    max_time_s=0.2,
    warmup_min_steps=2,
    warmup_min_time_s=0.0,
    warmup_max_steps=12,
    warmup_max_time_s=0.5,
    target_ci_rel=0.5,
)

TINY = {
    "fc": {"layers": 2, "nodes": 16, "input": 12, "output": 5, "batch": 4},
    "cnn": {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 2},
    "rnn": {"layers": 2, "embed": 8, "length": 5, "vocab": 7, "batch": 3, "cell": "lstm"},
}


def require_native(precision: str) -> None:
    """Skip unless this CPU runs `precision` natively, with the reason paradnn itself gives."""
    from paradnn.precisions import cpu_reason

    reason = cpu_reason(precision)
    if reason:
        pytest.skip(f"{precision}: {reason}")


@pytest.fixture
def store():
    s = open_store(":memory:")
    yield s
    s.close()


@pytest.fixture
def tiny_policy() -> TimingPolicy:
    return TINY_POLICY


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def write_sweep(path, runs, precisions=("fp32",), policy=TINY_POLICY):
    """A sweep file with explicit [[runs]] (family, config) and the tiny timing policy."""
    import json

    body = "".join(
        f'[[runs]]\nfamily = "{fam}"\nconfig = {{ '
        + ", ".join(f"{k} = {json.dumps(v)}" for k, v in cfg.items())
        + " }\n"
        for fam, cfg in runs
    )
    timing = "".join(f"{k} = {json.dumps(v)}\n" for k, v in vars(policy).items())
    path.write_text(f"precisions = {json.dumps(list(precisions))}\n{body}[timing]\n{timing}")
    return path


def run_cli(capsys, *args):
    import sys

    from paradnn import cli

    old = sys.argv
    sys.argv = ["paradnn", *args]
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def export_rows(text):
    """The rows of a `results`/`bench --format json` export (a versioned object since format
    version 1; docs/api.md#json-export-results---format-json-bench---json)."""
    import json

    doc = json.loads(text)
    assert doc["format"] == "paradnn-results" and doc["version"] == 1, doc
    return doc["rows"]


# `paradnn run`/`bench` re-measure noisy runs by default (docs/runner.md); on a busy test
# machine nearly every tiny run is noisy, so the suite turns it off and tests/test_attempts.py
# turns it on where it tests it.
os.environ.setdefault("PARADNN_REMEASURE", "0")
