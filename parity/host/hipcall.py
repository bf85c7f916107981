"""hip-python's calling convention in one place: every call returns (err, *values)."""
from __future__ import annotations


def check(result):
    """Raise RuntimeError on a HIP or hiprtc error; return the call's value(s) (None if it has none)."""
    from hip import hip, hiprtc
    err, rest = result[0], result[1:]
    if isinstance(err, hip.hipError_t) and err != hip.hipError_t.hipSuccess:
        raise RuntimeError(f"{err.name}")
    if isinstance(err, hiprtc.hiprtcResult) and err != hiprtc.hiprtcResult.HIPRTC_SUCCESS:
        raise RuntimeError(f"{err.name}")
    return rest[0] if len(rest) == 1 else (rest or None)
