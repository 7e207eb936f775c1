"""The types public functions accept for integers, sizes and policies, as their checks take
them at run time: any integral type goes through `operator.index` (`ucudnn.core.checks.integer`),
so numpy's integers are accepted wherever an int is (bools are refused); a size is also text
(`ucudnn.planner.config.byte_count`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import SupportsIndex, TypeAlias

# Bytes: an integer, or text such as "64MiB" or "1.5GiB".
Size: TypeAlias = SupportsIndex | str
# One integer for every spatial dimension, or one each.
PerDimension: TypeAlias = SupportsIndex | Sequence[SupportsIndex]
# A shape or a list of extents.
Dimensions: TypeAlias = Sequence[SupportsIndex]
# Micro-batch sizes: a policy name, text such as "1,8,32", or the sizes themselves.
PolicyArgument: TypeAlias = str | Iterable[SupportsIndex]
