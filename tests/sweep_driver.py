"""Runs a small sweep through the supervisor (used by the kill -9 test in a subprocess)."""

import sys

from paradnn.config import RunOptions, RunSpec, SweepSettings
from paradnn.runner.supervisor import Supervisor
from paradnn.store import open_store

from conftest import TINY_POLICY

OPTIONS = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)
SPECS = [
    RunSpec("fc", {"layers": 1, "nodes": n, "input": 8, "output": 3, "batch": 2}, OPTIONS)
    for n in range(4, 16)
]

if __name__ == "__main__":
    with open_store(sys.argv[1]) as store:
        Supervisor(store, OPTIONS, SweepSettings(recycle_every=3), sweep="driver").run(SPECS)
