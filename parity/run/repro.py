"""Re-run one case on one level and dump everything needed to replay its launch elsewhere.

The .npz holds, for the case: every base buffer as it was before the launch (`buf_<name>`, raw
bits for dtypes NumPy lacks: `dtypes` says which), each operand's shape/strides/offset, the
`info` arrays, the expected and the returned output, the kernel name, the launch description
and the argument list (`args` as JSON). `snippet()` prints a standalone CuPy script that loads
the .npz, compiles the suite's source with RawModule and replays the launch.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from parity import chains, profiles
from parity.core.row import Verdict
from parity.core.text import one_line
from parity.core.suggest import unknown
from parity.host.marshal import scalar_arg
from parity.ops import CATALOG
from parity.run.cases import Case
from parity.run.engine import with_pointees

NATIVE_NP = {"bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
             "float16", "float32", "float64"}


@dataclass
class Repro:
    case_id: str
    level: str
    kernel: str
    verdict: Verdict             # pass, fail, an executor verdict, or unavailable
    message: str
    npz: Path | None
    source: Path | None          # the suite file defining the kernel (when found)
    snippet: str
    kept: bool = False           # npz is an earlier repro's of this case, left as it was: it holds a `got`,
                                 # and this run executed nothing (unavailable, compiled)


def _raw(a: np.ndarray, dt: str) -> np.ndarray:
    """An array npz can hold without pickling: ml_dtypes types become their unsigned bit patterns."""
    a = np.ascontiguousarray(a)
    if a.dtype.name in NATIVE_NP:
        return a
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _args(launch) -> list[dict]:
    out = []
    for a in launch.args:
        d = {"name": a.name, "kind": a.kind}
        if a.kind == "ptr":
            d["buffer"], d["offset"] = (None, 0) if a.value is None else (a.value[0], int(a.value[1]))
        elif a.kind == "info":
            d["info"] = None if a.value is None else f"info_{a.name}"
        else:
            s = scalar_arg(a)                      # the exact bytes the kernel receives
            d["np"], d["value"], d["dtype"], d["given"] = s.dtype.name, s.item(), a.dtype, a.value
        out.append(d)
    return out


def find_source(kernel: str, level: str, subj) -> Path | None:
    """The file defining `kernel` in the suite `level` runs (the session's one discovery of the HIP
    suite; the CUDA suite for `cuda`)."""
    from parity.suite.scan import discover
    folder = subj.cuda_src if level == "cuda" else subj.hip_src
    if folder is None or not Path(folder).is_dir():
        return None
    try:
        suite = discover(folder) if level == "cuda" else subj.suite()
        f = suite.file_of(kernel)
        return Path(f) if f else None
    except Exception:
        return None


def _subject(hip_src: Path | None, cuda_src: Path | None, profile: str | None = None):
    """The session's subject of a repro; profile: the case's ABI profile (None: Candle's)."""
    from parity.run import session
    return session.subject(hip_src, cuda_src, profile=profile or "candle")


def auto_level(subj) -> str:
    """The level `parity repro` runs a case on unless told: hip-on-nvidia where an NVIDIA GPU runs it,
    else amd on a ROCm GPU, else cpu (the reference alone: no kernel of the port runs there)."""
    from parity.run import session
    for name in ("hip-on-nvidia", "amd"):
        (lv,) = session.build_levels([name], subj, named=None)
        try:
            if lv.availability.available:
                return name
        finally:
            if lv.executor is not None:
                lv.executor.close()
    return "cpu"


def _judged_on(level: str, subj, spec, built, expected, launch):
    """(verdict, message, the output judged, ExecResult) of one launch on `level`; an unavailable
    level gives (unavailable, its reason, None, None)."""
    from parity.run import session
    (lv,) = session.build_levels([level], subj, named=None)
    if not lv.availability.available:
        return Verdict.UNAVAILABLE, lv.availability.reason, None, None
    try:
        res = lv.executor.run(launch)
    finally:
        lv.executor.close()
    fields, got = spec.verdict(built, expected, res)
    return fields["verdict"], fields.get("message", ""), got, res


def _unknown_in(case_id: str, kind: str, word: str, choices, hint: str = "") -> ValueError:
    """`unknown layout 'transposd' in case id '...'; did you mean 'transposed'?`"""
    line = unknown(kind, word, choices, hint)
    head = f"unknown {kind} {word!r}"
    return ValueError(head + f" in case id {case_id!r}" + line[len(head):])


def parse_case(case_id: str) -> Case:
    """The case a case ID names, every part checked against the catalog: ValueError with one line
    naming the part that is wrong (op, dtype, layout, value class, parameter) and the closest names."""
    case = Case.parse(case_id)
    if chains.is_chain(case.op):
        ops = chains.chains()
        if case.op not in ops:
            raise _unknown_in(case_id, "chain", case.op, ops, "see `parity list`")
        op = ops[case.op]
        if case.dtype not in op.dtypes:
            raise _unknown_in(case_id, "dtype", case.dtype, op.dtypes)
        return case
    try:
        op = profiles.lookup_op(case.op)
    except KeyError:
        raise _unknown_in(case_id, "op", case.op, CATALOG, "see `parity list`") from None
    if case.dtype not in op.dtypes:
        raise _unknown_in(case_id, "dtype", case.dtype, op.dtypes)
    if case.layout not in op.spec.layouts():
        raise _unknown_in(case_id, "layout", case.layout, op.spec.layouts())
    if case.values not in op.values_for(case.dtype):
        raise _unknown_in(case_id, "value class", case.values, op.values_for(case.dtype))
    names = {k for ps in op.param_sets for k in ps}
    given = {k for k, _ in case.params}
    for k, _ in case.params:
        if not names:
            raise ValueError(f"case id {case_id!r}: {op.name} takes no parameters (drop @{k}=...)")
        if k not in names:
            raise _unknown_in(case_id, "parameter", k, sorted(names))
    missing = sorted(names - given)
    if missing:
        raise ValueError(f"case id {case_id!r} lacks parameter {missing[0]!r} of {op.name} "
                         f"(@{','.join(f'{k}=...' for k in sorted(names))})")
    return case


def memory_guard(case: Case, level: str) -> None:
    """The run's guard for huge layouts on the cpu level (engine.memory_refusal), before anything
    is built: ValueError with its one line."""
    from parity.run.engine import memory_refusal
    why = memory_refusal(case, level)
    if why:
        raise ValueError(f"{case.id}: {why}")


def default_output(case_id: str, folder: Path = Path("reports") / "repro") -> Path:
    """Where `parity repro` writes the .npz without -o: `reports/repro/<case id>.npz`, the ID with
    every character outside [A-Za-z0-9._=,@+-] (the `/`s) replaced, so it never leaves the folder."""
    safe = re.sub(r"[^A-Za-z0-9._=,@+-]", "_", case_id).lstrip(".") or "case"
    return folder / f"{safe[:200]}.npz"


def npz_path(out: str | Path) -> Path:
    """The file np.savez writes for `out`: it appends .npz to a name not ending in it, so the path is
    made that way first and every message and the replay snippet name the file that exists."""
    out = Path(out)
    return out if out.name.endswith(".npz") else out.with_name(out.name + ".npz")


def run(case_id: str, level: str = "cpu", hip_src: Path | None = None, cuda_src: Path | None = None,
        out: Path | None = None, subject: Callable[[str | None], object] | None = None) -> Repro:
    """Raises ValueError/KeyError for a bad case ID; an unavailable level still writes the inputs.
    subject(profile): the subject the case runs on, for its op's ABI profile (None: Candle's), as the
    command's options give it (a port's build line, a declared profile loaded before the case is read);
    default: hip_src and cuda_src alone."""
    subject = subject or (lambda prof: _subject(hip_src, cuda_src, prof))
    case = parse_case(case_id)
    memory_guard(case, level)
    if chains.is_chain(case.op):
        return run_chain(case, level, subject(None), out)
    op = profiles.lookup_op(case.op)
    spec = op.spec
    b, launch, expected = spec.prepare(case)
    with_pointees(case, launch)
    if launch is None:
        raise ValueError(f"{case.id}: the host refuses this case before any launch ({b.refuse})")
    out_dt, layouts, out_geo = b.out_dtype, dict(b.layouts), b.out_geometry
    before = {n: np.array(buf, copy=True) for n, buf in launch.buffers.items()}
    prof = getattr(op, "profile", "") or None      # a described kernel's profile (parity.profiles.kernels)
    subj = subject(prof)
    verdict, message, got, _ = _judged_on(level, subj, spec, b, expected, launch)
    if isinstance(expected, dict):                 # a described kernel's outputs by name: the first judged
        expected = expected[b.out_name]
        got = got[b.out_name] if isinstance(got, dict) else got
    source = find_source(launch.kernel, level, subj)
    npz = None
    if out is not None and verdict in (Verdict.UNAVAILABLE, Verdict.COMPILED) and _holds_got(npz_path(out), case.id):
        return Repro(case.id, level, launch.kernel, verdict, message, npz_path(out), source,
                     snippet(npz_path(out), source, level, launch.kernel), kept=True)
    if out is not None:
        npz = npz_path(out)
        npz.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        for n, buf in before.items():
            arrays[f"buf_{n}"] = _raw(buf, launch.dtypes.get(n, ""))
        for n, lay in list(layouts.items()) + [("out", out_geo)]:
            arrays[f"shape_{n}"] = np.asarray(lay.shape, dtype=np.int64)
            arrays[f"strides_{n}"] = np.asarray(lay.strides, dtype=np.int64)
            arrays[f"offset_{n}"] = np.asarray(lay.offset, dtype=np.int64)
        for a in launch.args:
            if a.kind == "info" and a.value is not None:
                arrays[f"info_{a.name}"] = np.asarray(a.value, dtype=np.uint64)
        arrays["expected"] = _raw(expected, out_dt.name)
        if got is not None:
            arrays["got"] = _raw(np.asarray(got), out_dt.name)
        meta = {"case_id": case.id, "level": level, "kernel": launch.kernel, "launch": launch.describe(),
                "grid": list(launch.grid), "block": list(launch.block), "shared_mem": launch.shared_mem,
                "outputs": list(launch.outputs), "dtypes": launch.dtypes, "out_dtype": out_dt.name,
                "verdict": verdict, "message": message, "source": str(source) if source else None,
                "operands": list(layouts), "args": _args(launch)}
        arrays["meta"] = np.asarray(json.dumps(meta))
        arrays["kernel"] = np.asarray(launch.kernel)
        arrays["launch"] = np.asarray(launch.describe())
        arrays["args"] = np.asarray(json.dumps(meta["args"]))
        np.savez(npz, **arrays)
    return Repro(case.id, level, launch.kernel, verdict, message, npz, source,
                 snippet(npz or Path("case.npz"), source, level, launch.kernel))


def _holds_got(npz: Path, case_id: str) -> bool:
    """Whether an .npz there holds this case's kernel output (an earlier repro that ran it)."""
    try:
        with np.load(npz) as f:
            return "got" in f.files and json.loads(str(f["meta"])).get("case_id") == case_id
    except (OSError, ValueError, KeyError, EOFError, AttributeError):     # none there, or no repro's npz
        return False


def snippet(npz: Path, source: Path | None, level: str, kernel: str) -> str:
    """A standalone CuPy script that replays the launch stored in `npz`."""
    from parity.executors.hip_nvidia import CUDA_RTC_STUBS, HIP_MAPPING
    src = str(source) if source else f"<the suite file defining {kernel}>"
    opts = ["-std=c++17", "--expt-relaxed-constexpr", "-default-device"]
    if level != "cuda":                        # the same flags as the hip-on-nvidia level's NVRTC path
        opts += ["-D__HIPCC__", f"-I{HIP_MAPPING}"]
        from parity.run.levels import level_wave
        if level_wave(level) == 64:            # hip-on-nvidia runs 64-lane wavefronts (--wave 64)
            opts.append("-DPARITY_WAVE64=1")
    if source:
        opts.append(f"-I{Path(source).parent}")
    if CUDA_RTC_STUBS.is_dir():
        opts.append(f"-I{CUDA_RTC_STUBS}")
    opts = repr(tuple(opts))
    return f'''\
# replay {one_line(kernel)} from {one_line(npz)} with CuPy (needs a CUDA GPU and CuPy: cupy-cuda13x or cupy-cuda12x)
import json, numpy as np, cupy as cp
z = np.load({str(npz)!r})
meta = json.loads(str(z["meta"]))
mod = cp.RawModule(code=open({src!r}).read(), options={opts}, backend="nvrtc")
fn = mod.get_function(meta["kernel"])
dev = {{k[4:]: cp.asarray(z[k]) for k in z.files if k.startswith("buf_")}}   # base buffers, raw bits
keep, args = [], []
for a in meta["args"]:
    if a["kind"] == "ptr":
        if a["buffer"] is None:
            args.append(np.uint64(0))
        else:
            d = dev[a["buffer"]]
            args.append(np.uint64(d.data.ptr + a["offset"] * d.dtype.itemsize))
    elif a["kind"] == "info":
        if a["info"] is None:
            args.append(np.uint64(0))
        else:
            keep.append(cp.asarray(z[a["info"]]))
            args.append(np.uint64(keep[-1].data.ptr))
    else:
        args.append(np.dtype(a["np"]).type(a["value"]))
fn(tuple(meta["grid"]), tuple(meta["block"]), tuple(args), shared_mem=meta["shared_mem"])
cp.cuda.Device().synchronize()
got = cp.asnumpy(dev["out"])
exp = z["expected"].reshape(-1)
n = exp.size
bad = np.flatnonzero(got.reshape(-1)[:n].view(exp.dtype) != exp)   # bit patterns: NaN payloads count too
print(meta["launch"])
print(f"{{bad.size}}/{{n}} elements differ in bits from the reference", bad[:10])
'''


def run_chain(case: Case, level: str, subj, out: Path | None) -> Repro:
    """A chain case on one level. The .npz holds every tensor: the chain's inputs (`input_<t>`),
    what the level computed for each intermediate (`tensor_<t>`, raw bits), the float64 reference
    of each (`ref64_<t>`), and `meta` with the steps (kernel, launch, reads, writes) and the
    per-step report; the snippet is the command that reruns it (each step's launch is replayable
    as a single case from the stored buffers)."""
    spec = case.catalog_op.spec
    b, launch, expected = spec.prepare(case)
    verdict, message, _, res = _judged_on(level, subj, spec, b, expected, launch)
    steps = spec.row_fields(b, res)["chain"].get("steps", []) if res is not None else []
    npz = None
    if out is not None:
        npz = npz_path(out)
        npz.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        for n, buf in launch.buffers.items():
            arrays[f"input_{n}"] = _raw(buf, launch.dtypes.get(n, ""))
        for n, ref in b.ref.items():
            arrays[f"ref64_{n}"] = np.asarray(ref, dtype=np.float64)
            if res is not None and n in res.outputs:
                t = b.tensors[n]
                got = np.asarray(res.outputs[n]).reshape(-1)[:int(np.prod(t.shape, dtype=np.int64))]
                arrays[f"tensor_{n}"] = _raw(got.reshape(t.shape), t.dtype.name)
        meta = {"case_id": case.id, "level": level, "kernel": launch.kernel, "launch": launch.describe(),
                "verdict": verdict, "message": message, "dtypes": {n: t.dtype.name for n, t in b.tensors.items()},
                "steps": [{"label": st.label, "kernel": st.launch.kernel, "launch": st.launch.describe(),
                           "reads": st.reads, "writes": st.writes, "args": _args(st.launch)} for st in launch.steps],
                "report": steps}
        arrays["meta"] = np.asarray(json.dumps(meta))
        np.savez(npz, **arrays)
    cmd = f"parity repro {case.id} --level {level}" + (f" --output {npz}" if npz else "")
    return Repro(case.id, level, launch.kernel, verdict, message, npz, None,
                 f"# {case.id}: {len(launch.steps)} steps, one request; rerun with\n{cmd}\n")
