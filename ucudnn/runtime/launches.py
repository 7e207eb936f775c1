"""A Handle's planned kernels compiled for their calls, and its problems' descriptors.

A kernel's schedule is compiled once per plan (`executor.Launch`): its parts are checked
against this device's cuDNN, then every call only adds pointers and scalars.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from ucudnn._native import _cudnn
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import Axis
from ucudnn.errors import WorkspaceFallbackWarning, warn_caller
from ucudnn.planner.plan import KernelPlan, Plan
from ucudnn.runtime import backend, executor
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.families import family_of
from ucudnn.runtime.slots import Slot, Slots

logger = logging.getLogger(__name__)

# (layer name as the caller gave it, kernel, problem key)
CallKey = tuple[str | None, str, str]


class Ready(NamedTuple):
    """A planned kernel compiled for its calls (valid while the plan it came from is kept)."""

    launch: executor.Launch
    offset: int  # of its workspace in the handle's arena
    slot: Slot
    kernel_plan: KernelPlan


class Launches:
    """The kernels compiled from the current plan, by the key their calls come with (`ready`,
    emptied by `clear` when the plan changes), and the descriptors of every problem seen."""

    def __init__(self, cudnn: _cudnn.Handle, engine_runs: EngineRuns) -> None:
        self.cudnn = cudnn
        self.engine_runs = engine_runs  # what the parts built, kept across plans
        self.ready: dict[CallKey, Ready] = {}
        self._descriptors = backend.DescriptorCache()
        self._replaced_warned = False

    def descriptors(self, problem: ConvProblem, axis: Axis) -> backend.ProblemDescriptors:
        return self._descriptors.get(problem, axis)

    def compile(self, key: CallKey, slot: Slot, kernel_plan: KernelPlan) -> Ready:
        """`slot`'s schedule compiled for the calls that come with `key`."""
        launch = self._launch(slot, kernel_plan)
        self._warn_replaced(launch.check_workspaces(self.cudnn))
        ready = Ready(launch, kernel_plan.offset or 0, slot, kernel_plan)
        self.ready[key] = ready
        return ready

    def build_ahead(self, plan: Plan, slots: Slots) -> None:
        """Build now what the plan's parts would build at their first call (kernels whose
        families build nothing are not compiled for it)."""
        for kernel_plan in plan.kernels:
            parts = kernel_plan.schedule.parts
            if not any(family_of(part).builds_ahead for part in parts):
                continue
            launch = self._launch(slots.of(kernel_plan.kernel_id), kernel_plan)
            launch.build_plans(self.cudnn)

    def clear(self) -> None:
        self.ready.clear()

    def _launch(self, slot: Slot, kernel_plan: KernelPlan) -> executor.Launch:
        return executor.Launch(
            self.descriptors(slot.problem, kernel_plan.axis), slot.kernel,
            kernel_plan.schedule.parts, kernel_plan.workspace_bytes, self.engine_runs,
            self._descriptors,
        )  # fmt: skip

    def _warn_replaced(self, replaced: list[str]) -> None:
        """Say which parts of a plan could not run as planned (`Launch.check_workspaces`):
        each in the log, the first as a warning."""
        for what in replaced:
            logger.info("%s", what)
        if replaced and not self._replaced_warned:
            warn_caller(
                f"{replaced[0]}, with the same result (warned once per handle; the plan does "
                "not match this device's cuDNN: replan() plans from this Handle's own "
                "measurements)",
                WorkspaceFallbackWarning,
            )
            self._replaced_warned = True
