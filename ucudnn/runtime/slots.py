"""The kernels a Handle has seen, each under the name the planner knows its layer by."""

from __future__ import annotations

import dataclasses

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.graph import FreeNames
from ucudnn.planner.plan import Plan
from ucudnn.planner.tables import KernelId
from ucudnn.runtime.work import Work


@dataclasses.dataclass(frozen=True)
class Slot:
    """One kernel of one layer: its own schedule, even when its problem is shared."""

    name: str  # the layer name the planner knows it by
    problem: ConvProblem
    kernel: str

    @property
    def kernel_id(self) -> KernelId:
        return (self.name, self.kernel)

    @property
    def work(self) -> Work:
        return Work(self.name, self.problem, self.kernel)


class Slots:
    """Every (layer, problem, kernel) seen, in the order first seen.

    Every (layer, problem) pair gets its own name: a layer seen at two batch sizes (train and
    test nets) must not share a schedule. Unnamed layers are called conv0, conv1, ...
    """

    def __init__(self) -> None:
        self._names: dict[tuple[str, str], str] = {}  # (layer, problem key) -> planner name
        self._free = FreeNames()  # the names in self._names, and the next suffix to try
        self._slots: dict[KernelId, Slot] = {}

    def get(self, problem: ConvProblem, kernel: str, layer: str | None) -> Slot:
        """The slot of `kernel` of `layer` on `problem`, registered if new."""
        identity = (layer or "", problem.key())
        name = self._names.get(identity)
        if name is None:
            name = self._free.take(layer or f"conv{len(self._names)}")
            self._names[identity] = name
        return self._slots.setdefault((name, kernel), Slot(name, problem, kernel))

    def of(self, kernel_id: KernelId) -> Slot:
        return self._slots[kernel_id]

    def all(self) -> list[Slot]:
        return list(self._slots.values())

    def missing_from(self, plan: Plan | None) -> list[Slot]:
        """The slots `plan` has no schedule for (all of them without a plan)."""
        return [s for s in self._slots.values() if plan is None or s.kernel_id not in plan]

    def forget(self, slot: Slot) -> None:
        """Drop `slot`, and its layer's name once none of its kernels is left."""
        del self._slots[slot.kernel_id]
        if all(s.name != slot.name for s in self._slots.values()):
            self._names = {k: n for k, n in self._names.items() if n != slot.name}
            self._free.release(slot.name)
