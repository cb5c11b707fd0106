"""CUDA and NVML code paths exercised with fakes, so they are tested on CPU-only machines."""

import sys
import types

import pytest
import torch

from paradnn.measure import environment, precision
from paradnn.measure.device import CudaEventClock
from paradnn.measure.flops import CORRECTIONS

aten = torch.ops.aten


class FakeEvent:
    log: list = []

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self):
        self.t = len(FakeEvent.log) * 2.5  # ms on a fake device timeline
        FakeEvent.log.append(("record", self))

    def synchronize(self):
        FakeEvent.log.append(("sync", self))

    def elapsed_time(self, other):
        return other.t - self.t


def test_event_clock_times_blocks_with_one_sync_per_chunk(monkeypatch):
    FakeEvent.log = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    clock = CudaEventClock(torch.device("cuda", 0))
    pairs = [(clock.mark(), clock.mark()) for _ in range(3)]
    assert [e for e, _ in FakeEvent.log] == ["record"] * 6  # marking never waits
    seconds = clock.elapsed(pairs)
    assert seconds == [0.0025, 0.0025, 0.0025]
    assert [e for e, _ in FakeEvent.log].count("sync") == 1
    assert FakeEvent.log[-1][1] is pairs[-1][1]  # it waits on the last event only


@pytest.mark.parametrize(
    ("capability", "bf16", "expect"),
    [
        ((7, 0), False, {"fp32": None, "tf32": "8.0", "bf16": "bf16", "fp16": None}),  # V100
        ((8, 0), True, {"fp32": None, "tf32": None, "bf16": None, "fp16": None}),  # A100
        ((9, 0), True, {"fp32": None, "tf32": None, "bf16": None, "fp16": None}),  # H100
        ((5, 2), False, {"fp32": None, "tf32": "8.0", "bf16": "bf16", "fp16": "5.3"}),
    ],
)
def test_precision_support_by_compute_capability(monkeypatch, capability, bf16, expect):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: bf16)
    dev = torch.device("cuda", 0)
    for prec, needle in expect.items():
        reason = precision.unsupported_reason(prec, dev)
        assert (reason is None) == (needle is None), (prec, reason)
        if needle:
            assert needle in reason


def test_cpu_precision_support(monkeypatch):
    cpu = torch.device("cpu")
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PARADNN_CPU_FLAGS", "avx2 fma")  # an AVX2-only CPU
    assert precision.unsupported_reason("fp32", cpu) is None
    assert "tensor-core" in precision.unsupported_reason("tf32", cpu)
    assert "no native bf16" in precision.unsupported_reason("bf16", cpu)
    assert "no native fp16" in precision.unsupported_reason("fp16", cpu)
    monkeypatch.setenv("PARADNN_CPU_FLAGS", "avx2,avx512f,avx512_bf16")  # Zen 4, Cooper Lake
    assert precision.unsupported_reason("bf16", cpu) is None
    assert "no native fp16" in precision.unsupported_reason("fp16", cpu)
    monkeypatch.setenv("PARADNN_CPU_FLAGS", "amx_bf16 amx_fp16")  # Granite Rapids
    assert precision.unsupported_reason("bf16", cpu) is None
    assert precision.unsupported_reason("fp16", cpu) is None
    # the caps oneDNN and ATen obey make a native CPU an emulating one
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in precision.unsupported_reason("bf16", cpu)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    assert precision.unsupported_reason("bf16", cpu) is None
    assert "ONEDNN_MAX_CPU_ISA" in precision.unsupported_reason("fp16", cpu)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert "ATEN_CPU_CAPABILITY" in precision.unsupported_reason("bf16", cpu)
    monkeypatch.setenv("PARADNN_CPU_FLAGS", "asimd bf16 fphp asimdhp")  # Arm Neoverse V1
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    assert precision.unsupported_reason("bf16", cpu) is None


def test_tf32_flags_are_set_and_restored():
    before = torch.get_float32_matmul_precision()
    with precision.tf32_flags("tf32"):
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "high"
    with precision.tf32_flags("fp32"):
        assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == before


def _fake_pynvml(driver=b"560.35.03", init_error=None):
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init():
        if init_error:
            raise NVMLError(init_error)

    m.NVMLError = NVMLError
    m.nvmlInit = init
    m.nvmlShutdown = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: driver
    return m


def test_driver_version_via_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    assert environment.nvidia_driver() == ("560.35.03", None)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(driver="570.1"))
    assert environment.nvidia_driver() == ("570.1", None)


def test_driver_unknown_gives_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(init_error="Driver Not Loaded"))
    version, reason = environment.nvidia_driver()
    assert version is None and "Driver Not Loaded" in reason


def test_fingerprint_ignores_volatile_fields():
    env = {"torch": "2.13.0", "cpu_model": "X", "threads": 2, "hostname": "a"}
    assert environment.fingerprint(env) == environment.fingerprint({**env, "hostname": "b"})
    assert environment.fingerprint(env) != environment.fingerprint({**env, "threads": 4})
    assert environment.fingerprint(env) != environment.fingerprint({**env, "torch": "2.11.0"})


def _cudnn_args(T, B, layers, gates, H, n_in, mask=(True, True, True, True)):
    weights = []
    for layer in range(layers):
        weights += [
            (gates * H, n_in if layer == 0 else H),
            (gates * H, H),
            (gates * H,),
            (gates * H,),
        ]
    tail_fwd = [None, (layers, B, H), (layers, B, H), 2, H, 0, layers, False]
    tail_bwd = [
        None,
        (layers, B, H),
        (layers, B, H),
        (T, B, H),
        (T, B, H),
        None,
        None,
        2,
        H,
        0,
        layers,
        False,
        0.0,
        True,
        False,
        [],
        None,
        (1,),
        list(mask),
    ]
    return (T, B, n_in), weights, 4, tail_fwd, tail_bwd


def test_cudnn_rnn_formulas_equal_the_meta_count():
    """What a CUDA LSTM would count through `_cudnn_rnn` equals the decomposed meta count."""
    T, B, H, layers = 7, 3, 16, 2
    (inp, weights, stride, tf, tb) = _cudnn_args(T, B, layers, 4, H, H)
    fwd = CORRECTIONS[aten._cudnn_rnn](inp, weights, stride, *tf)
    bwd = CORRECTIONS[aten._cudnn_rnn_backward](inp, weights, stride, *tb)
    with torch.device("meta"):
        lstm = torch.nn.LSTM(H, H, num_layers=layers)
        x = torch.empty(T, B, H, requires_grad=True)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        lstm(x)[0].sum().backward()
    assert fwd + bwd == counter.get_total_flops()
    assert fwd == 2 * T * B * layers * 4 * H * 2 * H


def test_cudnn_backward_respects_the_output_mask():
    T, B, H = 5, 2, 8
    inp, weights, stride, _, tb = _cudnn_args(T, B, 1, 3, H, H, mask=(False, False, False, True))
    fwd = 2 * T * B * 3 * H * 2 * H
    bwd = CORRECTIONS[aten._cudnn_rnn_backward](inp, weights, stride, *tb)
    x_grad = 2 * T * B * 3 * H * H
    h0_grad = 2 * B * 3 * H * H
    assert bwd == fwd + (fwd - x_grad - h0_grad)
