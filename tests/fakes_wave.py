"""NumPy models of the wave-size fixtures (tests/fixtures/broken_wave): what each broken reduce
kernel computes on a wavefront of `wave` lanes. At wave 32 every bug vanishes (the model is the
correct reduction); at wave 64 the model follows the bug. The folds are order-independent (u32
sums wrap, f32 min/max are exact), so the model predicts the GPU's bits, not just a verdict."""
from __future__ import annotations

import numpy as np

from parity.ops.base import ExecResult
from parity.executors.cpu import CpuExecutor

IDENTITY = {"sum": 0, "max": -np.inf, "min": np.inf}


def _red(kind: str, x: np.ndarray):
    if kind == "sum":
        return np.uint64(int(np.sum(x.astype(np.uint64))) & 0xFFFFFFFF)
    if x.size == 0:
        return IDENTITY[kind]
    return (np.fmax if kind == "max" else np.fmin).reduce(x)


def _offsets(numel: int, nd: int, info: np.ndarray) -> np.ndarray:
    dims, strides = info[:nd].astype(np.int64), info[nd:2 * nd].astype(np.int64)
    rem, off = np.arange(numel, dtype=np.int64), np.zeros(numel, dtype=np.int64)
    for d in range(nd - 1, -1, -1):
        off += (rem % dims[d]) * strides[d]
        rem //= dims[d]
    return off


def partials(kind: str, row: np.ndarray, block: int) -> np.ndarray:
    """Thread t's fold of the row's elements t, t+B, ... (common_wave.h part_*)."""
    pad = (-row.size) % block
    if kind == "sum":
        r = np.concatenate([row.astype(np.uint64), np.zeros(pad, np.uint64)]).reshape(-1, block)
        return (r.sum(axis=0) & 0xFFFFFFFF).astype(np.uint64)
    r = np.concatenate([row.astype(np.float64), np.full(pad, IDENTITY[kind])]).reshape(-1, block)
    return (np.fmax if kind == "max" else np.fmin).reduce(r, axis=0) if r.shape[0] else np.full(block, IDENTITY[kind])


def block_result(bug: str, kind: str, p: np.ndarray, wave: int):
    """What one block of fixture `bug` writes, from its B thread partials, on `wave` lanes."""
    B = p.size
    t = np.arange(B)
    lo = (t % wave) < 32                                   # lanes 0..31 of each wavefront
    waves = [p[k:k + wave] for k in range(0, B, wave)]
    if bug == "ballot_in_u32":                             # a wave counts iff a low lane holds its max
        keep = [w for w in waves if np.any(w[:32] == _red(kind, w))]
        return _red(kind, np.array([_red(kind, w) for w in keep])) if keep else IDENTITY[kind]
    if bug == "lane_mod_32":                               # the first wave loads the partials W/32 times
        return np.uint64((int(_red(kind, p)) * (wave // 32)) & 0xFFFFFFFF)
    if bug == "warp_div_32":                               # wave k lands in part[(W/32)k] < nwarps
        nwarps = -(-B // wave)
        keep = [w for k, w in enumerate(waves) if (wave // 32) * k < nwarps]
        return _red(kind, np.array([_red(kind, w) for w in keep]))
    if bug in ("shfl_offset_16", "popc_ballot", "lds_tile_32_lanes"):
        return _red(kind, p[lo])
    if bug == "shfl_no_width":                             # every 32-group of a wave gets group 0's sum
        total = 0
        for w in waves:
            groups = -(-w.size // 32)
            total += groups * int(_red(kind, w[:32]))
        return np.uint64(total & 0xFFFFFFFF)
    if bug == "mask32_sync":
        return _red(kind, p)                               # (traps at wave 64 when a wave has > 32 lanes)
    raise KeyError(bug)


class WaveBug(CpuExecutor):
    """The fixture `bug` (kernel fast_<kind>_<T>) run on wavefronts of `wave` lanes."""

    def __init__(self, bug: str, wave: int = 64):
        super().__init__()
        self.bug, self.wave = bug, wave

    def run(self, launch):
        if not launch.kernel.startswith("fast_"):
            return super().run(launch)
        kind = launch.kernel.split("_")[1]
        a = {x.name: x for x in launch.args}
        numel, el, nd = (int(a[n].value) for n in ("src_numel", "el_to_sum_per_block", "num_dims"))
        info = np.asarray(a["info"].value, dtype=np.uint64)
        sname, soff = a["src"].value
        vals = launch.buffers[sname][int(soff) + _offsets(numel, nd, info)] if numel else launch.buffers[sname][:0]
        block = int(launch.block[0])
        if self.bug == "mask32_sync" and self.wave == 64 and block > 32:
            return ExecResult("crash", message="model: lanes 32..63 execute a _sync op whose mask omits them (trap)")
        out = launch.buffers["dst"].copy()
        dname, doff = a["dst"].value
        for b in range(int(launch.grid[0])):
            row = vals[b * el: min((b + 1) * el, numel)]
            r = block_result(self.bug, kind, partials(kind, row, block), self.wave)
            out[int(doff) + b] = np.asarray(r).astype(out.dtype)
        return ExecResult("ok", {dname: out})
