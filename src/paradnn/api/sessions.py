"""Calls that share their worker processes: `shared_workers()`.

Every measuring call (`run`, `bench`, `calibrate`, `calibrate_host`, `ops`) starts a worker
process, which imports torch and, on a GPU, creates a CUDA context: seconds each time. Inside
`with api.shared_workers() as session:` the calls take the worker the previous call left idle,
so a script measuring many things pays for one start. `session.time_box(seconds)` bounds the
calls inside it: no unit is sent after the deadline, the one in flight is stopped (and not
stored), and `TimeBoxExpired` is raised; everything finished before is stored. The GPU
acceptance run (benchmarks/gpu_check.py) is built on these.

    from paradnn import api

    with api.shared_workers() as session:
        api.calibrate("cuda", db="runs.db")
        with session.time_box(120):
            api.run(plan, device="cuda", db="runs.db")
"""

from __future__ import annotations

from paradnn.runner.supervisor import Session, TimeBoxExpired, shared_workers

__all__ = ["Session", "TimeBoxExpired", "shared_workers"]
