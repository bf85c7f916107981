"""Host routines: Candle's host code that executors run with their own means (BLAS, MIOpen, the
conv1d/conv2d host sequence), the HIP runtime plumbing they share with the `amd` executor, and
pure helpers (guards, argument marshalling) in `marshal`, a leaf. Below the executors: executors
import this package, never the reverse (it uses only the contract in parity.executors.base)."""
