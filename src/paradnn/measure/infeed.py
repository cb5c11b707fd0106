"""Host data infeed (docs/infeed.md): where each training step's batch comes from, and what
feeding it costs.

Three sources, one timed step (measure/step.py's TrainStep, unchanged):
- `device`: ParaDnn's synthetic batch, made once on the device (today's runs);
- `host`: pinned host tensors (pinned only where a CUDA device exists) copied every step into
  the step's device buffers with `non_blocking=True`;
- `pipeline`: a real input pipeline. paradnn writes the data itself to a local cache (nothing
  is downloaded): each image input becomes one JPEG file per example, each integer input
  (tokens, labels) and any other float input one binary file of rows. A
  `torch.utils.data.DataLoader` (num_workers, pin_memory, prefetch_factor, persistent_workers)
  reads, decodes (PIL) and augments them (random horizontal flip, normalisation) every step,
  shuffled, in epochs of EPOCH_BATCHES batches; each batch is copied into the step's buffers.

What a run records (records.Infeed), over the timer's timed window: the time blocked in
`next()` per step, the host time copying the batch per step, their share of the window's wall
time, the host CPU used by the run and its loader workers; then, after the window, the infeed
drained alone (no model) and the model alone on its resident device batch, and `input_bound`
when the first is the slower. The loader's workers die with the run: they are shut down when
it ends, and each sets PR_SET_PDEATHSIG, so a killed run leaves none behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from paradnn.config import LOADER_SETTINGS, RunOptions
from paradnn.records import DEVICE_DATA, HOST_DATA, Infeed

CACHE_ENV = "PARADNN_DATA_DIR"  # where the pipeline's files go (default ~/.cache/paradnn/infeed)
FORMAT = 1  # bump when the files' layout changes: old cache entries are then not reused
EPOCH_BATCHES = 16  # batches per epoch of the pipeline's dataset
MIN_FILES, MAX_FILES = 32, 256  # distinct examples on disk (cycled through each epoch)
JPEG_QUALITY = 90
MEAN, STD = 0.5, 0.25  # the images' normalisation after decoding
DRAIN_MIN_BATCHES, DRAIN_MIN_S, DRAIN_MAX_S, DRAIN_MAX_BATCHES = 5, 0.25, 3.0, 1000
MODEL_MIN_STEPS, MODEL_MIN_S, MODEL_MAX_S = 3, 0.25, 3.0
PR_SET_PDEATHSIG = 1


def unsupported_reason(options: RunOptions, config: dict[str, Any]) -> str | None:
    """Why this run's data source cannot run (decided before any work), or None."""
    if options.data_source != "pipeline":
        return None
    if not isinstance(config.get("batch"), int):
        return "the pipeline data source needs a model with a `batch` field"
    try:
        import PIL  # noqa: F401  (matplotlib's dependency; the JPEG codec)
    except ImportError:
        return "the pipeline data source needs Pillow (pip install pillow) to encode JPEGs"
    return None


# -- the batch's leaves ---------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """One tensor of a batch: how the pipeline stores it (`kind`), its batch axis, the shape
    of one example (the batch axis removed) and the dtype the step trains on."""

    kind: str  # image (JPEG per example), tokens / features (rows of a binary file), constant
    dim: int | None  # the batch axis; None for a constant (no axis of size batch)
    shape: tuple[int, ...]
    dtype: str  # torch dtype, e.g. "float32"


def leaves(tree: Any) -> list[torch.Tensor]:
    """The tensors of a (nested tuple) batch, in order."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, list | tuple):
        return [t for item in tree for t in leaves(item)]
    return []


def plan(tensors: list[torch.Tensor], batch: int) -> list[Leaf]:
    """How each tensor is stored: a float N×C×H×W with C of 1 or 3 as JPEG images, integers as
    token rows, other floats as feature rows, along the first axis of size `batch`; a tensor
    without one (a scalar normaliser) is a constant, left on the device."""
    out = []
    for t in tensors:
        dims = [i for i, n in enumerate(t.shape) if n == batch]
        dtype = str(t.dtype).removeprefix("torch.")
        if not dims:
            out.append(Leaf("constant", None, tuple(t.shape), dtype))
            continue
        d = dims[0]
        shape = tuple(n for i, n in enumerate(t.shape) if i != d)
        if t.is_floating_point() and t.dim() == 4 and d == 0 and shape[0] in (1, 3):
            kind = "image"
        else:
            kind = "features" if t.is_floating_point() else "tokens"
        out.append(Leaf(kind, d, shape, dtype))
    return out


# -- the files ------------------------------------------------------------------------------


def cache_root() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "paradnn" / "infeed"


def _rows(t: torch.Tensor, leaf: Leaf, n: int) -> np.ndarray:
    """`n` examples of a token/feature tensor (its own rows, cycled), as file rows."""
    host = t.detach().to("cpu")
    host = host.float() if host.is_floating_point() else host.long()
    rows = host.movedim(leaf.dim, 0).numpy()
    picked = rows[np.arange(n) % rows.shape[0]]
    if leaf.kind == "features":
        return picked.astype(np.float32)
    small = picked.size == 0 or (picked.min() >= -(2**31) and picked.max() < 2**31)
    return picked.astype(np.int32 if small else np.int64)


def _image(rng: np.random.Generator, channels: int, h: int, w: int) -> Any:
    """A smooth random picture (an upscaled coarse grid with grain), not uniform noise: noise
    compresses and decodes unlike photographs."""
    from PIL import Image

    coarse = rng.integers(0, 256, (max(1, h // 4), max(1, w // 4), channels), dtype=np.uint8)
    mode = "RGB" if channels == 3 else "L"
    img = Image.fromarray(coarse if channels == 3 else coarse[..., 0], mode)
    smooth = np.asarray(img.resize((w, h), Image.Resampling.BICUBIC), dtype=np.int16)
    grain = rng.integers(-8, 9, smooth.shape, dtype=np.int16)
    return Image.fromarray(np.clip(smooth + grain, 0, 255).astype(np.uint8), mode)


def write_dataset(
    tensors: list[torch.Tensor], specs: list[Leaf], batch: int, seed: int, root: Path
) -> tuple[Path, dict[str, Any], bool]:
    """The dataset's directory under `root` (written now unless an identical one is there),
    its meta and whether it was a cache hit. Written to a temporary directory and renamed, so
    a killed run never leaves a half-written entry that a later run would read."""
    n = min(max(batch, MIN_FILES), MAX_FILES)
    arrays = {
        i: _rows(t, leaf, n)
        for i, (t, leaf) in enumerate(zip(tensors, specs, strict=True))
        if leaf.kind in ("tokens", "features")
    }
    h = hashlib.sha256(
        json.dumps([FORMAT, n, seed, [asdict(s) for s in specs]], sort_keys=True).encode()
    )
    for i in sorted(arrays):
        h.update(arrays[i].tobytes())
    final = root / h.hexdigest()[:20]
    if (final / "meta.json").exists():
        return final, json.loads((final / "meta.json").read_text()), True
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        rng = np.random.default_rng(seed)
        files: list[dict[str, Any]] = []
        for i, leaf in enumerate(specs):
            entry: dict[str, Any] = {"kind": leaf.kind}
            if leaf.kind == "image":
                c, hh, ww = leaf.shape
                (tmp / str(i)).mkdir()
                for j in range(n):
                    _image(rng, c, hh, ww).save(
                        tmp / str(i) / f"{j:05d}.jpg", "JPEG", quality=JPEG_QUALITY
                    )
                entry["format"] = f"JPEG q{JPEG_QUALITY}, {'RGB' if c == 3 else 'L'} {hh}x{ww}"
            elif leaf.kind in ("tokens", "features"):
                a = arrays[i]
                a.tofile(tmp / f"{i}.bin")
                entry.update(format="raw rows", file_dtype=str(a.dtype), row=list(a.shape[1:]))
            files.append(entry)
        size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        meta = {"format": FORMAT, "examples": n, "bytes": size, "leaves": files}
        (tmp / "meta.json").write_text(json.dumps(meta))
        try:
            tmp.rename(final)
        except OSError:  # another run wrote the same entry first: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final, json.loads((final / "meta.json").read_text()), False


class FileDataset(torch.utils.data.Dataset):
    """`length` examples (an epoch) over the `examples` on disk: example i reads file
    i mod examples, decoded and augmented with a generator seeded by (seed, i)."""

    def __init__(self, path: Path, meta: dict[str, Any], specs: list[Leaf], length: int, seed: int):
        self.path, self.meta, self.specs = path, meta, specs
        self.length, self.seed, self.n = length, seed, int(meta["examples"])
        self._maps: dict[int, np.ndarray] = {}  # opened lazily, in whichever process reads

    def __len__(self) -> int:
        return self.length

    def _rows(self, i: int) -> np.ndarray:
        if i not in self._maps:
            entry = self.meta["leaves"][i]
            self._maps[i] = np.memmap(
                self.path / f"{i}.bin", dtype=entry["file_dtype"], mode="r"
            ).reshape(self.n, *entry["row"])
        return self._maps[i]

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        j = index % self.n
        rng = np.random.default_rng([self.seed, index])
        out = []
        for i, leaf in enumerate(self.specs):
            if leaf.kind == "image":
                out.append(decode(self.path / str(i) / f"{j:05d}.jpg", bool(rng.random() < 0.5)))
            elif leaf.kind in ("tokens", "features"):
                out.append(torch.from_numpy(np.array(self._rows(i)[j])))
        return out


def decode(path: Path, flip: bool) -> torch.Tensor:
    """A JPEG as a normalised C×H×W float tensor (PIL decodes), flipped left-right if asked."""
    from PIL import Image

    with Image.open(path) as img:
        a = np.array(img)  # a writable copy: torch refuses to share a read-only buffer
    if flip:
        a = a[:, ::-1]
    t = torch.from_numpy(np.ascontiguousarray(a))  # flipped: a negative stride, so a copy
    t = t.permute(2, 0, 1) if t.dim() == 3 else t.unsqueeze(0)
    return (t.float() / 255.0 - MEAN) / STD


class Collate:
    """Examples -> the batch's non-constant tensors, each stacked on its batch axis and cast
    to the dtype the step trains on."""

    def __init__(self, specs: list[Leaf]):
        self.specs = [s for s in specs if s.kind != "constant"]

    def __call__(self, items: list[list[torch.Tensor]]) -> list[torch.Tensor]:
        return [
            torch.stack([it[k] for it in items], dim=leaf.dim).to(getattr(torch, leaf.dtype))
            for k, leaf in enumerate(self.specs)
        ]


class DieWithRun:
    """A loader worker's init: it gets SIGKILL when the run's process dies (PR_SET_PDEATHSIG),
    and exits at once if that already happened before the request took effect."""

    def __init__(self) -> None:
        self.parent = os.getpid()

    def __call__(self, worker_id: int) -> None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != self.parent:
            os._exit(0)


# -- host CPU -------------------------------------------------------------------------------


def _live_children_cpu() -> tuple[float | None, str]:
    """CPU seconds of this process's live children (the loader's workers): /proc, else psutil;
    (None, why) when neither can be read."""
    me = str(os.getpid())
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # it exited while we looked
            if fields[1] == me:
                total += (int(fields[11]) + int(fields[12])) / ticks
        return total, "/proc/<pid>/stat"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # type: ignore[import-not-found]
    except ImportError:
        return None, "children's CPU time unreadable: no /proc and no psutil"
    kids = psutil.Process().children(recursive=True)
    return sum(k.cpu_times().user + k.cpu_times().system for k in kids), "psutil"


def run_cpu_seconds() -> float | None:
    """CPU seconds of this process, its reaped children and its live ones (None: unreadable)."""
    t = os.times()
    live, _ = _live_children_cpu()
    if live is None:
        return None
    return t.user + t.system + t.children_user + t.children_system + live


def allowed_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# -- the feeds ------------------------------------------------------------------------------


class Feed:
    """The device source, and the base of the others: a timer window that counts the time
    spent fetching and copying batches and the host CPU over the timed phase."""

    source = "device"

    def __init__(self, step: Any, device: torch.device, examples: int | None):
        self.device, self.examples = device, examples  # examples per step, as examples_per_s
        self.buffers = leaves((step.x, step.y))  # the step's own tensors: filled in place
        self.wait_s = self.copy_s = 0.0
        self.calls = 0
        self.window: dict[str, Any] = {}
        self.workers = 0

    def wrap(self, step: Callable[[], Any]) -> Callable[[], Any]:
        return step

    def begin(self) -> None:
        self._w0 = (time.perf_counter(), self.wait_s, self.copy_s, self.calls, run_cpu_seconds())

    def end(self) -> None:
        t0, wait0, copy0, calls0, cpu0 = self._w0
        wall = time.perf_counter() - t0
        cpu1 = run_cpu_seconds()
        self.window = {
            "wall_s": wall,
            "steps": self.calls - calls0,
            "wait_s": self.wait_s - wait0,
            "copy_s": self.copy_s - copy0,
            "cpu_s": None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
        }

    def part(self, model: Callable[[], Any], sync: Callable[[], None]) -> Infeed:
        """The run's Infeed part from the window and, for a loader, the two solo rates."""
        w = self.window
        nulls: dict[str, str] = {}
        detail: dict[str, Any] = {"window": w, "cpu_method": _live_children_cpu()[1]}
        cores = share = None
        if not w:
            why = "the timed window did not end"
            return Infeed(self.source, nulls=dict.fromkeys(("data_wait_s", "infeed_share"), why))
        if w["cpu_s"] is None:
            why = "the loader workers' CPU time is unreadable (no /proc, no psutil)"
            nulls.update(host_cpu_cores=why, host_cpu_share=why)
        else:
            cores = w["cpu_s"] / w["wall_s"]
            share = cores / allowed_cores()
            detail["cores_allowed"] = allowed_cores()
        fields = self.settings()
        if self.source == "device":
            why = DEVICE_DATA
            nulls.update(loader_examples_per_s=why, model_only_examples_per_s=why)
            nulls.update(dict.fromkeys(LOADER_SETTINGS, why))
            detail["input_bound"] = "device data: nothing to wait for, by construction"
            return Infeed(
                self.source,
                data_wait_s=0.0,
                data_copy_s=0.0,
                infeed_share=0.0,
                input_bound=False,
                host_cpu_cores=cores,
                host_cpu_share=share,
                infeed=detail,
                nulls=nulls,
            )
        steps = w["steps"]
        if self.source == "host":
            nulls.update(dict.fromkeys(LOADER_SETTINGS, HOST_DATA))
        loader, drained = self.drain(sync)
        solo, ran = model_only(model, sync, self.examples or 0)
        detail.update(drained_batches=drained, model_only_steps=ran, **self.describe())
        return Infeed(
            self.source,
            **fields,
            data_wait_s=w["wait_s"] / steps if steps else None,
            data_copy_s=w["copy_s"] / steps if steps else None,
            infeed_share=min(1.0, (w["wait_s"] + w["copy_s"]) / w["wall_s"]),
            loader_examples_per_s=loader,
            model_only_examples_per_s=solo,
            input_bound=loader < solo,
            host_cpu_cores=cores,
            host_cpu_share=share,
            infeed=detail,
            nulls=nulls,
        )

    def settings(self) -> dict[str, Any]:
        return {}

    def describe(self) -> dict[str, Any]:
        return {}

    def fetch(self) -> list[torch.Tensor]:
        raise NotImplementedError

    def queued(self) -> int:
        return 0

    def copy(self, batch: list[torch.Tensor]) -> None:
        """Each non-constant tensor into the step's buffer (in place, so a compiled step and
        its guards see the same tensors), asynchronously where the source is pinned."""
        for dst, src in zip(self.targets, batch, strict=True):
            dst.copy_(src, non_blocking=True)

    def drain(self, sync: Callable[[], None]) -> tuple[float, int]:
        """Examples/s of the infeed alone (fetch + copy, no model), past the batches already
        queued while the model trained."""
        for _ in range(self.queued()):
            self.copy(self.fetch())
        sync()
        t0 = time.perf_counter()
        n = 0
        while True:
            self.copy(self.fetch())
            n += 1
            spent = time.perf_counter() - t0
            if n >= DRAIN_MIN_BATCHES and spent >= DRAIN_MIN_S:
                break
            if spent >= DRAIN_MAX_S or n >= DRAIN_MAX_BATCHES:
                break
        sync()
        return n * (self.examples or 0) / (time.perf_counter() - t0), n

    def close(self) -> None:
        return None


def model_only(
    step: Callable[[], Any], sync: Callable[[], None], examples: int
) -> tuple[float, int]:
    """Examples/s of the model alone on its resident device batch (a short, untimed-by-the-
    timer estimate: the `input_bound` flag's other side)."""
    sync()
    t0 = time.perf_counter()
    n = 0
    while True:
        step()
        n += 1
        spent = time.perf_counter() - t0
        if (n >= MODEL_MIN_STEPS and spent >= MODEL_MIN_S) or spent >= MODEL_MAX_S:
            break
    sync()
    return n * examples / (time.perf_counter() - t0), n


class _Fed(Feed):
    """A source that feeds every step: fetch (timed as the wait), copy (timed), then the step."""

    targets: list[torch.Tensor]

    def wrap(self, step: Callable[[], Any]) -> Callable[[], Any]:
        def fed() -> Any:
            t0 = time.perf_counter()
            batch = self.fetch()
            t1 = time.perf_counter()
            self.copy(batch)
            t2 = time.perf_counter()
            self.wait_s += t1 - t0
            self.copy_s += t2 - t1
            self.calls += 1
            return step()

        return fed


class HostFeed(_Fed):
    source = "host"

    def __init__(self, step: Any, device: torch.device, examples: int | None):
        super().__init__(step, device, examples)
        self.targets = self.buffers  # every tensor, copied whole each step
        pin = device.type == "cuda"
        self.host = [t.detach().to("cpu", copy=True) for t in self.targets]
        if pin:
            self.host = [t.pin_memory() for t in self.host]
        self.pinned = pin

    def fetch(self) -> list[torch.Tensor]:
        return self.host

    def describe(self) -> dict[str, Any]:
        return {
            "pinned": self.pinned,
            "bytes_per_step": sum(t.numel() * t.element_size() for t in self.host),
        }


class PipelineFeed(_Fed):
    source = "pipeline"

    def __init__(
        self, step: Any, device: torch.device, examples: int | None, batch: int, options: RunOptions
    ):
        super().__init__(step, device, examples)
        self.specs = plan(self.buffers, batch)
        self.targets = [
            b for b, s in zip(self.buffers, self.specs, strict=True) if s.kind != "constant"
        ]
        t0 = time.perf_counter()
        self.path, self.meta, self.hit = write_dataset(
            self.buffers, self.specs, batch, options.seed, cache_root()
        )
        self.write_s = time.perf_counter() - t0
        w = options.loader_workers
        self.workers = w
        self.pin = bool(options.pin_memory and device.type == "cuda")
        self.prefetch = options.prefetch_factor if w else None
        self.persistent = bool(options.persistent_workers and w)
        if w:  # the run's worker is a daemon process; its loader workers die with it anyway
            multiprocessing.current_process()._config["daemon"] = False  # type: ignore[attr-defined]
        kwargs: dict[str, Any] = {}
        if w:
            kwargs = dict(
                prefetch_factor=self.prefetch,
                persistent_workers=self.persistent,
                worker_init_fn=DieWithRun(),
            )
        dataset = FileDataset(self.path, self.meta, self.specs, EPOCH_BATCHES * batch, options.seed)
        self.loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=batch,
            shuffle=True,
            drop_last=True,
            num_workers=w,
            collate_fn=Collate(self.specs),
            pin_memory=self.pin,
            generator=torch.Generator().manual_seed(options.seed),
            **kwargs,
        )
        self.it: Any = iter(self.loader)
        self.epochs = 1

    def fetch(self) -> list[torch.Tensor]:
        try:
            return next(self.it)
        except StopIteration:
            self.epochs += 1
            self.it = iter(self.loader)
            return next(self.it)

    def queued(self) -> int:
        return (self.prefetch or 0) * self.workers

    def settings(self) -> dict[str, Any]:
        return {
            "loader_workers": self.workers,
            "pin_memory": self.pin,
            "prefetch_factor": self.prefetch,
            "persistent_workers": self.persistent,
        }

    def describe(self) -> dict[str, Any]:
        from PIL import __version__ as pil

        return {
            "cache_dir": str(self.path),
            "cache_hit": self.hit,
            "write_s": round(self.write_s, 4),
            "dataset": self.meta,
            "decoder": f"PIL {pil}",
            "augment": "random horizontal flip, (x/255 - 0.5)/0.25",
            "epoch_batches": EPOCH_BATCHES,
            "epochs_started": self.epochs,
            "worker_pids": self.worker_pids(),
        }

    def worker_pids(self) -> list[int]:
        workers = getattr(self.it, "_workers", None) or []
        return [int(p.pid) for p in workers if p.pid is not None]

    def close(self) -> None:
        """Stop the loader's workers now (they would otherwise outlive a persistent loader)."""
        it, self.it = self.it, None
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        self.loader._iterator = None  # type: ignore[attr-defined]
        del it


def open_feed(
    step: Any,
    options: RunOptions,
    device: torch.device,
    config: dict[str, Any],
    examples: int | None,
) -> Feed:
    """The run's feed: its window goes to the timer, `wrap` around the timed step."""
    if options.data_source == "host":
        return HostFeed(step, device, examples)
    if options.data_source == "pipeline":
        return PipelineFeed(step, device, examples, int(config["batch"]), options)
    return Feed(step, device, examples)
