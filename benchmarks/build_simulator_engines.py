"""Build the simulated device's graph-API engine data from the H100 engine probe's output.

    python benchmarks/build_simulator_engines.py OUT.json.gz \\
        --source path/to/engines-resnet-vgg-alexnet.json.gz \\
        --source path/to/engines-resnet50-fp16-nchw-small-batches.json.gz \\
        --source path/to/engines-resnet50-fp16-nhwc.json.gz \\
        --source path/to/engines-deepbench-cnn3d.json.gz \\
        --networks resnet50 --band-top 3

Each `--source` is one probe file (`engine_probe.py`): records of one convolution kernel at one
micro-batch (`problem` is `ConvProblem.describe()` at that micro-batch), each with the execution
plans the cuDNN frontend's heuristics (modes A + FALLBACK) returned, in their order, with the
workspace and median time of those that built and ran. The probe deselected float32's
tensor-core plans (TF32 off), so every float32 plan it kept is one that ran without tensor cores.

What is kept, to stay small: the records of `--networks`, the first of two sources measuring the
same (problem, kernel) and, per record, every configuration without knobs (cuDNN's generic
engines, which the simulator answers for heuristics mode FALLBACK) and, per workspace band
(0, 1 MiB, 8 MiB, 64 MiB, 256 MiB, 1 GiB, more), the first `--band-top` in the probe's order
and the fastest. Times keep 4 significant digits. Read from every record of every source,
before that selection: the engine indices seen per kernel in float32 records (the engines
that run without tensor cores) and the highest engine index (the simulator's engine count).
The output is what `ucudnn.testing.simulator.engines` reads.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MiB = 1 << 20
BANDS = (0, 1 * MiB, 8 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
_INDEX = re.compile(r"eng(\d+)")


def band(workspace: int) -> int:
    """The workspace band of a configuration: 0 for none, then one per bound in BANDS."""
    return next((i for i, bound in enumerate(BANDS) if workspace <= bound), len(BANDS))


def selected(plans: list[dict[str, Any]], band_top: int) -> list[dict[str, Any]]:
    """The plans kept of one record, in the probe's order (see the module's docstring)."""
    by_band: dict[int, list[dict[str, Any]]] = {}
    for plan in plans:
        if "_k" in plan["name"]:
            by_band.setdefault(band(plan["workspace"]), []).append(plan)
    kept = {id(plan) for plan in plans if "_k" not in plan["name"]}
    for members in by_band.values():
        kept.update(id(plan) for plan in members[:band_top])
        kept.add(id(min(members, key=lambda plan: plan["ms"])))
    return [plan for plan in plans if id(plan) in kept]


def index_of(name: str) -> int:
    match = _INDEX.match(name)
    if match is None:
        raise ValueError(f"not an engine configuration name: {name!r}")
    return int(match.group(1))


def build(
    sources: Iterable[tuple[str, dict[str, Any]]], networks: set[str], band_top: int
) -> dict[str, Any]:
    tags: dict[str, int] = {}
    records: dict[tuple[str, str], list[Any]] = {}
    fma_engines: dict[str, set[int]] = {}
    highest = 0
    devices, versions, names = set(), set(), []
    for name, probe in sources:
        names.append(name)
        devices.add(probe["device"])
        versions.add(probe["cudnn"])
        for record in probe["records"]:
            plans = [plan for plan in record["plans"] if "ms" in plan]
            indices = {index_of(plan["name"]) for plan in plans}
            highest = max([highest, *indices])
            if record["problem"].rsplit(" ", 1)[-1] == "float32":
                fma_engines.setdefault(record["kernel"], set()).update(indices)
            key = (record["problem"], record["kernel"])
            if record["net"] not in networks or not plans or key in records:
                continue
            records[key] = [
                *key,
                [
                    [tags.setdefault(plan["name"], len(tags)), plan["workspace"],
                     float(f"{plan['ms']:.4g}")]
                    for plan in selected(plans, band_top)
                ],
            ]  # fmt: skip
    if len(devices) != 1 or len(versions) != 1:
        raise ValueError(f"the sources come from several devices or cuDNNs: {devices} {versions}")
    major, minor, patch = (int(v) for v in versions.pop().split("."))
    return {
        "format": "ucudnn-sim-engines",
        "version": 1,
        "device": devices.pop(),
        "cudnn_version": major * 10000 + minor * 100 + patch,
        "sources": names,
        "networks": sorted(networks),
        "band_top": band_top,
        "engine_count": highest + 1,
        "fma_engines": {kernel: sorted(found) for kernel, found in sorted(fma_engines.items())},
        "tags": list(tags),
        "records": list(records.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--source", type=Path, action="append", required=True)
    parser.add_argument("--networks", default="resnet50", help="comma-separated")
    parser.add_argument("--band-top", type=int, default=3)
    args = parser.parse_args()
    sources = [(path.name, json.loads(gzip.decompress(path.read_bytes()))) for path in args.source]
    document = build(sources, set(args.networks.split(",")), args.band_top)
    data = json.dumps(document, separators=(",", ":")).encode()
    args.out.write_bytes(gzip.compress(data, mtime=0))
    configs = sum(len(record[2]) for record in document["records"])
    print(
        f"{args.out}: {len(document['records'])} records, {configs} configurations, "
        f"{len(document['tags'])} tags, {len(data)} bytes, gzip {args.out.stat().st_size}"
    )


if __name__ == "__main__":
    main()
