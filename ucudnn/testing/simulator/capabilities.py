"""What the simulated cuDNN can run: per problem and algorithm, whether it runs, its workspace,
its time and its determinism, each answer with where it came from.

Three sources, most trusted first:

1. **measured**: timing tables from a GPU run (data/h100-cudnn-9.19.0.json.gz, built by
   benchmarks/build_simulator_tables.py). A problem of a measured shape, type and math type
   at a measured micro-batch gets exactly what was measured; an algorithm absent there did
   not run. Between measured micro-batches an algorithm runs if it ran at both neighbours,
   with time and workspace interpolated.
2. **observed** / **probed**: facts read off a GPU run's test log (below), and cells the
   capability probe (benchmarks/capability_probe.py) measured, committed as
   data/probe-*.json.
3. **model**: rules generalised from the tables, and a stated time and workspace model, for
   everything never measured. Each rule below says what it rests on.

Modes: "log" uses all three; "optimistic" leaves out the observed facts (what was never
measured behaves like NCHW); "fuzz:<seed>" keeps what was measured and randomises every other
cell, reproducibly per seed, to show the tests that assume what cuDNN does not promise.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import gzip
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from ucudnn.core.algorithms import LEGACY_ALGORITHMS
from ucudnn.testing.simulator.problem import NOT_SUPPORTED, SUCCESS, AlgoFacts, SimProblem

DATA = Path(__file__).parent / "data"
TABLES = "h100-cudnn-9.19.0.json.gz"
OBSERVED = "observed:h100-gpu-tests-2026-11-24"

# cuDNN's legacy algorithms, as the simulated library numbers them: cuDNN's own enums.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    kernel: names for kernel, names in LEGACY_ALGORITHMS.items()
}
# Measured on the H100: exactly these are non-deterministic.
_NON_DETERMINISTIC = {("backward_data", "algo_0"), ("backward_filter", "algo_0"),
                      ("backward_filter", "algo_3")}  # fmt: skip
# Measured: these ran on every layer at every micro-batch, and with no workspace.
_GEMM = {"forward": {"implicit_gemm", "implicit_precomp_gemm", "gemm"},
         "backward_data": {"algo_0", "algo_1"},
         "backward_filter": {"algo_0", "algo_1", "algo_3"}}  # fmt: skip
_WORKSPACE_FREE = {("forward", "implicit_gemm"), ("backward_data", "algo_0"),
                   ("backward_data", "algo_1"), ("backward_filter", "algo_0")}  # fmt: skip
# Statuses of broken contracts, until the probe measures them (assumed from cuDNN's docs).
_CONTRACT = {
    "workspace_too_small": 2000,  # CUDNN_STATUS_BAD_PARAM
    "misaligned_pointer": 2003,  # CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER
    "find_without_workspace": 4004,  # ..._INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
}
_MODES = "'log', 'optimistic' or 'fuzz:<seed>'"


def load(mode: str = "log", probe_dir: Path | None = None) -> Capabilities:
    """The capabilities in `mode`, from the packaged tables and any probe files."""
    if mode not in ("log", "optimistic"):
        seed = mode.removeprefix("fuzz:")
        if not (mode.startswith("fuzz:") and seed.isdigit()):
            raise ValueError(f"UCUDNN_SIM_CAPS must be {_MODES}, got {mode!r}")
    return Capabilities(mode, _tables(), _probes(probe_dir or DATA))


@functools.cache
def _tables() -> dict[str, Any]:
    with gzip.open(DATA / TABLES) as data:
        document: dict[str, Any] = json.load(data)
    return document


def _probes(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("probe-*.json"))]


# --- cells: the coarse classes of problems that rules and probes speak of --------------------


def _uniform(values: tuple[int, ...]) -> int | None:
    return values[0] if len(set(values)) == 1 else None


def cell(problem: SimProblem, algo: int) -> tuple[object, ...]:
    """The class of `problem` a rule, a probe row or a fuzzed answer applies to."""
    return (
        problem.kernel,
        ALGORITHMS[problem.kernel][algo],
        problem.dtype,
        problem.layout,
        problem.math_type,
        1 if max(problem.stride) == 1 else 2,
        1 if max(problem.dilation) == 1 else 2,
        1 if problem.groups == 1 else 2,
        _uniform(problem.filter_size),
    )


# --- the model --------------------------------------------------------------------------------


def _model_runs(problem: SimProblem, name: str) -> bool:
    """Whether an algorithm runs, by the rules the H100 tables show for NCHW float32/float16
    (stride, filter size), extended by assumption where nothing was measured."""
    kernel = problem.kernel
    if name in _GEMM[kernel]:
        return True  # measured: always, for every layer and micro-batch
    # Assumed: FFT and Winograd need 2-D, ungrouped, undilated float32/float16 data in NCHW.
    if (
        problem.rank != 2
        or problem.groups != 1
        or max(problem.dilation) != 1
        or problem.dtype not in ("float32", "float16")
        or problem.layout != "NCHW"
    ):
        return False
    stride, size = max(problem.stride), problem.filter_size
    small = size in ((3, 3), (5, 5))
    rules = {  # measured: which layers each algorithm ran on
        ("forward", "fft"): stride == 1,
        ("forward", "fft_tiling"): stride <= 2,
        ("forward", "winograd_nonfused"): small and stride == 1,
        ("backward_data", "fft"): stride == 1,
        ("backward_data", "fft_tiling"): stride == 1 or (stride == 2 and size in ((3, 3), (7, 7))),
        ("backward_data", "winograd_nonfused"): small and stride == 1,
        ("backward_filter", "fft"): stride == 1,
        ("backward_filter", "winograd_nonfused"): small and stride == 1,
    }
    return rules.get((kernel, name), False)  # direct, winograd, bwd-filter fft_tiling: never


def _observed_runs(problem: SimProblem, name: str) -> tuple[bool, bool] | None:
    """(runs, workspace-free) where the H100 test log says so, else None. The log showed only
    whether some algorithm ran, and whether one ran without workspace; which ones do, and
    with how much, is assumed."""
    kernel, dtype, layout = problem.kernel, problem.dtype, problem.layout
    gemm = name in _GEMM[kernel]
    if layout == "NDHWC" and dtype == "float64" and kernel == "forward":
        return False, False  # no forward algorithm at all
    no_free = (
        (layout in ("NHWC", "NDHWC") and dtype == "float64" and kernel != "forward")
        or (layout == "NDHWC" and kernel == "forward")
        or (layout == "NDHWC" and dtype == "float16" and kernel == "backward_filter")
    )
    if not (no_free and gemm):
        return None
    return True, False  # the GEMM variants run, each with workspace (assumed)


def _macs(problem: SimProblem) -> int:
    """Multiply-adds of the convolution: the same for all three kernels."""
    k, c_per_group = problem.w_dims[0], problem.w_dims[1]
    return (
        problem.batch
        * k
        * c_per_group
        * math.prod(problem.filter_size)
        * math.prod(problem.y_dims[2:])
    )


_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
# Modelled multiply-adds per millisecond on an H100, before each algorithm's efficiency:
# about half of peak, tensor cores for half types and TF32.
_RATE = {"float32": 1.5e10, "tf32": 1.0e11, "float16": 2.0e11, "bfloat16": 2.0e11,
         "float64": 8.0e9}  # fmt: skip
_EFFICIENCY = {"implicit_gemm": 0.4, "implicit_precomp_gemm": 0.6, "gemm": 0.5, "fft": 0.8,
               "fft_tiling": 0.9, "winograd_nonfused": 1.2, "algo_0": 0.5, "algo_1": 0.6,
               "algo_3": 0.7}  # fmt: skip
_LAUNCH_MS = {"gemm": 0.03, "fft": 0.05, "fft_tiling": 0.04, "winograd_nonfused": 0.04}
_BASE_LAUNCH_MS = 0.02  # the tables' micro-batch-1 rows take 0.02-0.06 ms


def _model_time(problem: SimProblem, name: str) -> float:
    tf32 = problem.dtype == "float32" and problem.math_type != "fma"
    rate = _RATE["tf32" if tf32 else problem.dtype] * _EFFICIENCY.get(name, 0.5)
    return _LAUNCH_MS.get(name, _BASE_LAUNCH_MS) + _macs(problem) / rate


def _model_workspace(problem: SimProblem, name: str) -> int:
    """Bytes, by the kind of buffer each family needs (fitted loosely to the tables: the
    explicit GEMM's im2col buffer matches them exactly)."""
    item = _ITEMSIZE[problem.dtype]
    b, c, k = problem.batch, problem.x_dims[1], problem.w_dims[0]
    filt, out = math.prod(problem.filter_size), math.prod(problem.y_dims[2:])
    padded = zip(problem.x_dims[2:], problem.padding, problem.padding_end, strict=True)
    planes = math.prod(s + p + q for s, p, q in padded)
    if name == "gemm":
        return item * b * c * filt * out
    if name in ("fft", "fft_tiling", "winograd_nonfused"):
        tiles = planes if name == "fft" else min(planes, 32 * 32) * 2
        return 8 * (b * c + c * k + b * k) * tiles
    return 4 * c * k * filt if name in ("implicit_precomp_gemm", "algo_1", "algo_3") else 64 * c


# --- the capabilities -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Measured:
    """One measured layer's rows, by kernel and micro-batch: {algo: (ms, bytes, det)}."""

    source: str
    sizes: dict[str, list[int]]
    rows: dict[str, dict[int, dict[int, tuple[float, int, bool]]]]


class Capabilities:
    """Answers `facts(problem)` from the measured tables, the log's facts, probes and model."""

    def __init__(
        self, mode: str, tables: dict[str, Any], probes: list[tuple[str, dict[str, Any]]]
    ) -> None:
        self.mode = mode
        self.cudnn_version: int = tables["cudnn_version"]
        self.device_name: str = tables["device"]
        tag = f"{tables['device'].split()[1].lower()}-cudnn-{tables['cudnn']}"
        self.name = f"{tag}+{mode}" + ("+probed" if probes else "")
        self.source = (
            f"{tables['device']}, driver {tables['driver']}, CUDA {tables['cuda']}, cuDNN "
            f"{tables['cudnn']}, ucudnn commit {tables['commit']}, measured {tables['date']}"
        )
        self._tag = tag
        self._measured = {_shape(layer): _measured(layer) for layer in tables["layers"]}
        self._probed: dict[tuple[object, ...], tuple[bool, bool, str]] = {}
        self._contract = {what: (status, "assumed") for what, status in _CONTRACT.items()}
        for name, probe in probes:
            # A cell runs if it ran at every micro-batch probed, and is workspace-free if it
            # needed none at any.
            for row in probe["cells"]:
                results = row["results"].values()  # [status, workspace] per micro-batch
                self._probed[tuple(row["cell"])] = (
                    all(status == 0 for status, _ in results),
                    all(workspace == 0 for _, workspace in results),
                    name,
                )
            for what, status in probe.get("contract", {}).items():
                if isinstance(status, int):  # not "failed: ..." (the probe's own failure)
                    self._contract[what] = (status, f"probed:{name}")

    def contract_status(self, what: str) -> tuple[int, str]:
        """The status cuDNN gives for a broken contract, and where that is known from."""
        return self._contract[what]

    @functools.lru_cache(maxsize=65536)  # noqa: B019  (one object per process; facts are pure)
    def facts(self, problem: SimProblem) -> tuple[AlgoFacts, ...]:
        """One AlgoFacts per algorithm of the problem's kernel, in enum order."""
        shape = _problem_shape(problem)
        measured = self._measured.get(shape) if shape is not None else None
        if measured is not None and problem.kernel in measured.rows:
            found = self._from_table(problem, measured)
            if found is not None:
                return found
        return tuple(self._cell(problem, algo) for algo in range(len(ALGORITHMS[problem.kernel])))

    def _from_table(self, problem: SimProblem, layer: _Measured) -> tuple[AlgoFacts, ...] | None:
        sizes, rows = layer.sizes[problem.kernel], layer.rows[problem.kernel]
        b = problem.batch
        where = f"measured:{self._tag}/{layer.source}"
        if b in rows:
            return tuple(_row(algo, rows[b].get(algo), problem, where) for algo in _algos(problem))
        i = bisect.bisect(sizes, b)
        if i == 0 or i == len(sizes):
            return None  # beyond what was measured: the model answers
        low, high = sizes[i - 1], sizes[i]
        share = (b - low) / (high - low)
        facts = []
        for algo in _algos(problem):
            a, z = rows[low].get(algo), rows[high].get(algo)
            both = (
                None
                if a is None or z is None
                else (a[0] + share * (z[0] - a[0]), round(a[1] + share * (z[1] - a[1])), a[2])
            )
            facts.append(_row(algo, both, problem, f"{where} (interpolated at {b})"))
        return tuple(facts)

    def _cell(self, problem: SimProblem, algo: int) -> AlgoFacts:
        """An algorithm for a problem no table measured."""
        name = ALGORITHMS[problem.kernel][algo]
        runs, free = _model_runs(problem, name), (problem.kernel, name) in _WORKSPACE_FREE
        where = "model"
        observed = _observed_runs(problem, name) if self.mode == "log" else None
        if observed is not None:
            (runs, free), where = observed, OBSERVED
        probed = self._probed.get(cell(problem, algo))
        if probed is not None:
            runs, free, where = probed[0], probed[1], f"probed:{probed[2]}"
        if self.mode.startswith("fuzz:"):
            runs, free, scale = _fuzzed(self.mode, cell(problem, algo))
            where = self.mode
        else:
            scale = 1.0
        if not runs:
            return AlgoFacts(algo, NOT_SUPPORTED, 0, 0.0, True, where)
        workspace = 0 if free else max(256, round(scale * _model_workspace(problem, name)))
        deterministic = (problem.kernel, name) not in _NON_DETERMINISTIC
        return AlgoFacts(algo, SUCCESS, workspace, _model_time(problem, name), deterministic, where)


def _algos(problem: SimProblem) -> range:
    return range(len(ALGORITHMS[problem.kernel]))


def _row(
    algo: int, row: tuple[float, int, bool] | None, problem: SimProblem, where: str
) -> AlgoFacts:
    if row is None:
        return AlgoFacts(algo, NOT_SUPPORTED, 0, 0.0, True, f"{where} (did not run)")
    time_ms, workspace, deterministic = row
    return AlgoFacts(algo, SUCCESS, workspace, time_ms, deterministic, where)


def _fuzzed(mode: str, key: tuple[object, ...]) -> tuple[bool, bool, float]:
    """(runs, workspace-free, workspace scale) drawn from the seed and the cell alone."""
    digest = hashlib.sha256(repr((mode, key)).encode()).digest()
    runs = digest[0] < 200  # about 78 % of cells run
    free = digest[1] < 128
    return runs, free, 0.25 + digest[2] / 64  # 0.25x .. 4.2x the model's workspace


# --- matching problems to measured layers ----------------------------------------------------

# What the tables' math types stand for: float32 was measured under FMA (no TF32); float16
# under default math, which for half types uses tensor cores just as tensor_op does.
_MEASURED_MATH = {("float32", "fma"): "fma", ("float16", "default"): "tensor",
                  ("float16", "tensor_op"): "tensor"}  # fmt: skip


def _shape(layer: dict[str, Any]) -> tuple[object, ...]:
    return (
        layer["dtype"],
        _MEASURED_MATH.get((layer["dtype"], layer["math_type"])),
        layer["in_channels"],
        layer["out_channels"],
        tuple(layer["input_size"]),
        tuple(layer["filter_size"]),
        tuple(layer["padding"]),
        tuple(layer["stride"]),
        tuple(layer["dilation"]),
        layer["groups"],
    )


def _problem_shape(problem: SimProblem) -> tuple[object, ...] | None:
    math_class = _MEASURED_MATH.get((problem.dtype, problem.math_type))
    if (
        math_class is None
        or not problem.symmetric  # the tables measured legacy calls, which pad alike
        or problem.layout != "NCHW"
        or problem.filter_layout != "NCHW"
        or problem.mode != "cross_correlation"
        or problem.compute_dtype != "float32"
    ):
        return None
    return (
        problem.dtype,
        math_class,
        problem.x_dims[1],
        problem.w_dims[0],
        problem.x_dims[2:],
        problem.filter_size,
        problem.padding,
        problem.stride,
        problem.dilation,
        problem.groups,
    )


def _measured(layer: dict[str, Any]) -> _Measured:
    rows = {
        kernel: {
            int(b): {algo: (ms, ws, det) for algo, ms, ws, det in entries}
            for b, entries in by_size.items()
        }
        for kernel, by_size in layer["kernels"].items()
    }
    return _Measured(layer["source"], {k: sorted(v) for k, v in rows.items()}, rows)
