"""The Handles a converted model's layers share: one per device, made on first use.

A model converted by `ucudnn.torch.convert` gets one `ModelHandles` with the options given
there; layers made directly (`ucudnn.torch.Conv2d(...)`) share a default one, whose options
come from the UCUDNN_* variables. Each process makes its own Handles, for the devices its
tensors are on: under torch.distributed every process plans for its own GPU.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import torch

from ucudnn._native import SIMULATED, _cuda
from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.planner.plan import Plan
from ucudnn.runtime.handle import Handle
from ucudnn.runtime.options import HandleOptions
from ucudnn.torch.cuda_runs import CudaRuns
from ucudnn.torch.staging import StagedRuns


class ModelHandles:
    """The options of a converted model, and the Handle of each device it ran on (two, when
    it ran both with and without PyTorch's deterministic setting).

    Raises (when made):
        TypeError, ValueError: an option the Handle would refuse (both workspace_limit and
            total_workspace, a size that is no size, an unknown policy, ...).
    """

    def __init__(
        self,
        *,
        workspace_limit: Size | None = None,
        total_workspace: Size | None = None,
        engines: bool | None = None,
        policy: PolicyArgument | None = None,
        slab_policy: PolicyArgument | None = None,
        database: str | os.PathLike[str] | None = None,
        workspace_sharing: str | None = None,
    ) -> None:
        self._arguments: dict[str, Any] = {
            "workspace_limit": workspace_limit, "total_workspace": total_workspace,
            "engines": engines, "policy": policy, "slab_policy": slab_policy,
            "database": database, "workspace_sharing": workspace_sharing,
        }  # fmt: skip
        # Checked now, so that a bad option fails at convert(), not at the first step.
        self.mode = HandleOptions.resolve(**self._arguments).mode
        self.runs = StagedRuns() if SIMULATED else CudaRuns()
        self.registering = False  # True inside `trace`
        self.planned = False  # plan() ran (WD: the network was planned as a whole)
        self.warned_unplanned = False
        self._handles: dict[tuple[torch.device, bool], Handle] = {}
        self._traced: set[Handle] = set()  # the Handles plan()'s trace registered kernels on

    def handle_for(self, device: torch.device, deterministic: bool = False) -> Handle:
        """The Handle of `device` that runs deterministic algorithms only or not, made the
        first time it is asked for."""
        handle = self._handles.get((device, deterministic))
        if handle is None:
            handle = self._new_handle(device, deterministic)
            self._handles[device, deterministic] = handle
        if self.registering:
            self._traced.add(handle)
        return handle

    @property
    def handles(self) -> dict[tuple[torch.device, bool], Handle]:
        """The Handles made so far, by device and whether they are deterministic."""
        return dict(self._handles)

    @contextlib.contextmanager
    def trace(self) -> Iterator[None]:
        """plan()'s forward: inside, converted layers register their kernels (on the Handles
        `finalize` then plans) and compute with PyTorch's own convolution."""
        self.registering = True
        self._traced.clear()
        try:
            yield
        finally:
            self.registering = False

    def workspace_bytes(self) -> int:
        """Device memory the Handles hold for workspace now, outside PyTorch's allocator."""
        return sum(handle.workspace_in_use for handle in self._handles.values())

    def finalize(self) -> Plan:
        """Plan every kernel the last `trace` registered (`Handle.finalize`), on the one Handle
        they were registered on.

        Raises:
            ValueError: no layer ran in the trace, or layers ran on several devices (or both
                with and without PyTorch's deterministic setting).
            InfeasibleError, SolverError, CudaError, CudnnError: as `Handle.finalize`.
        """
        if len(self._traced) != 1:
            ran = [
                f"{device}{' (deterministic)' if deterministic else ''}"
                for (device, deterministic), handle in self._handles.items()
                if handle in self._traced
            ]
            raise ValueError(
                "plan() plans a model whose converted layers run on one device; in its "
                f"forward they ran on {', '.join(ran) or 'none'}"
            )
        (handle,) = self._traced
        plan = handle.finalize()
        self.planned = True
        return plan

    def close(self) -> None:
        """Close the Handles (their workspaces and cache connections); later calls make new
        ones."""
        while self._handles:
            _, handle = self._handles.popitem()
            handle.close()
        self.planned = False

    def _new_handle(self, device: torch.device, deterministic: bool) -> Handle:
        if device.type != "cuda":
            return Handle(**self._arguments, deterministic=deterministic)
        with torch.cuda.device(device):
            _cuda.set_device(device.index)  # in case ucudnn's CUDA runtime is not torch's
            return Handle(**self._arguments, deterministic=deterministic)

    # A pickled or copied model keeps its options; its copy makes Handles of its own.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_handles"], state["_traced"] = {}, set()
        state["planned"] = False
        return state


_DEFAULT: ModelHandles | None = None
_DEFAULT_LOCK = threading.Lock()


def is_default(handles: ModelHandles) -> bool:
    """Whether `handles` are the default ones (without making them)."""
    return handles is _DEFAULT


def default_handles() -> ModelHandles:
    """The ModelHandles of layers made directly rather than by convert(): options from the
    UCUDNN_* variables, shared by every such layer of the process."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = ModelHandles()
        return _DEFAULT
