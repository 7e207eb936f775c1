"""The legacy cuDNN convolution algorithms of each kernel, in the order of their enums
(cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t, cudnnConvolutionBwdFilterAlgo_t).

Pure Python, so that the planner can check the algorithm numbers of the files it reads without
cuDNN: a number past a kernel's enum would make every call of that kernel fail at run time.
The native module serves this table as `ucudnn.cudnn.ALGORITHMS`, and refuses to import when
its counts differ from those of the cuDNN headers it was built with.
"""

from __future__ import annotations

from ucudnn.core.problem import Kernel, check_kernel

LEGACY_ALGORITHMS: dict[Kernel, tuple[str, ...]] = {
    "forward": (
        "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
        "fft", "fft_tiling", "winograd", "winograd_nonfused",
    ),
    "backward_data": (
        "algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused",
    ),
    "backward_filter": (
        "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling",
    ),
}  # fmt: skip


def check_legacy_algo(kernel: str, algo: int) -> int:
    """`algo` if it numbers one of `kernel`'s legacy algorithms; ValueError saying the range
    otherwise."""
    count = len(LEGACY_ALGORITHMS[check_kernel(kernel)])
    if not 0 <= algo < count:
        raise ValueError(
            f"{algo} is not a legacy {kernel} algorithm: cuDNN numbers them 0 to {count - 1} "
            "(a graph-API engine configuration needs its tag as the engine)"
        )
    return algo
