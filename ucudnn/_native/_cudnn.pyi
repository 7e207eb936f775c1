"""Type stubs for ucudnn._native._cudnn, the thin cuDNN 9 binding (native/_cudnn.pyx);
`ucudnn.cudnn` is its public subset.

Functions keep cuDNN's argument order. Device pointers and streams are Python ints; dtypes,
layouts and modes are strings (see the name tables below). alpha and beta are passed to cuDNN
as double for float64 outputs and as float otherwise. Every failure raises a
ucudnn.errors.CudnnError subclass naming the call, the status and cuDNN's last error message.

The backend (graph) API is one generic `BackendDescriptor`; its kinds, attributes, attribute
types and enum values are cuDNN's names without their prefixes (the BACKEND_* tables below).
Values per attribute type: INT64, INT32, KNOB_TYPE -> int; FLOAT, DOUBLE -> float;
BOOLEAN -> bool; DATA_TYPE, CONVOLUTION_MODE, HEUR_MODE, NUMERICAL_NOTE, BEHAVIOR_NOTE -> names
(an enum value without a name reads back as "UNKNOWN_<n>"); HANDLE -> Handle;
BACKEND_DESCRIPTOR -> BackendDescriptor; CHAR -> one bytes; VOID_PTR -> int addresses.
"""

from collections.abc import Sequence
from typing import NamedTuple

DTYPES: dict[str, int]
MATH_TYPES: dict[str, int]
CONVOLUTION_MODES: dict[str, int]
FILTER_LAYOUTS: dict[str, tuple[int, int]]
ACTIVATIONS: dict[str, int]
POOLING_MODES: dict[str, int]
SOFTMAX_ALGORITHMS: dict[str, int]
SOFTMAX_MODES: dict[str, int]
ALGORITHMS: dict[str, tuple[str, ...]]
# Names newer than cuDNN 9.1 are present only when both the build's headers and the loaded
# library have them (e.g. ENGINECFG_WORKSPACE_SIZE from 9.2, DEVICEPROP from 9.8).
BACKEND_KINDS: dict[str, int]
BACKEND_ATTRIBUTES: dict[str, int]
BACKEND_TYPES: dict[str, int]
BACKEND_DATA_TYPES: dict[str, int]
BACKEND_CONVOLUTION_MODES: dict[str, int]
HEURISTIC_MODES: dict[str, int]
NUMERICAL_NOTES: dict[str, int]
BEHAVIOR_NOTES: dict[str, int]

def status_name(status: int) -> str: ...
def version() -> int: ...
def build_version() -> int: ...
def cudart_version() -> int: ...

class Handle:
    def __init__(self) -> None: ...
    @property
    def ptr(self) -> int: ...
    @property
    def stream(self) -> int: ...
    def set_stream(self, stream: int) -> None: ...
    def destroy(self) -> None: ...

class TensorDescriptor:
    def __init__(self, dtype: str, dims: Sequence[int], strides: Sequence[int]) -> None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def dims(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def ptr(self) -> int: ...

class FilterDescriptor:
    def __init__(self, dtype: str, layout: str, dims: Sequence[int]) -> None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def layout(self) -> str: ...
    @property
    def dims(self) -> tuple[int, ...]: ...
    @property
    def ptr(self) -> int: ...

class ConvolutionDescriptor:
    def __init__(
        self,
        padding: Sequence[int],
        stride: Sequence[int],
        dilation: Sequence[int],
        mode: str = "cross_correlation",
        compute_dtype: str = "float32",
        groups: int = 1,
        math_type: str = "default",
    ) -> None: ...
    @property
    def padding(self) -> tuple[int, ...]: ...
    @property
    def stride(self) -> tuple[int, ...]: ...
    @property
    def dilation(self) -> tuple[int, ...]: ...
    @property
    def mode(self) -> str: ...
    @property
    def compute_dtype(self) -> str: ...
    @property
    def groups(self) -> int: ...
    @property
    def math_type(self) -> str: ...
    def set_math_type(self, math_type: str) -> None: ...
    def output_dims(
        self, x_desc: TensorDescriptor, w_desc: FilterDescriptor
    ) -> tuple[int, ...]: ...
    @property
    def ptr(self) -> int: ...

class ActivationDescriptor:
    def __init__(self, mode: str, coef: float = 0.0) -> None: ...
    @property
    def mode(self) -> str: ...
    @property
    def coef(self) -> float: ...

class PoolingDescriptor:
    def __init__(
        self, mode: str, window: Sequence[int], padding: Sequence[int], stride: Sequence[int]
    ) -> None: ...
    @property
    def mode(self) -> str: ...
    @property
    def window(self) -> tuple[int, ...]: ...
    @property
    def padding(self) -> tuple[int, ...]: ...
    @property
    def stride(self) -> tuple[int, ...]: ...
    def output_dims(self, x_desc: TensorDescriptor) -> tuple[int, ...]: ...

class AlgoPerf(NamedTuple):
    algo: int
    status: int
    status_name: str
    time_ms: float
    memory: int
    deterministic: bool
    math_type: str

# The legacy convolution kernels, by name ("forward", "backward_data", "backward_filter"). Each
# reads tensors a and b and writes out, in cuDNN's argument order: forward x, w -> y;
# backward_data w, dy -> dx; backward_filter x, dy -> dw (w and dw are FilterDescriptors).
def algorithm_max_count(handle: Handle, kernel: str) -> int: ...
def find_algorithm_ex(
    handle: Handle,
    kernel: str,
    a_desc: TensorDescriptor | FilterDescriptor,
    a: int,
    b_desc: TensorDescriptor | FilterDescriptor,
    b: int,
    conv_desc: ConvolutionDescriptor,
    out_desc: TensorDescriptor | FilterDescriptor,
    out: int,
    requested: int,
    workspace: int,
    workspace_bytes: int,
) -> list[AlgoPerf]: ...
def workspace_size(
    handle: Handle,
    kernel: str,
    a_desc: TensorDescriptor | FilterDescriptor,
    b_desc: TensorDescriptor | FilterDescriptor,
    conv_desc: ConvolutionDescriptor,
    out_desc: TensorDescriptor | FilterDescriptor,
    algo: int,
) -> int: ...
def convolution(
    handle: Handle,
    kernel: str,
    alpha: float,
    a_desc: TensorDescriptor | FilterDescriptor,
    a: int,
    b_desc: TensorDescriptor | FilterDescriptor,
    b: int,
    conv_desc: ConvolutionDescriptor,
    algo: int,
    workspace: int,
    workspace_bytes: int,
    beta: float,
    out_desc: TensorDescriptor | FilterDescriptor,
    out: int,
) -> None: ...
def convolution_backward_bias(
    handle: Handle,
    alpha: float,
    dy_desc: TensorDescriptor,
    dy: int,
    beta: float,
    db_desc: TensorDescriptor,
    db: int,
) -> None: ...
def add_tensor(
    handle: Handle,
    alpha: float,
    a_desc: TensorDescriptor,
    a: int,
    beta: float,
    c_desc: TensorDescriptor,
    c: int,
) -> None: ...
def scale_tensor(handle: Handle, y_desc: TensorDescriptor, y: int, alpha: float) -> None: ...
def activation_forward(
    handle: Handle,
    activation_desc: ActivationDescriptor,
    alpha: float,
    x_desc: TensorDescriptor,
    x: int,
    beta: float,
    y_desc: TensorDescriptor,
    y: int,
) -> None: ...
def activation_backward(
    handle: Handle,
    activation_desc: ActivationDescriptor,
    alpha: float,
    y_desc: TensorDescriptor,
    y: int,
    dy_desc: TensorDescriptor,
    dy: int,
    x_desc: TensorDescriptor,
    x: int,
    beta: float,
    dx_desc: TensorDescriptor,
    dx: int,
) -> None: ...
def pooling_forward(
    handle: Handle,
    pooling_desc: PoolingDescriptor,
    alpha: float,
    x_desc: TensorDescriptor,
    x: int,
    beta: float,
    y_desc: TensorDescriptor,
    y: int,
) -> None: ...
def pooling_backward(
    handle: Handle,
    pooling_desc: PoolingDescriptor,
    alpha: float,
    y_desc: TensorDescriptor,
    y: int,
    dy_desc: TensorDescriptor,
    dy: int,
    x_desc: TensorDescriptor,
    x: int,
    beta: float,
    dx_desc: TensorDescriptor,
    dx: int,
) -> None: ...
def softmax_forward(
    handle: Handle,
    algorithm: str,
    mode: str,
    alpha: float,
    x_desc: TensorDescriptor,
    x: int,
    beta: float,
    y_desc: TensorDescriptor,
    y: int,
) -> None: ...
def softmax_backward(
    handle: Handle,
    algorithm: str,
    mode: str,
    alpha: float,
    y_desc: TensorDescriptor,
    y: int,
    dy_desc: TensorDescriptor,
    dy: int,
    beta: float,
    dx_desc: TensorDescriptor,
    dx: int,
) -> None: ...

class BackendDescriptor:
    def __init__(self, kind: str) -> None: ...
    @property
    def kind(self) -> str: ...
    @property
    def finalized(self) -> bool: ...
    def set(self, attribute: str, attr_type: str, values: Sequence[object]) -> None: ...
    def get(
        self, attribute: str, attr_type: str, count: int | None = None, kind: str | None = None
    ) -> list[object]: ...
    def finalize(self) -> None: ...

def execute_plan(
    handle: Handle,
    plan: BackendDescriptor,
    uids: tuple[int, ...],
    pointers: tuple[int, ...],
    workspace: int,
) -> None: ...
