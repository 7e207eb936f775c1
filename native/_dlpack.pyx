# cython: language_level=3
"""Consumer side of DLPack: take ownership of a producer's capsule and read its tensor.

A capsule named "dltensor" (or "dltensor_versioned") is renamed "used_dltensor" (or
"used_dltensor_versioned") when consumed, which tells the producer's capsule destructor that
the deleter is now ours to call; DLPackTensor calls it when it is garbage. Nothing here touches
the tensor's memory, so CPU capsules parse the same way as CUDA ones.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_SetName
from libc.stdint cimport uintptr_t

from dlpack cimport (
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLTensor,
)

# PyCapsule_SetName keeps the pointer, so the names must be static C strings.
cdef const char* UNVERSIONED = b"dltensor"
cdef const char* VERSIONED = b"dltensor_versioned"
cdef const char* USED_UNVERSIONED = b"used_dltensor"
cdef const char* USED_VERSIONED = b"used_dltensor_versioned"

# The newest DLPack major version whose DLTensor layout this module knows.
cdef unsigned int MAX_MAJOR = 1


cdef class DLPackTensor:
    """A consumed DLPack capsule: owns the producer's tensor until this object is garbage.

    ptr is data + byte_offset; strides are in elements, None when the tensor is C-contiguous.
    """

    cdef DLManagedTensor* _managed
    cdef DLManagedTensorVersioned* _versioned
    cdef readonly int device_type
    cdef readonly int device_id
    cdef readonly object ptr
    cdef readonly tuple shape
    cdef readonly object strides
    cdef readonly int dtype_code
    cdef readonly int dtype_bits
    cdef readonly int dtype_lanes
    cdef readonly bint readonly
    cdef readonly tuple version

    def __cinit__(self, capsule):
        cdef DLTensor* tensor
        if PyCapsule_IsValid(capsule, VERSIONED):
            self._versioned = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, VERSIONED)
            PyCapsule_SetName(capsule, USED_VERSIONED)
            self.version = (self._versioned.version.major, self._versioned.version.minor)
            # Checked after taking ownership, so __dealloc__ still returns the tensor.
            if self.version[0] > MAX_MAJOR:
                raise ValueError(
                    f"DLPack version {self.version[0]}.{self.version[1]} is not supported "
                    f"(major version {MAX_MAJOR} at most)"
                )
            self.readonly = self._versioned.flags & DLPACK_FLAG_BITMASK_READ_ONLY
            tensor = &self._versioned.dl_tensor
        elif PyCapsule_IsValid(capsule, UNVERSIONED):
            self._managed = <DLManagedTensor*>PyCapsule_GetPointer(capsule, UNVERSIONED)
            PyCapsule_SetName(capsule, USED_UNVERSIONED)
            self.version = (0, 0)
            tensor = &self._managed.dl_tensor
        elif PyCapsule_IsValid(capsule, USED_UNVERSIONED) or PyCapsule_IsValid(
            capsule, USED_VERSIONED
        ):
            raise ValueError("this DLPack capsule was already consumed")
        else:
            raise TypeError(
                f"expected a DLPack capsule (from __dlpack__()), got {type(capsule).__name__}"
            )
        self.device_type = tensor.device.device_type
        self.device_id = tensor.device.device_id
        self.ptr = <uintptr_t>tensor.data + tensor.byte_offset
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        if tensor.strides != NULL:
            self.strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
        self.dtype_code = tensor.dtype.code
        self.dtype_bits = tensor.dtype.bits
        self.dtype_lanes = tensor.dtype.lanes

    def __dealloc__(self):
        if self._versioned != NULL and self._versioned.deleter != NULL:
            self._versioned.deleter(self._versioned)
        elif self._managed != NULL and self._managed.deleter != NULL:
            self._managed.deleter(self._managed)
