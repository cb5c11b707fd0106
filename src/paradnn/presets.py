"""Named sweeps shipped with paradnn (`paradnn/sweeps/<name>.toml`); `RunSpec` (one run's
description) lives in `paradnn.config` and is re-exported here.

Torch-free, so `paradnn families`/`--dry-run` can list and expand them cheaply. A preset is an
ordinary sweep file (docs/sweeps.md): copy one to start your own and pass its path instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from importlib import resources
from typing import TYPE_CHECKING

from paradnn.config import RunSpec
from paradnn.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.sweep import Sweep

__all__ = ["DEFAULT", "RunSpec", "get", "names", "resolve_native"]

DEFAULT = "quick"


def resolve_native(specs: list[RunSpec], native: list[str]) -> tuple[list[RunSpec], list[str]]:
    """Replace each `native` placeholder by a run at every low precision the device runs
    natively (precision-major, like the rest), and say what it became."""
    from paradnn.precisions import LOW_PRECISIONS

    held = [s for s in specs if s.native]
    if not held:
        return list(specs), []
    lows = [p for p in LOW_PRECISIONS if p in native]
    out = [s for s in specs if not s.native]
    seen = {_identity(s) for s in out}
    for p in lows:
        for s in held:
            spec = dataclasses.replace(
                s, options=dataclasses.replace(s.options, precision=p), native=False
            )
            if _identity(spec) not in seen:
                seen.add(_identity(spec))
                out.append(spec)
    note = (
        f"native low precisions on this device: {', '.join(lows)}"
        if lows
        else "native low precisions on this device: none (fp32 only; `paradnn platforms` says "
        "why, and --allow-emulated with -p bf16 runs one emulated)"
    )
    return out, [note]


def _identity(s: RunSpec) -> tuple[str, str, str]:
    return (s.family, repr(sorted(s.config.items())), repr(s.options))


@functools.cache
def names() -> list[str]:
    """The shipped presets, the default first."""
    files = resources.files("paradnn") / "sweeps"
    found = sorted(
        f.name.removesuffix(".toml") for f in files.iterdir() if f.name.endswith(".toml")
    )
    # the default, then `cpu`: the two that run anywhere come first in help and error messages
    return sorted(found, key=lambda n: (n != DEFAULT, n != "cpu"))


def get(name: str) -> Sweep:
    """A shipped preset by name, or a sweep file by path (a name ending in .toml, or any
    existing file). Shipped names win over files of the same name in the working directory."""
    from paradnn.sweep import load

    if not isinstance(name, str) or not name or not name.isprintable() or len(name) > 4096:
        raise ConfigError(
            "preset",
            name,
            f"must be one of {', '.join(names())} or a path to a .toml sweep file "
            "(printable, at most 4096 characters)",
        )
    if name in names():
        return _preset(name)
    if name.endswith(".toml") or os.path.isfile(name):
        return load(name)
    raise ConfigError(
        "preset", name, f"must be one of {', '.join(names())} or a path to a .toml sweep file"
    )


@functools.cache
def _preset(name: str) -> Sweep:
    """Parsed once per process: the CLI and the library both ask for the same preset."""
    from paradnn.sweep import parse

    text = (resources.files("paradnn") / "sweeps" / f"{name}.toml").read_text(encoding="utf-8")
    return parse(text, label=f"{name}.toml", source="<preset>", name=name)
