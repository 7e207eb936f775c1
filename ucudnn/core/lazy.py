"""Names a package exports but imports only when first used (PEP 562).

`import ucudnn` must stay light: the planner's solvers and the native modules load
when a name that needs them is first touched, not before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, which exports each name of `exports` from
    the module it maps to (relative to `package` when it starts with a dot).

    Assign them under `if not TYPE_CHECKING:` and import the names for checkers under
    `if TYPE_CHECKING:`, so that a checker knows each name's type and flags unknown ones.
    """

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    def __dir__() -> list[str]:
        # What a user may reach for: the exports, the submodules loaded so far and the
        # dunders (__version__), not the names the package body used to set itself up.
        namespace = vars(sys.modules[package])
        shown = (n for n, v in namespace.items() if n.startswith("__") or isinstance(v, ModuleType))
        return sorted({*shown, *exports})

    return __getattr__, __dir__
