"""What users would otherwise run: PyTorch and the cuDNN frontend, timed on one problem.

Each peer is optional. `time_peer` returns (milliseconds, None) or (None, why not): a peer
that is not installed, does not support a case, or fails on it is recorded and skipped, never
fatal to the run. Both time with CUDA events on PyTorch's current stream, like ucudnn's own
timer: warm-up calls first (PyTorch autotunes there), then the median of timed repeats.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import statistics
from collections.abc import Callable

from ucudnn.core.problem import ConvProblem, packed_strides

# The input layout whose memory format PyTorch should use (channels-last of each rank).
_CHANNELS_LAST = {"NHWC": "channels_last", "NDHWC": "channels_last_3d"}


def time_peer(peer: Callable[..., float], *args: object) -> tuple[float | None, str | None]:
    """Run a peer; any failure becomes the reason it was skipped."""
    try:
        return peer(*args), None
    except Exception as exc:  # a peer's failure must not end the comparison
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {message}"[:300]


class Unsupported(Exception):
    """A peer cannot run this case (not an error of the peer)."""


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise Unsupported(f"PyTorch is not importable ({exc})") from None
    if not torch.cuda.is_available() or not torch.backends.cudnn.is_available():
        raise Unsupported("PyTorch sees no CUDA device or no cuDNN")
    return torch


def event_median_ms(launch: Callable[[], object], warmup: int, repeats: int) -> float:
    """Median time of `repeats` calls made back to back, an event after each, as ucudnn's own
    Timer times them (the host waits once, at the end)."""
    torch = _torch()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(repeats + 1)]
    for _ in range(warmup):
        launch()
    events[0].record()
    for event in events[1:]:
        launch()
        event.record()
    events[-1].synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in itertools.pairwise(events))


def _tensor(torch, dims, strides, dtype):
    # Small constant values: timing must not depend on them, and they never overflow fp16.
    return torch.empty_strided(dims, strides, dtype=getattr(torch, dtype), device="cuda").fill_(
        0.01
    )


def pytorch_ms(problem: ConvProblem, kernel: str, warmup: int, repeats: int) -> float:
    """PyTorch's own choice, with cudnn.benchmark on, as a training step runs each kernel:
    conv2d/conv3d forward, and the backward kernels through autograd on tensors in the layout
    under test (the gradient of x alone, or of w alone). torch.nn.grad's conv*_input helpers
    would build a channels-first gradient instead: NHWC float16 1x1 backward-data measured 5-9
    times slower that way on the H100, an artefact of the helper, not PyTorch's speed.

    TF32 follows the problem: math type "fma" turns it off, anything else allows it.
    """
    torch = _torch()
    if problem.mode != "cross_correlation":
        raise Unsupported("PyTorch convolutions are cross-correlations only")
    if warmup < 1:
        raise Unsupported("PyTorch needs a warm-up call to run its own benchmark")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = problem.math_type != "fma"
    fmt = getattr(torch, _CHANNELS_LAST.get(problem.layout, "contiguous_format"))
    dtype = problem.dtype
    x = _tensor(torch, problem.x_dims, problem.x_strides, dtype)
    dy = _tensor(torch, problem.y_dims, problem.y_strides, dtype)
    w = torch.full(problem.w_dims, 0.01, dtype=getattr(torch, dtype), device="cuda")
    w = w.contiguous(memory_format=fmt)
    conv = getattr(torch.nn.functional, f"conv{problem.rank}d")
    geometry = (problem.stride, problem.padding, problem.dilation, problem.groups)
    if kernel == "forward":
        return event_median_ms(lambda: conv(x, w, None, *geometry), warmup, repeats)
    wrt = x if kernel == "backward_data" else w
    x.requires_grad_(wrt is x)
    w.requires_grad_(wrt is w)
    y = conv(x, w, None, *geometry)  # the graph autograd walks back, made once
    return event_median_ms(
        lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True), warmup, repeats
    )


def _cudnn_frontend():
    try:
        import cudnn
    except Exception as exc:  # ImportError, or a missing libcudnn while loading it
        raise Unsupported(f"cudnn frontend is not importable ({exc})") from None
    return cudnn


_FRONTEND_HANDLES: dict[int, object] = {}


def _frontend_handle(cudnn, stream: int):
    """One frontend handle per stream for the whole run (creating one costs milliseconds)."""
    if stream not in _FRONTEND_HANDLES:
        handle = cudnn.create_handle()
        cudnn.set_stream(handle=handle, stream=stream)
        _FRONTEND_HANDLES[stream] = handle
    return _FRONTEND_HANDLES[stream]


def frontend_ms(
    problem: ConvProblem, kernel: str, limit: int, plans: int, warmup: int, repeats: int
) -> float:
    """The cuDNN frontend graph API with plans of more than `limit` bytes deselected.

    Tries the heuristics' plans in rank order and times the first `plans` that build (1: the
    frontend's own pick under the limit); returns the fastest. FMA problems also deselect
    tensor-core plans, as TF32 would be.
    """
    torch = _torch()
    cudnn = _cudnn_frontend()
    if problem.groups != 1:
        raise Unsupported("grouped convolutions are not set up for the frontend here")
    if problem.mode != "cross_correlation":
        raise Unsupported("only cross-correlation is set up for the frontend here")
    io = {"float32": "FLOAT", "float16": "HALF", "bfloat16": "BFLOAT16"}.get(problem.dtype)
    if io is None:
        raise Unsupported(f"{problem.dtype} is not set up for the frontend here")
    io_type, float_type = getattr(cudnn.data_type, io), cudnn.data_type.FLOAT
    stream = torch.cuda.current_stream().cuda_stream
    graph = cudnn.pygraph(
        io_data_type=io_type,
        intermediate_data_type=float_type,
        compute_data_type=float_type,
        handle=_frontend_handle(cudnn, stream),
    )
    w_strides = packed_strides(problem.w_dims, problem.filter_layout)
    shapes = {
        "x": (problem.x_dims, problem.x_strides),
        "w": (problem.w_dims, w_strides),
        "y": (problem.y_dims, problem.y_strides),
    }
    operands = {"forward": ("x", "w"), "backward_data": ("y", "w"), "backward_filter": ("x", "y")}
    output = {"forward": "y", "backward_data": "x", "backward_filter": "w"}[kernel]
    graph_in = {
        name: graph.tensor(name=name, dim=list(dims), stride=list(strides), data_type=io_type)
        for name, (dims, strides) in ((n, shapes[n]) for n in operands[kernel])
    }
    geometry = {
        "padding": list(problem.padding),
        "stride": list(problem.stride),
        "dilation": list(problem.dilation),
        "compute_data_type": float_type,
    }
    if kernel == "forward":
        out = graph.conv_fprop(image=graph_in["x"], weight=graph_in["w"], **geometry)
    elif kernel == "backward_data":
        out = graph.conv_dgrad(loss=graph_in["y"], filter=graph_in["w"], **geometry)
    else:
        out = graph.conv_wgrad(image=graph_in["x"], loss=graph_in["y"], **geometry)
    dims, strides = shapes[output]
    out.set_output(True).set_data_type(io_type).set_dim(list(dims)).set_stride(list(strides))
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.deselect_workspace_greater_than(limit)
    if problem.math_type == "fma":
        graph.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
    graph.check_support()

    tensors = {**graph_in, output: out}
    buffers = {tensors[name]: _tensor(torch, *shapes[name], problem.dtype) for name in tensors}
    built = _buildable_plans(graph, limit, plans)
    if not built:
        raise Unsupported(f"no frontend plan builds within {limit} bytes of workspace")
    workspace = torch.empty(max(need for _, need in built), dtype=torch.uint8, device="cuda")
    handle = _frontend_handle(cudnn, stream)
    return min(
        event_median_ms(
            lambda index=index: graph.execute_plan_at_index(
                buffers, workspace, index=index, handle=handle
            ),
            warmup,
            repeats,
        )
        for index, _ in built
    )


def _buildable_plans(graph, limit: int, wanted: int) -> list[tuple[int, int]]:
    """(index, workspace bytes) of the first `wanted` ranked plans that build within `limit`."""
    built = []
    for index in range(graph.get_execution_plan_count()):
        try:
            graph.build_plan_at_index(index)
            need = graph.get_workspace_size_plan_at_index(index)
        except Exception:  # a plan the filters bar or that does not build: try the next
            continue
        if need <= limit:
            built.append((index, need))
            if len(built) == wanted:
                break
    return built


def release_memory() -> None:
    """Give PyTorch's cached blocks back to the device, for ucudnn's next allocations."""
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def torch_versions() -> dict[str, object] | None:
    try:
        import torch
    except ImportError:
        return None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn}


def frontend_versions() -> dict[str, object] | None:
    try:
        cudnn = _cudnn_frontend()
        return {
            "version": importlib.metadata.version("nvidia-cudnn-frontend"),
            "backend": cudnn.backend_version_string(),
        }
    except Exception:  # not installed, or its library does not load: recorded as absent
        return None
