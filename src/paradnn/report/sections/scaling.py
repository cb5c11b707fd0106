"""The report's data-parallel section (docs/scaling.md): seed 000 Fig. 4's analogue, the
serial fractions, Amdahl fits, the measured all-reduce and the simulator's error against it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from paradnn.analysis import scaling as S
from paradnn.plots import scaling as P
from paradnn.report.paired import Fig, Notes, Paired, Study, Tab
from paradnn.report.section import Section
from paradnn.sim.scaling_check import Check as SimCheck
from paradnn.sim.scaling_check import check_frame

INTRO = (
    "Each run of N > 1 data-parallel processes is matched to the stored N = 1 run of the same "
    "config, precision, platform and threads per rank (each rank had the single process's "
    "device); speedup = examples/s over the N = 1 run's (a 95% interval from the two step "
    "times' CIs), efficiency = speedup / N, Karp–Flatt e = (1/S − 1/N)/(1 − 1/N). Step times "
    "are the slowest rank's. The all-reduce is timed alone on a flat buffer of the gradient's "
    "bytes; busbw = algbw · 2(N−1)/N (nccl-tests). Overlap = (no_sync compute + all-reduce − "
    "step) / all-reduce, clipped to [0, 1]. compute_inflation = a rank's no_sync step over the "
    "single process's step for the same work (above 1: the ranks computed slower, e.g. on cores "
    "shared with other work, which no interconnect explains); comm_exposed_frac = (step − "
    "no_sync compute) / step."
)
SHOWN = [
    "family", "config_key", "strategy", "scaling", "procs", "threads", "step_time_s",
    "examples_per_s", "speedup", "speedup_low", "speedup_high", "efficiency", "karp_flatt",
    "compute_nosync_s", "allreduce_s", "allreduce_busbw", "overlap_frac", "compute_inflation",
    "comm_exposed_frac",
]  # fmt: skip


@dataclass(frozen=True)
class _Scaled:
    table: pd.DataFrame  # the runs of N > 1 against their N = 1 run
    check: SimCheck  # the simulator's all-reduce and efficiency against them


def _studies(data) -> list[Study]:
    table = S.efficiency_table(data)
    return [Study(data, _Scaled(table, check_frame(table)))] if len(table) else []


def _verdict(data) -> str:
    verdict, evidence, rule = S.observation3(data)
    return f"Observation 3 (seed 000 §4.3): {verdict}. {evidence}. Rule: {rule}."


PERCENTILES = ("median", "p90", "max", "p90_at_largest_batch", "seed_p90")

SECTION = Section(
    "scaling",
    "Data-parallel scaling (seed 000 Figure 4, observation 3)",
    Paired(
        _studies,
        parts=(
            Fig(
                "scaling-speedup",
                lambda st: P.speedup_vs_procs(st.got.table),
                "Speedup and utilization against N",
            ),
            Fig(
                "scaling-serial",
                lambda st: P.serial_fractions(st.got.table),
                "Karp–Flatt serial fraction",
            ),
            Fig(
                "scaling-1-vs-n",
                lambda st: P.utilization_1_vs_n(st.got.table),
                "FLOP/s per rank, 1 against N",
            ),
            Tab("scaling", lambda st: st.got.table[SHOWN], "Runs of N > 1 against their N = 1 run"),
            Tab(
                "scaling-serial-percentiles",
                lambda st: S.serial_percentiles(st.got.table),
                "Karp–Flatt serial fraction per family: median, 90th percentile and maximum over "
                "the runs of N > 1, and the 90th percentile at the family's largest batch, "
                "beside seed 000 §4.3's published 90th percentile at its largest batch (TPU v2, "
                "1 against 8 cores: FC 16%, CNN 8.8%; not measured here)",
                units={c: "pct" for c in PERCENTILES},
            ),
            Tab(
                "scaling-amdahl",
                lambda st: S.fits(st.got.table),
                "Amdahl's serial fraction fitted over N",
            ),
            Notes(
                lambda st: [
                    st.got.check.summary()
                    + ": the ring α–β model of sim/interconnect.py, its α and B fitted on each "
                    "run's own all-reduces at two other buffer sizes, predicting the gradient's "
                    "all-reduce and (with the measured no_sync compute, no overlap) the "
                    "efficiency."
                ]
            ),
            Tab(
                "scaling-sim-check",
                lambda st: pd.DataFrame(st.got.check.rows) if st.got.check.rows else None,
                "The simulator's check",
            ),
        ),
        verdict=_verdict,
        empty=(
            "Needs a data-parallel run and its N = 1 run of the same config, both ok and not "
            "flagged noisy (on a shared machine: `paradnn report --include-noisy`): "
            "`paradnn scale fc layers=1 nodes=32 batch=8 --procs 1,2`."
        ),
    ),
    intro=INTRO,
    step="scaling",
)
