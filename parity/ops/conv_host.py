"""`conv.conv1d_host` / `conv.conv2d_host`: Candle's backend conv1d/conv2d (what `Tensor::conv1d` runs;
no cudnn), a `conv.host` host routine rather than one kernel (`HostConv`): im2col1d_T / im2col_T,
[ucopy_T of a non-contiguous kernel into kernel_c], ONE GEMM (1, b*l_out, c_out, c_in*k) against the
kernel viewed as (c_out, c_in*k)ᵀ, then ucopy_T of the (b, l_out, c_out) result into N,C,L (a memcpy
when that view is contiguous). CUDA Candle runs the GEMM on the *original* kernel buffer even when it
copied it (KD_CONV_NONCONTIGUOUS_KERNEL); the ROCm port runs it on kernel_c. On `amd`, f32/f16/bf16
with contiguous operands go through MIOpen first (parity/host/conv.py runs the sequence).

The cases, reference and judge are the direct kernels' (parity/ops/conv.py, HOST_ROOTS): the same
convolution, computed another way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from parity.core.dtypes import dtype
from parity.core.layouts import Layout, contiguous, strided
from parity.ops.abi import pack, sentinel_fill
from parity.ops.base import Arg, ChainSupport, Known, Launch, Op, Operands, StructuredSpec
from parity.ops.conv import (BY_ROOT, C1, C2, CHAIN_2D, build, expected, im2col_launch, info_of, judge, out_len,
                             shape_class, size_arg, tolerance_text)
from parity.ops.matmul import DTYPES as GEMM_DTYPES
from parity.ops.matmul import gemm_launch
from parity.ops.structured import StructuredBuilt, out_buffer
from parity.ops.unary import OPS as UNARY_OPS

KD_CONV_NONCONTIGUOUS_KERNEL = Known(
    "cuda", "*/c[12]-kslice/*",
    "KD cuda-conv-noncontiguous-kernel: candle's CUDA conv1d/conv2d copy a non-contiguous kernel into "
    "kernel_c, then run the GEMM on the original buffer read as a contiguous (c_out, c_in*k) matrix "
    "from its start offset (cuda_backend/mod.rs); the ROCm port runs it on kernel_c")

# The host path takes every view Candle's conv1d/conv2d accept: the direct kernels' classes plus a
# kernel at an offset (contiguous: the GEMM reads it in place), a strided source and c_out 1 (the
# result needs no transposing copy).
H1 = {**C1, **{s.name: s for s in [
    shape_class("c1-koffset", "kernel out-channels 1..5 of a (5,3,3) kernel: contiguous at offset 9", src=(2, 3, 11),
        k=(4, 3, 3), kview="offset"),
    shape_class("c1-src-nlc", "src a (2,11,3) N,L,C tensor viewed as N,C,L (strides [33,1,3]), stride 2", src=(2, 3, 11),
        k=(4, 3, 3), sview="transposed", stride=2),
    shape_class("c1-cout1", "c_out 1, padding 2: the (b, l_out, 1) result is already N,C,L (memcpy)", src=(2, 3, 11),
        k=(1, 3, 3), padding=2),
]}}
H2 = {**C2, **{s.name: s for s in [
    shape_class("c2-koffset", "kernel out-channels 1..5 of a (5,3,3,2) kernel: contiguous at offset 18", src=(2, 3, 7, 6),
        k=(4, 3, 3, 2), kview="offset"),
    shape_class("c2-src-strided", "src N,C,W,H memory (H/W strides swapped), stride 2, padding 1", src=(2, 3, 7, 6),
        k=(4, 3, 3, 2), sview="transposed", stride=2, padding=1),
    shape_class("c2-cout1", "c_out 1: the (b, h_out, w_out, 1) result is already NCHW (memcpy)", src=(2, 3, 7, 6),
        k=(1, 3, 3, 2), padding=1),
]}}


@dataclass(frozen=True)
class HostConv:
    """One call of Candle's backend conv1d/conv2d as its host code sees it: the operand layouts
    (src (b, c_in, l) or (b, c_in, h, w); kernel (c_out, c_in, k...)) and the parameters. Each
    method builds one launch of that host code, in order; parity.host.conv runs them."""
    key: str
    src: Layout
    kernel: Layout
    stride: int
    padding: int
    dilation: int

    @classmethod
    def from_launch(cls, launch: Launch) -> "HostConv":
        a = {x.name: x for x in launch.args}

        def lay(info: str, ptr: str) -> Layout:
            v = [int(x) for x in a[info].value]
            return strided(v[:len(v) // 2], v[len(v) // 2:], int(a[ptr].value[1]))
        return cls(launch.dtypes["dst"], lay("src_layout", "src"), lay("kernel_layout", "kernel"),
                   int(a["stride"].value), int(a["padding"].value), int(a["dilation"].value))

    def out_spatial(self) -> tuple[int, ...]:
        return tuple(out_len(n, k, self.stride, self.padding, self.dilation)
                     for n, k in zip(self.src.shape[2:], self.kernel.shape[2:]))

    def bmnk(self) -> tuple[int, int, int, int]:
        """The one GEMM: (1, b*l_out, c_out, c_in*k) (b*h_out*w_out rows for conv2d)."""
        return (1, self.src.shape[0] * math.prod(self.out_spatial()), self.kernel.shape[0],
                math.prod(self.kernel.shape[1:]))

    def im2col(self, src_base: np.ndarray) -> Launch:
        return im2col_launch(self.key, self.src, src_base, tuple(self.kernel.shape[2:]), self.stride, self.padding,
                             self.dilation)

    def kernel_copy(self, kernel_base: np.ndarray) -> Launch:
        """copy_strided_src of a non-contiguous kernel into a dense kernel_c (ucopy_T)."""
        return _ucopy(self.key, self.kernel, kernel_base)

    def gemm(self, col: np.ndarray, rhs_base: np.ndarray, rhs_offset: int) -> Launch:
        """col (b*m, k) @ kernel (c_out, k)ᵀ read from `rhs_base` at `rhs_offset` (a (k, c_out) view,
        strides [1, k]) into a fresh (b*m, c_out) result."""
        _, m, n, k = self.bmnk()
        return gemm_launch(self.key, self.bmnk(), contiguous((m, k)), col, strided((k, n), (1, k), rhs_offset),
                           rhs_base, sentinel_fill(dtype(self.key), m * n))

    def result_layout(self) -> Layout:
        """The GEMM result (b, *out, c_out) viewed as (b, c_out, *out): Candle's res_l."""
        b, n, outs = self.src.shape[0], self.kernel.shape[0], self.out_spatial()
        st = contiguous((b, *outs, n)).strides
        return strided((b, n, *outs), (st[0], 1, *st[1:-1]))

    def copy_back(self, res: np.ndarray) -> Launch | None:
        """ucopy_T of the result into N,C,L / NCHW; None when res_l is contiguous (memcpy_dtod)."""
        rl = self.result_layout()
        return None if rl.is_contiguous() else _ucopy(self.key, rl, res)


def _ucopy(key: str, layout: Layout, base: np.ndarray) -> Launch:
    """Candle's copy_strided_src of a non-contiguous view: ucopy_T into a dense `out`."""
    return pack(UCOPY, key, Operands(("x",), {"x": dtype(key)}, {"x": layout}, {"x": base}, {"x": None}), {})


UCOPY = next(o for o in UNARY_OPS if o.root == "ucopy")


def _pack_host(b: StructuredBuilt) -> Launch:
    """The `conv.host` launch: the operands' layouts and Candle's conv parameters; the executor
    runs the host sequence (parity.host.conv) from them."""
    g, sl, kl = b.geo, b.layouts["src"], b.layouts["k"]
    args = [size_arg("stride", g["stride"]), size_arg("padding", g["padding"]), size_arg("dilation", g["dilation"]),
            Arg("info", info_of(sl), name="src_layout"), Arg("info", info_of(kl), name="kernel_layout"),
            Arg("ptr", ("src", sl.offset), name="src"), Arg("ptr", ("k", kl.offset), name="kernel"),
            Arg("ptr", ("dst", 0), name="dst")]
    bufs = {"src": b.bases["src"], "k": b.bases["k"], "dst": out_buffer(b)}
    return Launch(b.op.kernel_name(b.key), args, bufs, ("dst",), grid=(1, 1, 1), block=(1, 1, 1),
                  library="conv.host", dtypes={n: b.key for n in bufs})


def _host_row_fields(b: StructuredBuilt, res) -> dict:
    hc = HostConv(b.key, b.layouts["src"], b.layouts["k"], b.geo["stride"], b.geo["padding"], b.geo["dilation"])
    _, m, n, k = hc.bmnk()
    return {"flops": 2.0 * m * n * k, **res.detail}


def _host_kernels(root: str) -> Callable[[str], tuple[str, str]]:
    im2col = "im2col1d" if root == "conv1d_host" else "im2col"
    return lambda key: (BY_ROOT[im2col].kernel_name(key), UCOPY.kernel_name(key))


SEMANTICS = {
    "conv1d_host": "Candle's backend conv1d: im2col1d_T, ucopy_T of a non-contiguous kernel into kernel_c, one GEMM "
                   "(1, b*l_out, c_out, c_in*k) against the kernel as (c_out, c_in*k)ᵀ, ucopy_T to N,C,L; MIOpen "
                   "first on amd",
    "conv2d_host": "Candle's backend conv2d: im2col_T, ucopy_T of a non-contiguous kernel into kernel_c, one GEMM "
                   "(1, b*h_out*w_out, c_out, c_in*kh*kw), ucopy_T to NCHW; MIOpen first on amd",
}


def _host_op(name: str, root: str, shapes: dict, chain: ChainSupport | None = None) -> Op:
    return Op(name=name, family="conv", root=root, dtypes=GEMM_DTYPES, inputs=("src", "k"),
              value_classes=("normal",),
              abi=("stride:size_t", "padding:size_t", "dilation:size_t", "src_layout", "kernel_layout", "src",
                   "kernel", "dst"),
              semantics=SEMANTICS[root], divergences=(KD_CONV_NONCONTIGUOUS_KERNEL.reason,), known=(KD_CONV_NONCONTIGUOUS_KERNEL,),
              spec=StructuredSpec(shapes=shapes, build=build, pack=_pack_host, expected=expected, judge=judge,
                                  tolerance=tolerance_text(root), library="conv.host",
                                  row_fields=_host_row_fields, suite_kernels=_host_kernels(root), chain=chain))


OPS = [
    _host_op("conv.conv1d_host", "conv1d_host", H1),
    _host_op("conv.conv2d_host", "conv2d_host", H2, CHAIN_2D),
]
