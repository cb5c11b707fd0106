"""Which CPU core the cpuinfo names, pinned whole (platforms/cores.py): a table of cpuinfo
fields on both sides of each rule (vendor, family and model boundaries, AVX-512 and AMX flags,
Xeon Scalable tiers and generations, client and E-core names, hybrid parts) with the core's
name, FLOP/cycle, reason and source, and its bf16/fp16 throughput (tests/pinned.py,
tests/data/sim_pinned/cores.json)."""

from __future__ import annotations

import pinned
from paradnn.platforms import cores

AVX2 = ["fpu", "sse2", "avx", "avx2", "fma"]
A512 = [*AVX2, "avx512f"]
CASES = [
    ("AuthenticAMD", "23", "1", "AMD EPYC 7601", AVX2),
    ("AuthenticAMD", "23", "47", "AMD Ryzen 7 2700", AVX2),
    ("AuthenticAMD", "23", "48", "AMD EPYC 7702", AVX2),
    ("AuthenticAMD", 0x17, None, "AMD", AVX2),
    ("AuthenticAMD", "0x17", "0x31", "AMD", AVX2),
    ("HygonGenuine", "24", "1", "Hygon C86", AVX2),
    ("AuthenticAMD", "25", "1", "AMD EPYC 7763", AVX2),
    ("AuthenticAMD", "25", "17", "AMD EPYC 9654", A512),
    ("AuthenticAMD", "26", "2", "AMD EPYC 9755", A512),
    ("AuthenticAMD", "26", "2", "AMD EPYC 9755", AVX2),
    ("AuthenticAMD", "26", "68", "AMD Ryzen 9 9950X", A512),
    ("AuthenticAMD", "26", "68", "AMD Ryzen 5 9600X", A512),
    ("AuthenticAMD", "26", "68", "AMD Ryzen 7 7700X", A512),
    ("AuthenticAMD", "26", "36", "AMD Ryzen AI Max+ 395", A512),
    ("AuthenticAMD", "26", "36", "AMD Ryzen AI 9 HX 370", A512),
    ("AuthenticAMD", "26", "36", "AMD Eng Sample", A512),
    ("AuthenticAMD", "21", "1", "AMD Opteron", AVX2),
    ("AuthenticAMD", "x", "y", "AMD", AVX2),
    ("GenuineIntel", "6", "143", "Intel(R) Xeon(R) Platinum 8480+", [*A512, "amx_tile"]),
    ("GenuineIntel", "6", "143", "Intel(R) Xeon(R) Platinum 8480+", [*A512, "amx_bf16"]),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Platinum 8168 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 6148 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 5122 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 5222 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 5118 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 5218R CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Silver 4214 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Bronze 3106 CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Platinum 8380H CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 6348H CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Gold 5318H CPU", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Silver 4310H CPU", A512),
    ("GenuineIntel", "6", "106", "Intel(R) Xeon(R) Gold 6338 CPU", A512),
    ("GenuineIntel", "6", "106", "Intel(R) Xeon(R) Silver 4314 CPU", A512),
    ("GenuineIntel", "6", "143", "Intel(R) Xeon(R) Gold 5415+", A512),
    ("GenuineIntel", "6", "85", "Intel(R) Xeon(R) Platinum 8000 CPU", A512),
    ("GenuineIntel", "6", "126", "Intel(R) Core(TM) i7-1065G7 CPU", A512),
    ("GenuineIntel", "6", "140", "11th Gen Intel(R) Core(TM) i7-1165G7", A512),
    ("GenuineIntel", "6", "167", "11th Gen Intel(R) Core(TM) i9-11900K", A512),
    ("GenuineIntel", "6", "85", "Intel Xeon Processor (Skylake, IBRS)", A512),
    ("GenuineIntel", "6", "151", "12th Gen Intel(R) Core(TM) i7-12700", [*AVX2, "hybrid_cpu"]),
    ("GenuineIntel", "6", "190", "Intel(R) N100", AVX2),
    ("GenuineIntel", "6", "190", "Intel(R) N1000", AVX2),
    ("GenuineIntel", "6", "92", "Intel(R) Atom(TM) C3958", AVX2),
    ("GenuineIntel", "6", "92", "Intel(R) Celeron(R) N5105", AVX2),
    ("GenuineIntel", "6", "92", "Intel(R) Celeron(R) CPU J4125", AVX2),
    ("GenuineIntel", "6", "92", "Intel(R) Pentium(R) Silver N6000", AVX2),
    ("GenuineIntel", "6", "190", "Intel(R) Core(TM) i3-N305", AVX2),
    ("GenuineIntel", "6", "175", "Intel(R) Xeon(R) 6780E", AVX2),
    ("GenuineIntel", "6", "175", "Intel(R) Xeon(R) 6780P", AVX2),
    ("GenuineIntel", "6", "63", "Intel(R) Xeon(R) CPU E5-2699 v3", AVX2),
    ("GenuineIntel", "6", "63", "Intel(R) Xeon(R) CPU E5-2699 v3", ["avx2"]),
    ("GenuineIntel", "6", "45", "Intel(R) Xeon(R) CPU E5-2670", ["avx"]),
    ("GenuineIntel", "6", "26", "Intel(R) Xeon(R) CPU X5570", ["sse4_2"]),
    ("CentaurHauls", "7", "1", "VIA", AVX2),
    ("CentaurHauls", "7", "1", "VIA", ["avx"]),
    ("CentaurHauls", "7", "1", "VIA", ["avx2"]),
    (None, None, None, None, []),
]


def test_cores_pinned():
    got = []
    extra = (["avx512_bf16"], ["amx_bf16"], ["avx512_fp16"], ["amx_fp16"], [])
    for vendor, fam, mod, name, flags in CASES:
        core = cores.identify(vendor, fam, mod, name, flags)
        got.append(
            {
                "in": [vendor, fam, mod, name, flags],
                "core": core.as_dict(),
                "bf16": [cores.bf16_per_cycle(core, flags + e) for e in extra],
                "fp16": [cores.fp16_per_cycle(core, flags + e) for e in extra],
            }
        )
    ints = [cores._int(t) for t in ("23", " 0x1A ", "x", None, "")]
    pinned.check("cores", {"cases": got, "ints": ints})
