"""The element types of device arrays and problems, by name, and how the host holds them.

Nothing native is imported: the simulated device uses it too.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ucudnn.core.checks import shown

# Element types: name -> (itemsize, __cuda_array_interface__ typestr). bfloat16 has no typestr.
ELEMENTS: dict[str, tuple[int, str | None]] = {
    "float16": (2, "<f2"),
    "bfloat16": (2, None),
    "float32": (4, "<f4"),
    "float64": (8, "<f8"),
    "int8": (1, "|i1"),
    "uint8": (1, "|u1"),
    "int32": (4, "<i4"),
    "int64": (8, "<i8"),
}
DTYPES = tuple(ELEMENTS)


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name; ValueError for unknown names."""
    return ELEMENTS[check_dtype(dtype)][0]


def host_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that holds this dtype on the host (`ml_dtypes.bfloat16` for bfloat16)."""
    return np.dtype(ml_dtypes.bfloat16 if check_dtype(dtype) == "bfloat16" else dtype)


def check_dtype(dtype: object) -> str:
    if not isinstance(dtype, str) or dtype not in ELEMENTS:
        raise ValueError(f"unsupported dtype {shown(dtype)}; expected one of {', '.join(DTYPES)}")
    return dtype
