"""ucudnn.torch: converted layers agree with PyTorch's own convolutions, in value and gradient.

The gpu-marked tests run on a real GPU with CUDA tensors, and in CI on the simulated device,
where converted layers take CPU tensors (staged through the simulator: a test double, never
evidence of speed). The reference is PyTorch's own convolution of the same values in float64,
on the same device: cuDNN's through PyTorch on a GPU, PyTorch's CPU code on the simulator.
The unmarked tests need no device: conversion, state_dict, pickling, and the fallback of CPU
tensors on a machine that is not simulated.
"""

from __future__ import annotations

import copy
import io
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip(
    "torch",
    reason="PyTorch is not installed (CI installs its CPU build where the index serves one)",
)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ucudnn.torch as ut  # noqa: E402
from tests.conftest import simulated  # noqa: E402
from ucudnn.errors import (  # noqa: E402
    ReplanWarning,
    TorchFallbackWarning,
    UcudnnWarning,
    UnplannedNetworkWarning,
)
from ucudnn.runtime.handle import Handle  # noqa: E402

DEVICE = "cpu" if simulated() else "cuda"
# PyTorch's own note when the reference pads for "same" with an even kernel, as ucudnn does.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")
# Relative tolerances against the float64 reference, by dtype: float32 with TF32 off.
TOLERANCE = {
    torch.float64: 1e-10,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 5e-2,
}


@pytest.fixture(autouse=True)
def _no_tf32() -> Iterator[None]:
    """float32 compares exactly enough only without TF32 (ucudnn follows this flag too)."""
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = before


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    actual, expected = actual.detach().double().cpu(), expected.detach().double().cpu()
    assert actual.shape == expected.shape
    scale = max(expected.abs().max().item(), 1e-30)
    error = (actual - expected).abs().max().item() / scale
    assert error <= TOLERANCE[dtype], f"relative error {error:.3g} over {TOLERANCE[dtype]}"


def reference_layer(layer: nn.Module) -> nn.Module:
    """A float64 copy of a layer as PyTorch's own class (the reference)."""
    plain = ut.revert(copy.deepcopy(layer))
    return plain.to(device=DEVICE, dtype=torch.float64)


def run_and_grads(
    layer: nn.Module, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """y, and the gradients of x, the weight and the bias for a fixed random dy."""
    x = x.detach().requires_grad_(True)
    y = layer(x)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    y.backward(dy.to(device=y.device, dtype=y.dtype))
    bias = layer.bias.grad if layer.bias is not None else None
    assert x.grad is not None and layer.weight.grad is not None
    return y, x.grad, layer.weight.grad, bias


def check_against_torch(
    layer: nn.Module, x_size: tuple[int, ...], dtype: torch.dtype, memory_format: object = None
) -> None:
    torch.manual_seed(0)
    reference = reference_layer(layer)
    layer = layer.to(device=DEVICE, dtype=dtype)
    x = torch.randn(x_size, dtype=torch.float64)
    x_run = x.to(device=DEVICE, dtype=dtype)
    if memory_format is not None:
        layer = layer.to(memory_format=memory_format)
        x_run = x_run.contiguous(memory_format=memory_format)
    got = run_and_grads(layer, x_run)
    # The reference sees the values the run saw (rounded to dtype).
    reference.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    expected = run_and_grads(reference, x_run.double())
    for actual, wanted in zip(got, expected, strict=True):
        if wanted is None:
            assert actual is None
        else:
            assert actual is not None
            assert_close(actual, wanted, dtype)


GEOMETRIES_2D = [
    pytest.param(dict(kernel_size=3, padding=1), id="3x3-pad1"),
    pytest.param(dict(kernel_size=3, stride=2, padding=1, bias=False), id="stride2-nobias"),
    pytest.param(dict(kernel_size=3, dilation=2, padding=2), id="dilation2"),
    pytest.param(dict(kernel_size=3, padding=1, groups=2), id="groups2"),
    pytest.param(dict(kernel_size=(2, 3), padding="same"), id="same-even"),
    pytest.param(dict(kernel_size=3, padding="valid"), id="valid"),
    pytest.param(dict(kernel_size=1), id="1x1"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("geometry", GEOMETRIES_2D)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_conv2d_matches_torch(geometry: dict[str, object], dtype: torch.dtype) -> None:
    layer = ut.Conv2d(4, 6, **geometry)  # type: ignore[arg-type]
    check_against_torch(layer, (3, 4, 7, 6), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("geometry", GEOMETRIES_2D[:5])
def test_conv2d_channels_last_matches_torch(geometry: dict[str, object]) -> None:
    layer = ut.Conv2d(4, 6, **geometry)  # type: ignore[arg-type]
    check_against_torch(layer, (2, 4, 6, 5), torch.float16, torch.channels_last)


@pytest.mark.gpu
@pytest.mark.parametrize("memory_format", [None, torch.channels_last_3d])
@pytest.mark.parametrize(
    "geometry",
    [dict(kernel_size=3, padding=1), dict(kernel_size=2, padding="same", groups=2)],
    ids=["3x3x3", "same-even-groups"],
)
def test_conv3d_matches_torch(geometry: dict[str, object], memory_format: object) -> None:
    layer = ut.Conv3d(2, 4, **geometry)  # type: ignore[arg-type]
    check_against_torch(layer, (2, 2, 4, 5, 4), torch.float16, memory_format)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("layer", "x_size"),
    [
        (lambda: ut.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1), (2, 2, 5, 5)),
        (lambda: ut.Conv2d(4, 4, (2, 3), padding="same", dilation=(1, 2), groups=2), (1, 4, 4, 5)),
        (lambda: ut.Conv3d(2, 2, 2, padding=1, bias=False), (1, 2, 3, 3, 3)),
    ],
    ids=["stride2", "same-even-groups-dilation", "3d"],
)
def test_gradcheck_float64(layer: object, x_size: tuple[int, ...]) -> None:
    torch.manual_seed(1)
    module = layer().to(device=DEVICE, dtype=torch.float64)  # type: ignore[operator]
    x = torch.randn(x_size, dtype=torch.float64, device=DEVICE, requires_grad=True)
    weight = module.weight.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x, w: _functional(module, x, w), (x, weight), eps=1e-6, atol=1e-7
    )


def _functional(module: nn.Module, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The converted layer run with weight `w` (torch.func keeps the module untouched)."""
    out: torch.Tensor = torch.func.functional_call(module, {"weight": w}, (x,))
    return out


@pytest.mark.gpu
def test_float64_and_unbatched_input() -> None:
    layer = ut.Conv2d(3, 2, 3, padding=1)
    check_against_torch(layer, (2, 3, 5, 5), torch.float64)
    plain = reference_layer(layer)
    x = torch.randn(3, 5, 5, dtype=torch.float64, device=DEVICE)
    assert_close(layer(x), plain(x), torch.float64)


@pytest.mark.gpu
def test_a_non_dense_input_is_copied_dense() -> None:
    layer = ut.Conv2d(3, 4, 3, padding=1).to(DEVICE, torch.float64)
    wide = torch.randn(2, 3, 6, 10, dtype=torch.float64, device=DEVICE)
    x = wide[..., ::2]  # every other column: no dense layout
    assert not x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)
    assert_close(layer(x), reference_layer(layer)(x), torch.float64)


class Calls:
    """The kernels a Handle ran, by name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kernels: list[str] = []
        run = Handle.run

        def spy(handle: Handle, kernel: str, *args: object, **kw: object) -> None:
            self.kernels.append(kernel)
            run(handle, kernel, *args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(Handle, "run", spy)


@pytest.mark.gpu
def test_skipped_gradients_launch_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    layer = ut.Conv2d(2, 3, 3, padding=1).to(DEVICE)
    x = torch.randn(2, 2, 5, 5, device=DEVICE)
    layer(x).sum().backward()  # the input needs no gradient
    assert calls.kernels == ["forward", "backward_filter"]
    calls.kernels.clear()
    layer.weight.requires_grad_(False)
    layer(x.requires_grad_(True)).sum().backward()  # a frozen weight
    assert calls.kernels == ["forward", "backward_data"]
    calls.kernels.clear()
    with torch.no_grad():
        layer(x)
    assert calls.kernels == ["forward"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_runs_the_lower_precision(dtype: torch.dtype) -> None:
    if simulated() and dtype == torch.float16:
        pytest.skip("torch's CPU autocast takes bfloat16 only")  # the simulated device is CPU
    layer = ut.Conv2d(3, 4, 3, padding=1).to(DEVICE)
    x = torch.randn(2, 3, 6, 6, device=DEVICE, requires_grad=True)
    with torch.autocast(DEVICE, dtype=dtype):
        y = layer(x)
    assert y.dtype == dtype
    y.float().sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.dtype == torch.float32
    assert x.grad is not None and x.grad.dtype == torch.float32
    plain = reference_layer(layer)
    expected = plain(x.detach().to(dtype).double())
    assert_close(y, expected, dtype)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:Complex modules:UserWarning")
def test_wrong_inputs_are_refused_clearly() -> None:
    layer = ut.Conv2d(3, 4, 3).to(DEVICE)
    with pytest.raises(ValueError, match=r"takes a 3D \(unbatched\) or 4D \(batched\) input"):
        layer(torch.randn(1, 1, 3, 5, 5, device=DEVICE))
    with pytest.raises(TypeError, match=r"the input is torch\.float64 but the weight is"):
        layer(torch.randn(1, 3, 5, 5, device=DEVICE, dtype=torch.float64))
    with pytest.raises(TypeError, match="ucudnn runs convolutions of"):
        layer.to(torch.complex64)(torch.ones(1, 3, 5, 5, device=DEVICE, dtype=torch.complex64))
    with pytest.raises(ValueError, match="channels"):
        ut.Conv2d(2, 4, 3).to(DEVICE)(torch.randn(1, 3, 5, 5, device=DEVICE))


def small_net(conv: type[nn.Module] = nn.Conv2d) -> nn.Sequential:
    torch.manual_seed(3)
    return nn.Sequential(
        conv(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        conv(8, 8, 3, stride=2, padding=1, bias=False),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
    )


def train(model: nn.Module, steps: int, dtype: torch.dtype = torch.float64) -> list[float]:
    model = model.to(DEVICE, dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(11)
    losses = []
    for _ in range(steps):
        x = torch.randn(4, 3, 8, 8, generator=generator, dtype=dtype).to(DEVICE)
        target = torch.randint(0, 5, (4,), generator=generator).to(DEVICE)
        loss = F.cross_entropy(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.gpu
def test_a_converted_model_trains_as_torch_does() -> None:
    expected = train(small_net(), 3)
    model = ut.convert(small_net(), workspace_limit="1MiB")
    assert train(model, 3) == pytest.approx(expected, rel=1e-9)
    assert ut.workspace_bytes(model) >= 0


@pytest.mark.gpu
def test_a_converted_3d_layer_with_a_slab_policy_matches_torch() -> None:
    """One sample of a volume, each kernel measured whole and cut into slabs (docs/spatial.md):
    the values and gradients of PyTorch's own convolution."""
    layer = ut.Conv3d(2, 4, 3, padding=1)
    ut.convert(layer, workspace_limit="1MiB", slab_policy="powerOfTwo")
    check_against_torch(layer, (1, 2, 6, 4, 5), torch.float32)
    made = layer.ucudnn_handles.handles.values()
    assert [handle.slab_policy for handle in made] == ["powerOfTwo"]


@pytest.mark.gpu
def test_wd_plans_the_network_from_one_forward() -> None:
    model = ut.convert(small_net(), total_workspace="4MiB").to(DEVICE)
    running_mean = model[1].running_mean.clone()
    x = torch.randn(4, 3, 8, 8, device=DEVICE)
    plan = ut.plan(model, x)
    # The first layer's input needs no gradient: 2 + 3 kernels.
    assert len(plan.kernels) == 5
    assert torch.equal(model[1].running_mean, running_mean)
    assert all(p.grad is None for p in model.parameters())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UcudnnWarning)  # no re-plan, no unplanned warning
        model(x).sum().backward()


@pytest.mark.gpu
def test_wd_without_plan_says_so_once() -> None:
    model = ut.convert(small_net(), total_workspace="4MiB").to(DEVICE)
    x = torch.randn(4, 3, 8, 8, device=DEVICE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            model(x).sum().backward()
    unplanned = [w for w in caught if w.category is UnplannedNetworkWarning]
    assert len(unplanned) == 1
    assert unplanned[0].filename == __file__  # the user's line, not torch.nn's
    assert any(w.category is ReplanWarning for w in caught)


@pytest.mark.gpu
def test_handles_follow_the_device_and_are_not_pickled() -> None:
    model = ut.convert(small_net(), workspace_limit="1MiB").to(DEVICE)
    model(torch.randn(2, 3, 8, 8, device=DEVICE))
    handles = model[0].ucudnn_handles
    device = torch.device(DEVICE, 0) if DEVICE == "cuda" else torch.device("cpu")
    assert list(handles.handles) == [(device, False)]
    copied = copy.deepcopy(model)
    assert copied[0].ucudnn_handles is copied[3].ucudnn_handles
    assert copied[0].ucudnn_handles.handles == {}
    assert torch.equal(
        copied(torch.ones(1, 3, 8, 8, device=DEVICE)), model(torch.ones(1, 3, 8, 8, device=DEVICE))
    )


# A process group is the process's own state, and gloo's threads outlive a test that fails
# midway: DDP runs in a process of its own, which a timeout ends if it hangs.
DDP_SCRIPT = """
import sys, torch, torch.distributed as dist
from torch import nn
import ucudnn.torch as ut
device = sys.argv[2]
dist.init_process_group("gloo", init_method=f"file://{sys.argv[1]}", rank=0, world_size=1)
model = ut.convert(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 1)),
                   workspace_limit="1MiB").to(device)
ddp = nn.parallel.DistributedDataParallel(model)
ddp(torch.randn(2, 3, 6, 6, device=device)).sum().backward()
grads = [p.grad is not None for p in model.parameters()]
del ddp
dist.destroy_process_group()
print(type(model[0]).__name__, all(grads))
"""


@pytest.mark.gpu
def test_ddp_with_one_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DDP_SCRIPT, str(tmp_path / "rendezvous"), DEVICE],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Conv2d", "True"]


# -- without a device ---------------------------------------------------------------------------


def test_convert_swaps_in_place_and_revert_swaps_back() -> None:
    model = small_net()
    first, parameters = model[0], list(model.parameters())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert ut.convert(model, workspace_limit="8MiB") is model
    assert type(model[0]) is ut.Conv2d and model[0] is first
    assert model[0].ucudnn_layer == "0" and model[3].ucudnn_layer == "3"
    assert list(model.parameters()) == parameters  # the same objects: an optimizer still holds them
    assert state.keys() == model.state_dict().keys()
    assert ut.revert(model) is model
    assert type(model[0]) is nn.Conv2d and not hasattr(model[0], "ucudnn_handles")
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_state_dict_loads_either_way() -> None:
    plain, converted = small_net(), ut.convert(small_net(nn.Conv2d))
    for parameter in plain.parameters():
        nn.init.normal_(parameter)
    converted.load_state_dict(plain.state_dict())
    assert all(
        torch.equal(a, b)
        for a, b in zip(plain.state_dict().values(), converted.state_dict().values(), strict=True)
    )
    direct = ut.Conv3d(2, 3, 3, bias=False)
    nn.Conv3d(2, 3, 3, bias=False).load_state_dict(direct.state_dict())


def test_a_converted_model_pickles_without_its_handles() -> None:
    model = ut.convert(small_net(), workspace_limit="8MiB")
    buffer = io.BytesIO()
    torch.save(model, buffer)
    loaded = torch.load(io.BytesIO(buffer.getvalue()), weights_only=False)
    assert type(loaded[0]) is ut.Conv2d
    assert loaded[0].ucudnn_handles is loaded[3].ucudnn_handles
    assert loaded[0].ucudnn_handles.handles == {} and loaded[0].ucudnn_handles.mode == "wr"


def test_other_padding_modes_are_refused_or_left() -> None:
    with pytest.raises(ValueError, match="padding_mode='zeros' only, got 'reflect'"):
        ut.Conv2d(2, 2, 3, padding=1, padding_mode="reflect")
    with pytest.raises(ValueError, match=r"ucudnn\.torch\.Conv3d runs padding_mode='zeros'"):
        ut.Conv3d(2, 2, 3, padding_mode="circular")
    model = nn.Sequential(nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), nn.Conv2d(2, 2, 1))
    with pytest.warns(UcudnnWarning, match="convert left 0 as PyTorch's"):
        ut.convert(model)
    assert type(model[0]) is nn.Conv2d and type(model[1]) is ut.Conv2d


def test_options_are_checked_when_converting() -> None:
    with pytest.raises(ValueError, match="workspace_limit"):
        ut.convert(small_net(), workspace_limit="8MiB", total_workspace="1GiB")
    with pytest.raises(ValueError):
        ut.convert(small_net(), workspace_limit="lots")
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        ut.convert("model")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no converted layer"):
        ut.plan(small_net(), torch.randn(1, 3, 8, 8))


@pytest.mark.skipif(simulated(), reason="on the simulated device CPU tensors run on the simulator")
def test_cpu_tensors_fall_back_to_torch_once() -> None:
    import ucudnn.torch.layers as layers

    layers._fallback_warned = False
    model = ut.convert(small_net(), workspace_limit="8MiB")
    expected = ut.revert(copy.deepcopy(model))(torch.ones(2, 3, 8, 8))
    with pytest.warns(TorchFallbackWarning, match="on cpu") as caught:
        got = model(torch.ones(2, 3, 8, 8))
        model(torch.ones(2, 3, 8, 8))
    fallbacks = [w for w in caught if w.category is TorchFallbackWarning]
    assert len(fallbacks) == 1 and fallbacks[0].filename == __file__
    assert torch.equal(got, expected)


def test_without_torch_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['torch'] = None; import ucudnn.torch"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "ucudnn-cu13[torch]" in done.stderr


@pytest.mark.gpu
def test_float32_follows_torchs_tf32_flag() -> None:
    layer = ut.Conv2d(2, 2, 3).to(DEVICE)
    x = torch.randn(1, 2, 5, 5, device=DEVICE)
    math_types = []
    for allowed in (False, True):
        torch.backends.cudnn.allow_tf32 = allowed
        layer(x)
        math_types.append(list(layer._ucudnn_geometries.values())[-1].problem.math_type)
    assert math_types == ["fma", "default"]


@pytest.mark.gpu
def test_tf32_follows_torchs_newer_precision_setting() -> None:
    from ucudnn.torch.geometry import tf32_allowed

    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is None:
        pytest.skip("PyTorch before 2.9 has no per-operator precision setting")
    before = conv.fp32_precision
    try:
        for precision, allowed in [("ieee", False), ("tf32", True)]:
            conv.fp32_precision = precision
            assert tf32_allowed() is allowed
    finally:
        conv.fp32_precision = before


@pytest.mark.gpu
def test_torchs_deterministic_setting_picks_a_deterministic_handle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    layer = ut.Conv2d(2, 2, 3, handles=ut.ModelHandles(workspace_limit="1MiB")).to(DEVICE)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    layer(torch.randn(1, 2, 5, 5, device=DEVICE)).sum().backward()
    ((_, deterministic), handle), *others = layer.ucudnn_handles.handles.items()
    assert deterministic and handle.deterministic and not others


@pytest.mark.gpu
def test_plan_leaves_torchs_random_numbers_alone() -> None:
    model = ut.convert(nn.Sequential(nn.Dropout(0.5), nn.Conv2d(2, 2, 3)), total_workspace="1MiB")
    model.to(DEVICE)
    x = torch.randn(2, 2, 5, 5, device=DEVICE)
    state = torch.get_rng_state()
    ut.plan(model, x)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.gpu
def test_half_and_channels_last_after_converting() -> None:
    model = ut.convert(small_net(), workspace_limit="1MiB").to(DEVICE)
    model = model.to(dtype=torch.float16, memory_format=torch.channels_last)
    y = model(torch.randn(2, 3, 8, 8, device=DEVICE, dtype=torch.float16))
    assert y.dtype == torch.float16 and type(model[0]) is ut.Conv2d
    (geometry,) = model[0]._ucudnn_geometries.values()
    assert geometry.problem.layout == "NHWC" and geometry.problem.dtype == "float16"
