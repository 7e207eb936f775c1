"""The native modules, built from native/*.pyx: `_cuda`, `_cudnn`, `_dlpack` and `_loader`.

Private: users reach a documented subset through `ucudnn.cuda` and `ucudnn.cudnn`.

Importing this package first loads cuDNN and the CUDA runtime (`ucudnn.core.libraries`), so
that the modules' links resolve whatever the install layout. `LIBRARIES` says which file of
each was loaded and which rule found it.

UCUDNN_DEVICE=sim chooses the simulated device instead (`ucudnn.testing.simulator`, a test
double): `_cuda` and `_cudnn` are then its modules and no library is loaded. That switch is
the only way the simulator is ever imported.
"""

import os

DEVICE_VARIABLE = "UCUDNN_DEVICE"
_device = os.environ.get(DEVICE_VARIABLE, "").strip().lower()
SIMULATED = _device == "sim"
"""Whether `_cuda` and `_cudnn` are the simulated device's modules in this process."""
if SIMULATED:
    from ucudnn.testing.simulator import install

    LIBRARIES = install()
elif _device in ("", "gpu"):
    from ucudnn.core.libraries import load_libraries

    LIBRARIES = load_libraries()
else:
    from ucudnn.core.checks import shown

    raise ImportError(
        f"{DEVICE_VARIABLE}={shown(os.environ[DEVICE_VARIABLE])}: expected 'gpu' (the default) "
        "or 'sim' (the simulated device)"
    )
