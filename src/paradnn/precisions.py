"""Precisions and where each runs natively: one torch-free home for the decision.

A precision is measured where the device runs it natively. On a CPU without bf16 (fp16)
instructions, oneDNN and ATen convert to fp32 and back: the run works but measures the
conversion, 6–25× slower than fp32 on an AVX2 CPU, so it is `unsupported` unless the user asks
for it (`--allow-emulated`), and then stored with `emulated = 1`. The same function decides for
runs, `calibrate`, `ops`, `platforms`, `--dry-run` and the presets' `native` precisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from paradnn import host
from paradnn.errors import ConfigError


@dataclass(frozen=True)
class Precision:
    """What a precision means to a run, torch-free: bytes per activation (and synthetic input)
    element, the autocast dtype's torch name (None: no autocast), TF32 matmuls on or off, and
    whether the loss is scaled (fp16's narrow exponent underflows small gradients)."""

    name: str
    itemsize: int
    autocast_dtype: str | None = None
    tf32: bool = False
    loss_scaling: bool = False


TABLE = {
    "fp32": Precision("fp32", 4),
    "tf32": Precision("tf32", 4, tf32=True),  # stored as fp32, multiplied with 10-bit mantissas
    "bf16": Precision("bf16", 2, autocast_dtype="bfloat16"),
    "fp16": Precision("fp16", 2, autocast_dtype="float16", loss_scaling=True),
}
PRECISIONS = tuple(TABLE)  # ("fp32", "tf32", "bf16", "fp16")
AUTOCAST = tuple(p for p, v in TABLE.items() if v.autocast_dtype)  # 16-bit activations
# What a sweep's `precisions = ["fp32", "native"]` expands `native` to, where the device runs
# them natively: the mixed precisions (TF32 is an fp32 mode of its own, asked for by name).
LOW_PRECISIONS = ("bf16", "fp16")
NATIVE = "native"
EMULATABLE = {"cpu": ("bf16", "fp16")}  # what autocast can still run, converting to fp32

# Precision policies (docs/optimizers.md): `mixed` (the default) keeps fp32 weights,
# gradients and optimizer state and runs the step under autocast; `pure` is `model.half()` /
# `.bfloat16()`: weights, gradients and optimizer state in the 16-bit type, no autocast and no
# fp32 master copy, and no loss scaling (GradScaler refuses 16-bit gradients; what published
# pure-fp16 measurements ran). fp32 and tf32 have one policy, stored as mixed.
POLICIES = ("mixed", "pure")


def effective_policy(precision: str, policy: str) -> str:
    """The policy a run of `precision` actually has: `pure` only for the 16-bit precisions."""
    return policy if precision in AUTOCAST else "mixed"


def state_itemsize(precision: str, policy: str) -> int:
    """Bytes per weight, gradient and optimizer-state element: 4 (fp32 master weights) under
    mixed precision, the 16-bit type's 2 under pure."""
    return 2 if effective_policy(precision, policy) == "pure" else 4


# x86 and Arm flags that mean native arithmetic in the precision.
CPU_NATIVE_FLAGS = {
    "bf16": ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16"),
    "fp16": ("avx512_fp16", "amx_fp16", "fphp", "asimdhp"),
}
ONEDNN_LEVEL = {"bf16": "AVX512_CORE_BF16", "fp16": "AVX512_CORE_FP16"}


def get(precision: str) -> Precision:
    if precision not in TABLE:
        raise ConfigError("precision", precision, "must be one of " + ", ".join(PRECISIONS))
    return TABLE[precision]


def itemsize(precision: str) -> int:
    """Bytes per activation element (fp32 master weights and gradients stay 4 in every one)."""
    return get(precision).itemsize


def precision_flags(precision: str, policy: str = "mixed") -> dict[str, object]:
    """The framework flags a run of this precision sets (stored with every record); a pure
    run has no autocast and no loss scaling, its weights are in `weight_dtype`."""
    p = TABLE.get(precision, TABLE["fp32"])
    pure = precision in TABLE and effective_policy(precision, policy) == "pure"
    flags: dict[str, object] = {
        "matmul_allow_tf32": p.tf32,
        "cudnn_allow_tf32": p.tf32,
        "float32_matmul_precision": "high" if p.tf32 else "highest",
        "autocast_dtype": None if pure else p.autocast_dtype,
        "loss_scaling": False if pure else p.loss_scaling,
    }
    if pure:  # only then: the flags of mixed runs are what they were before policies
        flags["weight_dtype"] = p.autocast_dtype
    return flags


def cpu_reason(
    precision: str, flags: Iterable[str] | None = None, *, caps: bool = True
) -> str | None:
    """Why `precision` is not native on this CPU, or None when it is. `caps=False` asks about
    the hardware alone (the flags), leaving out the ISA caps this process runs under."""
    if precision == "fp32":
        return None
    if precision == "tf32":
        return "tf32 is a tensor-core mode of NVIDIA GPUs; CPUs have none"
    flags = frozenset(host.cpu_flags() if flags is None else flags)
    wanted = CPU_NATIVE_FLAGS[precision]
    if not flags & set(wanted):
        return (
            f"this CPU has no native {precision} arithmetic (none of {'/'.join(wanted[:2])}); "
            "oneDNN would convert to fp32 and back (--allow-emulated runs it, labelled emulated)"
        )
    level = ONEDNN_LEVEL[precision]
    if not caps:
        return None
    if not host.onednn_allows(level):
        return (
            f"oneDNN is capped below {level} (ONEDNN_MAX_CPU_ISA={host.onednn_cap()}): "
            f"{precision} would be emulated (--allow-emulated runs it, labelled emulated)"
        )
    if not host.aten_allows("AVX512"):
        return (
            f"ATen is capped at {host.aten_cap()} (ATEN_CPU_CAPABILITY): {precision} kernels "
            "would be emulated (--allow-emulated runs it, labelled emulated)"
        )
    return None


def cuda_reason(precision: str, capability: tuple[int, int]) -> str | None:
    """Why `precision` is not native on an NVIDIA GPU of this compute capability."""
    major, minor = capability
    if precision in ("tf32", "bf16") and major < 8:
        return f"{precision} needs compute capability ≥ 8.0; this GPU is {major}.{minor}"
    if precision == "fp16" and (major, minor) < (5, 3):
        return f"fp16 needs compute capability ≥ 5.3; this GPU is {major}.{minor}"
    return None


def native_reason(
    precision: str, device_type: str, *, cuda_capability: tuple[int, int] | None = None
) -> str | None:
    """Why `precision` is not native on the device, or None when it is."""
    if device_type == "cuda":
        if cuda_capability is None:
            return "the GPU's compute capability is unknown"
        return cuda_reason(precision, cuda_capability)
    return cpu_reason(precision)


def native_set(device_type: str, *, cuda_capability: tuple[int, int] | None = None) -> list[str]:
    """Every precision the device runs natively, in PRECISIONS order."""
    return [
        p
        for p in PRECISIONS
        if native_reason(p, device_type, cuda_capability=cuda_capability) is None
    ]


def can_emulate(precision: str, device_type: str) -> bool:
    return precision in EMULATABLE.get(device_type, ())
