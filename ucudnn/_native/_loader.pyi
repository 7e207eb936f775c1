"""Type stubs for ucudnn._native._loader (native/_loader.pyx)."""

def open_library(name: str) -> str:
    """dlopen `name` (a path, or a soname) for the whole process; returns the file loaded.
    Raises OSError with the loader's message."""
