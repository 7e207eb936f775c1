"""Facts about the machine a measurement or plan came from (pure data, no device access)."""

from __future__ import annotations

import dataclasses
import re

from ucudnn.core.checks import integer


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

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> DeviceFacts:
        names = {f.name for f in dataclasses.fields(cls)}
        if missing := sorted(names - set(data)):
            raise ValueError(f"device facts lack {', '.join(missing)}")
        if unknown := sorted(map(str, set(data) - names)):
            raise ValueError(f"device facts have unknown field(s) {', '.join(unknown)}")
        return cls(**data)  # type: ignore[arg-type]
