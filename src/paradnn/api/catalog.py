"""What the suite knows before measuring anything: the model families and their spaces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from paradnn import families
from paradnn.api.returns import FamilyInfo


def family_info() -> list[FamilyInfo]:
    """Every model family: its config fields with defaults, the paper's space and sizes."""
    out = []
    for name in families.names():
        fam = families.get(name)
        default = fam.default_config()
        out.append(
            FamilyInfo(
                name=name,
                title=fam.title,
                kind=fam.kind,
                fields={f.name: getattr(default, f.name) for f in fam.fields()},
                paper_space={k: list(v) for k, v in fam.paper_space.items()},
                space_label=fam.space_label,
                paper_configs=_space_size(fam.paper_space),
                default_params=fam.params(default),
                default_train_flops=fam.train_flops(default),
            )
        )
    return out


def _space_size(space: Mapping[str, Sequence[Any]]) -> int:
    n = 1
    for values in space.values():
        n *= len(values)
    return n
