"""The report's backend section (docs/jax.md): the same configs on PyTorch and on JAX/XLA."""

from __future__ import annotations

from paradnn.analysis import backends as B
from paradnn.plots import modes as PM
from paradnn.report.paired import Fig, Notes, Paired, Study, Tab, columns, short_errors
from paradnn.report.section import Section

PAIR_COLUMNS = (
    "family",
    "config_key",
    "precision",
    "speedup",
    "ci_low",
    "ci_high",
    "call",
    "value_a",
    "value_b",
    "xla_lower_s",
    "xla_compile_s",
    "xla_flops_ratio",
    "xla_flops_mismatch",
)


def _studies(data) -> list[Study]:
    """JAX against each torch engine that ran (`data` is already filtered)."""
    studies = [(b, B.study(data, b, include_noisy=True)) for b in B.torch_engines(data)]
    return [Study(data, st, {"v": b}) for b, st in studies if st is not None]


SECTION = Section(
    "backends",
    "Backends (JAX/XLA against PyTorch)",
    Paired(
        _studies,
        parts=(
            Fig(
                "backends-jax-{v}-families",
                lambda st: PM.speedups_by_family(
                    st.got.families, st.keys["v"], ylabel=st.text("jax over {v}")
                ),
                "jax over {v}: geometric-mean ratio of examples/s per family, 95% CI",
            ),
            Tab(
                "backends-jax-{v}-families",
                lambda st: st.got.families,
                "jax over {v} per family: geometric mean with its 95% CI and the medians of "
                "XLA's lowering and compile seconds and its FLOP ratio",
            ),
            Tab(
                "backends-jax-{v}-configs",
                lambda st: columns(st.got.pairs, PAIR_COLUMNS),
                "jax over {v} per config",
            ),
            Notes(lambda st: st.got.notes, prefix="jax vs {v}: "),
        ),
        unpaired="jax vs {v}: no configuration ran ok on both.",
        after=(
            Tab(
                "backends-xla-flops",
                lambda st: B.flop_agreement(st.data),
                "XLA FLOPs / analytic FLOPs per family (whole step; grad: forward+backward "
                "before optimisation) and rows flagged beyond ±10 %",
                nonempty=True,
            ),
            Tab(
                "backends-failures",
                lambda st: short_errors(B.failures(st.data)),
                "JAX runs that did not finish ok",
                nonempty=True,
            ),
        ),
        empty=(
            "Needs runs on both backends over the same configs: `paradnn run --preset quick "
            "--backend torch --backend jax` (pip install 'paradnn[jax]'); in the terminal: "
            "`paradnn compare --by backend --a torch --b jax`."
        ),
    ),
    intro=(
        "Each config ran on PyTorch and on JAX (one jitted step with donated buffers, lowered "
        "and compiled by XLA before the first step, each run in a fresh worker). Ratio = "
        "examples/s on JAX over examples/s on the torch engine (eager or a torch.compile "
        "mode), a ratio of medians with a 95% bootstrap CI from the raw samples. XLA FLOPs / "
        "analytic: XLA's cost analysis of the whole step (optimizer and element-wise ops "
        "included) over the analytic model FLOPs; rows off by more than 10 % are flagged."
    ),
    step="backends",
)
