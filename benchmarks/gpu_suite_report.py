"""Summarise a run of the gpu-marked tests as gpu-suite-<date>.json, for benchmarks/results/.

Reads pytest's JUnit XML (`pytest --junitxml`) and writes what the run says about the
library on that machine: the GPU, driver, CUDA and cuDNN versions, the commit, the counts of
passed, failed, skipped and errors (expected failures counted apart), each skip with its
reason, and the names of the tests that failed or errored (their tracebacks are in pytest's
own report).

    python benchmarks/gpu_suite_report.py junit.xml --out DIR [--commit REV]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from gpu_compare import driver_version

FORMAT, VERSION = "ucudnn-gpu-suite", 1


def outcomes(junit: Path) -> dict[str, object]:
    """Counts, skip reasons and failing tests of a JUnit XML report."""
    counts = dict.fromkeys(("passed", "failed", "errors", "skipped", "xfailed"), 0)
    skips: list[dict[str, str]] = []
    failed: list[str] = []
    errors: list[str] = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        skipped, failure, error = (case.find(tag) for tag in ("skipped", "failure", "error"))
        if error is not None:  # an error in set-up or tear-down may come with a pass
            counts["errors"] += 1
            errors.append(name)
        elif failure is not None:
            counts["failed"] += 1
            failed.append(name)
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            counts["xfailed"] += 1
        elif skipped is not None:
            counts["skipped"] += 1
            skips.append({"test": name, "reason": skipped.get("message", "")})
        else:
            counts["passed"] += 1
    return {"counts": counts, "skips": skips, "failed": failed, "errors": errors}


def machine() -> dict[str, object]:
    """The GPU and the versions the library reports, and the driver nvidia-smi names."""
    from ucudnn.core.device import info

    report = info()
    devices = report.get("devices") or [{}]
    return {
        "gpu": devices[0].get("name"),
        "driver": driver_version(),
        "cuda_driver": report.get("cuda_driver"),
        "cuda_runtime": report.get("cuda_runtime"),
        "cudnn": report.get("cudnn"),
        "simulated": report.get("simulated", False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", default=os.environ.get("UCUDNN_COMMIT", "unknown"))
    args = parser.parse_args()
    today = datetime.date.today().isoformat()
    document = {
        "format": FORMAT,
        "version": VERSION,
        "date": today,
        "commit": args.commit,
        **machine(),
        **outcomes(args.junit),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"gpu-suite-{today}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    counts = document["counts"]
    print(f"{path.name}: " + ", ".join(f"{n} {what}" for what, n in counts.items()))  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
