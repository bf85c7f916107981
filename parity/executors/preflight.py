"""What an executor decides about a kernel before launching it: found, not compiled, not found,
or declared with another parameter list than the ABI passes.

Shared by the NVIDIA and AMD executors, so a port gets the same verdicts on every level:
* `compile-error` for every kernel of a file that does not compile (never `missing`: the kernel
  may well be there), with the compiler's first *error* and its file:line;
* `compile-error` naming the header when the undefined identifier is one ROCm declares in a
  header the file does not include (`half` without <hip/hip_fp16.h> fails on AMD too);
* `mapping-gap` when the file includes that header and parity's HIP-on-NVIDIA mapping still
  lacks the identifier: parity's bug, not the port's;
* `signature-mismatch` when the suite declares the kernel with parameters the launch would pass
  differently: launching it would read garbage or fault, so it is not launched.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from parity.ops.base import ExecResult, Launch
from parity.suite.compile_cache import CompileResult
from parity.suite.coverage import abi_class, compare_signature, suggestion_for
from parity.suite.hip_api import first_error, undeclared_rocm_names
from parity.suite.scan import Suite


def compile_failure(source: Path, res: CompileResult, hip_mapping: bool = False, port=None) -> ExecResult:
    """The verdict of a kernel whose source file did not compile. hip_mapping: the file was
    compiled through parity's HIP-on-NVIDIA mapping, so an undefined HIP identifier that the file
    does include the ROCm header of is a gap of the mapping. port: its build line (parity.suite.port.
    Port), whose include folders the file's headers are found in and whose force-included headers
    (a shim port's compat header) come ahead of it."""
    text = res.error.message if res.error else res.log
    if res.timed_out:                # slow, not wrong: the level could not check it here (not a failure)
        return ExecResult("unavailable", message=text.strip().splitlines()[0], detail={"source": str(source)})
    first = first_error(text) or (text.strip().splitlines() or ["(no compiler output)"])[0]
    detail = {"source": str(source)}
    rocm = undeclared_rocm_names(text, source, *((list(port.include_dirs), list(port.force_includes)) if port else ()))
    unincluded = [u for u in rocm if not u.included]
    if unincluded:                   # fails with ROCm's headers too: the port's own error
        u = unincluded[0]
        detail["missing_include"] = list(u.headers)
        return ExecResult("compile-error", message=f"{u.missing_include(Path(source).name)} — {first}",
                          detail=detail)
    if rocm and hip_mapping:
        gap = rocm[0]
        detail["mapping_gap"] = gap.name
        where = " or ".join(f"<{h}>" for h in gap.headers)
        return ExecResult("mapping-gap", message=f"mapping-gap: {gap.name} (ROCm declares it in {where}, which "
                                                 f"{Path(source).name} includes; parity's HIP-on-NVIDIA mapping "
                                                 f"does not: parity's bug, not the port's) — {first}",
                          detail=detail)
    return ExecResult("compile-error", message=first, detail=detail)


def _text(src: Path) -> str:
    """A source's text, read once while it is unchanged (a half-done port asks about hundreds of
    missing kernels, each against every source); '' when it cannot be read."""
    try:
        st = Path(src).stat()
    except OSError:
        return ""
    return _read(str(src), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _read(src: str, _mtime_ns: int, _size: int) -> str:
    try:
        return Path(src).read_text(errors="replace")
    except OSError:
        return ""


def _cxx_kernel(kernel: str, suite: Suite, pattern: str = r"__global__[^;{}()]*?\b{k}\s*[(<]") -> str:
    """`file:line` of a `__global__` function named `kernel` that discovery did not take (it reads
    extern "C" kernels only; pattern: what to look for instead, `{k}` the name), else ''."""
    pat = re.compile(pattern.replace("{k}", re.escape(kernel)))
    for src in getattr(suite, "sources", ()):
        text = _text(src)
        m = pat.search(text)
        if m:
            return f"{src}:{text.count(chr(10), 0, m.start()) + 1}"
    return ""


def not_found(kernel: str, suite: Suite, where: str, failed: list[tuple[Path, CompileResult]],
              hip_mapping: bool = False, absent_for: str = "") -> ExecResult:
    """No compiled file defines `kernel`. If a file that failed to compile names it, that file's
    failure is the verdict (the kernel may be there); otherwise `missing`, with the closest name.
    absent_for: the targets whose code object lacks it, where others have it (` for gfx1030`)."""
    for src, res in failed:
        if kernel in _text(src):
            return compile_failure(src, res, hip_mapping)
    decl = suite.kernels.get(kernel)
    msg = f"no kernel {kernel} in {where}"
    built = {Path(p).resolve() for p in getattr(suite, "sources", ())}
    if decl is not None and built and Path(decl.file).resolve() not in built:
        msg += (f" (declared at {decl.where()}, a file the port's build does not compile: a .hip suite compiles "
                "its .hip files, so a .cu there, such as Candle's original kept beside the port, defines nothing)")
    elif decl is not None:
        msg += (f" (declared at {decl.where()} but absent from the compiled module{absent_for}: excluded by #if, "
                "or not extern \"C\" (a C++ name is mangled)?)")
    else:
        cxx = _cxx_kernel(kernel, suite)
        named = "" if cxx else _cxx_kernel(kernel, suite, r"\b{k}\b")
        if cxx:
            msg += (f" ({cxx} has a kernel of that name that discovery did not take: a C++ kernel (a namespace, "
                    "a template, no extern \"C\") has a mangled symbol, and the ABI finds kernels by their C "
                    "names: declare it extern \"C\"; or the preprocessor leaves it out (#if))")
        elif named:                  # (a macro stamps it under an #if the AMD pass does not take)
            msg += (f" ({named} names it, but the sources read as hipcc's AMD pass reads them (no __CUDA_ARCH__) "
                    "define no such kernel: an #if around it, such as Candle's `#if __CUDA_ARCH__ >= 800`, leaves "
                    "it out for AMD)")
    sugg = suggestion_for(kernel, suite)
    if sugg:
        msg += f"; closest defined: {sugg}"
    if failed:                      # macro-stamped names cannot be found in the text: say what failed
        msg += "; sources that failed to compile: " + ", ".join(str(s) for s, _ in failed)
    return ExecResult("missing", message=msg)


def signature_mismatch(suite: Suite, launch: Launch) -> ExecResult | None:
    """`signature-mismatch` when the suite declares launch.kernel with parameters that the launch
    passes differently (by ABI class: size_t for unsigned long long is fine), or, where the op's
    profile knows the pointees (launch.typed), with a pointer to elements of another width (`float*`
    where f16 elements go): the same judgement as `parity coverage`. None otherwise."""
    decl = suite.kernels.get(launch.kernel)
    if decl is None:
        return None
    return declared_mismatch(decl, [a.ctype() for a in launch.args], launch.typed, "; not launched")


def declared_mismatch(decl, expected: list[str], expected_typed: list[str] | None, tail: str = "") -> ExecResult | None:
    """`signature-mismatch` when the kernel's declaration `decl` (parity.suite.scan.KernelDecl) takes
    other parameters than `expected` (by ABI class), or, where the pointees are known (`expected_typed`),
    a pointer to elements of another width (`const uint32_t *info` for size_t); None otherwise. The one
    judgement of coverage, a launch's preflight and the amd-static level."""
    if decl.params is None:
        return None
    ok, note = compare_signature(expected, decl.params, expected_typed, decl.types)
    if ok:
        return None
    typed = expected_typed is not None and decl.types is not None and [abi_class(t) for t in expected] == \
        [abi_class(t) for t in decl.params]       # the classes agree: the difference is a pointee
    found, passed = (decl.types, expected_typed) if typed else (decl.params, expected)
    return ExecResult("signature-mismatch",
                      message=f"{decl.where()}: {decl.name}({', '.join(found)}) but the ABI passes "
                              f"({', '.join(passed)}): {note}{tail}",
                      detail={"source": str(decl.file) if decl.file else "", "expected_params": list(passed),
                              "found_params": list(found)})
