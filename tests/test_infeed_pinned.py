"""The infeed's functions pinned whole (issue 46, item 6): the plan of a batch's leaves, the
files' rows and meta, decoding and its augmentation, the feeds' windows and parts on a fake
clock, the solo rates' stopping rules from both sides, and the children's CPU time read from
a played /proc. Tiny inputs, no model, one loader worker at most."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
import torch

from paradnn.config import LOADER_SETTINGS, RunOptions
from paradnn.measure import infeed
from paradnn.records import DEVICE_DATA, HOST_DATA

from conftest import TINY_POLICY


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv(infeed.CACHE_ENV, str(tmp_path / "cache"))


def _opts(**kw):
    return RunOptions(device="cpu", threads=1, timing=TINY_POLICY, **kw)


def _step(x, y=()):
    return types.SimpleNamespace(x=x, y=y)


class Clock:
    """perf_counter on a fake clock: each reading is `step` seconds after the last."""

    def __init__(self, step: float, start: float = 100.0):
        self.t, self.step, self.reads = start - step, step, 0

    def __call__(self) -> float:
        self.t += self.step
        self.reads += 1
        return self.t


def _fake_time(monkeypatch, clock):
    monkeypatch.setattr(infeed, "time", types.SimpleNamespace(perf_counter=clock))


# -- what a pipeline can run, and the plan ---------------------------------------------------


def test_only_a_pipeline_needs_a_batch_field_and_pillow(monkeypatch):
    assert infeed.unsupported_reason(_opts(), {}) is None
    assert infeed.unsupported_reason(_opts(data_source="host"), {}) is None
    pipe = _opts(data_source="pipeline")
    assert infeed.unsupported_reason(pipe, {"batch": 4}) is None
    for cfg in ({}, {"batch": "4"}, {"batch": 4.0}):
        assert infeed.unsupported_reason(pipe, cfg) == (
            "the pipeline data source needs a model with a `batch` field"
        )
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert infeed.unsupported_reason(pipe, {"batch": 4}) == (
        "the pipeline data source needs Pillow (pip install pillow) to encode JPEGs"
    )


def test_leaves_are_the_tensors_of_a_nested_batch_in_order():
    a, b, c = torch.zeros(1), torch.ones(2), torch.zeros(3)
    got = infeed.leaves((a, [b, (c, "label", None)], 7))
    assert len(got) == 3 and got[0] is a and got[1] is b and got[2] is c
    assert infeed.leaves(a) == [a] and infeed.leaves("x") == [] and infeed.leaves(()) == []


def test_the_plan_of_each_kind_of_tensor():
    tensors = [
        torch.zeros(4, 3, 8, 6),  # image
        torch.zeros(4, 1, 5, 5, dtype=torch.float16),  # one-channel image
        torch.zeros(4, 2, 5, 5),  # two channels: not a picture
        torch.zeros(3, 4, 5, 5),  # batch axis not first: features
        torch.zeros(7, 4, dtype=torch.int32),  # tokens along axis 1
        torch.zeros(4, 5, 4),  # the first axis of size batch is the batch axis
        torch.tensor(2.0),  # constant
        torch.zeros(2, 3, dtype=torch.int64),  # constant too: no axis of size 4
    ]
    assert infeed.plan(tensors, 4) == [
        infeed.Leaf("image", 0, (3, 8, 6), "float32"),
        infeed.Leaf("image", 0, (1, 5, 5), "float16"),
        infeed.Leaf("features", 0, (2, 5, 5), "float32"),
        infeed.Leaf("features", 1, (3, 5, 5), "float32"),
        infeed.Leaf("tokens", 1, (7,), "int32"),
        infeed.Leaf("features", 0, (5, 4), "float32"),
        infeed.Leaf("constant", None, (), "float32"),
        infeed.Leaf("constant", None, (2, 3), "int64"),
    ]
    assert infeed.plan([torch.zeros(4, 3, 8, 8, dtype=torch.int64)], 4)[0].kind == "tokens"


def test_the_cache_root(monkeypatch, tmp_path):
    monkeypatch.setenv(infeed.CACHE_ENV, str(tmp_path / "given"))
    assert infeed.cache_root() == tmp_path / "given"
    monkeypatch.setenv(infeed.CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert infeed.cache_root() == tmp_path / "xdg" / "paradnn" / "infeed"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert infeed.cache_root() == tmp_path / "home" / ".cache" / "paradnn" / "infeed"


# -- the files --------------------------------------------------------------------------------


def test_rows_cycle_the_tensor_s_own_examples_along_its_batch_axis():
    t = torch.tensor([[1, 2, 3], [4, 5, 6]])  # batch of 3 along axis 1
    rows = infeed._rows(t, infeed.Leaf("tokens", 1, (2,), "int64"), 5)
    assert rows.dtype == np.int32
    assert rows.tolist() == [[1, 4], [2, 5], [3, 6], [1, 4], [2, 5]]
    big = torch.tensor([2**31 - 1, -(2**31)])
    assert infeed._rows(big, infeed.Leaf("tokens", 0, (), "int64"), 2).dtype == np.int32
    for v in (2**31, -(2**31) - 1):
        out = infeed._rows(torch.tensor([v, 0]), infeed.Leaf("tokens", 0, (), "int64"), 3)
        assert out.dtype == np.int64 and out.tolist() == [v, 0, v]
    empty = infeed._rows(
        torch.zeros(2, 0, dtype=torch.int64), infeed.Leaf("tokens", 0, (0,), "int64"), 3
    )
    assert empty.dtype == np.int32 and empty.shape == (3, 0)
    feats = infeed._rows(
        torch.tensor([[0.25], [0.5]], dtype=torch.float64), infeed.Leaf("features", 0, (1,), "f"), 3
    )
    assert feats.dtype == np.float32 and feats.tolist() == [[0.25], [0.5], [0.25]]


def _rng_picture(seed, channels, h, w):
    return np.asarray(infeed._image(np.random.default_rng(seed), channels, h, w), dtype=int)


def test_a_picture_is_a_coarse_grid_of_quarter_size_upscaled_with_grain():
    rgb = infeed._image(np.random.default_rng(0), 3, 6, 10)
    gray = infeed._image(np.random.default_rng(0), 1, 6, 10)
    assert (rgb.mode, rgb.size, gray.mode, gray.size) == ("RGB", (10, 6), "L", (10, 6))
    # a 4×4 picture comes from one coarse cell: flat up to its grain (±8)
    for seed in range(5):
        flat = _rng_picture(seed, 1, 4, 4)
        assert flat.max() - flat.min() <= 16
    # 8 wide: two coarse columns, so some row varies beyond the grain; 8 high: two rows
    for seed in range(5):
        wide, tall = _rng_picture(seed, 1, 4, 8), _rng_picture(seed, 1, 8, 4)
        assert (wide.max(axis=1) - wide.min(axis=1)).max() > 16
        assert (tall.max(axis=0) - tall.min(axis=0)).max() > 16
        # 4 high, 4 wide: one coarse row and column, so columns and rows stay flat
        assert (wide.max(axis=0) - wide.min(axis=0)).max() <= 16
        assert (tall.max(axis=1) - tall.min(axis=1)).max() <= 16


class Rng:
    """A generator that says what was drawn and gives constant arrays: `fill[k]` for draw k."""

    def __init__(self, *fill):
        self.fill, self.calls = fill, []

    def integers(self, low, high, size, dtype):
        self.calls.append((low, high, size, np.dtype(dtype)))
        return np.full(size, self.fill[len(self.calls) - 1], dtype=dtype)


def test_a_picture_draws_a_quarter_size_byte_grid_and_grain_of_eight_either_way():
    rng = Rng(100, 5)
    img = infeed._image(rng, 3, 8, 12)
    assert rng.calls == [
        (0, 256, (2, 3, 3), np.dtype(np.uint8)),
        (-8, 9, (8, 12, 3), np.dtype(np.int16)),
    ]
    assert (img.mode, img.size) == ("RGB", (12, 8))
    assert np.asarray(img).tolist() == np.full((8, 12, 3), 105).tolist()
    rng = Rng(7, -8)
    img = infeed._image(rng, 1, 3, 5)  # smaller than the grid's cell: one cell
    assert rng.calls == [
        (0, 256, (1, 1, 1), np.dtype(np.uint8)),
        (-8, 9, (3, 5), np.dtype(np.int16)),
    ]
    assert img.mode == "L" and np.asarray(img).tolist() == np.zeros((3, 5)).tolist()
    bright = infeed._image(Rng(255, 8), 1, 4, 4)  # clipped at white, never wrapped to black
    assert np.asarray(bright).tolist() == np.full((4, 4), 255).tolist()
    dark = infeed._image(Rng(0, -1), 3, 4, 4)
    assert np.asarray(dark).tolist() == np.zeros((4, 4, 3)).tolist()


def test_the_dataset_s_meta_states_each_leaf_s_file(tmp_path):
    tensors = [
        torch.rand(4, 3, 8, 8),
        torch.rand(4, 1, 4, 4),
        torch.tensor([0, 1, 2, 3]),
        torch.rand(4, 2),
        torch.tensor(1.0),
    ]
    specs = infeed.plan(tensors, 4)
    path, meta, hit = infeed.write_dataset(tensors, specs, 4, 3, tmp_path / "c")
    assert not hit and path.parent == tmp_path / "c" and len(path.name) == 20
    assert meta == {
        "format": infeed.FORMAT,
        "examples": 32,
        "bytes": sum(
            p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "meta.json"
        ),
        "leaves": [
            {"kind": "image", "format": "JPEG q90, RGB 8x8"},
            {"kind": "image", "format": "JPEG q90, L 4x4"},
            {"kind": "tokens", "format": "raw rows", "file_dtype": "int32", "row": []},
            {"kind": "features", "format": "raw rows", "file_dtype": "float32", "row": [2]},
            {"kind": "constant"},
        ],
    }
    assert json.loads((path / "meta.json").read_text()) == meta
    assert sorted(p.name for p in (path / "0").iterdir())[-1] == "00031.jpg"
    assert np.fromfile(path / "2.bin", dtype=np.int32).tolist() == [0, 1, 2, 3] * 8
    again = infeed.write_dataset(tensors, specs, 4, 3, tmp_path / "c")
    assert again == (path, meta, True)
    other = infeed.write_dataset(tensors, specs, 4, 4, tmp_path / "c")  # another seed
    assert other[0] != path and other[2] is False


@pytest.mark.parametrize("batch, examples", [(31, 32), (33, 33), (256, 256), (257, 256)])
def test_the_dataset_holds_between_32_and_256_examples(tmp_path, batch, examples):
    t = torch.arange(batch)
    _, meta, _ = infeed.write_dataset([t], infeed.plan([t], batch), batch, 0, tmp_path)
    assert meta["examples"] == examples


def _png(path, array):
    """A lossless picture under a .jpg name: decode reads the file's own format."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(array, dtype=np.uint8)).save(path, "PNG")
    return path


def test_decode_normalises_and_flips_left_right(tmp_path):
    gray = _png(tmp_path / "g.jpg", [[0, 51, 255], [102, 153, 204]])
    want = (torch.tensor([[[0, 51, 255], [102, 153, 204]]]) / 255.0 - 0.5) / 0.25
    got = infeed.decode(gray, False)
    assert got.shape == (1, 2, 3) and got.dtype == torch.float32
    assert torch.allclose(got, want)
    assert torch.allclose(infeed.decode(gray, True), want.flip(-1))
    rgb = _png(tmp_path / "c.jpg", [[[255, 0, 51], [0, 255, 102]]])  # 1×2, three channels
    out = infeed.decode(rgb, False)
    assert out.shape == (3, 1, 2)
    assert torch.allclose(out[:, 0, 0], (torch.tensor([255, 0, 51]) / 255.0 - 0.5) / 0.25)
    assert torch.allclose(infeed.decode(rgb, True)[:, 0, 0], out[:, 0, 1])


def test_a_file_dataset_reads_example_i_mod_n_and_flips_about_half(tmp_path):
    _png(tmp_path / "0" / "00000.jpg", [[0, 255]])
    _png(tmp_path / "0" / "00001.jpg", [[255, 0]])
    np.array([[1, 2], [3, 4]], dtype=np.int32).tofile(tmp_path / "1.bin")
    meta = {
        "examples": 2,
        "leaves": [{"kind": "image"}, {"kind": "tokens", "file_dtype": "int32", "row": [2]}],
    }
    specs = [
        infeed.Leaf("image", 0, (1, 1, 2), "float32"),
        infeed.Leaf("tokens", 0, (2,), "int64"),
        infeed.Leaf("constant", None, (), "float32"),
    ]
    ds = infeed.FileDataset(tmp_path, meta, specs, 16, seed=5)
    assert len(ds) == 16
    plain = [infeed.decode(tmp_path / "0" / f"{j:05d}.jpg", False) for j in (0, 1)]
    flips = []
    for i in range(16):
        img, tok = ds[i]
        assert tok.tolist() == ([1, 2] if i % 2 == 0 else [3, 4])
        assert tok.dtype == torch.int32
        same, mirrored = img.equal(plain[i % 2]), img.equal(plain[i % 2].flip(-1))
        assert same != mirrored
        flips.append(mirrored)
        assert ds[i][0].equal(img)  # seeded by (seed, i): the same every time
    assert 0 < sum(flips) < 16


def test_collate_casts_to_the_step_s_dtype_on_the_batch_axis():
    specs = [
        infeed.Leaf("tokens", 1, (3,), "int64"),
        infeed.Leaf("constant", None, (), "float32"),
        infeed.Leaf("features", 0, (2,), "float16"),
    ]
    items = [[torch.tensor([i, i, i], dtype=torch.int32), torch.tensor([0.5, i])] for i in (1, 2)]
    tok, feat = infeed.Collate(specs)(items)
    assert tok.dtype == torch.int64 and tok.tolist() == [[1, 2], [1, 2], [1, 2]]
    assert feat.dtype == torch.float16 and feat.tolist() == [[0.5, 1.0], [0.5, 2.0]]


# -- the children's CPU time ------------------------------------------------------------------


def _stat(pid, comm, ppid, utime, stime):
    rest = ["S", str(ppid), *(["0"] * 9), str(utime), str(stime), "0", "0", "20", "0"]
    return f"{pid} ({comm}) " + " ".join(rest) + "\n"


def _proc(monkeypatch, files, ticks=100):
    monkeypatch.setattr(infeed.os, "listdir", lambda p: ["self", *files])
    monkeypatch.setattr(infeed.os, "sysconf", lambda name: ticks)

    def fake_open(path, *a, **k):
        pid = path.split("/")[2]
        text = files[pid]
        if text is None:
            raise FileNotFoundError(path)
        import io

        return io.StringIO(text)

    monkeypatch.setattr(infeed, "open", fake_open, raising=False)


def test_children_are_found_by_their_parent_even_with_a_paren_in_their_name(monkeypatch):
    me = infeed.os.getpid()
    _proc(
        monkeypatch,
        {
            "77": _stat(77, "pt_data) worker", me, 150, 50),
            "78": _stat(78, "other", me + 1, 999, 999),
            "79": None,  # exited while we looked
            "80": _stat(80, "w", me, 25, 25),
        },
    )
    monkeypatch.setitem(sys.modules, "psutil", None)
    assert infeed._live_children_cpu() == (2.5, "/proc/<pid>/stat")


def test_a_malformed_proc_falls_back_to_psutil_s_whole_tree(monkeypatch):
    _proc(monkeypatch, {"77": "77 (x) S\n"})
    asked = []

    class Proc:
        def children(self, recursive):
            asked.append(recursive)
            kid = types.SimpleNamespace(
                cpu_times=lambda: types.SimpleNamespace(user=1.25, system=0.5)
            )
            return [kid, kid]

    monkeypatch.setitem(sys.modules, "psutil", types.SimpleNamespace(Process=Proc))
    assert infeed._live_children_cpu() == (3.5, "psutil")
    assert asked == [True]


# -- the feeds --------------------------------------------------------------------------------


def _host_feed(examples=4):
    return infeed.HostFeed(_step(torch.zeros(4, 2), torch.zeros(4)), torch.device("cpu"), examples)


def test_open_feed_picks_the_source_and_keeps_the_examples(tmp_path):
    step = _step(torch.zeros(4, 2), torch.zeros(4))
    cpu = torch.device("cpu")
    feed = infeed.open_feed(step, _opts(), cpu, {"batch": 4}, 6)
    assert type(feed) is infeed.Feed and feed.examples == 6 and feed.source == "device"
    host = infeed.open_feed(step, _opts(data_source="host"), cpu, {"batch": 4}, 6)
    assert type(host) is infeed.HostFeed and host.examples == 6 and host.source == "host"
    pipe = infeed.open_feed(
        step, _opts(data_source="pipeline", loader_workers=0), cpu, {"batch": "4"}, 6
    )
    try:
        assert type(pipe) is infeed.PipelineFeed and pipe.examples == 6
        assert pipe.loader.batch_size == 4
    finally:
        pipe.close()


def test_the_window_counts_what_the_fed_steps_spent(monkeypatch):
    clock = Clock(0.5)
    _fake_time(monkeypatch, clock)
    cpu = iter([10.0, 12.5])
    monkeypatch.setattr(infeed, "run_cpu_seconds", lambda: next(cpu))
    feed = _host_feed()
    feed.wait_s, feed.copy_s, feed.calls = 1.0, 2.0, 3  # before the window: not counted
    feed.begin()  # t = 100
    fed = feed.wrap(lambda: "stepped")
    assert fed() == "stepped" and fed() == "stepped"  # each: fetch 0.5 s, copy 0.5 s, step
    feed.end()  # t = 103.5
    assert feed.window == {"wall_s": 3.5, "steps": 2, "wait_s": 1.0, "copy_s": 1.0, "cpu_s": 2.5}
    assert (feed.wait_s, feed.copy_s, feed.calls) == (2.0, 3.0, 5)
    cpu = iter([None, 1.0])
    feed.begin()
    feed.end()
    assert feed.window["cpu_s"] is None
    cpu = iter([1.0, None])
    feed.begin()
    feed.end()
    assert feed.window["cpu_s"] is None
    plain = infeed.Feed(_step(torch.zeros(1)), torch.device("cpu"), 1)
    step = object()
    assert plain.wrap(step) is step and plain.queued() == 0 and plain.close() is None


def test_device_data_s_part_has_its_host_cpu_and_nothing_to_wait_for(monkeypatch):
    monkeypatch.setattr(infeed, "allowed_cores", lambda: 4)
    monkeypatch.setattr(infeed, "_live_children_cpu", lambda: (0.0, "how"))
    feed = infeed.Feed(_step(torch.zeros(4, 2)), torch.device("cpu"), 4)
    window = {"wall_s": 2.0, "steps": 3, "wait_s": 0.0, "copy_s": 0.0, "cpu_s": 3.0}
    feed.window = window
    part = feed.part(lambda: None, lambda: None)
    assert part == infeed.Infeed(
        "device",
        data_wait_s=0.0,
        data_copy_s=0.0,
        infeed_share=0.0,
        input_bound=False,
        host_cpu_cores=1.5,
        host_cpu_share=0.375,
        infeed={
            "window": window,
            "cpu_method": "how",
            "cores_allowed": 4,
            "input_bound": "device data: nothing to wait for, by construction",
        },
        nulls={
            "loader_examples_per_s": DEVICE_DATA,
            "model_only_examples_per_s": DEVICE_DATA,
            **dict.fromkeys(LOADER_SETTINGS, DEVICE_DATA),
        },
    )


def test_host_data_s_part_compares_the_drained_feed_with_the_model_alone(monkeypatch):
    monkeypatch.setattr(infeed, "allowed_cores", lambda: 2)
    monkeypatch.setattr(infeed, "_live_children_cpu", lambda: (0.0, "how"))
    solo = {}

    def model_only(model, sync, examples):
        solo["examples"] = examples
        return solo["rate"], 3

    monkeypatch.setattr(infeed, "model_only", model_only)
    feed = _host_feed(examples=None)
    monkeypatch.setattr(feed, "drain", lambda sync: (100.0, 7))
    window = {"wall_s": 2.0, "steps": 4, "wait_s": 1.0, "copy_s": 0.5, "cpu_s": 1.0}
    feed.window = window
    solo["rate"] = 200.0
    part = feed.part(lambda: None, lambda: None)
    assert solo["examples"] == 0  # no examples per step known: 0, never None
    assert part == infeed.Infeed(
        "host",
        data_wait_s=0.25,
        data_copy_s=0.125,
        infeed_share=0.75,
        loader_examples_per_s=100.0,
        model_only_examples_per_s=200.0,
        input_bound=True,
        host_cpu_cores=0.5,
        host_cpu_share=0.25,
        infeed={
            "window": window,
            "cpu_method": "how",
            "cores_allowed": 2,
            "drained_batches": 7,
            "model_only_steps": 3,
            "pinned": False,
            "bytes_per_step": 4 * 2 * 4 + 4 * 4,
        },
        nulls=dict.fromkeys(LOADER_SETTINGS, HOST_DATA),
    )
    solo["rate"] = 100.0  # as fast as the feed: not input-bound
    assert feed.part(lambda: None, lambda: None).input_bound is False
    feed.window = {**window, "steps": 0, "wait_s": 3.0}  # more fed than the wall: clipped
    part = feed.part(lambda: None, lambda: None)
    assert (part.data_wait_s, part.data_copy_s, part.infeed_share) == (None, None, 1.0)


def test_the_model_alone_runs_until_enough_steps_and_time_or_its_cap(monkeypatch):
    syncs = []
    _fake_time(monkeypatch, Clock(0.0625))  # 4 steps reach MODEL_MIN_S exactly
    steps = []
    rate, n = infeed.model_only(lambda: steps.append(1), lambda: syncs.append(1), 10)
    assert (rate, n, len(steps), len(syncs)) == (40 / 0.3125, 4, 4, 2)
    _fake_time(monkeypatch, Clock(0.125))  # time enough after 2: still MODEL_MIN_STEPS
    assert infeed.model_only(lambda: None, lambda: None, 8) == (3 * 8 / 0.5, 3)
    _fake_time(monkeypatch, Clock(1.5))  # slow steps: the cap, reached exactly, stops it
    assert infeed.model_only(lambda: None, lambda: None, 6) == (2 * 6 / 4.5, 2)


def test_the_feed_alone_drains_past_its_queue_until_enough_batches_and_time(monkeypatch):
    feed = _host_feed(examples=8)
    copied = []
    monkeypatch.setattr(feed, "copy", lambda batch: copied.append(batch))
    monkeypatch.setattr(feed, "queued", lambda: 2)
    _fake_time(monkeypatch, Clock(0.03125))  # 8 batches reach DRAIN_MIN_S exactly
    syncs = []
    rate, n = feed.drain(lambda: syncs.append(len(copied)))
    assert (rate, n) == (8 * 8 / 0.28125, 8) and len(copied) == 10 and syncs == [2, 10]
    copied.clear()
    _fake_time(monkeypatch, Clock(0.25))  # enough time at once: still DRAIN_MIN_BATCHES
    assert feed.drain(lambda: None) == (5 * 8 / 1.5, 5)
    _fake_time(monkeypatch, Clock(1.5))  # slow batches: the cap, reached exactly
    assert feed.drain(lambda: None) == (2 * 8 / 4.5, 2)
    monkeypatch.setattr(infeed, "DRAIN_MAX_BATCHES", 3)
    _fake_time(monkeypatch, Clock(0.001))
    assert feed.drain(lambda: None)[1] == 3
    none = _host_feed(examples=None)
    monkeypatch.setattr(none, "copy", lambda batch: None)
    assert none.drain(lambda: None) == (0.0, 3)


def test_a_host_feed_copies_every_tensor_and_sends_the_same_each_step():
    x, y = torch.rand(4, 2), torch.arange(4)
    feed = infeed.HostFeed(_step(x, y), torch.device("cpu"), 4)
    assert feed.targets[0] is x and feed.targets[1] is y and feed.pinned is False
    batch = feed.fetch()
    assert batch is feed.fetch() and batch[0].equal(x) and batch[0] is not x
    x.zero_()
    y.zero_()
    feed.copy(batch)
    assert x.equal(batch[0]) and y.tolist() == [0, 1, 2, 3]
    assert feed.settings() == {} and feed.describe() == {"pinned": False, "bytes_per_step": 64}


def test_a_pipeline_leaves_constants_in_place_and_says_how_it_was_made(monkeypatch):
    clock = Clock(0.123456789, start=10.0)
    _fake_time(monkeypatch, clock)
    images, scale, labels = torch.rand(4, 3, 8, 8), torch.tensor(2.0), torch.arange(4)
    opts = _opts(data_source="pipeline", loader_workers=0, seed=3)
    feed = infeed.PipelineFeed(_step((images, scale), labels), torch.device("cpu"), 4, 4, opts)
    try:
        assert [s.kind for s in feed.specs] == ["image", "constant", "tokens"]
        assert len(feed.targets) == 2 and feed.targets[0] is images
        assert feed.targets[1] is labels
        feed.copy(feed.fetch())  # the constant is neither fetched nor overwritten
        assert scale.item() == 2.0 and sorted(labels.tolist()) != [] and feed.queued() == 0
        assert feed.settings() == {
            "loader_workers": 0,
            "pin_memory": False,
            "prefetch_factor": None,
            "persistent_workers": False,
        }
        d = feed.describe()
        from PIL import __version__ as pil

        assert d == {
            "cache_dir": str(feed.path),
            "cache_hit": False,
            "write_s": 0.1235,
            "dataset": feed.meta,
            "decoder": f"PIL {pil}",
            "augment": "random horizontal flip, (x/255 - 0.5)/0.25",
            "epoch_batches": infeed.EPOCH_BATCHES,
            "epochs_started": 1,
            "worker_pids": [],
        }
        assert feed.loader.batch_size == 4 and feed.loader.drop_last is True
        assert len(feed.loader.dataset) == infeed.EPOCH_BATCHES * 4
    finally:
        feed.close()
    assert feed.it is None and feed.loader._iterator is None


def test_a_pipeline_with_a_worker_passes_its_loader_settings(monkeypatch):
    opts = _opts(data_source="pipeline", loader_workers=1, prefetch_factor=3)
    step = _step(torch.rand(4, 1, 4, 4), torch.arange(4))
    feed = infeed.PipelineFeed(step, torch.device("cpu"), 4, 4, opts)
    try:
        assert feed.settings() == {
            "loader_workers": 1,
            "pin_memory": False,  # pinned only for a CUDA device
            "prefetch_factor": 3,
            "persistent_workers": True,
        }
        assert feed.loader.prefetch_factor == 3 and feed.loader.persistent_workers is True
        assert isinstance(feed.loader.worker_init_fn, infeed.DieWithRun)
        assert feed.queued() == 3
    finally:
        feed.close()
    assert feed.it is None and feed.loader._iterator is None  # a persistent loader's too
    off = _opts(data_source="pipeline", loader_workers=1, persistent_workers=False)
    feed = infeed.PipelineFeed(step, torch.device("cpu"), 4, 4, off)
    try:
        assert feed.settings()["persistent_workers"] is False
        assert feed.loader.persistent_workers is False and feed.queued() == 2
    finally:
        feed.close()


def test_an_entry_another_run_finished_first_is_taken_and_ours_removed(tmp_path, monkeypatch):
    import shutil

    tensors = [torch.rand(4, 1, 4, 4), torch.arange(4)]
    specs = infeed.plan(tensors, 4)
    theirs, meta, _ = infeed.write_dataset(tensors, specs, 4, 0, tmp_path / "a")
    (theirs / "marker").write_text("theirs")
    root = tmp_path / "b"
    real = infeed._image

    def race(rng, c, h, w):  # the other run renames its entry into place while we write
        if not (root / theirs.name).exists():
            shutil.copytree(theirs, root / theirs.name)
        return real(rng, c, h, w)

    monkeypatch.setattr(infeed, "_image", race)
    path, got, hit = infeed.write_dataset(tensors, specs, 4, 0, root)
    assert (path, got, hit) == (root / theirs.name, meta, False)
    assert sorted(p.name for p in root.iterdir()) == [theirs.name]  # ours is gone
    assert (path / "marker").read_text() == "theirs"


def test_a_pipeline_s_loader_shuffles_by_its_seed_and_collates_to_the_step_s_dtypes():
    def feed():
        step = _step(torch.rand(4, 1, 4, 4, dtype=torch.float64), torch.arange(4))
        opts = _opts(data_source="pipeline", loader_workers=0, seed=11)
        return infeed.PipelineFeed(step, torch.device("cpu"), 4, 4, opts)

    a, b = feed(), feed()
    try:
        assert isinstance(a.loader.sampler, torch.utils.data.RandomSampler)
        assert isinstance(a.loader.collate_fn, infeed.Collate) and a.loader.num_workers == 0
        assert a.loader.pin_memory is False
        xa, ya = a.fetch()
        xb, yb = b.fetch()
        assert xa.equal(xb) and ya.equal(yb)  # the same seed: the same order
        assert (xa.dtype, ya.dtype) == (torch.float64, torch.int64)
    finally:
        a.close()
        b.close()


def test_a_new_feed_has_spent_nothing_and_the_cores_are_this_process_s(monkeypatch):
    feed = _host_feed(examples=3)
    assert (feed.wait_s, feed.copy_s, feed.calls, feed.window, feed.workers) == (0.0, 0.0, 0, {}, 0)
    assert feed.examples == 3 and feed.device == torch.device("cpu") and len(feed.buffers) == 2
    monkeypatch.setattr(infeed.os, "sched_getaffinity", lambda pid: {0, 1, 2} if pid == 0 else {0})
    assert infeed.allowed_cores() == 3


def test_the_pictures_are_quality_90_jpegs_made_from_the_seed_and_tokens_name_the_entry(tmp_path):
    from PIL import Image

    tensors = [torch.rand(4, 3, 8, 8), torch.arange(4)]
    specs = infeed.plan(tensors, 4)
    a, _, _ = infeed.write_dataset(tensors, specs, 4, 5, tmp_path / "a")
    b, _, _ = infeed.write_dataset(tensors, specs, 4, 5, tmp_path / "b")
    assert a.name == b.name
    assert (a / "0" / "00007.jpg").read_bytes() == (b / "0" / "00007.jpg").read_bytes()
    ref = tmp_path / "ref.jpg"
    Image.new("RGB", (8, 8)).save(ref, "JPEG", quality=infeed.JPEG_QUALITY)
    with Image.open(a / "0" / "00000.jpg") as img, Image.open(ref) as want:
        assert img.format == "JPEG" and img.mode == "RGB" and img.size == (8, 8)
        assert img.quantization == want.quantization
    other = [tensors[0], torch.arange(4) + 1]  # other token ids: another entry
    c, _, _ = infeed.write_dataset(other, specs, 4, 5, tmp_path / "a")
    assert c.name != a.name
