"""The models benchmarks/torch_step.py trains, their synthetic data and memory formats.

torch (and torchvision, for ResNet-50) is imported only when a model or tensor is made, so
that the script's --help and its error messages need neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    import torch
    from torch import nn

MODELS = ("resnet50", "unet3d", "tiny")
# Per model: image size, input channels, classes and default batch.
MODEL_SHAPES = {
    "resnet50": (224, 3, 1000, 256),
    "unet3d": (64, 1, 10, 8),
    "tiny": (8, 3, 10, 4),
}


def tiny_net(channels: int, classes: int) -> nn.Module:
    """Two convolutions, one strided: every kernel of a layer, in seconds on the simulator."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(channels, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, classes),
    )


def unet3d_encoder(
    channels: int, classes: int, widths: tuple[int, ...] = (32, 64, 128, 256)
) -> nn.Module:
    """A 3D U-Net's contracting path (two 3x3x3 convolutions with batch norm and ReLU per
    level, max-pooled between levels) with a classifier head instead of the decoder: the 3D
    convolutions that dominate such a network's step, without a segmentation loss."""
    from torch import nn

    layers: list[nn.Module] = []
    previous = channels
    for level, width in enumerate(widths):
        if level:
            layers.append(nn.MaxPool3d(2))
        for inputs in (previous, width):
            layers += [
                nn.Conv3d(inputs, width, 3, padding=1, bias=False),
                nn.BatchNorm3d(width),
                nn.ReLU(inplace=True),
            ]
        previous = width
    layers += [nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(previous, classes)]
    return nn.Sequential(*layers)


def build_model(name: str, seed: int) -> nn.Module:
    """The model with its initial weights drawn from `seed`, on the CPU: every configuration
    starts from a copy of it."""
    import torch

    _, channels, classes, _ = MODEL_SHAPES[name]
    torch.manual_seed(seed)
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50(num_classes=classes)
    if name == "unet3d":
        return unet3d_encoder(channels, classes)
    return tiny_net(channels, classes)


def is_3d(model: str) -> bool:
    return model == "unet3d"


def memory_format(model: str, fmt: str) -> torch.memory_format:
    """torch's memory format for --formats' `fmt` (channels_last_3d for a 3D model)."""
    import torch

    if fmt == "contiguous":
        return torch.contiguous_format
    return torch.channels_last_3d if is_3d(model) else torch.channels_last


def synthetic_batches(
    args: argparse.Namespace, batch: int, fmt: str, device: torch.device, count: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` batches of images and labels drawn on `device` from --seed: the same for
    every configuration of the run."""
    import torch

    _, channels, classes, _ = MODEL_SHAPES[args.model]
    spatial = (args.image_size,) * (3 if is_3d(args.model) else 2)
    generator = torch.Generator(device=device).manual_seed(args.seed + 1)
    made = []
    for _ in range(count):
        images = torch.randn((batch, channels, *spatial), generator=generator, device=device)
        labels = torch.randint(0, classes, (batch,), generator=generator, device=device)
        made.append((images.contiguous(memory_format=memory_format(args.model, fmt)), labels))
    return made
