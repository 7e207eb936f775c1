"""The WD problem as the solvers take it: kernels grouped by their options (one group per set
of schedules), each option's aligned workspace in units of the alignment and its time; and the
choices a settled group hands out to its kernels."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence

from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.kernel_table import KernelId
from ucudnn.planner.pareto import pareto_front
from ucudnn.planner.schedule import Schedule


def aligned(nbytes: int, alignment: int) -> int:
    """`nbytes` rounded up to a multiple of `alignment`."""
    return -(-nbytes // alignment) * alignment


@dataclasses.dataclass
class Group:
    """Kernels with the same options, smallest first; sizes in units of the alignment."""

    kernels: list[KernelId]
    options: list[Schedule]
    units: list[int]
    times: list[float]
    allowed: list[int]  # indices of the options an optimal solution may still use
    counts: dict[int, int] = dataclasses.field(default_factory=dict)  # option -> kernels

    def settle(self, counts: dict[int, int]) -> None:
        self.counts = {i: n for i, n in counts.items() if n}
        self.allowed = sorted(self.counts)


def _group(kernel: KernelId, schedules: Sequence[Schedule], alignment: int) -> Group:
    """The group of `kernel` alone: its front under aligned sizes, smallest first, each
    schedule's units and time read once (sets hold thousands of schedules)."""
    keyed = [
        ((aligned(s.workspace_bytes, alignment) // alignment, s.time_ms), s) for s in schedules
    ]
    front = pareto_front(keyed, key=_KEY)
    if not front:
        raise InfeasibleError(
            f"{kernel[0]}/{kernel[1]} has no schedules to choose from", kernel=kernel
        )
    options = [s for _, s in front]
    units = [unit for (unit, _), _ in front]
    times = [time for (_, time), _ in front]
    return Group([kernel], options, units, times, list(range(len(options))))


_KEY = operator.itemgetter(0)


def group_kernels(sets: Mapping[KernelId, Sequence[Schedule]], alignment: int) -> list[Group]:
    """Kernels grouped by their sets; a set shared as one object (as `make_plan_wd` shares
    those of identical tables) is one group, and its front is computed once."""
    groups: dict[int, Group] = {}
    for kernel, schedules in sets.items():
        if (group := groups.get(id(schedules))) is None:
            groups[id(schedules)] = _group(kernel, schedules, alignment)
        else:
            group.kernels.append(kernel)
    return list(groups.values())


def kernel_choices(
    sets: Mapping[KernelId, object], groups: list[Group]
) -> dict[KernelId, Schedule]:
    """Each group's counts handed out in kernel order, smaller options first."""
    chosen: dict[KernelId, Schedule] = {}
    for g in groups:
        picks = [g.options[i] for i in sorted(g.counts) for _ in range(g.counts[i])]
        chosen.update(zip(g.kernels, picks, strict=True))
    return {k: chosen[k] for k in sets}
