"""How much does the paradnn harness add on top of a minimal hand-written training loop?

paradnn's step times are only worth reporting if they are what a user's own loop would see: the
harness (TrainStep's indirections, the adaptive timer's blocks and marks) must not inflate them.
This script times every config of the `quick` preset twice in one process — once through
`paradnn.runner.execute.execute`, once with a deliberately plain loop — alternating the two (and
which goes first) so drift hits both equally, and checks that the ratio paradnn/hand stays
within the target on every config (issue 43: ≤ 1.02×, host-bound configs included), not only in
the median.

On CPUs, denormal floats are flushed to zero by default (`--denormals keep` to opt out): some quick
configs (the small FCs under RMSProp, lr 0.1) pass through phases of training, tens to hundreds
of steps long, where denormal arithmetic makes each step 6–80× slower; which steps a timer happens
to sample would then decide the ratio, and that is not harness overhead.

    python benchmarks/harness_overhead.py [--device auto] [--precision fp32 bf16] [--rounds 3]
        [--preset quick|FILE.toml] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from paradnn import families, presets
from paradnn.analysis import findings
from paradnn.config import RunOptions, RunSpec
from paradnn.measure.device import resolve
from paradnn.measure.timer import TimingPolicy
from paradnn.runner.execute import execute

TARGET = 1.02
OUT = Path(__file__).resolve().parent / "results" / "harness_overhead.json"
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def hand_step_time(
    name: str,
    values: dict[str, Any],
    device: torch.device,
    precision: str,
    blocks: int = 15,
    block_s: float = 0.02,
    total_s: float = 0.0,
) -> float:
    """Median seconds per step of the plainest loop: zero_grad, forward, loss, backward, step,
    timed in blocks of about `block_s` seconds (a sync on each side on a GPU): `blocks` of
    them, more when they take less than `total_s` in all."""
    family = families.get(name)
    cfg = family.config(values)
    torch.manual_seed(0)
    tf32 = precision == "tf32"  # the same numerics the harness sets explicitly
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    with torch.device(device):
        built = family.build(cfg, device, precision)
    model, loss_fn = built.module.train(), built.loss
    x, y = built.make_batch()
    opt = torch.optim.RMSprop(model.parameters(), lr=0.1, alpha=0.9, momentum=0.9, eps=1.0)
    dtype = AUTOCAST.get(precision)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        if dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast(device.type, dtype=dtype):
                loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(20):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(5):
        step()
    _sync(device)
    est = max((time.perf_counter() - t0) / 5, 1e-9)
    k = max(1, math.ceil(block_s / est))
    blocks = max(blocks, math.ceil(total_s / (k * est)))
    per_step: list[float] = []
    for _ in range(blocks):
        _sync(device)
        t = time.perf_counter()
        for _ in range(k):
            step()
        _sync(device)
        per_step.append((time.perf_counter() - t) / k)
    return statistics.median(per_step)


def ratio_range(ours: list[float], hand: list[float]) -> tuple[float, float]:
    """The ratios the rounds allow: the fastest paradnn round over the slowest plain one, and the
    slowest over the fastest. A few rounds give no interval worth a confidence level; this range
    says what they cannot tell apart."""
    return min(ours) / max(hand), max(ours) / min(hand)


def verdict(low: float, high: float, target: float, rounds: int = 2) -> str:
    """The findings' three-way rule (`analysis.findings.judge`, ratio ≤ target): met when the
    whole range is within the target, not met when all of it is above, inconclusive when it
    straddles the target or rests on one round a side (a range of one value says nothing of
    the noise)."""
    if rounds < 2:
        return "inconclusive"
    got = findings.judge(low, high, target, "<=")
    return {findings.HOLDS: "met", findings.FAILS: "not met"}.get(got, "inconclusive")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--precision", nargs="+", default=["fp32"], choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--rounds", type=int, default=3, help="paradnn/hand alternations per config")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument(
        "--timing",
        choices=["quick", "default"],
        default="quick",
        help="paradnn timing policy: the quick preset's, or TimingPolicy()",
    )
    ap.add_argument("--denormals", choices=["flush", "keep"], default="flush", help="CPU only")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--preset",
        default="quick",
        help="The configs to time: a shipped preset or a sweep file (benchmarks/gpu_check.py "
        "passes one FC, one CNN and one RNN)",
    )
    args = ap.parse_args(argv)

    device = resolve(args.device)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(args.denormals == "flush")  # global: execute() inherits it too
    preset = presets.get(args.preset)
    policy = preset.timing if args.timing == "quick" else TimingPolicy()
    # The plain loop's blocks: on a CPU as long as paradnn's (its policy's min_block_s), so the
    # two medians differ only by what each loop does per step (on a busy CPU a median of short
    # blocks dodges preemption more often than one of long blocks, whichever loop ran them); on
    # a GPU 20 ms, so the sync each block needs costs under 1 % (paradnn's CUDA events need none).
    block_s = policy.min_block_s if device.type == "cpu" else 0.02
    total_s = 0.3  # at least this much timed, as paradnn's quick policy
    rows: list[dict[str, Any]] = []
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    planned = len(args.precision) * len(preset.configs)

    def result(complete: bool) -> dict[str, Any]:
        median_ratio = statistics.median(r["ratio"] for r in rows)
        max_ratio = max(r["ratio"] for r in rows)
        verdicts = [r["verdict"] for r in rows]
        return {
            "device": str(device),
            "device_name": device_name,
            "torch": torch.__version__,
            "threads": args.threads,
            "precision": args.precision,
            "rounds": args.rounds,
            "timing": args.timing,
            "hand_block_s": block_s,
            "hand_total_s": total_s,
            "denormals": args.denormals,
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "complete": complete,
            "configs_planned": planned,
            "configs": rows,
            "median_ratio": median_ratio,
            "max_ratio": max_ratio,
            "target": TARGET,
            # every config met, or one not met; else the rounds cannot tell (docs/gpu.md)
            "verdict": "not met"
            if "not met" in verdicts
            else ("met" if set(verdicts) == {"met"} else "inconclusive"),
        }

    def write(got: dict[str, Any]) -> None:
        # after every config: a run stopped at a cap (benchmarks/gpu_check.py) keeps what it did
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(got, indent=2) + "\n")
        tmp.replace(args.out)

    for precision in args.precision:
        opts = RunOptions(
            precision=precision, device=str(device), threads=args.threads, timing=policy
        )
        for name, values in preset.configs:
            ours: list[float] = []
            hand: list[float] = []

            def hand_side(name: str = name, values: Any = values, p: str = precision) -> float:
                torch.set_num_threads(args.threads)
                # execute() restores the flag it set around its run (off): set it again here
                torch.set_flush_denormal(args.denormals == "flush")
                return hand_step_time(name, dict(values), device, p, 15, block_s, total_s)

            # Untimed: the first run of a config in a process pays first-touch page faults and
            # allocator growth; without this, whichever side went first would carry them.
            torch.set_flush_denormal(args.denormals == "flush")
            hand_step_time(name, dict(values), device, precision, 1, block_s)
            for i in range(args.rounds):
                # each round in the other order: whichever side ran first (a warmer cache, a
                # clock that had not yet ramped) would otherwise always be the same one
                if i % 2:
                    hand.append(hand_side())
                rec = execute(RunSpec(name, dict(values), opts))
                if rec.status != "ok" or rec.step_time_s is None:
                    print(f"skip {precision} {name} {dict(values)}: {rec.status}: {rec.error}")
                    hand.clear()
                    break
                device_name = rec.device_name
                ours.append(rec.step_time_s)
                if i % 2 == 0:
                    hand.append(hand_side())
            if not hand:
                continue
            ratio = statistics.median(ours) / statistics.median(hand)
            low, high = ratio_range(ours, hand)
            rounds = min(len(ours), len(hand))
            rows.append(
                {
                    "family": name,
                    "config": dict(values),
                    "precision": precision,
                    "paradnn_s": ours,
                    "hand_s": hand,
                    "ratio": ratio,
                    "ratio_range": [low, high],
                    "verdict": verdict(low, high, TARGET, rounds),
                }
            )
            label = " ".join(f"{k}={v}" for k, v in values.items())
            print(
                f"{precision:5} {name:4} {label:58.58} paradnn {statistics.median(ours) * 1e3:8.3f}"
                f" ms  hand {statistics.median(hand) * 1e3:8.3f} ms  ratio {ratio:6.3f} "
                f"[{low:.3f}, {high:.3f}] {rows[-1]['verdict']}",
                flush=True,
            )
            write(result(complete=False))

    if not rows:
        raise SystemExit("no config could be measured")
    got = result(complete=True)
    write(got)
    print(
        f"ratio median {got['median_ratio']:.3f}, max {got['max_ratio']:.3f} "
        f"(target ≤ {TARGET} on every config: {got['verdict']}) → {args.out}"
    )
    return got


if __name__ == "__main__":
    main()
