"""Where cuDNN and the CUDA runtime are found, and loading them before the native modules.

The native modules name these libraries only by soname and carry no search path, so nothing
about one install layout is baked into them. `ucudnn._native` loads both, through
`load_libraries`, before any native module is imported; the dynamic linker then resolves the
modules' NEEDED entries to the files already loaded.

Places searched, in order (the first that loads wins):

1. cuDNN only: ``UCUDNN_CUDNN_PATH``, the library file or a directory holding it (directly,
   or in ``lib/`` or ``lib64/``). When set, it is the only place searched: an explicit choice
   that fails is an error, not a silent fallback to another cuDNN.
2. The NVIDIA pip package's import package (``nvidia.cudnn``, ``nvidia.cu13``, ...), found
   through the import system: every directory of the namespace package is tried, so ``pip
   install --target`` and split user/system site-packages work.
3. An install root named by the usual variables: ``CUDNN_ROOT`` for cuDNN, ``CUDA_HOME`` and
   ``CUDA_PATH`` for the runtime (their ``lib64/`` and ``lib/``).
4. This environment's own ``lib/`` (``sys.prefix``: a conda environment keeps them there).
5. The system loader, by soname: ``LD_LIBRARY_PATH``, the ld.so cache, the default directories.

Which rule found a file says nothing certain about who installed it (any distribution may
provide ``nvidia/cudnn/``): `owning_distribution` asks the installed distributions' records.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from ucudnn.errors import LibraryNotFoundError

logger = logging.getLogger(__name__)

SYSTEM_LOADER = "system loader"
# The pip package holding the CUDA runtime, per CUDA major: (distribution, import name).
_RUNTIME_PACKAGES = {
    12: ("nvidia-cuda-runtime-cu12", "nvidia.cuda_runtime"),
    13: ("nvidia-cuda-runtime", "nvidia.cu13"),
}


@dataclasses.dataclass(frozen=True)
class LibrarySpec:
    """One library to load, and the places that may hold it."""

    name: str  # as people call it: "cuDNN"
    soname: str  # as the native modules link it: "libcudnn.so.9"
    wheel: str  # the pip distribution that provides it: "nvidia-cudnn-cu13"
    package: str  # its import name, which holds the library in lib/: "nvidia.cudnn"
    roots: tuple[str, ...]  # variables naming an install root
    override: str | None = None  # a variable that, when set, is the only place searched


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A file to try (or, for the system loader, a soname) and the rule that proposed it."""

    target: str
    origin: str


@dataclasses.dataclass(frozen=True)
class LoadedLibrary:
    """A library as loaded: which file, and which rule found it."""

    name: str
    soname: str
    path: str  # as opened (a symbolic link stays one), or as the system loader found it
    found_by: str  # the rule, as Candidate.origin names it


def library_specs(cuda_major: int) -> tuple[LibrarySpec, LibrarySpec]:
    """cuDNN 9 and the CUDA runtime of `cuda_major`, the two libraries the modules link."""
    if cuda_major not in _RUNTIME_PACKAGES:
        raise ValueError(f"ucudnn is built for CUDA 12 or 13, not {cuda_major}")
    cudnn = LibrarySpec(
        "cuDNN",
        "libcudnn.so.9",
        f"nvidia-cudnn-cu{cuda_major}",
        "nvidia.cudnn",
        ("CUDNN_ROOT",),
        "UCUDNN_CUDNN_PATH",
    )
    wheel, package = _RUNTIME_PACKAGES[cuda_major]
    runtime = LibrarySpec(
        f"the CUDA {cuda_major} runtime",
        f"libcudart.so.{cuda_major}",
        wheel,
        package,
        ("CUDA_HOME", "CUDA_PATH"),
    )
    return cudnn, runtime


def package_dirs(package: str) -> list[str]:
    """Every directory of `package` on the import path; empty when it is not installed."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # its parent is missing, or is not a package
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return list(spec.submodule_search_locations)


def candidates(
    spec: LibrarySpec,
    environ: Mapping[str, str],
    find_package: Callable[[str], Sequence[str]] = package_dirs,
    prefix: str = sys.prefix,
) -> list[Candidate]:
    """The places to try for `spec`, in order (see the module docstring)."""
    override = _override(spec, environ)
    if override:
        return _in_root(spec.soname, override, str(spec.override), ("", "lib", "lib64"))
    found = [
        Candidate(os.path.join(directory, "lib", spec.soname), f"the {spec.package} package")
        for directory in find_package(spec.package)
    ]
    for variable in spec.roots:
        if environ.get(variable):
            found += _in_root(spec.soname, environ[variable], variable, ("lib64", "lib"))
    found.append(Candidate(os.path.join(prefix, "lib", spec.soname), "the environment prefix"))
    found.append(Candidate(spec.soname, SYSTEM_LOADER))
    return found


def _override(spec: LibrarySpec, environ: Mapping[str, str]) -> str:
    """The override's value; empty when `spec` has none or it is unset (or set empty)."""
    return environ.get(spec.override, "") if spec.override else ""


def _in_root(soname: str, root: str, variable: str, subdirs: Sequence[str]) -> list[Candidate]:
    if os.path.basename(root) == soname or os.path.isfile(root):
        return [Candidate(root, variable)]
    return [Candidate(os.path.join(root, sub, soname), variable) for sub in subdirs]


def load_library(
    spec: LibrarySpec,
    open_library: Callable[[str], str],
    environ: Mapping[str, str] = os.environ,
    find_package: Callable[[str], Sequence[str]] = package_dirs,
    prefix: str = sys.prefix,
) -> LoadedLibrary:
    """Load `spec` from the first place that works; LibraryNotFoundError lists every place
    tried and why it failed."""
    attempts = []
    for candidate in candidates(spec, environ, find_package, prefix):
        where = f"{candidate.target} ({candidate.origin})"
        if candidate.origin != SYSTEM_LOADER and not os.path.isfile(candidate.target):
            attempts.append(f"{where}: no such file")
            continue
        try:
            path = open_library(candidate.target)
        except OSError as exc:
            attempts.append(f"{where}: {exc}")
            logger.debug("could not load %s from %s: %s", spec.name, where, exc)
            continue
        logger.debug("loaded %s from %s (found by %s)", spec.name, path, candidate.origin)
        return LoadedLibrary(spec.name, spec.soname, path, candidate.origin)
    raise LibraryNotFoundError(spec.name, spec.soname, attempts, _hint(spec, environ))


def _hint(spec: LibrarySpec, environ: Mapping[str, str]) -> str:
    if _override(spec, environ):
        return f"{spec.override} is set, so no other place was searched; unset it to search them"
    variables = " or ".join(v for v in (spec.override, *spec.roots) if v)
    return (
        f"Install it with `pip install {spec.wheel}` (a dependency of ucudnn), or set {variables}"
    )


def load_libraries() -> tuple[LoadedLibrary, ...]:
    """Load cuDNN and the CUDA runtime this build links against (see the module docstring)."""
    try:
        from ucudnn._build_info import CUDA_MAJOR
        from ucudnn._native._loader import open_library
    except ImportError as exc:
        raise ImportError(
            f"ucudnn's native modules are not built ({exc}); install ucudnn with pip"
        ) from exc
    # package_dirs is looked up here, at call time, so that a test can hide the packages.
    return tuple(
        load_library(spec, open_library, find_package=package_dirs)
        for spec in library_specs(CUDA_MAJOR)
    )


def owning_distribution(path: str, search_path: Sequence[str] | None = None) -> str | None:
    """The name of the installed distribution whose record lists the file at `path` (links
    resolved), or None when none does: a system or conda library, not a pip package.

    Only a file under a directory of the import path (`search_path`, default sys.path) can
    belong to one, so a system library costs no metadata reads.
    """
    directories = sys.path if search_path is None else search_path
    target = os.path.realpath(path)
    if not any(_contains(directory, target) for directory in directories):
        return None
    # Imported here: it takes tens of milliseconds, and loading the libraries never needs it.
    import importlib.metadata

    names = {os.path.basename(path), os.path.basename(target)}
    for distribution in importlib.metadata.distributions(path=list(directories)):
        for file in distribution.files or ():
            # The name first: locating every file of every distribution would be slow.
            if file.name in names and os.path.realpath(str(file.locate())) == target:
                return str(distribution.metadata["Name"])
    return None


def _contains(directory: str, path: str) -> bool:
    root = os.path.realpath(directory or os.curdir)  # "" on sys.path is the working directory
    return os.path.commonpath([root, path]) == root
