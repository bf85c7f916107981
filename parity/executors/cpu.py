"""The `cpu` level: executes a Launch in NumPy the way Candle's kernels read their arguments.

It walks `info` and the pointers exactly as a kernel does (null info = contiguous, one stride
array per operand, pointer offsets, null input = in place) and computes with the reference's
math. It checks the case machinery (layouts, info, packing) end to end on any machine; it is
not an independent check of the math. Tests subclass it to build deliberately broken subjects.
"""
from __future__ import annotations

import numpy as np

from parity import profiles
from parity.executors.base import Availability, Executor
from parity.host.blas import EmulatedBlas
from parity.host.routines import run_library
from parity.ops.base import ChainLaunch, ExecResult, Launch, Op
from parity.ops.matmul import GemmConfig, gemm_strided_batched
from parity.ops.nn import row_math
from parity.ops.quantized import scale_min_k4
from parity.ops.quantized.matvec import mmv_reduce
from parity.ops.reduce import cuda_block_reduce
from parity.ops.sort import bitonic_argsort
from parity.profiles.kernels import run_reference


def _kernel_table(profile: str | None) -> dict:
    return profiles.get(profile).expected_kernels()


class CpuExecutor(Executor):
    level = "cpu"

    def __init__(self, profile: str | None = None) -> None:
        self.profile = profile                  # the ABI profile whose kernels it interprets (None: Candle's)
        self._kernels = _kernel_table(profile)

    def __getstate__(self) -> dict:             # the kernel table holds closures: rebuilt, not pickled
        return {k: v for k, v in self.__dict__.items() if k != "_kernels"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._kernels = _kernel_table(self.__dict__.get("profile"))

    def availability(self) -> Availability:
        return Availability(True, device="NumPy ABI emulation")

    # --- hooks a broken subject overrides -------------------------------------------------
    def operand_strides(self, info: np.ndarray, nd: int, k: int) -> np.ndarray:
        """Strides of operand k: its own array after the dims (binary: lhs, rhs; where: 3)."""
        return info[nd * (1 + k): nd * (2 + k)]

    def pointer_offset(self, offset: int) -> int:
        return offset

    def gather(self, base: np.ndarray, offset: int, info: np.ndarray | None, nd: int, k: int,
               numel: int) -> np.ndarray:
        if info is None or self._contiguous(info, nd, k):
            return base[offset: offset + numel]
        dims = info[:nd].astype(np.int64)
        strides = self.operand_strides(info, nd, k).astype(np.int64)
        idx = np.zeros(numel, dtype=np.int64)
        rem = np.arange(numel, dtype=np.int64)
        for d in reversed(range(nd)):               # get_strided_index: peel dims from the last
            idx += (rem % dims[d]) * strides[d]
            rem //= dims[d]
        return base[offset + idx]

    def _contiguous(self, info: np.ndarray, nd: int, k: int) -> bool:
        dims, strides = info[:nd], self.operand_strides(info, nd, k)
        acc = 1
        for d in reversed(range(nd)):
            if dims[d] > 1 and strides[d] != acc:
                return False
            acc *= int(dims[d])
        return True

    def compute(self, op: Op, key: str, inputs: dict[str, np.ndarray], params: dict) -> np.ndarray:
        return op.reference(inputs, params, key, op)

    def store(self, out: np.ndarray, values: np.ndarray) -> None:
        out[: values.size] = values

    # --- hooks of the structured families (reduce, nn, indexing, sort) ----------------------
    # The op modules' `emulate` functions call these; each default is the CUDA behaviour.
    def reduce_walk(self, info: np.ndarray, nd: int) -> tuple[np.ndarray, np.ndarray]:
        """(dims, strides) a reduce kernel walks: the permuted arrays of `info`."""
        return info[:nd].astype(np.int64), info[nd: 2 * nd].astype(np.int64)

    def reduce_row(self, kind: str, vals: np.ndarray, block: int, dt) -> tuple:
        """One block's result over one row (vals in the block's element order):
        (value, row index) — index only meaningful for argmin/argmax."""
        return cuda_block_reduce(kind, vals, block, dt)

    def store_index(self, dst: np.ndarray, i: int, idx: int) -> None:
        """argmin/argmax write a u32 index."""
        dst[i] = np.uint32(idx)

    def is_sentinel(self, ids: np.ndarray, itype) -> np.ndarray:
        """Which ids equal max_value<I>() (index_select/gather write 0, ia/s/sa skip)."""
        return ids == np.iinfo(itype.np).max

    def row_op(self, root: str, x: np.ndarray, alpha, beta, dt, eps: float) -> np.ndarray:
        """softmax / rmsnorm / layernorm over the rows of x (alpha, beta: None when not given)."""
        return row_math(root, x, alpha, beta, dt, eps)

    def rope_stride_b(self, stride_b: int) -> int:
        return stride_b

    def sort_row(self, vals: np.ndarray, ncols: int, ncols_pad: int, asc: bool) -> np.ndarray:
        """The first ncols entries of the bitonic network's index row (padding sorts last)."""
        return bitonic_argsort(vals, ncols, ncols_pad, asc)

    def scatter_order(self, n: int) -> np.ndarray:
        """The order in which a thread visits j (ia/s/sa loop j serially: last writer wins)."""
        return np.arange(n)

    # --- hooks of the profiles' described kernels (parity.profiles.kernels.emulate) ------------
    def role_strides(self, op: Op, key: str, operand: str, strides_of: dict[str, np.ndarray]) -> np.ndarray:
        """The strides a kernel reads operand `operand` with (the array the launch passes for it)."""
        return strides_of[operand]

    def role_compute(self, op: Op, key: str, inputs: dict[str, np.ndarray], sizes: dict, scalars: dict) -> dict:
        """The outputs of a described kernel: its reference (parity.profiles.kernels.run_reference)."""
        return run_reference(op, key, inputs, sizes, scalars)

    def role_store(self, op: Op, key: str, name: str, buf: np.ndarray, positions: np.ndarray,
                   values: np.ndarray) -> None:
        """Write an output's values (row-major logical order) at its buffer positions."""
        buf[positions] = values

    # --- hooks of the quantized family (GGUF dequantize, dmmv, mmvq) ------------------------
    def quant_scale(self, blocks: np.ndarray, at: int) -> np.ndarray:
        """The f16 scale field at byte `at` of each block (rows of u8), as f32 (`__half2float`)."""
        return blocks[:, at:at + 2].copy().view(np.float16).reshape(-1).astype(np.float32)

    def quant_nibbles(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A quant byte split as the kernels do: (low nibble, high nibble)."""
        return q & 0xF, q >> 4

    def quant_scale_min_k4(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """q4_K/q5_K: the 12 packed bytes of each block -> (rows, 8) 6-bit scales and mins."""
        return scale_min_k4(packed)

    def q8_1_sum(self, s: np.ndarray) -> np.ndarray:
        """mmvq: the s (sum of the block's activations) of q8_1 blocks, as the vec_dot reads it."""
        return s

    def quant_row_stride(self, blocks_per_row: int) -> int:
        """dmmv/mmvq: how many weight blocks apart consecutive rows start."""
        return blocks_per_row

    def mmv_reduce(self, lanes: np.ndarray) -> np.ndarray:
        """dmmv/mmvq: (..., warps, 32) per-thread partial sums -> the row's sum."""
        return mmv_reduce(lanes)

    # --- hooks of pooling, convolution and the host routines --------------------------------
    def pool_params(self, w_k: int, h_k: int, w_stride: int, h_stride: int) -> tuple[int, int, int, int]:
        """The window and stride a pool kernel reads from its arguments."""
        return w_k, h_k, w_stride, h_stride

    def im2col_dilation(self, dilation: int) -> int:
        """The dilation im2col / im2col1d step by."""
        return dilation

    def blas_gemm(self, cfg: GemmConfig, a: np.ndarray, b: np.ndarray, c: np.ndarray, out_dt) -> None:
        """The strided-batched GEMM of `blas.gemm` on the flat buffers at the BLAS pointers."""
        gemm_strided_batched(cfg, a, b, c, out_dt)

    def blas(self) -> EmulatedBlas:
        return EmulatedBlas(self.pointer_offset, self.blas_gemm)

    # --- the interpreter ------------------------------------------------------------------
    def run(self, launch: Launch) -> ExecResult:
        if isinstance(launch, ChainLaunch):
            return self.run_chain(launch)
        if launch.kernel not in self._kernels:
            return ExecResult("missing", message=f"no kernel {launch.kernel} in the ABI emulation")
        if launch.library:                           # host routine (BLAS, conv): parity/host/routines.py
            return run_library(self, launch)
        op, key = self._kernels[launch.kernel]
        bufs = {n: b.copy() for n, b in launch.buffers.items()}
        try:                                         # the op's interpreter of its launches
            op.spec.emulate(self, launch, bufs, op, key)
        except IndexError as e:
            return ExecResult("crash", message=f"emulated {launch.kernel} accessed memory out of bounds: {e}")
        return ExecResult("ok", outputs={n: bufs[n] for n in launch.outputs})
