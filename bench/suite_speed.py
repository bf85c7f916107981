"""Every family of the bundled HIP suite beside Candle's own CUDA kernels, on one GPU, in one table.

One representative launch per family (LLM-like shapes, mat-vec at batch 1; for nn also every row
length 128 ... 16384 of softmax, rmsnorm and layernorm in f32, f16 and bf16), each built by parity's
catalog exactly as Candle's Rust side launches it (parity/ops: grid, block, shared memory, arguments),
run on the HIP suite(s) through hip-on-nvidia (--wave, default 32: NVIDIA's own warps) and on Candle's
kernels (the `cuda` level: candle-kernels/src compiled as it is), L2 cold. Per row: the bytes the
launch must move (its inputs read once, its outputs written once; gathers count the rows they read), a
device-to-device copy of as many bytes, the launch floor (an empty kernel on the launch's grid, block
and shared memory, as bench/launch_floor.py measures), the launch copy (the fastest plain copy of the
bytes on the launch's grid and block, bench/launch_copy.py), the ceiling they leave (the best % of
copy the launch is known to allow), each suite's time, its % of the copy, and HIP/CUDA; under the table, each
suite's nn rows against the 80% bar (bench/speed_table.py, which also re-renders a saved run).
Timing: bench/harness.py (parity's CUDA clock, raw events for kernels, copies and empty launches
alike).

    python3 bench/suite_speed.py OUT_DIR [--suite NAME=DIR ...] [--cuda-src DIR] [--wave 32|64]
                                 [--families nn,reduce] [--rows 'softmax f16*'] [--no-lengths] [--check]

--suite NAME=DIR adds a HIP suite folder as a column (repeatable; default: after=backends/hip), e.g.
before=<a copy of the suite before a change>; --variant NAME=DIR adds one timed on the nn rows only.
--rows GLOBS keeps the rows whose case matches one of the globs (comma separated), e.g.
'softmax*,rmsnorm bf16*'. --check [SUITES] runs each nn row's kernel on those HIP suites (default all) at 96 rows of the same
length and judges it with the catalog's tolerances (the check column).
Writes OUT_DIR/suite_speed.md and .json.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import cold_options, copy_ms, gpu_clock, timed  # noqa: E402
from launch_copy import launch_copy_ms  # noqa: E402
from speed_table import write  # noqa: E402
from parity.run.cases import Case  # noqa: E402
from parity.core.layouts import LAYOUT_CLASSES, LayoutClass  # noqa: E402
from parity.ops import CATALOG  # noqa: E402
from parity.ops.base import ShapeClass  # noqa: E402

OPTS = cold_options(time_cap_s=1.0, min_samples=10, max_noise=0.02)
NN_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
NN_ELEMS = 1 << 24                          # rows = 2^24 / n_cols: 4096 x 4096 at 4096 columns
NN_ROOTS = ("softmax", "rmsnorm", "layernorm", "rope")


@dataclass
class Row:
    family: str
    label: str
    op: str
    dtype: str
    layout: str                             # a layout class (elementwise) or a registered shape class
    params: tuple = ()
    gather: bool = False                    # bytes: outputs x 2 + ids (the rows read), not the whole table
    nbytes: object = None                   # (launch) -> bytes, where neither rule holds
    check: bool = False                     # --check: judge it at 96 rows
    patch: dict = field(default_factory=dict)   # module globals to set while building (id counts)


# ------------------------------------------------------------------------- the launches
def _shape(op_name: str, name: str, geo: dict) -> str:
    """Register shape class `name` for op (its spec's table and the builder module's own tables)."""
    op = CATALOG[op_name]
    sc = ShapeClass(name, "bench/suite_speed.py shape", geo)
    op.spec.shapes[name] = sc
    build = op.spec.build
    mod = sys.modules[getattr(build, "func", build).__module__]
    for v in list(vars(mod).values()):
        if isinstance(v, dict) and v and all(isinstance(x, ShapeClass) for x in v.values()):
            v[name] = sc
    return name


def _layout(name: str, shape: tuple, kinds: tuple) -> str:
    LAYOUT_CLASSES[name] = LayoutClass(name, shape, kinds, opt_in=True, bench=True, doc="bench/suite_speed.py")
    return name


def rows(families: set[str] | None, lengths: bool) -> list[Row]:
    out: list[Row] = []
    e2d = _layout("suite-4096x4096", (4096, 4096), ("contig",))
    tr = _layout("suite-4096x4096-t", (4096, 4096), ("transposed",))
    out += [
        Row("unary", "silu bf16 4096x4096", "unary.silu", "bf16", e2d),
        Row("binary", "mul bf16 4096x4096", "binary.mul", "bf16", e2d),
        Row("affine", "affine f32 4096x4096", "affine", "f32", e2d, (("mul", 2.0), ("add", 3.0))),
        Row("cast", "cast f32->bf16 4096x4096", "cast", "f32-bf16", e2d),
        Row("ternary", "where u8 ? f32 4096x4096", "where", "u8-f32", e2d),
        Row("copy", "ucopy bf16 4096x4096 t()", "copy.ucopy", "bf16", tr),
        Row("fill", "const_set f32 4096x4096", "fill.const_set", "f32", e2d, (("value", 3.0),)),
        Row("fill", "copy2d bf16 4096x4096", "fill.copy2d", "bf16", e2d),
        Row("indexing", "index_select u32->bf16 8192x4096, 4096 ids", "index.index_select", "u32-bf16",
            _shape("index.index_select", "suite-embed", {"shape": (8192, 4096), "dim": 0}), gather=True,
            patch={"N_IDS": 4096}),
        Row("indexing", "gather u32->f32 4096x4096 dim 1, 1024 ids", "index.gather", "u32-f32",
            _shape("index.gather", "suite-gather", {"shape": (4096, 4096), "dim": 1}), gather=True,
            patch={"GATHER_DIM": 1024}),
    ]
    def reduce_row(op: str, dt: str, r: int, n: int, label: str = "") -> Row:
        """reduce.op over the last dim of a contiguous r x n source."""
        geo = {"shape": (r, n), "dims": (1,), "view": "contig"}
        return Row("reduce", f"{label or 'fast_' + op} {dt} {r}x{n} last dim", f"reduce.{op}", dt,
                   _shape(f"reduce.{op}", f"suite-rows-{r}x{n}", geo))
    out += [reduce_row(op, "f32", 4096, 4096) for op in ("sum", "min", "max", "argmin", "argmax")]
    out.append(reduce_row("sum_atomic", "f32", 4096, 4096, label="sum_ (atomic)"))
    def norm_rows(lengths):
        for root in ("softmax", "rmsnorm", "layernorm"):
            p = {"rmsnorm": (("alpha", 1.0),), "layernorm": (("affine", 1.0),)}.get(root, ())
            for dt in ("f32", "f16", "bf16"):
                for n in lengths:
                    r = NN_ELEMS // n
                    yield Row("nn", f"{root} {dt} {r}x{n}", f"nn.{root}", dt,
                              _shape(f"nn.{root}", f"suite-{r}x{n}", {"shape": (r, n)}), p, check=True)
    out += norm_rows((4096,))
    out += [
        Row("nn", "rope_i bf16 (1,32,4096,128)", "nn.rope_i", "bf16",
            _shape("nn.rope_i", "suite-rope", {"shape": (1, 32, 4096, 128), "batched": False})),
        Row("nn", "rope bf16 (1,32,4096,128)", "nn.rope", "bf16",
            _shape("nn.rope", "suite-rope", {"shape": (1, 32, 4096, 128), "batched": False})),
        Row("nn", "rope_thd bf16 (1,4096,32,128)", "nn.rope_thd", "bf16",
            _shape("nn.rope_thd", "suite-rope", {"shape": (1, 4096, 32, 128), "batched": False})),
        Row("nn", "rope f32 (1,32,4096,128)", "nn.rope", "f32", "suite-rope"),
    ]
    w = {"ncols": 14336, "nrows": 4096}
    out += [
        Row("quantized", "dequantize q4_K -> f32 4096x14336", "quant.dequantize_q4_K", "f32",
            _shape("quant.dequantize_q4_K", "suite-w", {"blocks": 4096 * 14336 // 256})),
        Row("quantized", "quantize_q8_1 f32 14336 (batch 1)", "quant.quantize_q8_1", "f32",
            _shape("quant.quantize_q8_1", "suite-x", {"kx": 14336, "ky": 1})),
        Row("quantized", "mmvq_gguf_quantize_q8_1 bf16 14336 (batch 1)", "quant.mmvq_gguf_quantize_q8_1_bf16", "bf16",
            _shape("quant.mmvq_gguf_quantize_q8_1_bf16", "suite-x", {"kx": 14336, "ky": 1})),
        Row("quantized", "mul_mat_vec q4_K b1 4096x14336", "quant.mmvq_q4_K_b1", "f32",
            _shape("quant.mmvq_q4_K_b1", "suite-w", w)),
        Row("quantized", "mmvq_gguf q4_K bf16 b1 4096x14336", "quant.mmvq_gguf_q4_K_bf16_b1", "bf16",
            _shape("quant.mmvq_gguf_q4_K_bf16_b1", "suite-w", w)),
        Row("quantized", "get_rows q4_K 32000x4096, 512 ids", "quant.get_rows_q4_K", "f32",
            _shape("quant.get_rows_q4_K", "suite-embed",
                   {"rows": 32000, "hidden": 4096, "ids": tuple(int(i) for i in
                                                                 np.random.default_rng(7).integers(0, 32000, 512))}),
            nbytes=lambda l: 4 * 512 * 4096 + 512 * (4096 // 256) * 144 + 4 * 512),  # f32 out, q4_K rows read, ids
        Row("quantized", "indexed_moe q4_K 8 experts 14336x4096, top-2 of 1 token", "quant.indexed_moe_q4_K", "f32",
            _shape("quant.indexed_moe_q4_K", "suite-moe",
                   {"experts": 8, "n": 14336, "k": 4096, "ids": ((3, 6),), "per_task": False}),
            nbytes=lambda l: sum(a.nbytes for n, a in l.buffers.items() if n != "w")
            + l.buffers["w"].nbytes * 2 // 8),       # the two experts' weights are read
        Row("conv", "im2col f16 (1,64,128,128) k3x3", "conv.im2col", "f16",
            _shape("conv.im2col", "suite-im2col", {"src": (1, 64, 128, 128), "k": (1, 64, 3, 3), "stride": 1,
                                                    "padding": 1, "dilation": 1, "out_padding": 0,
                                                    "kview": "contig", "sview": "contig"})),
        Row("pool", "max_pool2d f32 (8,64,128,128) k2 s2", "pool.max", "f32",
            _shape("pool.max", "suite-pool", {"shape": (8, 64, 128, 128), "k": (2, 2), "s": (2, 2), "view": "contig"})),
        Row("pool", "upsample_nearest2d f32 (8,64,64,64) x2", "upsample.nearest2d", "f32",
            _shape("upsample.nearest2d", "suite-up", {"shape": (8, 64, 64, 64), "out": (128, 128), "view": "contig"})),
        Row("sort", "asort_asc f32 4096x1024", "sort.asc", "f32",
            _shape("sort.asc", "suite-sort", {"shape": (4096, 1024)})),
    ]
    if lengths:                               # Candle's other row lengths, last
        out += norm_rows(tuple(n for n in NN_LENGTHS if n != 4096))
        out += [reduce_row(op, dt, r, n)      # the reductions' other dtypes and row lengths
                for op in ("sum", "max", "argmax")
                for dt, r, n in (("f16", 4096, 4096), ("bf16", 4096, 4096), ("f32", 16384, 1024),
                                 ("f32", 2048, 8192), ("f32", 1024, 16384))]
    return [r for r in out if families is None or r.family in families]


def matching(rows_: list[Row], globs: str) -> list[Row]:
    """The rows whose case matches one of the comma-separated globs (--rows)."""
    return [r for r in rows_ if any(fnmatch.fnmatchcase(r.label, g.strip()) for g in globs.split(","))]


def prepare(row: Row, rows_override: int | None = None):
    """(built, launch) of a row's case, expected values not computed (the catalog's build + pack)."""
    op = CATALOG[row.op]
    layout = row.layout
    if rows_override is not None:            # the --check copy: same row length, fewer rows
        n = op.spec.shapes[layout].geo["shape"][1]
        layout = _shape(row.op, f"suite-check-{n}", {"shape": (rows_override, n)})
    case = Case(row.op, row.dtype, layout, "normal", 0, row.params)
    import importlib
    mod = None
    saved = {}
    if row.patch:
        build = op.spec.build
        mod = importlib.import_module(getattr(build, "func", build).__module__)
        saved = {k: getattr(mod, k) for k in row.patch}
        for k, v in row.patch.items():
            setattr(mod, k, v)
    try:
        if op.spec.elementwise:
            from parity.ops.elementwise import build, pack
            b = build(case)
            launch = pack(b.op, case.dtype, b.operands, b.params, inplace=b.inplace, out_layout=b.out_layout)
            return b, launch, case
        rng = np.random.default_rng([len(case.id), 0])
        b = op.spec.build(case, rng)
        return b, op.spec.pack(b), case
    finally:
        for k, v in saved.items():
            setattr(mod, k, v)


def nbytes_moved(launch, gather: bool) -> int:
    outs = {n: launch.buffers[n].nbytes for n in launch.outputs if n in launch.buffers}
    ins = {n: a.nbytes for n, a in launch.buffers.items() if n not in outs}
    inplace = any(a.kind == "ptr" and a.value is None for a in launch.args)
    if gather:                               # the rows read equal the rows written; ids read once
        ids = sum(v for n, v in ins.items() if "id" in n)
        return 2 * sum(outs.values()) + ids
    return sum(ins.values()) + sum(outs.values()) * (2 if inplace else 1)


# ------------------------------------------------------------------------- measuring
_FLOORS: dict = {}


def floor_ms(launch) -> float:
    """An empty kernel on the launch's grid, block and dynamic shared memory."""
    key = (tuple(launch.grid), tuple(launch.block), int(launch.shared_mem))
    if key not in _FLOORS:
        import cupy as cp
        k = cp.RawModule(code='extern "C" __global__ void parity_empty() {}').get_function("parity_empty")
        grid, block, shm = key
        _FLOORS[key] = timed(lambda: k(grid, block, (), shared_mem=shm), OPTS)
    return _FLOORS[key]


class RowImages:
    """A launch's buffers on the device once (guarded images, as parity's timed runs lay them out),
    run with any suite's kernel of that name; outputs restored before every sample."""

    def __init__(self, launch):
        import cupy as cp
        from parity.executors.device_images import DeviceImages
        from parity.host.marshal import GUARD_BYTES, arg_values
        self.launch, self.images, self._infos = launch, DeviceImages(launch), []

        def info_address(arr):
            d = cp.asarray(arr)
            self._infos.append(d)
            return int(d.data.ptr)
        dev = self.images.dev
        self.args = tuple(arg_values(launch, lambda n: int(dev[n].data.ptr) + GUARD_BYTES, info_address))

    def time(self, ex) -> float:
        from parity.executors.base import loaded_for_timing
        f = loaded_for_timing(ex, self.launch, ex._functions)   # RuntimeError: missing, not compiled
        grid, block, shm = tuple(self.launch.grid), tuple(self.launch.block), int(self.launch.shared_mem)
        return timed(lambda: f(grid, block, self.args, shared_mem=shm), OPTS,
                     before=lambda: self.images.restore(gpu_clock()))

    def release(self) -> None:
        self.images.release()
        self._infos.clear()


def check(ex, row: Row) -> str:
    """The row's kernel at 96 rows of the same length, judged by the catalog (nn rows)."""
    op = CATALOG[row.op]
    b, launch, case = prepare(row, rows_override=96)
    with np.errstate(all="ignore"):
        expected = op.spec.expected(b)
    res = ex.run(launch)
    fields, _ = op.spec.verdict(b, expected, res)
    v = str(fields["verdict"]).split(".")[-1].lower()
    return v if v == "pass" else f"{v}: {fields.get('message', '')[:160]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for suite_speed.md / .json")
    ap.add_argument("--suite", action="append", default=[], metavar="NAME=DIR",
                    help="a HIP suite column (repeatable) [default: after=backends/hip]")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                    help="a HIP suite column timed on the nn rows only (a variant of the nn kernels)")
    ap.add_argument("--cuda-src", type=Path, default=ROOT / ".candle" / "candle-kernels" / "src",
                    help="Candle's candle-kernels/src [default: .candle/candle-kernels/src]")
    ap.add_argument("--wave", type=int, default=32, choices=(32, 64), help="hip-on-nvidia wavefront size")
    ap.add_argument("--families", help="only these families, comma separated")
    ap.add_argument("--rows", metavar="GLOBS",
                    help="only the rows whose case matches one of these globs (comma separated), e.g. 'softmax f16*'")
    ap.add_argument("--no-lengths", action="store_true", help="nn at 4096 columns only")
    ap.add_argument("--check", nargs="?", const="*", metavar="SUITES",
                    help="judge each nn row's kernel at 96 rows on these HIP suites (comma separated; all if bare)")
    a = ap.parse_args()
    todo = rows(set(a.families.split(",")) if a.families else None, not a.no_lengths)
    if a.rows:
        todo = matching(todo, a.rows)
        if not todo:
            ap.error(f"--rows {a.rows!r} matches no row")
    import cupy as cp
    from parity.executors.cuda import CudaExecutor
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    suites = dict(s.split("=", 1) for s in a.suite) or {"after": str(ROOT / "backends" / "hip")}
    variants = dict(s.split("=", 1) for s in a.variant)
    hips = {name: HipOnNvidiaExecutor(suite_dir=Path(d), wave=a.wave) for name, d in {**suites, **variants}.items()}
    exes = dict(hips)
    if a.cuda_src.is_dir():
        exes["cuda"] = CudaExecutor(suite_dir=a.cuda_src)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    t0 = time.time()
    kernels = sorted({CATALOG[r.op].kernel_name(r.dtype) for r in todo})
    for name, ex in exes.items():             # every source at once: one compiler per core
        ex.precompile(ex.sources_for([k for k in kernels if name not in variants or k.split("_")[0] in NN_ROOTS]))
    print(f"compiled in {time.time() - t0:.0f} s", flush=True)
    out = []
    for r in todo:
        rec = {"family": r.family, "case": r.label}
        try:
            b, launch, case = prepare(r)
            nb = r.nbytes(launch) if r.nbytes else nbytes_moved(launch, r.gather)
            rec.update(kernel=launch.kernel, grid=list(launch.grid), block=list(launch.block), bytes=nb)
            rec["copy_us"] = round(1e3 * copy_ms(nb, OPTS), 2)
            rec["floor_us"] = round(1e3 * floor_ms(launch), 2)
            try:                                # a bound for the ceiling, never a reason to lose the row
                rec["launch_copy_us"] = round(1e3 * launch_copy_ms(launch.grid, launch.block, nb, timed, OPTS), 2)
            except Exception as e:
                rec.setdefault("notes", []).append(f"launch copy: {str(e).splitlines()[0][:120]}")
            img = RowImages(launch)
            try:
                for name, ex in exes.items():
                    if name in variants and r.family != "nn":
                        continue
                    try:
                        rec[f"{name}_us"] = round(1e3 * img.time(ex), 2)
                    except Exception as e:        # a kernel the suite lacks, a launch it refuses
                        rec[f"{name}_us"] = None
                        rec.setdefault("notes", []).append(f"{name}: {str(e).splitlines()[0][:120]}")
            finally:
                img.release()
            del b, launch
            if a.check and r.check:
                rec["check"] = {name: check(ex, r) for name, ex in hips.items()
                                if a.check == "*" or name in a.check.split(",")}
        except Exception as e:
            rec.setdefault("notes", []).append(f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            traceback.print_exc()
        for name in hips:
            t = rec.get(f"{name}_us")
            if t:
                rec[f"{name}_pct_copy"] = round(100 * rec["copy_us"] / t, 1)
                if rec.get("cuda_us"):
                    rec[f"{name}_vs_cuda"] = round(t / rec["cuda_us"], 3)
        if rec.get("cuda_us"):
            rec["cuda_pct_copy"] = round(100 * rec["copy_us"] / rec["cuda_us"], 1)
        out.append(rec)
        print(json.dumps(rec), flush=True)
        write(a.out, out, {"device": dev, "wave": a.wave, "suites": suites, "variants": variants,
                           "cuda_src": str(a.cuda_src), "cuda": "cuda" in exes})
    print(Path(a.out, "suite_speed.md").read_text())
    for ex in exes.values():
        ex.close()


if __name__ == "__main__":
    main()
