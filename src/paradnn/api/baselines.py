"""Baselines and history (docs/baselines.md): name a set of runs ("main", "before-upgrade",
a commit), compare the newest runs against it later with the same interval machinery as
`compare`, and list one configuration across time, versions and baselines. Torch-free."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paradnn import families
from paradnn.api.analysis import databases
from paradnn.api.returns import Baseline, Rows, rows
from paradnn.errors import ConfigError
from paradnn.store import DEFAULT_DB, open_store
from paradnn.validate import plain_text

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.analysis import Comparison

MAX_NAME = 100
NAME_ALLOWED = f"a name of 1 to {MAX_NAME} printable ASCII characters (e.g. main, v2.13)"


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or not plain_text(name, MAX_NAME):
        raise ConfigError("baseline", name, NAME_ALLOWED)
    return name


def baseline_save(
    name: str,
    db: str = DEFAULT_DB,
    *,
    replace: bool = False,
    where: Mapping[str, Any] | None = None,
    **filters: Any,
) -> Baseline:
    """Name `name` the runs of `db` that ran ok, each run key by its chosen attempt (its best
    good attempt, else its latest: paradnn.attempts), narrowed as `results` narrows (`where`:
    study axes; `filters`: family, sweep, quality). A name already saved is refused unless
    `replace`; a baseline of nothing is refused (it would compare nothing)."""
    from paradnn.api.runs import results
    from paradnn.records import now

    name = _name(name)
    if not isinstance(replace, bool):
        raise ConfigError("replace", replace, "must be true or false")
    if "status" in filters:
        raise ConfigError("status", filters["status"], "a baseline holds ok runs only")
    found = results(db, chosen=True, where=where, status="ok", **filters)
    if not len(found):
        raise ConfigError("baseline", name, f"would name no runs: {db} has no ok run matching")
    saved_at = now()
    with open_store(db) as store:
        saved = store.save_baseline(name, [int(r["id"]) for r in found], saved_at, replace)
    if not saved:
        raise ConfigError("baseline", name, "is saved already; --replace to replace it")
    return Baseline(name, db, len(found), saved_at)


def baseline_list(db: str = DEFAULT_DB) -> list[Baseline]:
    """The baselines saved in `db`, by name."""
    with open_store(db, readonly=True) as store:
        return [Baseline(b["name"], db, b["runs"], b["saved_at"]) for b in store.baselines()]


def baseline_delete(name: str, db: str = DEFAULT_DB) -> Baseline:
    """Forget the baseline `name` (its runs stay); refused when `db` has no such baseline."""
    name = _name(name)
    with open_store(db, readonly=True) as store:
        known = {b["name"]: b for b in store.baselines()}
    if name not in known:
        raise ConfigError("baseline", name, _known(db, list(known)))
    with open_store(db) as store:
        store.delete_baseline(name)
    return Baseline(name, db, known[name]["runs"], known[name]["saved_at"])


def _known(where: str, names: list[str]) -> str:
    return f"no such baseline in {where}; saved: " + (", ".join(names) or "none")


def _members(dbs: list[str]) -> dict[str, dict[tuple[str, int], list[str]]]:
    """name -> {(db, row id): [name]} over every database (a name in several: all its runs)."""
    found: dict[str, dict[tuple[str, int], list[str]]] = {}
    for db in dbs:
        with open_store(db, readonly=True) as store:
            for b in store.baselines():
                ids = store.baseline_ids(b["name"])
                found.setdefault(b["name"], {}).update({(db, i): [b["name"]] for i in ids})
    return found


def compare_baseline(
    name: str,
    db: str | Sequence[str] = DEFAULT_DB,
    metric: str = "examples_per_s",
    family: str | None = None,
    include_noisy: bool = False,
) -> Comparison:
    """The newest runs against the baseline `name` (saved in any of the databases `db`):
    per configuration, the newest run outside the baseline that started after it, as group
    b ("newest") over the baseline as group a, each with a 95% bootstrap CI and a call, the
    geomean with its interval (analysis.speedup.against_baseline). Noisy runs are left out
    unless `include_noisy`. A name no database holds is one ConfigError line."""
    import pandas as pd

    from paradnn import analysis
    from paradnn.analysis.speedup import against_baseline

    name = _name(name)
    dbs = databases(db, None, "compare_baseline")
    data = analysis.load(dbs)  # a missing database: one line, before the baselines are read
    members = _members(dbs)
    if name not in members:
        raise ConfigError("baseline", name, _known(", ".join(dbs), sorted(members)))
    held = pd.DataFrame(list(members[name]), columns=["db", "id"])
    return against_baseline(
        data, held, name, metric=metric, family=family, include_noisy=include_noisy
    )


def history(
    family: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    model: str | None = None,
    db: str | Sequence[str] = DEFAULT_DB,
    where: Mapping[str, Any] | None = None,
) -> Rows:
    """Every stored attempt of one configuration (`family` with `config`, fields left out at
    their defaults; or a model of your own, `model`), in every database `db`, oldest first:
    when, where, which torch and paradnn, the baselines naming it, the step time's median and
    95% CI, whether it is its run key's chosen attempt. `where`: study axes as `results`."""
    from paradnn import analysis
    from paradnn.analysis.history import history as _history
    from paradnn.api.runs import IDENTITY_FILTERS, _mapping, own_model

    family, config = own_model(family, config, model)
    fam = families.get(family)
    cfg = fam.config(_mapping(family, config))
    for k in where or {}:
        if k not in IDENTITY_FILTERS:
            raise ConfigError("where", k, "must be one of " + ", ".join(IDENTITY_FILTERS))
    dbs = databases(db, None, "history")
    data = analysis.load(dbs)
    held: dict[tuple[str, int], list[str]] = {}
    for ids in _members(dbs).values():
        for k, v in ids.items():
            held.setdefault(k, []).extend(v)
    frame = _history(data, family, dict(cfg.__dict__), where, held)
    return rows("history", frame.astype(object).where(frame.notna(), None).to_dict("records"))
