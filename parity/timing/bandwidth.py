"""Bytes a kernel must move (the GB/s column) and the device's practical peak: a 1 GiB
device-to-device copy, measured once per device and cached with provenance."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from parity.suite.compile_cache import cache_dir
from parity.timing.clocks import CupyClock
from parity.timing.environment import gpu_environment
from parity.timing.statistics import TimingOptions, sample


def distinct_elements(shape, strides) -> int:
    """Elements a view reaches at least once: broadcast (stride-0) dims count once."""
    n = 1
    for s, st in zip(shape, strides):
        if s == 0:
            return 0
        if st != 0:
            n *= int(s)
    return n


def bytes_moved(inputs: list[tuple[tuple, tuple, int]], out_numel: int, out_itemsize: int,
                inplace: bool = False) -> int:
    """Logical bytes a kernel must move: each distinct input element read once (a strided read
    counts its element's bytes, not the sectors it touches) plus each output element written
    once. inputs: (shape, strides, itemsize) per operand; in place, the output is read too."""
    total = out_numel * out_itemsize
    if inplace:
        total += out_numel * out_itemsize
    for shape, strides, item in inputs:
        total += distinct_elements(shape, strides) * item
    return int(total)


def bytes_moved_built(b) -> int:
    """bytes_moved for a built elementwise case (parity.run.cases.Built)."""
    op = b.op
    out_dt = op.out_dtype(b.case.dtype)
    if op.out_mode == "buffer":
        out_numel = b.out_layout.numel
    else:
        first = b.operands.layouts[op.inputs[0]] if op.inputs else b.out_layout
        out_numel = first.numel
    ins = [] if b.inplace else [(b.operands.layouts[n].shape, b.operands.layouts[n].strides,
                                 b.operands.dtypes[n].bits // 8) for n in b.operands.names]
    return bytes_moved(ins, out_numel, out_dt.bits // 8, inplace=b.inplace)


def gbps(nbytes: int | None, ms: float | None) -> float | None:
    if not nbytes or not ms or ms <= 0:
        return None
    return nbytes / (ms * 1e-3) / 1e9


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "device"


def peak_path(device_name: str) -> Path:
    return cache_dir() / "bandwidth" / f"{_slug(device_name)}.json"


def measure_copy_gbps(clock, nbytes: int, opts: TimingOptions | None = None) -> dict:
    """Device-to-device copy of `nbytes` (reads nbytes, writes nbytes): GB/s of read+write bytes."""
    opts = opts or TimingOptions(mode="cold", max_noise=0.01, min_samples=10, time_cap_s=3.0)
    import cupy
    src = cupy.empty(nbytes, dtype=cupy.uint8)
    dst = cupy.empty(nbytes, dtype=cupy.uint8)
    src.fill(1)
    dst.fill(0)
    try:
        enqueue = lambda: clock.copy(int(dst.data.ptr), int(src.data.ptr), nbytes)
        t = sample(lambda k: clock.measure(enqueue, k, clock.flush if opts.mode == "cold" else None), opts)
    finally:
        del src, dst
        cupy.get_default_memory_pool().free_all_blocks()
    return {"gbps": 2 * nbytes / (t.median_ms * 1e-3) / 1e9, "ms": t.median_ms, "p10_ms": t.p10_ms,
            "p90_ms": t.p90_ms, "samples": t.n, "bytes_copied": nbytes, "bytes_moved": 2 * nbytes}


def peak_bandwidth(clock=None, refresh: bool = False, nbytes: int = 1 << 30) -> dict:
    """The device's practical peak (GB/s): a 1 GiB device-to-device copy, measured once per device
    and cached under the parity cache dir with provenance (device, date, method, versions)."""
    clock = clock or CupyClock()
    path = peak_path(clock.name)
    if path.exists() and not refresh:
        try:
            doc = json.loads(path.read_text())
            if doc.get("gbps"):
                doc["cached"] = True
                return doc
        except (OSError, json.JSONDecodeError):
            pass
    m = measure_copy_gbps(clock, nbytes)
    env = gpu_environment()
    doc = {"device": clock.name, "gbps": m["gbps"], "method": f"cudaMemcpyAsync device-to-device of {nbytes} B, "
           f"(read + write bytes) / median of {m['samples']} event-timed samples, L2 flushed",
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "measurement": m,
           "driver": env.get("driver"), "cuda_runtime": env.get("cuda_runtime"), "uuid": env.get("uuid")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(path)
    except OSError:
        pass
    doc["cached"] = False
    return doc

