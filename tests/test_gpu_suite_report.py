"""benchmarks/gpu_suite_report.py: a gpu test run's JUnit XML summarised for the results."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import gpu_suite_report  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="6">
<testcase classname="tests.test_a" name="test_passes" time="0.1"/>
<testcase classname="tests.test_a" name="test_fails" time="0.1"><failure message="boom"/></testcase>
<testcase classname="tests.test_b" name="test_skips[3d]" time="0.0">
  <skipped type="pytest.skip" message="cuDNN runs no forward algorithm: 8 x NOT_SUPPORTED"/>
</testcase>
<testcase classname="tests.test_b" name="test_expected" time="0.0">
  <skipped type="pytest.xfail" message="known"/>
</testcase>
<testcase classname="tests.test_c" name="test_errs" time="0.0"><error message="fixture"/></testcase>
<testcase classname="tests.test_c" name="test_passes_then_errs" time="0.0">
  <error message="teardown"/>
</testcase>
</testsuite></testsuites>
"""


def test_every_outcome_is_counted_and_each_skip_keeps_its_reason(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    found = gpu_suite_report.outcomes(junit)
    assert found["counts"] == {"passed": 1, "failed": 1, "errors": 2, "skipped": 1, "xfailed": 1}
    assert found["skips"] == [
        {
            "test": "tests.test_b::test_skips[3d]",
            "reason": "cuDNN runs no forward algorithm: 8 x NOT_SUPPORTED",
        }
    ]
    assert found["failed"] == ["tests.test_a::test_fails"]
    assert found["errors"] == ["tests.test_c::test_errs", "tests.test_c::test_passes_then_errs"]
