"""Finding cuDNN and the CUDA runtime: the places searched, their order, and the error that
names them. The rules are tested on their own, then for real: each layout is built in a
temporary directory from copies of the installed libraries and loaded in a fresh process."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ucudnn.core import libraries
from ucudnn.core.libraries import Candidate, LibrarySpec, candidates, library_specs, load_library
from ucudnn.errors import LibraryNotFoundError

CUDNN, RUNTIME = library_specs(13)
NO_PACKAGES: dict[str, list[str]] = {}


def found(packages: dict[str, list[str]]):
    return lambda package: packages.get(package, [])


def test_the_specs_name_what_each_cuda_major_links() -> None:
    assert [s.soname for s in library_specs(13)] == ["libcudnn.so.9", "libcudart.so.13"]
    assert [s.wheel for s in library_specs(12)] == [
        "nvidia-cudnn-cu12",
        "nvidia-cuda-runtime-cu12",
    ]
    assert library_specs(12)[1].package == "nvidia.cuda_runtime"
    with pytest.raises(ValueError, match="CUDA 12 or 13, not 11"):
        library_specs(11)


def test_order_is_packages_then_roots_then_prefix_then_system_loader() -> None:
    # Two directories of one namespace package: a --target install beside site-packages.
    packages = found({"nvidia.cudnn": ["/target/nvidia/cudnn", "/site/nvidia/cudnn"]})
    result = candidates(CUDNN, {"CUDNN_ROOT": "/opt/cudnn"}, packages, prefix="/env")
    assert result == [
        Candidate("/target/nvidia/cudnn/lib/libcudnn.so.9", "the nvidia.cudnn package"),
        Candidate("/site/nvidia/cudnn/lib/libcudnn.so.9", "the nvidia.cudnn package"),
        Candidate("/opt/cudnn/lib64/libcudnn.so.9", "CUDNN_ROOT"),
        Candidate("/opt/cudnn/lib/libcudnn.so.9", "CUDNN_ROOT"),
        Candidate("/env/lib/libcudnn.so.9", "the environment prefix"),
        Candidate("libcudnn.so.9", "system loader"),
    ]


def test_the_runtime_is_looked_for_under_cuda_home_and_cuda_path() -> None:
    environ = {"CUDA_HOME": "/cuda", "CUDA_PATH": "/other", "CUDNN_ROOT": "/ignored"}
    result = candidates(RUNTIME, environ, found(NO_PACKAGES), prefix="/env")
    assert [c.target for c in result] == [
        "/cuda/lib64/libcudart.so.13",
        "/cuda/lib/libcudart.so.13",
        "/other/lib64/libcudart.so.13",
        "/other/lib/libcudart.so.13",
        "/env/lib/libcudart.so.13",
        "libcudart.so.13",
    ]


def test_an_explicit_cudnn_path_is_the_only_place_searched(tmp_path: Path) -> None:
    packages = found({"nvidia.cudnn": ["/site/nvidia/cudnn"]})
    in_dir = candidates(CUDNN, {"UCUDNN_CUDNN_PATH": "/mine"}, packages, prefix="/env")
    assert in_dir == [
        Candidate("/mine/libcudnn.so.9", "UCUDNN_CUDNN_PATH"),
        Candidate("/mine/lib/libcudnn.so.9", "UCUDNN_CUDNN_PATH"),
        Candidate("/mine/lib64/libcudnn.so.9", "UCUDNN_CUDNN_PATH"),
    ]
    file = tmp_path / "libcudnn.so.9.28.1"
    file.write_bytes(b"")
    as_file = candidates(CUDNN, {"UCUDNN_CUDNN_PATH": str(file)}, packages, prefix="/env")
    assert as_file == [Candidate(str(file), "UCUDNN_CUDNN_PATH")]
    # Set but empty counts as unset.
    assert candidates(CUDNN, {"UCUDNN_CUDNN_PATH": ""}, packages, "/env")[0].origin.startswith(
        "the nvidia"
    )


def test_the_first_place_that_loads_wins_and_failures_are_skipped(tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "lib"
    good = tmp_path / "good" / "lib"
    for directory in (broken, good):
        directory.mkdir(parents=True)
        (directory / "libcudnn.so.9").write_bytes(b"")
    opened = []

    def open_library(target: str) -> str:
        opened.append(target)
        if "broken" in target:
            raise OSError("invalid ELF header")
        return target

    packages = found({"nvidia.cudnn": [str(tmp_path / "missing"), str(broken.parent)]})
    loaded = load_library(CUDNN, open_library, {"CUDNN_ROOT": str(good.parent)}, packages, "/e")
    assert loaded.path == str(good / "libcudnn.so.9")
    assert loaded.found_by == "CUDNN_ROOT"
    # A file that is not there is not handed to the loader.
    assert opened == [str(broken / "libcudnn.so.9"), str(good / "libcudnn.so.9")]


def test_nothing_found_names_every_place_and_why(tmp_path: Path) -> None:
    def open_library(target: str) -> str:
        raise OSError(f"{target}: cannot open shared object file")

    with pytest.raises(LibraryNotFoundError) as caught:
        load_library(CUDNN, open_library, {}, found({"nvidia.cudnn": ["/site/nvidia/cudnn"]}), "/e")
    message = str(caught.value)
    assert message.splitlines() == [
        "cannot load cuDNN (libcudnn.so.9); tried, in order:",
        "  /site/nvidia/cudnn/lib/libcudnn.so.9 (the nvidia.cudnn package): no such file",
        "  /e/lib/libcudnn.so.9 (the environment prefix): no such file",
        "  libcudnn.so.9 (system loader): libcudnn.so.9: cannot open shared object file",
        "Install it with `pip install nvidia-cudnn-cu13` (a dependency of ucudnn), "
        "or set UCUDNN_CUDNN_PATH or CUDNN_ROOT",
    ]
    assert isinstance(caught.value, ImportError)  # what callers of a native import catch
    assert str(pickle.loads(pickle.dumps(caught.value))) == message


def test_a_failed_explicit_path_says_nothing_else_was_searched() -> None:
    environ = {"UCUDNN_CUDNN_PATH": "/nowhere"}
    with pytest.raises(LibraryNotFoundError, match="UCUDNN_CUDNN_PATH is set, so no other"):
        load_library(CUDNN, lambda t: t, environ, found(NO_PACKAGES), "/e")


def test_package_dirs_of_a_missing_package_is_empty() -> None:
    assert libraries.package_dirs("nvidia.no_such_library") == []
    assert libraries.package_dirs("no_such_top_level.cudnn") == []
    assert libraries.package_dirs("json.decoder") == []  # a module, not a package


# --- real layouts, loaded in a fresh process ----------------------------------------------

BUILT = importlib.util.find_spec("ucudnn._build_info") is not None
needs_build = pytest.mark.skipif(not BUILT, reason="the native modules are not built")
PROBE = """
import json, sys
import ucudnn.core.libraries as libraries
if {hide_packages}:
    libraries.package_dirs = lambda package: []
try:
    from ucudnn._native import LIBRARIES
except ImportError as exc:
    print(json.dumps({{"error": str(exc)}}))
else:
    print(json.dumps([[lib.soname, lib.path, lib.found_by] for lib in LIBRARIES]))
"""
# UCUDNN_DEVICE too: under --device=sim the fresh process would load no library at all.
CLEARED = (
    "UCUDNN_CUDNN_PATH",
    "CUDNN_ROOT",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "UCUDNN_DEVICE",
)


def installed(spec: LibrarySpec) -> Path:
    """The library file of the installed pip package (what these tests copy)."""
    for directory in libraries.package_dirs(spec.package):
        path = Path(directory, "lib", spec.soname)
        if path.is_file():
            return path
    pytest.skip(f"{spec.wheel} is not installed")


def load_in_fresh_process(
    environ: dict[str, str] | None = None, *, hide_packages: bool = False, path: str = ""
) -> object:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(environ or {})
    if path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    code = PROBE.format(hide_packages=hide_packages)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def copy_library(spec: LibrarySpec, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(installed(spec), directory / spec.soname))


@needs_build
def test_installed_packages_are_found_through_the_import_system() -> None:
    loaded = load_in_fresh_process()
    assert loaded == [
        ["libcudnn.so.9", str(installed(CUDNN)), "the nvidia.cudnn package"],
        ["libcudart.so.13", str(installed(RUNTIME)), "the nvidia.cu13 package"],
    ]


@needs_build
def test_a_target_install_ahead_on_the_path_is_the_one_loaded(tmp_path: Path) -> None:
    # pip install --target puts packages in a directory that is only on PYTHONPATH.
    cudnn = copy_library(CUDNN, tmp_path / "nvidia" / "cudnn" / "lib")
    runtime = copy_library(RUNTIME, tmp_path / "nvidia" / "cu13" / "lib")
    loaded = load_in_fresh_process(path=str(tmp_path))
    assert [entry[1] for entry in loaded] == [str(cudnn), str(runtime)]


@needs_build
def test_explicit_cudnn_path_wins_over_the_package(tmp_path: Path) -> None:
    cudnn = copy_library(CUDNN, tmp_path / "mine" / "lib64")
    loaded = load_in_fresh_process({"UCUDNN_CUDNN_PATH": str(tmp_path / "mine")})
    assert loaded[0] == ["libcudnn.so.9", str(cudnn), "UCUDNN_CUDNN_PATH"]
    empty = load_in_fresh_process({"UCUDNN_CUDNN_PATH": str(tmp_path / "empty")})
    assert "UCUDNN_CUDNN_PATH is set, so no other place was searched" in empty["error"]


@needs_build
def test_roots_and_the_system_loader_serve_when_no_package_is_installed(tmp_path: Path) -> None:
    cudnn = copy_library(CUDNN, tmp_path / "cudnn" / "lib")
    runtime = copy_library(RUNTIME, tmp_path / "system")
    environ = {"CUDNN_ROOT": str(tmp_path / "cudnn"), "LD_LIBRARY_PATH": str(tmp_path / "system")}
    loaded = load_in_fresh_process(environ, hide_packages=True)
    assert loaded == [
        ["libcudnn.so.9", str(cudnn), "CUDNN_ROOT"],
        ["libcudart.so.13", str(runtime), "system loader"],
    ]


@needs_build
def test_nothing_installed_is_an_import_error_naming_the_places() -> None:
    loaded = load_in_fresh_process(hide_packages=True)
    if isinstance(loaded, list):
        pytest.skip(f"this machine has cuDNN where the system loader finds it: {loaded}")
    message = loaded["error"]
    assert message.startswith("cannot load cuDNN (libcudnn.so.9); tried, in order:")
    assert f"{sys.prefix}/lib/libcudnn.so.9 (the environment prefix): no such file" in message
    assert "libcudnn.so.9 (system loader): libcudnn.so.9: cannot open shared object file" in (
        message
    )


# --- which distribution owns a library file ---------------------------------------------


def test_the_installed_libraries_belong_to_their_distributions(tmp_path: Path) -> None:
    assert libraries.owning_distribution(str(installed(CUDNN))) == "nvidia-cudnn-cu13"
    assert libraries.owning_distribution(str(installed(RUNTIME))) == "nvidia-cuda-runtime"
    link = tmp_path / "libcudnn.so.9"  # a link outside the import path, to the package's file
    link.symlink_to(installed(CUDNN))
    assert libraries.owning_distribution(str(link)) == "nvidia-cudnn-cu13"


def fake_site(site: Path, distribution: str, files: list[str]) -> None:
    """A site directory where `distribution` is installed and its record lists `files`."""
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    (info / "RECORD").write_text("".join(f"{file},,\n" for file in files))
    for file in files:
        (site / file).parent.mkdir(parents=True, exist_ok=True)
        (site / file).write_bytes(b"")


def test_the_owner_is_the_distribution_that_installed_the_file_not_the_rules_guess(
    tmp_path: Path,
) -> None:
    """nvidia/cudnn/ of the CUDA 12 package, found where the CUDA 13 one is looked for."""
    site = tmp_path / "site"
    fake_site(site, "nvidia-cudnn-cu12", ["nvidia/cudnn/lib/libcudnn.so.9"])
    first = candidates(CUDNN, {}, found({"nvidia.cudnn": [str(site / "nvidia" / "cudnn")]}))[0]
    assert first.origin == "the nvidia.cudnn package"  # a place searched, not an owner
    assert libraries.owning_distribution(first.target, [str(site)]) == "nvidia-cudnn-cu12"


def test_a_file_no_distribution_lists_is_a_system_library(tmp_path: Path) -> None:
    system = tmp_path / "usr" / "lib" / "libcudnn.so.9"
    system.parent.mkdir(parents=True)
    system.write_bytes(b"")
    assert libraries.owning_distribution(str(system), [str(tmp_path / "site")]) is None
    site = tmp_path / "site"
    fake_site(site, "something-else", ["something/lib/libcudnn.so.9"])
    stray = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"  # on the path, in no record
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"")
    assert libraries.owning_distribution(str(stray), [str(site)]) is None
    assert libraries.owning_distribution("/nowhere/libcudnn.so.9") is None
