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
from paradnn.config import RunOptions
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
    combos = [spec.options for spec in s.specs()]
    # device data has no loader: it runs once, not once per loader setting
    assert combos == [
        {"data_source": "device"},
        {"data_source": "pipeline", "loader_workers": 0},
        {"data_source": "pipeline", "loader_workers": 1},
    ]
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
    rec = execute("cnn", CNN, _opts())
    assert rec.status == "ok", rec.error
    assert rec.data_source == "device"
    assert (rec.data_wait_s, rec.infeed_share, rec.input_bound) == (0.0, 0.0, False)
    assert rec.loader_examples_per_s is None and "no loader" in rec.nulls["loader_examples_per_s"]
    assert rec.host_cpu_cores is not None and rec.host_cpu_cores >= 0


def test_a_host_run_copies_each_step_and_measures_the_copy_alone():
    rec = execute("cnn", CNN, _opts(data_source="host"))
    assert rec.status == "ok", rec.error
    assert rec.data_source == "host" and rec.loader_workers is None
    assert rec.data_copy_s > 0 and rec.data_wait_s >= 0
    assert 0 < rec.infeed_share < 1
    assert rec.loader_examples_per_s > 0 and rec.model_only_examples_per_s > 0
    assert rec.input_bound == (rec.loader_examples_per_s < rec.model_only_examples_per_s)
    assert rec.infeed["pinned"] is False  # no CUDA: nothing to pin for


def test_a_pipeline_run_records_the_wait_the_loader_and_stops_its_workers(tmp_path):
    opts = _opts(data_source="pipeline", loader_workers=2, prefetch_factor=1)
    rec = execute("cnn", CNN, opts)
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
    rec = execute("rnn", rnn, _opts(data_source="pipeline", loader_workers=0))
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
