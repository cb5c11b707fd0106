"""Rooflines per model and per operation (the paper's Figure 3), with two roofs per platform.

The datasheet roof (peak FLOP/s and memory bandwidth of the matching platform entry) and the
measured roof (`paradnn calibrate`: best matmul FLOP/s and copy bandwidth on that device) are
drawn side by side and never mixed. A model's arithmetic intensity is counted from its shape
list as the simulator lowers it (`families.lowering`: operand traffic without reuse between ops), so
it is an analytic upper bound on intensity; per-operation points come from measured profiles
when `paradnn bench --profile` stored them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from paradnn.analysis.frames import Data, chosen_ok


@dataclass(frozen=True)
class Roof:
    kind: str  # 'datasheet' or 'measured'
    peak_flops: float | None
    bandwidth: float | None  # bytes/s
    source: str  # platform entry id, or 'paradnn calibrate'

    @property
    def ridge(self) -> float | None:
        """FLOP/byte where the slanted roof meets the flat one."""
        if self.peak_flops and self.bandwidth:
            return self.peak_flops / self.bandwidth
        return None

    def bound(self, intensity: float) -> float | None:
        if not (self.peak_flops and self.bandwidth):
            return None
        return min(self.peak_flops, self.bandwidth * intensity)


def roofs(data: Data, device_name: str, precision: str) -> list[Roof]:
    """The roofs known for a device at a precision; a missing one is simply absent."""
    out = []
    from paradnn import platforms

    plat = platforms.match(device_name or "")
    if plat is not None:
        peak = plat.peak(precision)
        if peak or plat.mem_bandwidth:
            out.append(Roof("datasheet", peak, plat.mem_bandwidth, plat.id))
    c = data.ceilings
    if len(c):
        mine = c[c["device_name"] == device_name]
        mm = mine[(mine["kind"] == "matmul") & (mine["precision"] == precision)]["value"]
        bw = mine[mine["kind"].isin(["copy", "triad"])]["value"]
        if len(mm) or len(bw):
            out.append(
                Roof(
                    "measured",
                    float(mm.max()) if len(mm) else None,
                    float(bw.max()) if len(bw) else None,
                    "paradnn calibrate",
                )
            )
    return out


def model_points(data: Data) -> pd.DataFrame:
    """One point per ok run: analytic intensity (FLOP/byte) and achieved FLOP/s."""
    from paradnn import families
    from paradnn.errors import ConfigError
    from paradnn.families.lowering import lower_all
    from paradnn.precisions import itemsize

    cols = [
        "family",
        "platform",
        "precision",
        "params",
        "intensity",
        "achieved_flops",
        "bytes_per_step",
        "config_key",
    ]
    runs = chosen_ok(data)
    if not len(runs):
        return pd.DataFrame(columns=cols)
    rows, cache = [], {}
    for _, r in runs.iterrows():
        if pd.isna(r.get("achieved_flops")) or not r.get("flops_per_step"):
            continue
        key = (r["family"], r["config_key"], r["precision"])
        if key not in cache:
            try:
                fam = families.get(r["family"])
                cfg = fam.config(r["config"] if isinstance(r["config"], dict) else {})
                size = itemsize(r["precision"])
                cache[key] = sum(op.elements() * size for op in lower_all(fam.shapes(cfg)))
            except (ConfigError, ImportError, AttributeError, TypeError, ValueError):
                cache[key] = None  # a family this installation does not know
        nbytes = cache[key]
        if not nbytes:
            continue
        rows.append(
            {
                "family": r["family"],
                "platform": r["platform"],
                "precision": r["precision"],
                "params": r.get("params"),
                "intensity": float(r["flops_per_step"]) / nbytes,
                "achieved_flops": float(r["achieved_flops"]),
                "bytes_per_step": nbytes,
                "config_key": r["config_key"],
            }
        )
    return pd.DataFrame(rows, columns=cols)


def op_points(data: Data) -> pd.DataFrame:
    """Measured per-op points from profiles, labelled with their run's platform and precision."""
    cols = ["op", "family", "platform", "precision", "intensity", "achieved_flops", "device_time_s"]
    prof = data.op_profile
    if not len(prof) or "intensity" not in prof:
        return pd.DataFrame(columns=cols)
    runs = data.runs.set_index("uid")[["family", "platform", "precision"]]
    joined = prof.join(runs, on="run_uid", how="inner")
    joined = joined[joined["intensity"].notna() & joined["achieved_flops"].notna()]
    return joined[cols].reset_index(drop=True)
