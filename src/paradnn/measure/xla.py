"""The JAX backend's instruments (docs/jax.md): one jitted training step with donated buffers,
lowered and compiled ahead of time, a clock that ends its marks with `block_until_ready`, and
what XLA says about the compiled step (cost analysis, memory analysis) and the device (its
memory statistics).

jax is imported inside functions only, after `XLA_PYTHON_CLIENT_PREALLOCATE=false` is set: JAX
otherwise takes 75 % of a GPU's memory at start, and the device's peak would mean nothing. The
peak (`memory_stats()['peak_bytes_in_use']`) is a process high-water mark, which is why every
JAX run gets a worker process of its own (runner/supervisor.py).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from paradnn import optimizers
from paradnn.errors import ConfigError

PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"
# JAX implements these precisions (docs/jax.md); tf32 is a CUDA matmul mode and fp16 needs loss
# scaling, neither of which the JAX step does.
JAX_PRECISIONS = ("fp32", "bf16")
NO_MEMORY_STATS = "the {platform} device reports no memory statistics (jax memory_stats() is None)"


SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def import_jax(threads: int | None = None) -> Any:
    """jax, imported with preallocation off (set before the first import; a no-op after).
    `threads=1` also makes XLA's CPU backend single-threaded (XLA_FLAGS, read at its start);
    other counts have no XLA flag: XLA's CPU pool spans the CPUs the process may use."""
    os.environ[PREALLOCATE] = "false"
    if threads == 1 and "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if SINGLE_THREAD not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD}".strip()
    import jax

    return jax


def versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for pkg in ("jax", "jaxlib", "optax", "libtpu"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def pick_device(spec: str) -> Any:
    """The JAX device of a `--device` spec: auto is JAX's default device (a TPU on a TPU host,
    else a GPU when jax has one, else the CPU), cpu the host, cuda[:N] the N-th GPU."""
    jax = import_jax()
    if spec == "auto":
        return jax.devices()[0]
    platform, _, index = spec.partition(":")
    want = "cpu" if platform == "cpu" else "gpu"
    try:
        devices = jax.devices(want)
    except RuntimeError as e:
        raise ConfigError(
            "device", spec, f"a device jax can use (jax has no {want} backend: {e})"
        ) from None
    i = int(index or 0)
    if i >= len(devices):
        raise ConfigError("device", spec, f"one of jax's {len(devices)} {want} device(s)")
    return devices[i]


class JaxClock:
    """The timer's clock (measure/timer.py's BlockClock) for JAX's asynchronous dispatch: a
    mark waits for the newest step's outputs (`block_until_ready`) before reading the host
    clock, so a block of k steps ends when its last step has finished on the device."""

    def __init__(self, ready: Callable[[], Any]):
        self.ready = ready

    def now(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        import jax

        jax.block_until_ready(self.ready())

    def mark(self) -> float:
        self.sync()
        return time.perf_counter()

    def elapsed(self, pairs: list[tuple[float, float]]) -> list[float]:
        return [b - a for a, b in pairs]


def make_optimizer(name: str) -> Any:
    """The optax transformation of `paradnn.optimizers`' spec (ParaDnn's constants)."""
    import optax

    facts = optimizers.get(name)
    return getattr(optax, facts.optax_function)(**facts.optax_hyperparameters)


def _first(cost: Any) -> dict[str, Any] | None:
    """cost_analysis() is a dict now, a one-element list in older jax (jax#22249), or None."""
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else None
    return dict(cost) if isinstance(cost, dict) else None


class XlaStep:
    """One training step, exactly what is timed: forward, loss, gradients, optimizer update, in
    one jitted function whose parameter, optimizer-state and BatchNorm-state buffers are
    donated (`donate_argnums`), so XLA updates them in place. Synthetic batch generated once,
    on the device. `lower_and_compile()` must run before the first step."""

    def __init__(self, net: Any, optimizer: str, device: Any, seed: int = 0):
        jax = import_jax()
        import optax

        self.device = device
        self.net = net
        self.tx = make_optimizer(optimizer)
        with jax.default_device(device):  # each jitted: one compile, not one per op
            key = jax.random.key(seed)
            k_init, k_data = jax.random.split(key)
            self.params, self.state = jax.jit(net.init)(k_init)
            self.opt_state = jax.jit(self.tx.init)(self.params)
            self.x, self.y = jax.jit(net.make_batch)(k_data)
        put = lambda t: jax.device_put(t, device)  # noqa: E731
        self.params, self.state, self.opt_state = (
            put(self.params),
            put(self.state),
            put(self.opt_state),
        )
        self.x, self.y = put(self.x), put(self.y)
        self.loss: Any = None
        tx = self.tx

        loss_fn = loss_of(net)

        def step(params: Any, opt_state: Any, state: Any, x: Any, y: Any) -> Any:
            (loss, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                params, state, x, y
            )
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, new_state, loss

        self._loss_fn = loss_fn
        self.jitted = jax.jit(step, donate_argnums=(0, 1, 2))
        self.compiled: Any = None
        self.lowered: Any = None
        self.donated: bool | None = None

    def _args(self) -> tuple:
        return self.params, self.opt_state, self.state, self.x, self.y

    def lower_and_compile(self) -> tuple[float, float]:
        """(seconds to trace and lower to StableHLO, seconds for XLA to compile it)."""
        t0 = time.perf_counter()
        self.lowered = self.jitted.trace(*self._args()).lower()
        t1 = time.perf_counter()
        self.compiled = self.lowered.compile()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    def __call__(self) -> None:
        import jax

        if self.donated is None:
            before = jax.tree.leaves(self.params)
        self.params, self.opt_state, self.state, self.loss = self.compiled(*self._args())
        if self.donated is None:  # whether XLA took the buffers (a deleted input was reused)
            self.donated = all(a.is_deleted() for a in before)

    def ready(self) -> Any:
        return (self.params, self.loss)

    def final_loss(self) -> float | None:
        return None if self.loss is None else float(self.loss)

    def model_flops(self) -> int:
        return model_flops(self.net, self.params, self.state, self.x, self.y)

    def param_count(self) -> int:
        import jax

        return int(sum(a.size for a in jax.tree.leaves(self.params)))

    def cost(self) -> dict[str, Any] | None:
        """XLA's cost analysis of the compiled step (FLOPs, bytes accessed), or None."""
        return _first(self.compiled.cost_analysis())

    def grad_cost(self) -> dict[str, Any] | None:
        """The cost analysis of forward+backward alone (no optimizer), before XLA's
        optimisations: what the analytic count covers. Lowered only, never compiled."""
        import jax

        lowered = jax.jit(jax.value_and_grad(self._loss_fn, has_aux=True)).trace(
            self.params, self.state, self.x, self.y
        )
        return _first(lowered.lower().cost_analysis())

    def memory_analysis(self) -> dict[str, int] | None:
        """XLA's static buffer sizes of the compiled step (argument, output, temp, alias)."""
        m = self.compiled.memory_analysis()
        if m is None:
            return None
        names = ("argument", "output", "alias", "temp", "generated_code")
        return {f"{n}_bytes": int(getattr(m, f"{n}_size_in_bytes", 0) or 0) for n in names}


def _prod(xs: Any) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def _eqn_flops(eqn: Any) -> int:
    """FLOPs of one matmul or convolution (2 per multiply-add); 0 for anything else."""
    name = eqn.primitive.name
    if name == "dot_general":
        lhs, rhs = (v.aval.shape for v in eqn.invars[:2])
        (_, rc), (_, rb) = eqn.params["dimension_numbers"]
        free_rhs = _prod(d for i, d in enumerate(rhs) if i not in rc and i not in rb)
        return 2 * _prod(lhs) * free_rhs
    if name == "conv_general_dilated":
        lhs, rhs = (v.aval.shape for v in eqn.invars[:2])
        out = eqn.outvars[0].aval.shape
        dn = eqn.params["dimension_numbers"]
        groups = eqn.params["feature_group_count"] * eqn.params["batch_group_count"]
        taps = _prod(rhs[i] for i in dn.rhs_spec[2:])
        if any(d > 1 for d in eqn.params["lhs_dilation"]):
            # a transposed convolution (the input gradient of a strided one): every element of
            # the undilated input meets every tap once; the dilation's zeros are no work
            return 2 * _prod(lhs) * rhs[dn.rhs_spec[0]] * taps // groups
        return 2 * _prod(out) * rhs[dn.rhs_spec[1]] * taps
    return 0


def _jaxpr_flops(jaxpr: Any) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += _eqn_flops(eqn)
        times = int(eqn.params.get("length", 1)) if eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                inner = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's jaxpr, or a Jaxpr
                if hasattr(inner, "eqns"):
                    total += times * _jaxpr_flops(inner)
    return total


def loss_of(net: Any) -> Callable[..., Any]:
    """(params, state, x, y) -> (loss, new state): what the step differentiates."""

    def loss_fn(params: Any, state: Any, x: Any, y: Any) -> Any:
        logits, new_state = net.apply(params, state, x)
        return net.loss(logits, y), new_state

    return loss_fn


def model_flops(net: Any, params: Any, state: Any, x: Any, y: Any) -> int:
    """Model FLOPs of forward+backward (optimizer excluded), counted over the traced program:
    every dot_general and convolution of `value_and_grad(loss)`, a scan's body times its length.
    The torch backend's FlopCounterMode counterpart, so `train_flops` is checked against both.
    Tracing only: arrays or `jax.ShapeDtypeStruct`s (`abstract(net)`) both do."""
    import jax

    fn = jax.value_and_grad(loss_of(net), has_aux=True)
    return _jaxpr_flops(jax.make_jaxpr(fn)(params, state, x, y).jaxpr)


def abstract(net: Any) -> tuple[Any, Any, Any, Any]:
    """(params, state, x, y) as shapes and dtypes only (`jax.eval_shape`): no compile, no
    memory, for counting parameters and FLOPs of a model of any size."""
    import jax

    key = jax.random.key(0)
    params, state = jax.eval_shape(net.init, key)
    x, y = jax.eval_shape(net.make_batch, key)
    return params, state, x, y


def peak_memory(device: Any) -> tuple[int | None, str | None]:
    """(peak bytes in use on the device since the process started, or None with the reason)."""
    try:
        stats = device.memory_stats()
    except Exception as e:  # some backends raise instead of returning None
        return None, f"jax memory_stats() failed on {device.platform}: {e}"
    if not stats or "peak_bytes_in_use" not in stats:
        return None, NO_MEMORY_STATS.format(platform=device.platform)
    return int(stats["peak_bytes_in_use"]), None


def native_reason(precision: str, device: Any) -> str | None:
    """Why `precision` is not native on this JAX device, or None: the host's rule on a CPU
    (paradnn.precisions), TPUs compute bf16 natively, GPUs from compute capability 8.0."""
    from paradnn import precisions

    if precision == "fp32":
        return None
    if device.platform == "cpu":
        return precisions.cpu_reason(precision)
    if device.platform == "gpu":
        cc = getattr(device, "compute_capability", None)
        if cc:
            major, _, minor = str(cc).partition(".")
            return precisions.cuda_reason(precision, (int(major), int(minor or 0)))
        return "the GPU's compute capability is unknown"
    return None


__all__ = [
    "JAX_PRECISIONS",
    "JaxClock",
    "XlaStep",
    "abstract",
    "import_jax",
    "loss_of",
    "make_optimizer",
    "model_flops",
    "native_reason",
    "peak_memory",
    "pick_device",
    "versions",
]
