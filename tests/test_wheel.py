"""The distributions as users get them: names per CUDA major, plain version, requirements,
and (built for real here) a manylinux wheel that carries no CUDA library and loads the ones
the NVIDIA packages provide, from an install layout other than one site-packages."""

from __future__ import annotations

import email.parser
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import ucudnn
from ucudnn.core.libraries import package_dirs

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "build_wheel.py"
OTHER_MAJOR = {"13": "12", "12": "13"}


def run_script(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """The paths .ci/build_wheel.py prints, and its log (stderr); it must succeed."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.split(), result.stderr


def read_metadata(text: str) -> email.message.Message:
    return email.parser.Parser().parsestr(text)


@pytest.mark.parametrize("major", ["13", "12"])
def test_each_cuda_major_is_its_own_distribution(major: str, tmp_path: Path) -> None:
    (dist_info,), _ = run_script("--metadata-only", "--cuda", major, "--out", str(tmp_path))
    metadata = read_metadata(Path(dist_info, "METADATA").read_text())
    assert metadata["Name"] == f"ucudnn-cu{major}"
    assert metadata["Version"] == ucudnn.__version__  # one version, no "+cu13" label
    assert metadata["License-Expression"] == "BSD-3-Clause"
    requires = metadata.get_all("Requires-Dist")
    assert f"nvidia-cudnn-cu{major}<10,>=9.1" in requires
    runtime = "nvidia-cuda-runtime<14,>=13" if major == "13" else "nvidia-cuda-runtime-cu12<13,>=12"
    assert runtime in requires
    assert not [r for r in requires if f"cu{OTHER_MAJOR[major]}" in r]
    assert (
        "[console_scripts]\nucudnn = ucudnn.faces.cli:main"
        in Path(dist_info, "entry_points.txt").read_text()
    )
    assert Path(dist_info, "licenses", "LICENSE").read_text().startswith("BSD 3-Clause License")


def test_missing_tools_are_named_in_one_line_before_anything_is_built(tmp_path: Path) -> None:
    # A Python without pip, auditwheel or scikit-build-core: a fresh bare environment.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True
    )
    bare = tmp_path / "bare" / "bin" / "python"
    out = tmp_path / "dist"
    result = subprocess.run(
        [str(bare), str(SCRIPT), "--cuda", "13", "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("build_wheel.py: nothing built; missing ")
    assert f"auditwheel in {bare} (pip install auditwheel)" in line
    assert f"pip in {bare} ({bare} -m ensurepip)" in line
    assert not out.exists()


def test_the_sdist_holds_what_a_build_needs(tmp_path: Path) -> None:
    (sdist,), _ = run_script("--sdist", "--cuda", "13", "--out", str(tmp_path))
    top = f"ucudnn_cu13-{ucudnn.__version__}"
    assert Path(sdist).name == f"{top}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
        member = archive.extractfile(f"{top}/PKG-INFO")
        assert member is not None
        pkg_info = read_metadata(member.read().decode())
    for needed in (
        "pyproject.toml", "CMakeLists.txt", "README.md", "LICENSE", "native/_cudnn.pyx",
        "native/_build_info.py.in", "ucudnn/__init__.py", "ucudnn/py.typed",
    ):  # fmt: skip
        assert f"{top}/{needed}" in names
    assert pkg_info["Name"] == "ucudnn-cu13"


def test_a_cuda_12_sdist_builds_for_cuda_12_without_being_told(tmp_path: Path) -> None:
    # An sdist's builder sets no UCUDNN_CUDA_MAJOR: the CUDA 12 settings are the copy's own.
    (sdist,), _ = run_script("--sdist", "--cuda", "12", "--out", str(tmp_path))
    top = f"ucudnn_cu12-{ucudnn.__version__}"
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    code = (
        "import sys; from scikit_build_core.build import prepare_metadata_for_build_wheel as p;"
        "print(p(sys.argv[1]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "UCUDNN_CUDA_MAJOR"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=tmp_path / top, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    dist_info = tmp_path / result.stdout.split()[-1]
    requires = read_metadata((dist_info / "METADATA").read_text()).get_all("Requires-Dist")
    assert "nvidia-cudnn-cu12<10,>=9.1" in requires
    assert not [r for r in requires if "cu13" in r]


def _auditwheel_ready() -> str | None:
    try:
        import auditwheel  # noqa: F401
    except ImportError:
        return "auditwheel is not installed (pip install '.[test]')"
    for module in ("scikit_build_core", "Cython"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed; the wheel is built without isolation here"
    return None


@pytest.fixture(scope="module")
def cudnn_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cuDNN outside any Python package, as a system install would be: the pip package's
    headers and libraries, seen through a root of their own."""
    dirs = package_dirs("nvidia.cudnn")
    if not dirs:
        pytest.skip("nvidia-cudnn-cu13 is not installed")
    root = tmp_path_factory.mktemp("system-cudnn-root")
    for sub in ("include", "lib"):
        (root / sub).symlink_to(Path(dirs[0], sub))
    return root


@pytest.fixture(scope="module")
def cu13_wheel(tmp_path_factory: pytest.TempPathFactory, cudnn_root: Path) -> Path:
    """The cu13 wheel, built against `cudnn_root` (CUDNN_ROOT), so that the tests below also
    show that such a build bakes no path of the build machine into the wheel."""
    reason = _auditwheel_ready()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "CUDNN_ROOT": str(cudnn_root)}
    (path,), log = run_script("--cuda", "13", "--no-isolation", "--out", str(out), env=env)
    assert f"cuDNN {cudnn_root}" in log  # CMake's status line: the root was used
    return Path(path)


def test_the_wheel_is_manylinux_and_named_for_its_cuda(cu13_wheel: Path) -> None:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    pattern = (
        rf"ucudnn_cu13-{re.escape(ucudnn.__version__)}-{tag}-{tag}-manylinux_2_\d+_x86_64\.whl"
    )
    assert re.fullmatch(pattern, cu13_wheel.name)


def test_the_wheel_carries_no_cuda_library_and_no_search_path(
    cu13_wheel: Path, cudnn_root: Path
) -> None:
    from elftools.elf.dynamic import DynamicSection  # installed with auditwheel
    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(cu13_wheel) as wheel:
        names = wheel.namelist()
        assert not [n for n in names if ".libs/" in n or re.search(r"libcu\w+\.so", n)]
        for name in (
            "ucudnn/py.typed", "ucudnn/_build_info.py", "ucudnn/_native/_cudnn.pyi",
            # the measured timings `ucudnn plan` uses without a GPU
            "ucudnn/planner/data/measured/h100-2026-11-24.json",
            "ucudnn/planner/data/measured/h100-2026-11-24-resnet50-float32-NCHW.csv.gz",
        ):  # fmt: skip
            assert name in names
        modules = [n for n in names if n.endswith(".so")]
        assert {Path(n).name.split(".")[0] for n in modules} == {
            "_cuda", "_cudnn", "_dlpack", "_loader",
        }  # fmt: skip
        for name in names:
            assert str(cudnn_root).encode() not in wheel.read(name), name
        for name in modules:
            with wheel.open(name) as file:
                elf = ELFFile(io.BytesIO(file.read()))
                tags = [
                    tag.entry.d_tag
                    for section in elf.iter_sections()
                    if isinstance(section, DynamicSection)
                    for tag in section.iter_tags()
                ]
                assert "DT_RPATH" not in tags and "DT_RUNPATH" not in tags, name


def test_a_target_install_loads_the_libraries_of_the_nvidia_packages(
    cu13_wheel: Path, tmp_path: Path
) -> None:
    # The wheel alone in a --target directory, the NVIDIA packages in site-packages: the
    # layout a RUNPATH relative to the module could not serve.
    target = tmp_path / "target"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(target), str(cu13_wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    site_packages = sysconfig.get_paths()["purelib"]
    code = (
        "import ucudnn, ucudnn._native as n, ucudnn._native._cudnn as c;"
        "print(ucudnn.__file__); print(c.version());"
        "print('\\n'.join(lib.path for lib in n.LIBRARIES))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), site_packages])}
    # -S: no site-packages processing, so the editable install of this checkout stays out.
    result = subprocess.run(
        [sys.executable, "-S", "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    module, version, cudnn, runtime = result.stdout.split()
    assert module == str(target / "ucudnn" / "__init__.py")
    assert int(version) >= 90000
    assert cudnn.startswith(site_packages) and cudnn.endswith("libcudnn.so.9")
    assert runtime.endswith("libcudart.so.13")
