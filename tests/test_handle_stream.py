"""Handle.set_stream: one Handle serves calls on whichever stream the framework runs."""

from __future__ import annotations

import numpy as np
import pytest

from tests import reference_conv as ref
from ucudnn.core.problem import ConvProblem

pytestmark = pytest.mark.gpu

PROBLEM = ConvProblem.create(4, 3, 8, (6, 6), 3, padding=1, math_type="fma")


def _forward(handle, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The Handle's y for random x and w, and the reference's."""
    from ucudnn.core.array import DeviceArray

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(PROBLEM.x_shape).astype(np.float32)
    w = rng.standard_normal(PROBLEM.w_shape).astype(np.float32)
    y = DeviceArray.empty(PROBLEM.y_shape, "float32")
    handle.forward(DeviceArray.from_numpy(x), DeviceArray.from_numpy(w), y, PROBLEM)
    return y.to_numpy(stream=handle.stream), ref.forward(PROBLEM, x, w)


def test_calls_run_on_the_stream_set_and_agree(tmp_path, monkeypatch) -> None:
    from ucudnn import Handle
    from ucudnn._native import _cuda
    from ucudnn.runtime import handle as handle_module

    ordered: list[tuple[int, int]] = []
    order_after = handle_module.order_after
    monkeypatch.setattr(
        handle_module,
        "order_after",
        lambda old, new: (ordered.append((old, new)), order_after(old, new)),
    )
    stream = _cuda.Stream()
    with Handle(workspace_limit="1MiB", database=tmp_path / "cache.sqlite") as handle:
        got, expected = _forward(handle, 0)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        handle.set_stream(stream.handle)
        assert handle.stream == stream.handle == handle.cudnn.stream
        assert ordered == [(0, stream.handle)]  # the new stream waits for the old one's work
        handle.set_stream(stream.handle)  # the stream in use: nothing to do
        assert len(ordered) == 1
        got, expected = _forward(handle, 1)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        handle.set_stream(0)
        assert handle.stream == 0 == handle.cudnn.stream
    stream.destroy()


@pytest.mark.parametrize(
    ("stream", "error", "match"),
    [(1.0, TypeError, "stream"), (True, TypeError, "stream"), (-1, ValueError, "stream")],
)
def test_a_bad_stream_is_refused(tmp_path, stream, error, match) -> None:
    from ucudnn import Handle

    with Handle(workspace_limit="1MiB", database=tmp_path / "c.sqlite") as handle:
        with pytest.raises(error, match=match):
            handle.set_stream(stream)
        assert handle.stream == 0


def test_a_closed_handle_takes_no_new_stream(tmp_path) -> None:
    from ucudnn import Handle
    from ucudnn._native import _cuda

    handle = Handle(workspace_limit="1MiB", database=tmp_path / "c.sqlite")
    handle.close()
    stream = _cuda.Stream()
    with pytest.raises(ValueError, match="closed"):
        handle.set_stream(stream.handle)
    stream.destroy()
