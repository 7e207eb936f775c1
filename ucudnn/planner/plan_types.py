"""What a plan is: the schedules chosen for a network's kernels (`KernelPlan`, in a `Plan`),
with what they were made from, checked when made; its totals, its JSON document and its text
report.

A plan records, per (layer, kernel), the schedule, its arena offset (WD only), and the baseline
it is measured against: the best undivided run under the same constraint. In WR mode that is
the fastest single candidate at the full batch within the limit; in WD mode it is the WD
optimum over full-batch candidates only, so that the baselines too fit the budget together.
Either way the baseline runs the whole volume: a candidate cut into slabs is no baseline.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ucudnn.core.checks import integer, shown
from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import check_kernel
from ucudnn.core.splits import BATCH, Axis, axis_named
from ucudnn.planner.candidate import Candidate
from ucudnn.planner.config import MAX_BYTES, micro_batch_policy
from ucudnn.planner.documents import line_of
from ucudnn.planner.files import FieldError, field_errors, located_error
from ucudnn.planner.kernel_table import KernelId, KernelTable
from ucudnn.planner.plan_json import (
    JSON_FORMAT,
    JSON_VERSION,
    KERNEL_DERIVED,
    KERNEL_FIELDS,
    KERNEL_OPTIONAL,
    PLAN_DERIVED,
    PLAN_FIELDS,
    check_fields,
    json_list,
    plan_document,
    read_candidate,
    read_device,
)
from ucudnn.planner.policies import policy_text
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.textable import render_table
from ucudnn.planner.units import format_size
from ucudnn.planner.values import check_batch, flag, layer_name

if TYPE_CHECKING:  # it imports MODES from here
    from ucudnn.planner import plan_formats

MODES = ("wr", "wd")


def speedup(baseline_ms: float | None, time_ms: float) -> float | None:
    """Baseline time over planned time; None without a baseline or when the plan takes no
    time at all (a ratio to zero says nothing, and JSON has no infinity)."""
    if baseline_ms is None or time_ms == 0:
        return None
    return baseline_ms / time_ms


def schedule_numbers(schedule: Schedule) -> plan_formats.Schedule:
    """A schedule in a plan document: each part's micro-batch, algorithm and engine tag, in
    the order they run, then its time and workspace; and each part's slab extent, only where
    a part has one, so that schedules without slabs are written as before."""
    numbers: plan_formats.Schedule = {
        "micro_batches": [p.micro_batch for p in schedule.parts],
        "algos": [p.algo for p in schedule.parts],
        "engines": [p.engine for p in schedule.parts],
        "time_ms": schedule.time_ms,
        "workspace_bytes": schedule.workspace_bytes,
    }
    if any(p.slab for p in schedule.parts):
        numbers["slabs"] = [p.slab for p in schedule.parts]
    return numbers


def candidate_numbers(candidate: Candidate) -> plan_formats.Candidate:
    """A candidate in a plan document, a part or a baseline: its fields, in order; its slab
    only where it has one, so that candidates of the whole volume are written as before."""
    numbers: plan_formats.Candidate = {
        "micro_batch": candidate.micro_batch,
        "algo": candidate.algo,
        "time_ms": candidate.time_ms,
        "workspace_bytes": candidate.workspace_bytes,
        "math_type": candidate.math_type,
        "deterministic": candidate.deterministic,
        "engine": candidate.engine,
    }
    if candidate.slab:
        numbers["slab"] = candidate.slab
    return numbers


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """The schedule of one kernel: parts along `axis` that add up to its extent there
    (`batch`, as the batch axis names it)."""

    layer: str
    kernel: str
    batch: int
    schedule: Schedule
    baseline: Candidate | None = None  # None when no undivided run fits
    offset: int | None = None  # byte offset in the WD arena; None in WR mode
    axis: Axis = BATCH  # that of the table it was planned from

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
            baseline=baseline, offset=offset, axis=table.axis,
        )  # fmt: skip
        return plan

    def _check_values(self) -> None:
        set_field = functools.partial(object.__setattr__, self)
        with field_errors("field 'batch'"):
            set_field("batch", check_batch(self.batch))
        with field_errors("field 'axis'"):
            if not isinstance(self.axis, Axis):
                raise TypeError(f"the axis must be an Axis, got {shown(self.axis)}")
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
                not isinstance(self.baseline, Candidate)
                or self.baseline.micro_batch != self.batch
                or self.baseline.slab
            ):
                raise ValueError(
                    f"must be a Candidate of the whole volume (no slab) at the batch "
                    f"{self.batch} or null"
                )
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

    def to_dict(self) -> plan_formats.PlannedKernel:
        axis: plan_formats.AxisNamed = {} if self.axis is BATCH else {"axis": self.axis.name}
        return {
            "layer": self.layer,
            "kernel": self.kernel,
            "batch": self.batch,
            **axis,  # absent: the batch
            **schedule_numbers(self.schedule),
            "offset_bytes": self.offset,
            "speedup": self.speedup,
            "parts": [candidate_numbers(p) for p in self.schedule.parts],
            "baseline": candidate_numbers(self.baseline) if self.baseline else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> KernelPlan:
        """Inverse of `to_dict`; derived fields (times, texts) are recomputed, not read.
        Errors are FieldErrors naming the kernel and the field."""
        check_fields(data, KERNEL_FIELDS, (*KERNEL_OPTIONAL, *KERNEL_DERIVED))
        kernel = str(data["kernel"])  # checked as the place is made
        with field_errors(_kernel_place(data["layer"], data["kernel"])):
            with field_errors("field 'parts'"):
                parts = json_list(data["parts"])
                schedule = Schedule(
                    tuple(read_candidate(part, f"part {n}", kernel) for n, part in enumerate(parts))
                )
            baseline = data["baseline"]
            if baseline is not None:
                baseline = read_candidate(baseline, "field 'baseline'", kernel)
            with field_errors("field 'axis'"):
                name = data.get("axis", BATCH.name)
                if not isinstance(name, str):
                    raise TypeError(f"must be text, got {shown(name)}")
                axis = axis_named(name)
        return cls(
            layer=data["layer"],  # type: ignore[arg-type]
            kernel=data["kernel"],  # type: ignore[arg-type]
            batch=data["batch"],  # type: ignore[arg-type]
            schedule=schedule,
            baseline=baseline,
            offset=data["offset_bytes"],  # type: ignore[arg-type]
            axis=axis,
        )


def _kernel_place(layer: object, kernel: object) -> str:
    """ "kernel conv1/forward", once both names are checked."""
    with field_errors("field 'layer'"):
        layer_name(layer)
    with field_errors("field 'kernel'"):
        check_kernel(kernel)  # type: ignore[arg-type]
    return f"kernel {layer}/{kernel}"


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
    def to_dict(self) -> plan_formats.PlanDocument:
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
            check_fields(data, PLAN_FIELDS, PLAN_DERIVED)
            with field_errors("field 'kernels'"):
                items = json_list(data["kernels"])
            with field_errors("field 'device'"):
                device = read_device(data["device"])
        kernels = []
        for item in items:
            with field_errors(line_of(item)):
                kernels.append(KernelPlan.from_dict(item))  # type: ignore[arg-type]
        fields = {field: data[field] for field in PLAN_FIELDS}
        fields["alignment"] = fields.pop("alignment_bytes")
        return cls(**{**fields, "kernels": tuple(kernels), "device": device})  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<plan>") -> Plan:
        """The plan of a `to_json` text; ValueError naming `source`, the line, the kernel and
        the field of what is wrong."""
        data = plan_document(text, source)
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
