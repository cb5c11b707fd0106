"""The report's backend section (docs/jax.md): the same configs on PyTorch and on JAX/XLA."""

from __future__ import annotations

from paradnn.analysis import backends as B
from paradnn.plots import modes as PM
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer

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


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    for base in B.torch_engines(data):
        st = B.study(data, base, include_noisy=True)  # `data` is already filtered
        if st is None:
            continue
        if not len(st.pairs):
            s.notes.append(f"jax vs {base}: no configuration ran ok on both.")
            continue
        s.figures.append(
            w.figure(
                f"backends-jax-{base}-families",
                PM.speedups_by_family(st.families, base, ylabel=f"jax over {base}"),
                f"jax over {base}: geometric-mean ratio of examples/s per family, 95% CI",
            )
        )
        s.tables.append(
            w.table(
                f"backends-jax-{base}-families",
                st.families,
                f"jax over {base} per family: geometric mean with its 95% CI and the medians of "
                "XLA's lowering and compile seconds and its FLOP ratio",
            )
        )
        cols = [c for c in PAIR_COLUMNS if c in st.pairs]
        s.tables.append(
            w.table(f"backends-jax-{base}-configs", st.pairs[cols], f"jax over {base} per config")
        )
        s.notes.extend(f"jax vs {base}: {n}" for n in st.notes)
    agree = B.flop_agreement(data)
    if len(agree):
        s.tables.append(
            w.table(
                "backends-xla-flops",
                agree,
                "XLA FLOPs / analytic FLOPs per family (whole step; grad: forward+backward "
                "before optimisation) and rows flagged beyond ±10 %",
            )
        )
    bad = B.failures(data)
    if len(bad):
        bad = bad.assign(error=bad["error"].map(lambda e: (e or "")[:200]))
        s.tables.append(w.table("backends-failures", bad, "JAX runs that did not finish ok"))
    if not s.figures and not s.tables:
        s.empty = (
            "Needs runs on both backends over the same configs: `paradnn run --preset quick "
            "--backend torch --backend jax` (pip install 'paradnn[jax]'); in the terminal: "
            "`paradnn compare --by backend --a torch --b jax`."
        )


SECTION = Section(
    "backends",
    "Backends (JAX/XLA against PyTorch)",
    fill,
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
