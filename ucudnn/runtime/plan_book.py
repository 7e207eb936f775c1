"""A Handle's plan and how it changes: the kernels seen, planning them, and keeping a plan.

WR plans each new kernel alone when first seen and keeps the schedules made before; WD plans
the whole network again. Keeping a plan means allocating its workspace, and planning again
within less when the device cannot give it. Running the plan is the Handle's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from ucudnn.core.arena import GrowingArena
from ucudnn.core.checks import shown
from ucudnn.errors import CudaOutOfMemoryError, ReplanWarning, WorkspaceFallbackWarning, warn_caller
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.plan import KernelPlan, Plan
from ucudnn.planner.policies import UNDIVIDED, Policy
from ucudnn.runtime.benchmark import Benchmarker, EngineParts
from ucudnn.runtime.engines_setting import EnginesSetting
from ucudnn.runtime.planning import plan_kernels
from ucudnn.runtime.slots import Slot, Slots

logger = logging.getLogger(__name__)


class PlanBook:
    """The kernels a Handle has seen (`slots`) and the plan it runs (`plan`) within `limit`;
    `on_new_plan` is called whenever the plan changes."""

    def __init__(
        self,
        benchmarker: Benchmarker,
        workspace: GrowingArena,
        *,
        mode: str,
        limit: int,
        policy: Policy,
        slab_policy: Policy = UNDIVIDED,
        deterministic: bool,
        on_new_plan: Callable[[], None],
    ) -> None:
        self.benchmarker = benchmarker
        self.workspace = workspace
        self.mode, self.limit, self.policy = mode, limit, policy
        self.slab_policy = slab_policy
        self.deterministic = deterministic
        self.plan: Plan | None = None
        self.slots = Slots()
        self._on_new_plan = on_new_plan
        # Engine parts that failed at run time, left out whenever planning again.
        self._excluded: EngineParts = frozenset()
        self._fallback_warned = False

    def kernel_plan(self, slot: Slot) -> KernelPlan:
        """`slot`'s schedule, planning the kernels the plan lacks first."""
        if self.plan is None or slot.kernel_id not in self.plan:
            if self.mode == "wd" and self.plan is not None:
                warn_caller(
                    f"kernel {slot.kernel} of {slot.name} appeared after the network was "
                    "planned; planning the whole network again",
                    ReplanWarning,
                )
            self.plan_missing()
        assert self.plan is not None
        return self.plan[slot.kernel_id]

    def plan_to_run(self, slot: Slot) -> KernelPlan:
        """`slot`'s schedule with its workspace allocated: planned if new, and the plan adopted
        again if its workspace was released since (within less, if memory is short now)."""
        kernel_plan = self.kernel_plan(slot)
        if self.workspace.arena is None:
            assert self.plan is not None
            self.adopt(self.plan)
            kernel_plan = self.plan[slot.kernel_id]
        return kernel_plan

    def plan_missing(self, everything: bool = False) -> Plan:
        """Plan the kernels the plan lacks (all of them when `everything`), and keep the plan.

        A new kernel that cannot be planned is forgotten, so that it cannot fail every later
        plan, and the others are planned without it; the error names it. When no plan can be
        made the previous one stays.
        """
        failures: list[InfeasibleError] = []
        forgotten: list[Slot] = []
        while True:
            new = self.slots.missing_from(self.plan)
            if self.plan is not None and not new and not everything:
                break
            alone = self.mode == "wr" and self.plan is not None and not everything
            try:
                plan = self._planned(new if alone else self.slots.all(), self.limit)
            except InfeasibleError as exc:
                # The kernel at fault if it is new; else no plan has room for the new ones.
                failed = [s for s in new if s.kernel_id == exc.kernel] or new
                if not failed:
                    raise
                for slot in failed:
                    self.slots.forget(slot)
                failures.append(exc)
                forgotten += failed
                continue
            if alone and self.plan is not None:
                plan = dataclasses.replace(plan, kernels=self.plan.kernels + plan.kernels)
            self.adopt(plan)
            everything = False
        if failures:
            raise _forgotten(failures, forgotten)
        assert self.plan is not None
        return self.plan

    def replan(self, limit: int) -> Plan:
        """Plan every kernel again within `limit`; when nothing was planned at it, the old
        plan and limit stay."""
        before, old_limit = self.plan, self.limit
        self.limit = limit
        try:
            return self.plan_missing(everything=True)
        except BaseException:
            if self.plan is before:
                self.limit = old_limit
            raise

    def replan_without(self, slot: Slot, failed: EngineParts) -> None:
        """Engine parts of `slot`'s kernel failed and ran a legacy algorithm instead (see
        `engine_calls`): plan again without the `failed` parts, the kernel alone in WR, the
        network in WD, so that later calls run the best of what works, as predicted. When
        nothing else fits, the plan stays, and the fallback runs those parts."""
        assert self.plan is not None
        self._excluded = failed
        try:
            if self.mode == "wd":
                plan = self._planned(self.slots.all(), self.limit)
            else:
                (kernel_plan,) = self._planned([slot], self.limit).kernels
                kernels = tuple(
                    kernel_plan if k.kernel_id == slot.kernel_id else k for k in self.plan.kernels
                )
                plan = dataclasses.replace(self.plan, kernels=kernels)
        except InfeasibleError as exc:
            logger.info("kept the plan of %s after an engine failed: %s", slot.name, exc)
            return
        self.adopt(plan)

    def use(self, plan: Plan, engines: EnginesSetting) -> None:
        """Keep a plan made elsewhere, once it is checked against what the Handle has seen
        and allows (see `Handle.use_plan`)."""
        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be a Plan, got {shown(plan)}")
        if plan.mode != self.mode:
            raise ValueError(f"this handle is in {self.mode.upper()} mode; the plan is {plan.mode}")
        if plan.workspace_bytes > self.limit:
            what = "budget" if self.mode == "wd" else "limit"
            raise ValueError(
                f"the plan needs {plan.workspace_bytes} bytes of workspace, over the {what} "
                f"{self.limit}"
            )
        seen = {slot.kernel_id: slot for slot in self.slots.all()}
        for kernel_plan in plan.kernels:
            slot = seen.get(kernel_plan.kernel_id)
            if slot is None:
                names = ", ".join(sorted({name for name, _ in seen})) or "none"
                raise ValueError(
                    f"the plan's {kernel_plan.place} is not one this handle has seen; register "
                    f"it first (layers seen: {names})"
                )
            extent = kernel_plan.axis.extent(slot.problem)
            if kernel_plan.batch != extent:
                raise ValueError(
                    f"the plan's {kernel_plan.place} has batch {kernel_plan.batch}, its problem "
                    f"{extent}"
                )
            if self.deterministic and not kernel_plan.schedule.deterministic:
                raise ValueError(
                    f"the plan's {kernel_plan.place} runs an algorithm that is not deterministic"
                )
            if not engines.enabled:
                _check_runs_no_engines(kernel_plan, engines)
        self.adopt(plan)

    def adopt(self, plan: Plan) -> None:
        """Allocate `plan`'s workspace and keep the plan; when the device cannot give it, plan
        the same kernels again within half the limit, and so on down to none."""
        limit = self.limit
        while True:
            try:
                self.workspace.ensure(plan.workspace_bytes)
            except CudaOutOfMemoryError as exc:
                if limit == 0:
                    raise
                limit = limit // 2 if limit > 1024 else 0
                self._warn_fallback(plan.workspace_bytes, limit)
                try:
                    plan = self._planned([self.slots.of(k.kernel_id) for k in plan.kernels], limit)
                except InfeasibleError as infeasible:
                    exc.add_note(f"and no plan fits within less: {infeasible}")
                    raise exc from None
                continue
            self.plan = plan
            self._on_new_plan()
            return

    def _planned(self, slots: Sequence[Slot], limit: int) -> Plan:
        return plan_kernels(
            self.benchmarker, [slot.work for slot in slots], mode=self.mode, limit=limit,
            policy=self.policy, slab_policy=self.slab_policy, deterministic=self.deterministic,
            excluded=self._excluded,
        )  # fmt: skip

    def _warn_fallback(self, wanted: int, limit: int) -> None:
        logger.info("could not allocate %d bytes of workspace; planning within %d", wanted, limit)
        if not self._fallback_warned:
            warn_caller(
                f"could not allocate {wanted} bytes of workspace; falling back to plans that "
                f"need at most {limit} bytes (warned once per handle)",
                WorkspaceFallbackWarning,
            )
            self._fallback_warned = True


def _forgotten(failures: list[InfeasibleError], forgotten: list[Slot]) -> InfeasibleError:
    """The first failure, noting the others and the kernels the Handle forgot for them."""
    first = failures[0]
    for exc in failures[1:]:
        first.add_note(f"also: {exc}")
    names = ", ".join(f"{slot.name}/{slot.kernel}" for slot in forgotten)
    first.add_note(
        f"the Handle forgot {names} and goes on with its other kernels; a later call of a "
        "forgotten kernel plans it anew"
    )
    return first


def _check_runs_no_engines(kernel_plan: KernelPlan, engines: EnginesSetting) -> None:
    """Refuse a schedule with parts run by engine configurations, for a Handle whose engines
    are off: off means that none runs, whoever made the plan."""
    tags = [part.engine for part in kernel_plan.schedule.parts if part.engine]
    if not tags:
        return
    remedy = "" if engines.reason else ", or make the Handle with engines=True"
    raise ValueError(
        f"the plan's {kernel_plan.place} runs the engine configuration {shown(tags[0])}, but "
        f"this Handle's engines are {engines.describe()}: give it a plan of legacy algorithms "
        f"only (made with engines off){remedy}"
    )
