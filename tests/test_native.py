"""Native precision per device: the decision, the presets' `native`, emulated runs."""

from __future__ import annotations

import pytest

from paradnn import host, precisions, presets
from paradnn.config import RunOptions, RunSpec
from paradnn.runner.execute import execute, run_environment

from conftest import TINY, TINY_POLICY

AVX2 = "fpu sse2 avx avx2 fma f16c"
ZEN4 = "avx2 fma avx512f avx512_bf16"


@pytest.fixture
def cpu_flags(monkeypatch):
    """Play a CPU: set the flags paradnn reads, with no ISA caps, and a fresh environment."""
    for var in (*host.ONEDNN_ENVS, host.ATEN_ENV):
        monkeypatch.delenv(var, raising=False)

    def play(flags: str) -> None:
        monkeypatch.setenv(host.FLAGS_ENV, flags)
        run_environment.cache_clear()

    yield play
    run_environment.cache_clear()


def test_native_sets_per_cpu(cpu_flags):
    cpu_flags(AVX2)
    assert precisions.native_set("cpu") == ["fp32"]
    cpu_flags(ZEN4)
    assert precisions.native_set("cpu") == ["fp32", "bf16"]
    cpu_flags("amx_bf16 amx_fp16")
    assert precisions.native_set("cpu") == ["fp32", "bf16", "fp16"]
    assert precisions.native_set("cuda", cuda_capability=(7, 0)) == ["fp32", "fp16"]  # V100
    assert precisions.native_set("cuda", cuda_capability=(9, 0)) == list(precisions.PRECISIONS)
    assert "unknown" in precisions.native_reason("bf16", "cuda")


def test_onednn_cap_ladder(monkeypatch):
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", "avx512_core_amx")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert host.onednn_allows("AVX512_CORE_BF16") and not host.onednn_allows("ALL")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "something-new")  # oneDNN ignores unknown names
    assert host.onednn_allows("ALL")
    assert host.caps()["onednn_max_cpu_isa"] == "SOMETHING-NEW"


def test_resolve_native_expands_precision_major():
    specs = [
        RunSpec("fc", {"batch": 4}),
        RunSpec("rnn", {"batch": 2}),
        RunSpec("fc", {"batch": 4}, native=True),
        RunSpec("rnn", {"batch": 2}, native=True),
    ]
    out, notes = presets.resolve_native(specs, ["fp32", "bf16", "fp16"])
    assert [(s.family, s.precision) for s in out] == [
        ("fc", "fp32"), ("rnn", "fp32"),
        ("fc", "bf16"), ("rnn", "bf16"), ("fc", "fp16"), ("rnn", "fp16"),
    ]  # fmt: skip
    assert notes == ["native low precisions on this device: bf16, fp16"]
    out, notes = presets.resolve_native(specs, ["fp32"])
    assert [s.precision for s in out] == ["fp32", "fp32"] and "none (fp32 only" in notes[0]
    assert presets.resolve_native(specs[:2], ["fp32"]) == (specs[:2], [])


def test_quick_preset_follows_the_device(cpu_flags):
    from paradnn import api

    cpu_flags(AVX2)
    rows = api.dry_run("quick", device="cpu")
    assert {r.precision for r in rows} == {"fp32"}
    cpu_flags(ZEN4)
    both = api.dry_run("quick", device="cpu")
    assert [r.precision for r in both].count("bf16") == len(rows)
    # the preset is big enough for a heat map and a regression fit per family
    fams = [r.family for r in rows]
    assert all(fams.count(f) >= 8 for f in ("fc", "cnn", "rnn"))


def test_emulated_runs_only_when_asked(cpu_flags):
    cpu_flags(AVX2)
    opts = RunOptions(device="cpu", threads=1, precision="bf16", timing=TINY_POLICY)
    rec = execute(RunSpec("fc", TINY["fc"], opts))
    assert rec.status == "unsupported" and "no native bf16" in rec.error
    assert rec.emulated is False
    emu = execute(
        RunSpec("fc", TINY["fc"], RunOptions(**{**opts.__dict__, "allow_emulated": True}))
    )
    assert emu.status == "ok" and emu.emulated is True and emu.step_time_s > 0
    assert "no native bf16" in emu.flags["emulated"]
    assert emu.run_key != rec.run_key  # another measurement, not a retry of the unsupported one
    # tf32 cannot be emulated on a CPU: still unsupported
    tf32 = execute(RunSpec("fc", TINY["fc"], RunOptions(**{**opts.__dict__, "precision": "tf32",
                                                   "allow_emulated": True})))  # fmt: skip
    assert tf32.status == "unsupported" and not tf32.emulated
    # an ISA cap is a different environment: different run keys for the same config
    fp32 = execute(
        RunSpec("fc", TINY["fc"], RunOptions(device="cpu", threads=1, timing=TINY_POLICY))
    )
    cpu_flags(ZEN4)
    fp32_zen = execute(
        RunSpec("fc", TINY["fc"], RunOptions(device="cpu", threads=1, timing=TINY_POLICY))
    )
    assert fp32.fingerprint != fp32_zen.fingerprint
    assert fp32_zen.env["native_precisions"] == ["fp32", "bf16"]
