"""A convolution as the simulated cuDNN sees it: read off the descriptors of one call.

The capability model and the numerics both take a `SimProblem`; neither sees a descriptor.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ucudnn.core.description import describe_convolution
from ucudnn.core.padding import PaddedEnds

Kernel = Literal["forward", "backward_data", "backward_filter"]

# cuDNN's statuses the model hands out (cudnn_graph.h).
SUCCESS = 0
NOT_SUPPORTED = 3000


@dataclasses.dataclass(frozen=True)
class SimProblem(PaddedEnds):
    """One kernel of one convolution at one micro-batch, as its descriptors say.

    Dims are logical: x (N, C, *spatial), w (K, C/groups, *filter), y (N, K, *out). `layout`
    is the memory order of x and y: "NCHW"/"NHWC" (rank 2), "NCDHW"/"NDHWC" (rank 3), or
    "strided" when their strides are not packed in either order. `padding` is the zeros before
    each spatial axis, `padding_after` those after it where they differ (a graph's POST_PADDINGS;
    legacy descriptors pad alike): empty when equal, as in `ConvProblem`, so that problems
    padded alike are one problem to every cache.
    """

    kernel: Kernel
    dtype: str  # float32, float16, bfloat16, float64
    compute_dtype: str
    math_type: str  # default, tensor_op, tensor_op_allow_conversion, fma
    layout: str
    filter_layout: str
    x_dims: tuple[int, ...]
    w_dims: tuple[int, ...]
    y_dims: tuple[int, ...]
    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    mode: str  # cross_correlation, convolution
    padding_after: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.padding_after == self.padding:
            object.__setattr__(self, "padding_after", ())

    @property
    def batch(self) -> int:
        return self.x_dims[0]

    @property
    def rank(self) -> int:
        """Spatial rank: 2 or 3."""
        return len(self.x_dims) - 2

    @property
    def filter_size(self) -> tuple[int, ...]:
        return self.w_dims[2:]

    def describe(self) -> str:
        """One line for error messages, in ucudnn's words."""
        text = describe_convolution(
            self.x_dims, self.w_dims, self.padding, self.stride, self.dilation, self.groups,
            self.layout, self.dtype, self.padding_after,
        )  # fmt: skip
        return f"{self.kernel} {text} ({self.math_type} math)"


@dataclasses.dataclass(frozen=True)
class AlgoFacts:
    """What the simulated cuDNN knows of one algorithm for one SimProblem, and where from.

    `provenance` is one of "measured:<source>" (a table measured on a GPU), "probed:<source>"
    (the capability probe on a GPU), "observed:<source>" (a fact read off a GPU run's log),
    "model" (a stated rule or formula, never measured), "fuzz:<seed>" (randomised on purpose).
    """

    algo: int
    status: int  # SUCCESS, or NOT_SUPPORTED
    workspace_bytes: int  # 0 when not supported
    time_ms: float  # modelled duration of one call on the device; 0 when not supported
    deterministic: bool
    provenance: str

    @property
    def ok(self) -> bool:
        return self.status == SUCCESS
