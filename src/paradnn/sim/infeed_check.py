"""The simulator's host/input term against measured host-fed runs (docs/infeed.md).

For each measured `host` or `pipeline` run, the term (`sim.model.input_step`) is fed the run's
own two solo measurements: the model alone on device data (its seconds per step) and the
infeed drained alone (its examples/s). It predicts the step (the slower of the two when loader
workers prefetch beside the step, their sum when the batch is made or copied in the training
process itself), whether the run is input-bound, and the infeed share of the step (the part of
the step not hidden under the model: (step − model) / step overlapped, infeed / step in
series). Each prediction is set against the run's timed step and measured share. Torch-free;
the caller passes plain rows (analysis.infeed.simulator_rows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from paradnn.sim.model import input_step


@dataclass
class InfeedCheck:
    rows: list[dict[str, Any]] = field(default_factory=list)
    step_error: float | None = None  # geometric mean of max(p/m, m/p), minus 1
    share_error: float | None = None  # median |predicted − measured| infeed share, in points
    agree: int = 0  # runs whose predicted input-bound matches the measured flag
    reason: str | None = None

    def summary(self) -> str:
        if self.reason:
            return f"simulator check: {self.reason}"
        share = "n/a" if self.share_error is None else f"{self.share_error * 100:.0f} points"
        return (
            f"simulator's input term over {len(self.rows)} host-fed runs: step error "
            f"{self.step_error:.0%} (geometric mean), infeed-share error {share} (median); "
            f"input-bound predicted as flagged in {self.agree}/{len(self.rows)} (the flag "
            "compares the same two solo rates)"
        )


def check(rows: Iterable[Mapping[str, Any]]) -> InfeedCheck:
    out = InfeedCheck()
    ratios, shares = [], []
    for r in rows:
        model, loader = r.get("model_only_examples_per_s"), r.get("loader_examples_per_s")
        step, eps = r.get("step_time_s"), r.get("examples_per_s")
        if not (model and loader and step and eps):
            continue
        examples = eps * step  # examples per step, as the run counted them
        serial = r.get("data_source") == "host" or not r.get("loader_workers")
        pred, infeed, bound = input_step(examples / model, round(examples), loader, not serial)
        model_s = examples / model
        share = infeed / pred if serial else max(0.0, pred - model_s) / pred
        row = {
            "family": r.get("family"),
            "config_key": r.get("config_key"),
            "data_source": r.get("data_source"),
            "loader_workers": r.get("loader_workers"),
            "kind": "prediction",
            "model_s": model_s,
            "infeed_s": infeed,
            "predicted_step_s": pred,
            "measured_step_s": step,
            "predicted_share": share,
            "measured_share": r.get("infeed_share"),
            "predicted_input_bound": bound,
            "measured_input_bound": r.get("input_bound"),
        }
        out.rows.append(row)
        ratios.append(max(pred / step, step / pred))
        if r.get("infeed_share") is not None:
            shares.append(abs(share - float(r["infeed_share"])))
        if r.get("input_bound") is not None and bool(r["input_bound"]) == bound:
            out.agree += 1
    if not out.rows:
        out.reason = "no host-fed run with both solo rates (model alone, infeed alone)"
        return out
    out.step_error = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) - 1
    shares.sort()
    out.share_error = shares[len(shares) // 2] if shares else None
    return out


__all__ = ["InfeedCheck", "check"]
