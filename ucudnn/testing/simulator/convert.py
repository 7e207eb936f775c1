"""Argument conversion and failures as the native modules make them, so that the simulated
libraries refuse bad arguments with the same exceptions and messages (native/convert.pxd,
and the checks at the top of native/_cuda.pyx and native/_cudnn.pyx)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import TypeVar, cast

from ucudnn.errors import CudaError, CudnnError, cuda_error_class, cudnn_error_class
from ucudnn.testing.simulator import statuses

INT_MAX = 2**31 - 1
DIM_MAX = 8  # CUDNN_DIM_MAX

T = TypeVar("T")


def to_int(value: object, what: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an int, got {value!r}") from None


def to_address(value: object, what: str) -> int:
    address = to_int(value, what)
    if address < 0:
        raise ValueError(f"{what} must be a non-negative address, got {address}")
    return address


def to_size(value: object, what: str) -> int:
    n = to_int(value, what)
    if n < 0:
        raise ValueError(f"{what} must be >= 0, got {n}")
    return n


def to_c_int(value: object, what: str) -> int:
    """An int argument Cython types as C int."""
    if isinstance(value, float):
        raise TypeError(f"'float' object cannot be interpreted as an integer ({what})")
    number = to_int(value, what)
    if not -(2**31) <= number <= INT_MAX:
        raise OverflowError(f"value too large to convert to int ({what})")
    return number


def ints(values: object, max_len: int, what: str) -> tuple[int, ...]:
    """A sequence of 1..max_len C ints."""
    try:
        items = tuple(cast(Iterable[object], values))
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, got {values!r}") from None
    if not 0 < len(items) <= max_len:
        raise ValueError(f"{what} must have 1 to {max_len} entries, got {len(items)}")
    checked = []
    for i, item in enumerate(items):
        number = to_int(item, f"{what}[{i}]")
        if not -(2**31) <= number <= INT_MAX:
            raise ValueError(f"{what}[{i}] = {number} does not fit in a C int")
        checked.append(number)
    return tuple(checked)


def lookup(table: Mapping[str, T], name: object, what: str) -> T:
    try:
        return table[name]  # type: ignore[index]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown {what} {name!r}; expected one of {', '.join(map(repr, table))}"
        ) from None


def cuda_error(code: int, call: str) -> CudaError:
    """The exception the runtime binding raises for `code` from `call`."""
    return cuda_error_class(code)(
        code, statuses.cuda_error_name(code), call, statuses.cuda_error_string(code)
    )


def cudnn_error(status: int, call: str, detail: str) -> CudnnError:
    """The exception the cuDNN binding raises; `detail` plays cudnnGetLastErrorString, and
    says the simulator wrote it."""
    return cudnn_error_class(status)(
        status, statuses.cudnn_status_name(status), call, f"simulated cuDNN: {detail}"
    )
