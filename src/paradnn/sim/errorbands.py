"""The step-time model's validated error per kind of device (cpu, gpu, tpu), read from
`error_bands.json` beside this module (written by benchmarks/sim_validation.py). A prediction
shown beside a measurement carries its kind's band; a kind the file lacks (or no file) has no
band, and says "not validated" instead of pretending to a precision nobody checked.

The file: {"schema": 1, "generated_by": str, "generated_at": str, "bands": {"cpu"|"gpu"|"tpu":
{"mdape": fraction, "p90": fraction, "n": int, "dataset": str, "method": str}}}. Errors are
|predicted − measured| ÷ measured step time (sim/fit.py's APE). The band is the 90th percentile
(`p90`): 9 of 10 validated predictions of that kind were at least that close.

Every figure is a fraction and is printed through `paradnn.formatting` (`error`, `band`):
`label` and `short` are the only wordings of a band, so the report's sections, the CLI and the
captions print one number for one band. Torch-free, and no store: the caller passes what it has."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from paradnn import formatting as U

PATH = Path(__file__).with_name("error_bands.json")
SCHEMA = 1
KINDS = ("cpu", "gpu", "tpu")
NOT_VALIDATED = "not validated"


@dataclass(frozen=True)
class Band:
    """One kind's validated error; `p90` None with a `reason` when there is none."""

    kind: str
    p90: float | None
    mdape: float | None = None
    n: int | None = None
    dataset: str = ""
    method: str = ""
    reason: str = ""  # why there is no band ("not validated", an unreadable file)

    @property
    def known(self) -> bool:
        return self.p90 is not None

    def throughput(self, x: float) -> tuple[float, float]:
        """(low, high) of a predicted throughput `x` (examples/s, FLOP/s): a step time within
        ±p90 of its measurement, |t_p − t| ≤ p90·t, puts the measured rate in
        [x(1 − p90), x(1 + p90)] (low clipped at 0); (nan, nan) without a band."""
        if self.p90 is None or not math.isfinite(x):
            return math.nan, math.nan
        return max(0.0, x * (1 - self.p90)), x * (1 + self.p90)

    def label(self) -> str:
        """'gpu model error band ±23.0% (p90 of 412 validated predictions, <dataset>)' or the
        reason there is none."""
        if self.p90 is None:
            return f"{self.kind}: no error band ({self.reason or NOT_VALIDATED})"
        n = f" of {self.n} validated predictions" if self.n else ""
        ds = f", {self.dataset}" if self.dataset else ""
        return f"{self.kind} model error band {U.band(self.p90)} (p90{n}{ds})"

    def short(self) -> str:
        """'gpu: ±23.0% (p90; median 11.0%, n = 412)' (a table cell), or 'gpu: not validated'."""
        if self.p90 is None:
            return f"{self.kind}: {NOT_VALIDATED}"
        median = f"; median {U.error(self.mdape)}" if self.mdape is not None else ""
        n = f", n = {self.n}" if self.n else ""
        return f"{self.kind}: {U.band(self.p90)} (p90{median}{n})"


@dataclass(frozen=True)
class Bands:
    """Every kind's band, plus where they came from (or why the file could not be used)."""

    bands: dict[str, Band]
    source: str  # the file, or why there is none
    generated_at: str = ""

    def of(self, kind: str) -> Band:
        return self.bands.get(kind) or Band(kind, None, reason=self.reason_for(kind))

    def short(self, kinds: Iterable[str]) -> str:
        """The bands of `kinds` (each once, in order) as one cell: 'tpu: ±81.3% (…); gpu: …'."""
        return "; ".join(self.of(k).short() for k in dict.fromkeys(kinds))

    def reason_for(self, kind: str) -> str:
        if not self.bands and self.source.startswith("no "):
            return f"{NOT_VALIDATED}: {self.source}"
        return f"{NOT_VALIDATED}: {self.source} has no {kind!r} band"


def read(path: str | Path | None = None) -> Bands:
    """The bands in `path` (default: sim/error_bands.json). A missing file gives no bands
    (every kind "not validated"); an unreadable or malformed one too, naming the problem: a
    report never fails because a validation file is bad, it shows predictions without bands."""
    p = Path(path) if path is not None else PATH
    if not p.is_file():
        return Bands({}, f"no {p.name} (run benchmarks/sim_validation.py)")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return Bands({}, f"no usable {p.name} ({type(e).__name__})")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        return Bands({}, f"no usable {p.name} (schema {got!r}, expected {SCHEMA})")
    out: dict[str, Band] = {}
    raw = doc.get("bands") if isinstance(doc.get("bands"), dict) else {}
    for kind, b in raw.items():
        if kind not in KINDS or not isinstance(b, dict):
            continue
        p90 = _fraction(b.get("p90"))
        if p90 is None:
            out[kind] = Band(kind, None, reason=f"{NOT_VALIDATED}: {p.name} {kind}.p90 unusable")
            continue
        n = b.get("n")
        out[kind] = Band(
            kind,
            p90,
            mdape=_fraction(b.get("mdape")),
            n=n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None,
            dataset=str(b.get("dataset") or ""),
            method=str(b.get("method") or ""),
        )
    return Bands(out, p.name, str(doc.get("generated_at") or ""))


def _fraction(v) -> float | None:
    """A non-negative finite error fraction, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) and v >= 0 else None
