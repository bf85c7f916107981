"""Argument packing: turn an op's declared ABI parameter list into a concrete launch.

The same Launch runs on every executor (CPU emulation, HIP on NVIDIA, AMD, CUDA), so
packing is written once and a port is judged on exactly what Candle's host code passes.
"""
from __future__ import annotations

import numpy as np

from parity.core.dtypes import DType
from parity.core.layouts import SENTINEL, Layout, candle_info, contiguous, poison_fill
from parity.ops.base import Arg, Launch, Op, Operands, for_num_elems


def sentinel_fill(dt: DType, n: int) -> np.ndarray:
    return np.full(n * (dt.bits // 8), SENTINEL, dtype=np.uint8).view(dt.np)


def pack(op: Op, key: str, ops: Operands, params: dict[str, float], inplace: bool = False,
         out_layout: Layout | None = None) -> Launch:
    """Build the launch Candle's CUDA backend would make for this op and these operands."""
    out_dt = op.out_dtype(key)
    shape = (ops.layouts[ops.names[0]].shape if ops.names else out_layout.shape)
    numel = int(np.prod(shape, dtype=np.int64))
    buffers = {n: ops.bases[n] for n in ops.names}
    dtypes = {n: ops.dtypes[n].name for n in ops.names}
    if op.out_mode == "buffer":               # const_set/fill: the output buffer has a layout
        out = out_layout or contiguous(shape)
        buffers["out"] = poison_fill(out_dt, out.base_size) if op.family != "fill" else sentinel_fill(out_dt, out.base_size)
        layouts = [out]
        out_offset = out.offset
    elif inplace:                             # null input: the op reads and writes `out`
        src = ops.names[0]
        buffers["out"] = np.ascontiguousarray(ops.logical[src].reshape(-1)).copy()
        layouts = [ops.layouts[src]]          # info as for the input's view: null when contiguous,
                                              # else the kernel takes its strided path (reading out[i])
        out_offset = 0
    else:
        buffers["out"] = sentinel_fill(out_dt, numel)
        layouts = [ops.layouts[n] for n in ops.names]
        out_offset = 0
    dtypes["out"] = out_dt.name
    t = op.dtype_parts(key)[-1]
    args: list[Arg] = []
    for p in op.abi:
        name, _, typ = p.partition(":")
        if name == "numel":
            args.append(Arg("size_t", numel, name=name))
        elif name == "num_dims":
            args.append(Arg("size_t", len(shape), name=name))
        elif name == "info":
            info = candle_info(shape, layouts, always=op.info_always)
            args.append(Arg("info", info, name=name))
        elif name == "out":
            args.append(Arg("ptr", ("out", out_offset), name=name))
        elif not typ:                          # an input operand
            ptr = None if inplace and name == ops.names[0] else (name, ops.layouts[name].offset)
            args.append(Arg("ptr", ptr, name=name))
        elif typ == "T":
            args.append(Arg("scalar", params[name], dtype=t.name, name=name))
        else:
            args.append(Arg(typ, params[name], name=name))
    return Launch(op.kernel_name(key), args, buffers, ("out",), for_num_elems(numel), dtypes=dtypes)


def extract(op: Op, launch_out: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The logical result inside the returned output buffer."""
    if op.out_mode == "buffer":
        return launch_out
    n = int(np.prod(shape, dtype=np.int64))
    return launch_out[:n].reshape(shape)
