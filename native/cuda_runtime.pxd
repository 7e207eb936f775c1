# The parts of the CUDA runtime API (cuda_runtime_api.h, driver_types.h) that ucudnn uses.
# Struct declarations list only the fields we read; the C compiler sees the real header.

cdef extern from "cuda_runtime_api.h" nogil:
    ctypedef enum cudaError_t:
        cudaSuccess
        cudaErrorNotReady

    # Opaque handles; code converts them to and from Python ints.
    ctypedef void* cudaStream_t
    ctypedef void* cudaEvent_t

    enum: cudaStreamDefault
    enum: cudaStreamNonBlocking
    enum: cudaEventDefault
    enum: cudaEventDisableTiming

    cdef enum cudaMemcpyKind:
        cudaMemcpyHostToDevice
        cudaMemcpyDeviceToHost
        cudaMemcpyDeviceToDevice

    cdef enum cudaMemoryType:
        cudaMemoryTypeUnregistered
        cudaMemoryTypeHost
        cudaMemoryTypeDevice
        cudaMemoryTypeManaged

    ctypedef struct cudaUUID_t:
        char bytes[16]

    cdef struct cudaDeviceProp:
        char name[256]
        cudaUUID_t uuid
        size_t totalGlobalMem
        int major
        int minor
        int multiProcessorCount

    cdef struct cudaPointerAttributes:
        cudaMemoryType type
        int device

    # Errors and versions
    const char* cudaGetErrorName(cudaError_t error)
    const char* cudaGetErrorString(cudaError_t error)
    cudaError_t cudaGetLastError()
    cudaError_t cudaRuntimeGetVersion(int* runtimeVersion)
    cudaError_t cudaDriverGetVersion(int* driverVersion)

    # Devices
    cudaError_t cudaGetDeviceCount(int* count)
    cudaError_t cudaGetDevice(int* device)
    cudaError_t cudaSetDevice(int device)
    cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device)
    cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device)
    cudaError_t cudaMemGetInfo(size_t* free, size_t* total)
    cudaError_t cudaDeviceSynchronize()

    # Memory
    cudaError_t cudaMalloc(void** devPtr, size_t size)
    cudaError_t cudaFree(void* devPtr)
    cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                cudaMemcpyKind kind, cudaStream_t stream)
    cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream)
    cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr)

    # Streams and events
    cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags)
    cudaError_t cudaStreamDestroy(cudaStream_t stream)
    cudaError_t cudaStreamSynchronize(cudaStream_t stream)
    cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
    cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags)
    cudaError_t cudaEventDestroy(cudaEvent_t event)
    cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
    cudaError_t cudaEventSynchronize(cudaEvent_t event)
    cudaError_t cudaEventQuery(cudaEvent_t event)
    cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end)
