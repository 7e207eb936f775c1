"""What a converted layer's call is, in ucudnn's terms: the ConvProblem of its tensors, the
memory format they run in, and the zeros "same" padding adds to the input's end.

PyTorch tensors keep their logical shape (N, C, *spatial) in every memory format; ucudnn's
problems describe tensors as stored. A channels-last input (`channels_last`,
`channels_last_3d`) runs as an NHWC (NDHWC) problem, with its filter in the same order.
"""

from __future__ import annotations

import dataclasses
import operator

import torch
import torch.nn.functional as F

from ucudnn.core.padding import AsymmetricPaddingError
from ucudnn.core.problem import LAYOUTS, ConvProblem, to_physical

# torch's dtypes the Handle runs, by ucudnn's names for them.
DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
}


@dataclasses.dataclass(frozen=True)
class LayerSettings:
    """A convolution layer's own arguments, as torch.nn.Conv2d/Conv3d keep them."""

    stride: tuple[int, ...]
    padding: tuple[int, ...] | str
    dilation: tuple[int, ...]
    groups: int


@dataclasses.dataclass(frozen=True)
class Geometry:
    """One call's problem, and how its tensors are laid out for it."""

    problem: ConvProblem
    channels_last: bool
    end_padding: tuple[int, ...]  # zeros after each spatial axis, last axis first (F.pad order)

    @property
    def memory_format(self) -> torch.memory_format:
        return channels_last_format(self.problem.rank) if self.channels_last else _CONTIGUOUS

    def prepared(self, tensor: torch.Tensor) -> torch.Tensor:
        """`tensor` dense in this call's memory format: itself when it already is, else a
        copy (as PyTorch's own cuDNN path makes one)."""
        return tensor.contiguous(memory_format=self.memory_format)

    def stored(self, tensor: torch.Tensor) -> torch.Tensor:
        """`tensor` (x, w, y or a gradient of one, dense in this call's memory format) viewed
        in the order it is stored, as the problem describes it: a C-contiguous view."""
        if not self.channels_last:
            return tensor
        return tensor.permute(0, *range(2, tensor.dim()), 1)

    def padded_input(self, x: torch.Tensor) -> torch.Tensor:
        """x with the zeros that "same" padding of an even kernel puts after its end (cuDNN
        pads both ends alike): a padded copy, through autograd, so the gradient is cropped
        back. x itself when none are needed."""
        if not any(self.end_padding):
            return x
        pairs = [amount for extra in self.end_padding for amount in (0, extra)]
        return F.pad(x, pairs)


_CONTIGUOUS = torch.contiguous_format


def channels_last_format(rank: int) -> torch.memory_format:
    return torch.channels_last if rank == 2 else torch.channels_last_3d


def is_channels_last(tensor: torch.Tensor) -> bool:
    """Whether `tensor` is stored channels-last and not also plainly contiguous (a tensor with
    one element per channel plane is both: it runs channels-first)."""
    layout = channels_last_format(tensor.dim() - 2)
    return tensor.is_contiguous(memory_format=layout) and not tensor.is_contiguous()


def runs_channels_last(x: torch.Tensor, w: torch.Tensor) -> bool:
    """PyTorch's choice for cuDNN: channels-last when the input or the filter is."""
    return is_channels_last(x) or is_channels_last(w)


def tf32_allowed() -> bool:
    """Whether PyTorch lets its cuDNN convolutions use TF32: the first setting of its newer API
    that is not "none" (for cuDNN's convolutions, for cuDNN, for every backend: PyTorch 2.9 and
    later), else torch.backends.cudnn.allow_tf32."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None:
        levels = (conv, torch.backends.cudnn, torch.backends)
        for level in levels:
            precision = getattr(level, "fp32_precision", "none")
            if precision != "none":
                return bool(precision == "tf32")
    return bool(torch.backends.cudnn.allow_tf32)


def geometry_of(
    x: torch.Tensor,
    w: torch.Tensor,
    channels_last: bool,
    settings: LayerSettings,
    allow_tf32: bool,
) -> Geometry:
    """The geometry of a call of a layer with `settings` on x and w (of one dtype the Handle
    runs, checked by the caller), channels-last or not (`runs_channels_last`).

    Raises:
        ValueError: shapes that do not make a convolution (channels that do not match w's
            times groups, a filter larger than the padded input, ...), as ConvProblem says.
    """
    rank = x.dim() - 2
    layout = LAYOUTS[rank][1 if channels_last else 0]
    x_size, w_size = tuple(x.shape), tuple(w.shape)
    dtype = DTYPE_NAMES[x.dtype]
    tf32 = allow_tf32 if dtype == "float32" else None
    try:
        problem = _problem(x_size, w_size, layout, settings, settings.padding, dtype, tf32)
        return Geometry(problem, channels_last, ())
    except AsymmetricPaddingError as uneven:
        padded = uneven.padded_dims(x_size)
        problem = _problem(padded, w_size, layout, settings, uneven.before, dtype, tf32)
        return Geometry(problem, channels_last, tuple(reversed(uneven.end_extra)))


def _problem(
    x_size: tuple[int, ...],
    w_size: tuple[int, ...],
    layout: str,
    settings: LayerSettings,
    padding: tuple[int, ...] | str,
    dtype: str,
    allow_tf32: bool | None,
) -> ConvProblem:
    return ConvProblem.from_shapes(
        to_physical(x_size, layout), to_physical(w_size, layout), layout=layout,
        padding=padding, stride=settings.stride, dilation=settings.dilation,
        groups=operator.index(settings.groups), dtype=dtype, allow_tf32=allow_tf32,
    )  # fmt: skip
