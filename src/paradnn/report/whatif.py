"""`report --what-if`: the chips it names (checked before any work), their predicted rows on the
report's data (kept apart from the runs: analysis/whatif.py) and where its section goes."""

from __future__ import annotations

from collections.abc import Sequence

from paradnn.analysis import Data
from paradnn.analysis import whatif as W
from paradnn.analysis.frames import chosen_ok
from paradnn.report.section import Section
from paradnn.report.sections import whatif
from paradnn.sim import errorbands
from paradnn.sim import whatif as SW
from paradnn.sim.chip import Chip


def resolve_what_if(value: str | Sequence[str] | None) -> list[Chip]:
    """The chips of a --what-if value ([] when not given); one line, exit 2, when bad."""
    if value is None or (not isinstance(value, str) and not list(value)):
        return []
    return SW.resolve(value)


def with_what_if(data: Data, chips: Sequence[Chip], bands: errorbands.Bands | None = None) -> Data:
    """`data` with each ok config predicted on each chip (`Data.predicted`; `runs` untouched)."""
    ok = chosen_ok(data)
    targets = [
        SW.Target(str(r["family"]), _config(r["config"]), str(r["precision"]), _opt(r))
        for _, r in ok.iterrows()
    ]
    return W.with_predictions(data, SW.predict_rows(targets, chips, bands))


def _config(c) -> dict:
    import json

    return json.loads(c) if isinstance(c, str) else dict(c)


def _opt(r) -> str | None:
    v = r.get("optimizer")
    return str(v) if isinstance(v, str) and v else None


def sections_for(sections: Sequence[Section], what_if: bool) -> list[Section]:
    """The report's sections, with the what-if one before the prediction section when asked."""
    if not what_if:
        return list(sections)
    ids = [s.id for s in sections]
    at = ids.index("prediction") if "prediction" in ids else len(ids)
    return [*sections[:at], whatif.SECTION, *sections[at:]]
