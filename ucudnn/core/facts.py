"""Facts about the machine a measurement or plan came from (pure data, no device access)."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from ucudnn.core.checks import integer

if TYPE_CHECKING:  # the core imports no planner module when it runs
    from ucudnn.planner import plan_formats


def cuda_version_string(version: int) -> str:
    """13050 -> '13.5' (CUDA encodes versions as 1000 * major + 10 * minor)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def cudnn_version_string(version: int) -> str:
    """92800 -> '9.28.0' (cuDNN 9 encodes versions as 10000 * major + 100 * minor + patch)."""
    return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What a benchmark row or a plan is only valid for."""

    device_name: str
    compute_capability: str  # "9.0"
    cudnn_version: int  # cudnnGetVersion(), e.g. 92800
    cuda_version: int  # cudaRuntimeGetVersion(), e.g. 13000

    def __post_init__(self) -> None:
        # Read back from plans and caches too, so a wrong type is an error, not a wrong key.
        if not isinstance(self.device_name, str) or not self.device_name.isprintable():
            raise ValueError(f"device_name must be printable text, got {self.device_name!r}")
        if not isinstance(self.compute_capability, str) or not re.fullmatch(
            r"[0-9]+\.[0-9]+", self.compute_capability
        ):
            raise ValueError(
                f"compute_capability must be 'major.minor', got {self.compute_capability!r}"
            )
        for name in ("cudnn_version", "cuda_version"):
            object.__setattr__(self, name, integer(getattr(self, name), name, minimum=0))

    def describe(self) -> str:
        """Where a measurement was made, as plans name it: "NVIDIA H100 (cuDNN 9.19.0)"."""
        return f"{self.device_name} (cuDNN {cudnn_version_string(self.cudnn_version)})"

    def to_dict(self) -> plan_formats.DeviceFacts:
        return {
            "device_name": self.device_name,
            "compute_capability": self.compute_capability,
            "cudnn_version": self.cudnn_version,
            "cuda_version": self.cuda_version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> DeviceFacts:
        names = {f.name for f in dataclasses.fields(cls)}
        if missing := sorted(names - set(data)):
            raise ValueError(f"device facts lack {', '.join(missing)}")
        if unknown := sorted(map(str, set(data) - names)):
            raise ValueError(f"device facts have unknown field(s) {', '.join(unknown)}")
        return cls(**data)  # type: ignore[arg-type]
