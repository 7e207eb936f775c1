"""What the simulated cuDNN makes of backend descriptors when they are finalized: one immutable
state per descriptor, checked as cuDNN checks it, from which their attributes are read back.

A tensor, a convolution and an operation become the problem of one convolution kernel (a
`SimProblem`); an operation graph looks up what engine configurations run it
(`engines.offer`); heuristics rank them, an engine and its knob choices name one, and a plan
holds one for a handle. cuDNN's statuses: BAD_PARAM for what is missing, inconsistent or not
finalized (cudnn_graph.h's words), NOT_SUPPORTED for what it cannot run, and for what the
simulator does not model (saying so).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from ucudnn.core.engines import EngineConfig, math_type_of
from ucudnn.core.problem import ITEMSIZE, LAYOUTS, packed_strides
from ucudnn.testing.simulator import engines
from ucudnn.testing.simulator.backend_names import BAD_PARAM, NOT_SUPPORTED
from ucudnn.testing.simulator.convert import DIM_MAX, cudnn_error
from ucudnn.testing.simulator.convolutions import COMPUTE
from ucudnn.testing.simulator.engines import EngineFacts, Offer
from ucudnn.testing.simulator.problem import Kernel, SimProblem

# Attribute values as set or read: (attribute type, values).
Entry = tuple[str, tuple[Any, ...]]
# The simulated data types, by cuDNN's name; the bytes of an element of every data type.
DTYPES = {"FLOAT": "float32", "HALF": "float16", "BFLOAT16": "bfloat16", "DOUBLE": "float64"}
_ITEMSIZE = {name: ITEMSIZE[dtype] for name, dtype in DTYPES.items()} | {
    "INT8": 1, "UINT8": 1, "INT32": 4, "INT64": 8, "BOOLEAN": 1, "FP8_E4M3": 1, "FP8_E5M2": 1,
}  # fmt: skip
SM_COUNT = 132  # the H100 SXM's multiprocessors: the most an SM_COUNT_TARGET may ask for
# Per operation kind: its kernel, attribute prefix, and the attribute of x, w and y.
OPERATIONS: dict[str, tuple[Kernel, str, tuple[str, str, str]]] = {
    "OPERATION_CONVOLUTION_FORWARD": ("forward", "OPERATION_CONVOLUTION_FORWARD", ("X", "W", "Y")),
    "OPERATION_CONVOLUTION_BACKWARD_DATA": (
        "backward_data", "OPERATION_CONVOLUTION_BWD_DATA", ("DX", "W", "DY"),
    ),
    "OPERATION_CONVOLUTION_BACKWARD_FILTER": (
        "backward_filter", "OPERATION_CONVOLUTION_BWD_FILTER", ("X", "DW", "DY"),
    ),
}  # fmt: skip


class State:
    """A finalized descriptor."""

    KIND: ClassVar[str]

    def kind_name(self) -> str:
        """The descriptor kind it is the state of."""
        return self.KIND

    def readable(self) -> dict[str, Entry]:
        """Every attribute cudnnBackendGetAttribute answers, with its type and values."""
        raise NotImplementedError

    def faults(self) -> dict[str, Any]:
        """What a fault rule may look at (`faults.Context`'s fields)."""
        return {}


S = TypeVar("S", bound=State)
# A descriptor set as an attribute's value, as finalize sees it: its state if it is finalized.
Lookup = Callable[[Any], State | None]


class Reader:
    """The attributes set on one descriptor, read as its finalization reads them."""

    def __init__(self, kind: str, values: dict[str, Entry], state_of: Lookup) -> None:
        self.kind, self._values, self._state_of = kind, values, state_of
        self.call = f"cudnnBackendFinalize({kind})"

    def fail(self, detail: str, status: int = BAD_PARAM) -> Exception:
        return cudnn_error(status, self.call, detail)

    def has(self, attribute: str) -> bool:
        return attribute in self._values

    def entry(self, attribute: str) -> Entry:
        if attribute not in self._values:
            raise self.fail(f"{attribute} is required and was not set")
        return self._values[attribute]

    def values(self, attribute: str, default: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        if default is not None and attribute not in self._values:
            return default
        return self.entry(attribute)[1]

    def one(self, attribute: str, default: Any = None) -> Any:
        return self.values(attribute, None if default is None else (default,))[0]

    def states(self, attribute: str, cls: type[S], optional: bool = False) -> list[S]:
        """The finalized descriptors set on `attribute` (none if it is optional and unset)."""
        found = []
        for descriptor in self.values(attribute, () if optional else None):
            state = self._state_of(descriptor)
            if not isinstance(state, cls):
                raise self.fail(f"{attribute}: {descriptor!r} is not finalized")
            found.append(state)
        return found

    def state(self, attribute: str, cls: type[S]) -> S:
        return self.states(attribute, cls)[0]

    def sm_count(self, attribute: str) -> int:
        count: int = self.one(attribute, 0)
        if not 0 <= count <= SM_COUNT:
            raise self.fail(f"{attribute} = {count}: the device has {SM_COUNT} SMs")
        return count

    def refuse_deviceprop(self, attribute: str) -> None:
        if self.has(attribute):
            raise self.fail(f"{attribute}: DEVICEPROP descriptors are not simulated", NOT_SUPPORTED)


@dataclasses.dataclass(frozen=True)
class Tensor(State):
    KIND = "TENSOR"

    data_type: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    uid: int
    alignment: int
    virtual: bool
    by_value: bool
    vector_count: int
    vectorized_dimension: int

    def readable(self) -> dict[str, Entry]:
        return {
            "TENSOR_DATA_TYPE": ("DATA_TYPE", (self.data_type,)),
            "TENSOR_DIMENSIONS": ("INT64", self.dims),
            "TENSOR_STRIDES": ("INT64", self.strides),
            "TENSOR_UNIQUE_ID": ("INT64", (self.uid,)),
            "TENSOR_BYTE_ALIGNMENT": ("INT64", (self.alignment,)),
            "TENSOR_IS_VIRTUAL": ("BOOLEAN", (self.virtual,)),
            "TENSOR_IS_BY_VALUE": ("BOOLEAN", (self.by_value,)),
            "TENSOR_VECTOR_COUNT": ("INT64", (self.vector_count,)),
            "TENSOR_VECTORIZED_DIMENSION": ("INT64", (self.vectorized_dimension,)),
        }


def tensor(reader: Reader) -> Tensor:
    dims, strides = reader.values("TENSOR_DIMENSIONS"), reader.values("TENSOR_STRIDES")
    made = Tensor(
        reader.one("TENSOR_DATA_TYPE"), dims, strides, reader.one("TENSOR_UNIQUE_ID"),
        reader.one("TENSOR_BYTE_ALIGNMENT"), reader.one("TENSOR_IS_VIRTUAL", False),
        reader.one("TENSOR_IS_BY_VALUE", False), reader.one("TENSOR_VECTOR_COUNT", 1),
        reader.one("TENSOR_VECTORIZED_DIMENSION", -1),
    )  # fmt: skip
    if len(dims) != len(strides) or len(dims) > DIM_MAX:
        raise reader.fail(f"dimensions {dims} and strides {strides}: not one each, or > {DIM_MAX}")
    if min(dims) < 1 or min(strides) < 1:
        raise reader.fail(f"dimensions {dims} and strides {strides} must all be positive")
    size = _ITEMSIZE.get(made.data_type, 1)
    if made.alignment < 1 or made.alignment % size:
        raise reader.fail(
            f"byte alignment {made.alignment} is not a multiple of the {size}-byte elements"
        )
    return made


@dataclasses.dataclass(frozen=True)
class Convolution(State):
    KIND = "CONVOLUTION"

    compute_type: str
    mode: str
    spatial_dims: int
    pre_paddings: tuple[int, ...]
    post_paddings: tuple[int, ...]
    dilations: tuple[int, ...]
    strides: tuple[int, ...]

    def readable(self) -> dict[str, Entry]:
        return {
            "CONVOLUTION_COMP_TYPE": ("DATA_TYPE", (self.compute_type,)),
            "CONVOLUTION_CONV_MODE": ("CONVOLUTION_MODE", (self.mode,)),
            "CONVOLUTION_SPATIAL_DIMS": ("INT64", (self.spatial_dims,)),
            "CONVOLUTION_PRE_PADDINGS": ("INT64", self.pre_paddings),
            "CONVOLUTION_POST_PADDINGS": ("INT64", self.post_paddings),
            "CONVOLUTION_DILATIONS": ("INT64", self.dilations),
            "CONVOLUTION_FILTER_STRIDES": ("INT64", self.strides),
        }


def convolution(reader: Reader) -> Convolution:
    made = Convolution(
        reader.one("CONVOLUTION_COMP_TYPE"), reader.one("CONVOLUTION_CONV_MODE"),
        reader.one("CONVOLUTION_SPATIAL_DIMS"), reader.values("CONVOLUTION_PRE_PADDINGS"),
        reader.values("CONVOLUTION_POST_PADDINGS"), reader.values("CONVOLUTION_DILATIONS"),
        reader.values("CONVOLUTION_FILTER_STRIDES"),
    )  # fmt: skip
    arrays = (made.pre_paddings, made.post_paddings, made.dilations, made.strides)
    if any(len(a) != made.spatial_dims for a in arrays):
        raise reader.fail(
            f"paddings, dilations and filter strides must have SPATIAL_DIMS = "
            f"{made.spatial_dims} entries each, got {arrays}"
        )
    if min((*made.pre_paddings, *made.post_paddings)) < 0 or min(made.dilations + made.strides) < 1:
        raise reader.fail(f"paddings must be >= 0, dilations and strides >= 1, got {arrays}")
    return made


@dataclasses.dataclass(frozen=True)
class Operation(State):
    """One convolution kernel: its tensors in x, w, y order, what it computes, with what."""

    kind: str
    tensors: tuple[Tensor, Tensor, Tensor]
    conv: Convolution
    scalars: Entry  # alpha and beta, as set (FLOAT values are already rounded to float)
    problem: SimProblem

    def kind_name(self) -> str:
        return self.kind

    @property
    def kernel(self) -> Kernel:
        return self.problem.kernel

    @property
    def alpha(self) -> float:
        value: float = self.scalars[1][0]
        return value

    @property
    def beta(self) -> float:
        value: float = self.scalars[1][1]
        return value

    def readable(self) -> dict[str, Entry]:
        _, prefix, names = OPERATIONS[self.kind]
        found = {
            f"{prefix}_{name}": ("BACKEND_DESCRIPTOR", (t,))
            for name, t in zip(names, self.tensors, strict=True)
        }
        scalar_type, (alpha, beta) = self.scalars
        return {
            **found,
            f"{prefix}_CONV_DESC": ("BACKEND_DESCRIPTOR", (self.conv,)),
            f"{prefix}_ALPHA": (scalar_type, (alpha,)),
            f"{prefix}_BETA": (scalar_type, (beta,)),
        }

    def faults(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "problem": self.problem}


def operation(reader: Reader) -> Operation:
    kernel, prefix, names = OPERATIONS[reader.kind]
    x, w, y = (reader.state(f"{prefix}_{name}", Tensor) for name in names)
    conv = reader.state(f"{prefix}_CONV_DESC", Convolution)
    alpha, beta = reader.entry(f"{prefix}_ALPHA"), reader.entry(f"{prefix}_BETA")
    if alpha[0] != beta[0]:
        raise reader.fail(f"ALPHA is {alpha[0]} but BETA {beta[0]}: one type for both")
    problem = _problem(reader, kernel, x, w, y, conv)
    return Operation(reader.kind, (x, w, y), conv, (alpha[0], (*alpha[1], *beta[1])), problem)


def _problem(
    reader: Reader, kernel: Kernel, x: Tensor, w: Tensor, y: Tensor, conv: Convolution
) -> SimProblem:
    """The convolution the tensors and the operator make, or cuDNN's refusal."""
    rank = conv.spatial_dims
    if not len(x.dims) == len(w.dims) == len(y.dims) == rank + 2:
        raise reader.fail(
            f"x, w and y must have SPATIAL_DIMS + 2 = {rank + 2} dimensions, got {x.dims}, "
            f"{w.dims}, {y.dims} (the simulator does not take the grouped rank + 3 form)"
        )
    if x.dims[1] % w.dims[1] or w.dims[0] % (x.dims[1] // w.dims[1]):
        raise reader.fail(f"x's {x.dims[1]} channels and w {w.dims} make no group count")
    expected = _output(x.dims, w.dims, conv)
    if y.dims != expected:
        raise reader.fail(f"y dims {y.dims} are not the convolution's output {expected}")
    if rank not in LAYOUTS:
        raise reader.fail(f"{rank} spatial dimensions are not simulated (2 or 3)", NOT_SUPPORTED)
    types = {t.data_type for t in (x, w, y)}
    dtype = DTYPES.get(x.data_type)
    if len(types) > 1 or dtype is None:
        raise reader.fail(
            f"tensor types {sorted(types)}: the simulator runs one of {', '.join(DTYPES)} "
            "for all three", NOT_SUPPORTED,
        )  # fmt: skip
    compute = DTYPES.get(conv.compute_type)
    if compute not in COMPUTE[dtype]:
        raise reader.fail(f"{dtype} data cannot be computed in {conv.compute_type}", NOT_SUPPORTED)
    for t in (x, w, y):
        if t.virtual or t.by_value or t.vector_count != 1:
            raise reader.fail(
                f"tensor {t.uid} is virtual, by value or vectorized: a lone convolution reads "
                "and writes plain device tensors", NOT_SUPPORTED,
            )  # fmt: skip
    if conv.pre_paddings != conv.post_paddings:
        raise reader.fail("unequal pre and post paddings are not simulated", NOT_SUPPORTED)
    filter_layout = next(
        (name for name in LAYOUTS[rank] if w.strides == packed_strides(w.dims, name)), None
    )
    if filter_layout is None:
        raise reader.fail(f"w strides {w.strides} are packed in no layout", NOT_SUPPORTED)
    layout = next(
        (n for n in LAYOUTS[rank] if all(t.strides == packed_strides(t.dims, n) for t in (x, y))),
        "strided",
    )
    return SimProblem(
        kernel=kernel,
        dtype=dtype,
        compute_dtype=compute,
        math_type="default",  # a graph has none: each engine's notes say which it uses
        layout=layout,
        filter_layout=filter_layout,
        x_dims=x.dims,
        w_dims=w.dims,
        y_dims=y.dims,
        padding=conv.pre_paddings,
        stride=conv.strides,
        dilation=conv.dilations,
        groups=x.dims[1] // w.dims[1],
        mode="cross_correlation" if conv.mode == "CROSS_CORRELATION" else "convolution",
    )


def _output(x: tuple[int, ...], w: tuple[int, ...], conv: Convolution) -> tuple[int, ...]:
    out = [
        (size + 2 * pad - dil * (f - 1) - 1) // step + 1
        for size, f, pad, step, dil in zip(
            x[2:], w[2:], conv.pre_paddings, conv.strides, conv.dilations, strict=True
        )
    ]
    return (x[0], w[0], *out)


@dataclasses.dataclass(frozen=True)
class Graph(State):
    KIND = "OPERATIONGRAPH"

    handle: Any  # the simulated cudnn.Handle
    operation: Operation
    offer: Offer

    def readable(self) -> dict[str, Entry]:
        # No OPERATIONGRAPH_HANDLE: cuDNN 9.19 on an H100 will not give it back (NOT_SUPPORTED).
        return {
            "OPERATIONGRAPH_OPS": ("BACKEND_DESCRIPTOR", (self.operation,)),
            "OPERATIONGRAPH_ENGINE_GLOBAL_COUNT": ("INT64", (engines.engine_count(),)),
        }

    def faults(self) -> dict[str, Any]:
        return self.operation.faults()


def live_handle(reader: Reader, attribute: str) -> Any:
    handle = reader.one(attribute)
    try:
        handle.ptr  # noqa: B018  (raises for a destroyed handle)
    except ValueError:
        raise reader.fail(f"{attribute} is not a valid cuDNN handle: it was destroyed") from None
    return handle


def graph(reader: Reader) -> Graph:
    handle = live_handle(reader, "OPERATIONGRAPH_HANDLE")
    operations = reader.states("OPERATIONGRAPH_OPS", Operation)
    if not operations:
        raise reader.fail("OPERATIONGRAPH_OPS holds no operation")
    if len(operations) > 1:
        raise reader.fail("the simulator runs graphs of one convolution", NOT_SUPPORTED)
    uids = [t.uid for t in operations[0].tensors]
    if len(set(uids)) != len(uids):
        raise reader.fail(f"the tensors' unique ids {uids} are not unique")
    problem = operations[0].problem
    offer = engines.offer(problem)
    if offer is None:
        raise reader.fail(f"no engine runs {problem.describe()}", NOT_SUPPORTED)
    return Graph(handle, operations[0], offer)


@dataclasses.dataclass(frozen=True)
class KnobInfo(State):
    KIND = "KNOB_INFO"

    knob: int
    least: int
    most: int

    def readable(self) -> dict[str, Entry]:
        return {
            "KNOB_INFO_TYPE": ("KNOB_TYPE", (self.knob,)),
            "KNOB_INFO_MINIMUM_VALUE": ("INT64", (self.least,)),
            "KNOB_INFO_MAXIMUM_VALUE": ("INT64", (self.most,)),
            "KNOB_INFO_STRIDE": ("INT64", (1,)),
        }


@dataclasses.dataclass(frozen=True)
class KnobChoice(State):
    KIND = "KNOB_CHOICE"

    knob: int
    value: int

    def readable(self) -> dict[str, Entry]:
        return {
            "KNOB_CHOICE_KNOB_TYPE": ("KNOB_TYPE", (self.knob,)),
            "KNOB_CHOICE_KNOB_VALUE": ("INT64", (self.value,)),
        }


def knob_choice(reader: Reader) -> KnobChoice:
    return KnobChoice(reader.one("KNOB_CHOICE_KNOB_TYPE"), reader.one("KNOB_CHOICE_KNOB_VALUE"))


@dataclasses.dataclass(frozen=True)
class Engine(State):
    """An engine of a graph; its notes and knobs are those of its configurations (the
    simulator's notes are per engine)."""

    KIND = "ENGINE"

    graph: Graph
    index: int
    sm_count: int = 0

    @property
    def configs(self) -> list[EngineFacts]:
        return self.graph.offer.engines()[self.index]

    def readable(self) -> dict[str, Entry]:
        first = self.configs[0]
        ranges: dict[int, list[int]] = {}
        for facts in self.configs:
            for knob, value in facts.config.knobs:
                ranges.setdefault(knob, []).append(value)
        infos = tuple(KnobInfo(k, min(v), max(v)) for k, v in sorted(ranges.items()))
        return {
            "ENGINE_OPERATION_GRAPH": ("BACKEND_DESCRIPTOR", (self.graph,)),
            "ENGINE_GLOBAL_INDEX": ("INT64", (self.index,)),
            "ENGINE_KNOB_INFO": ("BACKEND_DESCRIPTOR", infos),
            "ENGINE_NUMERICAL_NOTE": ("NUMERICAL_NOTE", first.numerical_notes),
            "ENGINE_BEHAVIOR_NOTE": ("BEHAVIOR_NOTE", first.behavior_notes),
            "ENGINE_SM_COUNT_TARGET": ("INT32", (self.sm_count,)),
        }

    def faults(self) -> dict[str, Any]:
        return {**self.graph.faults(), "algo": self.index}


def engine(reader: Reader) -> Engine:
    found = reader.state("ENGINE_OPERATION_GRAPH", Graph)
    index: int = reader.one("ENGINE_GLOBAL_INDEX")
    reader.refuse_deviceprop("ENGINE_DEVICEPROP")
    count = engines.engine_count()
    if not 0 <= index < count:
        raise reader.fail(f"engine {index} is not in 0..{count - 1}", NOT_SUPPORTED)
    if index not in found.offer.engines():
        problem = found.operation.problem
        raise reader.fail(f"engine {index} does not run {problem.describe()}", NOT_SUPPORTED)
    return Engine(found, index, reader.sm_count("ENGINE_SM_COUNT_TARGET"))


@dataclasses.dataclass(frozen=True)
class Config(State):
    KIND = "ENGINECFG"

    engine: Engine
    facts: EngineFacts

    @functools.cached_property
    def workspace_bytes(self) -> int:
        """The configuration's workspace for its graph. One of backward filter that blends into
        dw (beta != 0) with workspace needs room for dw besides, as on an H100 with cuDNN 9.19:
        8552480 bytes where beta 0 needed 8028176, for a 1024x256 half-precision filter (the
        configuration and its plan said the same)."""
        own = self.facts.workspace_bytes
        operation = self.engine.graph.operation
        if own and operation.kernel == "backward_filter" and operation.beta != 0:
            filter_elements = math.prod(operation.tensors[1].dims)
            return own + filter_elements * ITEMSIZE[operation.problem.dtype]
        return own

    def readable(self) -> dict[str, Entry]:
        choices = tuple(KnobChoice(k, v) for k, v in self.facts.config.knobs)
        return {
            "ENGINECFG_ENGINE": ("BACKEND_DESCRIPTOR", (self.engine,)),
            "ENGINECFG_KNOB_CHOICES": ("BACKEND_DESCRIPTOR", choices),
            "ENGINECFG_WORKSPACE_SIZE": ("INT64", (self.workspace_bytes,)),
            "ENGINECFG_SHARED_MEMORY_USED": ("INT64", (0,)),  # not modelled
        }

    def faults(self) -> dict[str, Any]:
        return {**self.engine.faults(), "engine": self.facts.tag}


def config(reader: Reader) -> Config:
    found = reader.state("ENGINECFG_ENGINE", Engine)
    choices = reader.states("ENGINECFG_KNOB_CHOICES", KnobChoice, optional=True)
    knobs = [(c.knob, c.value) for c in choices]
    if len({k for k, _ in knobs}) != len(knobs):
        raise reader.fail(f"knob choices {knobs} choose a knob twice")
    wanted = EngineConfig(found.index, tuple(knobs))
    facts = found.graph.offer.find(wanted)
    if facts is None:
        known = ", ".join(f.tag for f in found.configs)
        raise reader.fail(
            f"{wanted.tag} is not a configuration the simulator knows for this graph (engine "
            f"{found.index} has {known}; knobs left to their defaults are not modelled)",
            NOT_SUPPORTED,
        )
    return Config(found, facts)


@dataclasses.dataclass(frozen=True)
class Heuristics(State):
    KIND = "ENGINEHEUR"

    graph: Graph
    mode: str
    sm_count: int

    def readable(self) -> dict[str, Entry]:
        ranked = self.graph.offer.ranked(self.mode)
        results = tuple(Config(Engine(self.graph, f.config.index), f) for f in ranked)
        return {
            "ENGINEHEUR_OPERATION_GRAPH": ("BACKEND_DESCRIPTOR", (self.graph,)),
            "ENGINEHEUR_MODE": ("HEUR_MODE", (self.mode,)),
            "ENGINEHEUR_RESULTS": ("BACKEND_DESCRIPTOR", results),
            "ENGINEHEUR_SM_COUNT_TARGET": ("INT32", (self.sm_count,)),
        }

    def faults(self) -> dict[str, Any]:
        return self.graph.faults()


def heuristics(reader: Reader) -> Heuristics:
    found = reader.state("ENGINEHEUR_OPERATION_GRAPH", Graph)
    mode = reader.one("ENGINEHEUR_MODE")
    reader.refuse_deviceprop("ENGINEHEUR_DEVICEPROP")
    return Heuristics(found, mode, reader.sm_count("ENGINEHEUR_SM_COUNT_TARGET"))


@dataclasses.dataclass(frozen=True)
class Plan(State):
    KIND = "EXECUTION_PLAN"

    handle: Any
    config: Config

    @property
    def operation(self) -> Operation:
        return self.config.engine.graph.operation

    @property
    def workspace_bytes(self) -> int:
        return self.config.workspace_bytes

    @functools.cached_property
    def problem(self) -> SimProblem:
        """What it computes: the graph's problem in the math its configuration's notes say."""
        problem = self.operation.problem
        math_type = math_type_of(problem.dtype, self.config.facts.numerical_notes)
        return dataclasses.replace(problem, math_type=math_type)

    @functools.cached_property
    def context(self) -> dict[str, Any]:
        return self.config.faults()

    def readable(self) -> dict[str, Entry]:
        return {
            "EXECUTION_PLAN_HANDLE": ("HANDLE", (self.handle,)),
            "EXECUTION_PLAN_ENGINE_CONFIG": ("BACKEND_DESCRIPTOR", (self.config,)),
            "EXECUTION_PLAN_WORKSPACE_SIZE": ("INT64", (self.workspace_bytes,)),
        }

    def faults(self) -> dict[str, Any]:
        return self.context


def plan(reader: Reader) -> Plan:
    handle = live_handle(reader, "EXECUTION_PLAN_HANDLE")
    if reader.has("EXECUTION_PLAN_JSON_REPRESENTATION"):
        raise reader.fail("the simulator does not deserialize plans", NOT_SUPPORTED)
    reader.refuse_deviceprop("EXECUTION_PLAN_DEVICEPROP")
    found = reader.state("EXECUTION_PLAN_ENGINE_CONFIG", Config)
    facts = found.facts
    if not facts.blends and found.engine.graph.operation.beta != 0:
        raise reader.fail(
            f"{facts.tag} builds no plan with beta = {found.engine.graph.operation.beta} (the "
            "simulator's rule: a backward-filter configuration choosing the workspace knob "
            "k25=1 does not blend into dw)",
            NOT_SUPPORTED,
        )
    return Plan(handle, found)


@dataclasses.dataclass(frozen=True)
class VariantPack(State):
    KIND = "VARIANT_PACK"

    uids: tuple[int, ...]
    pointers: tuple[int, ...]
    workspace: int

    def readable(self) -> dict[str, Entry]:
        return {
            "VARIANT_PACK_UNIQUE_IDS": ("INT64", self.uids),
            "VARIANT_PACK_DATA_POINTERS": ("VOID_PTR", self.pointers),
            "VARIANT_PACK_WORKSPACE": ("VOID_PTR", (self.workspace,)),
        }


def variant_pack(reader: Reader) -> VariantPack:
    made = VariantPack(
        reader.values("VARIANT_PACK_UNIQUE_IDS"), reader.values("VARIANT_PACK_DATA_POINTERS"),
        reader.one("VARIANT_PACK_WORKSPACE"),
    )  # fmt: skip
    if len(made.uids) != len(made.pointers) or len(set(made.uids)) != len(made.uids):
        raise reader.fail(f"unique ids {made.uids} must be distinct, one per data pointer")
    return made


def unsupported(reader: Reader) -> State:
    if reader.kind == "DEVICEPROP":
        raise reader.fail("DEVICEPROP descriptors are not simulated", NOT_SUPPORTED)
    raise reader.fail(f"{reader.kind} descriptors are cuDNN's to fill, not to finalize")


FINALIZE: dict[str, Callable[[Reader], State]] = {
    "TENSOR": tensor,
    "CONVOLUTION": convolution,
    **dict.fromkeys(OPERATIONS, operation),
    "OPERATIONGRAPH": graph,
    "ENGINEHEUR": heuristics,
    "ENGINE": engine,
    "KNOB_CHOICE": knob_choice,
    "ENGINECFG": config,
    "EXECUTION_PLAN": plan,
    "VARIANT_PACK": variant_pack,
    "KNOB_INFO": unsupported,
    "DEVICEPROP": unsupported,
}
