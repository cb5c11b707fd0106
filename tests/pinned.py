"""Whole-result pins for the simulator's pinned tests (tests/test_sim_*_pinned.py): a result is
turned into plain JSON (dataclasses field by field, arrays element by element, frames record by
record) and compared with tests/data/sim_pinned/<name>.json — strings, booleans, integers and
the order of every list exactly, floats to a relative 1e-9 (so a sum taken in another order on
another CPU does not move them, while any change to a term does).

Regenerate after an intended change: PARADNN_GOLDEN=write pytest tests/test_sim_*_pinned.py."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

DIR = Path(__file__).parent / "data" / "sim_pinned"
ROOT = str(Path(__file__).resolve().parents[1])
REL = 1e-9
ABS = 1e-300


def plain(x: Any) -> Any:
    """x as JSON values (a float NaN or infinity as its name, the checkout's path as <root>)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, pd.DataFrame):
        return {"columns": [str(c) for c in x.columns], "rows": plain(x.to_dict("records"))}
    if isinstance(x, pd.Series):
        return plain(x.to_dict())
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        f = float(x)
        return f if math.isfinite(f) else repr(f)
    if isinstance(x, str):
        return x.replace(ROOT, "<root>")
    if x is None or isinstance(x, int):
        return x
    return repr(x)


def _same(got: Any, want: Any, where: str, rel: float = REL, abs_: float = ABS) -> None:
    if isinstance(want, float) and isinstance(got, float):  # an int for a float is a change
        assert math.isclose(got, want, rel_tol=rel, abs_tol=abs_), f"{where}: {got!r} != {want!r}"
        return
    assert type(got) is type(want), f"{where}: {got!r} != {want!r}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            _same(got[k], want[k], f"{where}.{k}", rel, abs_)
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} items != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]", rel, abs_)
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def check(name: str, results: dict[str, Any], rel: float = REL, abs_: float = ABS) -> None:
    """Hold ``results`` (case name → result) to the pinned file ``name`` (floats to ``rel``, or
    ``abs_`` near zero: a fit's optimum is pinned only as closely as its optimizer finds it)."""
    got = plain(results)
    path = DIR / f"{name}.json"
    if os.environ.get("PARADNN_GOLDEN") == "write":
        DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    want = json.loads(path.read_text())
    assert list(got) == list(want), "the cases changed: regenerate with PARADNN_GOLDEN=write"
    for case in want:
        _same(got[case], want[case], case, rel, abs_)
