"""`paradnn versions`: the software-version study — one cached environment per torch version,
the same sweep in each into one database, and the speedups between versions with intervals."""

from __future__ import annotations

from typing import Annotated

import typer

from paradnn import api
from paradnn.axes import listing
from paradnn.cli import tables
from paradnn.cli.common import (
    DEVICE,
    PRECISION,
    DbOpt,
    MaxTimeOpt,
    MinTimeOpt,
    ThreadsOpt,
    enum_choice,
    error_line,
    out,
    timing,
    unique,
    words_option,
)
from paradnn.cli.progress import ProgressMode, say
from paradnn.config import PRECISIONS
from paradnn.store import DEFAULT_DB

PROGRESS = enum_choice("--progress", ProgressMode)
CpuFirstDeviceOpt = words_option(str, "--device", DEVICE, "{values}.")
RunProgressOpt = words_option(
    ProgressMode, "--progress", PROGRESS, "Each run's progress: {values}."
)


def versions(
    torch: Annotated[
        str,
        typer.Option(
            "--torch",
            help="Torch versions, comma-separated: e.g. 2.11.0,2.13.0 (the first is the baseline).",
            show_default=False,
        ),
    ],
    preset: Annotated[
        str, typer.Option("--preset", help="The sweep to run in each (preset or .toml file).")
    ] = "quick",
    db: DbOpt = DEFAULT_DB,
    cache: Annotated[
        str | None,
        typer.Option(
            "--cache",
            help="Where the environments live (default $PARADNN_ENV_CACHE, else "
            "~/.cache/paradnn/envs); a ready one is reused.",
        ),
    ] = None,
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            help="Package index for torch (e.g. PyTorch's CPU wheels); default: the installer's.",
        ),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Install only from local wheels and caches.")
    ] = False,
    deps: Annotated[
        bool,
        typer.Option(
            "--deps/--no-deps",
            help="Install torch's own dependencies into each environment (a CUDA build's NVIDIA "
            "libraries); --no-deps installs torch alone (enough for a CPU wheel: faster, smaller).",
        ),
    ] = True,
    device: CpuFirstDeviceOpt = "cpu",
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision",
            "-p",
            parser=PRECISION,
            callback=unique("--precision"),
            help=f"Override the sweep's precisions (repeatable): {listing(PRECISIONS)}.",
        ),
    ] = None,
    threads: ThreadsOpt = None,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    progress: RunProgressOpt = ProgressMode.bar,
    include_noisy: Annotated[
        bool, typer.Option("--include-noisy", help="Keep runs flagged noisy in the comparison.")
    ] = False,
) -> None:
    """The software-version study: build (once, cached) an environment per torch version with
    uv (else venv + pip), run the same sweep in each into one database, and show each
    version's speedup over the first per config, with 95% intervals. A version that cannot be
    installed is one line; the others go on. See docs/versions.md."""
    from paradnn import presets

    timing(min_time, max_time, presets.get(preset).timing)  # --max-time under --min-time: now
    study = api.versions(
        torch,
        preset,
        db=db,
        cache=cache,
        index_url=index_url,
        offline=offline,
        deps=deps,
        device=device,
        precisions=precision,
        threads=threads,
        min_time=min_time,
        max_time=max_time,
        progress=progress.value,
        include_noisy=include_noisy,
        say=say,
        on_failure=error_line,
    )
    for v, code in study.sweep_codes.items():
        if code != 0:
            error_line(f"its sweep exited {code} (runs so far are stored)", f"torch {v}:", "yellow")
    for c in study.comparisons:
        out.print(tables.speedup_summary(c))
        if len(c.pairs):
            out.print(tables.speedup_pairs(c, 20))
    if not study.comparisons:
        measured = ", ".join(study.stored.values()) or "none"
        out.print(
            f"torch versions measured in {db}: {measured}; a comparison needs two "
            "(`paradnn compare --by torch_version` once there are)."
        )
    if not study.envs:
        raise typer.Exit(1)
