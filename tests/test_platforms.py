"""The platform database (identities that catch a typo in a peak) and torch-free detection."""

import pytest

from paradnn import platforms
from paradnn.errors import ConfigError
from paradnn.platforms import local as detect_mod

IDS = [
    "skylake-n1-32",
    "titan-x-pascal",
    "p100-sxm2",
    "v100-sxm2",
    "radeon-vii",
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "h100-sxm",
    "h200-sxm",
    "b200-hgx",
    "mi300x",
    "tpu-v2",
    "tpu-v3",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
]

# modelling.md §3.2: ridge point = dense bf16/fp16 TC ÷ HBM bandwidth, rounded in the table.
RIDGES = {
    "tpu-v2": ("bf16", 66),
    "tpu-v3": ("bf16", 137),
    "tpu-v4": ("bf16", 229),
    "tpu-v5e": ("bf16", 240),
    "tpu-v5p": ("bf16", 166),
    "tpu-v6e": ("bf16", 560),
    "v100-sxm2": ("fp16", 139),
    "a100-40gb-sxm": ("bf16", 201),
    "a100-80gb-sxm": ("bf16", 153),
    "h100-sxm": ("bf16", 295),
    "h200-sxm": ("bf16", 206),
    "b200-hgx": ("bf16", 281),
    "mi300x": ("bf16", 247),
    "p100-sxm2": ("fp16", 29),
    "radeon-vii": ("fp16", 27),
    "titan-x-pascal": ("fp32", 23),
}
# §3.2: MXU clock implied by peak = 2·R·C·MXUs/core·cores·f (GHz).
CLOCKS = {"tpu-v2": 0.70, "tpu-v3": 0.94, "tpu-v4": 1.05, "tpu-v5e": 1.50, "tpu-v5p": 1.75}
CLOCKS["tpu-v6e"] = 1.75


def test_every_entry_loads_with_sources_and_si_units():
    assert [p.id for p in platforms.all_platforms()] == IDS
    for p in platforms.all_platforms():
        assert p.sources, p.id
        assert p.kind in ("cpu", "gpu", "tpu")
        assert 1e9 < p.mem_bandwidth < 1e14, p.id  # bytes/s, not GB/s
        assert all(1e11 < v < 1e17 for v in p.peak_dense.values()), p.id  # FLOP/s, not TFLOP/s
        assert p.memory_bytes is None or p.memory_bytes > 1e9
        assert p.source("mem_bandwidth")[0] in p.sources


@pytest.mark.parametrize(("pid", "expected"), RIDGES.items())
def test_ridge_points_match_the_modelling_table(pid, expected):
    precision, ridge = expected
    assert platforms.get(pid).ridge_point(precision) == pytest.approx(ridge, abs=1.5)


@pytest.mark.parametrize(("pid", "ghz"), CLOCKS.items())
def test_implied_mxu_clocks_match_the_modelling_table(pid, ghz):
    p = platforms.get(pid)
    assert p.kind == "tpu" and p.mxu is not None
    assert p.implied_clock("bf16") / 1e9 == pytest.approx(ghz, rel=0.02)
    if p.clock_hz is not None:  # a published clock agrees with the implied one
        assert p.implied_clock("bf16") == pytest.approx(p.clock_hz, rel=0.02)


@pytest.mark.parametrize(
    "pid", ["a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm", "h200-sxm", "b200-hgx", "mi300x"]
)
def test_sparse_is_twice_dense(pid):
    p = platforms.get(pid)
    assert p.peak_sparse
    for precision, sparse in p.peak_sparse.items():
        assert sparse == pytest.approx(2 * p.peak(precision), rel=0.005), precision


def test_peak_api():
    h100 = platforms.get("h100-sxm")
    assert h100.peak("bf16") == 989.4e12
    assert h100.peak("bf16", sparse=True) == 1979e12
    assert platforms.get("v100-sxm2").peak("bf16", sparse=True) is None
    assert platforms.get("tpu-v4").peak("fp32") is None
    with pytest.raises(ConfigError, match="precision = 'fp64'"):
        h100.peak("fp64")
    with pytest.raises(ConfigError, match="platform = 'h101'"):
        platforms.get("h101")
    assert platforms.get("tpu-v3").source("tdp_w")[0] == "CACM20"
    assert platforms.get("tpu-v3").source("peak_dense")[0] == "GC-v3"


@pytest.mark.parametrize(
    ("name", "pid"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("Tesla V100-SXM2-32GB", "v100-sxm2"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA B200", "b200-hgx"),
        ("AMD Instinct MI300X", "mi300x"),
        ("Tesla P100-SXM2-16GB", "p100-sxm2"),
        ("TPU v5 lite", "tpu-v5e"),
        ("TPU v5p", "tpu-v5p"),
        ("TPU v4", "tpu-v4"),
        ("NVIDIA H100 PCIe", None),  # different chip: lower clocks and bandwidth
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GeForce RTX 4090", None),
        ("Intel(R) Xeon(R) CPU @ 2.00GHz", None),
    ],
)
def test_match_device_names(name, pid):
    got = platforms.match(name)
    assert (got.id if got else None) == pid


def test_table_rows():
    rows = {r["id"]: r for r in platforms.platform_table_rows()}
    assert set(rows) == set(IDS)
    h = rows["h100-sxm"]
    assert (h["bf16_tflops"], h["bf16_sparse_tflops"], h["ridge_precision"]) == (
        989.4,
        1979,
        "bf16",
    )
    assert rows["titan-x-pascal"]["ridge_flop_per_byte"] == pytest.approx(23, abs=1.5)


# --- user TOML files ----------------------------------------------------------------------

GOOD = """
[my-chip]
name = "What-if 2x H100"
vendor = "hypothetical"
kind = "gpu"
peak_dense = { bf16 = 1978.8e12, fp32 = 134e12 }
mem_bandwidth = 6.7e12
mxu = { rows = 256, cols = 256, per_core = 4, cores = 2 }
"""


def test_load_file_hypothetical_chip(tmp_path):
    f = tmp_path / "chip.toml"
    f.write_text(GOOD)
    p = platforms.load_file(f)
    assert (p.id, p.sources, p.tdp_w) == ("my-chip", {}, None)
    assert p.ridge_point("bf16") == pytest.approx(295.3, abs=0.1)
    flat = tmp_path / "flat.toml"
    flat.write_text('id = "flat"\n' + GOOD.replace("[my-chip]", ""))
    assert platforms.load_file(flat).id == "flat"


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            ("mem_bandwidth = 6.7e12", "mem_bandwith = 6.7e12"),
            "my-chip.mem_bandwith = 6700000000000.0: unknown key",
        ),
        (
            ("bf16 = 1978.8e12", "bf17 = 1978.8e12"),
            "my-chip.peak_dense.bf17 = 1978800000000000.0: unknown precision",
        ),
        (
            ("bf16 = 1978.8e12", "bf16 = -1"),
            "my-chip.peak_dense.bf16 = -1: must be a positive number",
        ),
        (('kind = "gpu"', 'kind = "fpga"'), "my-chip.kind = 'fpga': must be one of cpu, gpu, tpu"),
        (("mem_bandwidth = 6.7e12", ""), "my-chip.mem_bandwidth: required key is missing"),
        (
            ("per_core = 4", "per_core = 0"),
            "my-chip.mxu.per_core = 0: must be an integer in [1, 65536]",
        ),
        (("name = ", "name == "), "invalid TOML"),
    ],
)
def test_bad_user_toml_is_a_one_line_error(tmp_path, edit, needle):
    f = tmp_path / "chip.toml"
    f.write_text(GOOD.replace(*edit))
    with pytest.raises(ConfigError) as e:
        platforms.load_file(f)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_database_entries_require_sources():
    data = {"name": "x", "vendor": "v", "kind": "gpu", "peak_dense": {"fp32": 1e12}}
    with pytest.raises(ConfigError, match=r"x\.sources: required key is missing"):
        platforms.datasheets.parse_entry("x", {**data, "mem_bandwidth": 1e12})


# --- detection ----------------------------------------------------------------------------


def _cpuinfo(
    tmp_path, model, flags, cores=2, mhz="2450.000", vendor="GenuineIntel", family=None, number=None
):
    blocks = []
    for i in range(cores):
        lines = [f"processor\t: {i}", f"vendor_id\t: {vendor}", f"model name\t: {model}"]
        if family is not None:
            lines += [f"cpu family\t: {family}", f"model\t\t: {number if number else 0}"]
        if mhz is not None:
            lines.append(f"cpu MHz\t\t: {mhz}")
        lines += ["physical id\t: 0", f"core id\t\t: {i}", f"cpu cores\t: {cores}"]
        lines.append(f"flags\t\t: fpu sse sse2 {flags}")
        blocks.append("\n".join(lines))
    path = tmp_path / "cpuinfo"
    path.write_text("\n\n".join(blocks) + "\n")
    return path


def test_detect_avx2_cpu_from_cpuinfo_mhz(tmp_path):
    info = _cpuinfo(tmp_path, "Some AVX2 CPU", "avx avx2 fma", cores=4, mhz="3000.0")
    d = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
    cpu = d["cpu"]
    assert (cpu["physical_cores"], cpu["logical_cpus"], cpu["frequency_hz"]) == (4, 4, 3e9)
    assert "cpu MHz" in cpu["frequency_source"]
    assert cpu["flags"]["avx2"] and not cpu["flags"]["avx512f"]
    fp32 = d["cpu_peak_derived"]["fp32"]
    assert fp32["value"] == 4 * 3e9 * 32 and fp32["source"] == "derived"
    assert (
        "4 cores × 3 GHz × 32 FLOP/cycle (Intel Haswell or later: 2 FMA units × 8 fp32 lanes × 2"
        in fp32["derivation"]
    )
    assert d["cpu_peak_derived"]["bf16"]["value"] is None
    assert "avx512_bf16" in d["cpu_peak_derived"]["bf16"]["reason"]
    assert d["matched"] == "measured only"
    assert d["datasheet_peak"]["fp32"] is None
    assert d["nulls"]["datasheet_peak"] == "no datasheet entry"


def test_detect_avx512_cpu_from_sysfs_max_freq(tmp_path):
    info = _cpuinfo(
        tmp_path, "Intel(R) Xeon(R) Platinum", "avx avx2 fma avx512f avx512_bf16 amx_bf16 amx_tile"
    )
    freq = tmp_path / "sys" / "cpu0" / "cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3500000\n")
    (freq / "base_frequency").write_text("2000000\n")
    d = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "sys")
    cpu = d["cpu"]
    assert (cpu["max_frequency_hz"], cpu["base_frequency_hz"], cpu["frequency_hz"]) == (
        3.5e9,
        2e9,
        3.5e9,
    )
    assert "cpuinfo_max_freq" in cpu["frequency_source"]
    peaks = d["cpu_peak_derived"]
    assert peaks["fp32"]["value"] == 2 * 3.5e9 * 64
    assert "2 × 512-bit FMA units" in peaks["fp32"]["derivation"]
    assert peaks["bf16"]["value"] == 2 * 3.5e9 * 1024  # AMX tiles, not VDPBF16PS
    assert "TDPBF16PS" in peaks["bf16"]["derivation"] and "AMX" in peaks["bf16"]["derivation"]
    assert peaks["fp16"]["value"] is None and peaks["tf32"]["value"] is None


def test_detect_amd_avx512_is_half_rate_on_zen4_and_full_on_zen5(tmp_path):
    # a KVM guest's cpuinfo as on the project's VMs: "AMD EPYC", family 25 (Zen 4), then 26
    info = _cpuinfo(
        tmp_path, "AMD EPYC", "avx avx2 fma avx512f avx512_bf16", vendor="AuthenticAMD",
        family=25, number=17,
    )  # fmt: skip
    d = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
    peaks = d["cpu_peak_derived"]
    assert peaks["fp32"]["value"] == 2 * 2.45e9 * 32 and peaks["fp32"]["core"] == "AMD Zen 4"
    assert "2 × 256-bit" in peaks["fp32"]["derivation"] and "57647" in peaks["fp32"]["derivation"]
    assert peaks["bf16"]["value"] == 2 * 2.45e9 * 64
    assert d["cpu"]["core"]["name"] == "AMD Zen 4"
    info = _cpuinfo(
        tmp_path, "AMD EPYC", "avx avx2 fma avx512f avx512_bf16 avx512_vp2intersect",
        vendor="AuthenticAMD", family=26, number=2,
    )  # fmt: skip
    peaks = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")["cpu_peak_derived"]
    assert peaks["fp32"]["value"] == 2 * 2.45e9 * 64 and peaks["fp32"]["core"] == "AMD Zen 5"
    assert peaks["bf16"]["value"] == 2 * 2.45e9 * 128


def test_detect_says_unknown_rather_than_assume(tmp_path):
    # AVX-512 on an AMD part whose family cpuinfo does not give, and an Intel Xeon whose name
    # a cloud hides: the FMA width is not known, so no derived peak (with the reason)
    for vendor, model, family in (
        ("AuthenticAMD", "AMD EPYC", None),
        ("GenuineIntel", "Intel(R) Xeon(R) CPU @ 2.20GHz", 6),
    ):
        info = _cpuinfo(tmp_path, model, "avx avx2 fma avx512f", vendor=vendor, family=family)
        d = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
        for precision, peak in d["cpu_peak_derived"].items():
            assert peak["value"] is None, precision
        assert d["cpu_peak_derived"]["fp32"]["reason"].startswith("microarchitecture unknown")
        assert d["cpu"]["core"]["name"] is None
        out = platforms.describe_local("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
        assert (
            out["cpu core"].startswith("unknown (") and "None (" in out["cpu fp32 peak (derived)"]
        )


AVX2, AVX512 = "avx avx2 fma", "avx avx2 fma avx512f"


@pytest.mark.parametrize(
    ("vendor", "family", "model", "name", "flags", "per_cycle", "core"),
    [
        ("AuthenticAMD", 23, 1, "AMD EPYC 7601 32-Core Processor", AVX2, 16, "Zen/Zen+"),
        ("HygonGenuine", 24, 0, "Hygon C86 7185 32-core Processor", AVX2, 16, "Dhyana"),
        ("AuthenticAMD", 23, 49, "AMD EPYC 7742 64-Core Processor", AVX2, 32, "Zen 2"),
        ("AuthenticAMD", 25, 1, "AMD EPYC 7763 64-Core Processor", AVX2, 32, "Zen 3"),
        ("AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor", AVX512, 32, "Zen 4"),
        ("AuthenticAMD", 26, 2, "AMD EPYC 9755 128-Core Processor", AVX512, 64, "Zen 5"),
        ("AuthenticAMD", 26, 68, "AMD Ryzen 9 9950X 16-Core Processor", AVX512, 64, "Zen 5"),
        ("AuthenticAMD", 26, 112, "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", AVX512, 64, "Zen 5"),
        ("AuthenticAMD", 26, 36, "AMD Ryzen AI 9 HX 370 w/ Radeon 890M", AVX512, 32, "mobile"),
        ("AuthenticAMD", 26, 2, "AMD EPYC 9755 128-Core Processor", AVX2, 32, "AVX2"),
        ("AuthenticAMD", 26, 99, "AMD Eng Sample", AVX512, None, None),
        ("AuthenticAMD", 21, 2, "AMD Opteron 6380", AVX2, None, None),
        ("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+", AVX512 + " amx_bf16 amx_tile",
         64, "Sapphire Rapids"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Platinum 8168 CPU @ 2.70GHz", AVX512, 64,
         "Skylake-SP"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", AVX512, 64,
         "Cascade Lake"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz", AVX512, 32,
         "Cascade Lake"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz", AVX512, 64,
         "Skylake-SP"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz", AVX512, 32,
         "Cascade Lake"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Bronze 3106 CPU @ 1.70GHz", AVX512, 32,
         "Skylake-SP"),
        ("GenuineIntel", 6, 106, "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", AVX512, 64,
         "Ice Lake-SP"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Platinum 8380HL CPU @ 2.90GHz", AVX512, 64,
         "Cooper Lake"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 5318H CPU @ 2.50GHz", AVX512, None, None),
        ("GenuineIntel", 6, 140, "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", AVX512, 32,
         "Tiger Lake"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) CPU @ 2.20GHz", AVX512, None, None),
        ("GenuineIntel", 6, 151, "12th Gen Intel(R) Core(TM) i7-12700K", AVX2 + " hybrid_cpu",
         None, None),
        ("GenuineIntel", 6, 190, "Intel(R) N100", AVX2, 16, "E-core"),
        ("GenuineIntel", 6, 175, "Intel(R) Xeon(R) 6780E", AVX2, 16, "E-core"),
        ("GenuineIntel", 6, 85, "Intel(R) Xeon(R) CPU @ 2.20GHz", AVX2, 32, "Haswell or later"),
        ("GenuineIntel", 6, 45, "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "avx", 16, "Sandy"),
        ("CentaurHauls", 7, 59, "ZHAOXIN KaiXian KX-U6780A", AVX2, None, None),
        ("GenuineIntel", 6, 85, "Some CPU", "sse2", None, None),
    ],
)  # fmt: skip
def test_microarchitecture_table(vendor, family, model, name, flags, per_cycle, core):
    from paradnn.platforms import cores

    c = cores.identify(vendor, str(family), str(model), name, flags.split())
    assert c.fp32_per_cycle == per_cycle, (name, c)
    if core is None:
        assert c.name is None and c.why  # unknown, and it says why
    else:
        assert core in c.name and c.source, c


def test_amx_sets_the_16_bit_rate_and_vdpbf16ps_doubles_fp32():
    from paradnn.platforms import cores

    spr = cores.identify("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Gold 6430", AVX512.split())
    assert cores.bf16_per_cycle(spr, {"amx_bf16", "avx512_bf16"})[0] == cores.AMX_PER_CYCLE
    assert cores.fp16_per_cycle(spr, {"avx512_fp16"})[0] == 128  # 2 × the fp32 64
    assert cores.fp16_per_cycle(spr, {"amx_fp16"})[0] == cores.AMX_PER_CYCLE
    zen4 = cores.identify("AuthenticAMD", 25, 17, "AMD EPYC", AVX512.split())
    assert cores.bf16_per_cycle(zen4, {"avx512_bf16"})[0] == 64
    assert cores.bf16_per_cycle(zen4, set())[0] is None


def test_detect_cpu_without_frequency(tmp_path):
    info = _cpuinfo(tmp_path, "Mystery CPU", "avx avx2 fma", mhz=None)
    d = platforms.detect("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
    assert d["cpu"]["frequency_hz"] is None and "cpu.frequency_hz" in d["nulls"]
    for peak in d["cpu_peak_derived"].values():
        assert peak["value"] is None and peak["reason"]
    assert d["cpu_peak_derived"]["fp32"]["reason"] == "CPU frequency unknown"


def test_detect_unreadable_cpuinfo(tmp_path):
    d = platforms.detect("cpu", cpuinfo=tmp_path / "missing", sysfs=tmp_path / "nosys")
    assert d["cpu"]["model"] is None and d["matched"] == "measured only"


def test_detect_gpu_without_nvml_gives_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(detect_mod, "gpu_info", lambda index=0: (None, "NVML unavailable: test"))
    d = platforms.detect("cuda:1", cpuinfo=tmp_path / "missing", sysfs=tmp_path / "nosys")
    assert d["gpu"] is None and d["nulls"]["gpu"] == "NVML unavailable: test"
    assert d["matched"] == "measured only"


def test_detect_gpu_matches_the_database(tmp_path, monkeypatch):
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85e9, "driver": "550"}
    monkeypatch.setattr(detect_mod, "gpu_info", lambda index=0: (gpu, None))
    d = platforms.detect("cuda", cpuinfo=tmp_path / "missing", sysfs=tmp_path / "nosys")
    assert d["matched"] == "h100-sxm"
    assert d["datasheet_peak"]["bf16"] == 989.4e12


def test_describe_local_is_printable(tmp_path):
    info = _cpuinfo(tmp_path, "Some AVX2 CPU", "avx avx2 fma")
    out = platforms.describe_local("cpu", cpuinfo=info, sysfs=tmp_path / "nosys")
    assert out["matched"] == "measured only"
    assert out["cpu fp32 peak (derived)"].startswith("157 GFLOP/s = 2 cores × 2.45 GHz × 32")
    assert all(isinstance(k, str) for k in out)


def test_bad_device_type():
    with pytest.raises(ConfigError, match="device_type = 'tpu'"):
        platforms.detect("tpu")


def test_one_resolver_takes_ids_and_unique_prefixes_and_names_an_ambiguous_one():
    from paradnn.errors import ConfigError
    from paradnn.platforms import resolve

    assert resolve("v100").id == "v100-sxm2" and resolve("V100").id == "v100-sxm2"
    assert resolve("tpu-v3").id == "tpu-v3" and resolve("h100").id == "h100-sxm"
    with pytest.raises(ConfigError) as e:
        resolve("a100", "--what-if")
    assert str(e.value) == (
        "--what-if = 'a100': is a prefix of a100-40gb-sxm, a100-80gb-sxm: name one of them"
    )
    with pytest.raises(ConfigError) as e:
        resolve("nope")
    assert e.value.field == "--platform" and "unique prefix" in e.value.allowed
    assert "tpu-v2" in e.value.allowed


def test_native_precision_is_the_16_bit_format_that_beats_fp32():
    from paradnn.platforms import all_platforms, get

    native = {p.id: p.native_precision() for p in all_platforms()}
    assert native["v100-sxm2"] == "fp16" and native["p100-sxm2"] == "fp16"  # no bf16
    assert native["tpu-v2"] == "bf16" and native["tpu-v3"] == "bf16"  # no fp32
    assert native["h100-sxm"] == "bf16" and native["a100-40gb-sxm"] == "bf16"  # tie: bf16
    assert native["titan-x-pascal"] == "fp32"  # fp16 at 1/64 of the fp32 rate
    assert native["skylake-n1-32"] == "fp32"
    for pid, prec in native.items():  # a chip is never predicted at a precision it lacks
        assert get(pid).peak(prec) is not None, pid
