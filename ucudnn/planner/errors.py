"""Errors the planner raises when no plan can meet what was asked, or the solver fails."""

from __future__ import annotations

from ucudnn.errors import UcudnnError


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


class SolverError(UcudnnError):
    """The WD solver failed, or stopped at its time limit with no plan: a fault of the solve,
    not of the input."""
