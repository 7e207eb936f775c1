"""Engine configuration tags and what numerical notes allow."""

from __future__ import annotations

from pathlib import Path

import pytest

from ucudnn.core import cudnn_names
from ucudnn.core.engines import (
    BETA1_UNSUPPORTED,
    MIN_ENGINES_CUDNN,
    EngineConfig,
    canonical_tag,
    deterministic_of,
    math_type_of,
    parse_tag,
    refusal,
)

PROBE_TAGS = Path(__file__).parent / "data" / "engine-tags.txt"


def probe_tags() -> list[str]:
    lines = PROBE_TAGS.read_text().splitlines()
    return [line for line in lines if not line.startswith("#")]


def test_every_probe_tag_round_trips() -> None:
    tags = probe_tags()
    assert len(tags) == 1192
    assert any("=-1" in tag for tag in tags) and "eng63" in tags
    configs = [parse_tag(tag) for tag in tags]
    assert [c.tag for c in configs] == tags  # the frontend already sorts knobs by type
    assert len(set(configs)) == len(tags)
    assert all(canonical_tag(tag) == tag for tag in tags)


def test_a_tag_names_index_and_sorted_knobs() -> None:
    config = parse_tag("eng10_k2=8_k12=-1_k13=1")
    assert config == EngineConfig(10, ((2, 8), (12, -1), (13, 1)))
    assert config.tag == "eng10_k2=8_k12=-1_k13=1"
    assert parse_tag("eng7") == EngineConfig(7) and EngineConfig(7).tag == "eng7"
    # Any knob order, one configuration and one tag.
    assert canonical_tag("eng62_k25=1_k2=0_k13=1") == "eng62_k2=0_k13=1_k25=1"
    assert EngineConfig(62, ((25, 1), (2, 0))) == EngineConfig(62, ((2, 0), (25, 1)))
    assert EngineConfig(62, [[25, 1], [2, 0]]).knobs == ((2, 0), (25, 1))  # type: ignore[arg-type]
    assert canonical_tag("eng007_k02=-0") == "eng7_k2=0"
    assert sorted([EngineConfig(9), EngineConfig(1, ((3, 1),))])[0].index == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not eng<index>"),
        ("eng", "is not eng<index>"),
        ("Eng1", "is not eng<index>"),
        ("eng1_", "is not eng<index>"),
        ("eng1 ", "is not eng<index>"),
        ("eng1_k2", "is not eng<index>"),
        ("eng1_k2=", "is not eng<index>"),
        ("eng1_k-2=1", "is not eng<index>"),
        ("eng-1", "is not eng<index>"),
        ("eng1_k2=1.5", "is not eng<index>"),
        ("eng1__k2=1", "is not eng<index>"),
        ("eng1_k2=1_k2=1", "knob\\(s\\) 2 chosen more than once"),
        ("eng1_k2=1_k3=0_k2=0", "knob\\(s\\) 2 chosen more than once"),
        ("eng9999999999", "engine index must be <= 2147483647"),
        ("eng1_k2=9223372036854775808", "value of knob 2 must be <= 9223372036854775807"),
        ("eng1_k2=" + "9" * 100000, "100008 characters\\) is not eng<index>"),
    ],
)
def test_parse_tag_refuses_anything_else(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_tag(text)


def test_engine_config_checks_its_fields() -> None:
    assert parse_tag("eng1_k2=-9223372036854775808").knobs == ((2, -(2**63)),)
    with pytest.raises(ValueError, match="engine index must be >= 0"):
        EngineConfig(-1)
    with pytest.raises(TypeError, match="engine index must be an integer"):
        EngineConfig(True)
    with pytest.raises(TypeError, match="a knob is a \\(type, value\\) pair"):
        EngineConfig(1, ((2, 0, 1),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="knobs must be"):
        EngineConfig(1, "k2=0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="knob type must be >= 0"):
        EngineConfig(1, ((-2, 0),))
    with pytest.raises(ValueError, match="chosen more than once in engine 1"):
        EngineConfig(1, ((2, 0), (2, 1)))
    with pytest.raises(TypeError, match="engine tag must be text"):
        parse_tag(62)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "notes", "expected"),
    [
        ("float32", (), "fma"),
        ("float32", ("TENSOR_CORE",), "default"),  # TF32
        ("float32", ("TENSOR_CORE", "DOWN_CONVERT_INPUTS"), "tensor_op_allow_conversion"),
        ("float32", ("REDUCED_PRECISION_REDUCTION",), "tensor_op_allow_conversion"),
        ("float16", (), "fma"),
        ("float16", ("TENSOR_CORE", "NONDETERMINISTIC"), "tensor_op"),
        ("bfloat16", ("TENSOR_CORE",), "tensor_op"),
        ("float16", ("TENSOR_CORE", "REDUCED_PRECISION_REDUCTION"), "tensor_op_allow_conversion"),
        ("float64", (), "default"),
        ("float64", ("TENSOR_CORE",), "default"),
        ("float64", ("WINOGRAD", "FFT", "UNKNOWN_17"), "default"),
    ],
)
def test_math_type_of_notes(dtype: str, notes: tuple[str, ...], expected: str) -> None:
    assert math_type_of(dtype, iter(notes)) == expected


def test_refusal_follows_the_math_licence_and_determinism() -> None:
    tc = ("TENSOR_CORE",)
    assert refusal(tc, "float32", "default", deterministic=False) is None
    assert "need math type default, more than fma allows" in str(
        refusal(tc, "float32", "fma", deterministic=False)
    )
    assert refusal(tc, "float16", "tensor_op", deterministic=True) is None
    assert refusal((), "float16", "fma", deterministic=True) is None
    assert refusal(tc, "float16", "fma", deterministic=False) is not None
    down = ("TENSOR_CORE", "DOWN_CONVERT_INPUTS")
    assert refusal(down, "float32", "tensor_op", deterministic=False) is not None
    assert refusal(down, "float32", "tensor_op_allow_conversion", deterministic=False) is None
    nondet = ("NONDETERMINISTIC",)
    assert refusal(nondet, "float32", "fma", deterministic=False) is None
    assert "NONDETERMINISTIC" in str(refusal(nondet, "float32", "fma", deterministic=True))
    assert refusal(iter(nondet), "float64", "default", deterministic=True) is not None
    # Our own note restricts use at run time; it is no numerical refusal.
    assert refusal((BETA1_UNSUPPORTED,), "float32", "fma", deterministic=True) is None
    with pytest.raises(ValueError, match="unknown math_type 'fast'"):
        refusal((), "float32", "fast", deterministic=False)
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        refusal((), "int8", "fma", deterministic=False)


def test_deterministic_of() -> None:
    assert deterministic_of(()) and deterministic_of(["TENSOR_CORE"])
    assert not deterministic_of(iter(["TENSOR_CORE", "NONDETERMINISTIC"]))


def test_engines_need_the_cudnn_that_says_a_configurations_workspace() -> None:
    """MIN_ENGINES_CUDNN is kept apart from the name tables so that the planner does not load
    them; this holds the two in step."""
    assert cudnn_names.ADDED_IN["ENGINECFG_WORKSPACE_SIZE"] == MIN_ENGINES_CUDNN
