"""benchmarks/torch_step.py --largest-batch: the largest batch whose full training step fits
in --memory, found by real steps from a first guess (ucudnn's planner's, for ResNet-50).

`find_largest` knows nothing of torch, so that its bracketing can be tested with a stand-in
for the step; torch and ucudnn are imported only when a batch is tried or guessed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch_step_models as models
import torch_step_report as report
import torch_step_training as training

if TYPE_CHECKING:
    import argparse


@dataclasses.dataclass(frozen=True)
class Trial:
    """One batch tried: whether a full step trained within the memory, and how fast."""

    batch: int
    fits: bool
    reason: str = ""  # why not, when it does not fit
    seconds: float = 0.0  # the whole trial, first use included
    first_use_s: float | None = None
    images_per_s: float | None = None
    peak_reserved_bytes: int | None = None
    workspace_bytes: int | None = None


@dataclasses.dataclass(frozen=True)
class Search:
    trials: tuple[Trial, ...]
    stopped: str  # "bracketed", "time", "max batch", "nothing fits" or "interrupted"

    @property
    def largest(self) -> Trial | None:
        """The largest batch that trained."""
        return max((t for t in self.trials if t.fits), key=lambda t: t.batch, default=None)

    @property
    def failed_above(self) -> int | None:
        """The smallest batch above the largest that did not train."""
        floor = self.largest.batch if self.largest else 0
        return min((t.batch for t in self.trials if not t.fits and t.batch > floor), default=None)


class _OutOfTime(Exception):
    pass


def find_largest(
    try_batch: Callable[[int], Trial],
    start: int,
    first_step: int,
    granularity: int,
    max_batch: int,
    deadline: float | None = None,
) -> Search:
    """The largest batch for which `try_batch` fits, bracketed within `granularity`: from
    `start`, steps of `first_step` that double each time (up while it fits, down while it
    does not: `first_step == start` is a doubling or halving search), then bisection between
    the largest batch that fit and the smallest that did not. No batch above `max_batch` is
    tried, and no trial starts after `deadline` (time.monotonic()): the search then keeps
    what it found."""
    trials: list[Trial] = []

    def fits(batch: int) -> bool:
        if deadline is not None and time.monotonic() >= deadline:
            raise _OutOfTime
        trials.append(try_batch(batch))
        return trials[-1].fits

    lo, hi, step = 0, None, max(1, first_step)
    stopped = "bracketed"
    try:
        start = max(1, min(start, max_batch))
        if fits(start):
            lo = start
            while hi is None:
                batch = min(lo + step, max_batch)
                if batch == lo:
                    return Search(tuple(trials), "max batch")
                if fits(batch):
                    lo, step = batch, step * 2
                else:
                    hi = batch
        else:
            hi = start
            while not lo:
                if hi == 1:
                    return Search(tuple(trials), "nothing fits")
                batch = hi - step if hi - step >= 1 else hi // 2
                if fits(batch):
                    lo = batch
                else:
                    hi, step = batch, step * 2
        while hi - lo > granularity:
            middle = (lo + hi) // 2
            rounded = middle - middle % granularity
            batch = rounded if rounded > lo else middle
            if fits(batch):
                lo = batch
            else:
                hi = batch
    except _OutOfTime:
        stopped = "time"
    except KeyboardInterrupt:  # SIGINT at a session's budget: keep the trials made
        stopped = "interrupted"
    return Search(tuple(trials), stopped)


# -- one trial batch, by real steps ------------------------------------------------------------


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's OOM, ucudnn's (CudaOutOfMemoryError and cuDNN's ALLOC_FAILED are
    MemoryErrors), or a library's error that says so."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError | MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "alloc_failed" in text)


def try_batch(setup: training.Setup, case: training.Case, batch: int) -> Trial:
    """Whether `batch` trains within --memory (`steps_at`), out of memory being a "no"."""
    import torch

    device = setup.device
    started = time.perf_counter()
    training.progress(f"{case.label}: trying batch {batch}")
    torch.cuda.reset_peak_memory_stats(device)
    try:
        trial = steps_at(setup, case, batch)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        trial = Trial(batch, False, f"out of memory ({training.failure_text(exc)})")
    training.collect_memory(device)
    trial = dataclasses.replace(trial, seconds=time.perf_counter() - started)
    training.progress(f"batch {batch}: {'trains' if trial.fits else 'does not: ' + trial.reason}")
    return trial


def steps_at(setup: training.Setup, case: training.Case, batch: int) -> Trial:
    """One full step at `batch` (its first use), then warm-up and timed steps: it fits when
    torch's peak reserved memory plus ucudnn's workspace, which lives outside torch's
    allocator, is within --memory."""
    import torch

    args, device = setup.args, setup.device
    data = models.synthetic_batches(args, batch, case.fmt, device, 1)
    started = training.first_use(setup, case, data[0])
    with started as (trainer, _, first_use_s):
        trainer.steps(data, args.warmup)
        seconds = training.timed(device, lambda: trainer.steps(data, args.steps))
        reserved = torch.cuda.max_memory_reserved(device)
        workspace = training.workspace_bytes(trainer.model, case.config)
    fits = reserved + (workspace or 0) <= args.memory
    reason = "" if fits else (
        f"torch's peak {report.mib(reserved)} MiB + ucudnn's workspace "
        f"{report.mib(workspace or 0)} MiB > {report.mib(args.memory)} MiB"
    )  # fmt: skip
    return Trial(
        batch, fits, reason, first_use_s=first_use_s, images_per_s=batch * args.steps / seconds,
        peak_reserved_bytes=reserved, workspace_bytes=workspace,
    )  # fmt: skip


# -- the search of one configuration -----------------------------------------------------------


def planner_guess(args: argparse.Namespace, case: training.Case) -> dict[str, Any]:
    """ucudnn.planner.tune's largest batch for ResNet-50 within --memory (and its best), from
    the measurements that ship with ucudnn where they cover the network, else from the cost
    model: the first guess of ucudnn's search. Timings are never extrapolated, so the table
    batch grows until the largest batch that fits is below it."""
    from ucudnn.planner.measured import shipped_tables
    from ucudnn.planner.networks import load_network
    from ucudnn.planner.synthetic import model_tables
    from ucudnn.planner.tune import tune

    layout = "NHWC" if case.fmt == "channels_last" else "NCHW"
    table_batch = 512
    while True:
        graph = load_network(
            "resnet50", table_batch, case.dtype, layout, image_size=args.image_size
        )
        shipped = shipped_tables("resnet50", graph)
        if shipped is not None:
            tables, source = shipped.tables, shipped.label
        else:
            problems = ((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
            tables = model_tables(problems)
            source = "MODEL timings (built-in cost model, NOT measurements)"
        grid = table_batch // 32
        batches = sorted({*range(grid, table_batch + 1, grid), *(1 << i for i in range(10))})
        batches = [b for b in batches if b <= table_batch]
        result = tune(graph, tables, args.memory, batches=batches, timings_source=source)
        largest = max(p.batch for p in result.points if p.fits)
        if largest < table_batch or table_batch >= args.max_batch:
            break
        table_batch *= 2
    return {
        "largest_batch": largest,
        "best_batch": result.best.batch,
        "best_samples_per_s": result.best.samples_per_s,
        "timings_source": source,
        "table_batch": table_batch,
    }


def search_configuration(
    setup: training.Setup, case: training.Case, deadline: float | None
) -> dict[str, Any]:
    """The largest-batch search of one configuration, as a result row; a failure is recorded
    in it, not raised."""
    args = setup.args
    row = case.new_row(memory_bytes=args.memory)
    start, first_step = args.batch, args.batch
    if case.config.limit is not None and args.model == "resnet50":
        try:
            guess = planner_guess(args, case)
        except Exception as exc:  # the search then starts as PyTorch's does
            row["guess_error"] = training.failure_text(exc)
        else:
            row["guess"] = guess
            start = max(args.granularity, guess["largest_batch"] // args.granularity
                        * args.granularity)  # fmt: skip
            first_step = max(args.granularity, start // 8)
    row["start"] = start
    started = time.perf_counter()
    try:
        with training.precision(case.dtype), training.recorded_warnings(row):
            search = find_largest(
                lambda batch: try_batch(setup, case, batch),
                start, first_step, args.granularity, args.max_batch, deadline,
            )  # fmt: skip
    except Exception as exc:
        training.record_failure(row, exc)
        return row
    best = search.largest
    row.update(
        search_s=time.perf_counter() - started,
        stopped=search.stopped,
        largest_batch=best.batch if best else None,
        failed_above=search.failed_above,
        images_per_s=best.images_per_s if best else None,
        first_use_s=best.first_use_s if best else None,
        peak_reserved_bytes=best.peak_reserved_bytes if best else None,
        workspace_bytes=best.workspace_bytes if best else None,
        trials=[dataclasses.asdict(t) for t in search.trials],
    )
    return row
