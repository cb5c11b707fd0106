"""The platform database: a validated, read-only view of datasheets.toml (and of user TOML files).

Figures are datasheet values in SI units (FLOP/s, bytes, bytes/s, W, Hz); see docs/platforms.md.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from paradnn.errors import ABSENT, ConfigError
from paradnn.precisions import PRECISIONS
from paradnn.validate import huge_integer

# Precisions a spec may list: the ones paradnn measures, plus lower ones datasheets quote.
PEAK_PRECISIONS = (*PRECISIONS, "fp8", "fp4", "int8")
KINDS = ("cpu", "gpu", "tpu")
NATIVE_FORMATS = ("bf16", "fp16")  # the 16-bit formats a chip's matrix units train in
FIGURES = (
    "peak_dense",
    "peak_sparse",
    "memory_bytes",
    "mem_bandwidth",
    "tdp_w",
    "interconnect",
    "interconnect_bw",
    "mxu",
    "clock_hz",
)
REQUIRED = ("name", "vendor", "kind", "peak_dense", "mem_bandwidth")
ALLOWED = (*REQUIRED, *(f for f in FIGURES if f not in REQUIRED), "match", "sources")
ALLOWED = (*ALLOWED, "source_of", "notes")
# Upper bounds of a platform file's figures (docs/limits.md): 1e24 is a million times today's
# largest (FLOP/s ~1e16, bytes/s ~1e13); a matrix unit's side, count or cores at most 65,536.
MAX_FIGURE = 1e24
MAX_MXU = 65_536
MXU_KEYS = ("rows", "cols", "per_core", "cores")
_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True)
class Mxu:
    """A TPU's matrix units: ``per_core`` rows×cols systolic arrays in each of ``cores`` cores."""

    rows: int
    cols: int
    per_core: int
    cores: int

    def flop_per_cycle(self) -> int:
        return 2 * self.rows * self.cols * self.per_core * self.cores

    def implied_clock(self, peak: float) -> float:
        """Clock (Hz) at which ``peak = 2 · rows · cols · per_core · cores · f``."""
        return peak / self.flop_per_cycle()


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    vendor: str
    kind: str
    peak_dense: Mapping[str, float] = field(hash=False, repr=False)
    peak_sparse: Mapping[str, float] = field(hash=False, repr=False)
    memory_bytes: float | None
    mem_bandwidth: float
    tdp_w: float | None
    interconnect: str | None
    interconnect_bw: float | None
    mxu: Mxu | None
    clock_hz: float | None
    match: tuple[str, ...]
    sources: Mapping[str, str] = field(hash=False, repr=False)  # source key -> URL or citation
    source_of: Mapping[str, str] = field(hash=False, repr=False)  # figure -> source key
    notes: str | None

    def peak(self, precision: str, sparse: bool = False) -> float | None:
        """Datasheet peak in FLOP/s, or None when the source gives none for this precision."""
        if precision not in PEAK_PRECISIONS:
            raise ConfigError(
                "precision", precision, "must be one of " + ", ".join(PEAK_PRECISIONS)
            )
        return (self.peak_sparse if sparse else self.peak_dense).get(precision)

    def ridge_point(self, precision: str, sparse: bool = False) -> float | None:
        """Roofline ridge point in FLOP/byte: peak ÷ memory bandwidth (None without a peak)."""
        p = self.peak(precision, sparse)
        return None if p is None else p / self.mem_bandwidth

    def best_dense(self) -> tuple[str, float]:
        """The highest dense peak among the precisions paradnn measures: (precision, FLOP/s)."""
        have = [(p, self.peak_dense.get(p)) for p in ("bf16", "fp16", "tf32", "fp32")]
        return max((h for h in have if h[1] is not None), key=lambda h: h[1])

    def native_precision(self) -> str:
        """The precision the chip trains in when none is asked for: the 16-bit format of its
        matrix units (bf16, else fp16: the higher dense peak, bf16 on a tie) when that peak is
        above the fp32 one, else fp32. So a TPU is bf16 and a V100 fp16 (as the seeds ran
        them), an A100/H100 bf16, a Titan X (fp16 at 1/64 rate) and a CPU without a 16-bit
        peak fp32. TF32 is never native: it is a precision of its own, asked for by name."""
        fp32 = self.peak_dense.get("fp32")
        lows = [(p, self.peak_dense[p]) for p in NATIVE_FORMATS if p in self.peak_dense]
        best = max(lows, key=lambda h: h[1], default=None)  # max keeps the first on a tie
        if best is not None and (fp32 is None or best[1] > fp32):
            return best[0]
        return "fp32"  # also on a chip with none of them: its fp32 peak is then refused

    def source(self, figure: str) -> tuple[str, str] | None:
        """(source key, URL or citation) for one figure, e.g. ``source("tdp_w")``."""
        if not self.sources:
            return None
        key = self.source_of.get(figure, next(iter(self.sources)))
        return key, self.sources[key]

    def implied_clock(self, precision: str = "bf16") -> float | None:
        """For a TPU: the MXU clock (Hz) the dense peak implies; None without an MXU spec."""
        p = self.peak_dense.get(precision)
        return None if self.mxu is None or p is None else self.mxu.implied_clock(p)


# --- loading and validation ---------------------------------------------------------------


def parse_entry(pid: str, data: Any, *, require_sources: bool = True) -> Platform:
    """Validate one table; every error names ``<id>.<key>`` and fits on one line."""
    if not isinstance(pid, str) or not _ID.fullmatch(pid):
        raise ConfigError("platform id", pid, "must be lower-case letters, digits, '.', '_', '-'")
    if not isinstance(data, dict):
        raise ConfigError(pid, data, "must be a table of platform keys")
    for key in data:
        if key not in ALLOWED:
            raise ConfigError(
                f"{pid}.{key}", data[key], "unknown key; allowed: " + ", ".join(ALLOWED)
            )
    required = (*REQUIRED, "sources") if require_sources else REQUIRED
    for key in required:
        if key not in data:
            raise ConfigError(f"{pid}.{key}", ABSENT, "required key is missing")

    def text(key: str, optional: bool = False) -> str | None:
        v = data.get(key)
        if v is None and optional:
            return None
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{pid}.{key}", v, "must be a non-empty string")
        if key != "notes" and not v.isprintable():
            raise ConfigError(f"{pid}.{key}", v, "must be printable text on one line")
        return v

    def number(key: str, v: Any, optional: bool = False) -> float | None:
        if v is None and optional:
            return None
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_FIGURE
        if not ok:  # NaN compares false; a huge integer compares exactly, never overflows
            raise ConfigError(
                f"{pid}.{key}", v, f"must be a positive number ≤ {MAX_FIGURE:g} (SI units)"
            )
        return float(v)

    def peaks(key: str) -> Mapping[str, float]:
        v = data.get(key, {})
        if not isinstance(v, dict):
            raise ConfigError(f"{pid}.{key}", v, "must be a table of precision = FLOP/s")
        out = {}
        for prec, val in v.items():
            if prec not in PEAK_PRECISIONS:
                raise ConfigError(
                    f"{pid}.{key}.{prec}",
                    val,
                    "unknown precision; allowed: " + ", ".join(PEAK_PRECISIONS),
                )
            out[prec] = number(f"{key}.{prec}", val)
        return MappingProxyType(out)

    kind = text("kind")
    if kind not in KINDS:
        raise ConfigError(f"{pid}.kind", kind, "must be one of " + ", ".join(KINDS))
    dense = peaks("peak_dense")
    if not any(p in dense for p in PRECISIONS):
        raise ConfigError(
            f"{pid}.peak_dense", dict(dense), "must give at least one of " + ", ".join(PRECISIONS)
        )
    sparse = peaks("peak_sparse")

    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(
        isinstance(v, str) and v.strip() for v in sources.values()
    ):
        raise ConfigError(f"{pid}.sources", sources, "must be a table of key = URL or citation")
    if require_sources and not sources:
        raise ConfigError(f"{pid}.sources", sources, "must name at least one source")
    source_of = data.get("source_of", {})
    if not isinstance(source_of, dict):
        raise ConfigError(f"{pid}.source_of", source_of, "must be a table of figure = source key")
    for fig, key in source_of.items():
        if fig not in FIGURES:
            raise ConfigError(f"{pid}.source_of.{fig}", key, "must be one of " + ", ".join(FIGURES))
        if key not in sources:
            raise ConfigError(
                f"{pid}.source_of.{fig}", key, "must be a key of sources: " + ", ".join(sources)
            )

    patterns = data.get("match", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        raise ConfigError(f"{pid}.match", patterns, "must be a list of non-empty regex strings")
    for p in patterns:
        try:
            re.compile(p)
        except re.error as e:
            raise ConfigError(f"{pid}.match", p, f"invalid regular expression: {e}") from None

    mxu = data.get("mxu")
    if mxu is not None:
        if not isinstance(mxu, dict) or set(mxu) != set(MXU_KEYS):
            raise ConfigError(f"{pid}.mxu", mxu, "must be { " + ", ".join(MXU_KEYS) + " }")
        for k, v in mxu.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_MXU:
                raise ConfigError(f"{pid}.mxu.{k}", v, f"must be an integer in [1, {MAX_MXU}]")
        mxu = Mxu(**mxu)

    return Platform(
        id=pid,
        name=text("name"),
        vendor=text("vendor"),
        kind=kind,
        peak_dense=dense,
        peak_sparse=sparse,
        memory_bytes=number("memory_bytes", data.get("memory_bytes"), optional=True),
        mem_bandwidth=number("mem_bandwidth", data.get("mem_bandwidth")),
        tdp_w=number("tdp_w", data.get("tdp_w"), optional=True),
        interconnect=text("interconnect", optional=True),
        interconnect_bw=number("interconnect_bw", data.get("interconnect_bw"), optional=True),
        mxu=mxu,
        clock_hz=number("clock_hz", data.get("clock_hz"), optional=True),
        match=tuple(patterns),
        sources=MappingProxyType(dict(sources)),
        source_of=MappingProxyType(dict(source_of)),
        notes=text("notes", optional=True),
    )


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(where, "…", f"invalid TOML: {' '.join(str(e).split())}") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more than 4300 digits
        if huge := huge_integer(text):
            raise ConfigError(
                f"{where}: {huge}",
                ABSENT,
                "too long to read; a chip file's figures are at most 1e24 (docs/limits.md)",
            ) from None
        raise ConfigError(where, "…", f"invalid TOML: {' '.join(str(e).split())}") from None


@cache
def _database() -> MappingProxyType[str, Platform]:
    text = resources.files("paradnn.platforms").joinpath("datasheets.toml").read_text("utf-8")
    raw = _parse_toml(text, "platforms/datasheets.toml")
    return MappingProxyType({pid: parse_entry(pid, data) for pid, data in raw.items()})


def all_platforms() -> tuple[Platform, ...]:
    """Every database entry, in file order."""
    return tuple(_database().values())


def get(platform_id: str) -> Platform:
    db = _database()
    if platform_id not in db:
        raise ConfigError("platform", platform_id, "must be one of " + ", ".join(db))
    return db[platform_id]


def prefixed(name: str) -> list[str]:
    """The ids a user's word names: itself when it is an id, else every id it is a prefix of
    (case ignored). One id: resolved; several: ambiguous; none: unknown."""
    db = _database()
    if not isinstance(name, str):
        return []
    word = name.strip().lower()
    if word in db:
        return [word]
    return [i for i in db if word and i.startswith(word)]


def resolve(name: str, option: str = "--platform") -> Platform:
    """The entry a user's word names: its id, else the one id it is a prefix of (`v100` →
    v100-sxm2; case ignored). An unknown word, or a prefix of several ids, is one line naming
    the option, the word and the ids it could mean (ConfigError: exit 2 before any work).
    The one resolver of platform names: `simulate`, `report --what-if` and chip files use it."""
    near = prefixed(name)
    if len(near) == 1:
        return _database()[near[0]]
    if near:
        raise ConfigError(option, name, ambiguous(near))
    ids = ", ".join(_database())
    raise ConfigError(option, name, f"must be a platform id ({ids}) or a unique prefix of one")


def ambiguous(ids: list[str]) -> str:
    """What an ambiguous prefix is told: the ids it matches."""
    return f"is a prefix of {', '.join(ids)}: name one of them"


def match(device_name: str, platforms: tuple[Platform, ...] | None = None) -> Platform | None:
    """The entry whose ``match`` pattern fits ``device_name`` (longest pattern wins), or None."""
    best: tuple[int, Platform] | None = None
    for plat in all_platforms() if platforms is None else platforms:
        for pattern in plat.match:
            hit = re.search(pattern, device_name.strip(), re.IGNORECASE)
            if hit and (best is None or len(pattern) > best[0]):
                best = (len(pattern), plat)
    return None if best is None else best[1]


def load_file(path: str | Path) -> Platform:
    """A user's (possibly hypothetical) chip from a TOML file with the database's keys.

    The file holds either one table ``[my-chip]`` or the keys at top level plus ``id = "..."``.
    ``sources`` is optional here: a what-if chip need not have a datasheet.
    """
    pid, data = read_table(path)
    return parse_entry(pid, data, require_sources=False)


def read_table(path: str | Path) -> tuple[str, dict[str, Any]]:
    """(id, raw keys) of a one-platform TOML file, unvalidated: `load_file` validates them, and
    the simulator takes its own keys out first (`paradnn.sim.chip`)."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except OSError as e:
        raise ConfigError("platform file", str(path), f"cannot be read: {e.strerror}") from None
    except (UnicodeDecodeError, ValueError):
        raise ConfigError("platform file", str(path), "cannot be read: must be UTF-8") from None
    raw = _parse_toml(text, str(path))
    if "id" in raw:
        data = dict(raw)
        pid = data.pop("id")
    else:
        if len(raw) != 1 or not isinstance(next(iter(raw.values())), dict):
            raise ConfigError(
                str(path), sorted(raw), "must hold exactly one [platform-id] table, or id = ..."
            )
        ((pid, data),) = raw.items()
        data = dict(data)
    return pid, data
