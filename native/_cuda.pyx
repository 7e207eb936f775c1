cdef extern from "cuda_runtime_api.h" nogil:
    int cudaGetDeviceCount(int* count)


def device_count():
    cdef int n = 0
    rc = cudaGetDeviceCount(&n)
    return rc, n
