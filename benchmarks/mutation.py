"""Mutation testing of the code that draws paradnn's conclusions: would a wrong conclusion fail a
test? (`make mutation`; slow on purpose, like the other benchmarks, and not part of `make test`.)

mutmut ([tool.mutmut] in pyproject.toml) copies the project into `mutants/`, plants one small
fault at a time in the modules it may mutate (a `<` for a `<=`, a `min` for a `max`, a constant
off by one...) and runs the tests that call the mutated function. A mutant the tests fail for
is killed; one they pass with survived, and is a conclusion the tests would not catch.

This script runs mutmut one group of modules at a time, each bounded by a timeout, then reads
mutmut's results and writes benchmarks/results/mutation.json: per group the killed, survived,
timeout, suspicious and unchecked counts, the score, every surviving mutant with its diff, the
mutants judged equivalent (same behaviour: no test can fail for them) with the reason, the wall
time, and the tool version, date and CPU.

    python benchmarks/mutation.py [--group analysis sim timer-stats store memory measure]
        [--only survivors|unchecked | --sample N --seed S] [--timeout S] [--max-children N]

`--sample N` checks a uniform random sample of N of a group's not-yet-checked mutants (seeded
by `--seed`): the score of a sample estimates the group's score, and the JSON gives its 95%
Clopper-Pearson interval, so a group too large to check whole on a small machine (analysis and
sim: thousands of mutants, hours each on 2 cores) still gets a measured distance to its target
(on a fresh clone the mutants are generated first). Several groups' samples are checked in
one mutmut run (it runs the clean tests first, minutes with the whole selection). `--only
survivors` re-tests the mutants a run left alive (after adding tests; a sample's unchecked
rest stays unchecked); `--only unchecked` resumes a run a timeout stopped.
Score = (killed + timeout + killed at set-up) / (mutants - equivalent - unchecked); survived,
suspicious and "no tests" count against.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "mutation.json"

# name -> (module globs as mutmut names them, target score)
GROUPS: dict[str, tuple[tuple[str, ...], float]] = {
    # attempts: the choice; the key results and the rounding rule (issue 46) state conclusions
    "analysis": (
        (
            *("paradnn.analysis.*", "paradnn.attempts.*"),
            *("paradnn.report.keyresults.*", "paradnn.rounding.*"),
        ),
        0.90,
    ),
    # cores: issue 46; the simulator's tables moved to the CLI (issue 44)
    "sim": (("paradnn.sim.*", "paradnn.platforms.cores.*", "paradnn.cli.sim_tables.*"), 0.90),
    "timer-stats": (("paradnn.measure.timer.*", "paradnn.measure.stats.*"), 0.95),
    "store": (("paradnn.store.*",), 0.95),
    "memory": (("paradnn.memory.*",), 0.90),
    # the numbers a run is judged by: its quality verdict, the infeed share, the all-reduce
    # bandwidth and overlap, and what a failure was (an exception's class; a dead worker's exit)
    "measure": (
        (
            "paradnn.measure.quality.*",
            "paradnn.measure.infeed.*",
            "paradnn.measure.collectives.*",
            "paradnn.measure.faults.*",
            "paradnn.measure.sanity.*",  # a ceiling's sanity checks (issue 46)
            "paradnn.runner.resume.*",  # what a resumed sweep says it keeps (issue 46)
            "paradnn.runner.supervisor.x__death__mutmut_*",
            "paradnn.runner.units.xǁRunUnitǁfailed__mutmut_*",
        ),
        0.90,
    ),
}

# Mutants no test can kill because the program behaves the same with them. Keyed by mutmut's
# name; `line` is a fragment of the mutated line, checked against the mutant's diff so that a
# renumbering (the function changed) never marks a different mutant equivalent.
EQUIVALENT: dict[str, tuple[str, str]] = {
    # runs() builds `WHERE family = ?` from these names: SQLite column names ignore case.
    **{
        f"paradnn.store.db.xǁStoreǁruns__mutmut_{n}": (
            "the name is an SQL column name in a WHERE clause; SQLite identifiers ignore case",
            col,
        )
        for n, col in ((4, '"FAMILY"'), (6, '"SWEEP"'), (8, '"RUN_KEY"'), (10, '"QUALITY"'))
    },
    "paradnn.store.db.xǁStoreǁ_insert__mutmut_58": (
        "the key becomes a column name in insert_rows' INSERT (SQLite identifiers ignore case) "
        "and profile rows never carry their own run_id (measure/profile.py), so no clash",
        '"RUN_ID": rid',
    ),
    **{
        f"paradnn.store.db.x__text__mutmut_{n}": (
            "Python looks codecs up by a normalized, case-insensitive name: 'UTF-8' is 'utf-8'",
            line,
        )
        for n, line in ((3, 'raw.decode("UTF-8")'), (10, 'raw.decode("UTF-8", "replace")'))
    },
    "paradnn.store.db.x_open_store__mutmut_14": (
        "for ':memory:' the mutant runs Path(':memory:').parent.mkdir(exist_ok=True), which is "
        "Path('.').mkdir: a no-op",
        '":MEMORY:"',
    ),
    "paradnn.store.db.x_open_store__mutmut_32": (
        "for ':memory:' the mutant asks for WAL and synchronous=FULL; an in-memory database "
        "keeps journal_mode=memory and FULL is SQLite's default: same behaviour",
        '":MEMORY:"',
    ),
    **{
        f"paradnn.measure.stats.x_summarize__mutmut_{n}": (
            "every number read from the sorted array is converted with float(), so leaving the "
            "array's dtype to numpy changes no result for numeric samples",
            line,
        )
        for n, line in ((5, "dtype=None"), (7, "np.asarray(samples, )"))
    },
    **{
        f"paradnn.measure.stats.x_median_ci_ranks__mutmut_{n}": (
            "the cdf's last entries (P(B ≤ n−1) = 1 − 2⁻ⁿ and beyond) are never ≤ α/2 ≤ 0.25, "
            "so dropping or adding them changes no rank",
            line,
        )
        for n, line in ((13, "np.arange(n - 1)"), (14, "np.arange(n + 2)"))
    },
    **{
        f"paradnn.measure.timer.x__first_step__mutmut_{n}": (
            "the first report goes out anyway: _first_step speaks first in measure(), and a "
            "speaker that has never spoken is due",
            line,
        )
        for n, line in (
            (2, 'say({"phase": "first step"}, force=None)'),
            (4, 'say({"phase": "first step"}, )'),
            (9, 'say({"phase": "first step"}, force=False)'),
        )
    },
    "paradnn.measure.timer.x__agreed__mutmut_5": (
        "Agreement.gather returns each rank's list of len(values) (all_gather of one shape), "
        "so zip pairs the same columns with or without strict=True",
        "agree.gather(values), )",
    ),
    **{
        f"paradnn.measure.timer.x_progress_words__mutmut_{n}": (
            "a missing phase as None instead of '': both are falsy, equal to no phase name, and "
            "the join drops falsy words, so the words are the same",
            line,
        )
        for n, line in ((3, 'info.get("phase", None)'), (5, 'info.get("phase", )'))
    },
    "paradnn.analysis.summaries.x_thread_scaling__mutmut_72": (
        "the key comes from a groupby over the same four columns, so it always has four parts: "
        "zip with or without strict=True pairs the same names and values",
        "key, ))",
    ),
    **{
        f"paradnn.sim.traffic.x_capacity__mutmut_{n}": (
            "tf32 is stored in fp32 tensors: paradnn.memory gives tf32 the same estimate as "
            "fp32 (checked for all 14 built-in families, cuda and cpu, all three optimizers), "
            "so mapping it or not changes nothing",
            line,
        )
        for n, line in ((2, '"XXtf32XX"'), (3, '"TF32"'))
    },
    "paradnn.sim.curve.x_scaling__mutmut_3": (
        "the default bounds chip_counts' powers of two: 1 … 1024 for 1024 and for 1025 alike "
        "(the roofline's curve counts its chips the same way), so the same rows",
        "max_chips: int = 1025",
    ),
    "paradnn.sim.scaling_check.x_check_frame__mutmut_11": (
        "pandas lower-cases DataFrame.to_dict's orient: 'RECORDS' is 'records'",
        'to_dict("RECORDS")',
    ),
    "paradnn.analysis.speedup.x__failed__mutmut_25": (
        "ok_keys holds exactly the key columns, so merging on the common columns (on=None) is "
        "merging on the key",
        "ok_keys.merge(bad, on=None)",
    ),
    "paradnn.analysis.speedup.x__medians__mutmut_3": (
        "the median of an empty sample is NaN in numpy too (with a warning): the same value",
        "if (len(x)) or True else np.nan",
    ),
    "paradnn.analysis.speedup.x__intervals__mutmut_116": (
        "t_high_b comes from values(), which passes the column through pd.to_numeric and a max "
        "aggregation: it is float64 already, so to_numpy(None) returns the same float array",
        'pairs["t_high_b"].to_numpy(None)',
    ),
    **{
        f"paradnn.memory.x__backward__mutmut_{n}": (
            "the first op's moment is at least its output gradient's bytes (> 1), so a start of "
            "1 instead of 0 is replaced at i = 0 like 0 is",
            line,
        )
        for n, line in ((16, "(1.0, 0.0)"), (17, "(0.0, 1.0)"))
    },
    **{
        f"paradnn.analysis.scaling.x_amdahl_speedup__mutmut_{n}": (
            "(1 − f) is a float, so dividing it by an int array is true division: the same "
            "floats whether n is converted to float first or not",
            line,
        )
        for n, line in ((8, "np.asarray(n, dtype=None)"), (10, "np.asarray(n, ))"))
    },
    "paradnn.analysis.speedup.x__intervals__mutmut_17": (
        "the speedup column is a ratio of two float medians (float64), so to_numpy(None) "
        "returns the same float array as to_numpy(float)",
        'pairs["speedup"].to_numpy(None)',
    ),
    "paradnn.analysis.findings.x__rising__mutmut_6": (
        "an empty runs frame still has its family column (_runs_frame builds the empty frame "
        "with it), so filtering it by family gives the same empty frame",
        "if (len(data.runs)) or True else data.runs",
    ),
    "paradnn.analysis.infeed.x_infeed_finding__mutmut_25": (
        "variants() yields ('pipeline', w) with int worker counts or ('host', None), one of "
        "each: 'pipeline' > 'host' as text and the most workers wins, as the key orders them",
        "max(kinds, key=None)",
    ),
    "paradnn.cli.sim_tables.x_breakdown_table__mutmut_21": (
        "the config is a dict, and _cell writes a dict as key=value words whatever the column "
        "name it is given",
        "_cell('XXconfigXX', row.get('config'))",
    ),
    "paradnn.sim.fidelity.x_device_chips__mutmut_10": (
        "the stand-in is used only when the runs have no device_name column: an empty Series "
        "gives the same empty set of names whatever its dtype",
        "pd.Series(dtype=None)",
    ),
    "paradnn.sim.fit.x_chip_toml__mutmut_13": (
        "the id is built from device.lower() with every other character made '-', so no "
        "uppercase X is left to strip: stripping 'X' and '-' is stripping '-'",
        '.strip("XX-XX")',
    ),
    "paradnn.sim.steptime.x_predict_step__mutmut_124": (  # 112 before the host timeline
        "sent is set to 0.0 just before, and the link branch is the first to add to it: "
        "0.0 + x and x are the same float",
        "sent = ar.bytes_sent_per_chip",
    ),
    "paradnn.sim.chip.x_from_platform__mutmut_34": (
        "Link's default latency_s is 1e-6 s, the value of chip.DEFAULT_LATENCY_S (both the "
        "scaling-book's 1 µs per hop): the same Link",
        "Link(plat.interconnect_bw / 2, )",
    ),
    "paradnn.sim.chip.x_from_platform__mutmut_24": (
        "Link's default latency_s is 1e-6 s, the value of chip.DEFAULT_LATENCY_S: the same Link",
        "Link(bw, )",
    ),
    "paradnn.sim.interconnect.x__balanced__mutmut_10": (
        "the extra candidate d = chips + 1 never divides chips (≥ 1), so it is skipped",
        "range(1, chips + 2)",
    ),
    "paradnn.sim.opfit.x_op_plan__mutmut_6": (
        "at fast_conv = 1.0 the Winograd option has the direct compute time and more bytes, so "
        "evaluate never prefers it (fast < direct is false): the same op time and counts",
        "sp.fast_conv >= 1.0",
    ),
    "paradnn.cli.sim_tables.x_sim_table__mutmut_103": (
        "rich renders an unknown justify value as left, the value it replaces (checked: the "
        "same text for 'left' and 'LEFT')",
        '"LEFT"',
    ),
    "paradnn.cli.sim_tables.x_sim_table__mutmut_96": (
        "every column's min_width is its longest word (header or cell), so rich only wraps "
        "between words and never has a word to fold or cut (checked: a 60-letter word at "
        "width 30 prints whole either way)",
        '-            overflow="fold",\n-        )\n+            )',
    ),
    "paradnn.sim.interconnect.x_chip_counts__mutmut_1": (
        "the default limit only bounds powers of two: those ≤ 1025 are those ≤ 1024 (the "
        "next is 2048), so the default curve is the same",
        "limit: int = 1025",
    ),
    "paradnn.sim.model.x_input_step__mutmut_4": (
        "< 0 and <= 0 differ only at zero, and `not loader_examples_per_s` has already "
        "rejected every zero (0, 0.0, -0.0) with the same error",
        "loader_examples_per_s < 0:",
    ),
    "paradnn.analysis.breakdown.x__batch__mutmut_5": (
        "without a batch key .get() gives None, float(None) raises TypeError and the except "
        "returns 0.0, the value float(0) gives; with the key both read it",
        '.get("batch", ))',
    ),
    "paradnn.analysis.modes.x__costs__mutmut_64": (
        "without on=, pandas joins on the shared columns, which are exactly the key: the eager "
        "side holds only the key, t_eager_s and mem_eager, and comparison pairs have neither",
        "pairs.merge(eager, how=",
    ),
    "paradnn.sim.interconnect.x_allreduce__mutmut_17": (
        "a biring sent to the torus branch gets per-dimension bandwidth 2 × link, the biring's "
        "own figure, and only torus2d/torus3d are halved when concurrent",
        '("ring", "XXbiringXX")',
    ),
    "paradnn.sim.model.x_predict_op__mutmut_31": (
        "without gemm_rates, Chip.gemm_rate finds no curve and returns peak(precision), the "
        "same peak the original uses (already computed, so it cannot raise)",
        "if (chip.gemm_rates) or True else peak",
    ),
    "paradnn.analysis.infeed.x_infeed_finding__mutmut_32": (
        "variants() lists the pipeline first and loader_workers is validated ≥ 0 (config.py), "
        "so ranking by workers alone still picks the pipeline: host data's None ranks as 0 and "
        "max keeps the first of a tie",
        '(k[0] == "PIPELINE", k[1] or 0)',
    ),
    "paradnn.attempts.x_add_quality__mutmut_12": (  # add_quality moved from analysis.frames
        "the stand-in quality series is read only through .notna() and == 'noisy', all False "
        "for an all-NaN series as for an all-None one, and it is never written to the runs",
        "pd.Series(index=runs.index)",
    ),
    "paradnn.analysis.frames.x_from_frames__mutmut_18": (
        "_runs_frame drops empty frames first, so _runs_frame([r]) of an empty r runs the same "
        "branch as _runs_frame([])",
        "if (len(r)) or True else",
    ),
    "paradnn.analysis.scaling.x_serial_percentiles__mutmut_51": (
        "taken only when no run has a batch size: e.iloc[1:0] is empty as e.iloc[0:0] is, and "
        "an empty selection gives the same None percentile and count 0",
        "e.iloc[1:0]",
    ),
    "paradnn.analysis.speedup.x__per_config__mutmut_105": (
        "sort=True is groupby's default: dropping the argument sorts the groups the same way",
        "as_index=False, ).agg(",
    ),
    "paradnn.attempts.x_good__mutmut_2": (
        "taken only for an empty runs frame: a bool Series over an empty index is empty whether "
        "filled with False or None",
        "pd.Series(None, index=runs.index, dtype=bool)",
    ),
    "paradnn.measure.infeed.x__image__mutmut_47": (
        "the resized picture read as uint8 instead of int16: adding the int16 grain array "
        "promotes it to int16 anyway (numpy array + array promotion), so the sums, the clip "
        "and the picture are the same",
        "BICUBIC), dtype=None)",
    ),
    "paradnn.measure.infeed.x__image__mutmut_53": (
        "Image.resize without a filter uses BICUBIC for RGB and L pictures (Pillow ≥ 7; the "
        "only modes _image makes): the same filter",
        "img.resize((w, h), )",
    ),
    **{
        f"paradnn.measure.infeed.x__image__mutmut_{n}": (
            "Image.fromarray without a mode infers it from the array: 'RGB' for the (h, w, 3) "
            "uint8 grid and picture, 'L' for the 2-D uint8 ones (the only arrays _image makes; "
            "checked: the same mode and bytes)",
            line,
        )
        for n, line in (
            (37, "coarse[..., 0], None)"),
            (39, "coarse[..., 0], )"),
            (67, ".astype(np.uint8), None)"),
            (69, ".astype(np.uint8), )"),
        )
    },
    "paradnn.measure.infeed.x__image__mutmut_51": (
        "Image.resize's resample=None is its default, BICUBIC for RGB and L pictures (Pillow "
        "≥ 7; the only modes _image makes): the same filter",
        "img.resize((w, h), None)",
    ),
    "paradnn.measure.infeed.xǁPipelineFeedǁ__init____mutmut_15": (
        "plan() makes one Leaf per tensor, so buffers and specs always have the same length: "
        "strict has nothing to refuse",
        "self.specs, strict=None)",
    ),
    "paradnn.attempts.x_chosen_ids__mutmut_11": (
        "both zipped sequences are columns of the same frame `out`, so they always have the "
        "same length: strict has nothing to refuse",
        'out["attempt_choice"], strict=None))',
    ),
    "paradnn.measure.infeed.xǁFeedǁqueued__mutmut_1": (
        "only drain() reads the base class's queue, and only a host feed reaches it: one more "
        "copy of the same host tensors before the drain's clock starts changes no figure "
        "(the drain counts and times only its own batches)",
        "    return 1",
    ),
    # issue 46 (analysis, seed-11 sample): pandas' astype(None) is astype(np.dtype(None)),
    # which is float64: the same conversion as astype(float) for every input (checked: object
    # strings, ints, bools, floats, nullable Int64)
    **{
        f"paradnn.analysis.{mod}__mutmut_{n}": (
            "Series.astype(None) converts to np.dtype(None), float64, as astype(float) does: "
            "the same values and dtype",
            line,
        )
        for mod, n, line in (
            ("breakdown.x_bound_shares", 60, "t[t.notna()].astype(None)"),
            ("breakdown.x__profiled", 23, 'prof["device_time_s"].astype(None)'),
            ("regression.x_sensitivity", 84, "y[keep].astype(None)"),
            ("regression.x_sensitivity", 129, "np.log2(x.astype(None))"),
            ("regression.x_sensitivity", 133, "else x.astype(None)"),
        )
    },
    "paradnn.analysis.breakdown.x__batch__mutmut_3": (
        "without a batch key .get() gives None, float(None) raises TypeError and the except "
        "returns 0.0, the value float(0) gives; with the key both read it",
        '.get("batch", None))',
    ),
    "paradnn.analysis.scaling.x_fits__mutmut_66": (
        "k is a groupby key over the same six columns, so it always has six parts: zip with "
        "strict=None (falsy) or strict=True pairs the same names and values",
        "zip(cols, k, strict=None)",
    ),
    "paradnn.analysis.backends.x__with_xla__mutmut_23": (
        "side holds only the key columns and the XLA columns, and the pairs hold no XLA column "
        "(compare's pairs: key, values, speedup, CI, hyperparameters): merging on the common "
        "columns (on=None) is merging on the key",
        "pairs.merge(side, on=None, how=",
    ),
    "paradnn.store.db.x_open_store__mutmut_13": (
        "the mutant also runs Path(':memory:').parent.mkdir(exist_ok=True) for ':memory:', "
        "which is Path('.').mkdir: a no-op",
        '"XX:memory:XX"',
    ),
    "paradnn.store.db.x_open_store__mutmut_31": (
        "the mutant also asks an in-memory database for WAL and synchronous=FULL; it keeps "
        "journal_mode=memory and FULL is SQLite's default: same behaviour",
        '"XX:memory:XX"',
    ),
    "paradnn.analysis.whatif.x_findings_for__mutmut_17": (
        "the four pair checks read `data` only when no comparison is handed in (findings."
        "_oriented, fc_size_decides_platform's measured branch); here `cmp` is always given",
        "check(None, c)",
    ),
    **{
        f"paradnn.sim.papers.xǁPredictorǁ_op_speedup__mutmut_{n}": (
            "an Op's layer name and phase are labels: predict_op's compute_s and memory_s read "
            "only m, n, k, count and the operand elements (sim/model.py, sim/traffic.py)",
            line,
        )
        for n, line in (
            (34, 'Op("XXopXX", "fwd"'),
            (35, 'Op("OP", "fwd"'),
            (36, 'Op("op", "XXfwdXX"'),
            (37, 'Op("op", "FWD"'),
            (64, 'Op("XXopXX", "fwd"'),
            (65, 'Op("OP", "fwd"'),
            (66, 'Op("op", "XXfwdXX"'),
            (67, 'Op("op", "FWD"'),
        )
    },
    # A Plan's arrays built from lists whose every entry already has the array's type (a time,
    # a quantization, a byte count times a float padding factor: Python floats; a flag: a
    # bool; a layer index: an int, int64 as dtype=int is): numpy gives the same dtype with
    # dtype=None or none given. (The k and kernel-count arrays hold ints and are not here.)
    **{
        f"paradnn.sim.steptime.x_build_plan__mutmut_{n}": (
            "every entry of the list is already of the array's dtype (float, bool or int "
            "entries), so numpy infers the same dtype",
            line,
        )
        for n, line in (
            (396, "np.array(peak_s, dtype=None)"),
            (398, "np.array(peak_s, )"),
            (400, "np.array(quant, dtype=None)"),
            (402, "np.array(quant, )"),
            (404, "np.array(fallback, dtype=None)"),
            (406, "np.array(fallback, )"),
            (412, "np.array(nbytes, dtype=None)"),
            (414, "np.array(nbytes, )"),
            (420, "np.array(fpeak, dtype=None)"),
            (422, "np.array(fpeak, )"),
            (424, "np.array(fbytes, dtype=None)"),
            (426, "np.array(fbytes, )"),
            (454, "np.array(group, dtype=None)"),
            (456, "np.array(group, )"),
            (458, "np.array(l_ew_bytes, dtype=None)"),
            (460, "np.array(l_ew_bytes, )"),
            (463, "np.array(l_ew_kernels, dtype=None)"),
            (465, "np.array(l_ew_kernels, )"),
            (471, "np.array(l_out, dtype=None)"),
            (473, "np.array(l_out, )"),
            (475, "np.array(conv, dtype=None)"),
            (477, "np.array(conv, )"),
        )
    },
    **{
        f"paradnn.sim.opfit.x_op_plan__mutmut_{n}": (
            "every entry of the column is already of the array's dtype (float times, float "
            "quantizations, bool flags; np.full of a bool is bool), so numpy infers the same "
            "dtype (the byte, k and kernel columns hold ints and are not here)",
            line,
        )
        for n, line in (
            (129, 'np.array(cols["t"], dtype=None)'),
            (131, 'np.array(cols["t"], )'),
            (135, 'np.array(cols["q"], dtype=None)'),
            (137, 'np.array(cols["q"], )'),
            (141, 'np.array(cols["fb"], dtype=None)'),
            (143, 'np.array(cols["fb"], )'),
            (165, "np.array(fpeak, dtype=None)"),
            (167, "np.array(fpeak, )"),
            (182, "isinstance(shape, Conv2d), dtype=None)"),
            (185, "isinstance(shape, Conv2d), )"),
        )
    },
    "paradnn.sim.steptime.x_channel_pad_efficiency__mutmut_1": (
        "at align = 1 (an int: parse_params takes only integers) every channel count is its own "
        "multiple of 1, so the formula gives (c/c)·(c'/c') = 1.0, the value the early return gives",
        "if align < 1:",
    ),
    # The Winograd alternative's placeholder: an array built with dtype=float turns None into
    # NaN, the value the original appends.
    **{
        name: ("np.array(..., dtype=float) turns None into NaN: the same array", line)
        for name, line in (
            ("paradnn.sim.steptime.x_build_plan__mutmut_147", "fpeak.append(None)"),
            ("paradnn.sim.steptime.x_build_plan__mutmut_148", "fbytes.append(None)"),
            ("paradnn.sim.opfit.x_op_plan__mutmut_73", "fpeak.append(None)"),
            ("paradnn.sim.opfit.x_op_plan__mutmut_74", "fbytes.append(None)"),
        )
    },
    "paradnn.memory.x_copies__mutmut_9": (
        "procs is an int: at procs = 1 both return procs (= 1), below 1 both return 1",
        "procs >= 1",
    ),
    **{
        f"paradnn.store.db.xǁStoreǁbaselines__mutmut_{n}": (
            "the SELECT names three columns, so every row has three values: strict never differs",
            line,
        )
        for n, line in ((15, '("name", "runs", "saved_at"), r, )'), (22, "r, strict=False))"))
    },
    **{
        f"paradnn.store.db.x__without_shm__mutmut_{n}": (
            "the folder was made by mkdtemp a moment before, owned by this process: removing it "
            "raises only if another process removed it first",
            line,
        )
        for n, line in (
            (59, "shutil.rmtree(folder, )"),
            (60, "shutil.rmtree(folder, ignore_errors=False)"),
        )
    },
    # the seed-13 sample's (2026-11-27)
    **{
        f"paradnn.store.db.x__sqlite_error__mutmut_{n}": (
            "the default is read only when write_failure gave words, which it gives only for an "
            "error carrying sqlite_errorcode (8, 10, 13 or 14): the attribute is always there",
            line,
        )
        for n, line in (
            (12, '"sqlite_errorcode", None) & 0xFF'),
            (15, '"sqlite_errorcode", ) & 0xFF'),
        )
    },
    "paradnn.store.db.x_write_failure__mutmut_11": (
        "an error without a code reads as 1 instead of 0: neither is 8, 10, 13 or 14, so both "
        "give None",
        "None) or 1) & 0xFF",
    ),
    "paradnn.memory.x_predict__mutmut_79": (
        "pure 16-bit's forward transient of 1 byte instead of 0 never makes forward the peak: "
        "backward's first moment holds the activations, a gradient share and the classifier's "
        "two fp32 logit gradients (every family ends in a GEMM classifier), more than 1 byte",
        "f32.floor // 2, 1, f32.buffers // 2",
    ),
    "paradnn.memory.xǁMemoryCheckǁwords__mutmut_14": (
        "lower_bytes and predicted_bytes are both None (no estimate) or both numbers: `and` "
        "and `or` agree",
        "self.lower_bytes is None and self.predicted_bytes is None",
    ),
    "paradnn.measure.stats.x__scipy_ranks__mutmut_13": (
        "one more point of the binomial cdf, at n + 1, where it is 1.0: never ≤ α/2, so the "
        "largest j below is the same",
        "np.arange(n + 2)",
    ),
}

# A mutant that only changes the letter case of SQL text (keywords, pragma names, table and
# column names) is the same statement to SQLite. Recognised by rule, not by name: the one
# changed line differs only in case, and every string literal that changed is SQL.
# Upper case only, as paradnn writes its SQL: a message with "and" or "from" in it is no SQL.
_SQL_WORDS = re.compile(
    r"\b(SELECT|INSERT|PRAGMA|BEGIN|COMMIT|ROLLBACK|WHERE|AND|ORDER BY|FROM|VALUES)\b"
)  # VALUES: the second line of an INSERT split over two literals (store/claims.py `claim`)
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')


def sql_case_only(diff: str) -> bool:
    """Whether `diff` only changes the case of SQL string literals (an equivalent mutant)."""
    lines = [x for x in diff.splitlines() if x[:1] in "-+" and x[:3] not in ("---", "+++")]
    minus = [x[1:] for x in lines if x[0] == "-"]
    plus = [x[1:] for x in lines if x[0] == "+"]
    if len(minus) != 1 or len(plus) != 1 or minus == plus:
        return False
    if minus[0].lower() != plus[0].lower():
        return False
    old, new = _LITERAL.findall(minus[0]), _LITERAL.findall(plus[0])
    changed = [a for a, b in zip(old, new, strict=False) if a != b]
    return len(old) == len(new) and bool(changed) and all(_SQL_WORDS.search(a) for a in changed)


SQL_CASE_REASON = "changes only the letter case of SQL text; SQLite keywords and names ignore case"

# mutmut's exit codes (mutmut.stats.status_by_exit_code), plus 4: pytest could not start
# because the mutant raised while conftest imported (e.g. TimingPolicy's validation), which is
# a failing suite like any other.
STATUS = {
    1: "killed",
    3: "killed",
    4: "killed at set-up",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    -9: "timeout",  # SIGKILL after the CPU limit
    37: "caught by type check",
    None: "unchecked",
}
KILLED = ("killed", "killed at set-up", "timeout", "caught by type check")


def _mutmut_main(argv: list[str]) -> None:
    """mutmut's command line, with one fix to its start-up check.

    Before mutating, mutmut runs the suite with every mutated function raising, and expects a
    failing exit code. paradnn's conftest builds a TimingPolicy (a mutated class) at import, so
    pytest stops at conftest with exit code 4 ("usage error"), which mutmut 3.8.1 takes for a
    bad command line. The check's purpose, a suite that fails when the mutants raise, is met;
    any other exit code is left to mutmut."""
    import mutmut.__main__ as mm
    from mutmut.runners.harness import BadTestExecutionCommandsException

    check = mm.run_forced_fail_test

    def forced_fail(runner) -> None:
        try:
            check(runner)
        except BadTestExecutionCommandsException:
            mm.set_mutant_under_test("")
            print("    done (the suite failed in conftest, as it should)")

    mm.run_forced_fail_test = forced_fail
    mm.cli(args=argv, prog_name="mutmut")


def _mutmut_generate(max_children: int) -> None:
    """Only the first step of `mutmut run`: copy the project into mutants/ and write every
    mutant, so that a fresh clone's first --sample has a pool to draw from without testing a
    whole group first (mutmut 3.8.1 has no command for this step alone)."""
    import mutmut.__main__ as mm

    mm.set_mutant_under_test("mutant_generation")
    (ROOT / "mutants").mkdir(exist_ok=True)
    mm.copy_src_dir()
    mm.copy_also_copy_files()
    mm.setup_source_paths()
    mm.store_lines_covered_by_tests()
    stats = mm.create_mutants(max_children)
    print(f"generated the mutants of {stats.mutated} files", flush=True)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def _load_results() -> dict[str, tuple[Path, int | None, float | None, float | None]]:
    """mutant name -> (source path, exit code, duration s, estimated test time s)."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.utils.file_utils import walk_mutatable_files

    out = {}
    for path in walk_mutatable_files():
        m = SourceFileMutationData(path=path)
        m.load()
        for name, code in m.exit_code_by_key.items():
            out[name] = (
                path,
                code,
                m.durations_by_key.get(name),
                m.estimated_time_of_tests_by_mutant.get(name),
            )
    return out


def _in_group(name: str, globs: tuple[str, ...]) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(name, g) for g in globs)


def _names(group: str, only: str | None, subset: list[str] | None = None) -> list[str]:
    """What to pass to `mutmut run`: the group's globs (or the `subset` of them asked for), or
    its mutants left from last time."""
    globs = GROUPS[group][0]
    if subset:
        globs = tuple(g for g in subset if _in_group(g.rstrip("*") + "x", globs))
        if not globs:
            return []
    if only is None or not (ROOT / "mutants").exists():
        return list(globs)
    res = _load_results()
    if not res:
        return list(globs)
    # survivors: those a test run left alive, not the never-checked rest of a sampled group
    want = ("unchecked",) if only == "unchecked" else ("survived", "no tests")
    picked = [
        n
        for n, (_, code, _, _) in res.items()
        if _in_group(n, globs) and STATUS.get(code, "suspicious") in (*want, "suspicious")
    ]
    return picked


def _sample(group: str, n: int, seed: int) -> list[str]:
    """n of the group's unchecked mutants, drawn uniformly (mutmut generates every mutant of
    every module on its first run, so the names exist after any run)."""
    import random

    globs = GROUPS[group][0]
    res = _load_results() if (ROOT / "mutants").exists() else {}
    pool = sorted(
        name
        for name, (_, code, _, _) in res.items()
        if _in_group(name, globs) and STATUS.get(code, "suspicious") == "unchecked"
    )
    return random.Random(seed).sample(pool, min(n, len(pool)))


def score_interval(killed: int, judged: int, level: float = 0.95) -> list[float] | None:
    """Clopper-Pearson interval of a score measured on a sample of `judged` mutants."""
    if judged <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(killed, judged).proportion_ci(confidence_level=level, method="exact")
    return [round(ci.low, 4), round(ci.high, 4)]


def _run_group(group: str, names: list[str], timeout: float, max_children: int) -> dict:
    cmd = [sys.executable, __file__, "--mutmut", "run", "--max-children", str(max_children)]
    log = ROOT / "mutants" / f"mutmut-{group}.log"
    log.parent.mkdir(exist_ok=True)
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen(
            [*cmd, *names], cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # mutmut and the workers it forked
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            rc, timed_out = None, True
    wall = time.monotonic() - t0
    tail = log.read_text(errors="replace")[-2000:]
    if rc not in (0, None):
        print(f"{group}: mutmut exited {rc}; the end of {log}:\n{tail}", file=sys.stderr)
    return {"wall_s": round(wall, 1), "exit_code": rc, "stopped_by_timeout": timed_out}


def _summarise(group: str, res: dict, run: dict | None, previous: dict | None) -> dict:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    globs, target = GROUPS[group]
    counts = dict.fromkeys(
        (
            "killed",
            "killed at set-up",
            "timeout",
            "survived",
            "suspicious",
            "no tests",
            "skipped",
            "caught by type check",
            "unchecked",
            "equivalent",
        ),
        0,
    )
    survivors, equivalent, stale, modules = [], [], [], set()
    done_s, done_n = 0.0, 0
    est_left = 0.0
    for name, (path, code, dur, est) in sorted(res.items()):
        if not _in_group(name, globs):
            continue
        modules.add(str(path))
        status = STATUS.get(code, "suspicious")
        if status != "unchecked" and dur:
            done_s, done_n = done_s + dur, done_n + 1
        if status == "unchecked":
            est_left += est or 0.0
        if status in ("survived", "suspicious", "no tests") and name not in EQUIVALENT:
            diff = get_diff_for_mutant(name, path=path)
            if sql_case_only(diff):
                counts["equivalent"] += 1
                equivalent.append({"name": name, "reason": SQL_CASE_REASON, "diff": diff})
                continue
        if status in ("survived", "suspicious", "no tests") and name in EQUIVALENT:
            reason, line = EQUIVALENT[name]
            diff = get_diff_for_mutant(name, path=path)
            if line in diff:
                counts["equivalent"] += 1
                equivalent.append({"name": name, "reason": reason, "diff": diff})
                continue
            stale.append(name)
        counts[status] += 1
        if status in ("survived", "suspicious", "no tests"):
            diff = get_diff_for_mutant(name, path=path)
            survivors.append({"name": name, "status": status, "diff": diff})
    total = sum(counts.values())
    killed = sum(counts[k] for k in KILLED)
    judged = total - counts["equivalent"] - counts["unchecked"] - counts["skipped"]
    score = killed / judged if judged else None
    out = {
        "modules": sorted(modules),
        "target": target,
        "mutants": total,
        **{k.replace(" ", "_"): v for k, v in counts.items()},
        "score": None if score is None else round(score, 4),
        "meets_target": None if score is None else score >= target,
        "complete": counts["unchecked"] == 0,
        # Of the checked mutants only: when they are a fresh sample (`--sample`), the interval
        # says where the whole group's score lies; when the group is complete it is exact.
        "score_ci95": None if counts["unchecked"] == 0 else score_interval(killed, judged),
        "survivors": survivors,
        "equivalent_mutants": equivalent,
    }
    if stale:
        out["stale_equivalences"] = stale  # the named mutant's diff no longer matches
    if counts["unchecked"]:
        # What the unchecked mutants would take at this machine's pace: the mean time of the
        # checked ones (mutmut's own estimates exist only for mutants it reached), per child.
        mean = done_s / done_n if done_n else 0.0
        guess = max(est_left, mean * counts["unchecked"])
        out["estimated_remaining_s"] = round(
            guess / max(1, (run or previous or {}).get("max_children", 1)), 1
        )
    if run is not None:
        out.update(run)
    elif previous:
        keep = ("wall_s", "exit_code", "stopped_by_timeout", "max_children", "date", "run_of")
        for k in keep:
            if k in previous:
                out[k] = previous[k]
    out["mutant_seconds"] = round(done_s, 1)  # summed per-mutant test time, all children
    drawn = out.pop("sample", None)
    sample = None
    if drawn:  # the drawn mutants alone: earlier runs' checked mutants are no random sample
        sample = _summarise(group, {n: res[n] for n in drawn if n in res}, None, None)
    _keep_fresh_sample(out, previous, sample)
    if drawn:
        out["fresh_sample"]["drawn"] = drawn
    return out


def _keep_fresh_sample(out: dict, previous: dict | None, sample: dict | None = None) -> None:
    """The interval estimates the group's score only from a fresh sample: the mutants one
    `--sample` run drew, counted alone. Mutants checked before it (an earlier sample, whose
    survivors then got tests) are no random sample, so the group's partial score gets no
    interval; the last sample's figures are kept as `fresh_sample` and carried forward."""
    if sample is not None:
        killed = sum(sample[k.replace(" ", "_")] for k in KILLED)
        judged = sample["mutants"] - sample["equivalent"] - sample["unchecked"] - sample["skipped"]
        out["fresh_sample"] = {
            "run_of": out.get("run_of"),
            "date": out.get("date"),
            "killed": killed,
            "judged": judged,
            "equivalent": sample["equivalent"],
            "score": sample["score"],
            "score_ci95": score_interval(killed, judged),
            "survivors": [m["name"] for m in sample["survivors"]],
        }
    elif previous and "fresh_sample" in previous:
        out["fresh_sample"] = previous["fresh_sample"]
    if not out["complete"]:
        out["score_ci95"] = None
        out["meets_target"] = _verdict(out)


def _verdict(out: dict) -> bool | None:
    """Whether an incompletely checked group meets its target: yes when even every unchecked
    mutant surviving would leave it there, no when the fresh sample's interval lies wholly
    below it, else undecided (None)."""
    killed = sum(out[k.replace(" ", "_")] for k in KILLED)
    judged = out["mutants"] - out["equivalent"] - out["skipped"]
    if judged and killed / judged >= out["target"]:
        return True
    ci = (out.get("fresh_sample") or {}).get("score_ci95")
    if ci and ci[1] < out["target"]:
        return False
    if ci and ci[0] >= out["target"]:
        return True
    return None


def _ensure_mutants(max_children: int) -> bool:
    """A sample is drawn from mutants that exist: on a fresh clone, generate them first."""
    if (ROOT / "mutants").exists():
        return True
    print("no mutants yet: generating them to draw the sample from", flush=True)
    cmd = [sys.executable, __file__, "--mutmut-generate", str(max_children)]
    gen = subprocess.run(cmd, cwd=ROOT)
    if gen.returncode != 0 or not (ROOT / "mutants").exists():
        print(f"generating the mutants failed (exit {gen.returncode})", file=sys.stderr)
        return False
    return True


def _run_samples_together(args: argparse.Namespace) -> dict[str, dict]:
    """Each group's sample drawn on its own (its own seed stream, as alone), then checked in
    one mutmut run: mutmut runs the clean tests of what it is given first, minutes per run
    with the whole selection, so one run instead of one per group saves them all but once.
    `--timeout` bounds that one run."""
    drawn = {}
    for g in args.group:
        drawn[g] = _sample(g, args.sample, args.seed)
        if not drawn[g]:
            print(f"{g}: no unchecked mutant left to sample (delete mutants/ to start over)")
    names = sorted({n for d in drawn.values() for n in d})
    if not names:
        return {}
    together = [g for g in args.group if drawn[g]]
    print(
        f"{', '.join(f'{g} {len(drawn[g])}' for g in together)}: one mutmut run "
        f"({len(names)} names, timeout {args.timeout:.0f} s)",
        flush=True,
    )
    run = _run_group("sample", names, args.timeout, args.max_children)
    print(f"sample: {run['wall_s']} s", flush=True)
    date = datetime.now(UTC).isoformat(timespec="seconds")
    return {
        g: {
            **run,
            "max_children": args.max_children,
            "date": date,
            "run_of": f"random sample of {len(drawn[g])} (seed {args.seed})",
            "sample": sorted(drawn[g]),
            "one_run_with": together,  # wall_s is that run's, all groups together
        }
        for g in together
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--mutmut"]:
        _mutmut_main(argv[1:])
        return 0
    if argv[:1] == ["--mutmut-generate"]:
        _mutmut_generate(int(argv[1]) if len(argv) > 1 else os.cpu_count() or 1)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--group", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    p.add_argument("--only", choices=("survivors", "unchecked"))
    p.add_argument("--timeout", type=float, default=3600, help="seconds per group")
    p.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--mutants",
        nargs="+",
        metavar="GLOB",
        help="run only these mutmut names (e.g. 'paradnn.analysis.roofline.*'); the rest of "
        "each group stays unchecked and is estimated",
    )
    p.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="check N mutants drawn at random from each group's unchecked ones (score ± CI)",
    )
    p.add_argument("--seed", type=int, default=0, help="the --sample draw's seed")
    p.add_argument("--note", help="a line stored in the JSON (e.g. what tree was measured)")
    p.add_argument("--report-only", action="store_true", help="write the JSON from the last runs")
    args = p.parse_args(argv)
    os.chdir(ROOT)
    import mutmut

    previous = {}
    if args.out.exists():
        try:
            previous = json.loads(args.out.read_text()).get("groups", {})
        except (json.JSONDecodeError, AttributeError):
            previous = {}
    runs = {}
    if args.sample and not args.report_only and not _ensure_mutants(args.max_children):
        return 1
    if args.sample and not args.report_only and len(args.group) > 1:
        runs = _run_samples_together(args)
    elif not args.report_only:
        for g in args.group:
            names = (
                _sample(g, args.sample, args.seed)
                if args.sample
                else _names(g, args.only, args.mutants)
            )
            if not names and args.sample:
                print(f"{g}: no unchecked mutant left to sample (delete mutants/ to start over)")
                continue
            if not names:
                print(f"{g}: nothing to run")
                continue
            print(f"{g}: mutmut run ({len(names)} names, timeout {args.timeout:.0f} s)", flush=True)
            runs[g] = _run_group(g, names, args.timeout, args.max_children)
            runs[g]["max_children"] = args.max_children
            runs[g]["date"] = datetime.now(UTC).isoformat(timespec="seconds")
            runs[g]["run_of"] = (
                f"random sample of {len(names)} (seed {args.seed})"
                if args.sample
                else args.only or "all"
            )
            if args.sample:
                runs[g]["sample"] = sorted(names)
            print(f"{g}: {runs[g]['wall_s']} s", flush=True)
    from mutmut.configuration import config

    config()  # reads [tool.mutmut] from ./pyproject.toml
    res = _load_results()
    groups = {}
    for g in GROUPS:
        if g in runs or g in previous or any(_in_group(n, GROUPS[g][0]) for n in res):
            groups[g] = _summarise(g, res, runs.get(g), previous.get(g))
            old = previous.get(g) or {}
            if (
                g not in runs
                and groups[g]["mutants"] == groups[g]["unchecked"]
                and old.get("mutants", 0) > old.get("unchecked", 0)
            ):
                # mutmut reset its results (a changed test selection resets them all): keep
                # the last measured numbers of a group this invocation did not run.
                groups[g] = {**old, "kept_from": old.get("date")}
    doc = {
        "what": "mutation testing of analysis, sim, the timer and statistics, store, memory",
        "tool": "mutmut",
        "tool_version": mutmut.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "score_rule": (
            "(killed + killed at set-up + timeout) / (mutants - equivalent - unchecked); "
            "survived, suspicious and no-tests mutants count against"
        ),
        "groups": groups,
    }
    if args.note:
        doc["note"] = args.note
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    for g, s in groups.items():
        score = "n/a" if s["score"] is None else f"{100 * s['score']:.1f}%"
        left = "" if s["complete"] else f", {s['unchecked']} unchecked"
        if s.get("score_ci95"):
            lo, hi = s["score_ci95"]
            left += f"; checked ones' score 95% CI [{100 * lo:.1f}%, {100 * hi:.1f}%]"
        fresh = s.get("fresh_sample")
        if fresh and fresh.get("score_ci95"):
            lo, hi = fresh["score_ci95"]
            left += (
                f"; its last {fresh['run_of']}, counted alone: {100 * fresh['score']:.1f}% "
                f"[{100 * lo:.1f}%, {100 * hi:.1f}%]"
            )
        meets = {True: "yes", False: "no", None: "undecided"}[s.get("meets_target")]
        print(
            f"{g:12s} {score:>6s} (target {100 * s['target']:.0f}%): {s['killed']} killed, "
            f"{s['survived']} survived, {s['timeout']} timeout, {s['suspicious']} suspicious, "
            f"{s['no_tests']} no tests, {s['equivalent']} equivalent{left}; meets target: {meets}"
        )
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
