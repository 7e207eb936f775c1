"""The first H100 run's failures that are logic, not hardware: expected to fail until fixed.

On 2026-11-24 the gpu-marked suite gave 83 failures on an H100 (cuDNN 9.19.0); the report is
kept with the measurements of that run. The simulated device reproduces the ones listed here
with the same messages, so they are marked as strict expected failures on any device: fixing
one makes its test pass, and the strict mark then fails until its entry is removed. The
issue "The first H100 run: fix its 83 failures at the root" owns them.

Left out: the numpy-API cascade into tests/test_padding.py's 2-D cases (the conftest now
closes the shared Handles between modules), and the allocation-fallback test, whose H100
failure is the allocator's accounting (it is marked `hardware`; the simulator tests the
fallback by fault injection instead).
"""

from __future__ import annotations

import itertools

_POISONED = (
    "one unsupported problem (NDHWC float64 forward: cuDNN 9.19 runs no algorithm for it) "
    "stays registered on the numpy API's shared Handle, and every later re-plan fails "
    "(InfeasibleError: conv17/forward ... has no schedule)"
)
_NO_WORKSPACE_FREE = (
    "the test assumes an algorithm that needs no workspace at every size; cuDNN 9.19 has "
    "none for this layout and type"
)

KNOWN_FAILURES: dict[str, str] = {
    "tests/test_arena.py::test_device_arena_offsets_are_aligned_addresses[4096]": (
        "test arithmetic: three 4096-aligned pieces cannot fit in a 10,000-byte arena"
    ),
    **{
        f"tests/test_bias.py::test_the_handle_adds_the_bias_after_all_micro_batches[{beta}]": (
            "policy [1, 3] cannot force a split: the undivided batch is always a candidate, "
            "and it is fastest"
        )
        for beta in ("0.0", "0.5")
    },
    **{
        f"tests/test_handle.py::test_forced_split_equals_undivided[{case}]": _NO_WORKSPACE_FREE
        for case in [
            *(
                f"2-True-float64-{beta}-{kernel}"
                for beta, kernel in itertools.product(
                    ("0.0", "0.5", "1.0"), ("backward_data", "backward_filter")
                )
            ),
            *(
                f"3-True-{dtype}-{beta}-{kernel}"
                for dtype, beta, kernel in itertools.product(
                    ("float32", "float16", "float64"),
                    ("0.0", "0.5", "1.0"),
                    ("forward", "backward_data", "backward_filter"),
                )
                if kernel == "forward"
                or dtype == "float64"
                or (dtype == "float16" and kernel == "backward_filter")
            ),
        ]
    },
    "tests/test_numpy_api.py::test_matches_reference[forward-True-float64-3d]": (
        "cuDNN 9.19 runs no forward algorithm for NDHWC float64, and the error blames the "
        "micro-batch sizes instead of naming cuDNN's statuses"
    ),
    **{
        f"tests/test_numpy_api.py::test_matches_reference[{kernel}-{last}-{dtype}-{case}]": (
            _POISONED
        )
        for kernel, last, dtype, case in itertools.product(
            ("backward_data", "backward_filter"),
            ("False", "True"),
            ("float32", "float16", "float64"),
            ("2d", "2d-grouped", "3d"),
        )
    },
    **{
        f"tests/test_padding.py::test_same_matches_the_reference_on_the_device"
        f"[{kernel}-{last}-3d]": (
            "test bug: the tolerance problem is built without padding='same', and the 3-D "
            "case's output is then empty (ValueError)"
        )
        for kernel, last in itertools.product(
            ("forward", "backward_data", "backward_filter"), ("False", "True")
        )
    },
}
