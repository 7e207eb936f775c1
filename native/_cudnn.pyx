cdef extern from "cudnn.h" nogil:
    size_t cudnnGetVersion()


def version():
    return cudnnGetVersion()
