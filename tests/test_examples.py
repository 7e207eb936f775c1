"""The examples: numpy_conv.py and the tiny_caffe framework.

CPU tests check what needs no device (the data set, the network's shapes against cuDNN's own
shape functions, the no-GPU exits); GPU tests run the examples for real.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from examples.tiny_caffe import train as tiny_train
from examples.tiny_caffe.data import CLASSES, SIZE, batches, held_out, make_dataset
from examples.tiny_caffe.layers import (
    Convolution,
    InnerProduct,
    Pooling,
    ReLU,
    SoftmaxWithLoss,
)
from examples.tiny_caffe.net import Net
from tests.conftest import simulated
from ucudnn._native import _cuda, _cudnn
from ucudnn.core.problem import packed_strides
from ucudnn.errors import NoDeviceError
from ucudnn.planner.config import parse_size
from ucudnn.runtime.backend import ProblemDescriptors

ROOT = Path(__file__).resolve().parents[1]


def _no_device() -> bool:
    try:
        _cuda.device_count()
    except NoDeviceError:
        return True
    return False


without_gpu = pytest.mark.skipif(not _no_device(), reason="a GPU is present; gpu tests run")


def _run_numpy_conv(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "numpy_conv.py")],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip


# -- the data set ---------------------------------------------------------------------------


def test_dataset_is_deterministic_with_the_promised_shapes() -> None:
    images, labels = make_dataset(50, seed=7)
    again_images, again_labels = make_dataset(50, seed=7)
    other_images, _ = make_dataset(50, seed=8)
    assert images.shape == (50, 1, SIZE, SIZE) and images.dtype == np.float32
    assert labels.shape == (50,) and labels.dtype == np.int64
    np.testing.assert_array_equal(images, again_images)
    np.testing.assert_array_equal(labels, again_labels)
    assert not np.array_equal(images, other_images)


def test_dataset_classes_are_balanced() -> None:
    _, labels = make_dataset(10 * CLASSES + 3, seed=0)
    counts = np.bincount(labels, minlength=CLASSES)
    assert len(counts) == CLASSES
    assert counts.max() - counts.min() <= 1


def test_training_batches_and_test_set_are_distinct_and_repeatable() -> None:
    first = [next(batches(16, seed=0))[0] for _ in range(2)]
    np.testing.assert_array_equal(first[0], first[1])
    stream = batches(16, seed=0)
    a, b = next(stream)[0], next(stream)[0]
    assert not np.array_equal(a, b)
    assert not np.array_equal(held_out(16, seed=0)[0], a)


def test_dataset_is_learnable_by_a_nearest_class_mean() -> None:
    # Even a linear-ish classifier beats chance (10%) by far, so the classes carry signal.
    images, labels = make_dataset(2000, seed=1)
    unseen, truth = held_out(1000, seed=1)
    means = np.stack([images[labels == k].mean(axis=0).ravel() for k in range(CLASSES)])
    distances = ((unseen.reshape(len(truth), 1, -1) - means[None]) ** 2).sum(axis=-1)
    assert (distances.argmin(axis=1) == truth).mean() > 0.4


def test_dataset_rejects_an_empty_request() -> None:
    with pytest.raises(ValueError, match="count"):
        make_dataset(0, seed=0)


# -- the network's shapes, checked against cuDNN without a device --------------------------


def test_network_shapes_chain_and_match_cudnn() -> None:
    net = tiny_train.build_net(32)
    assert net.shapes[0] == (32, 1, SIZE, SIZE)
    assert net.shapes[-1] == (32, CLASSES, 1, 1)
    assert len(net.shapes) == len(net.layers) + 1
    for layer, bottom, top in zip(net.layers, net.shapes[:-1], net.shapes[1:], strict=True):
        x_desc = _cudnn.TensorDescriptor("float32", bottom, packed_strides(bottom, "NCHW"))
        if isinstance(layer, Convolution):
            problem = layer.problem
            assert (problem.x_shape, problem.y_shape) == (bottom, top), layer.name
            assert problem.math_type == "fma"  # TF32 off, even if UCUDNN_ALLOW_TF32 is set
            descs = ProblemDescriptors(problem)
            assert descs.conv.output_dims(x_desc, descs.w) == top, layer.name
        elif isinstance(layer, Pooling):
            assert layer.pooling.output_dims(x_desc) == top, layer.name
        else:
            assert top == bottom, layer.name


def test_inner_product_is_a_convolution_over_the_whole_input() -> None:
    layer = InnerProduct("ip", 7)
    assert layer.setup((4, 3, 5, 6)) == (4, 7, 1, 1)
    assert layer.problem.w_shape == (7, 3, 5, 6)


def test_only_the_first_layer_skips_backward_data() -> None:
    net = tiny_train.build_net(8)
    kernels = {conv.name: conv.kernels for conv in net.convolutions}
    assert kernels["conv1"] == ("forward", "backward_filter")
    for name in ("conv2", "ip1", "ip2"):
        assert set(kernels[name]) == {"forward", "backward_data", "backward_filter"}


def test_bad_networks_are_refused_with_the_layer_named() -> None:
    with pytest.raises(ValueError, match="SoftmaxWithLoss"):
        Net([Convolution("c", 4, kernel=3), ReLU("r")], (2, 1, 8, 8))
    with pytest.raises(ValueError, match="pool"):
        Net([Pooling("pool", window=4), SoftmaxWithLoss("loss")], (2, 1, 3, 3))
    with pytest.raises(ValueError, match="loss"):
        Net([Convolution("c", 4, kernel=3), SoftmaxWithLoss("loss")], (2, 1, 8, 8))


def test_loss_difference_is_relative_and_limited_to_the_start() -> None:
    a = [2.0] * tiny_train.COMPARE_ITERATIONS + [1.0]
    b = [2.002] * tiny_train.COMPARE_ITERATIONS + [5.0]  # later divergence is not counted
    assert tiny_train.loss_difference(a, b) == pytest.approx(1e-3)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--workspace-limit", "lots"], "--workspace-limit"),
        (["--iterations", "0"], "--iterations"),
        (["--batch", "-4"], "--batch"),
        (["--mode", "fast"], "--mode"),
    ],
)
def test_train_rejects_bad_arguments_naming_the_option(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        tiny_train.main(argv)
    assert exit_info.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err


def test_help_names_the_default_limit_the_example_uses() -> None:
    help_text = tiny_train._parser().format_help()
    match = re.search(r"default (\S+), where on the simulated\s+device", help_text)
    assert match, help_text
    assert parse_size(match.group(1), "help") == tiny_train.WORKSPACE_LIMIT


def test_predicted_times_say_when_they_are_the_simulators() -> None:
    assert "test double" in tiny_train.timing_source("SIMULATED NVIDIA H100 (ucudnn-sim 1)")
    assert tiny_train.timing_source("NVIDIA H100 80GB HBM3") == "measured on NVIDIA H100 80GB HBM3"


# -- without a GPU the examples say so and exit cleanly ------------------------------------


@without_gpu
def test_numpy_conv_without_gpu_says_so() -> None:
    done = _run_numpy_conv()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no GPU")


@without_gpu
def test_tiny_caffe_without_gpu_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert tiny_train.main(["--iterations", "3"]) == 0
    assert capsys.readouterr().out.startswith("no GPU")


# -- on a GPU ------------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private benchmark cache, so tests neither read nor fill the user's."""
    path = tmp_path / "benchmarks.sqlite"
    monkeypatch.setenv("UCUDNN_DATABASE", str(path))
    return path


@pytest.mark.gpu
def test_numpy_conv_matches_numpy(database: Path) -> None:
    done = _run_numpy_conv({**os.environ, "UCUDNN_DATABASE": str(database)})
    assert done.returncode == 0, done.stderr
    match = re.search(r"normalised L2 difference from NumPy: (\S+)", done.stdout)
    assert match, done.stdout
    assert float(match.group(1)) < 1e-5  # fp32 with TF32 off against a float64 reference
    assert (" on SIMULATED " in done.stdout) == simulated()


@pytest.mark.gpu
@pytest.mark.parametrize("mode", tiny_train.MODES)
def test_training_loss_falls(mode: str, database: Path) -> None:
    # Batch 64 learns as fast per iteration as the default 256, at a quarter of the cost.
    result = tiny_train.train(
        mode, iterations=80, batch=64, workspace_limit=tiny_train.WORKSPACE_LIMIT
    )
    assert len(result.losses) == 80
    assert np.all(np.isfinite(result.losses))
    assert np.mean(result.losses[-20:]) < 0.5 * np.mean(result.losses[:10])
    assert result.accuracy > 0.8  # 10 classes: chance is 0.1


def _split_count(out: str) -> int:
    """N of the report's last line, `micro-batched kernels: N of 11`."""
    found = re.findall(r"micro-batched kernels: (\d+) of (\d+)", out)
    assert found, out
    count, total = map(int, found[-1])
    assert total == 11, out
    return count


def _train_once(mode: str) -> tiny_train.Result:
    """One iteration at the defaults the help names: enough to see the plan."""
    return tiny_train.train(
        mode, iterations=1, batch=tiny_train.BATCH, workspace_limit=tiny_train.WORKSPACE_LIMIT
    )


# What the help promises: on the simulated device, the default batch and limit make
# micro-batching conv2 faster than any undivided schedule that fits.
@pytest.mark.gpu
@pytest.mark.simulator
def test_wr_splits_conv2_at_the_default_limit_because_it_is_faster(database: Path) -> None:
    micro, undivided = _train_once("wr"), _train_once("undivided")
    assert micro.micro_batched, micro
    assert all(line.startswith("conv2 ") for line in micro.micro_batched), micro
    assert micro.planned_ms < undivided.planned_ms


@pytest.mark.gpu
@pytest.mark.simulator
def test_wd_splits_conv2_within_the_default_total(database: Path) -> None:
    result = _train_once("wd")
    assert result.micro_batched, result
    assert all(line.startswith("conv2 ") for line in result.micro_batched), result


@pytest.mark.gpu
def test_micro_batched_training_tracks_undivided(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default batch and limit, as docs/handle.md runs it, over half the compared iterations.
    status = tiny_train.main(["--compare", "--iterations", "15", "--log-every", "0"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert re.search(r"max relative loss difference .*\bok$", out, re.MULTILINE), out
    # Else undivided is compared with undivided, which proves nothing.
    assert _split_count(out) > 0, out
    assert out.rstrip().splitlines()[-1].startswith("micro-batched kernels: "), out
    assert out.startswith("device: SIMULATED ") == simulated()
    assert ("a test double, not a GPU's speed" in out) == simulated()
