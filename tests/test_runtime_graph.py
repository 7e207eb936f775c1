"""The graph-API builder (ucudnn.runtime.graph) against a recording stand-in for
`_cudnn.BackendDescriptor`: which descriptors it makes, which attributes it sets in which order
with which types and values, and what it makes of cuDNN's answers. No cuDNN call is made.

The stand-in is strict where cuDNN is: an attribute must belong to its descriptor's kind, values
must have the Python type of their attribute type, a descriptor set into another must be
finalized first, a finalized one takes no more attributes, and only a finalized one is read.

Golden files. `tests/data/graph-golden/<case>.json` holds the exact call sequence of
`operation_graph` for each case of `GOLDEN_CASES`. After a deliberate change, regenerate them
with

    UCUDNN_REGENERATE_GOLDEN=1 python -m pytest tests/test_runtime_graph.py -k golden

(the regenerating tests write the files and skip), then read `git diff tests/data/graph-golden`
before committing. The goldens are the code's own output, so the tests below the goldens check
the values that matter by hand (strides of known shapes, the roles' unique ids, the filter of
a grouped convolution, float64 scalars) independently of them, and every kind, attribute,
attribute type and enum name the goldens use is looked up in cuDNN's cudnn_graph.h.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from tests import reference_conv
from tests.test_native_cudnn import _CASES, _TOLERANCE, _from_device, _rounded, _to_device
from ucudnn._native import _cudnn
from ucudnn.core.engines import EngineConfig, parse_tag, refusal
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudnnError, cudnn_error_class
from ucudnn.runtime import graph

GOLDEN = Path(__file__).parent / "data" / "graph-golden"
REGENERATE = os.environ.get("UCUDNN_REGENERATE_GOLDEN", "") == "1"

NOT_SUPPORTED = 3000  # CUDNN_STATUS_NOT_SUPPORTED


def refused(call: str) -> CudnnError:
    return cudnn_error_class(NOT_SUPPORTED)(NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED", call)


# -- the recording stand-in -----------------------------------------------------------------

# Attribute prefix of each descriptor kind (the convolution operations abbreviate theirs).
PREFIXES = {
    "OPERATION_CONVOLUTION_BACKWARD_DATA": "OPERATION_CONVOLUTION_BWD_DATA_",
    "OPERATION_CONVOLUTION_BACKWARD_FILTER": "OPERATION_CONVOLUTION_BWD_FILTER_",
}
KINDS = (
    "TENSOR", "CONVOLUTION", "OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_BACKWARD_DATA",
    "OPERATION_CONVOLUTION_BACKWARD_FILTER", "OPERATIONGRAPH", "ENGINEHEUR", "ENGINECFG", "ENGINE",
    "KNOB_INFO", "KNOB_CHOICE", "EXECUTION_PLAN", "VARIANT_PACK",
)  # fmt: skip
DESC = "BACKEND_DESCRIPTOR"  # short, for the expected call lists
TEXT_TYPES = ("DATA_TYPE", "CONVOLUTION_MODE", "HEUR_MODE", "NUMERICAL_NOTE", "BEHAVIOR_NOTE")


class FakeHandle:
    """Stands for a `_cudnn.Handle`; recorded as "handle"."""


@dataclasses.dataclass(frozen=True)
class Offer:
    """One engine configuration the stand-in's heuristics return."""

    index: int
    knobs: tuple[tuple[int, int], ...] = ()
    numerical: tuple[str, ...] = ()
    behavior: tuple[str, ...] = ()
    workspace: int | Exception | None = 0  # None: cuDNN refuses to say; an exception: raised
    unreadable: bool = False  # reading ENGINECFG_ENGINE fails


class Recording:
    """What the code under test asked of the stand-in, and how the stand-in answers."""

    def __init__(self) -> None:
        self.calls: list[list[object]] = []
        self.made: Counter[str] = Counter()
        self.offers: dict[str, list[Offer]] = {}  # heuristics results by mode
        self.refused_modes: set[str] = set()
        self.plan_workspace = 4096
        self.executed: list[tuple[object, ...]] = []
        recording = self

        class Descriptor(FakeDescriptor):
            def __init__(self, kind: str) -> None:
                super().__init__(recording, kind)

        self.descriptor_class = Descriptor

    def execute_plan(self, *args: object) -> None:
        self.executed.append(args)

    def of_kind(self, kind: str) -> list[str]:
        """Names of the descriptors of `kind` the code made, in order."""
        return [c[0] for c in self.calls if c[1] == "create" and c[0].startswith(kind + "#")]

    def sets(self, name: str) -> dict[str, tuple[str, list[object]]]:
        """The attributes set on descriptor `name`: attribute -> (attr_type, values)."""
        return {c[2]: (c[3], c[4]) for c in self.calls if c[0] == name and c[1] == "set"}  # type: ignore[misc]


class FakeDescriptor:
    def __init__(
        self, recording: Recording, kind: str, name: str = "", answers: dict | None = None
    ):
        if kind not in KINDS:
            raise ValueError(f"unknown descriptor kind {kind!r}")
        self.recording = recording
        self.kind = kind
        self.finalized = answers is not None  # children cuDNN hands back come finalized
        self.answers: dict[str, object] = dict(answers or {})
        self.values: dict[str, list[object]] = {}
        if not name:
            recording.made[kind] += 1
            name = f"{kind}#{recording.made[kind]}"
            recording.calls.append([name, "create"])
        self.name = name

    def _check_value(self, attr_type: str, value: object) -> object:
        expected: type | tuple[type, ...] = {
            "INT64": int, "KNOB_TYPE": int, "FLOAT": float, "DOUBLE": float, "BOOLEAN": bool,
            "HANDLE": FakeHandle, "BACKEND_DESCRIPTOR": FakeDescriptor,
        }.get(attr_type, str)  # fmt: skip
        if attr_type not in (*TEXT_TYPES, "INT64", "KNOB_TYPE", "FLOAT", "DOUBLE", "BOOLEAN",
                             "HANDLE", "BACKEND_DESCRIPTOR"):  # fmt: skip
            raise ValueError(f"unknown attribute type {attr_type!r}")
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise TypeError(f"{attr_type} value {value!r} of {self.name} is a {type(value)}")
        if isinstance(value, FakeDescriptor):
            assert value.finalized, f"{value.name} set into {self.name} before it was finalized"
            return value.name
        return "handle" if isinstance(value, FakeHandle) else value

    def set(self, attribute: str, attr_type: str, values: Sequence[object]) -> None:
        assert not self.finalized, f"{attribute} set on {self.name} after finalize"
        assert attribute.startswith(PREFIXES.get(self.kind, self.kind + "_")), (
            f"{attribute} is not an attribute of {self.kind}"
        )
        assert isinstance(values, list | tuple) and values, f"{attribute}: values {values!r}"
        recorded = [self._check_value(attr_type, v) for v in values]
        self.values[attribute] = list(values)
        self.recording.calls.append([self.name, "set", attribute, attr_type, recorded])

    def finalize(self) -> None:
        assert not self.finalized, f"{self.name} finalized twice"
        self.recording.calls.append([self.name, "finalize"])
        if self.kind == "ENGINEHEUR":
            mode = self.values["ENGINEHEUR_MODE"][0]
            assert isinstance(mode, str)
            if mode in self.recording.refused_modes:
                raise refused("cudnnBackendFinalize(ENGINEHEUR)")
            self.answers["ENGINEHEUR_RESULTS"] = [
                self._offered(mode, rank, offer)
                for rank, offer in enumerate(self.recording.offers.get(mode, []))
            ]
        if self.kind == "EXECUTION_PLAN":
            self.answers["EXECUTION_PLAN_WORKSPACE_SIZE"] = [self.recording.plan_workspace]
        self.finalized = True

    def _offered(self, mode: str, rank: int, offer: Offer) -> FakeDescriptor:
        """The finalized ENGINECFG (with its ENGINE and KNOB_CHOICEs) cuDNN returns."""
        name = f"ENGINECFG@{mode}{rank}"

        def child(kind: str, suffix: str, answers: dict[str, object]) -> FakeDescriptor:
            return FakeDescriptor(self.recording, kind, name + suffix, answers)

        engine = child(
            "ENGINE",
            "/ENGINE",
            {
                "ENGINE_GLOBAL_INDEX": [offer.index],
                "ENGINE_NUMERICAL_NOTE": list(offer.numerical),
                "ENGINE_BEHAVIOR_NOTE": list(offer.behavior),
            },
        )
        knobs = [
            child(
                "KNOB_CHOICE",
                f"/KNOB{i}",
                {"KNOB_CHOICE_KNOB_TYPE": [knob], "KNOB_CHOICE_KNOB_VALUE": [value]},
            )
            for i, (knob, value) in enumerate(offer.knobs)
        ]
        missing = refused("cudnnBackendGetAttribute(ENGINECFG)")
        workspace: object = [offer.workspace]
        if offer.workspace is None or isinstance(offer.workspace, Exception):
            workspace = offer.workspace or missing
        return child(
            "ENGINECFG",
            "",
            {
                "ENGINECFG_ENGINE": missing if offer.unreadable else [engine],
                "ENGINECFG_KNOB_CHOICES": knobs,
                "ENGINECFG_WORKSPACE_SIZE": workspace,
            },
        )

    def get(
        self, attribute: str, attr_type: str, count: int | None = None, kind: str | None = None
    ) -> list[object]:
        assert self.finalized, f"{attribute} read from {self.name} before finalize"
        assert (kind is not None) == (attr_type == "BACKEND_DESCRIPTOR"), (attribute, kind)
        self.recording.calls.append([self.name, "get", attribute, attr_type, count, kind])
        answer = self.answers[attribute]
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, list)
        for value in answer:
            assert not isinstance(value, FakeDescriptor) or value.kind == kind, (attribute, kind)
        return answer if count is None else answer[:count]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recording]:
    recording = Recording()
    monkeypatch.setattr(
        graph._cudnn, "BackendDescriptor", recording.descriptor_class, raising=False
    )
    monkeypatch.setattr(graph._cudnn, "execute_plan", recording.execute_plan, raising=False)
    yield recording


HANDLE = FakeHandle()


def problem(**fields: object) -> ConvProblem:
    """A small 2-D problem; `fields` override ConvProblem.create's arguments."""
    args: dict[str, object] = {
        "batch": 4, "in_channels": 6, "out_channels": 8, "input_size": (9, 11),
        "filter_size": 3, "padding": 1,
    }  # fmt: skip
    args.update(fields)
    return ConvProblem.create(**args)  # type: ignore[arg-type]


def build(
    fake: Recording, p: ConvProblem, kernel: str, alignments=(16, 16, 16), alpha=1.0, beta=0.0
):
    return graph.operation_graph(HANDLE, p, kernel, alignments, alpha, beta)


def tensors_by_uid(fake: Recording) -> dict[int, dict[str, tuple[str, list[object]]]]:
    found = {}
    for name in fake.of_kind("TENSOR"):
        attributes = fake.sets(name)
        found[attributes["TENSOR_UNIQUE_ID"][1][0]] = attributes
    return found  # type: ignore[return-value]


def operation(fake: Recording) -> dict[str, tuple[str, list[object]]]:
    (name,) = [
        n for n in (c[0] for c in fake.calls if c[1] == "create") if n.startswith("OPERATION_")
    ]
    return fake.sets(name)


# -- golden call sequences ------------------------------------------------------------------

GOLDEN_CASES: dict[str, tuple[dict[str, object], str, tuple[int, int, int], float, float]] = {
    # name: (problem fields, kernel, alignments, alpha, beta)
    "fprop-nchw-2d-fp32": (
        {"stride": (2, 1), "dilation": (1, 2), "padding": (1, 2)}, "forward", (16, 16, 16), 1.0, 0.0
    ),
    "fprop-nhwc-2d-fp16": ({"layout": "NHWC", "dtype": "float16"}, "forward", (8, 16, 2), 1.0, 0.0),
    "fprop-nchw-micro-batch-strided-fp32": (
        # A micro-batch of 2 in a batch whose samples are 1000 elements apart.
        {"batch": 2, "x_strides": (1000, 99, 11, 1)}, "forward", (4, 16, 16), 1.0, 0.0
    ),
    "fprop-ncdhw-3d-fp32": (
        {"input_size": (5, 6, 7), "filter_size": (1, 3, 3), "padding": (0, 1, 1), "dilation": 2},
        "forward", (16, 16, 16), 1.0, 0.0,
    ),
    "fprop-nchw-groups-fp16": (
        {"in_channels": 8, "out_channels": 12, "groups": 4, "dtype": "float16"},
        "forward", (16, 16, 16), 1.0, 0.0,
    ),
    "fprop-nchw-fp64-convolution": (
        {"dtype": "float64", "mode": "convolution"}, "forward", (16, 16, 16), 0.5, 0.25
    ),
    "dgrad-nchw-2d-fp32": ({"stride": 2}, "backward_data", (16, 16, 16), 1.0, 0.0),
    "dgrad-nhwc-2d-fp16": (
        {"layout": "NHWC", "dtype": "float16", "stride": 2}, "backward_data", (2, 16, 8), 1.0, 0.0
    ),
    "dgrad-nhwc-depthwise-nchw-filter-fp32": (
        {"layout": "NHWC", "filter_layout": "NCHW", "out_channels": 6, "groups": 6},
        "backward_data", (16, 16, 16), 1.0, 0.0,
    ),
    "dgrad-ndhwc-3d-bf16": (
        {"input_size": (4, 5, 6), "layout": "NDHWC", "dtype": "bfloat16"},
        "backward_data", (16, 16, 16), 1.0, 0.0,
    ),
    "wgrad-nchw-2d-bf16-beta1": (
        {"dtype": "bfloat16"}, "backward_filter", (16, 16, 16), 1.0, 1.0
    ),
    "wgrad-nhwc-2d-fp32": ({"layout": "NHWC"}, "backward_filter", (4, 16, 4), 1.0, 0.0),
    "wgrad-ndhwc-3d-fp16": (
        {"input_size": (4, 5, 6), "filter_size": 3, "layout": "NDHWC", "dtype": "float16"},
        "backward_filter", (16, 16, 16), 1.0, 0.0,
    ),
    "wgrad-nhwc-fp64-beta1": (
        {"layout": "NHWC", "dtype": "float64"}, "backward_filter", (16, 16, 16), 1.0, 1.0
    ),
}  # fmt: skip


def golden_text(case: dict[str, object]) -> str:
    """A case as its golden file holds it: one call per line, so diffs read call by call."""
    calls = ",\n".join("    " + json.dumps(call) for call in case["calls"])  # type: ignore[attr-defined]
    head = json.dumps({k: v for k, v in case.items() if k != "calls"}, sort_keys=True)
    return f'{head[:-1]}, "calls": [\n{calls}\n]}}\n'


@pytest.mark.parametrize("name", list(GOLDEN_CASES))
def test_golden_call_sequences(fake: Recording, name: str) -> None:
    fields, kernel, alignments, alpha, beta = GOLDEN_CASES[name]
    p = problem(**fields)
    built = build(fake, p, kernel, alignments, alpha, beta)
    assert built.name == "OPERATIONGRAPH#1" and built.finalized
    case = {
        "problem": p.to_dict(), "kernel": kernel, "alignments": list(alignments),
        "alpha": alpha, "beta": beta, "calls": fake.calls,
    }  # fmt: skip
    text = golden_text(json.loads(json.dumps(case)))
    path = GOLDEN / f"{name}.json"
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        pytest.skip(f"regenerated {path.name}")
    expected = json.loads(path.read_text())
    assert expected["problem"] == json.loads(json.dumps(p.to_dict())), (
        "the case changed: regenerate"
    )
    assert json.loads(text)["calls"] == expected["calls"]
    assert text == path.read_text()  # ints stay ints and floats floats


def test_every_case_has_its_golden_file_and_no_other() -> None:
    if REGENERATE:
        pytest.skip("regenerating")
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(GOLDEN_CASES)


def cudnn_header() -> str:
    nvidia = pytest.importorskip(
        "nvidia.cudnn", reason="the cuDNN wheel's headers are not installed"
    )
    for root in nvidia.__path__:
        path = Path(root) / "include" / "cudnn_graph.h"
        if path.is_file():
            return path.read_text()
    pytest.skip("cudnn_graph.h is not in the cuDNN wheel")


def test_every_name_the_goldens_use_is_in_cudnn_graph_h() -> None:
    header = cudnn_header()
    # How each name appears in the header, by what it is.
    enum_prefixes = {
        "DATA_TYPE": "CUDNN_DATA_", "CONVOLUTION_MODE": "CUDNN_", "HEUR_MODE": "CUDNN_HEUR_MODE_",
    }  # fmt: skip
    names = set()
    for path in GOLDEN.glob("*.json"):
        for call in json.loads(path.read_text())["calls"]:
            if call[1] == "create":
                names.add(f"CUDNN_BACKEND_{call[0].split('#')[0]}_DESCRIPTOR")
            if call[1] == "set":
                names |= {f"CUDNN_ATTR_{call[2]}", f"CUDNN_TYPE_{call[3]}"}
                if call[3] in enum_prefixes:
                    names |= {enum_prefixes[call[3]] + value for value in call[4]}
    names |= {f"CUDNN_HEUR_MODE_{mode}" for mode in graph.HEURISTIC_MODES}
    assert {"CUDNN_DATA_BFLOAT16", "CUDNN_TYPE_DOUBLE", "CUDNN_CONVOLUTION"} <= names
    assert len(names) == 55  # every kind, attribute, type and enum name of the goldens
    missing = sorted(n for n in names if not re.search(rf"\b{n}\b", header))
    assert not missing


def test_the_other_calls_use_names_cudnn_graph_h_has(fake: Recording) -> None:
    header = cudnn_header()
    fake.offers["A"] = [Offer(62, ((2, 0),), ("TENSOR_CORE",), ("RUNTIME_COMPILATION",))]
    op_graph = build(fake, problem(), "forward")
    choice = graph.heuristic_choices(op_graph)[0]
    graph.build_plan(HANDLE, graph.engine_config(op_graph, choice.config), choice.config.tag)
    names = set()
    for call in fake.calls:
        if call[1] in ("set", "get"):
            names |= {f"CUDNN_ATTR_{call[2]}", f"CUDNN_TYPE_{call[3]}"}
        if call[1] == "get" and call[5]:
            names.add(f"CUDNN_BACKEND_{call[5]}_DESCRIPTOR")
    names |= {"CUDNN_NUMERICAL_NOTE_TENSOR_CORE", "CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION"}
    missing = sorted(n for n in names if not re.search(rf"\b{n}\b", header))
    assert not missing


def test_the_library_takes_every_attribute_the_goldens_set() -> None:
    """Replays each golden on the loaded `_cudnn` (up to the operation graph, which needs a
    Handle): cuDNN's SetAttribute refuses an attribute of another kind, a wrong type or a
    bad value. Without a driver, cuDNN 9.28's finalize fails loading a sub-library; that status
    alone is let through (every set still runs)."""
    if not hasattr(_cudnn, "BackendDescriptor"):
        pytest.skip("this _cudnn has no BackendDescriptor")
    no_driver = []
    for path in sorted(GOLDEN.glob("*.json")):
        made: dict[str, _cudnn.BackendDescriptor] = {}
        for name, what, *rest in json.loads(path.read_text())["calls"]:
            if name.startswith("OPERATIONGRAPH"):
                break
            if what == "create":
                made[name] = _cudnn.BackendDescriptor(name.split("#")[0])
            elif what == "set":
                attribute, attr_type, values = rest
                if attr_type == "BACKEND_DESCRIPTOR":
                    values = [made[value] for value in values]
                made[name].set(attribute, attr_type, values)
            else:
                try:
                    made[name].finalize()
                except CudnnError as exc:
                    if exc.status_name != "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED":
                        raise
                    no_driver.append(name)
        assert len(made) == 5, path.name
    if no_driver:
        pytest.skip(
            f"cuDNN set every attribute; {len(no_driver)} finalize calls failed with "
            "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED (no driver here)"
        )


# -- what the sequences hold, by hand -------------------------------------------------------


def test_nhwc_tensors_have_channels_last_strides_in_logical_order(fake: Recording) -> None:
    p = problem(batch=2, in_channels=3, out_channels=6, input_size=(4, 5), layout="NHWC")
    build(fake, p, "forward", alignments=(4, 8, 16))
    x, w, y = (tensors_by_uid(fake)[uid] for uid in (1, 2, 3))
    # Logical (N, C, H, W) dims; NHWC strides: C is innermost, W steps over C, H over W * C.
    assert x["TENSOR_DIMENSIONS"] == ("INT64", [2, 3, 4, 5])
    assert x["TENSOR_STRIDES"] == ("INT64", [60, 1, 15, 3])
    assert w["TENSOR_DIMENSIONS"] == ("INT64", [6, 3, 3, 3])
    assert w["TENSOR_STRIDES"] == ("INT64", [27, 1, 9, 3])
    assert y["TENSOR_DIMENSIONS"] == ("INT64", [2, 6, 4, 5])
    assert y["TENSOR_STRIDES"] == ("INT64", [120, 1, 30, 6])
    assert [t["TENSOR_BYTE_ALIGNMENT"] for t in (x, w, y)] == [("INT64", [a]) for a in (4, 8, 16)]
    assert [t["TENSOR_IS_VIRTUAL"] for t in (x, w, y)] == [("BOOLEAN", [False])] * 3
    assert [t["TENSOR_DATA_TYPE"] for t in (x, w, y)] == [("DATA_TYPE", ["FLOAT"])] * 3


def test_a_micro_batch_keeps_the_whole_batchs_strides(fake: Recording) -> None:
    whole = problem(batch=8, in_channels=3, out_channels=2, input_size=(4, 4), padding=0)
    build(fake, whole.with_batch(2), "backward_data")
    tensors = tensors_by_uid(fake)
    assert tensors[1]["TENSOR_DIMENSIONS"] == ("INT64", [2, 3, 4, 4])
    assert tensors[1]["TENSOR_STRIDES"] == ("INT64", [48, 16, 4, 1])
    assert tensors[3]["TENSOR_DIMENSIONS"] == ("INT64", [2, 2, 2, 2])
    assert tensors[3]["TENSOR_STRIDES"] == ("INT64", [8, 4, 2, 1])


def test_a_grouped_filter_is_a_plain_tensor_of_its_channels_per_group(fake: Recording) -> None:
    build(fake, problem(in_channels=8, out_channels=12, groups=4), "backward_filter")
    w = tensors_by_uid(fake)[2]
    assert w["TENSOR_DIMENSIONS"] == ("INT64", [12, 2, 3, 3])
    assert w["TENSOR_STRIDES"] == ("INT64", [18, 9, 3, 1])
    assert tensors_by_uid(fake)[1]["TENSOR_DIMENSIONS"] == ("INT64", [4, 8, 9, 11])
    assert not [c for c in fake.calls if "GROUP" in str(c)]


@pytest.mark.parametrize(
    ("kernel", "kind", "roles"),
    [
        ("forward", "OPERATION_CONVOLUTION_FORWARD", {"X": 1, "W": 2, "Y": 3}),
        ("backward_data", "OPERATION_CONVOLUTION_BACKWARD_DATA", {"DX": 1, "W": 2, "DY": 3}),
        ("backward_filter", "OPERATION_CONVOLUTION_BACKWARD_FILTER", {"X": 1, "DW": 2, "DY": 3}),
    ],
)
def test_each_kernel_binds_x_w_y_to_its_roles(fake: Recording, kernel, kind, roles) -> None:
    build(fake, problem(), kernel)
    uid_of = {name: attributes["TENSOR_UNIQUE_ID"][1][0] for name, attributes in
              ((n, fake.sets(n)) for n in fake.of_kind("TENSOR"))}  # fmt: skip
    (op_name,) = fake.of_kind(kind)
    attributes = fake.sets(op_name)
    prefix = kind.replace("BACKWARD_", "BWD_") + "_"
    for role, uid in roles.items():
        attr_type, (tensor,) = attributes[prefix + role]
        assert attr_type == "BACKEND_DESCRIPTOR" and uid_of[tensor] == uid
    assert attributes[prefix + "CONV_DESC"] == ("BACKEND_DESCRIPTOR", ["CONVOLUTION#1"])
    assert set(attributes) == {prefix + r for r in (*roles, "CONV_DESC", "ALPHA", "BETA")}
    assert fake.sets("OPERATIONGRAPH#1") == {
        "OPERATIONGRAPH_HANDLE": ("HANDLE", ["handle"]),
        "OPERATIONGRAPH_OPS": ("BACKEND_DESCRIPTOR", [op_name]),
    }


def test_the_convolution_pads_both_ends_and_takes_strides_and_dilations(fake: Recording) -> None:
    p = problem(input_size=(6, 9, 12), filter_size=(1, 3, 5), padding=(0, 1, 2), stride=(1, 2, 3),
                dilation=(2, 1, 1), mode="convolution")  # fmt: skip
    build(fake, p, "forward")
    assert fake.sets("CONVOLUTION#1") == {
        "CONVOLUTION_COMP_TYPE": ("DATA_TYPE", ["FLOAT"]),
        "CONVOLUTION_CONV_MODE": ("CONVOLUTION_MODE", ["CONVOLUTION"]),
        "CONVOLUTION_SPATIAL_DIMS": ("INT64", [3]),
        "CONVOLUTION_PRE_PADDINGS": ("INT64", [0, 1, 2]),
        "CONVOLUTION_POST_PADDINGS": ("INT64", [0, 1, 2]),
        "CONVOLUTION_DILATIONS": ("INT64", [2, 1, 1]),
        "CONVOLUTION_FILTER_STRIDES": ("INT64", [1, 2, 3]),
    }


@pytest.mark.parametrize(
    ("dtype", "data_type", "scalar"),
    [("float64", "DOUBLE", "DOUBLE"), ("float32", "FLOAT", "FLOAT"),
     ("float16", "HALF", "FLOAT"), ("bfloat16", "BFLOAT16", "FLOAT")],
)  # fmt: skip
def test_data_compute_and_scalar_types_follow_the_dtype(fake: Recording, dtype, data_type, scalar):
    build(fake, problem(dtype=dtype), "backward_filter", alpha=0.5, beta=1)
    assert tensors_by_uid(fake)[2]["TENSOR_DATA_TYPE"] == ("DATA_TYPE", [data_type])
    compute = "DOUBLE" if dtype == "float64" else "FLOAT"
    assert fake.sets("CONVOLUTION#1")["CONVOLUTION_COMP_TYPE"] == ("DATA_TYPE", [compute])
    attributes = operation(fake)
    assert attributes["OPERATION_CONVOLUTION_BWD_FILTER_ALPHA"] == (scalar, [0.5])
    beta = attributes["OPERATION_CONVOLUTION_BWD_FILTER_BETA"]
    assert beta == (scalar, [1.0]) and type(beta[1][0]) is float


def test_float16_computed_in_float16_says_so(fake: Recording) -> None:
    build(fake, problem(dtype="float16", compute_dtype="float16"), "forward")
    assert fake.sets("CONVOLUTION#1")["CONVOLUTION_COMP_TYPE"] == ("DATA_TYPE", ["HALF"])


def test_every_descriptor_is_finalized_before_use_and_in_order(fake: Recording) -> None:
    build(fake, problem(), "forward")
    finalized = [c[0] for c in fake.calls if c[1] == "finalize"]
    assert finalized == [
        "TENSOR#1", "TENSOR#2", "TENSOR#3", "CONVOLUTION#1", "OPERATION_CONVOLUTION_FORWARD#1",
        "OPERATIONGRAPH#1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kernel", "alignments", "error", "match"),
    [
        ("sideways", (16, 16, 16), ValueError, "unknown kernel"),
        ("forward", (16, 16), ValueError, "alignments must be the"),
        ("forward", (16, 3, 16), ValueError, "powers of two"),
        ("forward", (16, 0, 16), ValueError, "alignment"),
        ("forward", "abc", ValueError, "alignments must be the"),
        ("forward", (16, 16.0, 16), TypeError, "alignment"),
    ],
)
def test_bad_arguments_are_refused_before_any_descriptor(fake, kernel, alignments, error, match):
    with pytest.raises(error, match=match):
        build(fake, problem(), kernel, alignments)
    assert not fake.calls


# -- alignment ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [(0, 16), (1, 1), (6, 2), (24, 8), (48, 16), (2**40, 16), (0x7F00_0000_0104, 4)],
)
def test_alignment_is_the_largest_power_of_two_dividing_up_to_16(pointer, expected) -> None:
    assert graph.alignment(pointer) == expected


@pytest.mark.parametrize(
    ("pointer", "error"), [(-8, ValueError), (8.0, TypeError), (True, TypeError)]
)
def test_alignment_refuses_what_is_no_pointer(pointer, error) -> None:
    with pytest.raises(error):
        graph.alignment(pointer)


# -- heuristics -----------------------------------------------------------------------------


def test_heuristics_are_asked_in_mode_order_and_read_as_cudnn_answers(fake: Recording) -> None:
    fake.offers["A"] = [
        Offer(62, ((25, 1), (2, 0)), ("TENSOR_CORE",), ("RUNTIME_COMPILATION",), 1024)
    ]
    op_graph = build(fake, problem(), "forward")
    start = len(fake.calls)
    (choice,) = graph.heuristic_choices(op_graph)
    assert fake.calls[start:] == [
        ["ENGINEHEUR#1", "create"],
        ["ENGINEHEUR#1", "set", "ENGINEHEUR_OPERATION_GRAPH", DESC, ["OPERATIONGRAPH#1"]],
        ["ENGINEHEUR#1", "set", "ENGINEHEUR_MODE", "HEUR_MODE", ["A"]],
        ["ENGINEHEUR#1", "finalize"],
        ["ENGINEHEUR#1", "get", "ENGINEHEUR_RESULTS", "BACKEND_DESCRIPTOR", None, "ENGINECFG"],
        ["ENGINECFG@A0", "get", "ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", 1, "ENGINE"],
        ["ENGINECFG@A0/ENGINE", "get", "ENGINE_GLOBAL_INDEX", "INT64", 1, None],
        # Lists cuDNN counts no answer for: asked for more than there are types.
        ["ENGINECFG@A0/ENGINE", "get", "ENGINE_NUMERICAL_NOTE", "NUMERICAL_NOTE", 32, None],
        ["ENGINECFG@A0/ENGINE", "get", "ENGINE_BEHAVIOR_NOTE", "BEHAVIOR_NOTE", 32, None],
        ["ENGINECFG@A0", "get", "ENGINECFG_KNOB_CHOICES", DESC, 64, "KNOB_CHOICE"],
        ["ENGINECFG@A0/KNOB0", "get", "KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", 1, None],
        ["ENGINECFG@A0/KNOB0", "get", "KNOB_CHOICE_KNOB_VALUE", "INT64", 1, None],
        ["ENGINECFG@A0/KNOB1", "get", "KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", 1, None],
        ["ENGINECFG@A0/KNOB1", "get", "KNOB_CHOICE_KNOB_VALUE", "INT64", 1, None],
        ["ENGINECFG@A0", "get", "ENGINECFG_WORKSPACE_SIZE", "INT64", 1, None],
        ["ENGINEHEUR#2", "create"],
        ["ENGINEHEUR#2", "set", "ENGINEHEUR_OPERATION_GRAPH", DESC, ["OPERATIONGRAPH#1"]],
        ["ENGINEHEUR#2", "set", "ENGINEHEUR_MODE", "HEUR_MODE", ["FALLBACK"]],
        ["ENGINEHEUR#2", "finalize"],
        ["ENGINEHEUR#2", "get", "ENGINEHEUR_RESULTS", "BACKEND_DESCRIPTOR", None, "ENGINECFG"],
    ]  # fmt: skip
    assert choice.config == EngineConfig(62, ((2, 0), (25, 1)))
    assert choice.config.tag == "eng62_k2=0_k25=1"
    assert choice.notes == ("TENSOR_CORE", "RUNTIME_COMPILATION")
    assert choice.workspace_bytes == 1024
    assert choice.descriptor.name == "ENGINECFG@A0"


def test_heuristics_keep_rank_order_and_the_first_of_each_tag(fake, caplog) -> None:
    fake.offers["A"] = [
        Offer(62, ((2, 0), (13, 1)), workspace=100),
        Offer(58, workspace=None),  # cuDNN does not say its workspace before a plan
        Offer(62, ((13, 1), (2, 0)), workspace=999),  # the first again, knobs in another order
        Offer(70, ((12, -1),), unreadable=True),
        Offer(63, ((12, -1),), ("NONDETERMINISTIC",)),
    ]
    # cuDNN 9.1: the native module does not know the workspace attribute's name.
    unknown = ValueError("unknown backend attribute 'ENGINECFG_WORKSPACE_SIZE'")
    fake.offers["FALLBACK"] = [Offer(58), Offer(1, workspace=unknown), Offer(62, ((2, 0), (13, 1)))]
    with caplog.at_level(logging.DEBUG, logger=graph.__name__):
        choices = graph.heuristic_choices(build(fake, problem(), "forward"))
    assert [c.config.tag for c in choices] == ["eng62_k2=0_k13=1", "eng58", "eng63_k12=-1", "eng1"]
    assert [c.workspace_bytes for c in choices] == [100, None, 0, None]
    assert [c.descriptor.name for c in choices] == [
        "ENGINECFG@A0",
        "ENGINECFG@A1",
        "ENGINECFG@A4",
        "ENGINECFG@FALLBACK1",
    ]
    assert choices[2].notes == ("NONDETERMINISTIC",)
    assert "mode A, result 3 could not be read" in caplog.text


def test_a_mode_cudnn_refuses_is_left_out_unless_it_refuses_all(fake: Recording) -> None:
    fake.offers["FALLBACK"] = [Offer(0)]
    fake.refused_modes = {"A"}
    op_graph = build(fake, problem(), "forward")
    assert [c.config.tag for c in graph.heuristic_choices(op_graph)] == ["eng0"]
    fake.refused_modes = {"A", "FALLBACK"}
    with pytest.raises(CudnnError, match=r"cudnnBackendFinalize\(ENGINEHEUR\)"):
        graph.heuristic_choices(op_graph)
    assert graph.heuristic_choices(op_graph, ("B",)) == []  # answered, with nothing


@pytest.mark.parametrize("modes", ["A", ()])
def test_heuristics_modes_must_be_a_sequence_of_names(fake: Recording, modes) -> None:
    with pytest.raises(ValueError, match="modes"):
        graph.heuristic_choices(build(fake, problem(), "forward"), modes)


# -- engine configurations and plans --------------------------------------------------------


def test_an_engine_config_is_rebuilt_from_a_tag_with_sorted_knobs(fake: Recording) -> None:
    op_graph = build(fake, problem(), "forward")
    start = len(fake.calls)
    config = graph.engine_config(op_graph, parse_tag("eng62_k13=1_k2=0_k12=-1"))
    assert config.name == "ENGINECFG#1" and config.finalized
    knob_calls = [
        call
        for i, (knob, value) in enumerate([(2, 0), (12, -1), (13, 1)], start=1)
        for call in (
            [f"KNOB_CHOICE#{i}", "create"],
            [f"KNOB_CHOICE#{i}", "set", "KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE", [knob]],
            [f"KNOB_CHOICE#{i}", "set", "KNOB_CHOICE_KNOB_VALUE", "INT64", [value]],
            [f"KNOB_CHOICE#{i}", "finalize"],
        )
    ]
    assert fake.calls[start:] == [
        ["ENGINE#1", "create"],
        ["ENGINE#1", "set", "ENGINE_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", ["OPERATIONGRAPH#1"]],
        ["ENGINE#1", "set", "ENGINE_GLOBAL_INDEX", "INT64", [62]],
        ["ENGINE#1", "finalize"],
        *knob_calls,
        ["ENGINECFG#1", "create"],
        ["ENGINECFG#1", "set", "ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", ["ENGINE#1"]],
        ["ENGINECFG#1", "set", "ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR",
         ["KNOB_CHOICE#1", "KNOB_CHOICE#2", "KNOB_CHOICE#3"]],
        ["ENGINECFG#1", "finalize"],
    ]  # fmt: skip


def test_an_engine_without_knobs_sets_no_knob_choices(fake: Recording) -> None:
    graph.engine_config(build(fake, problem(), "forward"), parse_tag("eng7"))
    assert fake.sets("ENGINECFG#1") == {"ENGINECFG_ENGINE": ("BACKEND_DESCRIPTOR", ["ENGINE#1"])}
    assert not fake.of_kind("KNOB_CHOICE")


def test_a_plan_is_built_from_a_config_and_reads_its_workspace(fake: Recording) -> None:
    fake.plan_workspace = 12345
    config = graph.engine_config(build(fake, problem(), "forward"), parse_tag("eng0"))
    start = len(fake.calls)
    plan = graph.build_plan(HANDLE, config, "eng0")
    assert fake.calls[start:] == [
        ["EXECUTION_PLAN#1", "create"],
        ["EXECUTION_PLAN#1", "set", "EXECUTION_PLAN_HANDLE", "HANDLE", ["handle"]],
        ["EXECUTION_PLAN#1", "set", "EXECUTION_PLAN_ENGINE_CONFIG", DESC, ["ENGINECFG#1"]],
        ["EXECUTION_PLAN#1", "finalize"],
        ["EXECUTION_PLAN#1", "get", "EXECUTION_PLAN_WORKSPACE_SIZE", "INT64", 1, None],
    ]  # fmt: skip
    assert (plan.descriptor.name, plan.workspace_bytes, plan.tag) == (
        "EXECUTION_PLAN#1",
        12345,
        "eng0",
    )


def test_a_heuristics_config_builds_a_plan_as_it_is(fake: Recording) -> None:
    fake.offers["A"] = [Offer(5)]
    (choice,) = graph.heuristic_choices(build(fake, problem(), "forward"))
    plan = graph.build_plan(HANDLE, choice.descriptor, choice.config.tag)
    assert fake.sets(plan.descriptor.name)["EXECUTION_PLAN_ENGINE_CONFIG"] == (
        "BACKEND_DESCRIPTOR", ["ENGINECFG@A0"]
    )  # fmt: skip


@pytest.mark.parametrize("kernel", ["forward", "backward_data", "backward_filter"])
def test_a_plan_runs_on_x_w_y_by_unique_id_whatever_the_kernel(fake: Recording, kernel) -> None:
    config = graph.engine_config(build(fake, problem(), kernel), parse_tag("eng0"))
    plan = graph.build_plan(HANDLE, config, "eng0")
    graph.run_plan(HANDLE, plan, 0x1000, 0x2000, 0x3000, 0x4000)
    assert fake.executed == [(HANDLE, plan.descriptor, (1, 2, 3), (0x1000, 0x2000, 0x3000), 0x4000)]
    assert graph.UIDS == {"x": 1, "w": 2, "y": 3}


# -- GraphPlans -----------------------------------------------------------------------------


def test_graph_plans_build_once_per_key(fake: Recording) -> None:
    plans = graph.GraphPlans()
    p, config = problem(), parse_tag("eng62_k2=0")
    first = plans.plan(HANDLE, p, "forward", config, (16, 16, 16), 1.0, 0.0)
    assert (
        plans.plan(HANDLE, problem(), "forward", parse_tag("eng62_k2=0"), (16, 16, 16), 1, 0)
        is first
    )
    assert len(fake.of_kind("EXECUTION_PLAN")) == 1 and len(plans) == 1
    assert first.tag == "eng62_k2=0"
    assert fake.sets("ENGINE#1")["ENGINE_GLOBAL_INDEX"] == ("INT64", [62])
    others = [
        (p, "forward", config, (8, 16, 16), 1.0, 0.0),  # another alignment
        (p, "forward", config, (16, 16, 16), 1.0, 1.0),  # another beta
        (p, "forward", config, (16, 16, 16), 2.0, 0.0),  # another alpha
        (p, "backward_data", config, (16, 16, 16), 1.0, 0.0),
        (p, "forward", parse_tag("eng62_k2=1"), (16, 16, 16), 1.0, 0.0),
        (p.with_batch(2), "forward", config, (16, 16, 16), 1.0, 0.0),  # another micro-batch
    ]
    built = [plans.plan(HANDLE, *args) for args in others]
    assert len({id(plan) for plan in [first, *built]}) == 7 and len(plans) == 7
    assert len(fake.of_kind("EXECUTION_PLAN")) == 7
    beta1 = fake.sets("OPERATION_CONVOLUTION_FORWARD#3")
    assert beta1["OPERATION_CONVOLUTION_FORWARD_BETA"] == ("FLOAT", [1.0])
    assert fake.sets("TENSOR#4")["TENSOR_BYTE_ALIGNMENT"] == ("INT64", [8])  # x of the 2nd graph


def test_graph_plans_drop_the_least_recently_used_beyond_their_bound(fake: Recording) -> None:
    plans = graph.GraphPlans(max_entries=2)
    p = problem()

    def plan(index: int) -> graph.GraphPlan:
        return plans.plan(HANDLE, p, "forward", EngineConfig(index), (16, 16, 16), 1.0, 0.0)

    a, b = plan(0), plan(1)
    assert plan(0) is a  # now b is the least recently used
    plan(2)
    assert len(plans) == 2 and len(fake.of_kind("EXECUTION_PLAN")) == 3
    assert plan(0) is a
    assert plan(1) is not b  # rebuilt
    assert len(fake.of_kind("EXECUTION_PLAN")) == 4
    plans.clear()
    assert len(plans) == 0
    assert plan(1) is not b and len(fake.of_kind("EXECUTION_PLAN")) == 5


def test_graph_plans_have_a_bound_of_at_least_one() -> None:
    assert graph.GraphPlans().max_entries == graph.MAX_PLANS
    with pytest.raises(ValueError, match="max_entries"):
        graph.GraphPlans(max_entries=0)


def test_a_failed_build_is_not_cached(fake: Recording, monkeypatch: pytest.MonkeyPatch) -> None:
    plans = graph.GraphPlans()
    calls = []

    def failing(handle, config_descriptor, tag):
        calls.append(tag)
        raise refused("cudnnBackendFinalize(EXECUTION_PLAN)")

    monkeypatch.setattr(graph, "build_plan", failing)
    for _ in range(2):
        with pytest.raises(CudnnError):
            plans.plan(HANDLE, problem(), "forward", EngineConfig(3), (16, 16, 16), 1.0, 0.0)
    assert calls == ["eng3", "eng3"] and len(plans) == 0


# -- on a GPU (or the simulated device) -----------------------------------------------------

# Which of x, w, y each kernel writes.
OUTPUTS = {"forward": "y", "backward_data": "x", "backward_filter": "w"}


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(OUTPUTS))
@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{c[0]}-{c[1]}-g{c[7]}")
def test_a_heuristics_plan_and_its_rebuild_compute_the_convolution(kernel: str, case) -> None:
    """Operation graph -> heuristics -> the first plan that builds and that the problem's math
    type allows -> run with alpha and beta, against the numpy reference; then the same
    configuration rebuilt from its identity alone (GraphPlans) gives the same answer."""
    from ucudnn._native import _cuda

    dtype, layout, x_dims, w_dims, padding, stride, dilation, groups = case
    p = ConvProblem.create(
        x_dims[0], x_dims[1], w_dims[0], x_dims[2:], w_dims[2:], padding, stride, dilation,
        groups=groups, layout=layout, dtype=dtype,
    )  # fmt: skip
    rng = np.random.default_rng(3)
    logical = {name: _rounded(rng.standard_normal(dims), dtype)
               for name, dims in (("x", p.x_dims), ("w", p.w_dims), ("y", p.y_dims))}  # fmt: skip
    expected = {
        "forward": lambda: reference_conv.forward(p, logical["x"], logical["w"]),
        "backward_data": lambda: reference_conv.backward_data(p, logical["w"], logical["y"]),
        "backward_filter": lambda: reference_conv.backward_filter(p, logical["x"], logical["y"]),
    }[kernel]()
    out = OUTPUTS[kernel]
    start = logical[out]  # what the output holds before: beta scales it
    arrays = {name: _to_device(values, dtype, layout)[0] for name, values in logical.items()}
    pointers = (arrays["x"].ptr, arrays["w"].ptr, arrays["y"].ptr)
    alignments = (graph.alignment(pointers[0]), graph.alignment(pointers[1]),
                  graph.alignment(pointers[2]))  # fmt: skip
    alpha, beta = 1.5, 0.5
    wanted = alpha * expected + beta * start

    handle = _cudnn.Handle()
    workspace = _cuda.DeviceBuffer(64 << 20)
    choices = graph.heuristic_choices(
        graph.operation_graph(handle, p, kernel, alignments, alpha, beta)
    )
    assert choices
    allowed = [c for c in choices if refusal(c.notes, dtype, p.math_type, False) is None]
    for choice in allowed:
        if (choice.workspace_bytes or 0) > workspace.nbytes:
            continue
        try:
            plan = graph.build_plan(handle, choice.descriptor, choice.config.tag)
        except CudnnError:
            continue
        if plan.workspace_bytes <= workspace.nbytes:
            break
    else:
        pytest.fail(f"no configuration of {[c.config.tag for c in allowed]} builds within 64 MiB")
    assert choice.workspace_bytes in (None, plan.workspace_bytes)

    def error() -> float:
        result = _from_device(arrays[out], layout)
        return float(np.linalg.norm(result - wanted) / np.linalg.norm(wanted))

    graph.run_plan(handle, plan, *pointers, workspace.ptr)
    _cuda.device_synchronize()
    assert error() <= _TOLERANCE[dtype], (choice, error())

    arrays[out] = _to_device(start, dtype, layout)[0]
    pointers = (arrays["x"].ptr, arrays["w"].ptr, arrays["y"].ptr)
    alignments = (graph.alignment(pointers[0]), graph.alignment(pointers[1]),
                  graph.alignment(pointers[2]))  # fmt: skip
    rebuilt = graph.GraphPlans().plan(handle, p, kernel, choice.config, alignments, alpha, beta)
    assert (rebuilt.tag, rebuilt.workspace_bytes) == (choice.config.tag, plan.workspace_bytes)
    graph.run_plan(handle, rebuilt, *pointers, workspace.ptr)
    _cuda.device_synchronize()
    assert error() <= _TOLERANCE[dtype], (choice, error())
