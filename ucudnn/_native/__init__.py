"""The native modules, built from native/*.pyx: `_cuda`, `_cudnn`, `_dlpack` and `_loader`.

Importing this package first loads cuDNN and the CUDA runtime (`ucudnn.core.libraries`), so
that the modules' links resolve whatever the install layout. `LIBRARIES` says which file of
each was loaded and which rule found it.
"""

from ucudnn.core.libraries import load_libraries

LIBRARIES = load_libraries()
