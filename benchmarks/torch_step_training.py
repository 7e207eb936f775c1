"""One configuration of benchmarks/torch_step.py trained and timed: PyTorch's own convolutions,
or the model converted with ucudnn.torch at a workspace limit, and its result row.

torch and ucudnn.torch are imported only when a configuration runs.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import math
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch_step_models as models

if TYPE_CHECKING:
    import argparse

    import torch
    from torch import nn

NO_LIMIT = 1 << 30  # 1GiB: the limit that stands for "no limit" in the report
# Relative loss difference within which ucudnn's training agrees with PyTorch's.
TOLERANCE = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-5}
DATA_BATCHES = 2  # distinct synthetic batches, used in turn
LEARNING_RATE = 0.01
MOMENTUM = 0.9


@dataclasses.dataclass(frozen=True)
class Config:
    """PyTorch (limit None), or ucudnn at a workspace limit: per kernel in WR mode, for the
    whole network in WD mode."""

    limit: int | None
    mode: str = "wr"
    again: bool = False  # PyTorch's second run: its own run-to-run difference

    @property
    def name(self) -> str:
        if self.limit is None:
            return "PyTorch (again)" if self.again else "PyTorch"
        from ucudnn.planner.units import format_size

        note = " (no limit)" if self.limit >= NO_LIMIT and self.mode == "wr" else ""
        return f"ucudnn {self.mode.upper()} {format_size(self.limit)}{note}"


@dataclasses.dataclass(frozen=True)
class Case:
    """What one configuration runs: the config in a dtype (--dtypes) and a memory format
    (--formats)."""

    config: Config
    dtype: str
    fmt: str

    @property
    def label(self) -> str:
        """How progress lines name a configuration."""
        return f"{self.config.name}, {self.dtype}, {self.fmt}"

    def new_row(self, **more: Any) -> dict[str, Any]:
        """A result row as it starts: which configuration, then `more` (the mode's own
        fields)."""
        return {"config": self.config.name, "limit_bytes": self.config.limit,
                "dtype": self.dtype, "format": self.fmt, **more}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Setup:
    """What every configuration of a run shares: the arguments, the model each one starts
    from a copy of (on the CPU), and the device."""

    args: argparse.Namespace
    base: nn.Module
    device: torch.device


# -- training steps ----------------------------------------------------------------------------


@contextlib.contextmanager
def precision(dtype: str) -> Iterator[None]:
    """float32 runs without TF32 (cuDNN's and cuBLAS's), so that its loss may be held to
    1e-5; the settings are restored after."""
    import torch

    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    if dtype == "float32":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


class Trainer:
    """One model, optimizer and AMP set-up: `step` is one full training step."""

    def __init__(self, model: nn.Module, dtype: str, device: torch.device) -> None:
        import torch

        self.model = model
        self.device = device
        self.autocast = None if dtype == "float32" else getattr(torch, dtype)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        self.scaler = torch.amp.GradScaler(device.type) if dtype == "float16" else None

    def forward_context(self) -> contextlib.AbstractContextManager[Any]:
        import torch

        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    def step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Forward, loss, backward, optimizer step; the loss, not waited for."""
        import torch.nn.functional as F

        images, labels = batch
        self.optimizer.zero_grad(set_to_none=True)
        with self.forward_context():
            loss = F.cross_entropy(self.model(images), labels)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        return loss.detach()

    def steps(
        self, batches: list[tuple[torch.Tensor, torch.Tensor]], count: int, first: int = 0
    ) -> list[torch.Tensor]:
        """Steps `first` to `first + count` of a run through `batches` in turn; their losses."""
        return [self.step(batches[i % len(batches)]) for i in range(first, first + count)]


def synchronize(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, work: Callable[[], object]) -> float:
    """Seconds `work` takes, the device waited for before and after."""
    synchronize(device)
    start = time.perf_counter()
    work()
    synchronize(device)
    return time.perf_counter() - start


@contextlib.contextmanager
def converted(setup: Setup, case: Case) -> Iterator[nn.Module]:
    """A copy of the base model on the device in the case's format, converted to ucudnn at
    its config's limit; reverted when done, which closes ucudnn's Handles and so gives back
    the workspace they hold outside torch's allocator."""
    config = case.config
    memory_format = models.memory_format(setup.args.model, case.fmt)
    model = copy.deepcopy(setup.base).to(setup.device, memory_format=memory_format)
    model.train()
    if config.limit is None:
        yield model
        return
    import ucudnn.torch as ut  # only once a ucudnn configuration runs

    if config.mode == "wd":
        model = ut.convert(model, total_workspace=config.limit)
    else:
        model = ut.convert(model, workspace_limit=config.limit)
    try:
        yield model
    finally:
        ut.revert(model)


def plan_network(trainer: Trainer, config: Config, images: torch.Tensor) -> None:
    """In WD mode, ucudnn plans the network as a whole from one forward (under the step's
    autocast, as training runs it) before the first step; WR plans each kernel on first use."""
    if config.limit is not None and config.mode == "wd":
        import ucudnn.torch as ut

        with trainer.forward_context():
            ut.plan(trainer.model, images)


@contextlib.contextmanager
def first_use(
    setup: Setup, case: Case, batch: tuple[torch.Tensor, torch.Tensor]
) -> Iterator[tuple[Trainer, torch.Tensor, float]]:
    """The configuration's trainer after its first step on `batch`, that step's loss, and the
    seconds of its first use (the conversion, WD's planning and the step), timed alone."""
    device = setup.device
    synchronize(device)
    start = time.perf_counter()
    with converted(setup, case) as model:
        trainer = Trainer(model, case.dtype, device)
        plan_network(trainer, case.config, batch[0])
        loss = trainer.step(batch)
        synchronize(device)
        yield trainer, loss, time.perf_counter() - start


def collect_memory(device: torch.device) -> None:
    """Torch's cached blocks back to the device once a configuration's tensors are gone, so
    that each configuration (and each trial batch) starts from the same memory: called where
    the frames that held them have returned."""
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def workspace_bytes(model: nn.Module, config: Config) -> int | None:
    """The workspace ucudnn holds outside torch's allocator; None for PyTorch."""
    if config.limit is None:
        return None
    import ucudnn.torch as ut

    return int(ut.workspace_bytes(model))


# -- the steps mode ----------------------------------------------------------------------------


def measure(setup: Setup, case: Case) -> dict[str, Any]:
    """One configuration: the first use timed alone, the rest of the loss steps, warm-up,
    then the timed steps, whose images/s leave out everything before them."""
    import torch

    args, device = setup.args, setup.device
    batches = models.synthetic_batches(args, args.batch, case.fmt, device, DATA_BATCHES)
    started = first_use(setup, case, batches[0])
    with started as (trainer, first_loss, first_use_s):
        losses = [first_loss, *trainer.steps(batches, args.loss_steps - 1, first=1)]
        trainer.steps(batches, args.warmup)
        if device.type == "cuda":
            synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        seconds = timed(device, lambda: trainer.steps(batches, args.steps))
        return {
            "images_per_s": args.batch * args.steps / seconds,
            "step_ms": seconds / args.steps * 1e3,
            "first_use_s": first_use_s,
            "losses": [float(loss) for loss in losses],
            "loss": float(losses[-1]),
            "peak_allocated_bytes": (
                torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
            ),
            "workspace_bytes": workspace_bytes(trainer.model, case.config),
        }


def run_configuration(setup: Setup, case: Case) -> dict[str, Any]:
    """A result row for one configuration; a failure is recorded in it, not raised, so that
    the others still run."""
    batch = setup.args.batch
    row = case.new_row(batch=batch)
    progress(f"{case.label}, batch {batch}")
    try:
        with precision(case.dtype), recorded_warnings(row):
            row.update(measure(setup, case))
    except Exception as exc:
        record_failure(row, exc)
    collect_memory(setup.device)
    return row


def compare_with_pytorch(row: dict[str, Any], pytorch: dict[str, Any]) -> None:
    """The row's images/s as a ratio of PyTorch's, and whether its loss agrees (the steps
    mode measures a loss; a failed row has neither)."""
    if row.get("images_per_s") and pytorch.get("images_per_s"):
        row["vs_pytorch"] = row["images_per_s"] / pytorch["images_per_s"]
    if "loss" not in row or "loss" not in pytorch:
        return
    reference = pytorch["loss"]
    difference = abs(row["loss"] - reference) / max(abs(reference), 1e-12)
    row["loss_relative_difference"] = difference
    row["loss_tolerance"] = TOLERANCE[row["dtype"]]
    row["loss_agrees"] = bool(math.isfinite(difference) and difference <= TOLERANCE[row["dtype"]])


# -- result rows and progress ------------------------------------------------------------------


@contextlib.contextmanager
def recorded_warnings(row: dict[str, Any]) -> Iterator[None]:
    """Every warning while inside, once each, into row["warnings"]: a fallback (ucudnn's
    TorchFallbackWarning or WorkspaceFallbackWarning) changes what was measured, so the
    report shows them beside the numbers."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            found = [f"{w.category.__name__}: {w.message}" for w in caught]
            if found:
                row["warnings"] = list(dict.fromkeys(found))
                for text in row["warnings"]:
                    progress(f"warning: {text}")


def record_failure(row: dict[str, Any], exc: Exception) -> None:
    """The failure in the row, in one line, and its traceback on stderr: called from the
    `except` that caught it, so that the other configurations still run."""
    row["error"] = failure_text(exc)
    progress(f"{row['config']}, {row['dtype']}, {row['format']}: FAILED: {row['error']}")
    traceback.print_exc(file=sys.stderr)


def failure_text(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else ''}".rstrip(": ")


def progress(text: str) -> None:
    print(f"[torch_step] {text}", file=sys.stderr, flush=True)
