# cython: language_level=3
"""Thin binding of cuDNN 9: handles, descriptors, the legacy convolution API, the operations a
framework needs beside it, and the backend (graph) API.

Faithful to C: functions keep cuDNN's argument order, device pointers and streams travel as
Python ints, dtypes/layouts/modes are strings, and every status is checked; a failure raises a
ucudnn.errors.CudnnError subclass naming the call, the status and cuDNN's last error message.
Descriptor objects own their C handles and destroy them when they are garbage. alpha and beta
are passed as double when the output tensor is float64 and as float otherwise (cuDNN's rule).

The parts are include files by job rather than modules of their own, so that the binding stays
one module: one Python surface for the simulator to twin and one stub (_cudnn.pyi) to hold.
"""

include "_cudnn_names.pxi"
include "_cudnn_shared.pxi"
include "_cudnn_descriptors.pxi"
include "_cudnn_convolutions.pxi"
include "_cudnn_operations.pxi"
include "_cudnn_graph.pxi"
