"""Benchmark plumbing that can be checked without a device (the binding's calls are faked)."""

from __future__ import annotations

import types

import pytest

from ucudnn.core.problem import KERNELS

_cudnn = pytest.importorskip("ucudnn._cudnn")


@pytest.mark.parametrize("kernel", KERNELS)
def test_find_workspace_asks_each_algorithm_once_whatever_the_max_count(
    monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    """cuDNN's max count sizes Find's list, which may hold an algorithm once per math type, so
    it can exceed the enum; the binding rejects values past the enum with ValueError."""
    from ucudnn.runtime import backend, benchmark

    count = len(_cudnn.ALGORITHMS[kernel])
    asked = []

    def workspace_size(handle, descs, k, micro_batch, algo):
        if not 0 <= algo < count:
            raise ValueError(f"unknown {k} algorithm {algo}")
        asked.append(algo)
        return 1000 * (algo + 1)

    monkeypatch.setattr(backend, "algorithm_count", lambda handle, k: 2 * count)
    monkeypatch.setattr(backend, "workspace_size", workspace_size)
    monkeypatch.setattr(benchmark._cuda, "DeviceBuffer", lambda nbytes: nbytes)
    fake = types.SimpleNamespace(
        handle=object(), settings=benchmark.BenchmarkSettings(workspace_cap=1000 * (count - 1))
    )
    descs = types.SimpleNamespace(problem=types.SimpleNamespace(batch=4))
    need = benchmark.Benchmarker._find_workspace(fake, descs, kernel)
    assert asked == list(range(count))
    assert need == 1000 * (count - 1)  # the last algorithm is over the cap
