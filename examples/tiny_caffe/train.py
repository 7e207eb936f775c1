"""Train a small CNN on synthetic data with tiny_caffe, its convolutions planned by ucudnn.

    python -m examples.tiny_caffe.train --iterations 300 --batch 64 --mode wd \
        --workspace-limit 64MiB
    python -m examples.tiny_caffe.train --compare --workspace-limit 256KiB

--mode undivided runs each convolution on the whole batch; wr splits batches into micro-batches
under a per-kernel workspace limit; wd divides one workspace budget over the whole network.
--compare trains twice from the same seed, undivided and micro-batched (wr), and checks that the
loss curves agree.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys

import numpy as np

from examples.tiny_caffe.data import CLASSES, SIZE, batches, held_out
from examples.tiny_caffe.layers import Convolution, InnerProduct, Pooling, ReLU, SoftmaxWithLoss
from examples.tiny_caffe.net import Net
from examples.tiny_caffe.solver import SGD
from ucudnn import Handle, cuda
from ucudnn.errors import NoDeviceError
from ucudnn.planner.config import parse_size

MODES = ("undivided", "wr", "wd")
TEST_BATCHES = 10
# Micro-batching only reorders fp32 sums, but training amplifies any difference: in a NumPy
# model of this net, noise of 1e-5 per element grew to ~2e-4 relative loss difference by
# iteration 30 and to 1e-2 by iteration 50. So the curves are compared over their start.
COMPARE_ITERATIONS = 30
COMPARE_TOLERANCE = 1e-3


def build_net(batch: int) -> Net:
    return Net(
        [
            Convolution("conv1", 16, kernel=5, padding="same"),
            ReLU("relu1"),
            Pooling("pool1"),
            Convolution("conv2", 32, kernel=3, padding="same"),
            ReLU("relu2"),
            Pooling("pool2"),
            InnerProduct("ip1", 64),
            ReLU("relu3"),
            InnerProduct("ip2", CLASSES),
            SoftmaxWithLoss("loss"),
        ],
        (batch, 1, SIZE, SIZE),
    )


def make_handle(mode: str, workspace_limit: int) -> Handle:
    if mode == "wd":
        return Handle(total_workspace=workspace_limit, policy="powerOfTwo")
    policy = "undivided" if mode == "undivided" else "powerOfTwo"
    return Handle(workspace_limit=workspace_limit, policy=policy)


@dataclasses.dataclass
class Result:
    losses: list[float]  # one per iteration
    accuracy: float  # on held-out data
    micro_batched: list[str]  # "conv2 forward: 16+16+32" for every kernel the plan splits
    kernels: int  # convolution kernels in the net


def train(
    mode: str, *, iterations: int, batch: int, workspace_limit: int, seed: int = 0,
    lr: float = 0.01, momentum: float = 0.9, log_every: int = 0,
) -> Result:  # fmt: skip
    """Train from `seed`; print the mean loss every `log_every` iterations (0: silent)."""
    net = build_net(batch)
    with make_handle(mode, workspace_limit) as handle:
        net.to_device(handle, seed)
        solver = SGD(net, lr, momentum)
        losses = []
        for i, (images, labels) in enumerate(
            itertools.islice(batches(batch, seed=seed), iterations)
        ):
            losses.append(net.forward(images, labels))
            net.backward()
            solver.step()
            if log_every and (i + 1) % log_every == 0:
                print(f"[{mode}] iteration {i + 1}: loss {np.mean(losses[-log_every:]):.4f}")
        accuracy = evaluate(net, seed)
        schedules = [
            (f"{conv.name} {kernel}", handle.schedule(conv.problem, kernel, conv.name))
            for conv in net.convolutions
            for kernel in conv.kernels
        ]
    split = [
        f"{name}: {'+'.join(str(part.micro_batch) for part in schedule.parts)}"
        for name, schedule in schedules
        if len(schedule.parts) > 1
    ]
    return Result(losses, accuracy, split, len(schedules))


def evaluate(net: Net, seed: int) -> float:
    """Fraction of held-out images classified right, in batches of the net's size."""
    batch = net.shapes[0][0]
    images, labels = held_out(batch * TEST_BATCHES, seed=seed)
    correct = 0
    for start in range(0, len(labels), batch):
        chunk = labels[start : start + batch]
        net.forward(images[start : start + batch], chunk)
        correct += int(np.sum(net.loss_layer.probabilities.argmax(axis=1) == chunk))
    return correct / len(labels)


def loss_difference(a: list[float], b: list[float]) -> float:
    """Largest relative difference of two loss curves over their first COMPARE_ITERATIONS."""
    n = min(len(a), len(b), COMPARE_ITERATIONS)
    a_, b_ = np.asarray(a[:n]), np.asarray(b[:n])
    return float(np.max(np.abs(a_ - b_) / np.abs(a_)))


def report(result: Result) -> None:
    split = f"{len(result.micro_batched)} of {result.kernels}"
    print(f"final accuracy {result.accuracy:.3f}; micro-batched kernels: {split}")
    for line in result.micro_batched:
        print(f"  {line}")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _size(text: str) -> int:
    try:
        return parse_size(text, "--workspace-limit")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=_positive, default=300)
    parser.add_argument("--batch", type=_positive, default=64)
    parser.add_argument("--mode", choices=MODES, default="wr")
    parser.add_argument(
        "--workspace-limit", type=_size, default=None,
        help="bytes per kernel (wr, undivided) or for the net (wd), e.g. 64MiB; default 64MiB, "
        "or 256KiB with --compare, small enough that micro-batching pays",
    )  # fmt: skip
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=25, help="0: no loss lines")
    parser.add_argument("--compare", action="store_true", help="undivided vs wr from one seed")
    args = parser.parse_args(argv)
    default_limit = 256 * 1024 if args.compare else 64 * 1024**2
    limit = default_limit if args.workspace_limit is None else args.workspace_limit
    try:
        cuda.device_count()
    except NoDeviceError as exc:
        print(f"no GPU: tiny_caffe trains on the device, nothing to run ({exc})")
        return 0
    # "SIMULATED ..." on the simulated device (UCUDNN_DEVICE=sim): nothing then runs on a GPU.
    print(f"device: {cuda.device_properties(cuda.get_device())['name']}")
    options = dict(
        iterations=args.iterations, batch=args.batch, workspace_limit=limit, seed=args.seed,
        lr=args.lr, momentum=args.momentum, log_every=args.log_every,
    )  # fmt: skip
    if not args.compare:
        report(train(args.mode, **options))
        return 0
    undivided, micro = (train(mode, **options) for mode in ("undivided", "wr"))
    report(micro)
    difference = loss_difference(undivided.losses, micro.losses)
    ok = difference <= COMPARE_TOLERANCE
    verdict = "ok" if ok else "FAILED"
    print(
        f"max relative loss difference over the first {COMPARE_ITERATIONS} iterations: "
        f"{difference:.2e} (tolerance {COMPARE_TOLERANCE:.0e}) {verdict}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
