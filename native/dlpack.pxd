# The DLPack exchange structs from the public spec (dlpack.h, v1.x). No header is needed: Cython
# emits these definitions, and their field order is the ABI, so it must not change.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef enum:
    DLPACK_FLAG_BITMASK_READ_ONLY = 1

cdef struct DLDevice:
    int32_t device_type  # the spec's DLDeviceType, an int-sized C enum
    int32_t device_id

cdef struct DLDataType:
    uint8_t code
    uint8_t bits
    uint16_t lanes

cdef struct DLTensor:
    void* data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t* shape
    int64_t* strides  # in elements; NULL means C-contiguous
    uint64_t byte_offset

# The unversioned form, in capsules named "dltensor".
cdef struct DLManagedTensor:
    DLTensor dl_tensor
    void* manager_ctx
    void (*deleter)(DLManagedTensor*) noexcept

cdef struct DLPackVersion:
    uint32_t major
    uint32_t minor

# DLPack >= 1.0, in capsules named "dltensor_versioned"; the fields up to flags stay stable in
# every version, so the deleter can be called even for a major version we refuse.
cdef struct DLManagedTensorVersioned:
    DLPackVersion version
    void* manager_ctx
    void (*deleter)(DLManagedTensorVersioned*) noexcept
    uint64_t flags
    DLTensor dl_tensor
