"""Unequally padded problems (border slabs, `ucudnn.core.slabs`) on cuDNN's legacy API, whose
convolution descriptors pad both ends of an axis alike.

Such a problem runs on a *staged* x: a buffer at the start of the part's workspace that holds
x's planes with the zero planes of each unequally padded axis written out, so that the legacy
call pads those axes by nothing. Forward and backward-filter read x: the buffer is zeroed and
x's planes copied into its middle. Backward-data writes dx: the call writes the buffer (having
been given dx's planes first when beta is not 0, so that beta scales them), and the middle is
copied back; what it wrote into the zero planes is dropped, as padding is. The buffer is
workspace like any other: the part's planned workspace counts it. The copies are
cudnnAddTensor calls between tensors of the same dims and different strides.
"""

from __future__ import annotations

import dataclasses

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.arena import CUDNN_ALIGNMENT, align_up
from ucudnn.core.problem import ConvProblem


class Staging:
    """How an unequally padded problem runs on the legacy API: `legacy` is the problem its
    calls are given (x padded explicitly, and packed, where `problem` pads unequally)."""

    def __init__(self, problem: ConvProblem) -> None:
        size, before = list(problem.input_size), list(problem.padding)
        for axis, (pre, post) in enumerate(zip(problem.padding, problem.padding_end, strict=True)):
            if pre != post:
                size[axis], before[axis] = size[axis] + pre + post, 0
        self.problem = problem
        self.legacy = dataclasses.replace(
            problem, input_size=tuple(size), padding=tuple(before), padding_after=(), x_strides=()
        )
        middle = sum(
            (pre - kept) * stride
            for pre, kept, stride in zip(
                problem.padding, before, self.legacy.x_strides[2:], strict=True
            )
        )
        self.middle_bytes = middle * problem.itemsize  # where x's planes start in the buffer
        # By micro-batch: x's planes as the caller's tensor holds them and as the staged buffer
        # does, and the buffer's bytes; worked out once, as the calls are on the hot path.
        self._at: dict[int, tuple[_cudnn.TensorDescriptor, _cudnn.TensorDescriptor, int]] = {}

    @classmethod
    def of(cls, problem: ConvProblem) -> Staging | None:
        """The staging of `problem`; None when it pads every axis alike (it needs none)."""
        return None if problem.symmetric else cls(problem)

    def _of(self, micro_batch: int) -> tuple[_cudnn.TensorDescriptor, _cudnn.TensorDescriptor, int]:
        if micro_batch not in self._at:
            part = self.problem.with_batch(micro_batch)
            staged = self.legacy.with_batch(micro_batch)  # packed: its strides fit any batch
            self._at[micro_batch] = (
                _cudnn.TensorDescriptor(part.dtype, part.x_dims, part.x_strides),
                _cudnn.TensorDescriptor(part.dtype, part.x_dims, staged.x_strides),
                align_up(staged.nbytes("x"), CUDNN_ALIGNMENT),
            )
        return self._at[micro_batch]

    def nbytes(self, micro_batch: int) -> int:
        """Workspace the staged x of `micro_batch` samples takes (a multiple of 256 bytes, so
        the algorithm's workspace after it stays aligned)."""
        return self._of(micro_batch)[2]

    def zero(self, handle: _cudnn.Handle, micro_batch: int, buffer: int) -> None:
        """Zero the staged buffer: its zero planes, for an x copied in after."""
        _cuda.memset(buffer, 0, self.nbytes(micro_batch), handle.stream)

    def copy_in(self, handle: _cudnn.Handle, micro_batch: int, x: int, buffer: int) -> None:
        """Copy x's (or dx's) planes into the middle of the staged buffer."""
        caller, staged, _ = self._of(micro_batch)
        _cudnn.add_tensor(handle, 1.0, caller, x, 0.0, staged, buffer + self.middle_bytes)

    def copy_out(self, handle: _cudnn.Handle, micro_batch: int, dx: int, buffer: int) -> None:
        """Copy the middle of the staged buffer back to dx's planes."""
        caller, staged, _ = self._of(micro_batch)
        _cudnn.add_tensor(handle, 1.0, staged, buffer + self.middle_bytes, 0.0, caller, dx)
