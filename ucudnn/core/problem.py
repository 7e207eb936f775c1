"""One convolution as cuDNN sees it, with every field that can change its result or speed.

Pure Python: the planner, the cache and the runtime all key on `ConvProblem.key()`, so two
problems that differ in any field never share a plan or a benchmark row.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

Kernel = Literal["forward", "backward_data", "backward_filter"]
KERNELS: tuple[Kernel, ...] = ("forward", "backward_data", "backward_filter")

DTYPES = ("float32", "float16", "bfloat16", "float64")
MATH_TYPES = ("default", "tensor_op", "tensor_op_allow_conversion", "fma")
MODES = ("cross_correlation", "convolution")
LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
# cuDNN takes dimensions and strides as 32-bit ints: no batch, extent or stride exceeds this.
MAX_DIM = 2**31 - 1


def check_kernel(kernel: str) -> Kernel:
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {', '.join(KERNELS)}")
    return kernel  # type: ignore[return-value]


def conv_output_size(size: int, kernel: int, pad: int, stride: int, dilation: int) -> int:
    """Output extent of one spatial dimension (cuDNN's formula); may be < 1 for bad inputs."""
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def packed_strides(dims: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """Element strides of a packed tensor with logical dims (N, C, *spatial) in `layout`."""
    if layout in ("NCHW", "NCDHW"):
        order = [0, 1, *range(2, len(dims))]  # outermost first
    else:
        order = [0, *range(2, len(dims)), 1]
    strides = [0] * len(dims)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= dims[axis]
    return tuple(strides)


def _channels_last(layout: str) -> bool:
    return layout in ("NHWC", "NDHWC")


def to_physical(dims: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """Logical (N, C, *spatial) -> the order the layout stores: NHWC puts C last."""
    return (dims[0], *dims[2:], dims[1]) if _channels_last(layout) else tuple(dims)


def to_logical(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """Inverse of `to_physical`; also maps physical strides to logical ones."""
    return (shape[0], shape[-1], *shape[1:-1]) if _channels_last(layout) else tuple(shape)


def _tuple(value: int | tuple[int, ...] | list[int], rank: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * rank
    value = tuple(value)
    if len(value) != rank or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{name} must be an int or {rank} ints, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class ConvProblem:
    """A convolution y = conv(x, w) of rank 2 (NCHW/NHWC) or 3 (NCDHW/NDHWC).

    Dimensions are logical: `input_size` and `filter_size` are spatial extents in the order
    (D,) H, W whatever the memory layout. Strides of x and y are element strides in logical
    order (N, C, *spatial); packed strides for `layout` are filled in when not given.
    """

    batch: int
    in_channels: int
    out_channels: int
    input_size: tuple[int, ...]
    filter_size: tuple[int, ...]
    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    layout: str = ""  # default: channels-first of the rank (NCHW or NCDHW)
    filter_layout: str = ""  # default: same as layout
    dtype: str = "float32"
    compute_dtype: str = ""
    math_type: str = "default"
    mode: str = "cross_correlation"
    x_strides: tuple[int, ...] = ()
    y_strides: tuple[int, ...] = ()

    @classmethod
    def create(
        cls,
        batch: int,
        in_channels: int,
        out_channels: int,
        input_size: tuple[int, ...] | list[int],
        filter_size: tuple[int, ...] | list[int] | int,
        padding: int | tuple[int, ...] = 0,
        stride: int | tuple[int, ...] = 1,
        dilation: int | tuple[int, ...] = 1,
        **fields: object,
    ) -> ConvProblem:
        """Build a problem, broadcasting int padding/stride/dilation/filter over the rank."""
        input_size = tuple(input_size)
        rank = len(input_size)
        return cls(
            batch=batch,
            in_channels=in_channels,
            out_channels=out_channels,
            input_size=input_size,
            filter_size=_tuple(filter_size, rank, "filter_size"),
            padding=_tuple(padding, rank, "padding"),
            stride=_tuple(stride, rank, "stride"),
            dilation=_tuple(dilation, rank, "dilation"),
            **fields,  # type: ignore[arg-type]
        )

    @classmethod
    def from_shapes(
        cls,
        x_shape: tuple[int, ...],
        w_shape: tuple[int, ...],
        *,
        layout: str = "",
        filter_layout: str = "",
        padding: int | tuple[int, ...] = 0,
        stride: int | tuple[int, ...] = 1,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        x_strides: tuple[int, ...] | None = None,
        y_strides: tuple[int, ...] | None = None,
        **fields: object,
    ) -> ConvProblem:
        """A problem from array shapes as stored (NHWC arrays are (N, H, W, C)).

        `x_strides`/`y_strides` are element strides in the same stored order, if not packed.
        """
        x_shape, w_shape = tuple(x_shape), tuple(w_shape)
        if len(x_shape) not in (4, 5):
            raise ValueError(f"x must have rank 4 (2D) or 5 (3D), got shape {x_shape}")
        if len(w_shape) != len(x_shape):
            raise ValueError(f"w has rank {len(w_shape)} but x has rank {len(x_shape)}")
        rank = len(x_shape) - 2
        layout = layout or LAYOUTS[rank][0]
        if layout not in LAYOUTS[rank]:
            raise ValueError(f"layout {layout!r} is not one of {', '.join(LAYOUTS[rank])}")
        filter_layout = filter_layout or layout
        if filter_layout not in LAYOUTS[rank]:
            raise ValueError(
                f"filter_layout {filter_layout!r} is not one of {', '.join(LAYOUTS[rank])}"
            )
        n, c, *spatial = to_logical(x_shape, layout)
        k, c_per_group, *filter_size = to_logical(w_shape, filter_layout)
        if groups < 1:
            raise ValueError(f"groups must be >= 1, got {groups}")
        if c != c_per_group * groups:
            raise ValueError(
                f"x has {c} channels but w expects {c_per_group} per group x {groups} "
                f"group(s) = {c_per_group * groups} (x shape {x_shape}, w shape {w_shape})"
            )
        strides = {}
        for name, value in (("x_strides", x_strides), ("y_strides", y_strides)):
            if value is not None:
                if len(value) != len(x_shape):
                    raise ValueError(f"{name} must have {len(x_shape)} entries, got {value}")
                strides[name] = to_logical(tuple(value), layout)
        return cls.create(
            n, c, k, tuple(spatial), tuple(filter_size), padding, stride, dilation,
            groups=groups, layout=layout, filter_layout=filter_layout, **strides, **fields,
        )  # fmt: skip

    def __post_init__(self) -> None:
        rank = len(self.input_size)
        if rank not in LAYOUTS:
            raise ValueError(f"only 2D and 3D convolutions are supported, got {rank} spatial dims")
        if not self.layout:
            object.__setattr__(self, "layout", LAYOUTS.get(rank, ("",))[0])
        if not self.filter_layout:
            object.__setattr__(self, "filter_layout", self.layout)
        if not self.compute_dtype:
            # cuDNN computes half-precision convolutions in float32 unless told otherwise.
            compute = "float64" if self.dtype == "float64" else "float32"
            object.__setattr__(self, "compute_dtype", compute)
        self._validate(rank)
        if not self.x_strides:
            object.__setattr__(self, "x_strides", packed_strides(self.x_dims, self.layout))
        if not self.y_strides:
            object.__setattr__(self, "y_strides", packed_strides(self.y_dims, self.layout))
        for name in ("x_strides", "y_strides"):
            strides = getattr(self, name)
            if len(strides) != rank + 2 or any(s < 1 for s in strides):
                raise ValueError(f"{name} must be {rank + 2} positive ints, got {strides!r}")

    def _validate(self, rank: int) -> None:
        for name in ("filter_size", "padding", "stride", "dilation"):
            if len(getattr(self, name)) != rank:
                raise ValueError(f"{name} has {len(getattr(self, name))} dims, expected {rank}")
        if self.batch < 0:
            raise ValueError(f"batch must be >= 0, got {self.batch}")
        if self.in_channels < 1 or self.out_channels < 1:
            raise ValueError(
                f"channels must be >= 1, got in={self.in_channels} out={self.out_channels}"
            )
        if any(s < 1 for s in self.input_size):
            raise ValueError(f"input spatial size must be >= 1, got {self.input_size}")
        if any(s < 1 for s in self.filter_size):
            raise ValueError(f"filter size must be >= 1, got {self.filter_size}")
        if any(p < 0 for p in self.padding):
            raise ValueError(f"padding must be >= 0, got {self.padding}")
        if any(s < 1 for s in self.stride):
            raise ValueError(f"stride must be >= 1, got {self.stride}")
        if any(d < 1 for d in self.dilation):
            raise ValueError(f"dilation must be >= 1, got {self.dilation}")
        if self.groups < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                f"groups={self.groups} must divide in_channels={self.in_channels} "
                f"and out_channels={self.out_channels}"
            )
        for name, allowed in (
            ("layout", LAYOUTS[rank]),
            ("filter_layout", LAYOUTS[rank]),
            ("dtype", DTYPES),
            ("compute_dtype", DTYPES),
            ("math_type", MATH_TYPES),
            ("mode", MODES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} {getattr(self, name)!r} is not one of {', '.join(allowed)}"
                )
        if any(o < 1 for o in self.output_size):
            raise ValueError(
                f"output would be empty: input {self.input_size}, filter {self.filter_size}, "
                f"padding {self.padding}, stride {self.stride}, dilation {self.dilation}"
            )

    # -- derived shapes ---------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.input_size)

    @property
    def output_size(self) -> tuple[int, ...]:
        return tuple(
            conv_output_size(*args)
            for args in zip(
                self.input_size,
                self.filter_size,
                self.padding,
                self.stride,
                self.dilation,
                strict=True,
            )
        )

    @property
    def x_dims(self) -> tuple[int, ...]:
        return (self.batch, self.in_channels, *self.input_size)

    @property
    def y_dims(self) -> tuple[int, ...]:
        return (self.batch, self.out_channels, *self.output_size)

    @property
    def w_dims(self) -> tuple[int, ...]:
        return (self.out_channels, self.in_channels // self.groups, *self.filter_size)

    @property
    def x_shape(self) -> tuple[int, ...]:
        """Shape of x as stored in memory (physical order of `layout`)."""
        return to_physical(self.x_dims, self.layout)

    @property
    def y_shape(self) -> tuple[int, ...]:
        return to_physical(self.y_dims, self.layout)

    @property
    def w_shape(self) -> tuple[int, ...]:
        return to_physical(self.w_dims, self.filter_layout)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    def nbytes(self, tensor: Literal["x", "w", "y"]) -> int:
        """Bytes spanned by x, w or y (strided tensors span up to their last element)."""
        if tensor == "w":
            count = 1
            for d in self.w_dims:
                count *= d
            return count * self.itemsize
        dims, strides = (
            (self.x_dims, self.x_strides) if tensor == "x" else (self.y_dims, self.y_strides)
        )
        if 0 in dims:
            return 0
        return (1 + sum((d - 1) * s for d, s in zip(dims, strides, strict=True))) * self.itemsize

    def sample_offset_bytes(self, tensor: Literal["x", "y"], first_sample: int) -> int:
        """Byte offset of sample `first_sample` in x or y: how micro-batches slice the batch."""
        strides = self.x_strides if tensor == "x" else self.y_strides
        return first_sample * strides[0] * self.itemsize

    def with_batch(self, batch: int) -> ConvProblem:
        """The same problem on `batch` samples; tensor strides are kept, so slices alias."""
        return dataclasses.replace(self, batch=batch)

    # -- identity ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ConvProblem:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown problem fields: {', '.join(sorted(unknown))}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})  # type: ignore[arg-type]

    def key(self) -> str:
        """Canonical text of every field: equal keys mean the same convolution."""
        # Made once per problem: handles look it up on every call. Frozen dataclasses still
        # have an instance dict, which equality and hashing (over the fields) ignore.
        key = self.__dict__.get("_key")
        if key is None:
            key = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
            self.__dict__["_key"] = key
        return key

    def describe(self) -> str:
        """Short human-readable form for error messages and reports."""
        dims = "x".join(map(str, self.input_size))
        filt = "x".join(map(str, self.filter_size))
        extras = []
        if any(p for p in self.padding):
            extras.append(f"pad={','.join(map(str, self.padding))}")
        if any(s != 1 for s in self.stride):
            extras.append(f"stride={','.join(map(str, self.stride))}")
        if any(d != 1 for d in self.dilation):
            extras.append(f"dil={','.join(map(str, self.dilation))}")
        if self.groups != 1:
            extras.append(f"groups={self.groups}")
        tail = (" " + " ".join(extras)) if extras else ""
        return (
            f"N={self.batch} C={self.in_channels}->K={self.out_channels} {dims} "
            f"filter {filt}{tail} {self.layout} {self.dtype}"
        )
