# The parts of cuDNN 9 (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h) that ucudnn uses: handles,
# errors, tensor/filter/convolution descriptors, the legacy convolution API, the few
# operations a small framework needs (bias, activation, pooling, softmax), and the backend
# (graph) API's descriptors for convolution graphs, engines and execution plans. An enum's
# members are named only where code uses one: the values the name tables give travel as ints
# (ucudnn.core.cudnn_names), held to these headers by _cudnn_names.pxi.

from libc.stdint cimport int64_t

from cuda_runtime cimport cudaStream_t

cdef extern from "cudnn.h" nogil:
    enum: CUDNN_VERSION
    enum: CUDNN_DIM_MAX

    # --- handle, status, versions (cudnn_graph.h) ---
    ctypedef void* cudnnHandle_t

    ctypedef enum cudnnStatus_t:
        CUDNN_STATUS_SUCCESS

    ctypedef enum cudnnDataType_t:
        CUDNN_DATA_DOUBLE

    ctypedef enum cudnnMathType_t:
        pass

    ctypedef enum cudnnNanPropagation_t:
        CUDNN_NOT_PROPAGATE_NAN

    ctypedef enum cudnnTensorFormat_t:
        pass

    ctypedef enum cudnnConvolutionMode_t:
        pass

    ctypedef enum cudnnActivationMode_t:
        pass

    size_t cudnnGetVersion()
    size_t cudnnGetCudartVersion()
    const char* cudnnGetErrorString(cudnnStatus_t status)
    void cudnnGetLastErrorString(char* message, size_t max_size)
    cudnnStatus_t cudnnCreate(cudnnHandle_t* handle)
    cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
    cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
    cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId)

    # --- tensors, filters, element-wise operations (cudnn_ops.h) ---
    ctypedef void* cudnnTensorDescriptor_t
    ctypedef void* cudnnFilterDescriptor_t
    ctypedef void* cudnnActivationDescriptor_t
    ctypedef void* cudnnPoolingDescriptor_t

    ctypedef enum cudnnPoolingMode_t:
        pass

    ctypedef enum cudnnSoftmaxAlgorithm_t:
        pass

    ctypedef enum cudnnSoftmaxMode_t:
        pass

    ctypedef enum cudnnDeterminism_t:
        CUDNN_DETERMINISTIC

    ctypedef enum cudnnConvolutionFwdAlgo_t:
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT

    ctypedef enum cudnnConvolutionBwdDataAlgo_t:
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT

    ctypedef enum cudnnConvolutionBwdFilterAlgo_t:
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT

    cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc)
    cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc)
    cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                             cudnnDataType_t dataType, int nbDims,
                                             const int* dimA, const int* strideA)
    cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                             int nbDimsRequested, cudnnDataType_t* dataType,
                                             int* nbDims, int* dimA, int* strideA)

    cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc)
    cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc)
    cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                                             cudnnDataType_t dataType,
                                             cudnnTensorFormat_t format, int nbDims,
                                             const int* filterDimA)
    cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc,
                                             int nbDimsRequested, cudnnDataType_t* dataType,
                                             cudnnTensorFormat_t* format, int* nbDims,
                                             int* filterDimA)

    cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                                 const cudnnTensorDescriptor_t aDesc, const void* A,
                                 const void* beta, const cudnnTensorDescriptor_t cDesc, void* C)
    cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc,
                                   void* y, const void* alpha)

    cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* activationDesc)
    cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc)
    cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                               cudnnActivationMode_t mode,
                                               cudnnNanPropagation_t reluNanOpt, double coef)
    cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                               cudnnActivationMode_t* mode,
                                               cudnnNanPropagation_t* reluNanOpt,
                                               double* coef)
    cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                         cudnnActivationDescriptor_t activationDesc,
                                         const void* alpha,
                                         const cudnnTensorDescriptor_t xDesc, const void* x,
                                         const void* beta,
                                         const cudnnTensorDescriptor_t yDesc, void* y)
    cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle,
                                          cudnnActivationDescriptor_t activationDesc,
                                          const void* alpha,
                                          const cudnnTensorDescriptor_t yDesc, const void* y,
                                          const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                          const cudnnTensorDescriptor_t xDesc, const void* x,
                                          const void* beta,
                                          const cudnnTensorDescriptor_t dxDesc, void* dx)

    cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* poolingDesc)
    cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc)
    cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                                              const cudnnPoolingMode_t mode,
                                              const cudnnNanPropagation_t maxpoolingNanOpt,
                                              int nbDims, const int* windowDimA,
                                              const int* paddingA, const int* strideA)
    cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t poolingDesc,
                                              int nbDimsRequested, cudnnPoolingMode_t* mode,
                                              cudnnNanPropagation_t* maxpoolingNanOpt,
                                              int* nbDims, int* windowDimA, int* paddingA,
                                              int* strideA)
    cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t poolingDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    int nbDims, int* outputTensorDimA)
    cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                      const cudnnPoolingDescriptor_t poolingDesc,
                                      const void* alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y)
    cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle,
                                       const cudnnPoolingDescriptor_t poolingDesc,
                                       const void* alpha,
                                       const cudnnTensorDescriptor_t yDesc, const void* y,
                                       const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                       const cudnnTensorDescriptor_t xDesc, const void* x,
                                       const void* beta,
                                       const cudnnTensorDescriptor_t dxDesc, void* dx)

    cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                      cudnnSoftmaxMode_t mode, const void* alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y)
    cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                       cudnnSoftmaxMode_t mode, const void* alpha,
                                       const cudnnTensorDescriptor_t yDesc, const void* y,
                                       const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                       const void* beta,
                                       const cudnnTensorDescriptor_t dxDesc, void* dx)

    # --- convolution (cudnn_cnn.h, the legacy API) ---
    ctypedef void* cudnnConvolutionDescriptor_t

    ctypedef struct cudnnConvolutionFwdAlgoPerf_t:
        cudnnConvolutionFwdAlgo_t algo
        cudnnStatus_t status
        float time
        size_t memory
        cudnnDeterminism_t determinism
        cudnnMathType_t mathType

    ctypedef struct cudnnConvolutionBwdDataAlgoPerf_t:
        cudnnConvolutionBwdDataAlgo_t algo
        cudnnStatus_t status
        float time
        size_t memory
        cudnnDeterminism_t determinism
        cudnnMathType_t mathType

    ctypedef struct cudnnConvolutionBwdFilterAlgoPerf_t:
        cudnnConvolutionBwdFilterAlgo_t algo
        cudnnStatus_t status
        float time
        size_t memory
        cudnnDeterminism_t determinism
        cudnnMathType_t mathType

    cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc)
    cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
    cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                              cudnnMathType_t mathType)
    cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                              cudnnMathType_t* mathType)
    cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                int groupCount)
    cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                int* groupCount)
    cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                                  int arrayLength, const int* padA,
                                                  const int* filterStrideA,
                                                  const int* dilationA,
                                                  cudnnConvolutionMode_t mode,
                                                  cudnnDataType_t computeType)
    cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                                  int arrayLengthRequested, int* arrayLength,
                                                  int* padA, int* strideA, int* dilationA,
                                                  cudnnConvolutionMode_t* mode,
                                                  cudnnDataType_t* computeType)
    cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(
        const cudnnConvolutionDescriptor_t convDesc,
        const cudnnTensorDescriptor_t inputTensorDesc,
        const cudnnFilterDescriptor_t filterDesc, int nbDims, int* tensorOuputDimA)

    # forward
    cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count)
    cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
        const cudnnFilterDescriptor_t wDesc, const void* w,
        const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
        void* y, const int requestedAlgoCount, int* returnedAlgoCount,
        cudnnConvolutionFwdAlgoPerf_t* perfResults, void* workSpace,
        size_t workSpaceSizeInBytes)
    cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
        const cudnnFilterDescriptor_t wDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo,
        size_t* sizeInBytes)
    cudnnStatus_t cudnnConvolutionForward(
        cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
        const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
        const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
        void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
        const cudnnTensorDescriptor_t yDesc, void* y)

    # backward data
    cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle,
                                                                   int* count)
    cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
        cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w,
        const cudnnTensorDescriptor_t dyDesc, const void* dy,
        const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
        void* dx, const int requestedAlgoCount, int* returnedAlgoCount,
        cudnnConvolutionBwdDataAlgoPerf_t* perfResults, void* workSpace,
        size_t workSpaceSizeInBytes)
    cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
        cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
        const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnTensorDescriptor_t dxDesc, cudnnConvolutionBwdDataAlgo_t algo,
        size_t* sizeInBytes)
    cudnnStatus_t cudnnConvolutionBackwardData(
        cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc,
        const void* w, const cudnnTensorDescriptor_t dyDesc, const void* dy,
        const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
        void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
        const cudnnTensorDescriptor_t dxDesc, void* dx)

    # backward filter
    cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                                     int* count)
    cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
        const cudnnTensorDescriptor_t dyDesc, const void* y,
        const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc,
        void* dw, const int requestedAlgoCount, int* returnedAlgoCount,
        cudnnConvolutionBwdFilterAlgoPerf_t* perfResults, void* workSpace,
        size_t workSpaceSizeInBytes)
    cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
        const cudnnTensorDescriptor_t dyDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnFilterDescriptor_t gradDesc, cudnnConvolutionBwdFilterAlgo_t algo,
        size_t* sizeInBytes)
    cudnnStatus_t cudnnConvolutionBackwardFilter(
        cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
        const void* x, const cudnnTensorDescriptor_t dyDesc, const void* dy,
        const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
        void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
        const cudnnFilterDescriptor_t dwDesc, void* dw)

    cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                               const cudnnTensorDescriptor_t dyDesc,
                                               const void* dy, const void* beta,
                                               const cudnnTensorDescriptor_t dbDesc, void* db)

    # --- backend (graph) API (cudnn_graph.h) ---
    ctypedef void* cudnnBackendDescriptor_t

    ctypedef enum cudnnBackendDescriptorType_t:
        CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR

    ctypedef enum cudnnBackendAttributeName_t:
        CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS
        CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS
        CUDNN_ATTR_VARIANT_PACK_WORKSPACE

    ctypedef enum cudnnBackendAttributeType_t:
        CUDNN_TYPE_HANDLE
        CUDNN_TYPE_BOOLEAN
        CUDNN_TYPE_INT64
        CUDNN_TYPE_FLOAT
        CUDNN_TYPE_DOUBLE
        CUDNN_TYPE_VOID_PTR
        CUDNN_TYPE_KNOB_TYPE
        CUDNN_TYPE_BACKEND_DESCRIPTOR
        CUDNN_TYPE_INT32
        CUDNN_TYPE_CHAR

    cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                               cudnnBackendDescriptor_t* descriptor)
    cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
    cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
    cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                           cudnnBackendAttributeName_t attributeName,
                                           cudnnBackendAttributeType_t attributeType,
                                           int64_t elementCount, const void* arrayOfElements)
    cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t descriptor,
                                           cudnnBackendAttributeName_t attributeName,
                                           cudnnBackendAttributeType_t attributeType,
                                           int64_t requestedElementCount, int64_t* elementCount,
                                           void* arrayOfElements)
    cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle,
                                      cudnnBackendDescriptor_t executionPlan,
                                      cudnnBackendDescriptor_t variantPack)
