"""The buffers a benchmark runs its candidates on: x, w and y of a problem, filled with a harmless
constant, and the views of them that its parts (and slabs) run at."""

from __future__ import annotations

from typing import Protocol

from ucudnn._native import _cuda
from ucudnn.core.problem import ConvProblem
from ucudnn.core.splits import BATCH, Axis

# Buffers are filled with one repeated byte (memset fills gigabytes faster than a copy). The
# value only has to be harmless: a normal number whose products are normal in the type cuDNN
# computes in, and whose sums of products stay finite in it and in the stored type, since inf,
# NaN or denormals could take paths real data does not. So the fill is keyed on (stored type,
# compute type): the configurations of cuDNN's legacy convolution API (float, double, pseudo
# bfloat16, pseudo and true half). Backward-filter sums the most products, N times the output
# pixels per weight (3.2e6 for a ResNet first layer at N = 256). The longest sums assumed:
# 2**31 terms in a float32 or float64 accumulator (cuDNN's sizes are 32-bit), 2**16 in a
# float16 one (half-precision compute holds no longer sums anyway: 2**16 terms near 1 already
# pass its largest value, 65504).
FILL_BYTES = {
    ("float32", "float32"): 0x3C,  # 0x3C3C3C3C = 0.0115: sums of 2**31 products 2.8e5
    ("bfloat16", "float32"): 0x3C,  # 0x3C3C = 0.0115, as float32 (the same exponent range)
    ("float64", "float64"): 0x3C,  # 1.5e-18: products 2.3e-36, far above float64's smallest normal
    # Pseudo half, float32 products: 0x1818 = 0.0020, whose sums of 2**31 products (8.6e3) the
    # float16 output still holds (0x3C3C would be 1.06: sums of 6e4 products overflow).
    ("float16", "float32"): 0x18,
    # True half: 0x1818's products (4.0e-6) would be subnormal in float16. 0x2C2C = 0.065 has
    # products 4.2e-3 (70 times float16's smallest normal) and sums of 2**16 of them 279.
    ("float16", "float16"): 0x2C,
}


def fill_byte(dtype: str, compute_dtype: str) -> int:
    """The byte to fill buffers of `dtype` with when cuDNN computes in `compute_dtype`."""
    if (dtype, compute_dtype) not in FILL_BYTES:
        known = ", ".join(f"{d} computed in {c}" for d, c in FILL_BYTES)
        raise ValueError(
            f"cannot benchmark {dtype} data computed in {compute_dtype}; "
            f"cuDNN's legacy convolutions take {known}"
        )
    return FILL_BYTES[(dtype, compute_dtype)]


class SampleBuffers(Protocol):
    """Where a problem's parts run while it is measured (`ProblemBuffers`, or a slab's view of
    them: `slab_bench.ShapeBuffers`)."""

    def at_sample(self, first_sample: int) -> dict[str, int]: ...

    def release(self) -> None: ...


class ProblemBuffers:
    """x, w and y of a problem filled with a harmless constant (see FILL_BYTES); parts split
    along `axis` run on slices of them at `at_sample`."""

    def __init__(self, problem: ConvProblem, stream: int, axis: Axis = BATCH) -> None:
        self.problem = problem
        self.axis = axis
        fill = fill_byte(problem.dtype, problem.compute_dtype)
        self.owned = [_cuda.DeviceBuffer(problem.nbytes(t)) for t in ("x", "w", "y")]
        for buffer in self.owned:
            _cuda.memset(buffer.ptr, fill, buffer.nbytes, stream)
        self.x, self.w, self.y = (b.ptr for b in self.owned)

    @property
    def pointers(self) -> dict[str, int]:
        return self.at_sample(0)

    def at_sample(self, first_sample: int) -> dict[str, int]:
        """Pointers of x, w and y for parts that start at `first_sample` along the axis."""
        return {
            "x": self.x + self.axis.offset_bytes(self.problem, "x", first_sample),
            "w": self.w,
            "y": self.y + self.axis.offset_bytes(self.problem, "y", first_sample),
        }

    def release(self) -> None:
        for buffer in self.owned:
            buffer.release()
