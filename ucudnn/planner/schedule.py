"""A Schedule: the micro-batches a kernel's batch is run as, one Candidate each, in turn (each
whole, or cut into slabs)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
from collections.abc import Callable

from ucudnn.planner.candidate import Candidate

_TIME: Callable[[Candidate], float] = operator.attrgetter("time_ms")
_WORKSPACE: Callable[[Candidate], int] = operator.attrgetter("workspace_bytes")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Micro-batches run one after another on one stream, in this order, sharing one buffer:
    the time adds up and the workspace is the largest part's."""

    parts: tuple[Candidate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if not self.parts:
            raise ValueError("a schedule needs at least one part")
        if not all(isinstance(p, Candidate) for p in self.parts):
            raise TypeError(f"a schedule's parts are Candidates, got {self.parts!r}")

    @classmethod
    def of_parts(cls, parts: tuple[Candidate, ...]) -> Schedule:
        """The schedule of `parts`, a non-empty tuple of Candidates, not checked again."""
        return cls._made(parts, math.fsum(map(_TIME, parts)), max(map(_WORKSPACE, parts)))

    @classmethod
    def of_runs(cls, runs: list[tuple[int, Candidate]]) -> Schedule:
        """The schedule of `count` parts of each `part` in turn, (count, part) in `runs` (a
        non-empty list), not checked again: the planners make one per front point, of up to
        256 parts each, mostly one part repeated. The time is the fsum of the runs' repeated
        times, which rounds the exact sum once, as of the parts themselves."""
        if len(runs) == 1:  # most are
            count, part = runs[0]
            time_ms = math.fsum((part.time_ms,) * count)
            return cls._made((part,) * count, time_ms, part.workspace_bytes)
        parts: list[Candidate] = []
        times: list[float] = []
        workspace = 0
        for count, part in runs:
            parts += [part] * count
            times += [part.time_ms] * count
            workspace = max(workspace, part.workspace_bytes)
        return cls._made(tuple(parts), math.fsum(times), workspace)

    @classmethod
    def _made(cls, parts: tuple[Candidate, ...], time_ms: float, workspace_bytes: int) -> Schedule:
        # The planners read the time and workspace of each schedule they make: set here, as
        # the cached properties would (without the lock that 3.11's take on a first read).
        # Set one by one, they stay in the object (its __dict__ would be one more object for
        # the garbage collector to go through).
        schedule = object.__new__(cls)
        set_field = object.__setattr__
        set_field(schedule, "parts", parts)
        set_field(schedule, "time_ms", time_ms)
        set_field(schedule, "workspace_bytes", workspace_bytes)
        return schedule

    # Cached: planning reads them over and over, and a schedule never changes.
    @functools.cached_property
    def time_ms(self) -> float:
        return math.fsum(map(_TIME, self.parts))

    @functools.cached_property
    def workspace_bytes(self) -> int:
        return max(map(_WORKSPACE, self.parts))

    @functools.cached_property
    def batch(self) -> int:
        return sum(p.micro_batch for p in self.parts)

    @property
    def deterministic(self) -> bool:
        return all(p.deterministic for p in self.parts)

    def _runs(self) -> list[tuple[int, Candidate]]:
        """Consecutive equal parts as (count, part)."""
        return [(len(list(run)), part) for part, run in itertools.groupby(self.parts)]

    def micro_batches_text(self) -> str:
        """Runs of equal parts as count x size: "2x128", "128+2x64", "3x64+32"."""
        return "+".join(
            f"{count}x{part.micro_batch}" if count > 1 else str(part.micro_batch)
            for count, part in self._runs()
        )

    def algos_text(self) -> str:
        """The algorithm (or engine configuration tag) of each run of `micro_batches_text`
        ("1" when they all agree), with a non-default math type and a slab extent:
        "1/tensor_op in slabs of 8 planes"."""
        names = [_run_text(p) for _, p in self._runs()]
        return names[0] if len(set(names)) == 1 else ",".join(names)


def _run_text(part: Candidate) -> str:
    name = part.name if part.math_type == "default" else f"{part.name}/{part.math_type}"
    if not part.slab:
        return name
    return f"{name} in slabs of {part.slab} plane{'s' if part.slab > 1 else ''}"
