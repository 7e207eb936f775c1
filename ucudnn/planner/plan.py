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
import math
from collections.abc import Callable
from typing import TypeVar

from ucudnn.core.facts import DeviceFacts
from ucudnn.planner.documents import read_document
from ucudnn.planner.dp import eligible_candidates
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.pareto import desirable_set
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, policy_text
from ucudnn.planner.tables import Candidate, KernelId, KernelTable, Schedule, TimingTables
from ucudnn.planner.textable import render_table
from ucudnn.planner.units import format_size
from ucudnn.planner.wd import plan_wd
from ucudnn.planner.wr import kernel_infeasible, plan_wr

T = TypeVar("T")

JSON_FORMAT = "ucudnn-plan"
JSON_VERSION = 1
MODES = ("wr", "wd")


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    layer: str
    kernel: str
    batch: int
    schedule: Schedule
    baseline: Candidate | None = None  # None when no undivided run fits
    offset: int | None = None  # byte offset in the WD arena; None in WR mode

    @property
    def kernel_id(self) -> KernelId:
        return (self.layer, self.kernel)

    @property
    def time_ms(self) -> float:
        return self.schedule.time_ms

    @property
    def workspace_bytes(self) -> int:
        return self.schedule.workspace_bytes

    @property
    def speedup(self) -> float | None:
        """Baseline time over planned time (None without a baseline)."""
        if self.baseline is None:
            return None
        return self.baseline.time_ms / self.time_ms if self.time_ms else math.inf

    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "kernel": self.kernel,
            "batch": self.batch,
            "micro_batches": self.schedule.micro_batches_text(),
            "algos": self.schedule.algos_text(),
            "time_ms": self.time_ms,
            "workspace_bytes": self.workspace_bytes,
            "offset": self.offset,
            "speedup": self.speedup,
            "parts": [dataclasses.asdict(p) for p in self.schedule.parts],
            "baseline": dataclasses.asdict(self.baseline) if self.baseline else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> KernelPlan:
        """Inverse of `to_dict`; derived fields (times, texts) are recomputed, not read."""
        baseline = data["baseline"]
        return cls(
            layer=data["layer"],  # type: ignore[arg-type]
            kernel=data["kernel"],  # type: ignore[arg-type]
            batch=data["batch"],  # type: ignore[arg-type]
            schedule=Schedule(tuple(Candidate(**p) for p in data["parts"])),  # type: ignore[arg-type,union-attr]
            baseline=Candidate(**baseline) if baseline else None,  # type: ignore[arg-type]
            offset=data["offset"],  # type: ignore[arg-type]
        )


@dataclasses.dataclass(frozen=True)
class Plan:
    mode: str  # "wr": a limit per kernel; "wd": one budget shared by all kernels
    limit_bytes: int  # the per-kernel limit (wr) or the total budget (wd)
    policy: str | tuple[int, ...]
    kernels: tuple[KernelPlan, ...]
    deterministic_only: bool = False
    solver: str = "dp"  # "dp" (wr), "highs", "cbc", or "none" (wd, nothing to trade)
    solver_status: str = "optimal"
    alignment: int | None = None  # of arena offsets (wd)
    device: DeviceFacts | None = None
    timings_source: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"plan mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not isinstance(self.policy, str):
            object.__setattr__(self, "policy", tuple(self.policy))
        object.__setattr__(self, "kernels", tuple(self.kernels))

    @functools.cached_property
    def _by_id(self) -> dict[KernelId, KernelPlan]:
        return {k.kernel_id: k for k in self.kernels}

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
    def workspace_bytes(self) -> int:
        """WR: the largest kernel workspace (one buffer serves all kernels in turn).
        WD: the end of the last workspace in the arena."""
        if self.mode == "wr":
            return max((k.workspace_bytes for k in self.kernels), default=0)
        return max((k.offset + k.workspace_bytes for k in self.kernels), default=0)  # type: ignore[operator]

    # -- JSON -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        baseline = self.baseline_time_ms
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "mode": self.mode,
            "limit_bytes": self.limit_bytes,
            "policy": self.policy if isinstance(self.policy, str) else list(self.policy),
            "deterministic_only": self.deterministic_only,
            "solver": self.solver,
            "solver_status": self.solver_status,
            "alignment": self.alignment,
            "device": self.device.to_dict() if self.device else None,
            "timings_source": self.timings_source,
            "totals": {
                "time_ms": self.time_ms,
                "workspace_bytes": self.workspace_bytes,
                "baseline_time_ms": baseline,
                "speedup": baseline / self.time_ms if baseline and self.time_ms else None,
            },
            "kernels": [k.to_dict() for k in self.kernels],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = read_document(text, JSON_FORMAT, JSON_VERSION, "plan")
        try:
            return cls(
                mode=data["mode"],
                limit_bytes=data["limit_bytes"],
                policy=data["policy"],
                kernels=tuple(KernelPlan.from_dict(k) for k in data["kernels"]),
                deterministic_only=data["deterministic_only"],
                solver=data["solver"],
                solver_status=data["solver_status"],
                alignment=data["alignment"],
                device=DeviceFacts.from_dict(data["device"]) if data["device"] else None,
                timings_source=data["timings_source"],
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed {JSON_FORMAT} document: {exc!r}") from None

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
    speedup = f"{baseline_ms / time_ms:.2f}x" if time_ms else "inf"
    return [f"{baseline_ms:.3f}", speedup]


def baseline(
    table: KernelTable, limit_bytes: int, deterministic_only: bool = False
) -> Candidate | None:
    """The fastest single candidate at the full batch within `limit_bytes`, if any."""
    singles = eligible_candidates(table, limit_bytes, "undivided", deterministic_only)
    return min(singles, key=Candidate.speed_key, default=None)


def _per_content(tables: TimingTables, solve: Callable[[KernelTable], T]) -> dict[KernelId, T]:
    """`solve` of each table, computed once per distinct content: identical layers (ResNet's
    repeated blocks) share measurements, so they share the answer too."""
    solved: dict[tuple, T] = {}
    return {
        kernel_id: solved[key] if (key := table.content_key()) in solved
        else solved.setdefault(key, solve(table))
        for kernel_id, table in tables.items()
    }  # fmt: skip


def make_plan_wr(
    tables: TimingTables,
    limit_bytes: int,
    policy: Policy = DEFAULT_POLICY,
    deterministic_only: bool = False,
    device: DeviceFacts | None = None,
    timings_source: str = "",
) -> Plan:
    """WR for every kernel in `tables`: each gets the fastest schedule within `limit_bytes`."""
    schedules = _per_content(tables, lambda t: plan_wr(t, limit_bytes, policy, deterministic_only))
    baselines = {k: baseline(t, limit_bytes, deterministic_only) for k, t in tables.items()}
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
    budget_bytes: int,
    policy: Policy = DEFAULT_POLICY,
    deterministic_only: bool = False,
    solver: str = "highs",
    alignment: int = 256,
    device: DeviceFacts | None = None,
    timings_source: str = "",
) -> Plan:
    """WD over every kernel in `tables`: the fastest set of schedules whose aligned
    workspaces fit together in `budget_bytes`."""

    def options(table: KernelTable) -> list[Schedule]:
        # A kernel with nothing under the budget brings its smallest schedule, so that plan_wd
        # can name the minimum feasible budget of the whole network.
        found = (
            desirable_set(table, budget_bytes, policy, deterministic_only)
            or (desirable_set(table, None, policy, deterministic_only)[:1])
        )
        if not found:
            raise kernel_infeasible(table, budget_bytes, policy, deterministic_only)
        return found

    sets = _per_content(tables, options)
    solution = plan_wd(sets, budget_bytes, solver=solver, alignment=alignment)
    undivided = {
        k: desirable_set(t, budget_bytes, "undivided", deterministic_only)
        for k, t in tables.items()
    }
    try:
        chosen = plan_wd(undivided, budget_bytes, solver=solver, alignment=alignment).choices
        baselines = {k: s.parts[0] for k, s in chosen.items()}
    except InfeasibleError:
        baselines = {}
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
        solver_status=solution.status,
        alignment=alignment,
        device=device,
        timings_source=timings_source,
    )


def _plan(
    mode: str,
    tables: TimingTables,
    limit_bytes: int,
    policy: Policy,
    deterministic_only: bool,
    schedules: dict[KernelId, Schedule],
    baselines: dict[KernelId, Candidate | None],
    offsets: dict[KernelId, int] | None = None,
    **fields: object,
) -> Plan:
    kernels = tuple(
        KernelPlan(
            layer=table.layer,
            kernel=table.kernel,
            batch=table.batch,
            schedule=schedules[kernel_id],
            baseline=baselines.get(kernel_id),
            offset=offsets[kernel_id] if offsets is not None else None,
        )
        for kernel_id, table in tables.items()
    )
    return Plan(
        mode=mode,
        limit_bytes=limit_bytes,
        policy=policy if isinstance(policy, str) else tuple(policy),
        kernels=kernels,
        deterministic_only=deterministic_only,
        **fields,  # type: ignore[arg-type]
    )
