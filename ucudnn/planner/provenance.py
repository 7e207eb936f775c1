"""Where timings were measured, as a timings CSV records it: a comment line before the header,

    # device: NVIDIA H100 80GB HBM3; compute capability 9.0; cuDNN 9.19.0; CUDA 13.0

with the `DeviceFacts` of the run (the simulated device names itself "SIMULATED ..."). Files
without it are timings of unknown origin; other comment lines before the header are notes.
"""

from __future__ import annotations

import re

from ucudnn.core.checks import shown
from ucudnn.core.facts import DeviceFacts, cuda_version_string, cudnn_version_string
from ucudnn.planner.files import field_errors

_DEVICE = "# device: "
# The name may hold anything printable; the fields after it are fixed, so it ends at the last
# three separators.
_FIELDS = re.compile(
    r"(?P<name>.+); compute capability (?P<capability>[0-9]+\.[0-9]+); "
    r"cuDNN (?P<cudnn>[0-9]{1,4})\.(?P<cudnn_minor>[0-9]{1,2})\.(?P<cudnn_patch>[0-9]{1,2}); "
    r"CUDA (?P<cuda>[0-9]{1,4})\.(?P<cuda_minor>[0-9]{1,2})"
)


def device_comment(facts: DeviceFacts) -> str:
    """The comment line (without its line end) that records `facts`."""
    return (
        f"{_DEVICE}{facts.device_name}; compute capability {facts.compute_capability}; "
        f"cuDNN {cudnn_version_string(facts.cudnn_version)}; "
        f"CUDA {cuda_version_string(facts.cuda_version)}"
    )


def device_of_comments(comments: list[tuple[int, str]]) -> DeviceFacts | None:
    """The device that a file's comment lines, each with its line number, record, or None.
    A FieldError at the line of a device comment that does not read as `device_comment`
    writes it, or of a second one."""
    found = None
    for line, comment in comments:
        if comment.startswith(_DEVICE):
            with field_errors(f"line {line}"):
                if found is not None:
                    raise ValueError("a second device comment; a file records one device")
                found = _parse(comment[len(_DEVICE) :])
    return found


def _parse(text: str) -> DeviceFacts:
    match = _FIELDS.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"the device comment {shown(text)} is not "
            "'NAME; compute capability X.Y; cuDNN X.Y.Z; CUDA X.Y'"
        )
    cudnn, cudnn_minor, cudnn_patch, cuda, cuda_minor = map(
        int, match.group("cudnn", "cudnn_minor", "cudnn_patch", "cuda", "cuda_minor")
    )
    return DeviceFacts(
        device_name=match["name"],
        compute_capability=match["capability"],
        # The inverses of cudnn_version_string and cuda_version_string.
        cudnn_version=cudnn * 10000 + cudnn_minor * 100 + cudnn_patch,
        cuda_version=cuda * 1000 + cuda_minor * 10,
    )
