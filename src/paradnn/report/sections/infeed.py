"""The report's data-infeed section (docs/infeed.md): the infeed share per run and over a
family's space (seed 000 Fig. 5 plots it per real model), §4.4's gain from removing the infeed
bottleneck per model, observation 4's verdict and the simulator's input term against the
measurements."""

from __future__ import annotations

from paradnn.analysis import infeed as I
from paradnn.plots import infeed as P
from paradnn.report.paired import Fig, HeatMap, Notes, Paired, PerFamily, Study, Tab, columns
from paradnn.report.section import Section
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


def _studies(data) -> list[Study]:
    """Each host-fed source (and loader worker count) against device data."""
    studies = [I.study(data, kind, workers) for kind, workers in I.variants(data)]
    return [
        Study(data, st, {"v": st.source, "slug": st.source.replace(" ", "-")})
        for st in studies
        if st is not None
    ]  # st.source: the label, e.g. "pipeline w2"


def _gains(st: Study):
    c = st.got.comparison
    return columns(c.pairs, PAIR_COLUMNS) if c is not None else None


def _verdict(data) -> str:
    f = I.infeed_finding(data)
    decide = f" What would decide it: {f.decide}." if f.decide else ""
    return f"Observation 4 ({f.verdict}): {f.evidence}.{decide} Rule: {f.rule}."


SECTION = Section(
    "infeed",
    "Host data infeed (seed 000 Fig. 5, §4.4, observation 4)",
    Paired(
        _studies,
        parts=(
            Fig(
                "infeed-{slug}-shares",
                lambda st: P.share_bars(st.got.runs, st.keys["v"]),
                "{v}: infeed share of the step per config (red: input-bound)",
            ),
            PerFamily(
                lambda st: st.got.runs["family"],
                parts=(
                    HeatMap(
                        "infeed-{slug}-{family}-map",
                        lambda st: I.share_map(st.got.runs, st.keys["family"]),
                        lambda st, grid, y, x: P.share_map(
                            grid, st.keys["family"], st.keys["v"], y, x
                        ),
                        "{family}: infeed share over {y} × {x} ({v}; no seed figure: seed 000 "
                        "Fig. 5 plots real models; other hyperparameters pooled by the mean)",
                    ),
                ),
            ),
            Fig(
                "infeed-{slug}-gains",
                lambda st: P.gains(st.got.real, st.keys["v"], I.SEED_RANGE),
                "Gain from removing the {v} infeed per model (seed 000 §4.4)",
                when=lambda st: (
                    bool(len(st.got.real)) and bool(st.got.real["gain_geomean"].notna().any())
                ),
            ),
            Tab(
                "infeed-{slug}-models",
                lambda st: st.got.real,
                "{v} per model: configs, median infeed share, input-bound runs, and the "
                "geometric-mean gain of device data over it with its 95% CI",
            ),
            Tab("infeed-{slug}-runs", lambda st: columns(st.got.runs, RUN_COLUMNS), "{v} runs"),
            Tab(
                "infeed-{slug}-gains",
                _gains,
                "Gain of device data over {v} per config",
                nonempty=True,
            ),
            Notes(lambda st: st.got.notes, prefix="{v}: "),
            Notes(lambda st: [check(I.simulator_rows(st.got.runs)).summary()], prefix="{v}: "),
        ),
        verdict=_verdict,
        empty=(
            "Needs runs on host-fed data: `paradnn run --preset infeed` (device, host and "
            "pipeline over small CNNs and a real model), or any sweep with `--data device "
            "--data pipeline`; in the terminal: `paradnn compare --by data_source --a pipeline "
            "--b device`."
        ),
    ),
    intro=INTRO,
    step="infeed",
)
