"""Checks that need a real GPU (skipped elsewhere). Run them on a CUDA machine with
`pytest -m gpu`; benchmarks/results/ records what they measured there."""

import statistics

import pytest
import torch

from paradnn import families
from paradnn.measure.device import CudaEventClock
from paradnn.measure.doctor import _wall_per_step
from paradnn.measure.flops import count_train_flops
from paradnn.measure.step import TrainStep
from paradnn.measure.timer import TimingPolicy, measure

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("name", "cfg"),
    [
        ("fc", {"layers": 8, "nodes": 4096, "input": 2000, "output": 1000, "batch": 1024}),
        ("cnn", {"blocks": 2, "filters": 32, "image": 224, "batch": 64}),
    ],
)
def test_event_timing_agrees_with_synchronised_wall_clock(name, cfg):
    """CUDA events against sync + perf_counter around blocks of ~0.2 s of steps.

    Syncing around every step is not the reference: on the first H100 run (2026-11-26) it read
    2 % (FC) and 10 % (CNN) above the events, the bubble of each sync and relaunch, which a
    training loop that never syncs does not pay."""
    dev = torch.device("cuda", 0)
    fam = families.get(name)
    with torch.device(dev):
        step = TrainStep(fam.build(fam.config(cfg), dev), "rmsprop", "fp32", dev)
    policy = TimingPolicy(min_time_s=0.3, max_time_s=1.0)
    events, wall = [], []
    for _ in range(3):  # alternate so drift hits both
        events.append(measure(step, CudaEventClock(dev), policy).summary.median)
        k = max(1, round(0.2 / events[-1]))
        wall.append(_wall_per_step(step, dev, k, blocks=3))
    # medians, not minima: the GPU's clock moves both ways (2026-11-27, right after the energy
    # runs at ~680 W, the CNN's events read 11.7, 10.5, 11.3 ms and the wall clock 11.4, 11.6,
    # 13.9 ms: one low event block failed a comparison of minima by 8 %; the medians agree to 2.5 %)
    ev, wl = statistics.median(events), statistics.median(wall)
    assert abs(ev - wl) / wl <= 0.03, {"events": events, "wall": wall}


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_cudnn_rnn_count_equals_meta_count(cell):
    fam = families.get("rnn")
    cfg = fam.config(layers=3, embed=64, length=10, vocab=32, batch=8, cell=cell)
    cuda = count_train_flops(fam, cfg, torch.device("cuda", 0))
    assert any("cudnn" in op for op in cuda.by_op), cuda.by_op  # the fused path really ran
    assert cuda.total == count_train_flops(fam, cfg, "meta").total
