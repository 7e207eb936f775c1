"""tiny_caffe: a minimal Caffe-like framework that runs its convolutions through ucudnn.Handle.

Blobs live on the device; every layer is a cuDNN call (convolutions go through the Handle, so
they are micro-batched under its workspace limit); only the loss is computed on the host.
`python -m examples.tiny_caffe.train --help` trains a small CNN on synthetic data.
"""
