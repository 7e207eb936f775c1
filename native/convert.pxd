# Python int -> C conversions shared by _cuda and _cudnn; errors name the argument.

from cpython.number cimport PyNumber_Index
from libc.stdint cimport uintptr_t


cdef inline object to_int(object value, str what):
    try:
        return PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {value!r}") from None


cdef inline uintptr_t to_address(object value, str what) except? 0:
    address = to_int(value, what)
    if address < 0:
        raise ValueError(f"{what} must be a non-negative address, got {address}")
    return address


cdef inline size_t to_size(object value, str what) except? 0:
    n = to_int(value, what)
    if n < 0:
        raise ValueError(f"{what} must be >= 0, got {n}")
    return n
