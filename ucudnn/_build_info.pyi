"""Type stub for ucudnn._build_info, which CMake writes from native/_build_info.py.in when the
native modules are built (a source tree that was never built has none)."""

CUDA_MAJOR: int
CUDA_RUNTIME_VERSION: int  # the headers' CUDART_VERSION: 1000 * major + 10 * minor
CUDNN_VERSION: int  # the headers' CUDNN_VERSION
