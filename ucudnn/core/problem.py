"""One convolution as cuDNN sees it, with every field that can change its result or speed.

Pure Python: the planner, the cache and the runtime all key on `ConvProblem.key()`, so two
problems that differ in any field never share a plan or a benchmark row.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Literal, SupportsIndex, TypeGuard, cast

from ucudnn.core.argtypes import Dimensions, PerDimension
from ucudnn.core.checks import boolean, integer, parse_bool, shown
from ucudnn.core.description import describe_convolution
from ucudnn.core.padding import PaddedEnds, padding_word, word_padding

Kernel = Literal["forward", "backward_data", "backward_filter"]
KERNELS: tuple[Kernel, ...] = ("forward", "backward_data", "backward_filter")
TensorName = Literal["x", "w", "y", "b"]  # "b": the bias, one value per output channel

DTYPES = ("float32", "float16", "bfloat16", "float64")
MATH_TYPES = ("default", "tensor_op", "tensor_op_allow_conversion", "fma")
MODES = ("cross_correlation", "convolution")
LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
# cuDNN takes dimensions and strides as 32-bit ints: no batch, extent or stride exceeds this.
# Its tensor descriptors also hold at most this many elements, padding between them included.
MAX_DIM = 2**31 - 1

# The least value of each integer field; tuples bound each of their entries.
_MINIMUM = {
    "batch": 0, "in_channels": 1, "out_channels": 1, "groups": 1, "input_size": 1,
    "filter_size": 1, "padding": 0, "padding_after": 0, "stride": 1, "dilation": 1,
    "x_strides": 1, "y_strides": 1,
}  # fmt: skip
_TUPLE_FIELDS = ("input_size", "filter_size", "padding", "stride", "dilation")
# The text fields, in the order they are checked (and layer lists write their columns).
TEXT_FIELDS = ("layout", "filter_layout", "dtype", "compute_dtype", "math_type", "mode")


# Whether float32 problems whose math type is not named may use TF32 tensor cores.
ALLOW_TF32_VARIABLE = "UCUDNN_ALLOW_TF32"


def tf32_allowed(environ: Mapping[str, str] = os.environ) -> bool:
    """UCUDNN_ALLOW_TF32 as a yes/no value; unset or empty: no."""
    text = environ.get(ALLOW_TF32_VARIABLE, "").strip()
    return parse_bool(text, ALLOW_TF32_VARIABLE) if text else False


def default_math_type(dtype: str, allow_tf32: bool | None = None) -> str:
    """The library's one rule for a problem whose math type is not named.

    float32 stays float32 ("fma": no TF32) unless TF32 is allowed (`allow_tf32`, else
    UCUDNN_ALLOW_TF32), then "default", which lets cuDNN use TF32 tensor cores. Off by
    default because a float32 caller expects float32 results: TF32 keeps 10 mantissa bits, an
    error near 1e-3 that PyTorch accepts for its convolutions by default but a numpy user
    comparing with numpy would call wrong. Half types use tensor cores ("tensor_op"), which
    lose nothing they had; float64 has no tensor-core path ("default").
    """
    allowed = None if allow_tf32 is None else boolean(allow_tf32, "allow_tf32")
    if dtype == "float32":
        return "default" if (tf32_allowed() if allowed is None else allowed) else "fma"
    return "tensor_op" if dtype in ("float16", "bfloat16") else "default"


def check_kernel(kernel: str) -> Kernel:
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {shown(kernel)}; expected one of {', '.join(KERNELS)}")
    return kernel


def conv_output_size(
    size: int, kernel: int, pad: int, stride: int, dilation: int, pad_after: int | None = None
) -> int:
    """Output extent of one spatial dimension (cuDNN's formula) padded by `pad` before and
    `pad_after` (default: `pad`) after; may be < 1 for bad inputs."""
    after = pad if pad_after is None else pad_after
    return (size + pad + after - dilation * (kernel - 1) - 1) // stride + 1


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


def _dimension(value: object, name: str) -> int:
    """An integer field (batch, channels, groups) as a plain int within cuDNN's bounds."""
    return integer(value, name, minimum=_MINIMUM[name], maximum=MAX_DIM)


def _dimensions(value: object, name: str) -> tuple[int, ...]:
    """A tuple field (sizes, padding, strides) or a shape as plain ints, each within cuDNN's
    bounds; entries are named as `name[i]`."""
    try:
        values = tuple(_integer_sequence(value))  # TypeError if it is not
    except TypeError:
        raise TypeError(f"{name} must be a sequence of integers, got {shown(value)}") from None
    low = _MINIMUM.get(name, 0)
    if _plain_ints_within(values, low):
        return values  # the usual case, without building a name for every entry
    return tuple(
        integer(v, f"{name}[{i}]", minimum=low, maximum=MAX_DIM) for i, v in enumerate(values)
    )


def _integer_sequence(value: object) -> Iterable[object]:
    """`value` as an iterable; TypeError if it is none, or bytes (whose iteration gives small
    integers, never meant as sizes)."""
    if isinstance(value, (bytes, bytearray)):
        raise TypeError(f"bytes are not a sequence of integers: {shown(value)}")
    return iter(cast("Iterable[object]", value))


def _plain_ints_within(values: tuple[object, ...], low: int) -> TypeGuard[tuple[int, ...]]:
    return all(type(v) is int and low <= v <= MAX_DIM for v in values)


def _text(value: object, name: str) -> str:
    """A text field as a plain str; None means "" (the default, where the field has one)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {shown(value)} ({type(value).__name__})")
    return str(value)


def _per_dimension(value: object, rank: int, name: str) -> tuple[int, ...]:
    """One value for every spatial dimension: a single integer is repeated.

    The entries of a sequence are returned as given: ConvProblem.__post_init__ checks and
    converts them, as it does every field.
    """
    try:
        values = tuple(_integer_sequence(value))  # TypeError if it is not
    except TypeError:  # not a sequence (numpy's 0-d arrays included): one integer for all
        return (integer(value, name),) * rank
    if len(values) != rank:
        raise ValueError(f"{name} must be an int or {rank} ints, got {shown(values)}")
    return cast("tuple[int, ...]", values)


def _check_tensor(tensor: object, known: tuple[str, ...]) -> None:
    if tensor not in known:
        raise ValueError(f"tensor must be one of {', '.join(known)}, got {shown(tensor)}")


def _span(dims: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements from a tensor's first to its last, gaps included (dims all >= 1)."""
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides, strict=True))


@dataclasses.dataclass(frozen=True)
class ConvProblem(PaddedEnds):
    """A convolution y = conv(x, w) of rank 2 (NCHW/NHWC) or 3 (NCDHW/NDHWC).

    Dimensions are logical: `input_size` and `filter_size` are spatial extents in the order
    (D,) H, W whatever the memory layout. Strides of x and y are element strides in logical
    order (N, C, *spatial); packed strides for `layout` are filled in when not given.

    Raises (when made, and from `create` and `from_shapes` alike):
        TypeError: a field of the wrong type: a bool, a float or text where an integer goes,
            something other than a sequence where one goes, a text field that is not text.
        ValueError: a value outside cuDNN's range (a dimension or stride below its least
            value or above 2**31 - 1), sizes of different ranks, a rank other than 2 or 3,
            an unknown layout, dtype, math type or mode, groups that do not divide the
            channels, an empty output, or one sample or the filter too large for one cuDNN
            descriptor.
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
    math_type: str = ""  # default: `default_math_type(dtype)`
    mode: str = "cross_correlation"
    x_strides: tuple[int, ...] = ()
    y_strides: tuple[int, ...] = ()
    # Zeros after each spatial axis, where they differ from `padding` (zeros before it): ()
    # pads both ends alike, as every problem a caller gives does. Only the parts of a spatial
    # split have it (`ucudnn.core.slabs`): a border slab is padded on one side. The graph API
    # runs it; cuDNN's legacy descriptors cannot.
    padding_after: tuple[int, ...] = ()

    @classmethod
    def create(
        cls,
        batch: SupportsIndex,
        in_channels: SupportsIndex,
        out_channels: SupportsIndex,
        input_size: Dimensions,
        filter_size: PerDimension,
        padding: PerDimension | str = 0,
        stride: PerDimension = 1,
        dilation: PerDimension = 1,
        *,
        allow_tf32: bool | None = None,
        **fields: object,
    ) -> ConvProblem:
        """Build a problem, broadcasting int padding/stride/dilation/filter over the rank.

        `padding` may also be "same" or "valid" (see `ucudnn.core.padding`). `allow_tf32`
        picks the math type by `default_math_type` (unset: UCUDNN_ALLOW_TF32); give it or a
        `math_type`, not both.

        Raises:
            TypeError, ValueError: a field as the class refuses it; ValueError also for both
                allow_tf32 and math_type, an unknown padding word, or a stride above 1 with
                padding="same".
            AsymmetricPaddingError: padding="same" needs more padding after than before (an
                even kernel), which cuDNN cannot do; a ValueError whose `before` and `after`
                say how to pad x yourself.
        """
        input_size = _dimensions(input_size, "input_size")
        rank = len(input_size)
        filter_size = _per_dimension(filter_size, rank, "filter_size")
        stride = _per_dimension(stride, rank, "stride")
        dilation = _per_dimension(dilation, rank, "dilation")
        word = padding_word(padding)
        if word is None:
            padding = _per_dimension(padding, rank, "padding")
        else:  # the arithmetic needs the sizes checked first
            padding = word_padding(
                word,
                _dimensions(filter_size, "filter_size"),
                _dimensions(stride, "stride"),
                _dimensions(dilation, "dilation"),
            )
        if allow_tf32 is not None:
            if fields.get("math_type"):
                raise ValueError("give allow_tf32 or math_type, not both")
            fields["math_type"] = default_math_type(str(fields.get("dtype", "float32")), allow_tf32)
        return cls(
            batch=_dimension(batch, "batch"),
            in_channels=_dimension(in_channels, "in_channels"),
            out_channels=_dimension(out_channels, "out_channels"),
            input_size=input_size,
            filter_size=filter_size,
            padding=padding,
            stride=stride,
            dilation=dilation,
            **fields,  # type: ignore[arg-type]
        )

    @classmethod
    def from_shapes(
        cls,
        x_shape: Dimensions,
        w_shape: Dimensions,
        *,
        layout: str = "",
        filter_layout: str = "",
        padding: PerDimension | str = 0,
        stride: PerDimension = 1,
        dilation: PerDimension = 1,
        groups: SupportsIndex = 1,
        allow_tf32: bool | None = None,
        x_strides: Dimensions | None = None,
        y_strides: Dimensions | None = None,
        **fields: object,
    ) -> ConvProblem:
        """A problem from array shapes as stored (NHWC arrays are (N, H, W, C)).

        `x_strides`/`y_strides` are element strides in the same stored order, if not packed.
        The other arguments are as `create` takes them.

        Raises:
            TypeError, ValueError, AsymmetricPaddingError: as `create` raises them; ValueError
                also for shapes of rank other than 4 or 5 or of different ranks, channels of
                x that do not match w's times groups, or strides of the wrong length.
        """
        x_shape, w_shape = _dimensions(x_shape, "x_shape"), _dimensions(w_shape, "w_shape")
        if len(x_shape) not in (4, 5):
            raise ValueError(f"x must have rank 4 (2D) or 5 (3D), got shape {x_shape}")
        if len(w_shape) != len(x_shape):
            raise ValueError(f"w has rank {len(w_shape)} but x has rank {len(x_shape)}")
        rank = len(x_shape) - 2
        layout = _text(layout, "layout") or LAYOUTS[rank][0]
        if layout not in LAYOUTS[rank]:
            raise ValueError(f"layout {shown(layout)} is not one of {', '.join(LAYOUTS[rank])}")
        filter_layout = _text(filter_layout, "filter_layout") or layout
        if filter_layout not in LAYOUTS[rank]:
            raise ValueError(
                f"filter_layout {shown(filter_layout)} is not one of {', '.join(LAYOUTS[rank])}"
            )
        n, c, *spatial = to_logical(x_shape, layout)
        k, c_per_group, *filter_size = to_logical(w_shape, filter_layout)
        groups = _dimension(groups, "groups")
        if c != c_per_group * groups:
            raise ValueError(
                f"x has {c} channels but w expects {c_per_group} per group x {groups} "
                f"group(s) = {c_per_group * groups} (x shape {x_shape}, w shape {w_shape})"
            )
        strides = {}
        for name, value in (("x_strides", x_strides), ("y_strides", y_strides)):
            if value is not None:
                value = _dimensions(value, name)
                if len(value) != len(x_shape):
                    raise ValueError(f"{name} must have {len(x_shape)} entries, got {shown(value)}")
                strides[name] = to_logical(value, layout)
        return cls.create(
            n, c, k, tuple(spatial), tuple(filter_size), padding, stride, dilation,
            allow_tf32=allow_tf32, groups=groups, layout=layout, filter_layout=filter_layout,
            **strides, **fields,
        )  # fmt: skip

    def __post_init__(self) -> None:
        self._normalise_types()
        rank = len(self.input_size)
        if rank not in LAYOUTS:
            raise ValueError(f"only 2D and 3D convolutions are supported, got {rank} spatial dims")
        if not self.layout:
            object.__setattr__(self, "layout", LAYOUTS.get(rank, ("",))[0])
        if not self.filter_layout:
            object.__setattr__(self, "filter_layout", self.layout)
        if not self.math_type:
            object.__setattr__(self, "math_type", default_math_type(self.dtype))
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
            if len(getattr(self, name)) != rank + 2:
                raise ValueError(
                    f"{name} must have {rank + 2} entries, got {shown(getattr(self, name))}"
                )
        self._check_descriptor_sizes()

    def _normalise_types(self) -> None:
        """Any integral type (numpy's too) is stored as a plain int and text as a plain str,
        so keys and JSON are clean; bools, floats and values past cuDNN's 32-bit bounds are
        refused."""
        for name in ("batch", "in_channels", "out_channels", "groups"):
            object.__setattr__(self, name, _dimension(getattr(self, name), name))
        for name in (*_TUPLE_FIELDS, "x_strides", "y_strides", "padding_after"):
            object.__setattr__(self, name, _dimensions(getattr(self, name), name))
        if self.padding_after == self.padding:  # one spelling per problem, so one key
            object.__setattr__(self, "padding_after", ())
        for name in TEXT_FIELDS:
            object.__setattr__(self, name, _text(getattr(self, name), name))

    def _validate(self, rank: int) -> None:
        for name in ("filter_size", "padding", "stride", "dilation"):
            if len(getattr(self, name)) != rank:
                raise ValueError(f"{name} has {len(getattr(self, name))} dims, expected {rank}")
        if self.padding_after and len(self.padding_after) != rank:
            raise ValueError(f"padding_after has {len(self.padding_after)} dims, expected {rank}")
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
                    f"{name} {shown(getattr(self, name))} is not one of {', '.join(allowed)}"
                )
        if any(o < 1 for o in self.output_size):
            raise ValueError(
                f"output would be empty: input {self.input_size}, filter {self.filter_size}, "
                f"padding {self.padding}, stride {self.stride}, dilation {self.dilation}"
            )

    def _check_descriptor_sizes(self) -> None:
        """Refuse a problem whose single sample (or filter) is too big for one cuDNN
        descriptor: no micro-batch can run it.

        A whole batch too big for one descriptor is accepted, and the planner plans it, but
        running it needs every micro-batch size the runtime benchmarks to fit one descriptor,
        which the runtime does not arrange yet: it benchmarks the full batch too (a descriptor
        cuDNN refuses) and allocates buffers for the whole batch."""
        sample = {
            "one sample of x": _span((1, *self.x_dims[1:]), self.x_strides),
            "one sample of y": _span((1, *self.y_dims[1:]), self.y_strides),
            "the filter w": math.prod(self.w_dims),
        }
        for what, elements in sample.items():
            if elements > MAX_DIM:
                raise ValueError(
                    f"{what} spans {elements} elements, but cuDNN's tensor descriptors hold "
                    f"at most 2**31 - 1 = {MAX_DIM} (32-bit sizes), so no micro-batch can run "
                    f"it: {self.describe()}"
                )

    # -- derived shapes ---------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.input_size)

    @functools.cached_property  # the cost models ask for it per candidate and micro-batch
    def output_size(self) -> tuple[int, ...]:
        return tuple(
            conv_output_size(size, kernel, before, stride, dilation, after)
            for size, kernel, before, stride, dilation, after in zip(
                self.input_size,
                self.filter_size,
                self.padding,
                self.stride,
                self.dilation,
                self.padding_end,
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
    def b_shape(self) -> tuple[int, ...]:
        """Shape of a bias: one value per output channel (as PyTorch stores it)."""
        return (self.out_channels,)

    @property
    def b_dims(self) -> tuple[int, ...]:
        """The bias as cuDNN broadcasts it over y: (1, K, 1, ...)."""
        return (1, self.out_channels, *(1,) * self.rank)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @functools.cached_property
    def stored_arrays(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """(shape, byte strides) of x, w, y and b as stored for this problem: x and y with
        their strides, w and b packed. Worked out once: Handles check arrays on every call."""
        size = self.itemsize
        packed_w = packed_strides(self.w_dims, self.filter_layout)
        logical = {"x": self.x_strides, "w": packed_w, "y": self.y_strides}
        layouts = {"x": self.layout, "w": self.filter_layout, "y": self.layout}
        arrays = {
            t: (shape, tuple(s * size for s in to_physical(logical[t], layouts[t])))
            for t, shape in (("x", self.x_shape), ("w", self.w_shape), ("y", self.y_shape))
        }
        arrays["b"] = (self.b_shape, (size,))
        return arrays

    def nbytes(self, tensor: TensorName) -> int:
        """Bytes spanned by x, w, y or b (strided tensors span up to their last element)."""
        _check_tensor(tensor, ("x", "w", "y", "b"))
        if tensor in ("w", "b"):
            return math.prod(self.w_dims if tensor == "w" else self.b_shape) * self.itemsize
        dims, strides = (
            (self.x_dims, self.x_strides) if tensor == "x" else (self.y_dims, self.y_strides)
        )
        if 0 in dims:
            return 0
        return _span(dims, strides) * self.itemsize

    def sample_offset_bytes(self, tensor: Literal["x", "y"], first_sample: int) -> int:
        """Byte offset of sample `first_sample` in x or y: how micro-batches slice the batch."""
        _check_tensor(tensor, ("x", "y"))
        strides = self.x_strides if tensor == "x" else self.y_strides
        return first_sample * strides[0] * self.itemsize

    def with_batch(self, batch: SupportsIndex) -> ConvProblem:
        """The same problem on `batch` samples; tensor strides are kept, so slices alias."""
        return dataclasses.replace(self, batch=_dimension(batch, "batch"))

    # -- identity ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        """Every field, but `padding_after` only where it differs from `padding`: the keys,
        plans and caches of problems padded alike read as before it existed."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if not self.padding_after:
            del fields["padding_after"]
        return fields

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ConvProblem:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown problem fields: {', '.join(map(shown, sorted(unknown)))}")
        return cls(**data)  # type: ignore[arg-type]

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
        return describe_convolution(
            (self.batch, self.in_channels, *self.input_size),
            (self.out_channels, self.in_channels // self.groups, *self.filter_size),
            self.padding,
            self.stride,
            self.dilation,
            self.groups,
            self.layout,
            self.dtype,
            self.padding_after,
        )


def check_problem(problem: object) -> ConvProblem:
    """`problem` itself, refused with its type unless it is a ConvProblem."""
    if not isinstance(problem, ConvProblem):
        raise TypeError(f"problem must be a ConvProblem, got {shown(problem)}")
    return problem
