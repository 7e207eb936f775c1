"""The fields of the commands' `--json` documents, declared once: a TypedDict per object.

Each field is `Annotated` with what it means, and with `ucudnn.planner.field_notes` where its
type alone does not say enough. `ucudnn.faces.schemas` generates the published JSON Schemas
from these classes and `ucudnn.faces.outputs` builds documents of these types, so that mypy
catches a field renamed on one side only. The planner's own documents, which these include,
are in `ucudnn.planner.plan_formats`; the conventions in docs/design/json-documents.md.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from ucudnn.planner.choices import DEFAULT_OVERHEAD_TEXT
from ucudnn.planner.field_notes import SIGNED, Minimum, NullMeans, OneOf
from ucudnn.planner.plan_formats import (
    FORMAT_MEANING,
    INFINITE_RATIO,
    VERSION_MEANING,
    ComputeCapability,
    DeviceFacts,
    KernelName,
    Layer,
    LimitBytes,
    PlanDocument,
    Policy,
    StepMemory,
    TimingsDocument,
)
from ucudnn.planner.plan_types import MODES
from ucudnn.runtime.engines_setting import SOURCES as ENGINES_SOURCES

# The network a command loads, as it was given: its document repeats it (NetworkGiven).
_Network = Annotated[str, "the network as given: a built-in name or a layer-list CSV path"]
_NetworkBatch = Annotated[
    int | None, "the mini-batch asked for", Minimum(1), NullMeans("the network's own")
]
_Dtype = Annotated[str, "the data type of every layer"]
_Layout = Annotated[str | None, "the tensor layout asked for", NullMeans("channels first")]


class NetworkGiven(TypedDict):
    """The network arguments, as documents of the commands that take them hold them."""

    network: _Network
    batch: _NetworkBatch
    dtype: _Dtype
    layout: _Layout


# -- ucudnn-info ----------------------------------------------------------------------------
class Library(TypedDict):
    """a shared library as loaded"""

    name: Annotated[str, "which library: cuDNN or the CUDA runtime"]
    soname: Annotated[str, 'its soname, e.g. "libcudnn.so.9"']
    path: Annotated[str, "the file loaded"]
    found_by: Annotated[str, "the rule that found it, in words"]
    distribution: Annotated[
        str | None,
        "the pip distribution whose installed files hold it",
        NullMeans("no distribution does (a system library)"),
    ]


class Device(TypedDict):
    """a CUDA device"""

    index: Annotated[int, "its CUDA device index"]
    name: Annotated[str, "its name"]
    compute_capability: ComputeCapability
    total_memory_bytes: Annotated[int, "its memory, bytes"]
    multiprocessor_count: Annotated[int, "its streaming multiprocessors"]
    uuid: Annotated[str, '"GPU-…", as nvidia-smi prints it']
    pci_bus_id: Annotated[str, "its PCI bus id"]


class EnginesInEffect(TypedDict):
    """whether benchmarks measure cuDNN's graph-API engine configurations besides the legacy
    algorithms"""

    enabled: Annotated[bool, "whether they do"]
    source: Annotated[
        str,
        "where the setting comes from: default (on wherever engines can run: cuDNN >= 9.2 and "
        "heuristics that answer), environment (UCUDNN_ENGINES) or argument (--engines)",
        OneOf(ENGINES_SOURCES),
    ]
    reason: Annotated[
        str | None,
        "why they are off where they were wanted (by default or asked for)",
        NullMeans("they are on, or off as asked"),
    ]


class CacheFound(TypedDict):
    """the benchmark cache, as found (info creates and changes nothing)"""

    path: Annotated[str, "its path"]
    state: Annotated[
        str,
        "ready, absent (not created yet) or unusable",
        OneOf(("ready", "absent", "unusable")),
    ]
    problem: Annotated[str | None, "why it cannot be used", NullMeans("it can, or is absent")]
    measured_problem_sizes: Annotated[
        int | None,
        "(problem, kernel, micro-batch, device) keys measured",
        NullMeans("not ready"),
    ]
    rows: Annotated[int | None, "measurement rows, failures included", NullMeans("not ready")]
    file_bytes: Annotated[int | None, "the database file's size, bytes", NullMeans("not ready")]


class InfoDocument(TypedDict):
    """what `ucudnn info` finds: versions, libraries, devices, settings, the benchmark cache"""

    format: Annotated[Literal["ucudnn-info"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    ucudnn_version: Annotated[str, "this library's version"]
    distribution: Annotated[str, "the pip distribution: ucudnn-cu13 or ucudnn-cu12"]
    native_loaded: Annotated[bool, "whether the native modules (and so cuDNN) loaded"]
    cudnn_version: Annotated[
        str | None, "the cuDNN loaded, major.minor.patch", NullMeans("not loaded")
    ]
    cudnn_build_version: Annotated[
        str | None, "the cuDNN it was built against, major.minor.patch", NullMeans("not loaded")
    ]
    cuda_runtime_version: Annotated[
        str | None, "the CUDA runtime loaded, major.minor", NullMeans("not loaded")
    ]
    cuda_driver_version: Annotated[
        str | None,
        "the CUDA version the NVIDIA driver supports, major.minor",
        NullMeans("no driver, or not loaded"),
    ]
    libraries: Annotated[list[Library], "the libraries the native modules loaded"]
    devices: Annotated[list[Device], "the visible CUDA devices"]
    unusable_reason: Annotated[str | None, "why no device can be used", NullMeans("one can")]
    configuration_problems: Annotated[
        list[Annotated[str, "a UCUDNN_* variable with a bad value, and what it accepts"]],
        "the bad settings (the commands refuse them; info reports them)",
    ]
    engines: EnginesInEffect
    cache: CacheFound


# -- ucudnn-bench ---------------------------------------------------------------------------
class BenchDocument(TypedDict):
    """what `ucudnn bench` measured into the cache"""

    format: Annotated[Literal["ucudnn-bench"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    network: _Network
    batch: _NetworkBatch
    dtype: _Dtype
    layout: _Layout
    policy: Policy
    kernels: Annotated[int, "kernels benchmarked"]
    problem_sizes_measured: Annotated[int, "(problem, kernel, micro-batch) sets measured now"]
    problem_sizes_cached: Annotated[int, "those served from the cache instead"]
    elapsed_s: Annotated[float, "the benchmarking's wall time, seconds"]
    export_path: Annotated[
        str | None, "the timings CSV written (--export)", NullMeans("none written")
    ]
    device: DeviceFacts
    timings: TimingsDocument


# -- ucudnn-run -----------------------------------------------------------------------------
_NO_BASELINE_RUN = "no undivided run fits"


class TimedKernel(TypedDict):
    """one kernel, timed"""

    layer: Layer
    kernel: KernelName
    predicted_ms: Annotated[float, "the plan's time from its benchmarks, milliseconds"]
    measured_ms: Annotated[float, "the plan's time measured end to end, milliseconds"]
    baseline_predicted_ms: Annotated[
        float | None,
        "the baseline's benchmarked time, milliseconds",
        NullMeans(_NO_BASELINE_RUN),
    ]
    baseline_measured_ms: Annotated[
        float | None, "the baseline's measured time, milliseconds", NullMeans(_NO_BASELINE_RUN)
    ]
    speedup: Annotated[
        float | None,
        "measured baseline time over measured plan time",
        NullMeans(f"{_NO_BASELINE_RUN}, a plan of no time, or {INFINITE_RATIO}"),
    ]


class TimedTotals(TypedDict):
    """the kernels added up"""

    predicted_ms: Annotated[float, "milliseconds"]
    measured_ms: Annotated[float, "milliseconds"]
    baseline_measured_ms: Annotated[float | None, "milliseconds", NullMeans("a kernel has none")]
    speedup: Annotated[
        float | None,
        "measured baseline total over measured plan total",
        NullMeans(f"no baseline total, a plan of no time, or {INFINITE_RATIO}"),
    ]
    prediction_error: Annotated[
        float | None,
        "(predicted - measured) / measured, a fraction",
        SIGNED,
        NullMeans(f"nothing measured, or {INFINITE_RATIO}"),
    ]


class KernelCheck(TypedDict):
    """one kernel's comparison"""

    layer: Layer
    kernel: KernelName
    normalised_l2_distance: Annotated[float, "||planned - undivided|| / ||undivided||"]
    bound: Annotated[float, "the largest distance allowed"]
    within_bound: Annotated[bool, "distance <= bound"]


class Comparison(TypedDict):
    """the comparison with undivided runs (--check)"""

    passed: Annotated[bool, "whether every kernel is within its bound"]
    results: Annotated[list[KernelCheck], "one per kernel"]


class RunDocument(TypedDict):
    """what `ucudnn run` measured: the plan's kernels and their baselines, timed on the device"""

    format: Annotated[Literal["ucudnn-run"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    network: _Network
    batch: _NetworkBatch
    dtype: _Dtype
    layout: _Layout
    mode: Annotated[str, "wr or wd", OneOf(MODES)]
    limit_bytes: LimitBytes
    policy: Policy
    repeats: Annotated[int, "timed runs per kernel; times are their median", Minimum(1)]
    kernels: Annotated[list[TimedKernel], "one per kernel"]
    totals: TimedTotals
    check: Annotated[Comparison | None, NullMeans("not asked for")]
    plan: PlanDocument


# -- ucudnn-plot ----------------------------------------------------------------------------
class PlotFile(TypedDict):
    """one PNG file"""

    kind: Annotated[
        str,
        "what it shows: a layer's desirable sets, or the plan per kernel",
        OneOf(("desirable_sets", "breakdown")),
    ]
    path: Annotated[str, "where it was written"]


class PlotDocument(TypedDict):
    """the PNG files `ucudnn plot` wrote"""

    format: Annotated[Literal["ucudnn-plot"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    layer: Annotated[str, "the layer whose desirable sets are plotted"]
    files: Annotated[list[PlotFile], "the files written"]


# -- ucudnn-demo ----------------------------------------------------------------------------
_Extent = Annotated[int, "extent"]


class NumpyCheck(TypedDict):
    """ucudnn.conv_forward on numpy arrays, micro-batched against undivided"""

    x_shape: Annotated[list[_Extent], "the input's shape"]
    w_shape: Annotated[list[_Extent], "the filter's shape"]
    y_shape: Annotated[list[_Extent], "the output's shape"]
    normalised_l2_distance: Annotated[float, "||micro-batched - undivided|| / ||undivided||"]


class ModelPlans(TypedDict):
    """plans from the built-in cost model (not measurements)"""

    wr: PlanDocument
    wd: PlanDocument


class DemoDocument(TypedDict):
    """the main job: on a GPU, a checked numpy convolution and a measured run of a network;
    without one, its WR and WD plans from the cost model"""

    format: Annotated[Literal["ucudnn-demo"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    network: Annotated[str, "the network demonstrated on"]
    batch: Annotated[int, "its mini-batch", Minimum(1)]
    workspace_limit_bytes: Annotated[
        int, "the per-kernel limit; the WD budget is this times the number of kernels"
    ]
    info: InfoDocument
    gpu: Annotated[bool, "whether a usable GPU was there: which of the next fields are set"]
    numpy_check: Annotated[NumpyCheck | None, NullMeans("no GPU")]
    run: Annotated[RunDocument | None, NullMeans("no GPU")]
    model_plans: Annotated[
        ModelPlans | None, NullMeans("a GPU was there, so the demo measured and ran instead")
    ]


# -- ucudnn-tune ----------------------------------------------------------------------------
class MemoryModel(TypedDict):
    """the parts of the model that do not depend on the plan"""

    weights_bytes: Annotated[int, "every layer's filters (their gradients as much)"]
    activations_per_sample_bytes: Annotated[int, "activations kept, per sample"]
    gradients_per_sample_bytes: Annotated[int, "gradients in flight, per sample"]
    overhead_bytes: Annotated[
        int,
        "the fixed part of the headroom applied (--framework-overhead, by default "
        f"{DEFAULT_OVERHEAD_TEXT})",
    ]
    overhead_per_sample_fraction: Annotated[
        float, "the headroom per sample, a fraction of the modelled per-sample memory"
    ]


class TunePoint(TypedDict):
    """one batch size tried"""

    batch: Annotated[int, "the mini-batch", Minimum(1)]
    status: Annotated[
        str,
        "fits; over_memory: even the smallest workspace does not fit; unplannable: the "
        "timings' micro-batches cannot make it up",
        OneOf(("fits", "over_memory", "unplannable")),
    ]
    measured_undivided: Annotated[
        bool,
        "whether the timings (measured or modelled: see timings_source) hold every kernel "
        "undivided at this batch; if not, it is planned from smaller micro-batches only",
    ]
    time_ms: Annotated[
        float | None, "its plan's convolution time, milliseconds", NullMeans("does not fit")
    ]
    samples_per_s: Annotated[
        float | None,
        "batch over time",
        NullMeans(f"does not fit, takes no time, or {INFINITE_RATIO}"),
    ]
    memory: Annotated[StepMemory | None, NullMeans("does not fit")]
    minimum_memory: StepMemory


class TuneDocument(TypedDict):
    """the mini-batch size that trains fastest within a memory size, its WD plan, and the
    curve of every batch size tried (ucudnn.planner.tune, ucudnn.planner.memory)"""

    format: Annotated[Literal["ucudnn-tune"], FORMAT_MEANING]
    version: Annotated[Literal[1], VERSION_MEANING]
    network: _Network
    dtype: _Dtype
    layout: _Layout
    batch: Annotated[
        int, "the chosen mini-batch: the most samples per second that fits", Minimum(1)
    ]
    samples_per_s: Annotated[
        float | None,
        "its samples per second over the step's convolutions",
        NullMeans(f"no time at all, or {INFINITE_RATIO}"),
    ]
    time_ms: Annotated[float, "its step's predicted convolution time, milliseconds"]
    memory_bytes: Annotated[int, "the device memory given for the whole step"]
    table_batch: Annotated[
        int, "the mini-batch the timings were measured or modelled at", Minimum(1)
    ]
    timings_source: Annotated[
        str,
        "where the timings come from, as the plan's timings_source: measurements on a device, "
        "MODEL timings, or a timings file",
    ]
    memory_model: MemoryModel
    curve: Annotated[list[TunePoint], "batch ascending"]
    plan: PlanDocument
    plot_path: Annotated[str | None, "the PNG written (--plot)", NullMeans("none written")]
