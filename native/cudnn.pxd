# The parts of cuDNN 9 (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h) that ucudnn uses: handles,
# errors, tensor/filter/convolution descriptors, the legacy convolution API, the few
# operations a small framework needs (bias, activation, pooling, softmax), and the backend
# (graph) API's descriptors for convolution graphs, engines and execution plans.

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
        CUDNN_DATA_FLOAT
        CUDNN_DATA_DOUBLE
        CUDNN_DATA_HALF
        CUDNN_DATA_INT8
        CUDNN_DATA_INT32
        CUDNN_DATA_UINT8
        CUDNN_DATA_BFLOAT16
        CUDNN_DATA_INT64
        CUDNN_DATA_BOOLEAN
        CUDNN_DATA_FP8_E4M3
        CUDNN_DATA_FP8_E5M2

    ctypedef enum cudnnMathType_t:
        CUDNN_DEFAULT_MATH
        CUDNN_TENSOR_OP_MATH
        CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
        CUDNN_FMA_MATH

    ctypedef enum cudnnNanPropagation_t:
        CUDNN_NOT_PROPAGATE_NAN
        CUDNN_PROPAGATE_NAN

    ctypedef enum cudnnTensorFormat_t:
        CUDNN_TENSOR_NCHW
        CUDNN_TENSOR_NHWC

    ctypedef enum cudnnConvolutionMode_t:
        CUDNN_CONVOLUTION
        CUDNN_CROSS_CORRELATION

    ctypedef enum cudnnActivationMode_t:
        CUDNN_ACTIVATION_SIGMOID
        CUDNN_ACTIVATION_RELU
        CUDNN_ACTIVATION_TANH
        CUDNN_ACTIVATION_CLIPPED_RELU
        CUDNN_ACTIVATION_ELU

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
        CUDNN_POOLING_MAX
        CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
        CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
        CUDNN_POOLING_MAX_DETERMINISTIC

    ctypedef enum cudnnSoftmaxAlgorithm_t:
        CUDNN_SOFTMAX_FAST
        CUDNN_SOFTMAX_ACCURATE
        CUDNN_SOFTMAX_LOG

    ctypedef enum cudnnSoftmaxMode_t:
        CUDNN_SOFTMAX_MODE_INSTANCE
        CUDNN_SOFTMAX_MODE_CHANNEL

    ctypedef enum cudnnDeterminism_t:
        CUDNN_NON_DETERMINISTIC
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
    cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
        const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
        int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults)
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
    cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
        cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
        const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
        int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults)
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
    cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
        const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
        const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,
        int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults)
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
        CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
        CUDNN_BACKEND_ENGINE_DESCRIPTOR
        CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
        CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
        CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
        CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR
        CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
        CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
        CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
        CUDNN_BACKEND_TENSOR_DESCRIPTOR

    ctypedef enum cudnnBackendAttributeName_t:
        CUDNN_ATTR_CONVOLUTION_COMP_TYPE
        CUDNN_ATTR_CONVOLUTION_CONV_MODE
        CUDNN_ATTR_CONVOLUTION_DILATIONS
        CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES
        CUDNN_ATTR_CONVOLUTION_POST_PADDINGS
        CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS
        CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS
        CUDNN_ATTR_ENGINEHEUR_MODE
        CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH
        CUDNN_ATTR_ENGINEHEUR_RESULTS
        CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET
        CUDNN_ATTR_ENGINECFG_ENGINE
        CUDNN_ATTR_ENGINECFG_KNOB_CHOICES
        CUDNN_ATTR_EXECUTION_PLAN_HANDLE
        CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG
        CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE
        CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION
        CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE
        CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY
        CUDNN_ATTR_OPERATIONGRAPH_HANDLE
        CUDNN_ATTR_OPERATIONGRAPH_OPS
        CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT
        CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT
        CUDNN_ATTR_TENSOR_DATA_TYPE
        CUDNN_ATTR_TENSOR_DIMENSIONS
        CUDNN_ATTR_TENSOR_STRIDES
        CUDNN_ATTR_TENSOR_VECTOR_COUNT
        CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION
        CUDNN_ATTR_TENSOR_UNIQUE_ID
        CUDNN_ATTR_TENSOR_IS_VIRTUAL
        CUDNN_ATTR_TENSOR_IS_BY_VALUE
        CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS
        CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS
        CUDNN_ATTR_VARIANT_PACK_WORKSPACE
        CUDNN_ATTR_KNOB_INFO_TYPE
        CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE
        CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE
        CUDNN_ATTR_KNOB_INFO_STRIDE
        CUDNN_ATTR_ENGINE_OPERATION_GRAPH
        CUDNN_ATTR_ENGINE_GLOBAL_INDEX
        CUDNN_ATTR_ENGINE_KNOB_INFO
        CUDNN_ATTR_ENGINE_NUMERICAL_NOTE
        CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE
        CUDNN_ATTR_ENGINE_SM_COUNT_TARGET

    ctypedef enum cudnnBackendAttributeType_t:
        CUDNN_TYPE_HANDLE
        CUDNN_TYPE_DATA_TYPE
        CUDNN_TYPE_BOOLEAN
        CUDNN_TYPE_INT64
        CUDNN_TYPE_FLOAT
        CUDNN_TYPE_DOUBLE
        CUDNN_TYPE_VOID_PTR
        CUDNN_TYPE_CONVOLUTION_MODE
        CUDNN_TYPE_HEUR_MODE
        CUDNN_TYPE_KNOB_TYPE
        CUDNN_TYPE_NUMERICAL_NOTE
        CUDNN_TYPE_BACKEND_DESCRIPTOR
        CUDNN_TYPE_BEHAVIOR_NOTE
        CUDNN_TYPE_INT32
        CUDNN_TYPE_CHAR

    ctypedef enum cudnnBackendHeurMode_t:
        CUDNN_HEUR_MODE_INSTANT
        CUDNN_HEUR_MODE_B
        CUDNN_HEUR_MODE_FALLBACK
        CUDNN_HEUR_MODE_A

    # Knob types travel as plain ints (engine tags print them), so no member is named here.
    ctypedef enum cudnnBackendKnobType_t:
        pass

    ctypedef enum cudnnBackendNumericalNote_t:
        CUDNN_NUMERICAL_NOTE_TENSOR_CORE
        CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
        CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION
        CUDNN_NUMERICAL_NOTE_FFT
        CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
        CUDNN_NUMERICAL_NOTE_WINOGRAD
        CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4
        CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6
        CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13
        CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP

    ctypedef enum cudnnBackendBehaviorNote_t:
        CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
        CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER
        CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER

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


# Enum values cuDNN added after 9.1, the oldest version this package builds against: each is
# -1 where the headers predate it, so that the module still compiles there (and the name
# tables in _cudnn.pyx leave it out).
cdef extern from *:
    """
    #include "cudnn.h"
    #if CUDNN_VERSION >= 90200
    #define UCUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE
    #define UCUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED
    #else
    #define UCUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE -1
    #define UCUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED -1
    #endif
    #if CUDNN_VERSION >= 90500
    #define UCUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API \
        CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API
    #else
    #define UCUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API -1
    #endif
    #if CUDNN_VERSION >= 90800
    #define UCUDNN_BACKEND_DEVICEPROP_DESCRIPTOR CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR
    #define UCUDNN_ATTR_DEVICEPROP_DEVICE_ID CUDNN_ATTR_DEVICEPROP_DEVICE_ID
    #define UCUDNN_ATTR_DEVICEPROP_HANDLE CUDNN_ATTR_DEVICEPROP_HANDLE
    #define UCUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION
    #define UCUDNN_ATTR_ENGINEHEUR_DEVICEPROP CUDNN_ATTR_ENGINEHEUR_DEVICEPROP
    #define UCUDNN_ATTR_ENGINE_DEVICEPROP CUDNN_ATTR_ENGINE_DEVICEPROP
    #define UCUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP
    #else
    #define UCUDNN_BACKEND_DEVICEPROP_DESCRIPTOR -1
    #define UCUDNN_ATTR_DEVICEPROP_DEVICE_ID -1
    #define UCUDNN_ATTR_DEVICEPROP_HANDLE -1
    #define UCUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION -1
    #define UCUDNN_ATTR_ENGINEHEUR_DEVICEPROP -1
    #define UCUDNN_ATTR_ENGINE_DEVICEPROP -1
    #define UCUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP -1
    #endif
    #if CUDNN_VERSION >= 91500
    #define UCUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY
    #else
    #define UCUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY -1
    #endif
    """
    enum: UCUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE  # 9.2
    enum: UCUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED  # 9.2
    enum: UCUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API  # 9.5
    enum: UCUDNN_BACKEND_DEVICEPROP_DESCRIPTOR  # 9.8, and the DEVICEPROP attributes below
    enum: UCUDNN_ATTR_DEVICEPROP_DEVICE_ID
    enum: UCUDNN_ATTR_DEVICEPROP_HANDLE
    enum: UCUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION
    enum: UCUDNN_ATTR_ENGINEHEUR_DEVICEPROP
    enum: UCUDNN_ATTR_ENGINE_DEVICEPROP
    enum: UCUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP
    enum: UCUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY  # 9.15
