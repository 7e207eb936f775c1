"""Errors the planner raises when no plan can meet what was asked."""

from __future__ import annotations


class InfeasibleError(ValueError):
    """No schedule fits: `kernel` is the (layer, kernel) at fault, if one is, and
    `required_bytes` the smallest limit or budget that would work, if any would."""

    def __init__(
        self,
        message: str,
        kernel: tuple[str, str] | None = None,
        required_bytes: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.required_bytes = required_bytes
