"""Level `cupy`: a second GPU reference and the timing baseline for elementwise ops.

The elementwise catalog ops (unary float ops, elu/powf, binary add/sub/mul/div/minimum/maximum,
cmp, affine, cast between the dtypes CuPy has, where, ucopy) written as one CuPy
ElementwiseKernel each, following the CPU reference's semantics where that is cheap
(float->u8 wraps through u32, NaN->i64::MIN, f32 minimum ignores NaN while f16 propagates it,
affine is one fma, round is half away from zero). It runs the same Launch as every other level:
the inputs are read from the launch's buffers through `info` / the pointer offsets as
`cupy.lib.stride_tricks.as_strided` views of the device buffer, and the dense output is written
into the output buffer, so a layout or packing mistake shows up here too.

CuPy has no bfloat16 or float8: those kernels, and the non-elementwise families, answer
`unavailable` (with the reason), never pass.
"""
from __future__ import annotations

import numpy as np

from ..numerics import scalar_to_dtype
from ..ops.base import Launch
from .base import Availability, ExecResult, Executor

NP_NAMES = {"u8": "uint8", "u32": "uint32", "i16": "int16", "i32": "int32", "i64": "int64",
            "f16": "float16", "f32": "float32", "f64": "float64"}
CT = {"u8": "unsigned char", "u32": "unsigned int", "i16": "short", "i32": "int", "i64": "long long",
      "f16": "float16", "f32": "float", "f64": "double"}          # C types inside kernel bodies
_F = ("f16", "f32", "f64")

# unary: expression of x (type C, float or double); "{f}" suffixes the float-only spellings
_UNARY = {
    "neg": "-x", "recip": "C(1) / x", "exp": "exp{f}(x)", "log": "log{f}(x)", "sin": "sin{f}(x)",
    "cos": "cos{f}(x)", "tanh": "tanh{f}(x)", "erf": "erf{f}(x)", "ceil": "ceil{f}(x)",
    "floor": "floor{f}(x)", "round": "round{f}(x)", "normcdf": "normcdf{f}(x)", "abs": "fabs{f}(x)",
    "sqr": "x * x", "sqrt": "sqrt{f}(x)",
    "gelu": "C(0.5) * x * (C(1) + tanh{f}(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)))",
    "gelu_erf": "x * normcdf{f}(x)", "silu": "x / (C(1) + exp{f}(-x))",
    "sign": "C((x > C(0)) - (x < C(0)))", "sigmoid": "C(1) / (C(1) + exp{f}(-x))",
    "elu": "(x > C(0)) ? x : C(p) * (exp{f}(x) - C(1))", "powf": "pow{f}(x, C(p))",
}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _ctype(key: str) -> str:
    return "double" if key == "f64" else "float"


def supported(op, key: str) -> str:
    """'' when the CuPy reference has this kernel, else why not."""
    parts = key.split("-")
    if any(p not in NP_NAMES for p in parts):
        return "CuPy has no bfloat16/float8 dtype"
    if op.custom is not None or op.family not in ("unary", "binary", "affine", "cast", "ternary"):
        return f"{op.family} is not in the CuPy reference (elementwise ops only)"
    return ""


def kernel_source(op, key: str) -> tuple[str, str, str, str]:
    """(in_params, out_params, body, preamble) of the ElementwiseKernel for op/key."""
    parts = key.split("-")
    t = parts[-1]
    root, fam = op.root, op.family
    c = _ctype(t)
    f = "f" if c == "float" else ""
    pre = f"typedef {c} C;"
    if fam == "unary":
        T, TC = NP_NAMES[t], CT[t]
        if root == "ucopy":
            return f"{T} x0", f"{T} y", "y = x0;", ""
        name = root[1:]
        expr = _UNARY.get(name, "x").format(f=f)
        if name == "relu":
            nan = "x" if t == "f16" else "C(0)"
            expr = f"(x != x) ? {nan} : ((x >= C(0)) ? x : C(0))"
        params = f"{T} x0" + (", float64 p" if op.params_abi else "")
        return params, f"{T} y", f"C x = (C)x0; y = ({TC})({expr});", pre
    if fam == "binary":
        T, TC = NP_NAMES[t], CT[t]
        flt = t in _F
        load = "C a = (C)a0; C b = (C)b0;" if flt else f"{TC} a = a0; {TC} b = b0;"
        if root in _CMP:
            return f"{T} a0, {T} b0", "uint8 y", f"{load} y = (unsigned char)(a {_CMP[root]} b);", pre
        name = root[1:]
        if name in _BIN:
            return f"{T} a0, {T} b0", f"{T} y", f"{load} y = ({TC})(a {_BIN[name]} b);", pre
        lt = "<" if name == "minimum" else ">"
        if not flt:
            return f"{T} a0, {T} b0", f"{T} y", f"{load} y = (a {lt} b) ? a : b;", pre
        sb = "signbit(a) && !signbit(b)" if name == "minimum" else "!signbit(a) && signbit(b)"
        pick = f"C r = ((a {lt} b) || (a == b && {sb})) ? a : b;"
        if t == "f16":
            nanrule = "r = (isnan(a) || isnan(b)) ? __int_as_float(0x7fffffff) : r;"
        else:
            nanrule = "r = isnan(a) ? b : (isnan(b) ? a : r);"
        return f"{T} a0, {T} b0", f"{T} y", f"{load} {pick} {nanrule} y = ({TC})r;", pre
    if fam == "affine":
        T, TC = NP_NAMES[t], CT[t]
        if t in _F:
            body = ("y = (float16)(float)fma((double)(float)x0, mul, add);" if t == "f16" else
                    "y = fmaf(x0, (float)mul, (float)add);" if t == "f32" else "y = fma(x0, mul, add);")
        else:
            body = f"y = ({TC})(x0 * ({TC})mul + ({TC})add);"
        return f"{T} x0, float64 mul, float64 add", f"{T} y", body, pre
    if fam == "cast":
        s, d = parts
        S, D, DC = NP_NAMES[s], NP_NAMES[d], CT[d]
        if s in _F and d in _F:
            conv = "(float)x0" if (d == "f16" and s == "f64") or s == "f16" else "x0"
            body = f"y = ({DC})({conv});"
        elif s in _F:
            v = "double v = (double)x0;"
            if d == "u8":
                body = f"{v} y = (unsigned char)(v != v ? 0u : (v <= 0.0 ? 0u : (v >= 4294967295.0 ? 4294967295u : (unsigned int)v)));"
            elif d == "u32":
                nanv = "2147483648u" if s == "f64" else "0u"
                body = f"{v} y = v != v ? {nanv} : (v <= 0.0 ? 0u : (v >= 4294967295.0 ? 4294967295u : (unsigned int)v));"
            elif d == "i64":
                body = (f"{v} y = v != v ? (long long)(-9223372036854775807LL - 1) : (v >= 9223372036854775808.0 ? "
                        "9223372036854775807LL : (v < -9223372036854775808.0 ? (-9223372036854775807LL - 1) : (long long)v));")
            else:
                info = np.iinfo(np.dtype(D))
                body = (f"{v} y = v != v ? ({DC})0 : (v >= {float(info.max)!r} ? ({DC}){int(info.max)} : "
                        f"(v <= {float(info.min)!r} ? ({DC})({int(info.min)}) : ({DC})v));")
        elif d in _F:
            if s == "i64":
                body = f"y = ({DC})((double)x0);" if d == "f64" else f"y = ({DC})((float)x0);"
            else:
                body = f"y = ({DC})((double)x0);" if d != "f16" else "y = (float16)((float)x0);"
        else:
            body = f"y = ({DC})x0;"
        return f"{S} x0", f"{D} y", body, ""
    if fam == "ternary":
        ci, t2 = parts
        I, T = NP_NAMES[ci], NP_NAMES[t2]
        return f"{I} c0, {T} t0, {T} f0", f"{T} y", "y = (c0 != 0) ? t0 : f0;", ""
    raise KeyError(f"no CuPy reference for {op.name}")


class CupyRefExecutor(Executor):
    """The CuPy reference as an executor (level `cupy`)."""
    level = "cupy"

    def __init__(self, suite_dir=None, **_ignored):
        from ..ops import expected_kernels
        self._kernels = expected_kernels()
        self._compiled: dict[str, object] = {}

    def availability(self) -> Availability:
        from .hip_nvidia import cuda_device
        unusable, name, _ = cuda_device()
        if unusable is not None:
            return unusable
        import cupy
        return Availability(True, device=f"{name}, CuPy {cupy.__version__} ElementwiseKernel reference")

    def prepare(self, kernel: str) -> ExecResult | None:
        if kernel not in self._kernels:
            return ExecResult("missing", message=f"no kernel {kernel} in the catalog")
        op, key = self._kernels[kernel]
        why = supported(op, key)
        if why:
            return ExecResult("unavailable", message=f"{kernel}: {why}")
        if kernel not in self._compiled:
            import cupy
            ins, outs, body, pre = kernel_source(op, key)
            # Known limit: CuPy appends -ftz=true to every NVRTC build, so f32 subnormals flush here
            # (H200: neg(1.17e-38f) -> -0, 172 special-value cases off); CUDA's kernels keep them.
            self._compiled[kernel] = cupy.ElementwiseKernel(ins, outs, body, f"parity_ref_{kernel}", preamble=pre)
        return None

    # --- the launch as CuPy arrays ---------------------------------------------------------
    def plan(self, launch: Launch, dev: dict, guard: int):
        """enqueue() that runs the reference kernel on the device images in `dev`."""
        import cupy
        from cupy.lib.stride_tricks import as_strided
        op, key = self._kernels[launch.kernel]
        kern = self._compiled[launch.kernel]
        args = {a.name: a for a in launch.args}
        numel = int(args["numel"].value)
        nd = int(args["num_dims"].value) if "num_dims" in args else 0
        info = args["info"].value if "info" in args else None
        shape = tuple(int(d) for d in info[:nd]) if info is not None else (numel,)
        hosts = launch.buffers

        def typed(name: str):
            h = hosts[name]
            return dev[name][guard: guard + h.nbytes].view(h.dtype)
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
            inputs.append(as_strided(base, shape=shape, strides=strides))
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
        from .hip_nvidia import GUARD_BYTES, HipOnNvidiaExecutor, guarded_image
        hosts = {n: np.ascontiguousarray(b) for n, b in launch.buffers.items()}
        try:
            dev = {n: cupy.asarray(guarded_image(h)) for n, h in hosts.items()}
            self.plan(launch, dev, GUARD_BYTES)()
            cupy.cuda.Device().synchronize()
            images = {n: cupy.asnumpy(d) for n, d in dev.items()}
        except Exception as e:
            return ExecResult("crash", message=f"CuPy reference {launch.kernel}: {type(e).__name__}: {e}")
        return HipOnNvidiaExecutor.judge(launch, hosts, images)

    def prepared(self, launch: Launch):
        err = self.prepare(launch.kernel)
        if err is not None:
            raise RuntimeError(f"{err.status}: {err.message}")
        return _prepared(self, launch)

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
    from ..timing import DeviceImages
    from .hip_nvidia import GUARD_BYTES
    p = DeviceImages(launch)
    p.enqueue = ex.plan(launch, p.dev, GUARD_BYTES)
    p.cp.cuda.Device().synchronize()
    return p
