"""Which CPU core this is, from what /proc/cpuinfo says (vendor, family, model, model name,
flags), and how many fp32 FLOPs its FMA units retire per cycle: the one unknown of a derived CPU
peak (cores × clock × FLOP/cycle). Torch-free.

A rule names a microarchitecture only when the cpuinfo fields tell it apart; otherwise the
answer is unknown, with the reason, and the derived peak is null — never a guess. The flags are
the ones paradnn decides with (`host.cpu_flags`: PARADNN_CPU_FLAGS rehearses another CPU), so a
Zen 4 whose flags are capped to AVX2 is counted at AVX2 width.

Rules and their sources (fp32 FLOP/cycle/core = FMA units × fp32 lanes × 2; the table with
every rule is in docs/platforms.md, "The derived CPU peak"):

* AMD family 0x17 model < 0x30, Hygon 0x18 — Zen, Zen+: 4 × 128-bit pipes, 2 FMA, AVX2 in
  halves: 16 (AMD Software Optimization Guide, pub. 55723). 0x17 model ≥ 0x30 — Zen 2, 2 ×
  256-bit FMA: 32 (pub. 56305).
* AMD 0x19 — Zen 3 (no avx512f) and Zen 4 (avx512f, executed as 2 × 256-bit: the same FMA
  width as AVX2): 32 (pub. 56665, 57647).
* AMD 0x1A — Zen 5 (pub. 58455): a full 512-bit datapath, 64, on EPYC, Ryzen 9000 desktop and
  Ryzen AI Max; 512-bit ops on a 256-bit datapath, 32, on the other Ryzen AI (Strix/Krackan
  Point; Chips and Cheese, 2024); at AVX2 width (flags capped) 32; any other name: unknown.
* Intel with amx_tile/amx_bf16 — Sapphire Rapids or later server core, 2 × 512-bit FMA (ports
  0 and 5): 64 (Intel Optimization Reference Manual, 248966).
* Intel AVX-512 Xeon Scalable by model name (Intel ARK, "# of AVX-512 FMA Units"): 1st/2nd gen
  Platinum 8xxx, Gold 6xxx, Gold 5x22 two units (64), other Gold 5xxx, Silver 4xxx, Bronze
  3xxx one (32); 3rd gen Cooper Lake (…H) Platinum/Gold 6 two, else unknown; Ice Lake-SP
  (3rd gen, not H) and later two on every SKU (64).
* Intel AVX-512 client Core i3–i9 10xxG/11xxx — Ice Lake, Tiger Lake, Rocket Lake: one 512-bit
  FMA (ports 0+1 fused): 32 (248966).
* Intel AVX2+FMA: hybrid_cpu — P-cores 32, E-cores 16: unknown; N-series, Atom, Celeron N,
  Pentium Silver, Xeon 6xxxE — Gracemont/Crestmont E-cores, 2 × 128-bit FMA: 16; otherwise a
  Haswell-or-later big core, 2 × 256-bit FMA: 32 (248966).
* AVX without FMA — Sandy/Ivy Bridge class, a 256-bit add and a multiply unit: 16.

Any other AVX-512 Intel part (an unnamed "Intel Xeon Processor" in a VM, Xeon W, Skylake-X,
Xeon Phi), another AMD family, another vendor: unknown. 16-bit throughput on top of the fp32
figure (`bf16_per_cycle`, `fp16_per_cycle`): VDPBF16PS (avx512_bf16) and AVX512-FP16 retire
twice the fp32 FLOPs of the same FMA units; AMX tiles (amx_bf16, amx_fp16) 1024 FLOP/cycle/core
— TDPBF16PS does 16×16×32 multiply-adds and issues once every 16 cycles (Intel Optimization
Reference Manual 248966, AMX chapter: "1024 BF16 operations per cycle per core").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

AMX_PER_CYCLE = 1024  # bf16 / fp16 FLOP/cycle/core of one AMX tile unit (TMUL)


@dataclass(frozen=True)
class Core:
    """The core the cpuinfo names, its fp32 FLOP/cycle (None: unknown) and why."""

    name: str | None  # e.g. "AMD Zen 4"; None when the fields do not tell
    fp32_per_cycle: int | None
    why: str  # the arithmetic and its assumption, or why it is unknown
    source: str = ""  # where the rule comes from

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "fp32_per_cycle": self.fp32_per_cycle,
            "why": self.why,
            "source": self.source,
        }


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).strip(), 0) if text is not None else None
    except ValueError:
        return None


def identify(
    vendor: str | None,
    family: str | int | None,
    model: str | int | None,
    model_name: str | None,
    flags: Iterable[str],
) -> Core:
    """The core of a CPU from its cpuinfo fields (family and model as cpuinfo prints them,
    decimal). Unknown, with the reason, when the fields do not tell."""
    f = set(flags)
    fam = family if isinstance(family, int) else _int(family)
    mod = model if isinstance(model, int) else _int(model)
    name = model_name or ""
    if vendor in ("AuthenticAMD", "HygonGenuine"):
        return _amd(vendor, fam, mod, name, f)
    if vendor == "GenuineIntel":
        return _intel(name, f)
    if {"avx2", "fma"} <= f or "avx" in f:
        return Core(None, None, f"vendor {vendor!r}: no rule names its cores")
    return Core(None, None, "no AVX/AVX2/AVX-512 flags: vector width unknown")


def _amd(vendor: str, fam: int | None, mod: int | None, name: str, f: set[str]) -> Core:
    avx512 = "avx512f" in f
    src = "AMD Software Optimization Guide"
    if vendor == "HygonGenuine" or (fam == 0x17 and mod is not None and mod < 0x30):
        return Core(
            "AMD Zen/Zen+" if vendor == "AuthenticAMD" else "Hygon Dhyana (Zen)",
            16,
            "Zen 1: 2 FMA pipes × 4 fp32 lanes (128-bit) × 2; AVX2 runs as two halves",
            f"{src}, pub. 55723 (Family 17h)",
        )
    if fam == 0x17 and mod is not None:
        return Core("AMD Zen 2", 32, "2 FMA pipes × 8 fp32 lanes (256-bit) × 2", f"{src}, 56305")
    if fam == 0x19:
        if avx512:
            return Core(
                "AMD Zen 4",
                32,
                "AVX-512 executed as 2 × 256-bit FMA pipes: 2 × 8 fp32 lanes × 2",
                f"{src}, pub. 57647 (Zen 4)",
            )
        return Core("AMD Zen 3", 32, "2 FMA pipes × 8 fp32 lanes (256-bit) × 2", f"{src}, 56665")
    if fam == 0x1A:
        if not avx512:
            return Core(
                "AMD Zen 5 (AVX2)",
                32,
                "no avx512f in the flags: 2 FMA pipes × 8 fp32 lanes (256-bit) × 2",
                f"{src}, pub. 58455 (Zen 5)",
            )
        if re.search(r"EPYC|Ryzen AI Max|Ryzen \d+ 9\d{3}", name, re.IGNORECASE):
            return Core(
                "AMD Zen 5",
                64,
                "full 512-bit datapath: 2 FMA pipes × 16 fp32 lanes × 2",
                f"{src}, pub. 58455 (Zen 5)",
            )
        if re.search(r"Ryzen AI", name, re.IGNORECASE):
            return Core(
                "AMD Zen 5 (mobile)",
                32,
                "512-bit ops on a 256-bit datapath: 2 FMA pipes × 8 fp32 lanes × 2",
                f"{src}, pub. 58455; Chips and Cheese, Zen 5 mobile (2024)",
            )
        return Core(
            None,
            None,
            f"a Zen 5 (family 0x1A) whose model name {name!r} does not say whether its "
            "AVX-512 datapath is 512-bit (EPYC, desktop: 64 FLOP/cycle) or 256-bit (mobile: 32)",
        )
    return Core(None, None, f"AMD family {fam!r}: no rule names this core")


_XEON_SCALABLE = re.compile(r"Xeon\(R\)\s+(Platinum|Gold|Silver|Bronze)\s+(\d)(\d)(\d\d)(\w*)")
_INTEL_CLIENT_AVX512 = re.compile(r"Core\(TM\)\s+i[3579]-1(0\d{2,3}G\d|1\d{2,3})")
_INTEL_ECORE = re.compile(
    r"Intel\(R\) N\d{2,3}\b|Atom|Celeron\(R\) (CPU )?[NJ]\d|Pentium\(R\) Silver|Core\(TM\) i3-N\d|"
    r"Xeon\(R\) 6\d{3}E\b"
)
_INTEL = "Intel Optimization Reference Manual (248966)"


def _intel(name: str, f: set[str]) -> Core:
    if "avx512f" in f:
        if f & {"amx_tile", "amx_bf16"}:
            return Core(
                "Intel Sapphire Rapids or later (AMX)",
                64,
                "2 × 512-bit FMA units (ports 0 and 5): 2 × 16 fp32 lanes × 2",
                _INTEL,
            )
        m = _XEON_SCALABLE.search(name)
        if m:
            tier, gen, tail, suffix = m.group(2), int(m.group(3)), m.group(4), m.group(5)
            sku = f"{m.group(1)} {tier}{gen}{tail}{suffix}"
            cooper = gen == 3 and suffix.upper().startswith("H")
            if gen >= 3 and not cooper:
                return Core(
                    f"Intel Ice Lake-SP or later ({sku})",
                    64,
                    "2 × 512-bit FMA units on every SKU: 2 × 16 fp32 lanes × 2",
                    f"Intel ARK; {_INTEL}",
                )
            era = {1: "Skylake-SP", 2: "Cascade Lake", 3: "Cooper Lake"}.get(gen)
            two = tier in ("8", "6") or (gen in (1, 2) and tier == "5" and tail == "22")
            if era and (two or gen in (1, 2)):
                return Core(
                    f"Intel {era} ({sku})",
                    64 if two else 32,
                    f"{'2' if two else '1'} × 512-bit FMA unit{'s' if two else ''}: "
                    f"{'2' if two else '1'} × 16 fp32 lanes × 2",
                    'Intel ARK, "# of AVX-512 FMA Units"',
                )
        if _INTEL_CLIENT_AVX512.search(name):
            return Core(
                "Intel Ice Lake / Tiger Lake / Rocket Lake client",
                32,
                "1 × 512-bit FMA (ports 0 and 1 fused): 16 fp32 lanes × 2",
                _INTEL,
            )
        return Core(
            None,
            None,
            f"an Intel AVX-512 core with one or two 512-bit FMA units, which the model name "
            f"{name!r} does not tell",
        )
    if {"avx2", "fma"} <= f:
        if "hybrid_cpu" in f:
            return Core(
                None,
                None,
                "a hybrid Intel CPU: its P-cores retire 32 fp32 FLOP/cycle, its E-cores 16, and "
                "cpuinfo does not say which cores run the threads",
            )
        if _INTEL_ECORE.search(name):
            return Core(
                "Intel Gracemont/Crestmont E-core",
                16,
                "2 × 128-bit FMA units: AVX2 as two halves, 2 × 4 fp32 lanes × 2",
                _INTEL,
            )
        return Core("Intel Haswell or later", 32, "2 FMA units × 8 fp32 lanes × 2", _INTEL)
    if "avx" in f:
        return Core(
            "Intel Sandy/Ivy Bridge class",
            16,
            "AVX without FMA: 1 add + 1 multiply unit × 8 fp32 lanes",
            _INTEL,
        )
    return Core(None, None, "no AVX/AVX2/AVX-512 flags: vector width unknown")


def bf16_per_cycle(core: Core, flags: Iterable[str]) -> tuple[int | None, str]:
    """bf16 FLOP/cycle/core and how (AMX tiles when present, else VDPBF16PS at twice fp32)."""
    f = set(flags)
    if "amx_bf16" in f:
        return AMX_PER_CYCLE, "AMX tiles: TDPBF16PS, 16×16×32 multiply-adds every 16 cycles"
    if "avx512_bf16" in f and core.fp32_per_cycle:
        return 2 * core.fp32_per_cycle, "×2 for bf16 pairs via VDPBF16PS"
    return None, "no avx512_bf16 or amx_bf16"


def fp16_per_cycle(core: Core, flags: Iterable[str]) -> tuple[int | None, str]:
    """fp16 FLOP/cycle/core and how (AMX-FP16 tiles when present, else AVX512-FP16 at twice
    fp32)."""
    f = set(flags)
    if "amx_fp16" in f:
        return AMX_PER_CYCLE, "AMX tiles: TDPFP16PS, 16×16×32 multiply-adds every 16 cycles"
    if "avx512_fp16" in f and core.fp32_per_cycle:
        return 2 * core.fp32_per_cycle, "×2 for 32 fp16 lanes (AVX512-FP16)"
    return None, "no avx512_fp16 or amx_fp16"
