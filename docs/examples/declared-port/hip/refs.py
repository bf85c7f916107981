"""vecops's references that a NumPy one-liner does not say (parity-kernels.toml: refs.<name>).

Each function takes the operands, scalars and sizes it names (floats as float64) and `dtype`, the
case's dtype; it returns the kernel's output."""
import numpy as np


def rowsum(a, dtype):
    """Each row summed in T from left to right, as rowsum_T does (so the result is exact)."""
    t = np.float32 if dtype == "f32" else np.float64
    acc = np.zeros(a.shape[0], dtype=t)
    with np.errstate(all="ignore"):
        for c in range(a.shape[1]):
            acc = (acc + a[:, c].astype(t)).astype(t)
    return acc
