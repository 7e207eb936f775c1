"""Compare ucudnn with cuDNN's own choice, PyTorch and the cuDNN frontend on a GPU.

For every network, dtype, layout and workspace limit, and every kernel of every layer, it
times with CUDA events (warm-up, then the median of repeats):
  baseline    cuDNN's fastest single algorithm at the full batch within the limit
  wr          ucudnn WR at the limit                  (predicted and measured)
  wd_kernels  ucudnn WD, total = limit x kernels      (predicted and measured)
  wd_limit    ucudnn WD, total = limit                (predicted and measured)
  ceiling     the fastest single algorithm with no limit (up to --workspace-cap)
  pytorch     conv2d/conv3d forward, backward through autograd, cudnn.benchmark = True
  frontend    the cuDNN frontend graph API with plans over the limit deselected
With --engines on (the default), ucudnn's tables (so baseline, wr, wd_* and ceiling) hold
cuDNN's graph-API engine configurations beside the legacy algorithms; --search says how they
are measured on first use (fast, the default, or exhaustive).
and how long benchmarking a network takes on first use (empty cache) and from the cache.
Peers that are missing or do not support a case are recorded as skipped, with the reason.

It writes <run-id>.json (every raw number, each ucudnn plan's schedule and the environment),
<run-id>.md (the summary, and every kernel off its prediction by more than 20 %, with the
cause where its schedule shows one), <run-id>-tables.zip (the measured timing tables, as
`ucudnn plan --timings` CSVs) and PNG plots into --out (default: $OUT when set, else
benchmarks/results). The JSON and Markdown are rewritten after every configuration, so a run
cut short keeps what it measured.

    python benchmarks/gpu_compare.py --networks resnet18 --limits 64MiB --dtypes float32 \\
        --layouts NCHW --max-minutes 5
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from pathlib import Path

import argument_types
import compare_report

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.problem import KERNELS, LAYOUTS
from ucudnn.core.splits import BATCH
from ucudnn.faces.info import unusable_reason
from ucudnn.planner.config import parse_policy, parse_slab_policy
from ucudnn.planner.files import atomic_write
from ucudnn.planner.networks import load_network
from ucudnn.runtime.steps import schedule_steps

REPO = Path(__file__).resolve().parents[1]
# name -> (dtype, math type): TF32 is a math type of float32 problems, not a dtype. Half types
# run with tensor_op, ucudnn's own default for them and what PyTorch allows (the first H100 run
# measured them with "default").
DTYPES = {
    "float32": ("float32", "fma"),
    "tf32": ("float32", "default"),
    "float16": ("float16", "tensor_op"),
    "bfloat16": ("bfloat16", "tensor_op"),
}
LAYOUT_NAMES = ("NCHW", "NHWC")  # channels first / last; 3D networks use NCDHW / NDHWC


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Needs a GPU; exits with status 1 without one."
    )
    parser.add_argument(
        "--networks",
        type=argument_types.comma_list(),
        default=["resnet18"],
        help="built-in network names or layer-list CSV paths, comma-separated (default resnet18)",
    )
    parser.add_argument(
        "--limits",
        type=argument_types.comma_list(parse=argument_types.size),
        default=[8 << 20, 64 << 20, 512 << 20],
        help="workspace limits per kernel, e.g. 8MiB,64MiB (default 8MiB,64MiB,512MiB)",
    )
    parser.add_argument("--dtypes", type=argument_types.comma_list(DTYPES), default=list(DTYPES))
    parser.add_argument(
        "--layouts", type=argument_types.comma_list(LAYOUT_NAMES), default=list(LAYOUT_NAMES)
    )
    parser.add_argument("--kernels", type=argument_types.comma_list(KERNELS), default=list(KERNELS))
    parser.add_argument("--batch", type=int, help="mini-batch for every network (default: its own)")
    parser.add_argument(
        "--policy", default="powerOfTwo", help="micro-batch policy (default powerOfTwo)"
    )
    parser.add_argument(
        "--slab-policy",
        default="undivided",
        help="slab extents also measured and planned at each micro-batch size, each kernel cut "
        "along its outermost spatial axis: undivided (none), powerOfTwo or a list "
        "(default undivided)",
    )
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (>= 1)")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls; the median counts")
    parser.add_argument(
        "--workspace-cap",
        type=argument_types.size,
        default=argument_types.size("4GiB"),
        help="largest workspace benchmarked, so the 'no limit' ceiling (default 4GiB)",
    )
    parser.add_argument(
        "--frontend-plans",
        type=int,
        default=1,
        help="frontend plans to time per kernel, in heuristic order; the fastest counts "
        "(default 1: the frontend's own pick)",
    )
    parser.add_argument(
        "--engines",
        choices=("on", "off"),
        default="on",
        help="also measure and plan cuDNN's graph-API engine configurations, as ucudnn does by "
        "default where cuDNN can (default on)",
    )
    parser.add_argument(
        "--search",
        choices=("fast", "exhaustive"),
        default="fast",
        help="how first use measures: ucudnn's default screened search, or every candidate in "
        "full (default fast)",
    )
    parser.add_argument(
        "--no-peers", action="store_true", help="skip PyTorch and the cuDNN frontend"
    )
    parser.add_argument(
        "--max-minutes", type=float, help="stop cleanly after this long, keeping the results"
    )
    parser.add_argument(
        "--out", type=Path, help="output folder (default $OUT or benchmarks/results)"
    )
    parser.add_argument("--commit", help="git commit to record (default $UCUDNN_COMMIT or git)")
    args = parser.parse_args(argv)
    if args.warmup < 1 or args.repeats < 1 or args.frontend_plans < 1:
        parser.error("--warmup, --repeats and --frontend-plans must be >= 1")
    if args.batch is not None and args.batch < 1:
        parser.error("--batch must be >= 1")
    try:
        args.policy = parse_policy(args.policy, "--policy")
        args.slab_policy = parse_slab_policy(args.slab_policy, "--slab-policy")
    except ValueError as exc:
        parser.error(str(exc))
    return args


class OutOfTime(Exception):
    """The --max-minutes budget is spent."""


class Comparison:
    """One run: measures configuration after configuration into `self.run`."""

    def __init__(self, args: argparse.Namespace, run: dict) -> None:
        from ucudnn.runtime.benchmark import BenchmarkSettings

        self.args = args
        self.run = run
        self.tables: dict[str, str] = {}  # file name in the zip -> timing-table CSV
        self.settings = BenchmarkSettings(
            warmup=args.warmup, repeats=args.repeats, workspace_cap=args.workspace_cap,
            progress=False, engines=args.engines == "on", search=args.search,
        )  # fmt: skip
        self.deadline = (
            None if args.max_minutes is None else time.monotonic() + 60 * args.max_minutes
        )

    def check_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise OutOfTime(f"stopped after the --max-minutes budget of {self.args.max_minutes}")

    def execute(self, save) -> None:
        """Every configuration in turn; `save()` after each one."""
        a = self.args
        for network, dtype, layout in itertools.product(a.networks, a.dtypes, a.layouts):
            self.check_time()
            self.attempt(f"{network} {dtype} {layout}", self.compare, network, dtype, layout)
            save()
        self.run["complete"] = True

    def attempt(self, step: str, func, *args) -> None:
        """Run one step; a failure is recorded and the run goes on."""
        try:
            func(*args)
        except (OutOfTime, KeyboardInterrupt):
            raise
        except Exception as exc:
            tail = traceback.format_exc().strip().splitlines()[-6:]
            self.run["errors"].append({"step": step, "error": f"{exc!r}", "traceback": tail})

    # -- one network, dtype and layout ------------------------------------------------------
    def compare(self, network: str, dtype_name: str, layout_name: str) -> None:
        from ucudnn.runtime.work import Work, work_from_graph

        dtype, math_type = DTYPES[dtype_name]
        graph = _graph(network, self.args.batch, dtype, layout_name)
        work = [
            Work(item.layer, dataclasses.replace(item.problem, math_type=math_type), item.kernel)
            for item in work_from_graph(graph)
            if item.kernel in self.args.kernels
        ]
        key = (network, dtype_name, layout_name)
        for name in graph.layers():
            self.run["layers"].append(
                {"network": network, "dtype": dtype_name, "layout": layout_name, "layer": name,
                 "problem": graph.problem(name).describe()}
            )  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="ucudnn-compare-") as tmp:
            db = Path(tmp) / "benchmarks.sqlite"
            self.attempt(f"{key} benchmark", self.benchmark, key, work, db)
            self.check_time()
            self.attempt(
                f"{key} ceiling", self.ucudnn, key, None, "ceiling", None, work, db,
                {"workspace_limit": self.args.workspace_cap, "policy": "undivided",
                 "slab_policy": "undivided"},
            )  # fmt: skip
            if not self.args.no_peers:
                self.attempt(f"{key} pytorch", self.pytorch, key, work)
            for limit in self.args.limits:
                self.check_time()
                self.compare_limit(key, work, db, limit)

    def compare_limit(self, key, work, db, limit: int) -> None:
        step = f"{key} {compare_report.format_bytes(limit)}"
        self.attempt(
            f"{step} wr", self.ucudnn, key, limit, "wr", "baseline", work, db,
            {"workspace_limit": limit},
        )  # fmt: skip
        for method, total in (("wd_kernels", limit * len(work)), ("wd_limit", limit)):
            self.check_time()
            self.attempt(
                f"{step} {method}", self.ucudnn, key, limit, method, f"{method}_undivided",
                work, db, {"total_workspace": total},
            )  # fmt: skip
        if not self.args.no_peers:
            self.check_time()
            self.attempt(f"{step} frontend", self.frontend, key, work, limit)

    def benchmark(self, key, work, db: Path) -> None:
        """Fill an empty cache, then fill it again from itself: first use vs cached."""
        from ucudnn._native import _cudnn
        from ucudnn.core.device import device_facts
        from ucudnn.planner.cache import BenchmarkCache
        from ucudnn.runtime.benchmark import Benchmarker

        def once():
            with BenchmarkCache(db) as cache:
                benchmarker = Benchmarker(_cudnn.Handle(), device_facts(), cache, self.settings)
                start = time.perf_counter()
                tables = benchmarker.tables(
                    work, self.args.policy, slab_policy=self.args.slab_policy
                )
                counts = {**benchmarker.counts, **dataclasses.asdict(benchmarker.search_counts)}
                return time.perf_counter() - start, counts, tables

        first_s, first_counts, tables = once()
        cached_s, cached_counts, _ = once()
        network, dtype, layout = key
        self.run["benchmark_times"].append(
            {"network": network, "dtype": dtype, "layout": layout, "kernels": len(work),
             "first_use_s": first_s, "cached_s": cached_s, "first_use_counts": first_counts,
             "cached_counts": cached_counts}
        )  # fmt: skip
        self.tables[f"{_slug(network)}-{dtype}-{layout}.csv"] = tables.to_csv()

    def ucudnn(self, key, limit, method, baseline_method, work, db, handle_args: dict) -> None:
        """Plan `work` with a Handle, time each kernel as run through it, and its baseline."""
        from ucudnn.runtime.handle import Handle
        from ucudnn.runtime.measure import measure_plan

        handle_args = {
            "policy": self.args.policy,
            "slab_policy": self.args.slab_policy,
            **handle_args,
        }
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Handle(database=db, benchmark=self.settings, **handle_args) as handle:
                timings = measure_plan(handle, work, self.args.warmup, self.args.repeats)
                plan = handle.plan
        self.run["plans"].append(
            {**self._where(key, limit), "method": method, "mode": plan.mode,
             "limit_bytes": plan.limit_bytes, "workspace_bytes": plan.workspace_bytes,
             "predicted_ms": plan.time_ms, "solver": plan.solver,
             "solver_status": plan.solver_status, "warnings": [str(w.message) for w in caught]}
        )  # fmt: skip
        problems = {(item.layer, item.kernel): item.problem for item in work}
        for t in timings:
            kernel_plan = plan[(t.layer, t.kernel)]
            self.record(key, limit, t.layer, t.kernel, method, t.measured_ms, t.predicted_ms,
                        kernel_plan.workspace_bytes,
                        schedule_record(problems[(t.layer, t.kernel)], kernel_plan))  # fmt: skip
            if baseline_method is None:
                continue
            if t.baseline_measured_ms is None or kernel_plan.baseline is None:
                self.skip(
                    key, limit, t.layer, t.kernel, baseline_method, "no single algorithm fits"
                )
            else:
                self.record(
                    key, limit, t.layer, t.kernel, baseline_method, t.baseline_measured_ms,
                    t.baseline_predicted_ms, kernel_plan.baseline.workspace_bytes,
                )  # fmt: skip

    def pytorch(self, key, work) -> None:
        import compare_peers

        for item in work:
            self.check_time()
            ms, reason = compare_peers.time_peer(
                compare_peers.pytorch_ms, item.problem, item.kernel, self.args.warmup,
                self.args.repeats,
            )  # fmt: skip
            self._peer_result(key, None, item, "pytorch", ms, reason)
        compare_peers.release_memory()

    def frontend(self, key, work, limit: int) -> None:
        import compare_peers

        for item in work:
            self.check_time()
            ms, reason = compare_peers.time_peer(
                compare_peers.frontend_ms, item.problem, item.kernel, limit,
                self.args.frontend_plans, self.args.warmup, self.args.repeats,
            )  # fmt: skip
            self._peer_result(key, limit, item, "frontend", ms, reason)
        compare_peers.release_memory()

    # -- records ----------------------------------------------------------------------------
    @staticmethod
    def _where(key, limit) -> dict:
        network, dtype, layout = key
        return {"network": network, "dtype": dtype, "layout": layout, "limit_bytes": limit}

    def _peer_result(self, key, limit, item, method, ms, reason) -> None:
        if ms is None:
            self.skip(key, limit, item.layer, item.kernel, method, reason)
        else:
            self.record(key, limit, item.layer, item.kernel, method, ms)

    def record(self, key, limit, layer, kernel, method, measured, predicted=None, workspace=None,
               schedule=None):  # fmt: skip
        self.run["measurements"].append(
            {**self._where(key, limit), "layer": layer, "kernel": kernel, "method": method,
             "measured_ms": measured, "predicted_ms": predicted, "workspace_bytes": workspace,
             "schedule": schedule}
        )  # fmt: skip

    def skip(self, key, limit, layer, kernel, method, reason) -> None:
        self.run["skipped"].append(
            {**self._where(key, limit), "layer": layer, "kernel": kernel, "method": method,
             "reason": reason}
        )  # fmt: skip


def schedule_record(problem, kernel_plan) -> dict:
    """A kernel plan's schedule as the Handle runs it, for the report to explain prediction
    errors by: the planner's texts of its micro-batches and algorithms, then each step in run
    order with its beta and the byte alignment of its slices, as run and as benchmarked."""
    schedule = kernel_plan.schedule
    steps = [
        {"micro_batch": step.micro_batch, "algo": step.algo, "engine": step.engine,
         **({"slab": step.slab.describe()} if step.slab else {}), "beta": step.beta,
         "first_sample": step.first_sample,
         "alignment_bytes": _alignment(problem, step.first_sample),
         "benchmark_alignment_bytes": _alignment(
             problem, BATCH.benchmark_first(problem, step.micro_batch))}
        for step in schedule_steps(problem, kernel_plan.kernel, schedule.parts)
    ]  # fmt: skip
    return {
        "micro_batches": schedule.micro_batches_text(),
        "algos": schedule.algos_text(),
        "steps": steps,
    }


def _alignment(problem, first_sample: int) -> int:
    """The alignment in bytes of x and y at `first_sample`, up to cuDNN's 256 bytes (the
    tensors themselves start 256-byte aligned; see docs/design/split-axes.md)."""
    offsets = [problem.sample_offset_bytes(tensor, first_sample) for tensor in ("x", "y")]
    return min([CUDNN_ALIGNMENT, *(offset & -offset for offset in offsets if offset)])


def _graph(network: str, batch: int | None, dtype: str, layout_name: str):
    """The network in the layout family asked for: NCHW/NHWC, or NCDHW/NDHWC if it is 3D."""
    rank = next(iter(load_network(network, batch).unique_problems())).rank
    layout = LAYOUTS[rank][LAYOUT_NAMES.index(layout_name)]
    return load_network(network, batch, dtype, layout)


def _slug(text: str) -> str:
    return Path(text).stem if text.endswith(".csv") else text


# -- environment and output -----------------------------------------------------------------
def _commit(given: str | None) -> str:
    if given or os.environ.get("UCUDNN_COMMIT"):
        return given or os.environ["UCUDNN_COMMIT"]
    try:
        found = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return found.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def driver_version() -> str | None:
    try:
        found = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        return found.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _environment(commit: str) -> dict:
    import compare_peers

    import ucudnn
    from ucudnn.core import device

    return compare_report.environment(
        device.info(),
        driver_version=driver_version(),
        torch_versions=compare_peers.torch_versions(),
        frontend_versions=compare_peers.frontend_versions(),
        ucudnn_version=ucudnn.__version__,
        commit=commit,
        python=platform.python_version(),
    )


def _settings(args: argparse.Namespace) -> dict:
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "commit")}
    for name in ("policy", "slab_policy"):
        value = getattr(args, name)
        settings[name] = value if isinstance(value, str) else list(value)
    return settings


class Output:
    """The results files of one run."""

    def __init__(self, folder: Path, run_id: str) -> None:
        self.folder = folder
        self.stem = folder / run_id

    def save(self, run: dict) -> None:
        """Rewrite the JSON and Markdown; each file is replaced whole (see `atomic_write`), so
        a run killed mid-write keeps the previous complete version."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.stem.with_suffix(".json")) as f:
            f.write(json.dumps(run, indent=1) + "\n")
        with atomic_write(self.stem.with_suffix(".md")) as f:
            f.write(compare_report.render_markdown(run))

    def finish(self, run: dict, tables: dict[str, str]) -> None:
        import compare_plots

        if tables:
            with (
                atomic_write(f"{self.stem}-tables.zip", "wb") as f,
                zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf,
            ):
                for name, text in tables.items():
                    zf.writestr(name, text)
        run["plots"], why = compare_plots.write_plots(run, self.folder, self.stem.name)
        if why:
            run["errors"].append({"step": "plots", "error": why})
        self.save(run)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reason = unusable_reason()
    if reason:
        print(f"gpu_compare: needs a GPU: {reason}", file=sys.stderr)
        return 1
    env = _environment(_commit(args.commit))
    started = datetime.datetime.now(datetime.UTC)
    run_id = compare_report.run_id(started, str(env["gpu"] or "gpu"))
    folder = args.out or Path(os.environ.get("OUT") or REPO / "benchmarks" / "results")
    run = {
        "format": compare_report.FORMAT, "version": compare_report.VERSION, "run_id": run_id,
        "started": started.isoformat(), "finished": None, "complete": False, "stopped": None,
        "environment": env, "settings": _settings(args), "benchmark_times": [],
        "layers": [], "plans": [], "measurements": [], "skipped": [], "errors": [],
    }  # fmt: skip
    output = Output(folder, run_id)
    comparison = Comparison(args, run)
    try:
        comparison.execute(lambda: output.save(run))
    except OutOfTime as exc:
        run["stopped"] = str(exc)
    except KeyboardInterrupt:
        run["stopped"] = "interrupted (SIGINT, e.g. the time limit of the command)"
    run["finished"] = datetime.datetime.now(datetime.UTC).isoformat()
    output.finish(run, comparison.tables)
    print(compare_report.render_markdown(run))
    print(f"results: {output.stem}.json, .md, -tables.zip, plots", file=sys.stderr)
    # A run cut short by its time budget is a success; a step that failed is not.
    return 3 if run["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
