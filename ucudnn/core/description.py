"""A convolution in one line, as error messages and reports show it (of a ConvProblem, and of
what the simulated device reads off its descriptors)."""

from __future__ import annotations

from collections.abc import Sequence


def describe_convolution(
    x_dims: Sequence[int],
    w_dims: Sequence[int],
    padding: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    layout: str,
    dtype: str,
    padding_after: Sequence[int] = (),
) -> str:
    """A convolution in one line, from its logical dims x (N, C, *spatial) and w (K, C/groups,
    *filter): what error messages and reports show of a problem. An axis padded unequally
    shows as before+after."""
    n, c, *size = x_dims
    k, _, *filt = w_dims
    extras = []
    after = tuple(padding_after) or tuple(padding)
    if any(padding) or any(after):
        pads = (str(b) if b == a else f"{b}+{a}" for b, a in zip(padding, after, strict=True))
        extras.append(f"pad={','.join(pads)}")
    if any(s != 1 for s in stride):
        extras.append(f"stride={','.join(map(str, stride))}")
    if any(d != 1 for d in dilation):
        extras.append(f"dil={','.join(map(str, dilation))}")
    if groups != 1:
        extras.append(f"groups={groups}")
    tail = (" " + " ".join(extras)) if extras else ""
    return (
        f"N={n} C={c}->K={k} {'x'.join(map(str, size))} "
        f"filter {'x'.join(map(str, filt))}{tail} {layout} {dtype}"
    )
