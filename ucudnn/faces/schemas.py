"""The JSON documents of `ucudnn COMMAND --json`: each format's fields, types and meaning.

This module is the one description of them. Every document is an object whose "format" names
it and whose integer "version" says which revision of its fields it has. Numbers are JSON
numbers, with the unit in the field's name (`_bytes`, `_ms`, `_s`); ratios and counts have none.
null stands for a value that is unknown or does not apply; and, as JSON has no infinity, for a
ratio too large for any number (a speed-up over a time too small to divide by). A version is
raised whenever a field changes its meaning or type, or goes away; readers should ignore fields
they do not know, as a field may be added without raising it.

`SCHEMAS` holds each format's schema as JSON Schema (draft 2020-12, a subset: type, enum,
const, minimum, properties, required, additionalProperties, items, anyOf, description), so any
JSON Schema validator can check a document against `json_schema(format)`; `validate` checks
one here without any.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

from ucudnn.core.checks import shown
from ucudnn.core.problem import KERNELS, MATH_TYPES
from ucudnn.planner import plan as plan_module, tables as tables_module
from ucudnn.planner.choices import DEFAULT_OVERHEAD_TEXT, SOLVERS
from ucudnn.planner.explain import REASONS
from ucudnn.runtime.engines_setting import SOURCES as ENGINES_SOURCES

Schema = dict[str, object]

DRAFT = "https://json-schema.org/draft/2020-12/schema"


# -- building blocks ----------------------------------------------------------------------
def _text(description: str, enum: Sequence[str] | None = None) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = list(enum)
    return schema


def _integer(description: str, minimum: int | None = 0) -> Schema:
    schema: Schema = {"type": "integer", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


def _number(description: str, minimum: float | None = 0) -> Schema:
    schema: Schema = {"type": "number", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


def _flag(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def _list(items: Schema, description: str) -> Schema:
    return {"type": "array", "items": items, "description": description}


def _object(description: str, fields: Mapping[str, Schema], optional: Sequence[str] = ()) -> Schema:
    """An object with exactly these fields, all of them present but the `optional` ones."""
    return {
        "type": "object",
        "description": description,
        "properties": dict(fields),
        "required": [name for name in fields if name not in optional],
        "additionalProperties": False,
    }


def _or_null(schema: Schema, meaning: str) -> Schema:
    """`schema`, or null, which means `meaning`."""
    inner = {key: value for key, value in schema.items() if key != "description"}
    return {
        "anyOf": [inner, {"type": "null"}],
        "description": f"{schema['description']}; null: {meaning}",
    }


def _document(
    name: str,
    version: int,
    description: str,
    fields: Mapping[str, Schema],
    optional: Sequence[str] = (),
) -> Schema:
    header: dict[str, Schema] = {
        "format": {"const": name, "description": "which document this is"},
        "version": {"const": version, "description": "the revision of its fields"},
    }
    return _object(description, {**header, **fields}, optional)


# -- parts shared by several documents ----------------------------------------------------
# What null means of a ratio besides: planner.documents.document_text writes infinity so.
_INFINITE = "a ratio too large for a JSON number (over a time too small to divide by)"
_POLICY: Schema = {
    "anyOf": [
        {"type": "string", "enum": ["undivided", "powerOfTwo", "all"]},
        {"type": "array", "items": {"type": "integer", "minimum": 1}},
    ],
    "description": "micro-batch sizes a schedule may use: a policy name or a list of sizes",
}
_LAYER = _text("the layer's name")
_KERNEL = _text("which convolution of the layer", KERNELS)
_DEVICE_FACTS = _object(
    "the device and libraries the timings were measured with",
    {
        "device_name": _text("the device's name, as CUDA reports it"),
        "compute_capability": _text('"major.minor", e.g. "9.0"'),
        "cudnn_version": _integer("cudnnGetVersion(), e.g. 92800 for 9.28.0"),
        "cuda_version": _integer("cudaRuntimeGetVersion(), e.g. 13000 for 13.0"),
    },
)
_ENGINE = _text(
    "the cuDNN graph-API engine configuration's tag, eng<index> then _k<knob>=<value> per "
    'knob sorted by knob (e.g. "eng62_k2=0_k13=1_k25=1"); "" for a legacy algorithm'
)
_CANDIDATE_FIELDS = {
    "micro_batch": _integer("samples in this run", minimum=1),
    "algo": _integer(
        "the cuDNN algorithm (the legacy API's enum value for the kernel), or the engine's "
        "global index where engine is set"
    ),
    "time_ms": _number("measured (or modelled) time of one run, milliseconds"),
    "workspace_bytes": _integer("workspace the run needs, bytes"),
    "math_type": _text("the cuDNN math type it runs with", MATH_TYPES),
    "deterministic": _flag("whether the algorithm gives bit-identical results run to run"),
    "engine": _ENGINE,
}
_CANDIDATE = _object("one run of the kernel on some samples", _CANDIDATE_FIELDS)
_SCHEDULE_FIELDS = {
    "micro_batches": _list(
        _integer("samples", minimum=1), "each part's micro-batch, in the order they run"
    ),
    "algos": _list(
        _integer("algorithm or engine index"), "each part's algorithm, in the same order"
    ),
    "engines": _list(_ENGINE, "each part's engine configuration, in the same order"),
    "time_ms": _number("the parts' times added up, milliseconds"),
    "workspace_bytes": _integer("the largest part's workspace (they share one buffer), bytes"),
}
_SCHEDULE = _object("a schedule: micro-batches run one after another", _SCHEDULE_FIELDS)

# -- ucudnn-timings (TimingTables.to_json; `bench` includes one) ----------------------------
TIMINGS = _document(
    tables_module.JSON_FORMAT,
    tables_module.JSON_VERSION,
    "measured candidates, one row each, as the timings CSV holds them",
    {
        "rows": _list(
            _object(
                "one measured candidate of one kernel",
                {
                    "layer": _LAYER,
                    "kernel": _KERNEL,
                    "batch": _integer("the layer's mini-batch N", minimum=1),
                    **_CANDIDATE_FIELDS,
                },
                optional=("engine",),  # added within version 1: older rows lack it
            ),
            "the rows, kernel by kernel",
        )
    },
)

# -- ucudnn-plan (Plan.to_dict, with "explain" from `plan --explain`) ------------------------
_RUNNER_UP = _object(
    "the runner-up: the next faster schedule of the desirable set, or the next smaller one "
    "where the chosen schedule is the fastest",
    {
        "relation": _text("faster or smaller than the chosen schedule", ("faster", "smaller")),
        **_SCHEDULE_FIELDS,
        "workspace_delta_bytes": _integer(
            "its workspace minus the chosen schedule's, bytes", minimum=None
        ),
        "time_delta_ms": _number(
            "its time minus the chosen schedule's (negative: it is faster), milliseconds",
            minimum=None,
        ),
    },
)
_EXPLAINED_KERNEL = _object(
    "why one kernel has its schedule",
    {
        "layer": _LAYER,
        "kernel": _KERNEL,
        "chosen": _SCHEDULE,
        "baseline_time_ms": _or_null(
            _number("the baseline's time, milliseconds"), "no undivided run fits"
        ),
        "time_saved_ms": _or_null(
            _number(
                "the baseline's time minus the chosen schedule's (negative in WD where the "
                "kernel's bytes saved more elsewhere), milliseconds",
                minimum=None,
            ),
            "no baseline",
        ),
        "desirable_set_size": _integer(
            "schedules in the kernel's desirable set (the Pareto front of workspace and time) "
            "at any workspace",
            minimum=1,
        ),
        "desirable_within_limit": _integer(
            "of them, those within the per-kernel limit (wr) or the total budget (wd)"
        ),
        "runner_up": _or_null(_RUNNER_UP, "the set has no other schedule"),
        "reason": _text(
            "why the runner-up was not taken: fastest (the chosen schedule is the fastest at "
            "any workspace), over_limit (wr: the faster one needs more than the limit), "
            "over_budget (wd: its extra workspace is more than the budget has left), not_taken "
            "(wd: it fits what is left, but the solver stopped at its time limit first)",
            tuple(REASONS),
        ),
    },
)
_EXPLAIN = _object(
    "why each kernel has its schedule (plan --explain)",
    {
        "time_saved_ms": _or_null(
            _number("the baselines' total time minus the plan's, milliseconds", minimum=None),
            "a kernel has no baseline",
        ),
        "workspace_used_bytes": _integer("the plan's workspace (as totals.workspace_bytes)"),
        "budget_left_bytes": _or_null(
            _integer("the budget the aligned workspaces leave unused, bytes"), "wr plans"
        ),
        "fastest_time_ms": _number(
            "every kernel at the fastest schedule of its set: the total time, milliseconds"
        ),
        "fastest_workspace_bytes": _integer(
            "the workspace those need: the largest (wr), the aligned sum (wd), bytes"
        ),
        "kernels": _list(_EXPLAINED_KERNEL, "one per kernel, in the plan's order"),
    },
)
_PLANNED_KERNEL = _object(
    "one kernel's schedule",
    {
        "layer": _LAYER,
        "kernel": _KERNEL,
        "batch": _integer("the layer's mini-batch N", minimum=1),
        **_SCHEDULE_FIELDS,
        "offset_bytes": _or_null(
            _integer("where the kernel's workspace starts in the WD arena, bytes"), "wr plans"
        ),
        "speedup": _or_null(
            _number("baseline time over planned time"),
            f"no baseline, a plan of no time, or {_INFINITE}",
        ),
        "parts": _list(_CANDIDATE, "the runs, in order; their micro-batches add up to batch"),
        "baseline": _or_null(
            _object(
                "the baseline: the best undivided run under the same constraint",
                _CANDIDATE_FIELDS,
            ),
            "no undivided run fits",
        ),
    },
)
PLAN = _document(
    plan_module.JSON_FORMAT,
    plan_module.JSON_VERSION,
    "a plan: the schedule of each kernel, with what it was made from (Plan.from_json reads it)",
    {
        "mode": _text("wr: a workspace limit per kernel; wd: one budget for all", ("wr", "wd")),
        "limit_bytes": _integer("the per-kernel limit (wr) or the total budget (wd), bytes"),
        "policy": _POLICY,
        "deterministic_only": _flag("whether only deterministic algorithms were allowed"),
        "solver": _text(
            "dp: dynamic programming (wr; wd when its exact search decided), or the ILP solver "
            "(wd); none: the bounds alone proved the optimum",
            ("dp", *SOLVERS, "none"),
        ),
        "solver_status": _text(
            "optimal, or feasible when the time limit stopped the solver", ("optimal", "feasible")
        ),
        "alignment_bytes": _or_null(_integer("alignment of the arena offsets", 1), "wr plans"),
        "device": _or_null(_DEVICE_FACTS, "timings not measured on a device (a model, a file)"),
        "timings_source": _text("where the timings came from, in words"),
        "totals": _object(
            "the whole plan",
            {
                "time_ms": _number("the kernels' planned times added up, milliseconds"),
                "workspace_bytes": _integer(
                    "the largest kernel workspace (wr) or the end of the arena (wd), bytes"
                ),
                "baseline_time_ms": _or_null(
                    _number("the baselines' times added up, milliseconds"),
                    "a kernel has no baseline",
                ),
                "speedup": _or_null(
                    _number("baseline time over planned time"),
                    f"no baseline total, a plan of no time, or {_INFINITE}",
                ),
            },
        ),
        "kernels": _list(_PLANNED_KERNEL, "one per kernel"),
        "explain": _EXPLAIN,
    },
    optional=("explain",),  # only with --explain
)

# -- ucudnn-info ----------------------------------------------------------------------------
_VERSION_TEXT = "major.minor.patch"
INFO = _document(
    "ucudnn-info",
    1,
    "what `ucudnn info` finds: versions, libraries, devices, settings, the benchmark cache",
    {
        "ucudnn_version": _text("this library's version"),
        "distribution": _text("the pip distribution: ucudnn-cu13 or ucudnn-cu12"),
        "native_loaded": _flag("whether the native modules (and so cuDNN) loaded"),
        "cudnn_version": _or_null(_text(f"the cuDNN loaded, {_VERSION_TEXT}"), "not loaded"),
        "cudnn_build_version": _or_null(
            _text(f"the cuDNN it was built against, {_VERSION_TEXT}"), "not loaded"
        ),
        "cuda_runtime_version": _or_null(
            _text("the CUDA runtime loaded, major.minor"), "not loaded"
        ),
        "cuda_driver_version": _or_null(
            _text("the CUDA version the NVIDIA driver supports, major.minor"),
            "no driver, or not loaded",
        ),
        "libraries": _list(
            _object(
                "a shared library as loaded",
                {
                    "name": _text("which library: cuDNN or the CUDA runtime"),
                    "soname": _text('its soname, e.g. "libcudnn.so.9"'),
                    "path": _text("the file loaded"),
                    "found_by": _text("the rule that found it, in words"),
                    "distribution": _or_null(
                        _text("the pip distribution whose installed files hold it"),
                        "no distribution does (a system library)",
                    ),
                },
            ),
            "the libraries the native modules loaded",
        ),
        "devices": _list(
            _object(
                "a CUDA device",
                {
                    "index": _integer("its CUDA device index"),
                    "name": _text("its name"),
                    "compute_capability": _text('"major.minor", e.g. "9.0"'),
                    "total_memory_bytes": _integer("its memory, bytes"),
                    "multiprocessor_count": _integer("its streaming multiprocessors"),
                    "uuid": _text('"GPU-…", as nvidia-smi prints it'),
                    "pci_bus_id": _text("its PCI bus id"),
                },
            ),
            "the visible CUDA devices",
        ),
        "unusable_reason": _or_null(_text("why no device can be used"), "one can"),
        "configuration_problems": _list(
            _text("a UCUDNN_* variable with a bad value, and what it accepts"),
            "the bad settings (the commands refuse them; info reports them)",
        ),
        "engines": _object(
            "whether benchmarks measure cuDNN's graph-API engine configurations besides the "
            "legacy algorithms",
            {
                "enabled": _flag("whether they do"),
                "source": _text(
                    "where the setting comes from: default (on wherever engines can run: "
                    "cuDNN >= 9.2 and heuristics that answer), environment (UCUDNN_ENGINES) "
                    "or argument (--engines)",
                    ENGINES_SOURCES,
                ),
                "reason": _or_null(
                    _text("why they are off where they were wanted (by default or asked for)"),
                    "they are on, or off as asked",
                ),
            },
        ),
        "cache": _object(
            "the benchmark cache, as found (info creates and changes nothing)",
            {
                "path": _text("its path"),
                "state": _text(
                    "ready, absent (not created yet) or unusable", ("ready", "absent", "unusable")
                ),
                "problem": _or_null(_text("why it cannot be used"), "it can, or is absent"),
                "measured_problem_sizes": _or_null(
                    _integer("(problem, kernel, micro-batch, device) keys measured"), "not ready"
                ),
                "rows": _or_null(_integer("measurement rows, failures included"), "not ready"),
                "file_bytes": _or_null(_integer("the database file's size, bytes"), "not ready"),
            },
        ),
    },
)

# -- ucudnn-bench ---------------------------------------------------------------------------
_NETWORK_FIELDS = {
    "network": _text("the network as given: a built-in name or a layer-list CSV path"),
    "batch": _or_null(_integer("the mini-batch asked for", minimum=1), "the network's own"),
    "dtype": _text("the data type of every layer"),
    "layout": _or_null(_text("the tensor layout asked for"), "channels first"),
}
BENCH = _document(
    "ucudnn-bench",
    1,
    "what `ucudnn bench` measured into the cache",
    {
        **_NETWORK_FIELDS,
        "policy": _POLICY,
        "kernels": _integer("kernels benchmarked"),
        "problem_sizes_measured": _integer("(problem, kernel, micro-batch) sets measured now"),
        "problem_sizes_cached": _integer("those served from the cache instead"),
        "elapsed_s": _number("the benchmarking's wall time, seconds"),
        "export_path": _or_null(_text("the timings CSV written (--export)"), "none written"),
        "device": _DEVICE_FACTS,
        "timings": TIMINGS,
    },
)

# -- ucudnn-run -----------------------------------------------------------------------------
_MS_OR_NULL = "no undivided run fits"
RUN = _document(
    "ucudnn-run",
    1,
    "what `ucudnn run` measured: the plan's kernels and their baselines, timed on the device",
    {
        **_NETWORK_FIELDS,
        "mode": _text("wr or wd", ("wr", "wd")),
        "limit_bytes": _integer("the per-kernel limit (wr) or the total budget (wd), bytes"),
        "policy": _POLICY,
        "repeats": _integer("timed runs per kernel; times are their median", minimum=1),
        "kernels": _list(
            _object(
                "one kernel, timed",
                {
                    "layer": _LAYER,
                    "kernel": _KERNEL,
                    "predicted_ms": _number("the plan's time from its benchmarks, milliseconds"),
                    "measured_ms": _number("the plan's time measured end to end, milliseconds"),
                    "baseline_predicted_ms": _or_null(
                        _number("the baseline's benchmarked time, milliseconds"), _MS_OR_NULL
                    ),
                    "baseline_measured_ms": _or_null(
                        _number("the baseline's measured time, milliseconds"), _MS_OR_NULL
                    ),
                    "speedup": _or_null(
                        _number("measured baseline time over measured plan time"),
                        f"{_MS_OR_NULL}, a plan of no time, or {_INFINITE}",
                    ),
                },
            ),
            "one per kernel",
        ),
        "totals": _object(
            "the kernels added up",
            {
                "predicted_ms": _number("milliseconds"),
                "measured_ms": _number("milliseconds"),
                "baseline_measured_ms": _or_null(_number("milliseconds"), "a kernel has none"),
                "speedup": _or_null(
                    _number("measured baseline total over measured plan total"),
                    f"no baseline total, a plan of no time, or {_INFINITE}",
                ),
                "prediction_error": _or_null(
                    _number("(predicted - measured) / measured, a fraction", minimum=None),
                    f"nothing measured, or {_INFINITE}",
                ),
            },
        ),
        "check": _or_null(
            _object(
                "the comparison with undivided runs (--check)",
                {
                    "passed": _flag("whether every kernel is within its bound"),
                    "results": _list(
                        _object(
                            "one kernel's comparison",
                            {
                                "layer": _LAYER,
                                "kernel": _KERNEL,
                                "normalised_l2_distance": _number(
                                    "||planned - undivided|| / ||undivided||"
                                ),
                                "bound": _number("the largest distance allowed"),
                                "within_bound": _flag("distance <= bound"),
                            },
                        ),
                        "one per kernel",
                    ),
                },
            ),
            "not asked for",
        ),
        "plan": PLAN,
    },
)

# -- ucudnn-plot ----------------------------------------------------------------------------
PLOT = _document(
    "ucudnn-plot",
    1,
    "the PNG files `ucudnn plot` wrote",
    {
        "layer": _text("the layer whose desirable sets are plotted"),
        "files": _list(
            _object(
                "one PNG file",
                {
                    "kind": _text(
                        "what it shows: a layer's desirable sets, or the plan per kernel",
                        ("desirable_sets", "breakdown"),
                    ),
                    "path": _text("where it was written"),
                },
            ),
            "the files written",
        ),
    },
)

# -- ucudnn-demo ----------------------------------------------------------------------------
DEMO = _document(
    "ucudnn-demo",
    1,
    "the main job: on a GPU, a checked numpy convolution and a measured run of a network; "
    "without one, its WR and WD plans from the cost model",
    {
        "network": _text("the network demonstrated on"),
        "batch": _integer("its mini-batch", minimum=1),
        "workspace_limit_bytes": _integer(
            "the per-kernel limit; the WD budget is this times the number of kernels"
        ),
        "info": INFO,
        "gpu": _flag("whether a usable GPU was there: which of the next fields are set"),
        "numpy_check": _or_null(
            _object(
                "ucudnn.conv_forward on numpy arrays, micro-batched against undivided",
                {
                    "x_shape": _list(_integer("extent"), "the input's shape"),
                    "w_shape": _list(_integer("extent"), "the filter's shape"),
                    "y_shape": _list(_integer("extent"), "the output's shape"),
                    "normalised_l2_distance": _number(
                        "||micro-batched - undivided|| / ||undivided||"
                    ),
                },
            ),
            "no GPU",
        ),
        "run": _or_null(RUN, "no GPU"),
        "model_plans": _or_null(
            _object(
                "plans from the built-in cost model (not measurements)",
                {"wr": PLAN, "wd": PLAN},
            ),
            "a GPU was there, so the demo measured and ran instead",
        ),
    },
)


# -- ucudnn-tune ----------------------------------------------------------------------------
_STEP_MEMORY = _object(
    "the device memory of one training step, by part (each in bytes)",
    {
        "weights_bytes": _integer("every layer's filters"),
        "weight_gradients_bytes": _integer("their gradients"),
        "activations_bytes": _integer("the activations kept for backward"),
        "gradients_bytes": _integer("the activation gradients in flight at the peak"),
        "overhead_bytes": _integer("the headroom (--framework-overhead) kept"),
        "arena_bytes": _integer("the workspace arena of the plan"),
        "total_bytes": _integer("all of them"),
    },
)
_TUNE_STATUS = ("fits", "over_memory", "unplannable")
TUNE = _document(
    "ucudnn-tune",
    1,
    "the mini-batch size that trains fastest within a memory size, its WD plan, and the curve "
    "of every batch size tried (ucudnn.planner.tune, ucudnn.planner.memory)",
    {
        "network": _NETWORK_FIELDS["network"],
        "dtype": _NETWORK_FIELDS["dtype"],
        "layout": _NETWORK_FIELDS["layout"],
        "batch": _integer("the chosen mini-batch: the most samples per second that fits", 1),
        "samples_per_s": _or_null(
            _number("its samples per second over the step's convolutions"),
            f"no time at all, or {_INFINITE}",
        ),
        "time_ms": _number("its step's predicted convolution time, milliseconds"),
        "memory_bytes": _integer("the device memory given for the whole step"),
        "table_batch": _integer("the mini-batch the timings were measured or modelled at", 1),
        "timings_source": _text(
            "where the timings come from, as the plan's timings_source: measurements on a "
            "device, MODEL timings, or a timings file"
        ),
        "memory_model": _object(
            "the parts of the model that do not depend on the plan",
            {
                "weights_bytes": _integer("every layer's filters (their gradients as much)"),
                "activations_per_sample_bytes": _integer("activations kept, per sample"),
                "gradients_per_sample_bytes": _integer("gradients in flight, per sample"),
                "overhead_bytes": _integer(
                    "the fixed part of the headroom applied (--framework-overhead, by default "
                    f"{DEFAULT_OVERHEAD_TEXT})"
                ),
                "overhead_per_sample_fraction": _number(
                    "the headroom per sample, a fraction of the modelled per-sample memory"
                ),
            },
        ),
        "curve": _list(
            _object(
                "one batch size tried",
                {
                    "batch": _integer("the mini-batch", 1),
                    "status": _text(
                        "fits; over_memory: even the smallest workspace does not fit; "
                        "unplannable: the timings' micro-batches cannot make it up",
                        _TUNE_STATUS,
                    ),
                    "measured_undivided": _flag(
                        "whether the timings (measured or modelled: see timings_source) hold "
                        "every kernel undivided at this batch; if not, it is planned from "
                        "smaller micro-batches only"
                    ),
                    "time_ms": _or_null(
                        _number("its plan's convolution time, milliseconds"), "does not fit"
                    ),
                    "samples_per_s": _or_null(
                        _number("batch over time"),
                        f"does not fit, takes no time, or {_INFINITE}",
                    ),
                    "memory": _or_null(_STEP_MEMORY, "does not fit"),
                    "minimum_memory": _STEP_MEMORY,
                },
            ),
            "batch ascending",
        ),
        "plan": PLAN,
        "plot_path": _or_null(_text("the PNG written (--plot)"), "none written"),
    },
)


# -- the formats, and checking a document against its own -----------------------------------
def _const(schema: Schema, field: str) -> object:
    properties = cast(dict[str, Schema], schema["properties"])
    return properties[field]["const"]


SCHEMAS: dict[str, Schema] = {
    str(_const(schema, "format")): schema
    for schema in (INFO, BENCH, PLAN, RUN, PLOT, DEMO, TUNE, TIMINGS)
}
VERSIONS = {name: cast(int, _const(schema, "version")) for name, schema in SCHEMAS.items()}


def header(name: str) -> dict[str, object]:
    """The first two fields of a `name` document."""
    return {"format": name, "version": VERSIONS[name]}


def json_schema(name: str) -> Schema:
    """The JSON Schema of the `name` format, for any JSON Schema validator."""
    return {"$schema": DRAFT, "title": name, **SCHEMAS[name]}


class SchemaError(ValueError):
    """A document does not match its format's schema; the message says where ("$.kernels[2]")."""


def validate(document: object) -> None:
    """Check `document` against the schema of the format and version it names."""
    if not isinstance(document, dict) or document.get("format") not in SCHEMAS:
        raise SchemaError(f"$: not a document of one of the formats {', '.join(SCHEMAS)}")
    _check(document, SCHEMAS[document["format"]], "$")


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _check(value: object, schema: Schema, path: str) -> None:
    if "anyOf" in schema:
        failures = []
        for option in schema["anyOf"]:  # type: ignore[attr-defined]
            try:
                return _check(value, option, path)
            except SchemaError as exc:
                failures.append(str(exc))
        raise SchemaError(" and ".join(failures))
    if "const" in schema and (type(value), value) != (type(schema["const"]), schema["const"]):
        raise SchemaError(f"{path}: must be {schema['const']!r}, got {shown(value)}")
    if "enum" in schema and value not in schema["enum"]:  # type: ignore[operator]
        raise SchemaError(f"{path}: must be one of {schema['enum']}, got {shown(value)}")
    kind = schema.get("type")
    if kind is not None:
        _check_type(value, str(kind), path)
    if "minimum" in schema and value < schema["minimum"]:  # type: ignore[operator]
        raise SchemaError(f"{path}: must be >= {schema['minimum']}, got {shown(value)}")
    if isinstance(value, list):
        for n, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{n}]")  # type: ignore[arg-type]
    if isinstance(value, dict):
        _check_object(value, schema, path)


def _check_type(value: object, kind: str, path: str) -> None:
    # bool is an int to Python, not a number to JSON; and JSON has no infinity or NaN.
    if (
        not isinstance(value, _TYPES[kind])
        or (isinstance(value, bool) and kind != "boolean")
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise SchemaError(f"{path}: must be of type {kind}, got {shown(value)}")


def _check_object(value: dict[object, object], schema: Schema, path: str) -> None:
    properties: dict[str, Schema] = schema["properties"]  # type: ignore[assignment]
    for name in schema["required"]:  # type: ignore[attr-defined]
        if name not in value:
            raise SchemaError(f"{path}: the field {name!r} is missing")
    for name, item in value.items():
        if name not in properties:
            raise SchemaError(f"{path}: the field {shown(name)} is not in the schema")
        _check(item, properties[name], f"{path}.{name}")
