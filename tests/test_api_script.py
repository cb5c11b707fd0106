"""A script that calls the API at import time (no `if __name__ == "__main__":`) gets one clear
error naming the fix, not multiprocessing's bootstrapping traceback (issue 22)."""

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def test_an_unguarded_script_gets_a_clear_error(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from paradnn import api\n"
        "api.bench('fc', {'layers': 1, 'nodes': 8, 'input': 8, 'output': 4, 'batch': 2},\n"
        f"          device='cpu', db={str(tmp_path / 'r.db')!r})\n"
    )
    p = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=300,
        cwd=tmp_path,
    )
    assert p.returncode != 0
    assert 'if __name__ == "__main__":' in p.stderr and "docs/api.md" in p.stderr
    assert "bootstrapping phase" not in p.stderr  # the worker's own failure stays quiet
    assert p.stderr.count("Traceback") == 1  # the caller's, ending in the ParadnnError
