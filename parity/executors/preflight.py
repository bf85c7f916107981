"""What an executor decides about a kernel before launching it: found, not compiled, not found,
or declared with another parameter list than the ABI passes.

Shared by the NVIDIA and AMD executors, so a port gets the same verdicts on every level:
* `compile-error` for every kernel of a file that does not compile (never `missing`: the kernel
  may well be there), with the compiler's first *error* and its file:line;
* `mapping-gap` when that error is an identifier ROCm declares but parity's HIP-on-NVIDIA
  mapping lacks: parity's bug, not the port's;
* `signature-mismatch` when the suite declares the kernel with parameters the launch would pass
  differently: launching it would read garbage or fault, so it is not launched.
"""
from __future__ import annotations

from pathlib import Path

from ..compile_cache import CompileResult
from ..coverage import compare_signature, suggestion_for
from ..hip_api import first_error, mapping_gap
from ..ops.base import ExecResult, Launch
from ..suite import Suite


def compile_failure(source: Path, res: CompileResult, hip_mapping: bool = False) -> ExecResult:
    """The verdict of a kernel whose source file did not compile. hip_mapping: the file was
    compiled through parity's HIP-on-NVIDIA mapping, so an undefined HIP identifier is a gap of it."""
    text = res.error.message if res.error else res.log
    first = first_error(text) or (text.strip().splitlines() or ["(no compiler output)"])[0]
    detail = {"source": str(source)}
    gap = mapping_gap(text) if hip_mapping else None
    if gap:
        detail["mapping_gap"] = gap
        return ExecResult("mapping-gap", message=f"mapping-gap: {gap} (ROCm declares it; parity's HIP-on-NVIDIA "
                                                 f"mapping does not: parity's bug, not the port's) — {first}",
                          detail=detail)
    return ExecResult("compile-error", message=first, detail=detail)


def not_found(kernel: str, suite: Suite, where: str, failed: list[tuple[Path, CompileResult]],
              hip_mapping: bool = False) -> ExecResult:
    """No compiled file defines `kernel`. If a file that failed to compile names it, that file's
    failure is the verdict (the kernel may be there); otherwise `missing`, with the closest name."""
    for src, res in failed:
        try:
            if kernel in src.read_text(errors="replace"):
                return compile_failure(src, res, hip_mapping)
        except OSError:
            pass
    decl = suite.kernels.get(kernel)
    msg = f"no kernel {kernel} in {where}"
    if decl is not None:
        msg += f" (declared at {decl.where()} but absent from the compiled module: excluded by #if?)"
    sugg = suggestion_for(kernel, suite)
    if sugg:
        msg += f"; closest defined: {sugg}"
    if failed:                      # macro-stamped names cannot be found in the text: say what failed
        msg += "; sources that failed to compile: " + ", ".join(str(s) for s, _ in failed)
    return ExecResult("missing", message=msg)


def signature_mismatch(suite: Suite, launch: Launch) -> ExecResult | None:
    """`signature-mismatch` when the suite declares launch.kernel with parameters that the launch
    passes differently (by ABI class: size_t for unsigned long long is fine); None otherwise."""
    decl = suite.kernels.get(launch.kernel)
    if decl is None or decl.params is None:
        return None
    expected = [a.ctype() for a in launch.args]
    ok, note = compare_signature(expected, decl.params)
    if ok:
        return None
    return ExecResult("signature-mismatch",
                      message=f"{decl.where()}: {launch.kernel}({', '.join(decl.params)}) but the ABI passes "
                              f"({', '.join(expected)}): {note}; not launched",
                      detail={"source": str(decl.file) if decl.file else "", "expected_params": expected,
                              "found_params": list(decl.params)})
