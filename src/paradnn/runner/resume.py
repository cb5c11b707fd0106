"""A resumed sweep says what it keeps (issue 46).

A run key identifies what was measured (the config, precision, mode, the environment), not how
long or how strictly it was timed: a sweep resumed after its file asked for a stricter timing
policy, energy or a profile keeps its stored configurations as they are. Each record now
carries the settings it was measured with (`env.measured_with`), so a resumed sweep can say
which stored configurations it keeps under other settings (`--remeasure-changed` measures
them again, as new attempts), which were stored under another sweep name, and which were
stored before the settings were recorded. Torch-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

MAX_NAMED = 3  # configurations a note names before it says "and N more"


def measured_with(options: Any) -> dict[str, Any]:
    """What a sweep measures with beyond its run keys: the timing policy, energy, a profile."""
    return {
        "timing": dataclasses.asdict(options.timing),
        "energy": bool(options.energy),
        "profile": bool(options.profile),
    }


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(stored: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """`setting stored → now` for each setting that differs ([] when none, or when the
    stored settings are unknown: `stored` None)."""
    if not isinstance(stored, Mapping):
        return []
    was, new = _flat(stored), _flat(now)
    return [f"{k} {was.get(k)!r} → {new[k]!r}" for k in sorted(new) if was.get(k) != new[k]]


@dataclasses.dataclass(frozen=True)
class Kept:
    """A stored configuration a resumed sweep keeps: its label, the sweep name it was stored
    under and the settings it was measured with (None: not recorded)."""

    label: str
    sweep: str | None
    settings: Mapping[str, Any] | None


def _named(labels: Sequence[str]) -> str:
    shown = "; ".join(labels[:MAX_NAMED])
    more = len(labels) - MAX_NAMED
    return shown + (f"; and {more} more" if more > 0 else "")


def _n(count: int, what: str) -> str:
    return f"{count} stored {what}{'s' if count != 1 else ''}"


def kept_notes(kept: Sequence[Kept], now: Mapping[str, Any], sweep: str | None) -> list[str]:
    """What a resumed sweep says about the stored configurations it keeps: those measured
    with other settings (and what differs, and how to measure them again), those stored under
    another sweep name, and those whose settings were not recorded."""
    notes = []
    changed = [k for k in kept if differences(k.settings, now)]
    if changed:
        diffs = sorted({d for k in changed for d in differences(k.settings, now)})
        notes.append(
            f"kept {_n(len(changed), 'configuration')} measured with other settings "
            f"({', '.join(diffs)}): {_named([k.label for k in changed])}; "
            "--remeasure-changed measures them again with these (new attempts; each config's "
            "best good attempt counts)"
        )
    renamed: dict[str, list[str]] = {}
    for k in kept:
        if sweep is not None and k.sweep is not None and k.sweep != sweep:
            renamed.setdefault(k.sweep, []).append(k.label)
    for name, labels in sorted(renamed.items()):
        notes.append(
            f"kept {_n(len(labels), 'configuration')} of sweep {name!r} (the same run keys): "
            f"{_named(labels)}; `paradnn results --sweep {name}` lists them"
        )
    unknown = [k for k in kept if not isinstance(k.settings, Mapping)]
    if unknown:
        notes.append(
            f"kept {_n(len(unknown), 'configuration')} measured before paradnn recorded the "
            f"timing settings of a run: {_named([k.label for k in unknown])}; a new --db "
            "measures the whole sweep anew"
        )
    return notes


__all__ = ["Kept", "differences", "kept_notes", "measured_with"]
