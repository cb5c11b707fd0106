"""The software-version study (seed 000 §6, observations 12 and 14): the same sweep under each
torch version, one cached environment per version, into one database; then the speedup of each
version over the first, per config with a bootstrap interval (`compare --by torch_version`).
See docs/versions.md."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from paradnn import paths
from paradnn.config import PRECISIONS, TimingPolicy, check_device, check_threads
from paradnn.runner import envs
from paradnn.store import DEFAULT_DB, open_store
from paradnn.store.db import check_writable
from paradnn.validate import one_of

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.analysis import Comparison

SweepRunner = Callable[[envs.TorchEnv, list[str]], int]


@dataclass(frozen=True)
class VersionStudy:
    """`versions`' result: the environments run, the versions that could not be installed, each
    sweep's exit status, the torch_version each version's runs carry, and the comparisons."""

    envs: list[envs.TorchEnv] = field(default_factory=list)  # built (or cached) and run
    failed: list[str] = field(default_factory=list)  # one line per version that could not be
    sweep_codes: dict[str, int] = field(default_factory=dict)  # version -> `run`'s exit status
    stored: dict[str, str] = field(default_factory=dict)  # version -> torch_version in the db
    comparisons: list[Comparison] = field(default_factory=list)  # first vs each

    def as_dict(self) -> dict[str, object]:
        """Plain values: each environment's fields (paths as text), each comparison's
        `as_dict()`."""
        from paradnn.formatting import plain

        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def run_args(
    preset: str,
    db: str,
    *,
    device: str = "cpu",
    precisions: Sequence[str] | None = None,
    threads: int | None = None,
    min_time: float | None = None,
    max_time: float | None = None,
    progress: str = "bar",
) -> list[str]:
    """`paradnn run …` arguments for each environment: the same sweep, the same database."""
    args = ["run", "--preset", preset, "--db", str(Path(db).resolve()), "--device", device]
    for p in precisions or []:
        args += ["-p", p]
    if threads is not None:
        args += ["--threads", str(threads)]
    if min_time is not None:
        args += ["--min-time", str(min_time)]
    if max_time is not None:
        args += ["--max-time", str(max_time)]
    return [*args, "--progress", progress]


def run_in_env(env: envs.TorchEnv, args: list[str]) -> int:
    """`paradnn <args>` under the environment's interpreter (supervisor and workers alike); its
    output goes to stderr, so stdout keeps only the study's comparison."""
    p = subprocess.run([str(env.python), "-m", "paradnn", *args], stdout=sys.stderr, check=False)
    return p.returncode


def versions(
    torch_versions: str | Sequence[str],
    preset: str = "quick",
    *,
    db: str = DEFAULT_DB,
    cache: str | Path | None = None,
    index_url: str | None = None,
    offline: bool = False,
    deps: bool = True,
    device: str = "cpu",
    precisions: Sequence[str] | None = None,
    threads: int | None = None,
    min_time: float | None = None,
    max_time: float | None = None,
    progress: str = "bar",
    include_noisy: bool = False,
    say: Callable[[str], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
    build: Callable[..., envs.TorchEnv] = envs.build,
    sweep: SweepRunner = run_in_env,
) -> VersionStudy:
    """Build (or reuse) one environment per torch version, run `preset` in each into `db`, and
    compare every version with the first. Bad input raises before anything is built; a version
    that cannot be installed is one line in `failed` (and told to `on_failure` at once) and the
    study goes on without it. `say` hears progress."""
    from paradnn import presets

    wanted = envs.parse_versions(torch_versions)
    envs.check_index_url(index_url)  # before pip or uv sees it
    sweep_ = presets.get(preset)  # a bad preset or sweep file: one line now, not per env
    # Every option is checked before anything is installed (each env's `run` checks again).
    check_device(device)
    check_threads(threads)
    for p in precisions or ():
        one_of("precision", p, PRECISIONS)
    changes = {"min_time_s": min_time, "max_time_s": max_time}
    changes = {k: v for k, v in changes.items() if v is not None}
    if changes:
        base = sweep_.timing or TimingPolicy()
        if "max_time_s" not in changes:
            changes["max_time_s"] = max(base.max_time_s, changes["min_time_s"])
        dataclasses.replace(base, **changes)
    one_of("progress", progress, ("bar", "jsonl", "quiet"))
    args = run_args(
        preset,
        db,
        device=device,
        precisions=precisions,
        threads=threads,
        min_time=min_time,
        max_time=max_time,
        progress=progress,
    )
    where = Path(cache) if cache is not None else envs.default_cache()
    paths.output_folder("--cache", cache) if cache is not None else paths.output_folder(
        "$PARADNN_ENV_CACHE", where
    )
    check_writable(db)  # each environment's `run` stores into it: refused now, not N times
    built: list[envs.TorchEnv] = []
    failed: list[str] = []
    codes: dict[str, int] = {}
    for v in wanted:
        try:
            env = build(v, where, index_url=index_url, offline=offline, deps=deps, say=say)
        except envs.InstallError as e:
            failed.append(str(e))
            if on_failure:
                on_failure(str(e))
            continue
        if say:
            how = "cached" if env.cached else "built"
            say(f"torch {v}: {how} ({env.torch}, {env.python}); running {preset}")
        built.append(env)
        codes[v] = sweep(env, args)
    stored = _stored_versions(db, built)
    measured = [e.version for e in built if e.version in stored]
    comparisons = []
    if len(measured) >= 2:
        from paradnn.api.analysis import compare

        first = stored[measured[0]]
        for v in measured[1:]:
            c = compare([db], "torch_version", first, stored[v], include_noisy=include_noisy)
            comparisons.append(c)
    return VersionStudy(built, failed, codes, stored, comparisons)


def _stored_versions(db: str, built: list[envs.TorchEnv]) -> dict[str, str]:
    """The torch_version value each environment's runs carry in the db (its torch.__version__)."""
    if not Path(db).exists():
        return {}
    with open_store(db, readonly=True) as store:
        found = {r["torch_version"] for r in store.runs() if r.get("torch_version")}
    return {e.version: e.torch for e in built if e.torch in found}
