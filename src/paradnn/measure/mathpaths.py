"""The math-library paths a compute ceiling is measured over (`paradnn calibrate`). Torch-free:
the supervisor plans the calibrate units with it; `measure.calibrate` times them.

A workload's FLOPs reach the device through more than one library, and they do not run equally
fast: on a 2-core Zen 5 `F.linear` on a 2560×400×800 GEMM read 214 GFLOP/s where `torch.matmul`
on the same shape read 77, and an LSTM step ran at 138.6 % of a matmul-only "ceiling" (issue
41). So a ceiling is the best rate over every path the workloads take:

* `matmul`: `torch.mm(a, b, out=c)`, square n×n×n — BLAS (MKL) on a CPU, cuBLAS on CUDA;
* `linear`: `F.linear(x, w, b)` with a bias (nn.Linear's call), tall-skinny (4n)×n×n — oneDNN
  (mkldnn matmul) or BLAS addmm as ATen picks on a CPU, cuBLASLt (bias epilogue) on CUDA;
* `lstm`: `nn.LSTM` forward + backward (input and weight gradients), T=10, B=n/2, H=n/4 —
  oneDNN's RNN primitive on a CPU, cuDNN's on CUDA.

The library named is where the call usually lands; which one ran is ATen's choice and is
not observed. FLOPs are counted the way the families count them (`families.shapes`): a GEMM is
2·m·k·n (the bias is not counted), an LSTM layer's training step `Recurrent.train_flops()`,
exactly as the rnn family counts its layers. GRU and RNN cells on a CPU run ATen's per-step
addmm loop (families/rnn.py), which the `linear` path covers.

Every path grows the same ladder of sizes n (`ladder`), so one `--budget` bounds them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paradnn.errors import ConfigError
from paradnn.families.shapes import Recurrent

TALL = 4  # linear: m = TALL·n rows (a batch of examples) through an n×n layer
LSTM_SEQ = 10  # the paper space's shortest sequence (and the LSTM)


@dataclass(frozen=True)
class MathPath:
    """One call a ceiling is timed through, its shape at ladder step n and its FLOPs."""

    name: str
    call: str  # what is timed, in words
    cpu: str  # the library it usually reaches on a CPU
    cuda: str  # … and on a CUDA GPU
    grad: bool = False  # timed with autograd (forward + backward)

    def shape(self, n: int) -> dict[str, int]:
        if self.name == "matmul":
            return {"m": n, "k": n, "n": n}
        if self.name == "linear":
            return {"m": TALL * n, "k": n, "n": n}
        return {"seq": LSTM_SEQ, "batch": max(1, n // 2), "hidden": max(1, n // 4)}

    def flops(self, shape: dict[str, int]) -> int:
        """FLOPs of one timed step, counted as the families count them."""
        if self.name == "lstm":
            h = shape["hidden"]
            return Recurrent(self.name, "lstm", shape["batch"], shape["seq"], h, h).train_flops()
        return 2 * shape["m"] * shape["k"] * shape["n"]

    def label(self, shape: dict[str, int]) -> str:
        if self.name == "lstm":
            return f"T={shape['seq']} B={shape['batch']} H={shape['hidden']}"
        return f"{shape['m']}×{shape['k']}×{shape['n']}"

    def nbytes(self, shape: dict[str, int], itemsize: int) -> int:
        """Bytes its tensors take, roughly (operands, result; for the LSTM weights, the saved
        gate activations and the gradients): a size that would not fit is not tried."""
        if self.name == "lstm":
            t, b, h = shape["seq"], shape["batch"], shape["hidden"]
            weights = 4 * h * 2 * h
            return (3 * weights + 12 * t * b * h) * itemsize
        m, k, n = shape["m"], shape["k"], shape["n"]
        return (m * k + k * n + m * n + n) * itemsize

    def library(self, device_type: str) -> str:
        return self.cuda if device_type == "cuda" else self.cpu

    def first(self, device_type: str) -> int:
        """The first size of its growing ladder: the matmul path starts small (its square
        sizes are the simulator's rate-by-size curve), the others at half a ceiling-sized n,
        where the budget is better spent."""
        first, _ = LADDER.get(device_type, LADDER["cpu"])
        return first if self.name == "matmul" else max(first, START.get(device_type, first))


PATHS: dict[str, MathPath] = {
    p.name: p
    for p in (
        MathPath("matmul", "torch.mm(a, b, out=c), square", "BLAS (MKL)", "cuBLAS"),
        MathPath(
            "linear",
            "F.linear(x, w, b) with a bias (nn.Linear), tall-skinny",
            "oneDNN matmul or BLAS addmm, as ATen picks",
            "cuBLASLt (bias epilogue)",
        ),
        MathPath(
            "lstm",
            "nn.LSTM forward + backward",
            "oneDNN RNN",
            "cuDNN RNN",
            grad=True,
        ),
    )
}
# What `paradnn calibrate` times per device type (measure.calibrate alone times `matmul` unless
# told: `doctor` wants a plain matmul, a sanity check rather than a ceiling).
DEFAULT_PATHS: dict[str, tuple[str, ...]] = {
    "cpu": ("matmul", "linear", "lstm"),
    "cuda": ("matmul", "linear", "lstm"),
}
# The sizes n a path grows through when none are given: doubling from the first while the rate
# rises, the budget allows and the tensors fit (`measure.calibrate`).
LADDER: dict[str, tuple[int, int]] = {"cpu": (128, 16384), "cuda": (1024, 65536)}
START: dict[str, int] = {"cpu": 512, "cuda": 2048}  # where paths other than matmul start


def check_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """The paths, validated (ConfigError naming the bad one), duplicates dropped."""
    out = tuple(dict.fromkeys(paths))
    if not out:
        raise ConfigError("path", "", f"name at least one of {', '.join(PATHS)}")
    for p in out:
        if p not in PATHS:
            raise ConfigError("path", p, f"must be one of {', '.join(PATHS)}")
    return out


def default_paths(device_type: str) -> tuple[str, ...]:
    return DEFAULT_PATHS.get(device_type, ("matmul",))


def ladder(device_type: str, sizes: Sequence[int] | None = None) -> tuple[tuple[int, ...], bool]:
    """(the sizes n to try in order, whether they are a growing ladder that stops when the rate
    stops rising); sizes given by the caller are tried as given, smallest first."""
    if sizes:
        return tuple(sorted(set(int(n) for n in sizes))), False
    first, last = LADDER.get(device_type, LADDER["cpu"])
    out = [first]
    while out[-1] * 2 <= last:
        out.append(out[-1] * 2)
    return tuple(out), True
