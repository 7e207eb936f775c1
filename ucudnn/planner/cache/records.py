"""What the benchmark cache stores and reports: a `Measurement`, the key of a measurement set
(`measurement_key`, with the sources a set may have), and the counts and report of a cache
(`CacheStats`, `CacheReport`). Nothing here knows where or how they are stored."""

from __future__ import annotations

import dataclasses
import numbers
import re
from collections.abc import Iterable, Sequence

from ucudnn.core.checks import integer, shown
from ucudnn.core.engines import parse_tag
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import MATH_TYPES, MAX_DIM, ConvProblem, check_kernel
from ucudnn.core.splits import BATCH, Axis
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.units import format_size
from ucudnn.planner.values import MAX_TIME_MS, MAX_WORKSPACE_BYTES

LEGACY = "legacy"  # the source of legacy algorithms' sets; graph-API searches: "graph/<id>"

# What a set's source and a note may be: the source goes into keys and messages, the notes are
# stored as one comma-separated text.
# Printable ASCII, no spaces. The key adds /axis=NAME for an axis other than the batch
# (`axis_source`); a caller's source never carries it.
_SOURCE = re.compile(r"legacy|(graph|fast|exhaustive)/[!-~]+")
_NOTE = re.compile(r"[A-Za-z0-9_]+")


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The outcome of benchmarking one algorithm or engine configuration at one micro-batch:
    timings if it ran (status "ok"), else why not (e.g. cuDNN's status name). Held to
    Candidate's bounds, so that every successful measurement the cache stores can be read back
    as a Candidate."""

    micro_batch: int
    algo: int
    status: str = "ok"
    time_ms: float | None = None  # median of `repeats` timed runs
    min_ms: float | None = None  # default: time_ms
    max_ms: float | None = None  # default: time_ms
    repeats: int = 1
    workspace_bytes: int | None = None
    math_type: str = "default"
    deterministic: bool = False
    engine: str = ""  # "" for a legacy algorithm, else the configuration's tag (algo its index)
    notes: tuple[str, ...] = ()  # the configuration's numerical and behaviour notes, by name
    # Whether time_ms is a full timing (True) or a brief screen's (False); None where it was
    # not recorded (before schema 4) or nothing ran.
    confirmed: bool | None = None

    def __post_init__(self) -> None:
        if not self.status:
            raise ValueError("status must be 'ok' or say why the algorithm did not run")
        self._set_integer("micro_batch", minimum=1, maximum=MAX_DIM)
        self._set_integer("algo", minimum=0, maximum=MAX_DIM)
        if self.engine:
            config = parse_tag(self.engine)
            if config.index != self.algo:
                raise ValueError(
                    f"engine {self.engine} is a configuration of engine {config.index}, but "
                    f"algo is {self.algo} (an engine's algo is its index)"
                )
            object.__setattr__(self, "engine", config.tag)
        object.__setattr__(self, "notes", _note_names(self.notes))
        if self.confirmed is not None and not isinstance(self.confirmed, bool):
            raise TypeError(f"confirmed must be True, False or None, got {shown(self.confirmed)}")
        self._set_integer("repeats", minimum=0)
        if self.workspace_bytes is not None:
            self._set_integer("workspace_bytes", minimum=0, maximum=MAX_WORKSPACE_BYTES)
        if self.math_type not in MATH_TYPES:
            raise ValueError(f"math_type {self.math_type!r} is not one of {', '.join(MATH_TYPES)}")
        if self.ok and (self.time_ms is None or self.workspace_bytes is None):
            raise ValueError(f"algo {self.algo}: a successful measurement needs time and workspace")
        if self.time_ms is not None:
            for name in ("min_ms", "max_ms"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, self.time_ms)
        times = [t for t in (self.min_ms, self.time_ms, self.max_ms) if t is not None]
        if any(isinstance(t, bool) or not isinstance(t, numbers.Real) for t in times):
            raise TypeError(
                f"algo {self.algo}: times must be numbers, "
                f"got {self.min_ms!r}, {self.time_ms!r}, {self.max_ms!r}"
            )
        if not all(0 <= t <= MAX_TIME_MS for t in times) or times != sorted(times):  # NaN too
            raise ValueError(
                f"algo {self.algo}: times must be between 0 and {MAX_TIME_MS:g} ms and "
                f"min <= median <= max, got {self.min_ms}, {self.time_ms}, {self.max_ms}"
            )

    def _set_integer(self, name: str, minimum: int, maximum: int | None = None) -> None:
        # Any integral type (numpy's too) becomes an int; a float, text or bool is refused.
        value = integer(getattr(self, name), name, minimum=minimum, maximum=maximum)
        object.__setattr__(self, name, value)

    @classmethod
    def timed(
        cls,
        candidate: Candidate,
        times_ms: Sequence[float],
        notes: Iterable[str] = (),
        confirmed: bool | None = None,
    ) -> Measurement:
        """A candidate (its time the median of `times_ms`) with the spread of its runs.
        ValueError for a candidate cut into slabs: the cache holds whole runs of a problem
        (a kernel cut into slabs is measured as its distinct slabs, each a problem of its own)."""
        if candidate.slab:
            raise ValueError(
                f"algo {candidate.name} runs in slabs of {candidate.slab} planes: the cache holds "
                "whole runs (measure each distinct slab as a problem of its own)"
            )
        return cls(
            candidate.micro_batch,
            candidate.algo,
            time_ms=candidate.time_ms,
            min_ms=min(times_ms),
            max_ms=max(times_ms),
            repeats=len(times_ms),
            workspace_bytes=candidate.workspace_bytes,
            math_type=candidate.math_type,
            deterministic=candidate.deterministic,
            engine=candidate.engine,
            notes=tuple(notes),
            confirmed=confirmed,
        )

    @classmethod
    def failed(
        cls, micro_batch: int, algo: int, math_type: str, status: str, engine: str = ""
    ) -> Measurement:
        if status == "ok":
            raise ValueError("a failed measurement needs a status other than 'ok'")
        return cls(micro_batch, algo, status, repeats=0, math_type=math_type, engine=engine)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def candidate(self) -> Candidate:
        if not self.ok:
            raise ValueError(f"algo {self.algo} did not run ({self.status}): not a candidate")
        assert self.time_ms is not None and self.workspace_bytes is not None
        return Candidate(
            self.micro_batch,
            self.algo,
            self.time_ms,
            self.workspace_bytes,
            self.math_type,
            self.deterministic,
            self.engine,
        )


def _note_names(notes: object) -> tuple[str, ...]:
    if isinstance(notes, str) or not isinstance(notes, Iterable):
        raise TypeError(f"notes must be a sequence of note names, got {shown(notes)}")
    names = tuple(notes)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"a note name must be text, got {shown(name)}")
        if not _NOTE.fullmatch(name):
            raise ValueError(
                f"a note name is letters, digits and underscores (TENSOR_CORE), got {shown(name)}"
            )
    return names


def measurement_key(
    problem: ConvProblem,
    kernel: str,
    micro_batch: int,
    facts: DeviceFacts,
    source: str,
    axis: Axis = BATCH,
) -> tuple[object, ...]:
    """The key of a measurement set, in the order of the key columns of sql.py's tables: the
    problem of the part of size `micro_batch` along `axis` (every field), the kernel, the
    size, every DeviceFacts field and the source, so that another device or software stack
    misses. The source names an axis other than the batch (`axis_source`), so that rows of
    batch splits keep the keys they had before there were axes."""
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    if not isinstance(source, str):
        raise TypeError(f"source must be text, got {shown(source)}")
    if not _SOURCE.fullmatch(source):
        raise ValueError(
            "source must be 'legacy' or 'graph/<search id>' (printable ASCII without spaces), "
            f"got {shown(source)}"
        )
    return (
        axis.part(problem, micro_batch).key(),
        check_kernel(kernel),
        micro_batch,
        facts.device_name,
        facts.compute_capability,
        facts.cudnn_version,
        facts.cuda_version,
        axis_source(source, axis),
    )


def axis_source(source: str, axis: Axis) -> str:
    """`source` as the cache keys a split along `axis`: unchanged for the batch."""
    return source if axis is BATCH else f"{source}/axis={axis.name}"


@dataclasses.dataclass(frozen=True)
class CacheStats:
    sets: int  # (problem, kernel, micro-batch, device, source) keys measured
    measurements: int  # rows, failures included
    file_bytes: int  # the database file; 0 in memory


@dataclasses.dataclass(frozen=True)
class CacheReport:
    """What `inspect_cache` found at a cache path."""

    path: str
    stats: CacheStats | None  # None: no usable cache there
    # Why the file there cannot be used, or (with stats) what its owner should know; "" if
    # there is simply none yet, or nothing to say.
    problem: str = ""

    def describe(self) -> str:
        """One line for people, e.g. for `ucudnn info`."""
        if self.stats is not None:
            return (
                f"{self.path} ({self.stats.sets} measured problem sizes, "
                f"{self.stats.measurements} rows, {format_size(self.stats.file_bytes)})"
                + (f"; {self.problem}" if self.problem else "")
            )
        if self.problem:
            return f"{self.path}: {self.problem}"
        return f"{self.path} (not created yet)"
