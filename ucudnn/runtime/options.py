"""The Handle's arguments, checked and normalised before any device work.

No device access, so every refusal can be tested on a CPU. Errors name the argument (or the
environment variable) and what it accepts.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Mapping
from pathlib import Path

from ucudnn.core.checks import boolean, integer, shown
from ucudnn.planner.config import (
    Config,
    byte_count,
    file_path,
    micro_batch_policy,
    slab_policy as slab_policy_value,
    workspace_sharing,
)
from ucudnn.planner.policies import Policy
from ucudnn.planner.tables import layer_name
from ucudnn.runtime.benchmark import BenchmarkSettings
from ucudnn.runtime.engines_setting import EnginesRequest

# A cudaStream_t travels as an address.
MAX_STREAM = 2**64 - 1


@dataclasses.dataclass(frozen=True)
class HandleOptions:
    """What a Handle was asked for, every value checked."""

    mode: str  # "wr": `limit` bytes per kernel; "wd": `limit` bytes for the whole network
    limit: int
    policy: Policy  # a policy name, or the micro-batch sizes ascending
    slab_policy: Policy  # a slab policy name, or the slab extents ascending
    stream: int
    deterministic: bool
    check: bool
    database: Path | None  # None: no benchmark cache
    benchmark: BenchmarkSettings  # its `engines` as given; the Handle decides (`engines`)
    engines: EnginesRequest

    @classmethod
    def resolve(
        cls,
        *,
        workspace_limit: object = None,
        total_workspace: object = None,
        policy: object = None,
        slab_policy: object = None,
        database: object = None,
        use_cache: object = True,
        stream: object = 0,
        deterministic: object = False,
        check: object = None,
        benchmark: object = None,
        engines: object = None,
        workspace_sharing: object = None,
        environ: Mapping[str, str] = os.environ,
    ) -> HandleOptions:
        """Arguments as the Handle takes them; unset ones come from the UCUDNN_* variables."""
        config = Config.from_env(environ)
        mode, limit = workspace_option(workspace_limit, total_workspace, config, workspace_sharing)
        settings = benchmark_option(benchmark)
        return cls(
            mode=mode,
            limit=limit,
            policy=config.batch_size_policy
            if policy is None
            else micro_batch_policy(policy, "policy"),
            slab_policy=config.slab_policy
            if slab_policy is None
            else slab_policy_value(slab_policy, "slab_policy"),
            stream=stream_option(stream),
            deterministic=boolean(deterministic, "deterministic"),
            check=check_option(check, config),
            database=database_option(database, boolean(use_cache, "use_cache"), config),
            benchmark=settings,
            engines=engines_option(engines, settings, config),
        )


def workspace_option(
    workspace_limit: object, total_workspace: object, config: Config, sharing: object = None
) -> tuple[str, int]:
    """(mode, bytes) by `ucudnn plan`'s rule: `workspace_limit` selects WR with a limit per
    kernel; `total_workspace`, else UCUDNN_TOTAL_WORKSPACE_SIZE, a budget for the whole network;
    an argument beats the environment, and both arguments together are an error. A budget is
    WD when the kernels divide it ("divided", each its own slice), WR at the budget when they
    share it (one buffer each kernel uses in turn, as a Handle runs them one at a time)."""
    if workspace_limit is not None and total_workspace is not None:
        raise ValueError("give workspace_limit (WR) or total_workspace (WD), not both")
    if sharing is not None:
        sharing = workspace_sharing(sharing, "workspace_sharing")
    if workspace_limit is not None:
        if sharing == "divided":
            raise ValueError(
                "workspace_sharing='divided' divides a total_workspace among the kernels; "
                "workspace_limit is each kernel's limit in one shared buffer"
            )
        return "wr", byte_count(workspace_limit, "workspace_limit")
    if total_workspace is not None:
        total = byte_count(total_workspace, "total_workspace")
    elif config.total_workspace_size is not None:
        total = config.total_workspace_size
    else:
        return "wr", config.default_workspace_limit
    return ("wr" if (sharing or config.workspace_sharing) == "shared" else "wd"), total


def check_option(check: object, config: Config) -> bool:
    """`check` itself, else UCUDNN_CHECK as the configuration read it."""
    return config.check if check is None else boolean(check, "check")


def database_option(database: object, use_cache: bool, config: Config) -> Path | None:
    if database is not None:
        database = file_path(database, "database")
    if not use_cache:
        return None
    return database if database is not None else config.database


def benchmark_option(benchmark: object) -> BenchmarkSettings:
    if benchmark is None:
        return BenchmarkSettings()
    if not isinstance(benchmark, BenchmarkSettings):
        raise TypeError(f"benchmark must be a BenchmarkSettings, got {benchmark!r}")
    return benchmark


def engines_option(engines: object, benchmark: BenchmarkSettings, config: Config) -> EnginesRequest:
    """Who asks for engines: the Handle's argument, else the settings' own, else
    UCUDNN_ENGINES, else nobody (the default, decided on the device: `engines_setting`)."""
    return EnginesRequest.of(benchmark.engines if engines is None else engines, config.engines)


def layer_option(layer: object) -> str | None:
    """A layer name as the planner takes it (non-empty text without control characters), or
    None for an unnamed layer."""
    return None if layer is None else layer_name(layer, "layer")


def scalar_option(value: object, name: str) -> float:
    """alpha or beta: a finite real number (numpy's too, not bool)."""
    if type(value) is float and math.isfinite(value):
        return value  # the common case, without the abstract-class checks below
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {shown(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    return number


def replan_limit(mode: str, limit: int, workspace_limit: object, total_workspace: object) -> int:
    """`Handle.replan`'s new limit: its mode's argument (WR: workspace_limit, WD:
    total_workspace), else `limit` unchanged; the other mode's argument is an error."""
    name, new, other = (
        ("total_workspace", total_workspace, workspace_limit)
        if mode == "wd"
        else ("workspace_limit", workspace_limit, total_workspace)
    )
    if other is not None:
        raise ValueError(f"this handle is in {mode.upper()} mode; pass {name}")
    return limit if new is None else byte_count(new, name)


def stream_option(stream: object) -> int:
    """A cudaStream_t given as an int, checked."""
    return integer(stream, "stream", minimum=0, maximum=MAX_STREAM)
