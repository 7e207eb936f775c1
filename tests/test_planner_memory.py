"""The memory model of a training step (ucudnn.planner.memory), checked against hand counts."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ucudnn.planner.memory import (
    FrameworkOverhead,
    parse_overhead,
    training_memory,
)
from ucudnn.planner.networks import builtin_network

MiB = 1 << 20


def test_alexnet_against_a_hand_count() -> None:
    # torchvision's AlexNet at 224x224, float32 (4 bytes), per sample:
    # conv1 3x224x224 -> 64x55x55 (11x11/4, pad 2); pool -> 27
    # conv2 64x27x27 -> 192x27x27 (5x5, pad 2); pool -> 13
    # conv3 192 -> 384, conv4 384 -> 256, conv5 256 -> 256, all 13x13 (3x3, pad 1)
    weights = 64 * 3 * 121 + 192 * 64 * 25 + 384 * 192 * 9 + 256 * 384 * 9 + 256 * 256 * 9
    outputs = 64 * 55 * 55 + 192 * 27 * 27 + 384 * 169 + 256 * 169 + 256 * 169
    inputs = 3 * 224 * 224 + 64 * 27 * 27 + 192 * 169 + 384 * 169 + 256 * 169
    # The largest output-plus-input gradient pair is conv1's (it runs backward-data by default).
    gradients = 64 * 55 * 55 + 3 * 224 * 224
    assert weights == 2_468_544  # the known count of AlexNet's convolution weights

    model = training_memory(builtin_network("alexnet"))

    assert model.weights_bytes == 4 * weights
    assert model.activations_per_sample == 4 * (outputs + inputs) == 3_291_136
    assert model.gradients_per_sample == 4 * gradients == 1_376_512


def test_resnet18_against_a_hand_count() -> None:
    # torchvision's ResNet-18 at 224x224, float32. Per-sample elements of one tensor per stage:
    stem_out, s1, s2, s3, s4 = (
        64 * 112 * 112,
        64 * 56 * 56,
        128 * 28 * 28,
        256 * 14 * 14,
        512 * 7 * 7,
    )
    image = 3 * 224 * 224
    weights = (
        64 * 3 * 49  # conv1
        + 4 * 64 * 64 * 9  # layer1: four 3x3
        + 128 * 64 * 9 + 3 * 128 * 128 * 9 + 128 * 64  # layer2: 3x3s and the 1x1 downsample
        + 256 * 128 * 9 + 3 * 256 * 256 * 9 + 256 * 128
        + 512 * 256 * 9 + 3 * 512 * 512 * 9 + 512 * 256
    )  # fmt: skip
    # 11,689,512 parameters in all, less the fully connected layer (513,000) and BN (9,600).
    assert weights == 11_166_912
    # Every convolution's output: the stem, layer1's four, five per later stage (with the
    # downsample).
    outputs = stem_out + 4 * s1 + 5 * s2 + 5 * s3 + 5 * s4
    # Distinct inputs: the image; layer1's four (pooled stem, then each conv's and block's);
    # per later stage, the block input its first conv and downsample share (the previous
    # stage's size), then three at the stage's size.
    inputs = image + 4 * s1 + (s1 + 3 * s2) + (s2 + 3 * s3) + (s3 + 3 * s4)
    # conv1's output and input gradients, plus one skip connection's (the largest input where
    # branches join: layer1.1.conv1's, or the 64x56x56 block input of layer2.0).
    gradients = (stem_out + image) + s1

    model = training_memory(builtin_network("resnet18"))

    assert model.weights_bytes == 4 * weights
    assert model.activations_per_sample == 4 * (outputs + inputs) == 17_260_544
    assert model.gradients_per_sample == 4 * gradients == 4_616_192
    # Without the input's gradient, conv1's pair is its output gradient alone.
    without = training_memory(builtin_network("resnet18", input_gradient=False))
    assert without.gradients_per_sample == 4 * (stem_out + s1)


def test_half_precision_halves_every_part() -> None:
    single = training_memory(builtin_network("resnet18"))
    half = training_memory(builtin_network("resnet18", dtype="float16"))
    assert 2 * half.weights_bytes == single.weights_bytes
    assert 2 * half.activations_per_sample == single.activations_per_sample
    assert 2 * half.gradients_per_sample == single.gradients_per_sample


def test_a_step_adds_its_parts_and_scales_with_the_batch() -> None:
    overhead = FrameworkOverhead(fixed_bytes=300 * MiB, per_sample=Fraction(1, 4))
    model = training_memory(builtin_network("alexnet"), overhead)
    per_sample = model.activations_per_sample + model.gradients_per_sample

    step = model.step(64, arena_bytes=5 * MiB)

    assert step.activations_bytes == 64 * model.activations_per_sample
    assert step.gradients_bytes == 64 * model.gradients_per_sample
    assert step.overhead_bytes == 300 * MiB + 16 * per_sample  # a quarter of 64 samples' worth
    assert step.total_bytes == (
        2 * model.weights_bytes + 64 * per_sample + step.overhead_bytes + 5 * MiB
    )
    assert step.to_dict()["total_bytes"] == step.total_bytes
    assert model.arena_room(64, step.total_bytes) == 5 * MiB
    assert model.arena_room(64, 0) < 0


def test_a_fractional_overhead_rounds_up_to_whole_bytes() -> None:
    model = training_memory(builtin_network("alexnet"), FrameworkOverhead(0, Fraction(1, 3)))
    per_sample = model.activations_per_sample + model.gradients_per_sample
    assert per_sample % 3  # so the third is not whole
    assert model.step(1).overhead_bytes == per_sample // 3 + 1


@pytest.mark.parametrize(
    ("text", "fixed", "fraction"),
    [
        ("0", 0, 0),
        ("1GiB", 1 << 30, 0),
        ("30%", 0, Fraction(3, 10)),
        ("1GiB+30%", 1 << 30, Fraction(3, 10)),
        ("12.5 % + 512MiB", 512 * MiB, Fraction(1, 8)),
    ],
)
def test_overheads_read_as_a_size_a_percentage_or_both(
    text: str, fixed: int, fraction: Fraction
) -> None:
    overhead = parse_overhead(text, "--framework-overhead")
    assert overhead == FrameworkOverhead(fixed, fraction)
    assert parse_overhead(overhead.text(), "again") == overhead


@pytest.mark.parametrize("text", ["", "abc", "-5%", "1GiB+2GiB", "5%+5%", "1GiB+5%+1", "5%%"])
def test_bad_overheads_are_refused_naming_the_option(text: str) -> None:
    with pytest.raises(ValueError, match=r"--framework-overhead=.* is not an overhead"):
        parse_overhead(text, "--framework-overhead")


def test_a_negative_fraction_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        FrameworkOverhead(0, Fraction(-1, 10))
