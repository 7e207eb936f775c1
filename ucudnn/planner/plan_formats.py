"""The documents the planner writes and reads, ucudnn-timings and ucudnn-plan, declared as
`ucudnn.faces.formats` declares the commands' documents; the fields those share with them; and
the memory of a training step (`StepMemory`), a part of ucudnn-tune the planner writes.

The planner's writers (`Plan.to_dict`, `TimingTables.to_document`, `StepMemory.to_dict`, ...)
return these types, so that mypy catches a field renamed on one side only; they import this
module for type checking alone, as it imports their constants.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

from ucudnn.core.problem import KERNELS, MATH_TYPES
from ucudnn.core.splits import AXES
from ucudnn.planner.choices import SOLVERS
from ucudnn.planner.config import POLICY_NAMES
from ucudnn.planner.explain import REASONS
from ucudnn.planner.field_notes import SIGNED, Minimum, NullMeans, OneOf
from ucudnn.planner.plan_types import MODES

# -- fields several objects share ---------------------------------------------------------
# What null means of a ratio besides: planner.documents.document_text writes infinity so.
INFINITE_RATIO = "a ratio too large for a JSON number (over a time too small to divide by)"
FORMAT_MEANING = "which document this is"
VERSION_MEANING = "the revision of its fields"

Layer = Annotated[str, "the layer's name"]
KernelName = Annotated[str, "which convolution of the layer", OneOf(KERNELS)]
_Engine = Annotated[
    str,
    "the cuDNN graph-API engine configuration's tag, eng<index> then _k<knob>=<value> per knob "
    'sorted by knob (e.g. "eng62_k2=0_k13=1_k25=1"); "" for a legacy algorithm',
]
Policy = Annotated[
    Annotated[str, OneOf(POLICY_NAMES)] | list[Annotated[int, Minimum(1)]],
    "micro-batch sizes a schedule may use: a policy name or a list of sizes",
]
_Axis = Annotated[
    str,
    "the axis the kernel is split along, given only where it is not the batch",
    OneOf(tuple(AXES)),
]
LimitBytes = Annotated[int, "the per-kernel limit (wr) or the total budget (wd), bytes"]
ComputeCapability = Annotated[str, '"major.minor", e.g. "9.0"']


class DeviceFacts(TypedDict):
    """the device and libraries the timings were measured with"""

    device_name: Annotated[str, "the device's name, as CUDA reports it"]
    compute_capability: ComputeCapability
    cudnn_version: Annotated[int, "cudnnGetVersion(), e.g. 92800 for 9.28.0"]
    cuda_version: Annotated[int, "cudaRuntimeGetVersion(), e.g. 13000 for 13.0"]


class _KernelAtBatch(TypedDict):
    """Which kernel, at which mini-batch: the first fields of a timings row and of a plan's
    kernel."""

    layer: Layer
    kernel: KernelName
    batch: Annotated[int, "the layer's mini-batch N", Minimum(1)]


class _Run(TypedDict):
    """A candidate's run but its engine, which rows of a timings document may lack."""

    micro_batch: Annotated[int, "samples in this run", Minimum(1)]
    algo: Annotated[
        int,
        "the cuDNN algorithm (the legacy API's enum value for the kernel), or the engine's "
        "global index where engine is set",
    ]
    time_ms: Annotated[float, "measured (or modelled) time of one run, milliseconds"]
    workspace_bytes: Annotated[int, "workspace the run needs, bytes"]
    math_type: Annotated[str, "the cuDNN math type it runs with", OneOf(MATH_TYPES)]
    deterministic: Annotated[bool, "whether the algorithm gives bit-identical results run to run"]


_Slab = Annotated[
    int,
    "planes of the outermost spatial axis (D, or H in 2D) per slab of the tensor the kernel's "
    "slabs cut (y, or dx for backward_data); given only where the run is cut into slabs",
    Minimum(1),
]


class Candidate(_Run):
    """one run of the kernel on some samples"""

    engine: _Engine
    slab: NotRequired[_Slab]  # absent: the whole volume


class Schedule(TypedDict):
    """a schedule: micro-batches run one after another"""

    micro_batches: Annotated[
        list[Annotated[int, "samples", Minimum(1)]],
        "each part's micro-batch, in the order they run",
    ]
    algos: Annotated[
        list[Annotated[int, "algorithm or engine index"]],
        "each part's algorithm, in the same order",
    ]
    engines: Annotated[list[_Engine], "each part's engine configuration, in the same order"]
    time_ms: Annotated[float, "the parts' times added up, milliseconds"]
    workspace_bytes: Annotated[int, "the largest part's workspace (they share one buffer), bytes"]
    slabs: NotRequired[
        Annotated[
            list[Annotated[int, "planes per slab, 0 for the whole volume"]],
            "each part's slab extent, in the same order; given only where a part is cut into slabs",
        ]
    ]


# -- ucudnn-timings (TimingTables.to_document; `bench` includes one) ------------------------
class TimingsRow(_KernelAtBatch, _Run):
    """one measured candidate of one kernel"""

    engine: NotRequired[_Engine]  # added within version 1: older rows lack it
    axis: NotRequired[_Axis]  # absent: the batch
    slab: NotRequired[_Slab]  # absent: the whole volume


class TimingsDocument(TypedDict):
    """measured candidates, one row each, as the timings CSV holds them"""

    format: Annotated[Literal["ucudnn-timings"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    rows: Annotated[list[TimingsRow], "the rows, kernel by kernel"]


# -- ucudnn-plan (Plan.to_dict, with "explain" from `plan --explain`) ------------------------
class _Relation(TypedDict):
    """The runner-up's first field, before its schedule, as documents hold it."""

    relation: Annotated[
        str, "faster or smaller than the chosen schedule", OneOf(("faster", "smaller"))
    ]


class RunnerUp(_Relation, Schedule):
    """the runner-up: the next faster schedule of the desirable set, or the next smaller one
    where the chosen schedule is the fastest"""

    workspace_delta_bytes: Annotated[
        int, "its workspace minus the chosen schedule's, bytes", SIGNED
    ]
    time_delta_ms: Annotated[
        float,
        "its time minus the chosen schedule's (negative: it is faster), milliseconds",
        SIGNED,
    ]


class ExplainedKernel(TypedDict):
    """why one kernel has its schedule"""

    layer: Layer
    kernel: KernelName
    chosen: Schedule
    baseline_time_ms: Annotated[
        float | None, "the baseline's time, milliseconds", NullMeans("no undivided run fits")
    ]
    time_saved_ms: Annotated[
        float | None,
        "the baseline's time minus the chosen schedule's (negative in WD where the kernel's "
        "bytes saved more elsewhere), milliseconds",
        SIGNED,
        NullMeans("no baseline"),
    ]
    desirable_set_size: Annotated[
        int,
        "schedules in the kernel's desirable set (the Pareto front of workspace and time) at "
        "any workspace",
        Minimum(1),
    ]
    desirable_within_limit: Annotated[
        int, "of them, those within the per-kernel limit (wr) or the total budget (wd)"
    ]
    runner_up: Annotated[RunnerUp | None, NullMeans("the set has no other schedule")]
    reason: Annotated[
        str,
        "why the runner-up was not taken: fastest (the chosen schedule is the fastest at any "
        "workspace), over_limit (wr: the faster one needs more than the limit), over_budget "
        "(wd: its extra workspace is more than the budget has left), not_taken (wd: it fits "
        "what is left, but the solver stopped at its time limit first)",
        OneOf(tuple(REASONS)),
    ]


class Explanation(TypedDict):
    """why each kernel has its schedule (plan --explain)"""

    time_saved_ms: Annotated[
        float | None,
        "the baselines' total time minus the plan's, milliseconds",
        SIGNED,
        NullMeans("a kernel has no baseline"),
    ]
    workspace_used_bytes: Annotated[int, "the plan's workspace (as totals.workspace_bytes)"]
    budget_left_bytes: Annotated[
        int | None,
        "the budget the aligned workspaces leave unused, bytes",
        NullMeans("wr plans"),
    ]
    fastest_time_ms: Annotated[
        float, "every kernel at the fastest schedule of its set: the total time, milliseconds"
    ]
    fastest_workspace_bytes: Annotated[
        int, "the workspace those need: the largest (wr), the aligned sum (wd), bytes"
    ]
    kernels: Annotated[list[ExplainedKernel], "one per kernel, in the plan's order"]


class AxisNamed(TypedDict):
    """A kernel's split axis, as plans and timings rows give it: only where it is not the batch."""

    axis: NotRequired[_Axis]  # absent: the batch


class PlannedKernel(_KernelAtBatch, AxisNamed, Schedule):
    """one kernel's schedule"""

    offset_bytes: Annotated[
        int | None,
        "where the kernel's workspace starts in the WD arena, bytes",
        NullMeans("wr plans"),
    ]
    speedup: Annotated[
        float | None,
        "baseline time over planned time",
        NullMeans(f"no baseline, a plan of no time, or {INFINITE_RATIO}"),
    ]
    parts: Annotated[list[Candidate], "the runs, in order; their micro-batches add up to batch"]
    baseline: Annotated[
        Candidate | None,
        "the baseline: the best undivided run under the same constraint",
        NullMeans("no undivided run fits"),
    ]


class PlanTotals(TypedDict):
    """the whole plan"""

    time_ms: Annotated[float, "the kernels' planned times added up, milliseconds"]
    workspace_bytes: Annotated[
        int, "the largest kernel workspace (wr) or the end of the arena (wd), bytes"
    ]
    baseline_time_ms: Annotated[
        float | None,
        "the baselines' times added up, milliseconds",
        NullMeans("a kernel has no baseline"),
    ]
    speedup: Annotated[
        float | None,
        "baseline time over planned time",
        NullMeans(f"no baseline total, a plan of no time, or {INFINITE_RATIO}"),
    ]


class PlanDocument(TypedDict):
    """a plan: the schedule of each kernel, with what it was made from (Plan.from_json reads
    it)"""

    format: Annotated[Literal["ucudnn-plan"], FORMAT_MEANING]
    version: Annotated[Literal[3], VERSION_MEANING]
    mode: Annotated[str, "wr: a workspace limit per kernel; wd: one budget for all", OneOf(MODES)]
    limit_bytes: LimitBytes
    policy: Policy
    deterministic_only: Annotated[bool, "whether only deterministic algorithms were allowed"]
    solver: Annotated[
        str,
        "dp: dynamic programming (wr; wd when its exact search decided), or the ILP solver "
        "(wd); none: the bounds alone proved the optimum",
        OneOf(("dp", *SOLVERS, "none")),
    ]
    solver_status: Annotated[
        str,
        "optimal, or feasible when the time limit stopped the solver",
        OneOf(("optimal", "feasible")),
    ]
    alignment_bytes: Annotated[
        int | None, "alignment of the arena offsets", Minimum(1), NullMeans("wr plans")
    ]
    device: Annotated[
        DeviceFacts | None, NullMeans("timings not measured on a device (a model, a file)")
    ]
    timings_source: Annotated[str, "where the timings came from, in words"]
    totals: PlanTotals
    kernels: Annotated[list[PlannedKernel], "one per kernel"]
    explain: NotRequired[Explanation]  # only with --explain


# -- the memory of a training step, in ucudnn-tune (planner.memory.StepMemory.to_dict) -------
class StepMemory(TypedDict):
    """the device memory of one training step, by part (each in bytes)"""

    weights_bytes: Annotated[int, "every layer's filters"]
    weight_gradients_bytes: Annotated[int, "their gradients"]
    activations_bytes: Annotated[int, "the activations kept for backward"]
    gradients_bytes: Annotated[int, "the activation gradients in flight at the peak"]
    overhead_bytes: Annotated[int, "the headroom (--framework-overhead) kept"]
    arena_bytes: Annotated[int, "the workspace arena of the plan"]
    total_bytes: Annotated[int, "all of them"]
