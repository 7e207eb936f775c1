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


class NoAlgorithmError(InfeasibleError):
    """cuDNN runs none of its algorithms for a kernel at any micro-batch size tried, so no
    workspace limit or policy would help. `statuses` counts why at the full batch: cuDNN's
    status name (or ours, such as WORKSPACE_OVER_CAP) per algorithm and math type."""

    def __init__(
        self, message: str, kernel: tuple[str, str] | None, statuses: dict[str, int]
    ) -> None:
        super().__init__(message, kernel=kernel)
        self.statuses = statuses


class SolverError(UcudnnError):
    """The WD solver failed, or stopped at its time limit with no plan: a fault of the solve,
    not of the input."""
