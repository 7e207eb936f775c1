"""Build the simulated device's measured tables from a GPU run's `gpu_compare.py` output.

    python benchmarks/build_simulator_tables.py OUT.json.gz \\
        --source path/to/compare-resnet50-alexnet.json path/to/resnet50-alexnet-tables.zip \\
        --source path/to/compare-deepbench.json path/to/compare-deepbench-tables.zip \\
        --device "NVIDIA H100 80GB HBM3" --driver 580.159.04 --cuda 13.0 --cudnn 9.19.0 \\
        --commit 5925570 --date 2026-11-24

Each `--source` is a results JSON (its `layers[]` give every layer's problem) and the zip of
the timing tables measured with it (`<network>-<dtype>-<layout>.csv`: layer, kernel, batch,
micro_batch, algo, time_ms, workspace_bytes, math_type, deterministic). A table holds only
the algorithms that ran: one absent from a (layer, kernel, micro-batch) did not. Layers of the
same shape, type and math type are measured more than once in a network; the first
measurement is kept. The output is what `ucudnn.testing.simulator.capabilities` reads.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import re
import zipfile
from pathlib import Path

# ConvProblem.describe(): "N=256 C=64->K=64 56x56 filter 3x3 pad=1,1 stride=2,2 NCHW float32"
_PROBLEM = re.compile(
    r"N=(?P<n>\d+) C=(?P<c>\d+)->K=(?P<k>\d+) (?P<size>[\dx]+) filter (?P<filter>[\dx]+)"
    r"(?P<extras>( \w+=[\d,]+)*) (?P<layout>\w+) (?P<dtype>\w+)$"
)


def _ints(text: str, sep: str) -> list[int]:
    return [int(v) for v in text.split(sep)]


def geometry(description: str) -> dict[str, object]:
    """The problem fields of one layer, from its description."""
    match = _PROBLEM.match(description)
    if match is None:
        raise ValueError(f"cannot read the problem {description!r}")
    size, filt = _ints(match["size"], "x"), _ints(match["filter"], "x")
    extras = dict(e.split("=") for e in match["extras"].split())
    rank = len(size)
    return {
        "in_channels": int(match["c"]),
        "out_channels": int(match["k"]),
        "input_size": size,
        "filter_size": filt,
        "padding": _ints(extras.get("pad", ",".join("0" * rank)), ","),
        "stride": _ints(extras.get("stride", ",".join("1" * rank)), ","),
        "dilation": _ints(extras.get("dil", ",".join("1" * rank)), ","),
        "groups": int(extras.get("groups", 1)),
        "layout": match["layout"],
        "dtype": match["dtype"],
    }


def read_source(results: Path, tables: Path) -> list[dict[str, object]]:
    layers = {
        (item["network"], item["dtype"], item["layout"], item["layer"]): item["problem"]
        for item in json.loads(results.read_text())["layers"]
    }
    measured: list[dict[str, object]] = []
    with zipfile.ZipFile(tables) as archive:
        for name in sorted(archive.namelist()):
            network, dtype, layout = Path(name).stem.split("-")
            rows = csv.DictReader(io.TextIOWrapper(archive.open(name), encoding="utf-8"))
            by_layer: dict[str, dict[str, object]] = {}
            for row in rows:
                layer = by_layer.get(row["layer"])
                if layer is None:
                    problem = layers[(network, dtype, layout, row["layer"])]
                    layer = {
                        **geometry(problem),
                        "math_type": row["math_type"],
                        "source": f"{Path(name).stem}/{row['layer']}",
                        "kernels": {},
                    }
                    by_layer[row["layer"]] = layer
                kernel = layer["kernels"].setdefault(row["kernel"], {})  # type: ignore[attr-defined]
                kernel.setdefault(row["micro_batch"], []).append(
                    [
                        int(row["algo"]),
                        round(float(row["time_ms"]), 6),
                        int(row["workspace_bytes"]),
                        row["deterministic"] == "true",
                    ]
                )
            measured += by_layer.values()
    return measured


def _shape_key(layer: dict[str, object]) -> str:
    fields = [k for k in sorted(layer) if k not in ("source", "kernels")]
    return json.dumps([layer[k] for k in fields])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--source", nargs=2, type=Path, action="append", required=True,
                        metavar=("RESULTS_JSON", "TABLES_ZIP"))  # fmt: skip
    for field in ("device", "driver", "cuda", "cudnn", "commit", "date"):
        parser.add_argument(f"--{field}", required=True)
    args = parser.parse_args()
    kept: dict[str, dict[str, object]] = {}
    for results, tables in args.source:
        for layer in read_source(results, tables):
            kept.setdefault(_shape_key(layer), layer)
    major, minor, patch = (int(v) for v in args.cudnn.split("."))
    document = {
        "format": "ucudnn-sim-tables",
        "version": 1,
        "device": args.device,
        "driver": args.driver,
        "cuda": args.cuda,
        "cudnn": args.cudnn,
        "cudnn_version": major * 10000 + minor * 100 + patch,
        "commit": args.commit,
        "date": args.date,
        "sources": sorted({str(layer["source"]).split("/")[0] for layer in kept.values()}),
        "layers": list(kept.values()),
    }
    data = json.dumps(document, separators=(",", ":")).encode()
    args.out.write_bytes(gzip.compress(data, mtime=0))
    print(
        f"{args.out}: {len(kept)} layer shapes, {len(data)} bytes, gzip {args.out.stat().st_size}"
    )


if __name__ == "__main__":
    main()
