"""parity: op-by-op proof that a HIP port of a GPU tensor backend matches its CUDA original."""

__version__ = "0.1.0"
