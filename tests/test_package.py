"""The package's public names: each resolves (loaded on first use), and nothing else does."""

from __future__ import annotations

import importlib

import pytest

import ucudnn


@pytest.mark.parametrize("package", ["ucudnn", "ucudnn.planner"])
def test_every_exported_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        source = importlib.import_module(module._EXPORTS[name], package)
        assert getattr(module, name) is getattr(source, name)
        assert name in dir(module)


@pytest.mark.parametrize("package", ["ucudnn", "ucudnn.planner"])
def test_an_unknown_name_is_an_attribute_error_naming_it(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'conv_fwd'"):
        module.conv_fwd  # noqa: B018


def test_version_is_plain() -> None:
    # Package indexes refuse local labels such as "+cu13"; the CUDA major is in the name.
    assert "+" not in ucudnn.__version__
    assert all(part.isdigit() for part in ucudnn.__version__.split("."))
