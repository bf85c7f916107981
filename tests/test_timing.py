"""Timing, bytes moved, sharding, merging and the bench layouts (no GPU; GPU tests marked `gpu`)."""
from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest

from parity.run import shard
from parity.executors.cpu import CpuExecutor
from parity.executors.worker import IsolatedExecutor
from parity.run.cases import Case, Filters, load_sweep
from parity.ops.elementwise import build
from parity.run.engine import add_ratios, prepare_case, run_case, run_cases
from parity.core.layouts import LAYOUT_CLASSES, contiguous, transposed
from parity.run.results import Results
from parity.timing import (Timing, TimingOptions, bytes_moved, bytes_moved_built, distinct_elements,
                           is_launch_bound, noise, sample, time_prepared)

N = 8192 * 8192


# ------------------------------------------------------------------------------ bytes moved
def test_bytes_moved_unary_contiguous_and_transposed_count_the_same():
    c, t = contiguous((8192, 8192)), transposed((8192, 8192))
    assert bytes_moved([(c.shape, c.strides, 4)], N, 4) == 2 * 4 * N
    assert bytes_moved([(t.shape, t.strides, 4)], N, 4) == 2 * 4 * N        # strided: element bytes


def test_bytes_moved_binary_broadcast_inplace_and_cast():
    assert distinct_elements((16, 40), (0, 1)) == 40
    assert bytes_moved([((16, 40), (40, 1), 4), ((16, 40), (0, 1), 4)], 640, 4) == 640 * 4 + 40 * 4 + 640 * 4
    assert bytes_moved([], 100, 2, inplace=True) == 400                     # read and write `out`
    assert bytes_moved([((10,), (1,), 4)], 10, 2) == 40 + 20                 # f32 -> f16
    assert distinct_elements((3, 0, 2), (0, 2, 1)) == 0


def test_bytes_moved_built_cases():
    b = build(Case("binary.add", "f32", "broadcast-leading", "normal"))
    lhs, rhs = b.operands.layouts["lhs"], b.operands.layouts["rhs"]
    want = 16 * 40 * 4 + distinct_elements(lhs.shape, lhs.strides) * 4 + distinct_elements(rhs.shape, rhs.strides) * 4
    assert bytes_moved_built(b) == want
    b = build(Case("unary.exp", "f16", "inplace", "normal"))
    assert bytes_moved_built(b) == 2 * 2 * 45 * 33
    b = build(Case("where", "u8-f32", "contiguous", "normal"))
    assert bytes_moved_built(b) == 37 * 65 * (1 + 4 + 4 + 4)


# ---------------------------------------------------------------------------------- sampler
class FakeMeasure:
    """Synthetic device: warm-up samples are slow, then values from a generator."""

    def __init__(self, values, warm=100.0):
        self.values, self.warm, self.calls, self.first = values, warm, [], True

    def __call__(self, k):
        self.calls.append(k)
        if self.first:
            self.first = False
            return [self.warm] * k
        return [next(self.values) for _ in range(k)]


class FakeClock:
    def __init__(self, step=0.01):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_noise_is_robust_relative_spread():
    assert noise([1.0]) == math.inf
    assert noise([2.0, 2.0, 2.0]) == 0.0
    v = [1.0, 1.01, 0.99, 1.0, 5.0]            # one outlier barely moves it
    assert noise(v) == pytest.approx(0.01 / 1.349, rel=1e-6)
    assert noise([1.0, 2.0, 1.0, 2.0, 1.0]) > 0.5            # bimodal: not quiet


def test_sampler_stops_at_min_samples_when_quiet_and_discards_warmup():
    m = FakeMeasure(itertools.cycle([1.0, 1.001, 0.999]))
    t = sample(m, TimingOptions(min_samples=10, warmup=3), clock=FakeClock())
    assert t.converged and t.n == 10 and m.calls == [3, 10]
    assert t.median_ms == pytest.approx(1.0) and t.p10_ms <= t.median_ms <= t.p90_ms
    assert t.noise <= 0.02


def test_sampler_keeps_sampling_until_quiet():
    # 12 noisy samples, then a quiet stream: the median settles and the spread falls below 2%
    vals = iter([1.0, 2.0] * 6 + [1.5] * 10000)
    t = sample(FakeMeasure(vals), TimingOptions(min_samples=10, warmup=1, batch_ms=3.0), clock=FakeClock(0.0))
    assert t.converged and t.n > 12 and t.median_ms == pytest.approx(1.5)


def test_sampler_time_cap_and_max_samples():
    noisy = itertools.cycle([1.0, 2.0, 3.0])
    t = sample(FakeMeasure(noisy), TimingOptions(min_samples=10, time_cap_s=0.05, batch_ms=5.0), clock=FakeClock(0.01))
    assert not t.converged and "cap" in t.note and t.n >= 10
    t = sample(FakeMeasure(itertools.cycle([1.0, 2.0])), TimingOptions(min_samples=5, max_samples=40, time_cap_s=1e9),
               clock=FakeClock(0.0))
    assert t.n == 40 and not t.converged


def test_timing_options_validate():
    with pytest.raises(ValueError):
        TimingOptions(mode="warm")
    with pytest.raises(ValueError):
        TimingOptions(max_noise=2)


# ----------------------------------------------------------------------------- launch bound
def test_launch_bound_flag():
    assert is_launch_bound(0.002, 0.004) is True
    assert is_launch_bound(0.2, 0.004) is False
    assert is_launch_bound(0.2, None) is None


class DeviceClock:
    """A fake device for time_prepared: kernel takes `kernel_ms`, the empty launch `floor_ms`."""
    api, name = "fake", "fake"

    def __init__(self, kernel_ms, floor_ms):
        self.kernel_ms, self.floor_ms, self.flushes, self.copies = kernel_ms, floor_ms, 0, 0

    def measure(self, enqueue, k, before=None):
        out = []
        for _ in range(k):
            if before:
                before()
            ms = enqueue()
            out.append(ms if ms is not None else self.kernel_ms)
        return out

    def period(self, enqueue, k):
        return self.floor_ms

    def flush(self):
        self.flushes += 1

    def copy(self, dst, src, n):
        self.copies += 1

    def synchronize(self):
        pass

    def empty_kernel(self):
        return (lambda: self.floor_ms), "fake"


class FakePrep:
    def __init__(self, kernel_ms, out=b"\x01\x02"):
        self.kernel_ms, self.out, self.inplace, self.refreshed, self.launches = kernel_ms, out, False, 0, 0

    def refresh(self):
        self.refreshed += 1

    def restore(self, clock):
        clock.copy(0, 0, 0)

    def enqueue(self):
        self.launches += 1
        return self.kernel_ms

    def outputs(self):
        return {"out": np.frombuffer(self.out, np.uint8)}


def test_time_prepared_cold_flags_launch_bound_and_verifies(monkeypatch):
    from parity.timing import clocks
    monkeypatch.setattr(clocks, "_FLOORS", {})
    clock, prep = DeviceClock(0.001, 0.003), FakePrep(0.001)
    t = time_prepared(prep, clock, TimingOptions(mode="cold", min_samples=10),
                      {"out": np.frombuffer(b"\x01\x02", np.uint8)})
    assert prep.refreshed == 1                                   # inputs re-uploaded before timing
    assert clock.flushes >= t.n and clock.copies >= t.n          # flushed + restored before every sample
    assert t.launch_bound is True and t.launch_floor_ms == pytest.approx(0.003)
    assert t.verified is True
    monkeypatch.setattr(clocks, "_FLOORS", {})
    t = time_prepared(FakePrep(0.5, out=b"\x00\x00"), DeviceClock(0.5, 0.003), TimingOptions(mode="hot"),
                      {"out": np.frombuffer(b"\x01\x02", np.uint8)})
    assert t.launch_bound is False and t.verified is False and "differs" in t.note


# ---------------------------------------------------------------------------- shard / merge
def test_shard_split_is_deterministic_and_complete():
    cases = load_sweep("smoke", Filters(ops=["unary.neg", "binary.*", "cast"]))
    parts = [shard.apply_shard(cases, (k, 3)) for k in (1, 2, 3)]
    ids = [c.id for p in parts for c in p]
    assert sorted(ids) == sorted(c.id for c in cases) and len(set(ids)) == len(ids)
    assert all(p for p in parts)
    assert [c.id for c in shard.apply_shard(cases, (2, 3))] == [c.id for c in parts[1]]
    assert shard.shard_index("unary.neg/f32/contiguous/normal/s0", 4) == \
        __import__("zlib").crc32(b"unary.neg/f32/contiguous/normal/s0") % 4
    assert [c.id for c in load_sweep("smoke", Filters(ops=["unary.neg", "binary.*", "cast"]), shard=(1, 3))] == \
        [c.id for c in parts[0]]
    for bad in ("0/2", "3/2", "x", "1/0"):
        with pytest.raises(ValueError):
            shard.parse_shard(bad)


def _keyed(res: Results) -> dict:
    out = {}
    for r in res.table.to_dict(orient="records"):
        r = {k: v for k, v in r.items() if k not in ("wall_ms",)}
        out[(r["case_id"], r["level"])] = json.dumps(r, sort_keys=True, default=str)
    return out


def test_merge_of_shards_equals_unsharded_run_on_cpu(tmp_path):
    from parity.cli.bench import merge_results
    f = Filters(ops=["unary.neg", "binary.minimum", "where", "cast"], dtypes=["f32", "f16", "u8"])
    cases = load_sweep("smoke", f)
    ex = CpuExecutor()
    Results.from_rows(run_cases(cases, ex), {"sweep": "smoke"}).to_json(tmp_path / "all.json")
    paths = []
    for k in (1, 2, 3):
        part = load_sweep("smoke", f, shard=(k, 3))
        p = tmp_path / f"s{k}.json"
        Results.from_rows(run_cases(part, ex), {"sweep": "smoke", "shard": f"{k}/3"}).to_json(p)
        paths.append(p)
    merged = merge_results(paths)
    merged.to_json(tmp_path / "merged.json")
    a, b = _keyed(Results.from_json(tmp_path / "all.json")), _keyed(Results.from_json(tmp_path / "merged.json"))
    assert a == b and len(a) == len(cases)
    assert merged.meta["shards"] == ["1/3", "2/3", "3/3"]


def test_parallel_pool_gives_the_rows_of_a_sequential_run():
    from parity.executors.pool import GpuPool
    cases = load_sweep("smoke", Filters(ops=["unary.neg", "binary.add"], dtypes=["f32"]))
    seq = run_cases(cases, CpuExecutor())
    seen = []
    members = [IsolatedExecutor(CpuExecutor, env={"CUDA_VISIBLE_DEVICES": str(g)}) for g in range(3)]  # as --gpus
    par = run_cases(cases, GpuPool("cpu", members), on_row=seen.append)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_ms"} for r in rows]
    assert strip(par) == strip(seq) and len(seen) == len(cases)


class DiesOnExp(CpuExecutor):
    """A tool bug that kills the process driving one GPU at its first exp case."""
    def run(self, launch):
        if launch.kernel.startswith("uexp"):
            os._exit(3)
        return super().run(launch)


def test_a_dying_drive_process_loses_no_case():
    from parity.executors.pool import GpuPool
    cases = load_sweep("smoke", Filters(ops=["unary.neg", "unary.exp"], dtypes=["f32"]))
    seen = []
    rows = run_cases(cases, GpuPool("cpu", [CpuExecutor(), DiesOnExp()]), on_row=seen.append)
    assert [r["case_id"] for r in rows] == [c.id for c in cases] and len(seen) == len(cases)
    assert all(r["verdict"] == "pass" for r in rows[0::2])
    first_exp = next(i for i, c in enumerate(cases[1::2]) if c.op == "unary.exp")
    died = "parity internal error: RuntimeError: the drive process of GPU worker 2/2: it died (exit code 3)"
    mine = rows[1::2]                   # rows it finished but had not sent yet (batched) are errors too
    assert all(r["verdict"] == "pass" or r["message"] == died for r in mine[:first_exp])
    assert all(r["verdict"] == "error" and r["message"] == died for r in mine[first_exp:])


# ------------------------------------------------------------------------------ bench layouts
def test_bench_layouts_are_opt_in_and_refused_on_cpu():
    assert LAYOUT_CLASSES["bench-contiguous"].opt_in and LAYOUT_CLASSES["bench-transposed"].bench
    assert LAYOUT_CLASSES["bench-contiguous"].shape == (8192, 8192)
    assert not any(c.layout.startswith("bench-") for c in load_sweep("pr", Filters(ops=["unary.exp", "binary.add"])))
    bench = load_sweep("bench")
    assert bench and all(c.layout in ("bench-contiguous", "bench-transposed") for c in bench)
    row = run_case(bench[0], CpuExecutor())
    assert row["verdict"] == "unavailable" and "GPU levels only" in row["message"]


def test_ratios_against_cuda_else_cupy():
    rows = [{"case_id": "a", "level": "hip-on-nvidia", "kernel_ms": 2.0, "samples": 10},
            {"case_id": "a", "level": "cupy", "kernel_ms": 1.0, "samples": 10},
            {"case_id": "b", "level": "hip-on-nvidia", "kernel_ms": 3.0, "samples": 10},
            {"case_id": "b", "level": "cuda", "kernel_ms": 2.0, "samples": 10},
            {"case_id": "b", "level": "cupy", "kernel_ms": 1.0, "samples": 10}]
    add_ratios(rows)
    assert rows[0]["ratio"] == 2.0 and rows[0]["ratio_vs"] == "cupy"
    assert rows[2]["ratio"] == 1.5 and rows[2]["ratio_vs"] == "cuda"


def test_cli_bench_refuses_cpu_and_run_accepts_time_and_shard(tmp_path):
    from click.testing import CliRunner
    import parity.cli.bench  # noqa: F401  (registers bench/merge and the run options)
    from parity.cli.main import main
    r = CliRunner().invoke(main, ["bench", "--levels", "cpu"])
    assert r.exit_code == 2 and "GPU levels only" in r.output
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--ops", "unary.neg", "--dtypes", "f32", "--time",
                                  "--shard", "1/2", "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    res = Results.from_json(next(tmp_path.glob("*/results.json")))
    assert res.meta["shard"] == "1/2" and res.meta["timing"]["mode"] == "cold"
    r = CliRunner().invoke(main, ["run", "--levels", "cpu", "--shard", "3/2", "--out", str(tmp_path)])
    assert r.exit_code == 2


# -------------------------------------------------------------------------- CuPy reference
def test_cupy_reference_sources_cover_the_elementwise_catalog():
    from parity.executors.cupy_ref import kernel_source, supported
    from parity.ops import CATALOG
    n = 0
    for op in CATALOG.values():
        for key in op.dtypes:
            if supported(op, key):
                continue
            ins, outs, body, _ = kernel_source(op, key)
            assert body.endswith(";") and "y" in outs
            n += 1
    assert n > 200
    assert "not in the CuPy reference" in supported(CATALOG["fill.const_set"], "f32")
    assert supported(CATALOG["unary.exp"], "bf16") == supported(CATALOG["unary.exp"], "f16") == ""


# ------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_timer_times_a_real_kernel():
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    from parity.run.engine import prepare_case
    from parity.timing import time_launch
    p = prepare_case(Case("unary.neg", "f32", "len1025", "normal"))
    ex = HipOnNvidiaExecutor()
    res = ex.run(p.launch)
    assert res.status == "ok", res.message
    t = time_launch(ex, p.launch, TimingOptions(mode="cold", time_cap_s=1.0), res.outputs)
    assert isinstance(t, Timing) and t.n >= 10 and 0 < t.p10_ms <= t.median_ms <= t.p90_ms
    assert t.verified is True and t.launch_bound in (True, False) and t.peak_gbps > 0
    # the empty event pair's time is subtracted: positive and less than what it is subtracted from
    # (how small it is depends on the GPU and driver: a speed, not a property)
    assert t.source == "events-overhead" and 0 < t.overhead_ms < t.event_ms, t.overhead_ms
    assert t.median_ms == pytest.approx(t.event_ms - t.overhead_ms) and t.median_ms > 0


@pytest.mark.gpu
def test_gpu_cupy_reference_level_passes_and_times():
    from parity.executors.cupy_ref import CupyRefExecutor
    ex = CupyRefExecutor()
    for cid in ("unary.exp/f32/transposed/normal/s0", "binary.minimum/f16/broadcast-leading/special/s0",
                "cast/f32-u8/narrowed/out-of-range/s0", "where/u8-f32/transposed/normal/s0"):
        row = run_case(Case.parse(cid), ex, timing=TimingOptions(time_cap_s=0.5))
        assert row["verdict"] == "pass", (cid, row["message"])
        assert row["samples"] >= 10, row.get("timing_note")


# ------------------------------------------------------------------- the amd level, fake hip
def test_time_on_amd_goes_through_hipclock_on_hip_images(monkeypatch):
    """`--time` on the amd level: the executor's own prepared launch (hipMalloc'd guarded images)
    and HipClock's events and memset flush, not the CuPy path (a fake hip-python, no AMD GPU)."""
    from fakes_hip import FakeKernel, install, unary_f32
    from parity.executors.amd import AmdExecutor, HipPrepared
    from parity.timing import HipClock, Timeable, clocks
    monkeypatch.setattr(clocks, "_CLOCKS", {})
    monkeypatch.setattr(clocks, "_FLOORS", {})
    dev = install(monkeypatch)
    ex = AmdExecutor()
    ex._avail = (True, "", "gfx942")                     # detected: skip hiprtc, the kernel is "loaded"
    kernel = ex._functions["uneg_f32"] = FakeKernel(unary_f32(np.negative), ms=0.040)
    assert isinstance(ex, Timeable) and isinstance(ex.clock(2.0), HipClock)
    row = run_case(Case("unary.neg", "f32", "len1025", "normal"), ex,
                   timing=TimingOptions(mode="cold", min_samples=10, time_cap_s=1.0))
    assert row["verdict"] == "pass", row["message"]
    assert row["kernel_ms"] == pytest.approx(0.040) and row["samples"] >= 10 and row["time_noise"] < 1e-9
    assert row["time_source"] == "events" and row["event_overhead_ms"] is None    # hip: raw event times
    assert row["timing_verified"] is True                 # output after timing == the checked output
    assert row["launch_floor_ms"] == pytest.approx(0.001)   # HipClock's empty launch: a 4-byte memset
    assert row["launch_bound"] is False and row["peak_gbps"] is None
    assert kernel.launches >= 1 + 3 + 10                  # run, warm-up, samples
    assert dev.memsets >= row["samples"] and dev.d2d_copies >= row["samples"]   # flushed + restored per sample
    assert len(dev.allocs) == 2                           # left: the clock's flush and empty-launch buffers;
                                                          # the run's and the prepared launch's images are freed
    assert isinstance(ex.prepared(prepare_case(Case("unary.neg", "f32", "len1025", "normal")).launch), HipPrepared)


def test_peak_bandwidth_is_cached_per_device_under_the_parity_cache(tmp_path, monkeypatch):
    from parity.timing import peak_path
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path))
    assert peak_path("NVIDIA H100 80GB HBM3") == tmp_path / "bandwidth" / "NVIDIA_H100_80GB_HBM3.json"
