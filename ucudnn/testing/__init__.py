"""Test doubles for ucudnn and for code built on it; nothing here is imported in production.

`ucudnn.testing.simulator` is a simulated device: the CUDA runtime and cuDNN surface of
`ucudnn._native` in Python and numpy, chosen with UCUDNN_DEVICE=sim.
"""
