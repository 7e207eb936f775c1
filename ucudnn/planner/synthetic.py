"""MODEL timing tables: made-up but plausible benchmark rows, for tests, demos and the planner's
speed benchmark on machines without a GPU. They are NOT measurements and must never be
presented as such; real tables come from benchmarking on the device.

The model gives each cuDNN algorithm family a cost shape, on a notional GPU with PEAK_TFLOPS of
arithmetic and BANDWIDTH_GBS of memory bandwidth:

- time(b) = LAUNCH_MS + flops(b) * flop_factor / (peak * efficiency * occupancy(b))
  + workspace traffic(b) / bandwidth, where occupancy(b) = w / (w + HALF_OCCUPANCY) and w is
  the number of output values of the micro-batch, so small micro-batches pay for idle SMs;
  backward-data and backward-filter run at 0.9 and 0.8 of the forward efficiency;
- implicit GEMM: no workspace, low efficiency;
- precomputed implicit GEMM: a small workspace independent of b (index tables);
- explicit GEMM: workspace b*C*R*S*P*Q*itemsize (im2col), which it also writes and reads;
- FFT: 2D, stride 1, no dilation; workspace ∝ (b*C + b*K + C*K) * padded-image spectrum,
  cost of the transforms plus a pointwise product, so fast for large filters;
- FFT tiling: the same on 32x32 tiles, so a smaller spectrum but some overlap overhead;
- Winograd (fused): 3x3, stride 1, 2D; no workspace; 2.25x fewer multiplies;
- Winograd non-fused: 3x3 or 5x5, stride 1, 2D; workspace ∝ b*(C+K)*tiles*36; 4x fewer
  multiplies for 3x3, 2x for 5x5, plus the traffic of its transformed tensors;
- tensor cores: for half types (float16, bfloat16), in 2D and 3D alike, each GEMM-like
  family (implicit, precomputed and explicit GEMM) also runs as a math_type "tensor_op"
  candidate of the same algorithm number (as cuDNN's Find reports one algorithm under several
  math types), whose arithmetic is TENSOR_SPEEDUP times faster. Tensor cores want channels
  last: in a channels-first layout (NCHW, NCDHW) it works on channels-last copies of x and y
  made in its workspace, b*(C*input volume + K*output volume)*itemsize more bytes, written and
  read (so charged as workspace traffic); a channels-last layout needs no copies. So large
  volumes in channels-first layouts have a fast candidate whose workspace grows with the
  volume.

Slabs (`ucudnn.core.slabs`): a candidate cut into slabs of e planes at micro-batch b (the slab
policy's extents, `policies.slab_extents`) costs the sum of its slabs' times, each slab
priced as the convolution it runs (`Slab.problem`: its input planes with the halo, one-sided
padding at a border, as the graph API runs it), and needs the most workspace any slab needs.
Each distinct slab is priced once (the interior ones repeat); a family that cannot run, or
does not fit, at some slab has no candidate at that (b, e). The slabs of a run pay for a
launch each, lower occupancy and their halos, so they win mainly where the whole run's
workspace does not fit the limit: the tensor-core runs of large channels-first volumes.

Times are rounded to whole nanoseconds.

Which enum value of each kernel belongs to which family follows cuDNN's legacy API (e.g.
backward-filter algorithms 0 and 3 are non-deterministic); the numbers do not follow any GPU.
An algorithm whose workspace or time would exceed what a table may hold (MAX_WORKSPACE_BYTES,
MAX_TIME_MS) is left out, as a GPU could not run it either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ucudnn.core import slabs
from ucudnn.core.argtypes import PolicyArgument
from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM, ConvProblem, check_kernel
from ucudnn.planner.candidate import ROW_TIME, ROW_WORKSPACE, Candidate, Row
from ucudnn.planner.collector import collector_paused
from ucudnn.planner.config import micro_batch_policy, slab_policy as check_slab_policy
from ucudnn.planner.kernel_table import KernelTable
from ucudnn.planner.policies import (
    DEFAULT_POLICY,
    DEFAULT_SLAB_POLICY,
    Policy,
    sizes_to_measure,
    slab_extents,
)
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.values import MAX_TIME_MS, MAX_WORKSPACE_BYTES

PEAK_TFLOPS = 15.0
BANDWIDTH_GBS = 900.0
LAUNCH_MS = 0.005
HALF_OCCUPANCY = 2**19  # output values at which the notional GPU is half busy
TENSOR_SPEEDUP = 4.0  # tensor-core arithmetic over FMA's, for half types

# family -> (efficiency, flop factor); applicability and workspace are below.
_FAMILIES = {
    "implicit_gemm": (0.35, 1.0),
    "precomp_gemm": (0.55, 1.0),
    "gemm": (0.75, 1.0),
    "fft": (0.6, 1.0),  # flops are computed from the transform sizes, see _fft_flops
    "fft_tiling": (0.55, 1.0),
    "winograd": (0.45, 1 / 2.25),
    "winograd_nonfused": (0.6, 1 / 4),
}

# The families that also run on tensor cores, for these data types.
_TENSOR_OP_FAMILIES = ("implicit_gemm", "precomp_gemm", "gemm")
_HALF_TYPES = ("float16", "bfloat16")
# Layouts whose channels are innermost, as tensor cores want them: no copies.
_CHANNELS_LAST = ("NHWC", "NDHWC")

# Backward passes run somewhat below forward efficiency on real GPUs.
_KERNEL_EFFICIENCY = {"forward": 1.0, "backward_data": 0.9, "backward_filter": 0.8}

# kernel -> [(algo enum value, family, deterministic)]
_ALGORITHMS = {
    "forward": [
        (0, "implicit_gemm", True),
        (1, "precomp_gemm", True),
        (2, "gemm", True),
        (4, "fft", True),
        (5, "fft_tiling", True),
        (6, "winograd", True),
        (7, "winograd_nonfused", True),
    ],
    "backward_data": [
        (0, "implicit_gemm", False),
        (1, "precomp_gemm", True),
        (2, "fft", True),
        (3, "fft_tiling", True),
        (4, "winograd", True),
        (5, "winograd_nonfused", True),
    ],
    "backward_filter": [
        (0, "implicit_gemm", False),
        (1, "precomp_gemm", True),
        (2, "fft", True),
        (3, "gemm", False),
        (5, "winograd_nonfused", True),
        (6, "fft_tiling", True),
    ],
}


def _plain_2d(p: ConvProblem) -> bool:
    return p.rank == 2 and p.groups == 1 and all(d == 1 for d in p.dilation)


def _applies(family: str, p: ConvProblem) -> bool:
    unit_stride = all(s == 1 for s in p.stride)
    if family in ("fft", "fft_tiling"):
        return _plain_2d(p) and unit_stride
    if family == "winograd":
        return _plain_2d(p) and unit_stride and p.filter_size == (3, 3)
    if family == "winograd_nonfused":
        return _plain_2d(p) and unit_stride and p.filter_size in ((3, 3), (5, 5))
    return True


def _spectrum(p: ConvProblem, tile: int | None) -> int:
    """Complex values of one channel's spectrum: the padded image, or one tile per tile."""
    padded = [s + q + r for s, q, r in zip(p.input_size, p.padding, p.padding_end, strict=True)]
    if tile is None:
        h, w = (1 << (n - 1).bit_length() for n in padded)
        return h * (w // 2 + 1)
    tiles = math.prod(-(-n // (tile - f + 1)) for n, f in zip(padded, p.filter_size, strict=True))
    return tiles * tile * (tile // 2 + 1)


# Added to a float from 0 to 2**51 and taken away again, it rounds the float to a whole number,
# half to even as round() does, in two additions (round() calls a method and makes an int).
# `_Family.rows` rounds times in nanoseconds so: 2**51 ns is past MAX_TIME_MS, and rows that
# slow are left out.
_WHOLE = 1.5 * 2**52


class _Family:
    """One algorithm family's cost model for one kernel of one problem, its per-problem terms
    worked out once: a table asks it at every micro-batch size (256 of them under policy
    "all"). Its flops and workspace are linear in the micro-batch size b, so each is worked out
    as b * (per sample) + (fixed)."""

    def __init__(self, kernel: str, family: str, p: ConvProblem, tensor_op: bool = False) -> None:
        self.family = family
        self.math_type = "tensor_op" if tensor_op else "default"
        self.c, self.k, self.item = p.in_channels // p.groups, p.out_channels, p.itemsize
        self.taps, self.outputs = math.prod(p.filter_size), math.prod(p.output_size)
        self.factor = _FAMILIES[family][1]
        # PEAK_TFLOPS * 1e12 * efficiency: the arithmetic rate when the GPU is fully busy.
        self.speed = PEAK_TFLOPS * 1e12 * (_FAMILIES[family][0] * _KERNEL_EFFICIENCY[kernel])
        # Tensor cores: faster arithmetic, on channels-last copies of x and y per sample.
        self.copies = 0
        if tensor_op:
            self.speed *= TENSOR_SPEEDUP
            if p.layout not in _CHANNELS_LAST:
                volumes = p.in_channels * math.prod(p.input_size) + self.k * self.outputs
                self.copies = volumes * self.item
        self.spectrum = 0
        if family in ("fft", "fft_tiling"):
            self.spectrum = _spectrum(p, None if family == "fft" else 32)
        self.tiles = math.prod(-(-n // 4) for n in p.output_size)

    def _workspace_terms(self) -> tuple[int, int]:
        """(per sample, fixed) of the workspace, in bytes."""
        c, k, item, family = self.c, self.k, self.item, self.family
        if family == "precomp_gemm":
            return self.copies, 4 * c * self.taps
        if family == "gemm":
            return c * self.taps * self.outputs * item + self.copies, 0
        if family in ("fft", "fft_tiling"):
            return (c + k) * self.spectrum * 8, c * k * self.spectrum * 8
        if family == "winograd_nonfused":
            return (c + k) * self.tiles * 36 * item, c * k * 36 * item
        return self.copies, 0

    def _flop_terms(self) -> tuple[float, float]:
        """(per sample, fixed) of the flops. An FFT transforms b*C inputs, b*K outputs and C*K
        filters (5 n log2 n each, n the spectrum) and multiplies b*C*K spectra pointwise (8
        flops a value); a direct method does 2 flops per multiply-add, times its factor."""
        c, k, spectrum = self.c, self.k, self.spectrum
        if spectrum:
            transform = 5.0 * spectrum * math.log2(spectrum)
            return (c + k) * transform + 8.0 * c * k * spectrum, c * k * transform
        return 2.0 * k * c * self.taps * self.outputs * self.factor, 0.0

    def rows(self, algo: int, deterministic: bool, sizes: list[int]) -> list[Row | None]:
        """The Candidate field values at each size, or None where its time or workspace is
        more than a table may hold; times rounded to whole nanoseconds. One loop of plain
        arithmetic: policy "all" asks for 256 sizes of each family of each kernel of a
        network."""
        per_sample, fixed = self._workspace_terms()
        flops_per_sample, fixed_flops = self._flop_terms()
        outputs_per_sample = self.k * self.outputs
        # The compute time is flops / (speed * occupancy), occupancy = w / (w + HALF_OCCUPANCY)
        # for w output values, and the traffic writes and reads the workspace once.
        ms_per_flop, ms_per_byte = 1e3 / self.speed, 2e3 / (BANDWIDTH_GBS * 1e9)
        # The constants as locals, which the loop reads faster than globals.
        half, launch, whole, math_type = HALF_OCCUPANCY, LAUNCH_MS, _WHOLE, self.math_type
        most_ms, most_bytes = MAX_TIME_MS, MAX_WORKSPACE_BYTES
        rows: list[Row | None] = []
        for b in sizes:
            workspace = b * per_sample + fixed
            occupied = b * outputs_per_sample
            busy_ms = (b * flops_per_sample + fixed_flops) * ms_per_flop
            time_ms = launch + busy_ms * (occupied + half) / occupied + workspace * ms_per_byte
            time_ms = (time_ms * 1e6 + whole - whole) / 1e6  # see _WHOLE
            fits = time_ms <= most_ms and workspace <= most_bytes
            rows.append(
                (b, algo, time_ms, workspace, math_type, deterministic, "", 0) if fits else None
            )
        return rows


def _families(problem: ConvProblem, kernel: str) -> list[tuple[int, _Family, bool]]:
    """(algo, cost model, deterministic) of each family that applies to the problem, a
    family's tensor-op run right after its default one (the order of their slots)."""
    half = problem.dtype in _HALF_TYPES
    found = []
    for algo, family, deterministic in _ALGORITHMS[kernel]:
        if _applies(family, problem):
            found.append((algo, _Family(kernel, family, problem), deterministic))
            if half and family in _TENSOR_OP_FAMILIES:
                tensor_op = _Family(kernel, family, problem, tensor_op=True)
                found.append((algo, tensor_op, deterministic))
    return found


def _columns(
    problem: ConvProblem, kernel: str, sizes: list[int], extents: list[int]
) -> list[list[Row | None]]:
    """Each candidate slot's rows at `sizes` (None where it does not fit), in slot order: each
    family's whole run, then its runs in slabs of each of `extents`."""
    cut = [_slab_columns(problem, kernel, extent, sizes) for extent in extents]
    columns = []
    for algo, model, deterministic in _families(problem, kernel):
        columns.append(model.rows(algo, deterministic, sizes))
        columns += [
            by_slot[algo, model.math_type] for by_slot in cut if (algo, model.math_type) in by_slot
        ]
    return columns


def _slab_columns(
    problem: ConvProblem, kernel: str, extent: int, sizes: list[int]
) -> dict[tuple[int, str], list[Row | None]]:
    """The rows at `sizes` of each (algo, math type) that runs every slab of `kernel` of
    `problem` cut into slabs of `extent` planes: its slabs' times added up, the most
    workspace one of them needs. Each distinct slab is priced once: a slab's convolution
    depends only on its planes and padding."""
    counts, priced = [], []  # slabs of each shape, and each slot's rows for one of them
    for slab, count in slabs.distinct(problem, kernel, extent):
        part = slab.problem(problem)
        counts.append(count)
        priced.append(
            {
                (algo, model.math_type): model.rows(algo, deterministic, sizes)
                for algo, model, deterministic in _families(part, kernel)
            }
        )
    everywhere = set.intersection(*map(set, priced))
    return {
        slot: [
            _summed(extent, counts, [rows[slot][i] for rows in priced]) for i in range(len(sizes))
        ]
        for slot in sorted(everywhere)
    }


def _summed(extent: int, counts: list[int], rows: list[Row | None]) -> Row | None:
    """The row of a run in slabs of `extent` planes whose distinct slabs, run counts[i] times
    each, have `rows` (None where one does not fit): None if one does not fit or if they take
    longer together than a table may hold."""
    fit = [row for row in rows if row is not None]
    if len(fit) < len(rows):
        return None
    time_ms = math.fsum(count * row[ROW_TIME] for count, row in zip(counts, fit, strict=True))
    time_ms = (time_ms * 1e6 + _WHOLE - _WHOLE) / 1e6  # whole nanoseconds: see _WHOLE
    if time_ms > MAX_TIME_MS:
        return None
    b, algo, _, _, math_type, deterministic, engine, _ = fit[0]
    workspace = max(row[ROW_WORKSPACE] for row in fit)
    return (b, algo, time_ms, workspace, math_type, deterministic, engine, extent)


def _rows_by_size(columns: list[list[Row | None]], sizes: list[int]) -> dict[int, list[Row]]:
    """Each size's Candidate field values, the sizes where no candidate fits left out."""
    if not columns:
        return {}
    found: dict[int, list[Row]] = {}
    for b, at_size in zip(sizes, zip(*columns, strict=True), strict=True):
        if None in at_size:
            at_size = tuple(row for row in at_size if row is not None)
        if at_size:
            found[b] = list(at_size)
    return found


def _extents(problem: ConvProblem, kernel: str, policy: Policy) -> list[int]:
    """The slab extents `policy` tries on `kernel` of `problem`: none where it cannot be cut."""
    if slabs.unsplittable(problem) is not None:
        return []
    return slab_extents(policy, slabs.planes(problem, kernel))


def model_candidates(
    problem: ConvProblem,
    kernel: str,
    micro_batch: int,
    slab_policy: PolicyArgument = DEFAULT_SLAB_POLICY,
) -> list[Candidate]:
    """The model's candidates for `kernel` of `problem` run on `micro_batch` samples, whole
    and cut into slabs of each extent of `slab_policy`."""
    check_kernel(kernel)
    micro_batch = integer(micro_batch, "micro_batch", minimum=1, maximum=MAX_DIM)
    slab_policy = check_slab_policy(slab_policy, "slab_policy")
    sizes = [micro_batch]
    columns = _columns(problem, kernel, sizes, _extents(problem, kernel, slab_policy))
    return [Candidate(*row) for row in _rows_by_size(columns, sizes).get(micro_batch, [])]


def model_table(
    layer: str,
    kernel: str,
    problem: ConvProblem,
    policy: PolicyArgument = DEFAULT_POLICY,
    slab_policy: PolicyArgument = DEFAULT_SLAB_POLICY,
) -> KernelTable:
    """A MODEL table of one kernel at the problem's batch, at every size of `policy`, whole
    and cut into slabs of each extent of `slab_policy` at each of those sizes.

    Raises:
        TypeError: a micro-batch size or slab extent that is not an integer.
        ValueError: an unknown kernel, a layer name that cannot be one, an empty batch, or an
            unknown policy or slab policy or one that asks for more sizes than can be
            measured.
    """
    policy = micro_batch_policy(policy, "policy")
    slab_policy = check_slab_policy(slab_policy, "slab_policy")
    check_kernel(kernel)
    table = KernelTable(layer, kernel, problem.batch)
    sizes = sizes_to_measure(policy, problem.batch)
    columns = _columns(problem, kernel, sizes, _extents(problem, kernel, slab_policy))
    for b, rows in _rows_by_size(columns, sizes).items():
        table.set_checked_size(b, rows)
    return table


@collector_paused()
def model_tables(
    layers: Iterable[tuple[str, ConvProblem, Iterable[str]]],
    policy: PolicyArgument = DEFAULT_POLICY,
    slab_policy: PolicyArgument = DEFAULT_SLAB_POLICY,
) -> TimingTables:
    """MODEL tables for (layer name, problem, kernels) triples, e.g. from a LayerGraph. Layers
    that share a problem share its candidates, which are made once: networks repeat their
    blocks, and a layer list may repeat one row thousands of times.

    Raises:
        TypeError, ValueError: as `model_table` does; ValueError also for a (layer, kernel)
            given twice.
    """
    # Checked once, not per layer.
    policy = micro_batch_policy(policy, "policy")
    slab_policy = check_slab_policy(slab_policy, "slab_policy")
    made: dict[tuple[str, str], KernelTable] = {}
    tables = []
    for name, problem, kernels in layers:
        for kernel in kernels:
            same = made.get((problem.key(), kernel))
            if same is None:
                same = made[problem.key(), kernel] = model_table(
                    name, kernel, problem, policy, slab_policy
                )
                tables.append(same)
            else:
                tables.append(same.renamed(name))
    return TimingTables(tables)
