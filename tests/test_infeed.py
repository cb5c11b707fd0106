"""Host data infeed (docs/infeed.md), measured for real on the CPU with tiny images: the option
and its key, the pipeline's files and loader, what a run records per source, and loader
workers that die with the run. The analysis of stored rows is tests/test_infeed_analysis.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from paradnn import sweep
from paradnn.config import RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.measure import infeed
from paradnn.runner.execute import execute
from paradnn.store import open_store

from conftest import TINY_POLICY

CNN = {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 4}


@pytest.fixture(autouse=True)
def _small(monkeypatch, tmp_path):
    monkeypatch.setenv(infeed.CACHE_ENV, str(tmp_path / "cache"))
    for name, value in (("DRAIN_MIN_S", 0.02), ("DRAIN_MAX_S", 0.5), ("MODEL_MIN_S", 0.02)):
        monkeypatch.setattr(infeed, name, value)


def _opts(**kw):
    return RunOptions(device="cpu", threads=1, timing=TINY_POLICY, **kw)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- the option ------------------------------------------------------------------------------


def test_the_data_source_enters_the_key_only_when_set_and_loader_settings_only_for_a_pipeline():
    assert "data_source" not in RunOptions().key_fields()  # earlier runs keep their keys
    assert RunOptions(data_source="host").key_fields()["data_source"] == "host"
    host = RunOptions(data_source="host", loader_workers=0).key_fields()
    assert "loader_workers" not in host  # no loader: its settings measure nothing
    pipe = RunOptions(data_source="pipeline", loader_workers=0, pin_memory=False).key_fields()
    assert pipe["loader_workers"] == 0 and pipe["pin_memory"] is False
    assert "prefetch_factor" not in pipe  # at its default


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"data_source": "disk"}, "data_source = 'disk': must be one of device, host, pipeline"),
        ({"loader_workers": -1}, "loader_workers = -1: must be an integer in [0, 256]"),
        ({"prefetch_factor": 0}, "prefetch_factor = 0: must be an integer in [1, 64]"),
        ({"pin_memory": "yes"}, "pin_memory = 'yes': must be true or false"),
        ({"data_source": "host", "procs": 2}, "data_source = 'host': must be device with procs"),
    ],
)
def test_bad_infeed_options_are_one_line(kw, message):
    with pytest.raises(ConfigError) as e:
        RunOptions(**kw)
    assert str(e.value).startswith(message)


def test_a_sweep_file_sweeps_the_data_source_and_the_loader_workers():
    text = 'data_sources = ["device", "pipeline"]\nloader_workers = [0, 1]\n'
    text += '[[runs]]\nfamily = "cnn"\nconfig = { blocks = 1, filters = 4, image = 16 }\n'
    s = sweep.parse(text, label="s.toml", source="s.toml", name="s")
    combos = [(spec.options.data_source, spec.options.loader_workers) for spec in s.specs()]
    # device data has no loader: it runs once (its loader settings at their defaults), not
    # once per loader setting
    assert combos == [("device", 2), ("pipeline", 0), ("pipeline", 1)]
    with pytest.raises(ConfigError, match="data_source = 'host': must be device with procs"):
        s.specs(axes={"data_source": ["host"], "procs": [2]})


def test_the_cli_refuses_a_bad_data_source_before_any_work(tmp_path):
    db = tmp_path / "r.db"
    env = {**os.environ, "PYTHONPATH": "src"}
    cmd = [sys.executable, "-m", "paradnn", "bench", "cnn", "--data", "disk", "--db", str(db)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert "--data = 'disk': must be one of device, host, pipeline" in p.stderr
    assert not db.exists()


# -- the pipeline's files and loader ---------------------------------------------------------


def test_the_plan_stores_images_as_jpeg_integers_as_tokens_and_keeps_constants():
    image = torch.rand(4, 3, 16, 16)
    labels = torch.randint(0, 3, (4,))
    seq = torch.randint(0, 9, (6, 4))  # time-major tokens: the batch is the second axis
    scalar = torch.tensor(2.0)
    kinds = [(p.kind, p.dim, p.shape) for p in infeed.plan([image, labels, seq, scalar], 4)]
    assert kinds == [
        ("image", 0, (3, 16, 16)),
        ("tokens", 0, ()),
        ("tokens", 1, (6,)),
        ("constant", None, ()),
    ]


def test_the_dataset_is_written_once_then_read_back_as_batches_of_the_steps_shapes(tmp_path):
    tensors = [torch.rand(4, 3, 16, 16, dtype=torch.bfloat16), torch.randint(0, 3, (4,))]
    specs = infeed.plan(tensors, 4)
    path, meta, hit = infeed.write_dataset(tensors, specs, 4, 0, tmp_path)
    assert not hit and meta["examples"] == infeed.MIN_FILES
    assert len(list((path / "0").glob("*.jpg"))) == infeed.MIN_FILES
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    again, _, hit = infeed.write_dataset(tensors, specs, 4, 0, tmp_path)
    assert hit and again == path
    ds = infeed.FileDataset(path, meta, specs, 64, seed=0)
    x, y = infeed.Collate(specs)([ds[i] for i in range(4)])
    assert x.shape == (4, 3, 16, 16) and x.dtype == torch.bfloat16
    assert y.shape == (4,) and y.dtype == torch.int64
    assert y.tolist() == tensors[1].tolist()  # the step's own labels, cycled
    assert float(x.min()) >= -2.0 - 1e-3 and float(x.max()) <= 2.0 + 1e-3  # (x/255-.5)/.25


# -- what a run records ----------------------------------------------------------------------


def test_a_device_run_records_no_wait_and_no_loader():
    rec = execute(RunSpec("cnn", CNN, _opts()))
    assert rec.status == "ok", rec.error
    assert rec.data_source == "device"
    assert (rec.data_wait_s, rec.infeed_share, rec.input_bound) == (0.0, 0.0, False)
    assert rec.loader_examples_per_s is None and "no loader" in rec.nulls["loader_examples_per_s"]
    assert rec.host_cpu_cores is not None and rec.host_cpu_cores >= 0


def test_a_host_run_copies_each_step_and_measures_the_copy_alone():
    rec = execute(RunSpec("cnn", CNN, _opts(data_source="host")))
    assert rec.status == "ok", rec.error
    assert rec.data_source == "host" and rec.loader_workers is None
    assert rec.data_copy_s > 0 and rec.data_wait_s >= 0
    assert 0 < rec.infeed_share < 1
    assert rec.loader_examples_per_s > 0 and rec.model_only_examples_per_s > 0
    assert rec.input_bound == (rec.loader_examples_per_s < rec.model_only_examples_per_s)
    assert rec.infeed["pinned"] is False  # no CUDA: nothing to pin for


def test_a_pipeline_run_records_the_wait_the_loader_and_stops_its_workers(tmp_path):
    opts = _opts(data_source="pipeline", loader_workers=2, prefetch_factor=1)
    rec = execute(RunSpec("cnn", CNN, opts))
    assert rec.status == "ok", rec.error
    assert (rec.loader_workers, rec.prefetch_factor, rec.persistent_workers) == (2, 1, True)
    assert rec.pin_memory is False  # page-locking needs a CUDA device: recorded as not used
    assert rec.data_wait_s >= 0 and 0 <= rec.infeed_share <= 1
    assert rec.loader_examples_per_s > 0 and rec.model_only_examples_per_s > 0
    assert rec.host_cpu_cores >= 0 and rec.host_cpu_share == pytest.approx(
        rec.host_cpu_cores / len(os.sched_getaffinity(0))
    )
    detail = rec.infeed
    assert detail["dataset"]["leaves"][0]["format"] == "JPEG q90, RGB 16x16"
    assert detail["window"]["steps"] > 0
    pids = detail["worker_pids"]
    assert len(pids) == 2
    time.sleep(0.2)
    assert not [p for p in pids if _alive(p)]  # the run is over: so are its workers
    # stored and read back (the migration's columns, booleans as booleans)
    with open_store(str(tmp_path / "r.db")) as s:
        s.insert(rec)
        row = s.runs()[0]
    assert row["data_source"] == "pipeline" and row["persistent_workers"] is True
    assert row["input_bound"] in (True, False) and row["infeed"]["cache_hit"] is False


def test_a_pipeline_with_workers_in_the_run_process_works_without_prefetch():
    rnn = {"layers": 1, "embed": 8, "length": 5, "vocab": 7, "batch": 3, "cell": "lstm"}
    rec = execute(RunSpec("rnn", rnn, _opts(data_source="pipeline", loader_workers=0)))
    assert rec.status == "ok", rec.error
    assert rec.loader_workers == 0 and rec.prefetch_factor is None
    assert rec.persistent_workers is False
    assert [leaf["kind"] for leaf in rec.infeed["dataset"]["leaves"]] == ["tokens", "tokens"]


KILLED = """
import json, sys, time, torch
from paradnn.config import RunOptions
from paradnn.families import get
from paradnn.measure.infeed import open_feed
from paradnn.measure.step import TrainStep
fam = get("cnn"); cfg = fam.config({cfg})
step = TrainStep(fam.build(cfg, torch.device("cpu")), "sgd", "fp32", torch.device("cpu"))
opts = RunOptions(device="cpu", data_source="pipeline", loader_workers=2)
feed = open_feed(step, opts, torch.device("cpu"), dict(cfg.__dict__), 4)
feed.fetch()
print(json.dumps(feed.worker_pids()), flush=True)
time.sleep(600)
"""


def test_loader_workers_die_with_a_killed_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": "src", infeed.CACHE_ENV: str(tmp_path / "c")}
    code = KILLED.format(cfg=repr(CNN))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pids = json.loads(p.stdout.readline())
        assert len(pids) == 2 and all(_alive(q) for q in pids)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    deadline = time.monotonic() + 10
    while any(_alive(q) for q in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [q for q in pids if _alive(q)]


# -- edges a sampled `make mutation` found untested (issue 30 item 5) -------------------------


def _step(*tensors):
    from types import SimpleNamespace

    return SimpleNamespace(x=tensors[0], y=tensors[1] if len(tensors) > 1 else ())


def test_a_pipeline_needs_a_batch_field_and_says_so():
    opts = _opts(data_source="pipeline")
    assert infeed.unsupported_reason(opts, {"layers": 2}) == (
        "the pipeline data source needs a model with a `batch` field"
    )
    assert infeed.unsupported_reason(opts, {"batch": 4}) is None
    assert infeed.unsupported_reason(_opts(), {"layers": 2}) is None  # device data: no files


def test_the_cache_defaults_to_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv(infeed.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert infeed.cache_root() == tmp_path / "paradnn" / "infeed"
    monkeypatch.setenv(infeed.CACHE_ENV, str(tmp_path / "mine"))
    assert infeed.cache_root() == tmp_path / "mine"


def test_token_files_keep_every_id_exactly_past_the_int32_range():
    leaf = infeed.Leaf("tokens", 0, (), "int64")
    fits = infeed._rows(torch.tensor([0, 2**31 - 1]), leaf, 2)
    assert fits.dtype.name == "int32" and fits.tolist() == [0, 2**31 - 1]
    wide = infeed._rows(torch.tensor([0, 2**31]), leaf, 3)
    assert wide.dtype.name == "int64" and wide.tolist() == [0, 2**31, 0]
    low = infeed._rows(torch.tensor([-(2**31), 5]), leaf, 2)
    assert low.dtype.name == "int32" and low.tolist() == [-(2**31), 5]


def test_a_dark_picture_with_negative_grain_stays_dark():
    class Dark:  # the coarse grid all black, the grain all −8
        def integers(self, low, high, size, dtype):
            import numpy as np

            return np.full(size, 0 if low == 0 else -8, dtype=dtype)

    import numpy as np

    for channels in (3, 1):
        img = np.asarray(infeed._image(Dark(), channels, 8, 8))
        assert img.max() == 0, channels  # clipped at 0, not wrapped round to 248


def test_the_dataset_states_its_size_on_disk_and_leaves_nothing_when_writing_fails(
    tmp_path, monkeypatch
):
    tensors = [torch.rand(4, 3, 8, 8), torch.randint(0, 3, (4,))]
    specs = infeed.plan(tensors, 4)
    path, meta, _ = infeed.write_dataset(tensors, specs, 4, 0, tmp_path / "a")
    on_disk = sum(
        p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "meta.json"
    )
    assert meta["bytes"] == on_disk > 0
    # a writer stopped half-way: the error goes up, the half-written directory goes away, and
    # while it was being written it was hidden (a dot name, never a 20-hex-digit entry name)
    seen = []
    real = infeed._image

    def fail_late(rng, c, h, w):
        seen.extend(p.name for p in (tmp_path / "b").iterdir())
        if len(seen) > 3:
            raise OSError(28, "No space left on device")
        return real(rng, c, h, w)

    monkeypatch.setattr(infeed, "_image", fail_late)
    with pytest.raises(OSError, match="No space left"):
        infeed.write_dataset(tensors, specs, 4, 1, tmp_path / "b")
    assert seen and all(n.startswith(".tmp-") for n in seen)
    assert list((tmp_path / "b").iterdir()) == []
    with pytest.raises(ValueError):  # a leaf without a plan (or a plan without a leaf): refused
        infeed.write_dataset(tensors, specs[:1], 4, 0, tmp_path / "c")


def test_collate_stacks_the_batch_tensors_and_leaves_constants_on_the_device():
    tensors = [torch.rand(4, 3, 8, 8), torch.tensor(2.0), torch.randint(0, 3, (4,))]
    specs = infeed.plan(tensors, 4)
    assert [s.kind for s in specs] == ["image", "constant", "tokens"]
    items = [[torch.rand(3, 8, 8), torch.tensor(i)] for i in range(4)]  # what the files give
    x, y = infeed.Collate(specs)(items)
    assert x.shape == (4, 3, 8, 8) and y.tolist() == [0, 1, 2, 3]


def test_a_window_that_never_ended_gives_reasons_not_zeros():
    feed = infeed.Feed(_step(torch.zeros(4, 2), torch.zeros(4)), torch.device("cpu"), 4)
    part = feed.part(lambda: None, lambda: None)
    assert part.data_wait_s is None and part.infeed_share is None
    assert part.nulls == dict.fromkeys(
        ("data_wait_s", "infeed_share"), "the timed window did not end"
    )


def test_device_data_gives_its_reason_for_every_loader_setting():
    feed = infeed.Feed(_step(torch.zeros(4, 2), torch.zeros(4)), torch.device("cpu"), 4)
    feed.begin()
    feed.end()
    part = feed.part(lambda: None, lambda: None)
    from paradnn.config import LOADER_SETTINGS
    from paradnn.records import DEVICE_DATA

    assert all(part.nulls[k] == DEVICE_DATA for k in LOADER_SETTINGS)
    assert part.infeed["input_bound"] == "device data: nothing to wait for, by construction"
    assert part.infeed["cpu_method"] == "/proc/<pid>/stat"


def test_the_model_only_rate_counts_the_steps_it_ran(monkeypatch):
    monkeypatch.setattr(infeed, "MODEL_MIN_S", 0.0)
    calls = []
    rate, n = infeed.model_only(lambda: calls.append(1), lambda: None, 10)
    assert n == len(calls) == infeed.MODEL_MIN_STEPS and rate > 0


def test_the_childrens_cpu_time_counts_live_children_only(tmp_path):
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.process_time()\n"
         "while time.process_time() - t < 0.4: pass\ntime.sleep(60)"]
    )  # fmt: skip
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the busy child has spent its 0.4 s
            with open(f"/proc/{busy.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if (int(fields[11]) + int(fields[12])) / ticks >= 0.4:
                break
            time.sleep(0.05)
        total, how = infeed._live_children_cpu()
        assert how == "/proc/<pid>/stat"
        assert 0.35 <= total < 1.0  # the busy child's 0.4 s, the idle one's ~0
    finally:
        for p in (idle, busy):
            p.kill()
            p.wait()


class _OnDevice(torch.Tensor):
    """A stand-in for a tensor on an accelerator: only `.to("cpu", ...)` brings it to the host
    (as a plain tensor); any other `.to` leaves it where it is."""

    def to(self, *args, **kw):
        if "cpu" in args or str(kw.get("device")) == "cpu":
            return self.as_subclass(torch.Tensor).clone()
        return self


def test_host_data_is_kept_on_the_host_and_pinned_for_a_gpu(monkeypatch):
    pinned = []

    def pin(t):
        pinned.append(t)
        return t

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    x, y = torch.rand(4, 2), torch.arange(4)
    on = [t.as_subclass(_OnDevice) for t in (x, y)]
    feed = infeed.HostFeed(_step(*on), torch.device("cuda"), 4)
    assert feed.pinned and feed.describe()["pinned"] is True
    assert [type(t) for t in feed.host] == [torch.Tensor, torch.Tensor] and len(pinned) == 2
    assert feed.host[0].equal(x) and feed.host[1].equal(y)
    assert feed.describe()["bytes_per_step"] == 4 * 2 * 4 + 4 * 8


def _pipeline(workers: int):
    step = _step(torch.rand(4, 3, 8, 8), torch.randint(0, 3, (4,)))
    opts = _opts(data_source="pipeline", loader_workers=workers, prefetch_factor=1)
    return infeed.PipelineFeed(step, torch.device("cpu"), 4, 4, opts)


def test_the_pipeline_counts_the_epochs_it_started():
    feed = _pipeline(0)
    try:
        for _ in range(infeed.EPOCH_BATCHES):
            feed.fetch()
        assert feed.describe()["epochs_started"] == 1
        x, _ = feed.fetch()  # past the epoch's batches: a second epoch starts
        assert feed.describe()["epochs_started"] == 2 and x.shape == (4, 3, 8, 8)
    finally:
        feed.close()


def test_closing_a_pipeline_stops_its_workers_even_while_its_iterator_is_still_held():
    feed = _pipeline(1)
    held = feed.it  # e.g. a traceback's frame still refers to it
    feed.fetch()
    pids = feed.worker_pids()
    assert len(pids) == 1 and _alive(pids[0])
    feed.close()
    deadline = time.monotonic() + 5
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids[0]) and held is not None


def test_a_cache_entry_keeps_its_name_across_versions_of_one_format(tmp_path):
    # FORMAT is bumped when the files change; until then an entry written by an earlier paradnn
    # must be found again by name (the digest of the format, size, seed, plan and token rows)
    tensors = [torch.zeros(4, 1, 8, 8), torch.arange(4)]
    path, _, hit = infeed.write_dataset(tensors, infeed.plan(tensors, 4), 4, 0, tmp_path)
    assert infeed.FORMAT == 1 and not hit
    assert path.name == "fec6d36f473e7b68276f"


# -- survivors of the seed-9 measure sample -----------------------------------------------------


def test_feature_files_keep_their_fractions():
    leaf = infeed.Leaf("features", 0, (), "float32")
    rows = infeed._rows(torch.tensor([0.5, 1.25]), leaf, 3)
    assert rows.dtype.name == "float32" and rows.tolist() == [0.5, 1.25, 0.5]


def test_the_run_cpu_time_adds_every_part(monkeypatch):
    import posix

    monkeypatch.setattr(infeed.os, "times", lambda: posix.times_result((1.0, 2.0, 3.0, 4.0, 9.0)))
    monkeypatch.setattr(infeed, "_live_children_cpu", lambda: (0.5, "test"))
    assert infeed.run_cpu_seconds() == pytest.approx(10.5)
    monkeypatch.setattr(infeed, "_live_children_cpu", lambda: (None, "unreadable"))
    assert infeed.run_cpu_seconds() is None


def test_a_pipeline_without_pillow_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # `import PIL` raises ImportError
    assert infeed.unsupported_reason(_opts(data_source="pipeline"), {"batch": 4}) == (
        "the pipeline data source needs Pillow (pip install pillow) to encode JPEGs"
    )


def test_a_loader_worker_asks_to_die_with_the_run_and_exits_if_it_already_has(monkeypatch):
    # in a child: the request (PR_SET_PDEATHSIG = SIGKILL) is made, as PR_GET_PDEATHSIG reads back
    import ctypes

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        code = 3
        try:
            d = infeed.DieWithRun()
            d.parent = os.getppid()
            d(0)
            sig = ctypes.c_int()
            ctypes.CDLL("libc.so.6").prctl(2, ctypes.byref(sig))  # PR_GET_PDEATHSIG
            code = 0 if sig.value == signal.SIGKILL else 4
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    # a worker whose run is already gone (its parent is not the run) exits at once, status 0
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        try:
            d = infeed.DieWithRun()
            d.parent = -1
            d(0)
        finally:
            os._exit(5)  # reached only if it did not exit
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    # a libc without prctl (not Linux): the worker starts anyway
    monkeypatch.setattr(infeed.ctypes, "CDLL", lambda *a, **k: object())
    d = infeed.DieWithRun()
    d.parent = os.getppid()
    assert d(0) is None


def _host_feed():
    feed = infeed.HostFeed(_step(torch.zeros(4, 2), torch.zeros(4)), torch.device("cpu"), 4)
    return feed


def test_the_infeed_share_is_the_fed_time_over_the_window():
    feed = _host_feed()
    feed.window = {"wall_s": 2.0, "steps": 4, "wait_s": 0.5, "copy_s": 0.3, "cpu_s": 1.0}
    part = feed.part(lambda: None, lambda: None)
    assert part.infeed_share == pytest.approx(0.4) and part.data_wait_s == pytest.approx(0.125)
    assert part.data_copy_s == pytest.approx(0.075)
    assert part.host_cpu_cores == pytest.approx(0.5)
    # unreadable CPU time: both host figures null, with the reason
    feed.window = {**feed.window, "cpu_s": None}
    part = feed.part(lambda: None, lambda: None)
    why = "the loader workers' CPU time is unreadable (no /proc, no psutil)"
    assert part.host_cpu_cores is None and part.host_cpu_share is None
    assert part.nulls["host_cpu_cores"] == why and part.nulls["host_cpu_share"] == why


def test_a_pipeline_starts_its_workers_from_a_daemon_process(monkeypatch):
    # the run's worker is a daemon process, and daemons may not have children: the pipeline
    # lifts the flag so its loader workers can start
    import multiprocessing

    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    feed = _pipeline(1)
    try:
        x, _ = feed.fetch()
        assert x.shape == (4, 3, 8, 8) and len(feed.worker_pids()) == 1
        assert feed.describe()["augment"] == "random horizontal flip, (x/255 - 0.5)/0.25"
    finally:
        feed.close()


def test_without_proc_or_psutil_the_childrens_cpu_time_is_null_with_its_reason(monkeypatch):
    def no_proc(path):
        raise OSError("no /proc here")

    monkeypatch.setattr(infeed.os, "listdir", no_proc)
    monkeypatch.setitem(sys.modules, "psutil", None)
    assert infeed._live_children_cpu() == (
        None, "children's CPU time unreadable: no /proc and no psutil"
    )  # fmt: skip
    assert infeed.run_cpu_seconds() is None
