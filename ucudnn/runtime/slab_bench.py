"""Candidates of a kernel cut into slabs (`Candidate.slab`), made from measurements of its slabs.

A kernel cut into slabs of e planes runs a few distinct convolutions: the slab inside the
volume (most of them), the border slabs, padded on one side, and a shorter last slab when e
does not divide the planes (`ucudnn.core.slabs`). Each distinct one is measured as a problem
of its own, through the cache like any other, at its place in the whole tensors, so its time
includes its halo and its alignment. A configuration that ran every one of them within the
cap makes a candidate: the sum of its slabs' times, the most workspace any of them needs.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable, Sequence

from ucudnn.core import slabs
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.cache import Measurement
from ucudnn.planner.tables import Candidate
from ucudnn.runtime.search_device import config_id


class SlabShape:
    """One distinct convolution among a kernel's slabs: its problem (of the whole batch), how
    many slabs run it, and the first of them (where it is timed)."""

    def __init__(self, whole: ConvProblem, slab: slabs.Slab, count: int) -> None:
        self.problem = slab.problem(whole)
        self.slab = slab
        self.count = count


def slab_shapes(problem: ConvProblem, kernel: str, extent: int) -> list[SlabShape]:
    """The distinct convolutions of `kernel` of `problem` cut into slabs of `extent` planes."""
    return [
        SlabShape(problem, slab, count) for slab, count in slabs.distinct(problem, kernel, extent)
    ]


class ShapeBuffers:
    """The whole problem's benchmark buffers as seen by one slab shape: its x and y start at
    its first slab's planes (what `Benchmarker` asks of a problem's buffers)."""

    def __init__(
        self, at_sample: Callable[[int], dict[str, int]], problem: ConvProblem, shape: SlabShape
    ) -> None:
        self._whole_at = at_sample
        self._offsets = {t: shape.slab.offset_bytes(problem, t) for t in ("x", "y")}

    def at_sample(self, first_sample: int) -> dict[str, int]:
        at = self._whole_at(first_sample)
        return {t: at[t] + self._offsets.get(t, 0) for t in at}

    def release(self) -> None:
        """The whole problem's buffers are released with it."""


def composed(
    micro_batch: int,
    extent: int,
    measured: Iterable[tuple[SlabShape, Sequence[Measurement]]],
    plannable: Callable[[ConvProblem, Measurement], bool],
) -> list[Candidate]:
    """The candidates at `micro_batch` cut into slabs of `extent` planes: one per configuration
    plannable at every shape (`measured`: each shape's measurements at `micro_batch`)."""
    found: dict[Hashable, list[Candidate]] = collections.defaultdict(list)
    time_ms: dict[Hashable, float] = collections.defaultdict(float)
    shapes = 0
    for shape, measurements in measured:
        shapes += 1
        for m in measurements:
            if plannable(shape.problem, m):
                key = config_id(m)
                found[key].append(m.candidate)
                time_ms[key] += shape.count * m.candidate.time_ms
    candidates = []
    for config, parts in found.items():
        if len(parts) != shapes:
            continue  # it did not run, or may not be planned, at some shape
        first = parts[0]
        candidates.append(
            Candidate(
                micro_batch=micro_batch,
                algo=first.algo,
                time_ms=time_ms[config],
                workspace_bytes=max(part.workspace_bytes for part in parts),
                math_type=first.math_type,
                deterministic=all(part.deterministic for part in parts),
                engine=first.engine,
                slab=extent,
            )
        )
    return candidates
