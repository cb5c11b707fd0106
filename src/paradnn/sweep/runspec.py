"""`RunSpec`: one run of a sweep (family, config, precision, optimizer, and the value of each
study axis it sets). Torch-free; the sweep expands into them, the presets resolve their `native`
precision, the runner runs them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunSpec:
    family: str
    config: Mapping[str, Any]
    precision: str
    optimizer: str = "rmsprop"
    # RunOptions fields set by the sweep's study axes (paradnn.config.AXES): {"mode": "compile"}
    options: Mapping[str, Any] = field(default_factory=dict)
