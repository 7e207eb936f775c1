"""A synthetic, learnable data set: noisy bars whose orientation is the class. No downloads.

Class k is a bar at angle k * 180° / classes through a jittered centre, plus Gaussian noise, so
a small CNN must learn orientation detectors that do not depend on position.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CLASSES = 10
SIZE = 16


def make_dataset(
    count: int, *, seed: int | tuple[int, ...], size: int = SIZE, noise: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """`count` images of shape (count, 1, size, size), float32, and their int64 labels.

    Labels cycle through every class before repeating (balanced to within one), then are
    shuffled; the same seed always gives the same images.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(count) % CLASSES)
    angle = labels * np.pi / CLASSES + rng.normal(0.0, 0.03, count)
    centre = (size - 1) / 2 + rng.uniform(-size / 8, size / 8, (count, 2))
    rows, cols = np.mgrid[0:size, 0:size]
    dy = rows[None] - centre[:, 0, None, None]
    dx = cols[None] - centre[:, 1, None, None]
    sin, cos = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    across = dx * sin - dy * cos  # signed distance from the bar's axis
    along = dx * cos + dy * sin
    bar = np.exp(-(across**2)) * (np.abs(along) < 0.35 * size)
    images = bar + noise * rng.standard_normal(bar.shape)
    return images[:, None].astype(np.float32), labels.astype(np.int64)


def batches(batch: int, *, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """An endless stream of fresh training batches; batch i is seeded by (seed, 0, i)."""
    i = 0
    while True:
        yield make_dataset(batch, seed=(seed, 0, i))
        i += 1


def held_out(count: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Held-out images, seeded apart from every training batch."""
    return make_dataset(count, seed=(seed, 1))
