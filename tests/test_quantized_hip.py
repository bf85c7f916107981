"""The bundled HIP dequantize and mmq kernels (backends/hip/quantized.hip, quantized_mmq.hip) without
a GPU: a NumPy transliteration of each kernel's own index and bit logic (which unit of which CUDA
block reads which bytes, shifts and masks, writes which elements, with f32 arithmetic in the kernel's
order) run on Candle's launch of every quant-sweep case and judged like the GPU result, planted bugs
caught; quantized_mmq.hip's own source compiled with g++ and run on the host (tests/hip_host.py: it
keeps no barrier), planted bug caught; mmvq's group decoding; the quantized sources compiled through the
HIP-on-NVIDIA mapping; the bundled suite's declarations against the catalog. The GPU check is
tests/test_quantized_gpu.py."""

import shutil

import numpy as np
import pytest

import hip_host
from fakes_quantized import CANDLE_MATVEC, CANDLE_MMQ
from parity.run.cases import load_sweep
from parity.run.session import DEFAULT_HIP_SRC
from parity.ops import CATALOG
from parity.ops.quantized.blocks import FORMATS, QK_K
from parity.ops.quantized.matvec import DOTS
from parity.suite.scan import discover

F = np.float32


def _h(blk, at):                     # f16 field -> f32 (exact)
    return blk[:, at:at + 2].copy().view(np.float16).reshape(-1).astype(F)


def _w(blk, at):                     # little-endian u32 at byte `at` of each block (any alignment)
    return blk[:, at:at + 4].astype(np.uint32) @ np.array([1, 1 << 8, 1 << 16, 1 << 24], dtype=np.uint32)


def _byte(w, l):
    return (w >> np.uint32(8 * l)) & np.uint32(0xff)


def _sbyte(w, l):
    return _byte(w, l).astype(np.uint8).view(np.int8).astype(F)


def _scale_min_k4(blk, j):           # quantized.h scale_min_k4 on bytes 4..15
    b = lambda k: blk[:, 4 + k].astype(np.uint32)
    if j < 4:
        return b(j) & 63, b(j + 4) & 63
    return (b(j + 4) & 0xF) | ((b(j - 4) >> 6) << 4), (b(j + 4) >> 4) | ((b(j) >> 6) << 4)


def _scale_q3_k(blk, s):             # quantized.h scale_q3_k on bytes 96..107
    b = lambda k: blk[:, 96 + k].astype(np.int64)
    lo = b(s) & 0xF if s < 8 else b(s - 8) >> 4
    return lo | (((b(8 + (s & 3)) >> (2 * (s >> 2))) & 3) << 4)


def _quad(y, e0, vals):              # store4: elements e0..e0+3 of each block row
    for l, v in enumerate(vals):
        y[:, e0 + l] = v


def _k_quant(name, blk):
    """(blocks, 256) f32: one CUDA block per super-block, unit u = the kernel's unit lambda."""
    y = np.zeros((blk.shape[0], QK_K), dtype=F)
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "q2_K":
            for u in range(64):
                n, j, l0 = u // 32, (u % 32) // 8, 4 * (u % 8)
                q = _w(blk, 16 + 32 * n + l0) >> np.uint32(2 * j)
                sc = blk[:, 8 * n + 2 * j + l0 // 16].astype(np.uint32)
                dl, ml = _h(blk, 80) * (sc & 0xF).astype(F), _h(blk, 82) * (sc >> 4).astype(F)
                _quad(y, 4 * u, [dl * (_byte(q, l) & 3).astype(F) - ml for l in range(4)])
        elif name == "q3_K":
            for u in range(64):
                n, j, l0 = u // 32, (u % 32) // 8, 4 * (u % 8)
                q = _w(blk, 32 + 32 * n + l0) >> np.uint32(2 * j)
                h = _w(blk, l0) >> np.uint32(4 * n + j)
                dl = _h(blk, 108) * (_scale_q3_k(blk, 8 * n + 2 * j + l0 // 16) - 32).astype(F)
                _quad(y, 4 * u, [dl * ((_byte(q, l) & 3).astype(np.int64)
                                       - np.where(_byte(h, l) & 1, 0, 4)).astype(F) for l in range(4)])
        elif name == "q4_K":
            for u in range(32):
                il, ir = u // 8, u % 8
                q = _w(blk, 16 + 32 * il + 4 * ir)
                (s1, m1), (s2, m2) = _scale_min_k4(blk, 2 * il), _scale_min_k4(blk, 2 * il + 1)
                d, dmin = _h(blk, 0), _h(blk, 2)
                d1, c1, d2, c2 = d * s1.astype(F), dmin * m1.astype(F), d * s2.astype(F), dmin * m2.astype(F)
                _quad(y, 64 * il + 4 * ir, [d1 * (_byte(q, l) & 0xF).astype(F) - c1 for l in range(4)])
                _quad(y, 64 * il + 32 + 4 * ir, [d2 * (_byte(q, l) >> 4).astype(F) - c2 for l in range(4)])
        elif name == "q5_K":
            for u in range(64):
                il, w = u // 16, 4 * (u % 16)
                hi, w32 = w // 32, w % 32
                qh = _w(blk, 16 + w32) >> np.uint32(2 * il + hi)
                q = _w(blk, 48 + 32 * il + w32) >> np.uint32(4 * hi)
                sc, mn = _scale_min_k4(blk, 2 * il + hi)
                dl, ml = _h(blk, 0) * sc.astype(F), _h(blk, 2) * mn.astype(F)
                _quad(y, 4 * u, [dl * ((_byte(q, l) & 0xF) | ((_byte(qh, l) & 1) << 4)).astype(F) - ml
                                 for l in range(4)])
        elif name == "q6_K":
            for u in range(64):
                ip, k, l0 = u // 32, (u % 32) // 8, 4 * (u % 8)
                ql = _w(blk, 64 * ip + 32 * (k & 1) + l0) >> np.uint32(4 * (k >> 1))
                qh = _w(blk, 128 + 32 * ip + l0) >> np.uint32(2 * k)
                ds = _h(blk, 208) * blk[:, 192 + 8 * ip + 2 * k + l0 // 16].view(np.int8).astype(F)
                _quad(y, 4 * u, [ds * (((_byte(ql, l) & 0xF) | ((_byte(qh, l) & 3) << 4)).astype(np.int64)
                                       - 32).astype(F) for l in range(4)])
        elif name == "q8_K":
            d = blk[:, 0:4].copy().view(F).reshape(-1)
            for u in range(32):
                for h in range(2):
                    q = _w(blk, 4 + 128 * h + 4 * u)
                    _quad(y, 128 * h + 4 * u, [_sbyte(q, l) * d for l in range(4)])
    return y.reshape(-1)


def _legacy(name, blk, k, grid, block):
    """32-element formats, with the kernels' bounds: blocks >= k (q4/q8: k = n/32; q5: elements >= k)."""
    nb = blk.shape[0]
    y = np.zeros((nb, 32), dtype=F)
    fmt = FORMATS[name]
    with np.errstate(over="ignore", invalid="ignore"):
        if name in ("q4_0", "q4_1", "q8_0"):
            assert block == 32 and k == nb and grid * 8 >= nb
            d = _h(blk, 0)
            for g in range(4):
                if name == "q8_0":
                    for h in range(2):
                        q = _w(blk, 2 + 16 * h + 4 * g)
                        _quad(y, 16 * h + 4 * g, [d * _sbyte(q, l) for l in range(4)])
                    continue
                add = _h(blk, 2) if name == "q4_1" else F(-8) * d
                q = _w(blk, fmt.qs_at + 4 * g)
                _quad(y, 4 * g, [d * (_byte(q, l) & 0xF).astype(F) + add for l in range(4)])
                _quad(y, 16 + 4 * g, [d * (_byte(q, l) >> 4).astype(F) + add for l in range(4)])
        else:
            assert block == 256 and k == 32 * nb and grid * block * 2 >= k
            qh_at = 4 if name == "q5_1" else 2
            qh = _w(blk, qh_at)
            d = _h(blk, 0)
            for j in range(16):
                q = blk[:, qh_at + 4 + j].astype(np.uint32)
                x0 = ((q & 0xF) | (((qh >> np.uint32(j)) & 1) << 4)).astype(F)
                x1 = ((q >> 4) | (((qh >> np.uint32(j + 16)) & 1) << 4)).astype(F)
                if name == "q5_1":
                    m = _h(blk, 2)
                    y[:, j], y[:, j + 16] = x0 * d + m, x1 * d + m
                else:
                    y[:, j], y[:, j + 16] = (x0 - F(16)) * d, (x1 - F(16)) * d
    return y.reshape(-1)


def transliterated(case):
    """(built, expected, what the HIP kernel writes) for one case, through Candle's launch."""
    spec = CATALOG[case.op].spec
    built, launch, expected = spec.prepare(case)
    name = built.geo["format"]
    fmt = FORMATS[name]
    raw = built.bases["vx"]
    blk = raw.reshape(-1, fmt.size)
    args = {a.name: a for a in launch.args}
    if fmt.qk == QK_K:
        assert launch.grid[0] == blk.shape[0] and launch.block[0] in (32, 64)
        y = _k_quant(name, blk)
    else:
        y = _legacy(name, blk, int(args["k"].value), launch.grid[0], launch.block[0])
    with np.errstate(over="ignore"):             # f16 overflow to inf, as __float2half
        return built, expected, y.astype(built.out_dtype.np)


QUANT_CASES = [c for c in load_sweep("quant") if c.op.startswith("quant.dequantize_")]   # the transliterated kernels


@pytest.mark.parametrize("case", QUANT_CASES, ids=[c.id for c in QUANT_CASES])
def test_hip_kernel_logic_matches_the_reference(case):
    spec = CATALOG[case.op].spec
    built, expected, got = transliterated(case)
    verdict = spec.judge(expected, got, built)
    assert verdict.n_bad == 0, verdict


def test_transliteration_catches_a_shift_error():
    """The transliteration is judged like the GPU: one wrong shift (q4_K's high nibbles read from
    bits 3..6) fails."""
    (case,) = [c for c in QUANT_CASES if c.id == "quant.dequantize_q4_K/f32/b3/normal/s0"]
    spec = CATALOG[case.op].spec
    built, expected, got = transliterated(case)
    blk = built.bases["vx"].reshape(-1, 144)
    q = _w(blk, 16)
    d2 = _h(blk, 0) * _scale_min_k4(blk, 1)[0].astype(F)
    got = got.copy()
    got[32::256] = d2 * ((_byte(q, 0) >> 3) & 0xF).astype(F) - _h(blk, 2) * _scale_min_k4(blk, 1)[1].astype(F)
    assert spec.judge(expected, got, built).n_bad > 0


def test_bundled_suite_declares_every_dequantize_kernel_with_candles_parameters():
    suite = discover(DEFAULT_HIP_SRC)
    for op in (o for o in CATALOG.values() if o.name.startswith("quant.dequantize_")):
        for dt in op.dtypes:
            name = op.kernel_name(dt)
            decl = suite.kernels.get(name)
            assert decl is not None and decl.file.name == "quantized.hip", name
            assert decl.params == (["ptr", "ptr", "i32"] if "k:i32" in op.abi else ["ptr", "ptr"]), (name, decl.params)


# ------------------------------------------------------------------ quantized_mmv.hip: mmvq's groups
def _bytes32(blk, at, shift, mask):
    """32 bytes from `at` (per block), each (byte >> shift) & mask, as ints (rows, 32)."""
    return (blk[:, at:at + 32].astype(np.int64) >> shift) & mask


def _xgroup(name, blk, t):
    """quantized_mmv.hip Group<F>::load: (32 quants (rows, 32), scale per half (rows, 2), min per half,
    offset, d, dm) of the 32-element group t of each block."""
    rows = blk.shape[0]
    one = np.ones((rows, 2), dtype=np.int64)
    zero = np.zeros((rows, 2), dtype=np.int64)
    nib = lambda at: np.concatenate([blk[:, at:at + 16] & 0xF, blk[:, at:at + 16] >> 4], 1).astype(np.int64)
    fifth = lambda at: (((_w(blk, at)[:, None] >> np.arange(32, dtype=np.uint32)) & 1) << 4).astype(np.int64)
    if name == "q4_0":
        return nib(2), one, zero, 8, _h(blk, 0), None
    if name == "q4_1":
        return nib(4), one, zero, 0, _h(blk, 0), _h(blk, 2)
    if name == "q5_0":
        return nib(6) | fifth(2), one, zero, 16, _h(blk, 0), None
    if name == "q5_1":
        return nib(8) | fifth(4), one, zero, 0, _h(blk, 0), _h(blk, 2)
    if name == "q8_0":
        return blk[:, 2:34].view(np.int8).astype(np.int64), one, zero, 0, _h(blk, 0), None
    if name == "q2_K":
        q = _bytes32(blk, 16 + 32 * (t // 4), 2 * (t % 4), 3)
        sc = blk[:, 2 * t:2 * t + 2].astype(np.int64)
        return q, sc & 0xF, sc >> 4, 0, _h(blk, 80), _h(blk, 82)
    if name == "q3_K":
        q = _bytes32(blk, 32 + 32 * (t // 4), 2 * (t % 4), 3) | (_bytes32(blk, 0, t, 1) << 2)
        c = np.stack([_scale_q3_k(blk, 2 * t), _scale_q3_k(blk, 2 * t + 1)], 1) - 32
        return q, c, zero, 4, _h(blk, 108), None
    if name in ("q4_K", "q5_K"):
        q = _bytes32(blk, (48 if name == "q5_K" else 16) + 32 * (t // 2), 4 * (t % 2), 0xF)
        if name == "q5_K":
            q = q | (_bytes32(blk, 16, t, 1) << 4)
        sc, mn = _scale_min_k4(blk, t)
        return q, np.stack([sc, sc], 1).astype(np.int64), np.stack([mn, mn], 1).astype(np.int64), 0, \
            _h(blk, 0), _h(blk, 2)
    if name == "q6_K":
        ip, k = t // 4, t % 4
        q = _bytes32(blk, 64 * ip + 32 * (k & 1), 4 * (k >> 1), 0xF) | (_bytes32(blk, 128 + 32 * ip, 2 * k, 3) << 4)
        return q, blk[:, 192 + 2 * t:194 + 2 * t].view(np.int8).astype(np.int64), zero, 32, _h(blk, 208), None
    raise KeyError(name)


KIND = {"q4_0": "sub", "q5_0": "sub", "q4_1": "asym", "q5_1": "asym", "q8_0": "pure", "q3_K": "scaled",
        "q6_K": "scaled", "q2_K": "min", "q4_K": "min", "q5_K": "min"}


def _group_dot(name, xg, yq, d8, s8):
    """quantized_mmv.hip group_dot (f64 here: the check is of the integer decoding, not the rounding)."""
    q, c, m, off, d, dm = xg
    dot = np.stack([(q[:, :16] * yq[:, :16]).sum(1), (q[:, 16:] * yq[:, 16:]).sum(1)], 1)
    ysum = np.stack([yq[:, :16].sum(1), yq[:, 16:].sum(1)], 1)
    d, d8, s8 = d.astype(np.float64), d8.astype(np.float64), s8.astype(np.float64)
    kind = KIND[name]
    if kind == "sub":
        return d * (dot.sum(1) * d8 - off * s8)
    if kind == "asym":
        return dot.sum(1) * (d * d8) + dm.astype(np.float64) * s8
    if kind == "pure":
        return d * d8 * dot.sum(1)
    if kind == "scaled":
        return d * d8 * (c * (dot - off * ysum)).sum(1)
    return d * d8 * (c * dot).sum(1) - dm.astype(np.float64) * d8 * (m * ysum).sum(1)


@pytest.mark.parametrize("name", sorted(KIND))
def test_mmvq_group_decoding_gives_the_dequantized_dot_product(name):
    """With s8 = d8 * sum(q8) (what the stored sum approximates), the kernel's per-group integer dot
    products, scales and mins add up to dequantized x . dequantized y: the bit decoding of every
    group (fifth bits, hmask, q6_K's quarters, the 6-bit scales) is the format's."""
    fmt = FORMATS[name]
    rng = np.random.default_rng(7)
    from parity.ops.quantized.blocks import dequantize_reference, random_blocks
    blk = random_blocks(fmt, 6, rng)
    x = dequantize_reference(name, blk.reshape(-1)).astype(np.float64).reshape(6, fmt.qk)
    groups = fmt.qk // 32
    yq = rng.integers(-127, 128, (6, fmt.qk)).astype(np.int64)
    d8 = (rng.random((6, groups)) * 0.02 + 0.001).astype(np.float16).astype(F)
    got = np.zeros(6)
    for t in range(groups):
        y = yq[:, 32 * t:32 * t + 32]
        s8 = d8[:, t].astype(np.float64) * y.sum(1)
        got += _group_dot(name, _xgroup(name, blk, t), y, d8[:, t], s8)
    want = (x * (yq * np.repeat(d8.astype(np.float64), 32, axis=1))).sum(1)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(x).max()), (got, want)


# ------------------------------------------------------------------ quantized_mmq.hip: mmq
MMQ_SRC = DEFAULT_HIP_SRC / "quantized_mmq.hip"
MMQ_KIND = {**KIND, "q5_0": "pure", "q4_K": "min_s", "q5_K": "min_s"}      # MmqGroup<F>::kind
CHUNK = 8                                                                  # quantized_mmq.hip CHUNK


def _mmq_tiles():
    """The PK_MMQ(FMT, MMQ_X, MMQ_Y) table of quantized_mmq.hip."""
    import re
    return {f: (int(x), int(y)) for f, x, y in re.findall(r"^PK_MMQ\((\w+), (\d+), (\d+)\)", MMQ_SRC.read_text(), re.M)}


def _mmq_xgroup(name, blk, t):
    """MmqGroup<F>::load: Group<F>'s, and for q5_0 each byte q to the int8 q - 16 by the kernel's SWAR."""
    xg = _xgroup(name, blk, t)
    if name != "q5_0":
        return xg
    q = (((xg[0] | 0x80) - 0x10) ^ 0x80).astype(np.uint8).view(np.int8).astype(np.int64)
    return (q,) + xg[1:]


def _group_dot_f32(kind, xg, yq, d8, s8):
    """quantized_dot.h group_dot in f32, each operation rounded in the kernel's order (no FMA)."""
    q, c, m, off, d, dm = xg
    dot = np.stack([(q[:, :16] * yq[:, :16]).sum(1), (q[:, 16:] * yq[:, 16:]).sum(1)], 1)
    ysum = np.stack([yq[:, :16].sum(1), yq[:, 16:].sum(1)], 1)
    i2f = lambda v: v.astype(F)
    if kind == "sub":
        return d * (i2f(dot.sum(1)) * d8 - F(off) * s8)
    if kind == "asym":
        return i2f(dot.sum(1)) * (d * d8) + dm * s8
    if kind == "pure":
        return (d * d8) * i2f(dot.sum(1))
    if kind == "scaled":
        return d * (d8 * i2f((c * (dot - off * ysum)).sum(1)))
    scaled = d * (d8 * i2f((c * dot).sum(1)))
    if kind == "min_s":
        return scaled - dm * (i2f(m[:, 0]) * s8)
    return scaled - dm * (d8 * i2f((m * ysum).sum(1)))


def mmq_transliterated(case, kinds=MMQ_KIND, xgroup=_mmq_xgroup, store=None):
    """(built, expected, what mul_mat_<fmt> writes) through Candle's launch: every CUDA block
    (bx, by) and thread's units u (row bx*MMQ_Y + u % MMQ_Y, columns by*MMQ_X + CHUNK*(u / MMQ_Y)..),
    the groups added in k order in f32; dst NaN where nothing is written, and no element written twice.
    `kinds`, `xgroup`, `store(col, row, nrows_dst, ncols_y)` (the dst index): replaceable to plant bugs."""
    spec = CATALOG[case.op].spec
    built, launch, expected = spec.prepare(case)
    a = {x.name: int(x.value) for x in launch.args if x.kind == "i32"}
    ncols_x, nrows_x, ncols_y, nrows_y, nrows_dst = (a[k] for k in ("ncols_x", "nrows_x", "ncols_y", "nrows_y",
                                                                    "nrows_dst"))
    name = built.geo["format"]
    fmt = FORMATS[name]
    mmq_x, mmq_y = _mmq_tiles()[name]
    (gx, gy, _), (bdx, bdy, _) = launch.grid, launch.block
    nthreads = bdx * bdy
    rows, cols = [], []
    for bx in range(gx):
        for by in range(gy):
            for tid in range(nthreads):
                for u in range(tid, mmq_y * (mmq_x // CHUNK), nthreads):
                    row, c0 = bx * mmq_y + u % mmq_y, by * mmq_x + CHUNK * (u // mmq_y)
                    if row >= nrows_dst or c0 >= ncols_y:
                        continue
                    for j in range(CHUNK):
                        if c0 + j < ncols_y:
                            rows.append(row), cols.append(c0 + j)
    rows, cols = np.array(rows), np.array(cols)
    xrow = np.minimum(rows, nrows_x - 1)
    allb = built.bases["vx"][: built.bases["vx"].size // fmt.size * fmt.size].reshape(-1, fmt.size)
    yb = built.bases["vy"].reshape(-1, 36)
    groups, per_block, bpr, yblocks = ncols_x // 32, fmt.qk // 32, ncols_x // fmt.qk, nrows_y // 32
    acc = np.zeros(rows.size, F)
    with np.errstate(all="ignore"):
        for gi in range(groups):
            xg = xgroup(name, allb[xrow * bpr + gi // per_block], gi % per_block)
            y = yb[cols * yblocks + gi]
            d8, s8 = _h(y, 0), _h(y, 2)
            acc = (acc + _group_dot_f32(kinds[name], xg, y[:, 4:36].view(np.int8).astype(np.int64), d8, s8)).astype(F)
    at = (store or (lambda c, r, n, m: c * n + r))(cols, rows, nrows_dst, ncols_y)
    assert np.bincount(at).max() == 1                                     # each output written once
    dst = np.full(ncols_y * nrows_dst, np.nan, F)
    dst[at] = acc
    return built, expected, dst


MMQ_CASES = [c for c in load_sweep("quant") if c.op.startswith("quant.mmq_")]      # k512, k1024, k1536


def test_mmq_tiles_are_candles():
    assert _mmq_tiles() == {f: (d.mmq_x, d.mmq_y) for f, d in DOTS.items()}


@pytest.mark.parametrize("case", MMQ_CASES, ids=[c.id for c in MMQ_CASES])
def test_mmq_kernel_logic_matches_the_reference(case):
    """Every format's mmq on every shape (k1024's 130 x 70: partial second tiles both ways), normal and
    special values, judged like the GPU result."""
    built, expected, got = mmq_transliterated(case)
    verdict = CATALOG[case.op].spec.judge(expected, got, built)
    assert verdict.n_bad == 0, verdict


@pytest.mark.parametrize("case_id,planted,n_bad,coords,expected,got", [
    # q4_K with mmvq's scaling (mins times d8*sum(q8), not s): MmqGroup's override forgotten
    ("quant.mmq_q4_K/f32/k1024/normal/s0", {"kinds": {**MMQ_KIND, "q4_K": "min"}}, 7427, [61, 18],
     "-14.550348281860352", "-14.375077247619629"),
    # q5_0 as mmvq scales it (d * (sumi*d8 - 16*s)): the -16 not folded into the quants
    ("quant.mmq_q5_0/f32/k1024/normal/s0", {"kinds": {**MMQ_KIND, "q5_0": "sub"}, "xgroup": _xgroup}, 8682, [66, 40],
     "-31.592008590698242", "-29.892107009887695"),
    # dst stored row-major (row * ncols_y + col) instead of column by column
    ("quant.mmq_q8_0/f32/k1024/normal/s0", {"store": lambda c, r, n, m: r * m + c}, 9096, [26, 56],
     "-2283.656982421875", "2763.476318359375"),
], ids=["q4_K-mins-times-d8-sum", "q5_0-mmvq-offset", "q8_0-row-major-store"])
def test_mmq_transliteration_catches_a_planted_error(case_id, planted, n_bad, coords, expected, got):
    """The transliteration is judged like the GPU: each planted bug fails with its exact worst element."""
    (case,) = [c for c in MMQ_CASES if c.id == case_id]
    built, exp, dst = mmq_transliterated(case, **planted)
    v = CATALOG[case.op].spec.judge(exp, dst, built)
    w = v.worst
    assert (v.passed, v.n_bad, w.coords, w.expected, w.got) == (False, n_bad, coords, expected, got)


# quantized_mmq.hip itself, compiled for the host (tests/hip_host.py: no barrier in it, so one thread
# at a time computes what the GPU does, up to FMA contraction)
needs_cxx = pytest.mark.skipif(hip_host.CXX is None, reason="g++ not on PATH")


@pytest.fixture(scope="module")
def mmq_on_host(tmp_path_factory):
    return hip_host.build(MMQ_SRC, tmp_path_factory.mktemp("mmq_host"))


def _host_verdict(kernels, case):
    spec = CATALOG[case.op].spec
    built, launch, expected = spec.prepare(case)
    return spec.judge(expected, kernels.run(launch)["dst"], built)


@needs_cxx
@pytest.mark.parametrize("case", MMQ_CASES, ids=[c.id for c in MMQ_CASES])
def test_mmq_source_run_on_the_host_passes(mmq_on_host, case):
    v = _host_verdict(mmq_on_host, case)
    assert v.n_bad == 0, v


@needs_cxx
def test_mmq_source_with_a_planted_bug_fails_on_the_host(tmp_path):
    """The same source with q4_K's mmq override dropped (mins times d8*sum(q8), mmvq's scaling) fails
    with the transliteration's worst element (test_mmq_transliteration_catches_a_planted_error)."""
    text = MMQ_SRC.read_text()
    bug = "struct MmqGroup<fmt::q4_K> : Group<fmt::q4_K> { static constexpr Dot kind = Dot::kMinS; };"
    assert bug in text
    kernels = hip_host.build(MMQ_SRC, tmp_path, text.replace(bug, bug.replace("kMinS", "kMin")))
    (case,) = [c for c in MMQ_CASES if c.id == "quant.mmq_q4_K/f32/k1024/normal/s0"]
    v = _host_verdict(kernels, case)
    assert (v.passed, v.n_bad, v.worst.coords, v.worst.expected) == (False, 7427, [61, 18], "-14.550348281860352")


@pytest.mark.parametrize("file,expected", [("quantized_mmv.hip", CANDLE_MATVEC), ("quantized_mmq.hip", CANDLE_MMQ)])
def test_bundled_suite_declares_candles_mat_vec_and_mmq_kernels_and_no_other_extra(file, expected, tmp_path):
    """quantized_mmv.hip: quantize_q8_1, dequantize_mul_mat_vec_* and mul_mat_vec_*_q8_1_cuda1..8;
    quantized_mmq.hip: mul_mat_<fmt>; with the parameter lists of Candle's quantized.cu (checked against
    its declarations too when PARITY_CANDLE_KERNELS or the checkout's .candle/src has it); coverage
    finds each one present."""
    import os
    from pathlib import Path
    from parity.suite.coverage import coverage
    suite = discover(DEFAULT_HIP_SRC)
    got = {k: d.params for k, d in suite.kernels.items() if d.file.name == file}
    assert got == expected
    status = {r.kernel: r.status for r in coverage(suite)}
    assert {status[k] for k in expected} == {"present"} and "extra" not in status.values()
    for src in (os.environ.get("PARITY_CANDLE_KERNELS"), Path(__file__).resolve().parents[1] / ".candle/src",
                "/work/main/.candle/src"):
        if src and Path(src, "quantized.cu").is_file():
            (tmp_path / "quantized.cu").write_bytes(Path(src, "quantized.cu").read_bytes())
            candle = discover(tmp_path)
            assert {k: candle.kernels[k].params for k in expected} == expected
            break


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("file", ["quantized.hip", "quantized_mmv.hip", "quantized_mmq.hip"])
def test_quantized_sources_compile_for_hip_on_nvidia(file, wave, tmp_path):
    """Each quantized source through the HIP-on-NVIDIA mapping with nvcc (sm_90), as the
    hip-on-nvidia level builds it in both wavefront modes (the GPU tests need a device)."""
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    ex = HipOnNvidiaExecutor(DEFAULT_HIP_SRC, wave=wave, compiler="nvcc", arch="90", cache_root=tmp_path)
    res = ex.toolchain.compile(DEFAULT_HIP_SRC / file)
    assert res.ok, res.error.message if res.error else ""
