"""Train a small CNN on synthetic data with tiny_caffe, its convolutions planned by ucudnn.

    python -m examples.tiny_caffe.train                # wr, 64MiB per kernel, 60 iterations
    python -m examples.tiny_caffe.train --mode wd      # 64MiB for the whole net
    python -m examples.tiny_caffe.train --compare      # undivided vs wr, 30 iterations each

Without a GPU, prefix UCUDNN_DEVICE=sim to run on the simulated device (a test double).

--mode undivided runs each convolution on the whole batch; wr splits batches into micro-batches
under a per-kernel workspace limit; wd divides one workspace budget over the whole network.
--compare trains twice from the same seed, undivided and micro-batched (wr), and checks that the
loss curves agree.

Micro-batching pays only where a faster algorithm needs more workspace for the whole batch
than the limit allows, and the time it saves outweighs the extra launches. conv2 (32 to 32
channels, 5x5, at 16x16, batch 256) is sized for that: on the simulated device its Winograd
and FFT-tiling algorithms need about 106 MB for 256 samples and 56 MB for 128, and two
launches of 128 beat the best algorithm that fits 64MiB undivided, so at the default limit
its three kernels run as 128+128 in wr (in wd, where the 64MiB are the whole net's, one of
them). The other layers are too small for any split to pay: a launch costs more than the
time a faster algorithm saves them. On a GPU the planner decides from what it measures there.
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
BATCH = 256
WORKSPACE_LIMIT = 64 * 1024**2  # see the module's docstring: conv2 splits within it
ITERATIONS = 60
TEST_IMAGES = 1024  # held out; evaluated in batches of the net's size
# Micro-batching only reorders fp32 sums, but training amplifies any difference: in a NumPy
# model of this net, noise of 1e-5 per element grew to ~2e-4 relative loss difference by
# iteration 30 and to 1e-2 by iteration 50. So the curves are compared over their start, and
# --compare trains no longer than that unless told to.
COMPARE_ITERATIONS = 30
COMPARE_TOLERANCE = 1e-3


def build_net(batch: int) -> Net:
    """conv2 carries nearly all the arithmetic: the layer where micro-batching can pay."""
    return Net(
        [
            Convolution("conv1", 32, kernel=5, padding="same"),
            ReLU("relu1"),
            Convolution("conv2", 32, kernel=5, padding="same"),
            ReLU("relu2"),
            Pooling("pool1"),
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
    micro_batched: list[str]  # "conv2 forward: 128+128" for every kernel the plan splits
    kernels: int  # convolution kernels in the net
    planned_ms: float  # the plan's predicted time of one iteration's convolutions


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
    planned_ms = sum(schedule.time_ms for _, schedule in schedules)
    return Result(losses, accuracy, split, len(schedules), planned_ms)


def evaluate(net: Net, seed: int) -> float:
    """Fraction of about TEST_IMAGES held-out images classified right, a batch at a time."""
    batch = net.shapes[0][0]
    images, labels = held_out(batch * -(-TEST_IMAGES // batch), seed=seed)
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


def timing_source(device_name: str) -> str:
    """Where a plan's predicted times come from, so that no one takes the simulator's for a
    GPU's."""
    if device_name.startswith("SIMULATED"):
        return "the simulated device's timing model: a test double, not a GPU's speed"
    return f"measured on {device_name}"


def report(result: Result, device_name: str, undivided: Result | None = None) -> None:
    """The accuracy, the plan's predicted convolution time (beside the undivided plan's when
    given) and, last, how many kernels the plan splits and how."""
    print(f"final accuracy {result.accuracy:.3f}")
    against = "" if undivided is None else f" (undivided: {undivided.planned_ms:.3f} ms)"
    print(
        f"planned convolution time per iteration: {result.planned_ms:.3f} ms{against}, "
        f"from {timing_source(device_name)}"
    )
    for line in result.micro_batched:
        print(f"  {line}")
    print(f"micro-batched kernels: {len(result.micro_batched)} of {result.kernels}")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _size(text: str) -> int:
    try:
        return parse_size(text, "--workspace-limit")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--iterations", type=_positive, default=None,
        help=f"default {ITERATIONS}, or {COMPARE_ITERATIONS} with --compare (the iterations "
        "it compares)",
    )  # fmt: skip
    parser.add_argument(
        "--batch", type=_positive, default=BATCH,
        help=f"default {BATCH}; conv2's split needs it: at half of it nothing splits",
    )  # fmt: skip
    parser.add_argument("--mode", choices=MODES, default="wr", help="default wr")
    parser.add_argument(
        "--workspace-limit", type=_size, default=WORKSPACE_LIMIT,
        help="bytes per kernel (wr, undivided) or for the net (wd), e.g. 64MiB; default 64MiB, "
        "where on the simulated device micro-batching conv2 pays (see the description above)",
    )  # fmt: skip
    parser.add_argument("--lr", type=float, default=0.01, help="default 0.01")
    parser.add_argument("--momentum", type=float, default=0.9, help="default 0.9")
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument("--log-every", type=int, default=10, help="default 10; 0: no loss lines")
    parser.add_argument("--compare", action="store_true", help="undivided vs wr from one seed")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    default_iterations = COMPARE_ITERATIONS if args.compare else ITERATIONS
    try:
        cuda.device_count()
    except NoDeviceError as exc:
        print(
            "no GPU: tiny_caffe trains on the device, nothing to run; UCUDNN_DEVICE=sim runs it "
            f"on the simulated device ({exc})"
        )
        return 0
    # "SIMULATED ..." on the simulated device (UCUDNN_DEVICE=sim): nothing then runs on a GPU.
    device_name = str(cuda.device_properties(cuda.get_device())["name"])
    print(f"device: {device_name}")
    options = dict(
        iterations=args.iterations or default_iterations, batch=args.batch,
        workspace_limit=args.workspace_limit, seed=args.seed, lr=args.lr,
        momentum=args.momentum, log_every=args.log_every,
    )  # fmt: skip
    if not args.compare:
        report(train(args.mode, **options), device_name)
        return 0
    undivided, micro = (train(mode, **options) for mode in ("undivided", "wr"))
    difference = loss_difference(undivided.losses, micro.losses)
    ok = difference <= COMPARE_TOLERANCE
    verdict = "ok" if ok else "FAILED"
    print(
        f"max relative loss difference over the first {COMPARE_ITERATIONS} iterations: "
        f"{difference:.2e} (tolerance {COMPARE_TOLERANCE:.0e}) {verdict}"
    )
    report(micro, device_name, undivided)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
