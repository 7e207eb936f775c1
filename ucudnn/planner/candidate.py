"""A Candidate: one measured way to run a kernel on some samples (whole, or cut into slabs of
its outermost spatial axis), and the same as a table's row of plain values (`Row`), with the
keys that order rows as candidates are ordered."""

from __future__ import annotations

import dataclasses
import operator
from typing import Final

from ucudnn.planner.values import CANDIDATE_CHECKS, check_engine_index

# A candidate's field values, in order (Candidate.values()), and where planners find some.
Row = tuple[int, int, float, int, str, bool, str, int]
ROW_SIZE: Final = 0
ROW_TIME: Final = 2
ROW_WORKSPACE: Final = 3
ROW_DETERMINISTIC: Final = 5
ROW_SLAB: Final = 7


@dataclasses.dataclass(frozen=True, order=True)
class Candidate:
    """One measured way to run a kernel on `micro_batch` samples: a legacy cuDNN algorithm
    (`engine` empty, `algo` the cudnnConvolution*Algo_t value) or a graph-API engine
    configuration (`engine` its canonical tag, `algo` the engine's global index).

    `slab` > 0 runs the samples cut into slabs of that many planes of the tensor the kernel's
    slabs cut (`ucudnn.core.slabs`), all with this algorithm; the time is then the slabs'
    together (halos included) and the workspace the most any slab needs. 0: the whole volume.
    """

    micro_batch: int
    algo: int
    time_ms: float
    workspace_bytes: int
    math_type: str = "default"
    deterministic: bool = False
    engine: str = ""
    slab: int = 0

    def __post_init__(self) -> None:
        for name, check in CANDIDATE_CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        check_engine_index(self.engine, self.algo)
        values = tuple(getattr(self, f.name) for f in dataclasses.fields(self))
        object.__setattr__(self, "_values", values)

    @classmethod
    def of_row(cls, values: Row) -> Candidate:
        """The candidate of a table's row (`KernelTable.rows`): field values in order, each
        already as its check returns it and checked together (`check_engine_index`), as a
        table's rows are. Readers and planners make 1e5 of them."""
        candidate = object.__new__(cls)
        candidate.__dict__.update(zip(_CANDIDATE_KEYS, (*values, values), strict=True))
        return candidate

    def values(self) -> tuple[object, ...]:
        """The fields' values, in order: plain values, which compare and hash faster than
        candidates do (planning keys tables of hundreds of candidates by their content)."""
        return self.__dict__["_values"]  # type: ignore[no-any-return]

    def speed_key(self) -> tuple[float, int, int, str, str, int]:
        """Order for picking among candidates: faster, then smaller, then lower algo (and
        whole before slabs)."""
        return row_speed_key(self.values())  # type: ignore[no-any-return]

    def slot(self) -> tuple[int, str, str, int]:
        """What makes a candidate distinct within its micro-batch size: algorithm or engine
        configuration, math type, slab extent."""
        return row_slot(self.values())  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        """The algorithm number, or the engine configuration's tag."""
        return self.engine or str(self.algo)


CANDIDATE_FIELDS = tuple(f.name for f in dataclasses.fields(Candidate))
_CANDIDATE_KEYS = (*CANDIDATE_FIELDS, "_values")  # of_row's: the fields, then the row
# Candidate.slot() of a candidate's field values.
row_slot = operator.itemgetter(
    *map(CANDIDATE_FIELDS.index, ("algo", "engine", "math_type", "slab"))
)
_SPEED_FIELDS = ("time_ms", "workspace_bytes", "algo", "engine", "math_type", "slab")
# Candidate.speed_key() of a candidate's field values, and the order in which the desirable
# sets offer a size's candidates: workspace, then speed.
row_speed_key = operator.itemgetter(*map(CANDIDATE_FIELDS.index, _SPEED_FIELDS))
row_workspace_speed_key = operator.itemgetter(
    *map(CANDIDATE_FIELDS.index, ("workspace_bytes", *_SPEED_FIELDS))
)
