"""HIP runtime plumbing shared by the `amd` executor and the host routines it runs (hipBLAS,
MIOpen): error checking, guarded device buffers, scratch memory, and whether there is an AMD GPU.
hip-python is imported on use, so this module imports on any machine."""
from __future__ import annotations

import contextlib

import numpy as np

from parity.host.hipcall import check
from parity.host.marshal import GUARD_BYTES, guarded_image
from parity.ops.base import Launch


@contextlib.contextmanager
def device_buffers(launch: Launch):
    """A launch's buffers on the AMD device between guard bytes: yields (host arrays, device
    pointer of each buffer's data, images); after the body every buffer is downloaded (guards
    included) into images, and everything is freed on the way out."""
    from hip import hip
    hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
    allocs, images = {}, {}
    try:
        for n, h in hosts.items():
            img = guarded_image(h)
            d = check(hip.hipMalloc(img.nbytes))
            check(hip.hipMemcpy(d, img, img.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
            allocs[n] = (d, img.nbytes)
        yield hosts, {n: int(d) + GUARD_BYTES for n, (d, _) in allocs.items()}, images
        for n, (d, size) in allocs.items():
            back = np.empty(size, np.uint8)
            check(hip.hipMemcpy(back, d, size, hip.hipMemcpyKind.hipMemcpyDeviceToHost))
            images[n] = back
    finally:
        for d, _ in allocs.values():
            hip.hipFree(d)


class HipMemory:
    """Device memory for host routines that hand raw pointers to a library (MIOpen): the
    launch's guarded buffers (`device_buffers`) plus scratch (the workspace)."""

    def __init__(self) -> None:
        self._live: dict[int, object] = {}

    buffers = staticmethod(device_buffers)

    def alloc(self, nbytes: int) -> int:
        from hip import hip
        d = check(hip.hipMalloc(nbytes))
        self._live[int(d)] = d
        return int(d)

    def free(self, ptr: int) -> None:
        from hip import hip
        hip.hipFree(self._live.pop(ptr))

    def synchronize(self) -> None:
        from hip import hip
        check(hip.hipDeviceSynchronize())


def detect() -> tuple[bool, str, str]:
    """(available, reason, gcnArchName)."""
    try:
        from hip import hip, hiprtc  # noqa: F401
    except ImportError as e:
        return False, f"hip-python not installed ({e}): pip install hip-python", ""
    except OSError as e:
        return False, f"ROCm libraries missing ({e}): apt-get install libamdhip64-dev libhiprtc-dev", ""
    try:
        err, count = hip.hipGetDeviceCount()
    except Exception as e:
        return False, f"HIP runtime unusable: {e}", ""
    if err != hip.hipError_t.hipSuccess or count == 0:
        return False, f"no AMD GPU ({getattr(err, 'name', err)}, {count} devices)", ""
    try:
        props = hip.hipDeviceProp_t()
        check(hip.hipGetDeviceProperties(props, 0))
        arch = props.gcnArchName
        arch = arch.decode() if isinstance(arch, bytes) else str(arch)
    except Exception as e:
        return False, f"hipGetDeviceProperties failed: {e}", ""
    return True, "", arch
