"""Plans: the schedules chosen for a network's kernels, with what they were made from.

A plan records, per (layer, kernel), the schedule, its arena offset (WD only), and the baseline
it is measured against: the best undivided run under the same constraint. In WR mode that is
the fastest single candidate at the full batch within the limit; in WD mode it is the WD
optimum over full-batch candidates only, so that the baselines too fit the budget together.
It serialises to JSON and prints as a readable table.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import time
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import SupportsIndex, TypeVar

from ucudnn.core.algorithms import check_legacy_algo
from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.core.checks import integer, shown
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import check_kernel
from ucudnn.errors import SlowPlanWarning
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.choices import DEFAULT_TIME_LIMIT_S
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.config import MAX_BYTES, byte_count, micro_batch_policy
from ucudnn.planner.documents import line_of, read_document
from ucudnn.planner.dp import fastest_by_size, solved_in_closed_form
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.files import FieldError, field_errors, located_error
from ucudnn.planner.kernel_table import ContentKey, KernelId, KernelTable
from ucudnn.planner.pareto import DesirableSets, desirable_set
from ucudnn.planner.partial_fronts import plan_on_partial_fronts
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, policy_text
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.textable import render_table
from ucudnn.planner.units import format_size
from ucudnn.planner.values import check_batch, flag, layer_name
from ucudnn.planner.wd import WDSolution, aligned, check_solver, plan_wd
from ucudnn.planner.wr import fastest_and_undivided, kernel_infeasible

T = TypeVar("T")

logger = logging.getLogger(__name__)

JSON_FORMAT = "ucudnn-plan"
# 2: micro_batches and algos are lists of numbers, not texts; offset and alignment are
# offset_bytes and alignment_bytes.
# 3: parts and baselines have an engine (a graph-API engine configuration's tag, or "" for a
# legacy algorithm), so an algo may be an engine index; schedules list engines beside algos.
# Versions 1 and 2 are still read, their parts as legacy algorithms.
JSON_VERSION = 3
READ_VERSIONS = (1, 2, JSON_VERSION)
MODES = ("wr", "wd")
_LEAST_SOLVE_S = 0.001
# How much more than its baseline a plan may take before it is called slower: a millionth is
# the solver's tolerances and rounding, not a worse plan (measurements vary far more).
_SLOWER_BY_MORE_THAN = 1e-6

# The fields of a plan's JSON objects that are read back; the others are derived (times,
# texts, totals) and recomputed.
_PART_FIELDS = tuple(f.name for f in dataclasses.fields(Candidate))
_KERNEL_FIELDS = ("layer", "kernel", "batch", "parts", "baseline", "offset_bytes")
_KERNEL_DERIVED = ("micro_batches", "algos", "engines", "time_ms", "workspace_bytes", "speedup")
_PLAN_FIELDS = (
    "mode", "limit_bytes", "policy", "kernels", "deterministic_only", "solver",
    "solver_status", "alignment_bytes", "device", "timings_source",
)  # fmt: skip
_PLAN_DERIVED = ("format", "version", "totals", "explain")
# Fields that version 1 named without their unit.
_V1_NAMES = {"offset": "offset_bytes", "alignment": "alignment_bytes"}


def speedup(baseline_ms: float | None, time_ms: float) -> float | None:
    """Baseline time over planned time; None without a baseline or when the plan takes no
    time at all (a ratio to zero says nothing, and JSON has no infinity)."""
    if baseline_ms is None or time_ms == 0:
        return None
    return baseline_ms / time_ms


def schedule_numbers(schedule: Schedule) -> dict[str, object]:
    """A schedule in a plan document: each part's micro-batch, algorithm and engine tag, in
    the order they run, then its time and workspace."""
    return {
        "micro_batches": [p.micro_batch for p in schedule.parts],
        "algos": [p.algo for p in schedule.parts],
        "engines": [p.engine for p in schedule.parts],
        "time_ms": schedule.time_ms,
        "workspace_bytes": schedule.workspace_bytes,
    }


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """The schedule of one kernel: micro-batches that add up to its batch."""

    layer: str
    kernel: str
    batch: int
    schedule: Schedule
    baseline: Candidate | None = None  # None when no undivided run fits
    offset: int | None = None  # byte offset in the WD arena; None in WR mode

    def __post_init__(self) -> None:
        with field_errors(_kernel_place(self.layer, self.kernel)):
            self._check_values()

    @classmethod
    def of_checked(
        cls,
        table: KernelTable,
        schedule: Schedule,
        baseline: Candidate | None,
        offset: int | None,
    ) -> KernelPlan:
        """The plan of `table`'s kernel from what the planners made for it, not checked
        again: the table's names and batch are checked, and so are its candidates. Checking
        the plans of a network's kernels one field at a time took a sixth of a WR plan."""
        plan = object.__new__(cls)
        plan.__dict__.update(
            layer=table.layer, kernel=table.kernel, batch=table.batch, schedule=schedule,
            baseline=baseline, offset=offset,
        )  # fmt: skip
        return plan

    def _check_values(self) -> None:
        set_field = functools.partial(object.__setattr__, self)
        with field_errors("field 'batch'"):
            set_field("batch", check_batch(self.batch))
        with field_errors("field 'parts'"):
            if not isinstance(self.schedule, Schedule):
                raise TypeError(f"the schedule must be a Schedule, got {shown(self.schedule)}")
            if self.schedule.batch != self.batch:
                raise ValueError(
                    f"the micro-batches {self.schedule.micro_batches_text()} add up to "
                    f"{self.schedule.batch}, not to the batch {self.batch}"
                )
        with field_errors("field 'baseline'"):
            if self.baseline is not None and (
                not isinstance(self.baseline, Candidate) or self.baseline.micro_batch != self.batch
            ):
                raise ValueError(f"must be a Candidate at the batch {self.batch} or null")
        if self.offset is not None:
            with field_errors("field 'offset_bytes'"):
                offset = integer(self.offset, "offset_bytes", minimum=0, maximum=MAX_BYTES)
                set_field("offset", offset)

    @property
    def kernel_id(self) -> KernelId:
        return (self.layer, self.kernel)

    @property
    def place(self) -> str:
        """How errors name it: "kernel conv1/forward"."""
        return f"kernel {self.layer}/{self.kernel}"

    @property
    def time_ms(self) -> float:
        return self.schedule.time_ms

    @property
    def workspace_bytes(self) -> int:
        return self.schedule.workspace_bytes

    @property
    def speedup(self) -> float | None:
        """Baseline time over planned time (see `speedup`)."""
        return speedup(self.baseline.time_ms if self.baseline else None, self.time_ms)

    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "kernel": self.kernel,
            "batch": self.batch,
            **schedule_numbers(self.schedule),
            "offset_bytes": self.offset,
            "speedup": self.speedup,
            "parts": [dataclasses.asdict(p) for p in self.schedule.parts],
            "baseline": dataclasses.asdict(self.baseline) if self.baseline else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> KernelPlan:
        """Inverse of `to_dict`; derived fields (times, texts) are recomputed, not read.
        Errors are FieldErrors naming the kernel and the field."""
        _check_fields(data, _KERNEL_FIELDS, _KERNEL_DERIVED)
        kernel = str(data["kernel"])  # checked as the place is made
        with field_errors(_kernel_place(data["layer"], data["kernel"])):
            with field_errors("field 'parts'"):
                parts = _list(data["parts"])
                schedule = Schedule(
                    tuple(_candidate(part, f"part {n}", kernel) for n, part in enumerate(parts))
                )
            baseline = data["baseline"]
            if baseline is not None:
                baseline = _candidate(baseline, "field 'baseline'", kernel)
        return cls(
            layer=data["layer"],  # type: ignore[arg-type]
            kernel=data["kernel"],  # type: ignore[arg-type]
            batch=data["batch"],  # type: ignore[arg-type]
            schedule=schedule,
            baseline=baseline,
            offset=data["offset_bytes"],  # type: ignore[arg-type]
        )


def _kernel_place(layer: object, kernel: object) -> str:
    """ "kernel conv1/forward", once both names are checked."""
    with field_errors("field 'layer'"):
        layer_name(layer)
    with field_errors("field 'kernel'"):
        check_kernel(kernel)  # type: ignore[arg-type]
    return f"kernel {layer}/{kernel}"


def _check_fields(data: object, fields: Collection[str], derived: Collection[str] = ()) -> None:
    """`data` is a JSON object with every one of `fields` and nothing else but `derived`."""
    if not isinstance(data, Mapping):
        raise TypeError(f"expected an object, got {shown(data)}")
    missing = [f for f in fields if f not in data]
    if missing:
        raise FieldError(f"field {shown(missing[0])}", "is missing")
    unknown = [f for f in data if f not in fields and f not in derived]
    if unknown:
        raise FieldError(f"field {shown(unknown[0])}", f"is not one of {', '.join(fields)}")


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"must be a list, got {shown(value)}")
    return value


def _candidate(data: object, place: str, kernel: str) -> Candidate:
    """A part or baseline of `kernel` read back; a legacy algorithm must be one of the
    kernel's, or every call of the kernel would fail."""
    with field_errors(place):
        _check_fields(data, _PART_FIELDS)
        candidate = Candidate(**data)  # type: ignore[arg-type]
        if not candidate.engine:
            with field_errors("field 'algo'"):
                check_legacy_algo(kernel, candidate.algo)
        return candidate


def _text_field(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise FieldError(f"field {field!r}", f"must be text, got {shown(value)}")
    return value


@dataclasses.dataclass(frozen=True)
class Plan:
    """The schedules chosen for a network's kernels, with what they were made from. It is
    checked when made: one schedule per kernel, within the limit (WR) or at aligned, disjoint
    offsets inside the budget (WD)."""

    mode: str  # "wr": a limit per kernel; "wd": one budget shared by all kernels
    limit_bytes: int  # the per-kernel limit (wr) or the total budget (wd)
    policy: str | tuple[int, ...]
    kernels: tuple[KernelPlan, ...]
    deterministic_only: bool = False
    solver: str = "dp"  # "dp" (wr, or wd by exact search), "highs", "cbc", or "none" (wd)
    solver_status: str = "optimal"
    alignment: int | None = None  # of arena offsets (wd)
    device: DeviceFacts | None = None
    timings_source: str = ""

    def __post_init__(self) -> None:
        set_field = functools.partial(object.__setattr__, self)
        if self.mode not in MODES:
            raise FieldError(
                "field 'mode'",
                f"plan mode must be one of {', '.join(MODES)}, got {shown(self.mode)}",
            )
        with field_errors("field 'limit_bytes'"):
            set_field(
                "limit_bytes",
                integer(self.limit_bytes, "limit_bytes", minimum=0, maximum=MAX_BYTES),
            )
        with field_errors("field 'policy'"):
            set_field("policy", micro_batch_policy(self.policy, "policy"))
        with field_errors("field 'kernels'"):
            set_field("kernels", tuple(self.kernels))
            if not all(isinstance(k, KernelPlan) for k in self.kernels):
                raise TypeError("must be KernelPlans")
        with field_errors("field 'deterministic_only'"):
            set_field("deterministic_only", flag(self.deterministic_only, "deterministic_only"))
        for field in ("solver", "solver_status", "timings_source"):
            _text_field(getattr(self, field), field)
        if self.device is not None and not isinstance(self.device, DeviceFacts):
            raise FieldError(
                "field 'device'", f"must be DeviceFacts or null, got {shown(self.device)}"
            )
        self._check_kernels()
        if self.mode == "wr":
            self._check_wr()
        else:
            self._check_wd()

    def _check_kernels(self) -> None:
        seen: set[KernelId] = set()
        for k in self.kernels:
            if k.kernel_id in seen:
                raise FieldError(k.place, "appears twice in the plan")
            seen.add(k.kernel_id)
            if self.deterministic_only and not k.schedule.deterministic:
                raise FieldError(
                    f"{k.place}, field 'parts'", "a deterministic-only plan runs a part that is not"
                )

    def _check_wr(self) -> None:
        if self.alignment is not None:
            raise FieldError(
                "field 'alignment_bytes'", f"WR plans have none, got {shown(self.alignment)}"
            )
        for k in self.kernels:
            if k.offset is not None:
                raise FieldError(
                    f"{k.place}, field 'offset_bytes'",
                    f"WR plans have none, got {shown(k.offset)}",
                )
            if k.workspace_bytes > self.limit_bytes:
                raise FieldError(
                    f"{k.place}, field 'parts'",
                    f"needs {k.workspace_bytes} bytes of workspace, over the limit "
                    f"{self.limit_bytes}",
                )

    def _check_wd(self) -> None:
        """Every workspace lies at an aligned offset inside the budget, apart from the others."""
        with field_errors("field 'alignment_bytes'"):
            alignment = integer(self.alignment, "alignment_bytes", minimum=1, maximum=MAX_BYTES)
        object.__setattr__(self, "alignment", alignment)
        end, previous = 0, ""
        for k in sorted(self.kernels, key=lambda k: (k.offset or 0, k.workspace_bytes)):
            place = f"{k.place}, field 'offset_bytes'"
            if k.offset is None:
                raise FieldError(place, "WD plans give every kernel an offset, got null")
            if k.offset % alignment:
                raise FieldError(place, f"{k.offset} is not a multiple of {alignment}")
            if k.workspace_bytes and k.offset < end:
                raise FieldError(place, f"the workspace at {k.offset} overlaps that of {previous}")
            if k.offset + k.workspace_bytes > self.limit_bytes:
                raise FieldError(
                    place,
                    f"the workspace at {k.offset} of {k.workspace_bytes} bytes ends past the "
                    f"budget {self.limit_bytes}",
                )
            if k.workspace_bytes:
                end, previous = k.offset + k.workspace_bytes, k.place

    @functools.cached_property
    def _by_id(self) -> dict[KernelId, KernelPlan]:
        return {k.kernel_id: k for k in self.kernels}

    def __contains__(self, kernel_id: object) -> bool:
        return kernel_id in self._by_id

    def __getitem__(self, kernel_id: KernelId) -> KernelPlan:
        try:
            return self._by_id[kernel_id]
        except KeyError:
            raise KeyError(
                f"the plan has no layer {kernel_id[0]!r} kernel {kernel_id[1]!r}"
            ) from None

    @property
    def time_ms(self) -> float:
        return math.fsum(k.time_ms for k in self.kernels)

    @property
    def baseline_time_ms(self) -> float | None:
        """Sum of the baselines, or None if a kernel has none."""
        if any(k.baseline is None for k in self.kernels):
            return None
        return math.fsum(k.baseline.time_ms for k in self.kernels)  # type: ignore[union-attr]

    @property
    def speedup(self) -> float | None:
        """Total baseline time over total planned time (see `speedup`)."""
        return speedup(self.baseline_time_ms, self.time_ms)

    @property
    def workspace_bytes(self) -> int:
        """WR: the largest kernel workspace (one buffer serves all kernels in turn).
        WD: the end of the last workspace in the arena."""
        if self.mode == "wr":
            return max((k.workspace_bytes for k in self.kernels), default=0)
        return max((k.offset + k.workspace_bytes for k in self.kernels), default=0)  # type: ignore[operator]

    # -- JSON -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "mode": self.mode,
            "limit_bytes": self.limit_bytes,
            "policy": self.policy if isinstance(self.policy, str) else list(self.policy),
            "deterministic_only": self.deterministic_only,
            "solver": self.solver,
            "solver_status": self.solver_status,
            "alignment_bytes": self.alignment,
            "device": self.device.to_dict() if self.device else None,
            "timings_source": self.timings_source,
            "totals": {
                "time_ms": self.time_ms,
                "workspace_bytes": self.workspace_bytes,
                "baseline_time_ms": self.baseline_time_ms,
                "speedup": self.speedup,
            },
            "kernels": [k.to_dict() for k in self.kernels],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Plan:
        """Inverse of `to_dict`; totals are recomputed. Errors are FieldErrors naming the
        kernel (and the line of its JSON object) and the field."""
        with field_errors(line_of(data)):
            _check_fields(data, _PLAN_FIELDS, _PLAN_DERIVED)
            with field_errors("field 'kernels'"):
                items = _list(data["kernels"])
            with field_errors("field 'device'"):
                device = _device(data["device"])
        kernels = []
        for item in items:
            with field_errors(line_of(item)):
                kernels.append(KernelPlan.from_dict(item))  # type: ignore[arg-type]
        fields = {field: data[field] for field in _PLAN_FIELDS}
        fields["alignment"] = fields.pop("alignment_bytes")
        return cls(**{**fields, "kernels": tuple(kernels), "device": device})  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<plan>") -> Plan:
        """The plan of a `to_json` text; ValueError naming `source`, the line, the kernel and
        the field of what is wrong."""
        data = read_document(text, JSON_FORMAT, READ_VERSIONS, source)
        if data["version"] == 1:
            _rename_v1_fields(data)
        if data["version"] in (1, 2):
            _add_legacy_engines(data)
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise located_error(exc, source) from None

    # -- text -------------------------------------------------------------------------------
    def report(self) -> str:
        """A table per kernel: micro-batches, algorithms, workspace, time, speedup; totals."""
        limit = "per-kernel limit" if self.mode == "wr" else "total budget"
        lines = [
            f"{self.mode.upper()} plan: {limit} {format_size(self.limit_bytes)}, "
            f"policy {policy_text(self.policy)}"
            + (", deterministic algorithms only" if self.deterministic_only else "")
            + f", solver {self.solver} ({self.solver_status})",
        ]
        if self.timings_source:
            lines.append(f"timings: {self.timings_source}")
        header = ["layer", "kernel", "micro-batches", "algos", "workspace", "time ms"]
        header += ["baseline ms", "speedup"] + (["offset"] if self.mode == "wd" else [])
        baseline = self.baseline_time_ms
        total = ["total", "", "", "", format_size(self.workspace_bytes), f"{self.time_ms:.3f}"]
        total += _baseline_cells(baseline, self.time_ms) + ([""] if self.mode == "wd" else [])
        rows = [self._row(k) for k in self.kernels]
        lines += render_table(header, rows, first_numeric=4, total=total)
        return "\n".join(lines)

    def _row(self, k: KernelPlan) -> list[str]:
        row = [k.layer, k.kernel, k.schedule.micro_batches_text(), k.schedule.algos_text()]
        row += [format_size(k.workspace_bytes), f"{k.time_ms:.3f}"]
        row += _baseline_cells(k.baseline.time_ms if k.baseline else None, k.time_ms)
        return row + ([format_size(k.offset or 0)] if self.mode == "wd" else [])


def _baseline_cells(baseline_ms: float | None, time_ms: float) -> list[str]:
    if baseline_ms is None:
        return ["none fits", ""]
    ratio = speedup(baseline_ms, time_ms)
    return [f"{baseline_ms:.3f}", "—" if ratio is None else f"{ratio:.2f}x"]


def _rename_v1_fields(data: dict[str, object]) -> None:
    """A version 1 document's fields under their version 2 names, in place (its objects keep
    the lines they were read from). The texts version 1 derived are ignored as before."""
    kernels = data.get("kernels")
    objects = [data, *(kernels if isinstance(kernels, list) else [])]
    for item in objects:
        if isinstance(item, dict):
            for old, new in _V1_NAMES.items():
                if old in item and new not in item:
                    item[new] = item.pop(old)


def _add_legacy_engines(data: dict[str, object]) -> None:
    """Parts and baselines of a version 1 or 2 document, in place, as the legacy algorithms
    they are: engine "" (those versions had no engines)."""
    kernels = data.get("kernels")
    for kernel in kernels if isinstance(kernels, list) else []:
        if not isinstance(kernel, dict):
            continue
        parts = kernel.get("parts")
        for candidate in [*(parts if isinstance(parts, list) else []), kernel.get("baseline")]:
            if isinstance(candidate, dict):
                candidate.setdefault("engine", "")


def _device(data: object) -> DeviceFacts | None:
    return None if data is None else DeviceFacts.from_dict(data)  # type: ignore[arg-type]


def baseline(
    table: KernelTable, limit_bytes: Size, deterministic_only: bool = False
) -> Candidate | None:
    """The fastest single candidate at the full batch within `limit_bytes` (bytes, or text
    such as "64MiB"), if any.

    Raises:
        TypeError: `limit_bytes` is neither an integer nor text.
        ValueError: text that is no size, a negative size or one larger than any memory.
    """
    limit_bytes = byte_count(limit_bytes, "limit_bytes")
    row = fastest_by_size(table, limit_bytes, "undivided", deterministic_only).get(table.batch)
    return None if row is None else Candidate.of_row(row)


def _per_content(
    tables: TimingTables, solve: Callable[[KernelTable], T], key: Callable[[KernelTable], object]
) -> dict[KernelId, T]:
    """`solve` of each table, computed once per `key`: identical layers (ResNet's repeated
    blocks) share measurements, so they share the answer too. The key is the content key
    where equal tables must share one answer object (`plan_wd` groups the kernels that share
    one list of options), and else `shared_content`, which hashes no rows: the readers, MODEL
    tables and tunes share the content of equal tables, and equal tables that share nothing
    are solved once each (a first WR plan of ResNet-50's engine tables does a quarter less
    work)."""
    solved: dict[object, T] = {}
    answers = {}
    for kernel_id, table in tables.items():
        found = key(table)
        answer = solved.get(found, _UNSOLVED)
        if answer is _UNSOLVED:
            answer = solved[found] = solve(table)
        answers[kernel_id] = answer
    return answers  # type: ignore[return-value]


_UNSOLVED = object()


def make_plan_wr(
    tables: TimingTables,
    limit_bytes: Size,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
    device: DeviceFacts | None = None,
    timings_source: str = "",
) -> Plan:
    """WR for every kernel in `tables`: each gets the fastest schedule within `limit_bytes`
    (bytes, or text such as "64MiB").

    Raises:
        TypeError: a size neither an integer nor text, or a micro-batch size that is not an
            integer.
        ValueError: text that is no size, a negative size or one larger than any memory, or
            an unknown or empty policy.
        InfeasibleError: a kernel has no schedule within the limit; `kernel` names it and
            `required_bytes` is the smallest limit that would do, if any would.
    """
    limit_bytes = byte_count(limit_bytes, "limit_bytes")
    policy = micro_batch_policy(policy, "policy")

    def solve(table: KernelTable) -> tuple[Schedule, Candidate | None]:
        schedule, undivided = fastest_and_undivided(table, limit_bytes, policy, deterministic_only)
        if schedule is None:
            raise kernel_infeasible(table, limit_bytes, policy, deterministic_only)
        return schedule, undivided

    # Both from one pass over the contents: finding a content is a large part of a plan.
    with collector_paused():  # a block: a decorator's frame would hide the caller a warning names
        solved = _per_content(tables, solve, KernelTable.shared_content)
    schedules = {k: schedule for k, (schedule, _) in solved.items()}
    baselines = {k: undivided for k, (_, undivided) in solved.items()}
    return _plan(
        "wr",
        tables,
        limit_bytes,
        policy,
        deterministic_only,
        schedules,
        baselines,
        device=device,
        timings_source=timings_source,
    )


def make_plan_wd(
    tables: TimingTables,
    budget_bytes: Size,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
    solver: str = "highs",
    alignment: SupportsIndex = CUDNN_ALIGNMENT,
    device: DeviceFacts | None = None,
    timings_source: str = "",
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    sets: DesirableSets | None = None,
) -> Plan:
    """WD over every kernel in `tables`: the fastest set of schedules whose aligned
    workspaces fit together in `budget_bytes` (bytes, or text such as "512MiB").

    `sets` keeps the desirable sets between calls, and the one budget of steps their solves
    share (its policy and determinism must be the plan's): pass the same one to plan tables
    again at other budgets without walking their fronts again. Under sizes that are no
    divisor chain, WD needs no whole front (see `ucudnn.planner.partial_fronts`).

    `time_limit_s` bounds the two solves together: the plan's, then its baseline's. The plan's
    solver_status is "optimal" only when both were proven optimal; a baseline the solver
    fails on is left out rather than failing the plan.

    Raises:
        TypeError: a size neither an integer nor text, a micro-batch size, an alignment or a
            time limit that is not a number of the right kind.
        ValueError: text that is no size, a negative size or one larger than any memory, an
            unknown or empty policy, an unknown solver, a time limit that is not a positive
            number of seconds, an alignment below 1, or `sets` made for another policy or
            determinism.
        InfeasibleError: the kernels' smallest schedules together exceed the budget
            (`required_bytes` is the smallest budget that would do), or a kernel has no
            schedule at any workspace size (`kernel` names it).
        SolverError: no solver can be loaded, or the solver fails or stops at its time limit
            without a plan.
    """
    budget_bytes = byte_count(budget_bytes, "budget_bytes")
    alignment = integer(alignment, "alignment", minimum=1)
    solver, time_limit_s = check_solver(solver, time_limit_s)
    policy = micro_batch_policy(policy, "policy")
    deadline = time.monotonic() + time_limit_s
    if sets is None:
        sets = DesirableSets(policy, deterministic_only)
    else:
        sets.check_made_for(policy, deterministic_only)

    def solve(sets: Mapping[KernelId, list[Schedule]]) -> WDSolution:
        # Past the deadline a solve still gets a moment: it returns the solution it starts from.
        left = max(deadline - time.monotonic(), _LEAST_SOLVE_S)
        return plan_wd(sets, budget_bytes, solver, alignment, time_limit_s=left)

    with collector_paused():  # a block: a decorator's frame would hide the caller a warning names
        fastest, fit = _fastest_within_budget(tables, budget_bytes, sets, alignment)
        if fit:
            # One list per content: plan_wd groups the kernels that share one.
            options = {key: [schedule] for key, schedule in fastest.items() if schedule is not None}
            solution = solve({k: options[t.content_key()] for k, t in tables.items()})
        else:
            solution = plan_on_partial_fronts(
                tables,
                sets,
                budget_bytes,
                alignment,
                solve,
                lambda t: kernel_infeasible(t, budget_bytes, policy, deterministic_only),
                fastest,
            )
        undivided = _per_content(
            tables,
            lambda t: desirable_set(t, budget_bytes, "undivided", deterministic_only),
            KernelTable.content_key,
        )
        try:
            baseline_solution = solve(undivided)
        except (InfeasibleError, SolverError):  # no undivided plan fits, or none was found
            baseline_solution = None
    baselines = (
        {k: s.parts[0] for k, s in baseline_solution.choices.items()} if baseline_solution else {}
    )
    statuses = {solution.status, baseline_solution.status if baseline_solution else "optimal"}
    return _plan(
        "wd",
        tables,
        budget_bytes,
        policy,
        deterministic_only,
        solution.choices,
        baselines,
        offsets=solution.offsets,
        solver=solution.solver,
        solver_status="optimal" if statuses == {"optimal"} else "feasible",
        alignment=alignment,
        device=device,
        timings_source=timings_source,
    )


def _fastest_within_budget(
    tables: TimingTables, budget_bytes: int, sets: DesirableSets, alignment: int
) -> tuple[dict[ContentKey, Schedule | None], bool]:
    """Each table content's fastest schedule within the budget (None: it has none), and
    whether those of all kernels fit in it together.

    If they do, WD has nothing to trade and takes the last point of each desirable set within
    the budget, which is that schedule (the program's answer from the same candidates: the
    fastest, with the least workspace of that time), so one solve per table stands for a
    whole front: a tune that plans small batches in a large memory plans most of them so. If
    not, partial fronts start from them; fronts that are walked whole (divisor chains) need
    none, so theirs are left out once the schedules are known not to fit."""
    fastest: dict[ContentKey, Schedule | None] = {}
    total, fit = 0, True
    for _, table in tables.items():
        key = table.content_key()
        if key not in fastest:
            if not fit and solved_in_closed_form(sets.policy, table.batch):
                continue
            fastest[key], _ = fastest_and_undivided(
                table, budget_bytes, sets.policy, sets.deterministic_only, sets.candidate
            )
        schedule = fastest.get(key)
        if fit and schedule is not None:
            total += aligned(schedule.workspace_bytes, alignment)
        fit = fit and schedule is not None and total <= budget_bytes
    return fastest, fit


def _plan(
    mode: str,
    tables: TimingTables,
    limit_bytes: int,
    policy: Policy,
    deterministic_only: bool,
    schedules: dict[KernelId, Schedule],
    baselines: Mapping[KernelId, Candidate | None],
    offsets: dict[KernelId, int] | None = None,
    **fields: object,
) -> Plan:
    kernels = tuple(
        KernelPlan.of_checked(
            table,
            schedules[kernel_id],
            baselines.get(kernel_id),
            offsets[kernel_id] if offsets is not None else None,
        )
        for kernel_id, table in tables.items()
    )
    plan = Plan(
        mode=mode,
        limit_bytes=limit_bytes,
        policy=policy if isinstance(policy, str) else tuple(policy),
        kernels=kernels,
        deterministic_only=deterministic_only,
        **fields,  # type: ignore[arg-type]
    )
    _log_plan(plan)
    _warn_if_slower(plan)
    return plan


def _log_plan(plan: Plan) -> None:
    """The plan in one line at INFO, each kernel's choice at DEBUG (built only when shown)."""
    if logger.isEnabledFor(logging.INFO):
        limit = "per-kernel limit" if plan.mode == "wr" else "total budget"
        baseline = plan.baseline_time_ms
        logger.info(
            "%s plan of %d kernels, %s %s, policy %s: %.3f ms predicted against %s, "
            "%s of workspace, solver %s (%s)",
            plan.mode.upper(), len(plan.kernels), limit, format_size(plan.limit_bytes),
            policy_text(plan.policy), plan.time_ms,
            "no undivided baseline (none fits)" if baseline is None
            else f"{baseline:.3f} ms undivided ({_speedup_text(plan.speedup)})",
            format_size(plan.workspace_bytes), plan.solver, plan.solver_status,
        )  # fmt: skip
    if logger.isEnabledFor(logging.DEBUG):
        for k in plan.kernels:
            logger.debug(
                "%s: micro-batches %s, algorithms %s, %s of workspace, %.3f ms (baseline %s)",
                k.place, k.schedule.micro_batches_text(), k.schedule.algos_text(),
                format_size(k.workspace_bytes), k.time_ms,
                "none fits" if k.baseline is None else f"{k.baseline.time_ms:.3f} ms",
            )  # fmt: skip


def _speedup_text(ratio: float | None) -> str:
    return "speedup —" if ratio is None else f"speedup {ratio:.2f}x"


def _warn_if_slower(plan: Plan) -> None:
    """Warn when the plan as a whole is predicted slower than its baseline. WR's dynamic
    program and an optimal WD solve never are (the undivided runs are among their choices);
    a WD solver stopped by its time limit may be. One kernel slower than its own baseline is a
    fair trade in WD when the others gain more, so only the totals count."""
    baseline = plan.baseline_time_ms
    if baseline is None or plan.time_ms <= baseline * (1 + _SLOWER_BY_MORE_THAN):
        return
    warnings.warn(
        f"the {plan.mode.upper()} plan is predicted slower than its undivided baseline "
        f"({plan.time_ms:.3f} ms against {baseline:.3f} ms): the {plan.solver} solver stopped "
        f"at its time limit (status {plan.solver_status}) before it found a better plan; give "
        "it more time (time_limit_s, or ucudnn plan --time-limit)",
        SlowPlanWarning,
        stacklevel=4,  # the caller of make_plan_wr or make_plan_wd
    )
