"""A Launch's buffers on a CUDA device, kept for timing (parity.timing's PreparedLaunch): guarded
images as the correctness run lays them out, and pristine copies of the outputs so every timed
sample starts from the same bytes. The HIP counterpart is amd.HipPrepared."""
from __future__ import annotations

import numpy as np

from parity.host.marshal import GUARD_BYTES, arg_values, guarded_image
from parity.ops.base import Launch


class DeviceImages:
    """The buffers of `launch` on the current CUDA device (CuPy), with pristine output copies.
    Subclasses (or the owner) supply `enqueue`."""

    def __init__(self, launch: Launch):
        import cupy
        self.cp, self.launch = cupy, launch
        self.hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        self.images = {n: guarded_image(h) for n, h in self.hosts.items()}
        self.dev = {n: cupy.asarray(img) for n, img in self.images.items()}
        self.pristine = {n: self.dev[n].copy() for n in launch.outputs if n in self.dev}
        self.inplace = any(a.kind == "ptr" and a.value is None for a in launch.args)

    def refresh(self) -> None:
        """Re-upload every buffer from the host (inputs and the pristine outputs)."""
        for n, img in self.images.items():
            self.dev[n].set(img)
        for n in self.pristine:
            self.pristine[n].set(self.images[n])
        self.cp.cuda.Device().synchronize()

    def restore(self, clock) -> None:
        for n, p in self.pristine.items():
            clock.copy(int(self.dev[n].data.ptr), int(p.data.ptr), p.nbytes)

    def outputs(self) -> dict[str, np.ndarray]:
        """Output images (guards included), downloaded."""
        return {n: self.cp.asnumpy(self.dev[n]) for n in self.launch.outputs}

    @staticmethod
    def image_of(name: str, arr: np.ndarray) -> np.ndarray:
        return guarded_image(np.ascontiguousarray(arr))

    def release(self) -> None:
        self.dev.clear()
        self.pristine.clear()


class CupyPrepared(DeviceImages):
    """A suite kernel's Launch on CuPy device buffers, ready to be enqueued any number of times."""

    def __init__(self, func, launch: Launch):
        super().__init__(launch)
        self.func = func
        self._infos = []

        def info_address(a):
            d = self.cp.asarray(a)
            self._infos.append(d)
            return int(d.data.ptr)
        self.args = tuple(arg_values(launch, lambda n: int(self.dev[n].data.ptr) + GUARD_BYTES, info_address))
        self.grid = tuple(int(g) for g in launch.grid)
        self.block = tuple(int(b) for b in launch.block)
        self.shared = int(launch.shared_mem)
        self.cp.cuda.Device().synchronize()

    def enqueue(self) -> None:
        self.func(self.grid, self.block, self.args, shared_mem=self.shared)

    def release(self) -> None:
        super().release()
        self._infos.clear()
