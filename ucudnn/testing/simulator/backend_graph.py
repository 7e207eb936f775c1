"""The simulated cuDNN's backend descriptors that describe a convolution, finalized: a tensor,
a convolution and an operation become the problem of one convolution kernel (a `SimProblem`),
and an operation graph looks up what engine configurations run it (`engines.offer`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ucudnn.core.problem import ITEMSIZE, LAYOUTS, conv_output_size, packed_strides
from ucudnn.testing.simulator import engines
from ucudnn.testing.simulator.backend_names import NOT_SUPPORTED
from ucudnn.testing.simulator.backend_states import Entry, Reader, State, live_handle
from ucudnn.testing.simulator.convert import DIM_MAX
from ucudnn.testing.simulator.convolutions import COMPUTE
from ucudnn.testing.simulator.engines import Offer
from ucudnn.testing.simulator.problem import Kernel, SimProblem

# The simulated data types, by cuDNN's name; the bytes of an element of every data type.
DTYPES = {"FLOAT": "float32", "HALF": "float16", "BFLOAT16": "bfloat16", "DOUBLE": "float64"}
_ITEMSIZE = {name: ITEMSIZE[dtype] for name, dtype in DTYPES.items()} | {
    "INT8": 1, "UINT8": 1, "INT32": 4, "INT64": 8, "BOOLEAN": 1, "FP8_E4M3": 1, "FP8_E5M2": 1,
}  # fmt: skip
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
        padding_after=conv.post_paddings,
    )


def _output(x: tuple[int, ...], w: tuple[int, ...], conv: Convolution) -> tuple[int, ...]:
    """y's dims: x padded by the pre and the post paddings, convolved with w."""
    out = (
        conv_output_size(size, f, pre, step, dil, post)
        for size, f, pre, step, dil, post in zip(
            x[2:], w[2:], conv.pre_paddings, conv.strides, conv.dilations, conv.post_paddings,
            strict=True,
        )
    )  # fmt: skip
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
