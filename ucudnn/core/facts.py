"""Facts about the machine a measurement or plan came from (pure data, no device access)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What a benchmark row or a plan is only valid for."""

    device_name: str
    compute_capability: str  # "9.0"
    cudnn_version: int  # cudnnGetVersion(), e.g. 92800
    cuda_version: int  # cudaRuntimeGetVersion(), e.g. 13000

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> DeviceFacts:
        return cls(**data)  # type: ignore[arg-type]
