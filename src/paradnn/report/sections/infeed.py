"""The report's data-infeed section (docs/infeed.md): the infeed share per run and over a
family's space (seed 000 Fig. 5 plots it per real model), §4.4's gain from removing the infeed
bottleneck per model, observation 4's verdict and the simulator's input term against the
measurements."""

from __future__ import annotations

from paradnn.analysis import infeed as I
from paradnn.plots import infeed as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer
from paradnn.sim.infeed_check import check

INTRO = (
    "Each host-fed run took every step's batch from the host: `host` copies pinned host "
    "tensors to the device each step; `pipeline` reads JPEG images and token files that paradnn "
    "wrote to a local cache, decoded and augmented by a torch DataLoader. Infeed share = (time "
    "blocked waiting for the batch + host time copying it) ÷ the timed window's wall time "
    "(seed 000 Fig. 5 plots the TPU infeed time of its six real models). Gain = examples/s "
    "of the same config on device data "
    "(the batch resident on the device: no infeed) over the host-fed run, a ratio of medians "
    "with a 95% bootstrap CI: what removing the infeed bottleneck buys (seed 000 §4.4: +34% "
    "ResNet-50 to +180% SqueezeNet on TPU). Input-bound: the infeed drained alone (no model) is "
    "slower than the model alone on device data."
)
RUN_COLUMNS = (
    "family", "config_key", "data_source", "loader_workers", "infeed_share", "data_wait_s",
    "data_copy_s", "loader_examples_per_s", "model_only_examples_per_s", "input_bound",
    "host_cpu_cores", "host_cpu_share", "examples_per_s",
)  # fmt: skip
PAIR_COLUMNS = ("family", "config_key", "speedup", "ci_low", "ci_high", "call")


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    for kind, workers in I.variants(data):
        st = I.study(data, kind, workers)
        if st is None:
            continue
        runs, source = st.runs, st.source  # source: the label, e.g. "pipeline w2"
        slug = source.replace(" ", "-")
        s.figures.append(
            w.figure(f"infeed-{slug}-shares", P.share_bars(runs, source),
                     f"{source}: infeed share of the step per config (red: input-bound)")
        )  # fmt: skip
        for family in sorted(set(runs["family"])):
            h = I.share_map(runs, family)
            if h is None:
                continue
            grid, y, x = h
            s.figures.append(
                w.figure(
                    f"infeed-{slug}-{family}-map",
                    P.share_map(grid, family, source, y, x),
                    f"{family}: infeed share over {y} × {x} ({source}; no seed figure: seed "
                    "000 Fig. 5 plots real models; other hyperparameters pooled by the mean)",
                )
            )
        if len(st.real) and st.real["gain_geomean"].notna().any():
            s.figures.append(
                w.figure(f"infeed-{slug}-gains", P.gains(st.real, source, I.SEED_RANGE),
                         f"Gain from removing the {source} infeed per model (seed 000 §4.4)")
            )  # fmt: skip
        s.tables.append(
            w.table(f"infeed-{slug}-models", st.real,
                    f"{source} per model: configs, median infeed share, input-bound runs, and "
                    "the geometric-mean gain of device data over it with its 95% CI")
        )  # fmt: skip
        cols = [c for c in RUN_COLUMNS if c in runs]
        s.tables.append(w.table(f"infeed-{slug}-runs", runs[cols], f"{source} runs"))
        c = st.comparison
        if c is not None and len(c.pairs):
            cols = [x for x in PAIR_COLUMNS if x in c.pairs]
            s.tables.append(
                w.table(f"infeed-{slug}-gains", c.pairs[cols],
                        f"Gain of device data over {source} per config")
            )  # fmt: skip
        s.notes.extend(f"{source}: {n}" for n in st.notes)
        s.notes.append(f"{source}: {check(I.simulator_rows(runs)).summary()}")
    if s.figures or s.tables:
        f = I.infeed_finding(data)
        decide = f" What would decide it: {f.decide}." if f.decide else ""
        s.notes.insert(0, f"Observation 4 ({f.verdict}): {f.evidence}.{decide} Rule: {f.rule}.")
    else:
        s.empty = (
            "Needs runs on host-fed data: `paradnn run --preset infeed` (device, host and "
            "pipeline over small CNNs and a real model), or any sweep with `--data device "
            "--data pipeline`; in the terminal: `paradnn compare --by data_source --a pipeline "
            "--b device`."
        )


SECTION = Section(
    "infeed",
    "Host data infeed (seed 000 Fig. 5, §4.4, observation 4)",
    fill,
    intro=INTRO,
    step="infeed",
)
