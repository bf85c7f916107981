"""Level `cupy`: a second GPU reference and the timing baseline.

The elementwise catalog ops (unary float ops, elu/powf, ucopy, binary add/sub/mul/div/minimum/
maximum, cmp, affine, cast, where) written as one CuPy ElementwiseKernel each, built from the small
tables below and following the CUDA kernels' semantics (float->u8 wraps through u32,
NaN->i64::MIN, f32 minimum ignores NaN while f16/bf16 propagate it, affine is one fma, round is
half away from zero, fp8 saturates). It runs the same Launch as every other level: the inputs
are read from the launch's buffers through `info` / the pointer offsets as
`cupy.lib.stride_tricks.as_strided` views of the device buffer, and the dense output is written
into the output buffer, so a layout or packing mistake shows up here too.

f16, bf16 and fp8 (e4m3) buffers are viewed as uint16 / uint8 and converted inside the kernel
bodies with NVIDIA's own intrinsics (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h): this reference shares
no conversion code with the bundled HIP suite (backends/hip/*.h) or the CPU reference
(parity/core/numerics.py). Arithmetic runs in float (double for f64) and is rounded once, except
where Candle's CUDA kernels round every step (f16/bf16 elu).

Flush-to-zero: CuPy appends `-ftz=true` to every NVRTC build, which would flush f32 (and, once
widened, bf16) subnormals that CUDA's kernels keep. The reference's kernels carry MARKER in
their source; a wrapper around CuPy's NVRTC entry point rewrites the options of those sources
(and only those) to `-ftz=false`. MARKER also keys CuPy's on-disk kernel cache apart from any
flushed build. A self-check (subnormal products, on the device) runs before the first f32/bf16
kernel of a process: if subnormals do not survive, those kernels answer `unavailable` with the
reason instead of a misleading verdict.

Every other op is CuPy array code (float64 and integer arithmetic, which -ftz does not touch,
so no self-check): the structured families reduce, candle-nn, indexing, argsort and the fill
family in cupy_structured.py; matmul, pooling/upsampling, the convolution kernels and the
conv.host routine in cupy_spatial.py. Host refusals (MatMulNonContiguous) answer `refused`.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable

import numpy as np

from parity.core.dtypes import FLOATS
from parity.core.numerics import scalar_to_dtype
from parity.executors.base import Availability, Executor
from parity.executors.cupy_spatial import execute_array_code
from parity.executors.cupy_structured import array_code, structured_supported
from parity.host.marshal import GUARD_BYTES, guarded_image, judge_images
from parity.ops.base import ExecResult, Launch, Op
from parity.ops.structured import HostRefused
from parity.timing import CupyClock, cupy_clock

# NumPy/CuPy storage dtype and C storage type of every ABI dtype (16/8-bit floats as raw bits)
NP_NAMES = {"u8": "uint8", "u32": "uint32", "i16": "int16", "i32": "int32", "i64": "int64",
            "f16": "uint16", "bf16": "uint16", "f32": "float32", "f64": "float64", "f8_e4m3": "uint8"}
CT = {"u8": "unsigned char", "u32": "unsigned int", "i16": "short", "i32": "int", "i64": "long long",
      "f16": "unsigned short", "bf16": "unsigned short", "f32": "float", "f64": "double",
      "f8_e4m3": "unsigned char"}

# NVIDIA's conversions for the floats CuPy cannot hold: bits -> float (exact), float -> bits and
# double -> bits (one round-to-nearest-even each). They give what Candle's CUDA kernels give: bf16
# NaN -> 0x7fff (Candle's CPU writes 0x7fc0); fp8 with satfinite: |x| > 448 and ±inf -> ±448,
# NaN -> 0x7f (cvt.rn.satfinite; HIP's conversion turns inf into NaN instead).
_HEADER = {"f16": "cuda_fp16.h", "bf16": "cuda_bf16.h", "f8_e4m3": "cuda_fp8.h"}
_LOAD = {"f16": "__half2float(__ushort_as_half({}))",
         "bf16": "__bfloat162float(__ushort_as_bfloat16({}))",
         "f8_e4m3": "__half2float(__nv_cvt_fp8_to_halfraw({}, __NV_E4M3))"}
_FROM_FLOAT = {"f16": "__half_as_ushort(__float2half_rn({}))",
               "bf16": "__bfloat16_as_ushort(__float2bfloat16_rn({}))",
               "f8_e4m3": "__nv_cvt_float_to_fp8({}, __NV_SATFINITE, __NV_E4M3)",
               "f32": "(float)({})", "f64": "(double)({})"}
_FROM_DOUBLE = {"f16": "__half_as_ushort(__double2half({}))",
                "bf16": "__bfloat16_as_ushort(__double2bfloat16({}))",
                "f8_e4m3": "__nv_cvt_double_to_fp8({}, __NV_SATFINITE, __NV_E4M3)",
                "f32": "(float)({})", "f64": "(double)({})"}
# 16-bit floats with native fma (affine): bits -> type, type -> bits, double -> type
_FMA16 = {"f16": ("__ushort_as_half", "__half_as_ushort", "__double2half"),
          "bf16": ("__ushort_as_bfloat16", "__bfloat16_as_ushort", "__double2bfloat16")}

# unary: expression of x (type C: float, double for f64); "{f}" suffixes the float-only spellings
# (_UNARY_T below: the expressions that depend on the dtype); _BITS: bodies on the storage bits
_UNARY = {
    "neg": "-x", "recip": "C(1) / x", "exp": "exp{f}(x)", "log": "log{f}(x)", "sin": "sin{f}(x)",
    "cos": "cos{f}(x)", "tanh": "tanh{f}(x)", "erf": "erf{f}(x)", "ceil": "ceil{f}(x)",
    "floor": "floor{f}(x)", "round": "round{f}(x)", "normcdf": "normcdf{f}(x)", "abs": "fabs{f}(x)",
    "sqr": "x * x", "sqrt": "sqrt{f}(x)",
    "gelu": "C(0.5) * x * (C(1) + tanh{f}(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)))",
    "gelu_erf": "x * normcdf{f}(x)", "silu": "x / (C(1) + exp{f}(-x))",
    "sign": "C((x > C(0)) - (x < C(0)))", "sigmoid": "C(1) / (C(1) + exp{f}(-x))",
    "powf": "pow{f}(x, C(p))",
}
_BITS = {"copy": "y = x0;"}                      # ucopy: bits copied, no conversion
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
# minimum/maximum: the comparison, and when a == b still picks a (min(-0, +0) = -0, max(+0, -0) = +0)
_MINMAX = {"minimum": ("<", "signbit(a) && !signbit(b)"), "maximum": (">", "!signbit(a) && signbit(b)")}

# Source marker of the reference's kernels: the NVRTC option rewrite applies to these sources only,
# and it keys CuPy's on-disk cache apart from flushed builds. Change it when the rewrite changes.
MARKER = "// parity.cupy_ref: NVRTC -ftz=false (CuPy's -ftz=true rewritten)"
# -ftz touches f32 arithmetic; bf16 subnormals are f32 subnormals once widened. f16 and fp8 widen
# to normal floats, and f64 is never flushed.
FTZ_SENSITIVE = ("f32", "bf16")
# Self-check, f32 bits (a, b, a*b): subnormal inputs kept, a subnormal product of normal inputs.
# b is a kernel input, not a literal, so NVRTC cannot fold x*1 away.
SUBNORMAL_PROBE = ((0x000116C2, 0x3F800000, 0x000116C2),    # 1e-40 * 1
                   (0x80000001, 0x3F800000, 0x80000001),    # -(smallest subnormal) * 1
                   (0x00800000, 0x3F000000, 0x00400000))    # 2^-126 * 0.5 = 2^-127


def _ctype(key: str) -> str:
    return "double" if key == "f64" else "float"


def _load(t: str, v: str) -> str:
    """The value of storage variable v as a float (exact), or itself for the other dtypes."""
    return _LOAD[t].format(v) if t in _LOAD else v


def _round_trip(t: str, e: str) -> str:
    """Float expression e rounded to f16/bf16 and widened back: one step of T arithmetic (f32, f64
    and fp8, which Candle computes in float, keep e)."""
    return _load(t, _FROM_FLOAT[t].format(e)) if t in ("f16", "bf16") else f"({e})"


def supported(op: Op, key: str) -> str:
    """'' when the CuPy reference has an ElementwiseKernel for this kernel, else why not."""
    if not op.spec.elementwise or op.family not in _SOURCES:
        return (f"{op.name} is not in the CuPy reference (it has unary, ucopy, binary, cmp, affine, "
                "cast and where)")
    return ""


def level_supported(op: Op, key: str) -> str:
    """'' when the level runs this kernel (an ElementwiseKernel, or cupy_structured/spatial array code)."""
    return structured_supported(op) if array_code(op) else supported(op, key)


def preamble(key: str) -> str:
    """MARKER and the NVIDIA headers whose conversions the kernel of this dtype key uses."""
    return "\n".join([MARKER] + sorted(f"#include <{_HEADER[p]}>" for p in set(key.split("-")) if p in _HEADER))


def _relu(t: str, f: str) -> str:
    """fmaxf(x, 0): NaN -> 0 and relu(-0) = +0; f16/bf16 max.NaN keeps NaN."""
    return f"(x != x) ? {'x' if t in ('f16', 'bf16') else 'C(0)'} : ((x > C(0)) ? x : C(0))"


def _elu(t: str, f: str) -> str:
    """Candle computes alpha*(exp(x)-1) in T: f16/bf16 round every step (elu_bf16(-0.001) = 0)."""
    e1 = _round_trip(t, f"exp{f}(x)")
    e2 = _round_trip(t, f"{e1} - C(1)")
    return f"(x > C(0)) ? x : {_round_trip(t, f'C(p) * {e2}')}"


_UNARY_T = {"relu": _relu, "elu": _elu}


def _unary_source(op: Op, key: str) -> tuple[str, str, str, str]:
    t, name = key.split("-")[-1], op.root[1:]
    S = NP_NAMES[t]
    if name in _BITS:
        return f"{S} x0", f"{S} y", _BITS[name], MARKER
    c = _ctype(t)
    f = "f" if c == "float" else ""
    expr = _UNARY_T[name](t, f) if name in _UNARY_T else _UNARY[name].format(f=f)
    params = f"{S} x0" + (", float64 p" if op.params_abi else "")
    body = f"typedef {c} C; C x = {_load(t, 'x0')}; y = {_FROM_FLOAT[t].format(expr)};"
    return params, f"{S} y", body, preamble(key)


def _binary_source(op: Op, key: str) -> tuple[str, str, str, str]:
    t = key.split("-")[-1]
    S, TC, c, pre = NP_NAMES[t], CT[t], _ctype(t), preamble(key)
    flt = t in FLOATS
    ins = f"{S} a0, {S} b0"
    load = (f"typedef {c} C; C a = {_load(t, 'a0')}; C b = {_load(t, 'b0')};" if flt
            else f"{TC} a = a0; {TC} b = b0;")
    if op.root in _CMP:
        return ins, "uint8 y", f"{load} y = (unsigned char)(a {_CMP[op.root]} b);", pre
    name = op.root[1:]
    if name in _BIN:
        store = _FROM_FLOAT[t].format(f"a {_BIN[name]} b") if flt else f"({TC})(a {_BIN[name]} b)"
        return ins, f"{S} y", f"{load} y = {store};", pre
    lt, sb = _MINMAX[name]
    if not flt:
        return ins, f"{S} y", f"{load} y = (a {lt} b) ? a : b;", pre
    pick = f"C r = ((a {lt} b) || (a == b && {sb})) ? a : b;"
    if t in ("f16", "bf16"):                     # __hmin_nan / __hmax_nan: NaN propagates
        nanrule = "r = (isnan(a) || isnan(b)) ? __int_as_float(0x7fffffff) : r;"
    else:                                        # fminf / fmaxf (fp8 too, through float): NaN ignored
        nanrule = "r = isnan(a) ? b : (isnan(b) ? a : r);"
    return ins, f"{S} y", f"{load} {pick} {nanrule} y = {_FROM_FLOAT[t].format('r')};", pre


def _affine_source(op: Op, key: str) -> tuple[str, str, str, str]:
    t = key.split("-")[-1]
    S, TC = NP_NAMES[t], CT[t]
    if t in _FMA16:                              # one rounding: native fma.rn.f16 / fma.rn.bf16
        frombits, tobits, fromd = _FMA16[t]
        body = f"y = {tobits}(__hfma({frombits}(x0), {fromd}(mul), {fromd}(add)));"
    elif t == "f8_e4m3":                         # no fp8 fma: x*mul+add of fp8 values is exact in
        exact = f"fma((double){_load(t, 'x0')}, mul, add)"     # double, then one rounding
        body = f"y = {_FROM_DOUBLE[t].format(exact)};"
    elif t == "f32":
        body = "y = fmaf(x0, (float)mul, (float)add);"
    elif t == "f64":
        body = "y = fma(x0, mul, add);"
    else:                                        # integers wrap
        body = f"y = ({TC})(x0 * ({TC})mul + ({TC})add);"
    return f"{S} x0, float64 mul, float64 add", f"{S} y", body, preamble(key)


def _cast_source(op: Op, key: str) -> tuple[str, str, str, str]:
    s, d = key.split("-")
    return f"{NP_NAMES[s]} x0", f"{NP_NAMES[d]} y", _cast_body(s, d), preamble(key)


def _where_source(op: Op, key: str) -> tuple[str, str, str, str]:
    ci, t = key.split("-")
    S = NP_NAMES[t]
    return f"{NP_NAMES[ci]} c0, {S} t0, {S} f0", f"{S} y", "y = (c0 != 0) ? t0 : f0;", MARKER


# the ElementwiseKernel of each family the reference has (unary includes ucopy, binary cmp)
_SOURCES = {"unary": _unary_source, "binary": _binary_source, "affine": _affine_source, "cast": _cast_source,
            "ternary": _where_source}


def kernel_source(op: Op, key: str) -> tuple[str, str, str, str]:
    """(in_params, out_params, body, preamble) of the ElementwiseKernel for op/key."""
    if op.family not in _SOURCES:
        raise KeyError(f"no CuPy reference for {op.name}")
    return _SOURCES[op.family](op, key)


def _cast_body(s: str, d: str) -> str:
    """cast_S_D as Candle's CUDA kernels compute it, one rounding wherever the result is a float."""
    x = _load(s, "x0")                           # f16/bf16/fp8 widen to float exactly
    if d in _LOAD:
        if s == "f32" or s in _LOAD:
            return f"y = {_FROM_FLOAT[d].format(x)};"
        return f"y = {_FROM_DOUBLE[d].format(f'(double){x}')};"   # f64, and integers (exact in double)
    DC = CT[d]
    if d in ("f32", "f64"):
        return f"y = ({DC})({x});"               # exact, or one cvt.rn
    if s not in FLOATS:
        return f"y = ({DC})x0;"                  # integer -> integer: two's complement wrap
    # float -> integer. Candle, unlike NVIDIA's __nv_fp8_e4m3 -> unsigned char (saturating), goes
    # through cvt.rzi.u32 and keeps the low byte for u8 (fp8 448 -> 0xc0, measured on an H200)
    v = f"double v = (double)({x});"
    if d == "u8":
        return (f"{v} y = (unsigned char)(v != v ? 0u : (v <= 0.0 ? 0u : (v >= 4294967295.0 ? 4294967295u "
                ": (unsigned int)v)));")
    if d == "u32":
        nanv = "2147483648u" if s == "f64" else "0u"
        return f"{v} y = v != v ? {nanv} : (v <= 0.0 ? 0u : (v >= 4294967295.0 ? 4294967295u : (unsigned int)v));"
    if d == "i64":
        return (f"{v} y = v != v ? (long long)(-9223372036854775807LL - 1) : (v >= 9223372036854775808.0 ? "
                "9223372036854775807LL : (v < -9223372036854775808.0 ? (-9223372036854775807LL - 1) : (long long)v));")
    info = np.iinfo(np.dtype(NP_NAMES[d]))
    return (f"{v} y = v != v ? ({DC})0 : (v >= {float(info.max)!r} ? ({DC}){int(info.max)} : "
            f"(v <= {float(info.min)!r} ? ({DC})({int(info.min)}) : ({DC})v));")


# --- flush-to-zero: option rewrite and self-check (pure parts testable without a GPU) ---------
def without_ftz(options: tuple[str, ...]) -> tuple[str, ...]:
    """NVRTC options with every flush-to-zero flag dropped and one `-ftz=false` appended.

    `--ftz={true|false}` defaults to false (nvcc/NVRTC option docs); which of two occurrences wins
    is not documented, so none of CuPy's is left to win."""
    return tuple(o for o in options if not o.lstrip("-").startswith("ftz")) + ("-ftz=false",)


def keep_subnormals(compile_fn: Callable) -> Callable:
    """compile_fn (CuPy's NVRTC entry point: source, options, ...) building sources that carry
    MARKER with without_ftz(options); every other source compiles exactly as CuPy asks."""
    @functools.wraps(compile_fn)
    def compile_(source, options=(), *args, **kwargs):
        if MARKER in source:
            options = without_ftz(tuple(options))
        return compile_fn(source, options, *args, **kwargs)
    compile_.parity_keeps_subnormals = True
    return compile_


# CuPy 14's _compile_with_cache_cuda calls _compile_using_nvrtc_no_warning (a module global, looked
# up at call time); older CuPy calls compile_using_nvrtc. The self-check proves the wrap took effect.
_NVRTC_ENTRY_POINTS = ("_compile_using_nvrtc_no_warning", "compile_using_nvrtc")


def install_ftz_rewrite(compiler: object) -> str:
    """Wrap the NVRTC entry point of `compiler` (cupy.cuda.compiler) once; the name wrapped."""
    for name in _NVRTC_ENTRY_POINTS:
        fn = getattr(compiler, name, None)
        if fn is not None:
            if not getattr(fn, "parity_keeps_subnormals", False):
                setattr(compiler, name, keep_subnormals(fn))
            return name
    raise RuntimeError(f"cupy.cuda.compiler has none of {', '.join(_NVRTC_ENTRY_POINTS)} to build "
                       "without flush-to-zero")


def subnormal_verdict(got_bits: Iterable[int]) -> str:
    """'' when the self-check kept every subnormal (got_bits: the products' f32 bits), else why
    the level cannot judge f32/bf16 kernels."""
    for (a, b, want), got in zip(SUBNORMAL_PROBE, got_bits):
        if int(got) != want:
            return (f"the CuPy reference flushes f32 subnormals despite -ftz=false (self-check: "
                    f"0x{a:08x} * 0x{b:08x} gave 0x{int(got):08x}, expected 0x{want:08x}); "
                    "f32/bf16 kernels are not judged on this level")
    return ""


def _elementwise(ins: str, outs: str, body: str, name: str, pre: str):
    """A CuPy ElementwiseKernel whose NVRTC build keeps subnormals (preamble carries MARKER)."""
    import cupy
    install_ftz_rewrite(cupy.cuda.compiler)
    return cupy.ElementwiseKernel(ins, outs, body, name, preamble=f"{pre}\n// CuPy {cupy.__version__}")


def run_subnormal_probe() -> list[int]:
    """The self-check on the device: the f32 bits of a*b for SUBNORMAL_PROBE."""
    import cupy
    kern = _elementwise("uint32 a0, uint32 b0", "uint32 y", "y = __float_as_uint(__uint_as_float(a0) * "
                        "__uint_as_float(b0));", "parity_ref_subnormal_probe", MARKER)
    a, b = (cupy.asarray(np.array([p[k] for p in SUBNORMAL_PROBE], dtype=np.uint32)) for k in (0, 1))
    return [int(v) for v in cupy.asnumpy(kern(a, b))]


class CupyRefExecutor(Executor):
    """The CuPy reference as an executor (level `cupy`)."""
    level = "cupy"

    def __init__(self, suite_dir: object = None, **_ignored):
        from parity.ops import expected_kernels
        self._kernels = expected_kernels()
        self._compiled: dict[str, object] = {}
        self._subnormals: str | None = None      # self-check verdict, once per executor (per worker)

    def availability(self) -> Availability:
        from parity.executors.hip_nvidia import cuda_device
        unusable, name, _ = cuda_device()
        if unusable is not None:
            return unusable
        import cupy
        return Availability(True, device=f"{name}, CuPy {cupy.__version__} ElementwiseKernel reference")

    def subnormal_problem(self) -> str:
        """'' when this process's reference kernels keep f32 subnormals (self-check), else why not."""
        if self._subnormals is None:
            try:
                self._subnormals = subnormal_verdict(run_subnormal_probe())
            except Exception as e:
                self._subnormals = (f"the CuPy reference's flush-to-zero self-check failed "
                                    f"({type(e).__name__}: {e}); f32/bf16 kernels are not judged on this level")
        return self._subnormals

    def prepare(self, kernel: str) -> ExecResult | None:
        if kernel not in self._kernels:
            return ExecResult("missing", message=f"no kernel {kernel} in the catalog")
        op, key = self._kernels[kernel]
        why = level_supported(op, key)
        if not why and not array_code(op) and any(p in FTZ_SENSITIVE for p in key.split("-")):
            why = self.subnormal_problem()
        if why:
            return ExecResult("unavailable", message=f"{kernel}: {why}")
        if kernel not in self._compiled and not array_code(op):
            ins, outs, body, pre = kernel_source(op, key)
            self._compiled[kernel] = _elementwise(ins, outs, body, f"parity_ref_{kernel}", pre)
        return None

    # --- the launch as CuPy arrays ---------------------------------------------------------
    def plan(self, launch: Launch, dev: dict, guard: int) -> Callable[[], None]:
        """enqueue() that runs the reference kernel on the device images in `dev`."""
        import cupy
        op, key = self._kernels[launch.kernel]

        def typed(name: str):                    # the buffer as its storage dtype (raw bits for f16/bf16/fp8)
            nbytes = launch.buffers[name].nbytes
            return dev[name][guard: guard + nbytes].view(np.dtype(NP_NAMES[launch.dtypes[name]]))
        if array_code(op):
            bufs = {n: typed(n) for n in launch.buffers}
            return lambda: execute_array_code(cupy, launch, op, key, bufs)
        kern = self._compiled[launch.kernel]
        args = {a.name: a for a in launch.args}
        numel = int(args["numel"].value)
        nd = int(args["num_dims"].value) if "num_dims" in args else 0
        info = args["info"].value if "info" in args else None
        shape = tuple(int(d) for d in info[:nd]) if info is not None else (numel,)
        out_name, out_off = args["out"].value
        out_all = typed(out_name)
        out = out_all[out_off: out_off + numel].reshape(shape)
        inputs = []
        for k, name in enumerate(op.inputs):
            ptr = args[name].value
            if ptr is None:                              # in place: read out
                inputs.append(out_all[out_off: out_off + numel].reshape(shape))
                continue
            base = typed(ptr[0])[int(ptr[1]):]
            item = base.dtype.itemsize
            if info is None:
                strides = tuple(int(s) * item for s in _row_major(shape))
            else:
                strides = tuple(int(s) * item for s in info[nd * (1 + k): nd * (2 + k)])
            inputs.append(cupy.lib.stride_tricks.as_strided(base, shape=shape, strides=strides))
        scalars = []
        t = op.dtype_parts(key)[-1]
        for p in op.params_abi:
            v = args[p].value
            scalars.append(np.float64(scalar_to_dtype(v, t).astype(np.float64)[0]))
        if numel == 0:
            return lambda: None
        call = tuple(inputs) + tuple(scalars)
        return lambda: kern(*call, out)

    def run(self, launch: Launch) -> ExecResult:
        err = self.prepare(launch.kernel)
        if err is not None:
            return err
        import cupy
        from cupy.cuda.compiler import CompileException
        hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        try:
            dev = {n: cupy.asarray(guarded_image(h)) for n, h in hosts.items()}
            self.plan(launch, dev, GUARD_BYTES)()
            cupy.cuda.Device().synchronize()
            images = {n: cupy.asnumpy(d) for n, d in dev.items()}
        except CompileException as e:            # NVRTC builds on the first launch of each shape
            return ExecResult("compile-error", message=f"CuPy reference {launch.kernel}: {e}")
        except HostRefused as e:                 # Candle's host refuses the layout (MatMulNonContiguous)
            return ExecResult("refused", message=str(e))
        except Exception as e:
            return ExecResult("crash", message=f"CuPy reference {launch.kernel}: {type(e).__name__}: {e}")
        return judge_images(launch, hosts, images)

    def prepared(self, launch: Launch):
        err = self.prepare(launch.kernel)
        if err is not None:
            raise RuntimeError(f"{err.status}: {err.message}")
        if array_code(self._kernels[launch.kernel][0]):   # many small launches: no HIP/CuPy ratio from it
            raise RuntimeError(f"{launch.kernel}: the CuPy reference runs it as array code, not a timing baseline")
        return _prepared(self, launch)

    def clock(self, flush_factor: float = 2.0) -> CupyClock:
        return cupy_clock(flush_factor)

    def close(self) -> None:
        self._compiled.clear()


def _row_major(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def _prepared(ex: "CupyRefExecutor", launch: Launch):
    """parity.timing's prepared-launch interface for the reference kernels."""
    from parity.executors.device_images import DeviceImages
    p = DeviceImages(launch)
    p.enqueue = ex.plan(launch, p.dev, GUARD_BYTES)
    p.cp.cuda.Device().synchronize()
    return p
