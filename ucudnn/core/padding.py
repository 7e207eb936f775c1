"""Padding as PyTorch users write it: integers, or the words "same" and "valid".

cuDNN's convolution descriptors pad both ends of an axis alike. "valid" is no padding. "same"
pads so that a stride-1 output keeps the input's extent: dilation * (kernel - 1) elements in
all, half of them (rounded down) before and the rest after, as PyTorch splits them. An even
effective kernel leaves one more after than before, which no descriptor holds:
`AsymmetricPaddingError` says how much goes where, and the NumPy functions and ucudnn.torch
then pad the input's end themselves. As in PyTorch, "same" is refused for strided
convolutions, whose output extent would depend on how the padding is split.
"""

from __future__ import annotations

from ucudnn.core.checks import shown

PADDING_WORDS = ("same", "valid")


class PaddedEnds:
    """What a convolution padded by `padding` before each spatial axis and `padding_after`
    after it (() where both ends are alike, its one spelling then) says of its ends."""

    padding: tuple[int, ...]
    padding_after: tuple[int, ...]

    @property
    def padding_end(self) -> tuple[int, ...]:
        """Zeros after each spatial axis (`padding` is before it)."""
        return self.padding_after or self.padding

    @property
    def symmetric(self) -> bool:
        """Whether both ends of every axis are padded alike, as legacy descriptors pad."""
        return not self.padding_after


class AsymmetricPaddingError(ValueError):
    """ "same" padding that needs more after than before on some axis."""

    def __init__(self, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        self.before = before
        self.after = after
        super().__init__(
            f"padding='same' here needs {before} before and {after} after the spatial axes, "
            "but cuDNN's convolution descriptors pad both ends alike: pad the input's end by "
            f"the difference and give padding={before} (the NumPy functions do so themselves)"
        )

    @property
    def end_extra(self) -> tuple[int, ...]:
        """The zeros the input lacks after each spatial axis (after minus before), which the
        caller adds itself, padding the problem by `before` only."""
        return tuple(a - b for a, b in zip(self.after, self.before, strict=True))

    def padded_dims(self, dims: tuple[int, ...]) -> tuple[int, ...]:
        """The logical dims (N, C, *spatial) of an input of `dims` with those zeros added."""
        n, c, *spatial = dims
        return (n, c, *(s + e for s, e in zip(spatial, self.end_extra, strict=True)))


def padding_word(value: object) -> str | None:
    """ "same" or "valid" (any letter case) for text, None for anything else (integers)."""
    if not isinstance(value, str):
        return None
    word = value.strip().lower()
    if word not in PADDING_WORDS:
        raise ValueError(
            f"padding {shown(value)} is not 'same', 'valid', an integer or one per spatial axis"
        )
    return word


def word_padding(
    word: str, filter_size: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> tuple[int, ...]:
    """The symmetric padding that `word` means for this filter, per spatial axis; raises
    AsymmetricPaddingError where "same" needs one more after than before."""
    if word == "valid":
        return (0,) * len(filter_size)
    if any(s != 1 for s in stride):
        raise ValueError(
            f"padding='same' is not supported for strided convolutions (stride {stride}), as "
            "in PyTorch; give the padding as integers"
        )
    totals = [d * (k - 1) for k, d in zip(filter_size, dilation, strict=True)]
    before = tuple(total // 2 for total in totals)
    after = tuple(total - total // 2 for total in totals)
    if before != after:
        raise AsymmetricPaddingError(before, after)
    return before
