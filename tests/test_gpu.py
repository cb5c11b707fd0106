"""Checks that need a real GPU (skipped elsewhere). Run them on a CUDA machine with
`pytest -m gpu`; benchmarks/results/ records what they measured there."""

import statistics
import time

import pytest
import torch

from paradnn import families
from paradnn.measure.device import CudaEventClock
from paradnn.measure.flops import count_train_flops
from paradnn.measure.step import TrainStep
from paradnn.measure.timer import TimingPolicy, measure

pytestmark = pytest.mark.gpu


class SyncedWallClock:
    """Sync around every block and read the host clock: the reference events must match."""

    def __init__(self, device):
        self.device = device

    def now(self):
        return time.perf_counter()

    def sync(self):
        torch.cuda.synchronize(self.device)

    def mark(self):
        torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def elapsed(self, pairs):
        return [b - a for a, b in pairs]


@pytest.mark.parametrize(
    ("name", "cfg"),
    [
        ("fc", {"layers": 8, "nodes": 4096, "input": 2000, "output": 1000, "batch": 1024}),
        ("cnn", {"blocks": 2, "filters": 32, "image": 224, "batch": 64}),
    ],
)
def test_event_timing_agrees_with_synchronised_wall_clock(name, cfg):
    dev = torch.device("cuda", 0)
    fam = families.get(name)
    with torch.device(dev):
        step = TrainStep(fam.build(fam.config(cfg), dev), "rmsprop", "fp32", dev)
    policy = TimingPolicy(min_time_s=1.0, max_time_s=5.0)
    medians = {"events": [], "wall": []}
    for _ in range(3):  # alternate to cancel drift
        medians["events"].append(measure(step, CudaEventClock(dev), policy).summary.median)
        medians["wall"].append(measure(step, SyncedWallClock(dev), policy).summary.median)
    ev, wall = statistics.median(medians["events"]), statistics.median(medians["wall"])
    assert abs(ev - wall) / wall <= 0.02, medians


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_cudnn_rnn_count_equals_meta_count(cell):
    fam = families.get("rnn")
    cfg = fam.config(layers=3, embed=64, length=10, vocab=32, batch=8, cell=cell)
    cuda = count_train_flops(fam, cfg, torch.device("cuda", 0))
    assert any("cudnn" in op for op in cuda.by_op), cuda.by_op  # the fused path really ran
    assert cuda.total == count_train_flops(fam, cfg, "meta").total
