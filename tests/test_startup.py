"""Start-up: `paradnn --help`, `--version` and a command's `--help` load no heavy library.

The clock is not asserted (tests never assert wall-clock speed); the import graph is. scipy.stats
alone cost ~0.7 s of every command's start-up when `measure/stats` imported it at module level
(issue 22); numpy, pandas, torch and matplotlib are imported where they are used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("numpy", "scipy", "pandas", "torch", "matplotlib")

PROBE = """
import json, sys
args, watched = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["paradnn", *args]
import paradnn.cli
try:
    paradnn.cli.main()
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & watched)
sys.stderr.write("LOADED " + json.dumps(heavy) + "\\n")
"""


def _loaded(args: list[str]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("LOADED "))
    return json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["run", "--help"], ["bench", "--help"], ["simulate", "--help"]],
    ids=lambda a: " ".join(a),
)
def test_help_and_version_load_no_heavy_library(args: list[str]) -> None:
    assert _loaded(args) == []


def test_importing_the_cli_and_the_api_loads_no_heavy_library() -> None:
    code = (
        "import sys, json, paradnn.cli, paradnn.api\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=120,
        check=True,
    )
    assert json.loads(p.stdout) == []


def test_the_lazy_api_still_exposes_every_function() -> None:
    from paradnn import api

    for name in api.__all__:
        assert callable(getattr(api, name)), name
    assert set(api.__all__) <= set(dir(api))
    with pytest.raises(AttributeError, match="no_such"):
        api.no_such  # noqa: B018
