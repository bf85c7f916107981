"""parity.cupti (kernel activity records through ctypes) and the event-overhead calibration the CUDA
clock does with it; no GPU needed. tests/test_timing.py times real launches on a GPU."""
from __future__ import annotations

import ctypes
import struct

import pytest

from parity import cupti
from parity.cupti import KIND_CONCURRENT_KERNEL, KernelRecord, KernelRecorder, parse_record
from parity.timing import TimingOptions, kernel_sample_times, time_prepared


def _record(kind, start, end, device, stream, grid, block, corr, name: bytes | None):
    """A packed CUpti_ActivityKernel13 head, laid out as cupti_activity.h declares it."""
    keep = ctypes.create_string_buffer(name) if name is not None else None
    buf = ctypes.create_string_buffer(160)
    struct.pack_into("<I", buf, 0, kind)
    struct.pack_into("<QQQ", buf, 16, start, end, end + 5)          # start, end, completed
    struct.pack_into("<III", buf, 40, device, 7, stream)             # deviceId, contextId, streamId
    struct.pack_into("<6i", buf, 52, *grid, *block)
    struct.pack_into("<I", buf, 92, corr)
    struct.pack_into("<qQ", buf, 96, 1234, ctypes.addressof(keep) if keep is not None else 0)  # gridId, name
    return buf, keep


def test_parse_record_reads_the_kernel_head():
    buf, _keep = _record(KIND_CONCURRENT_KERNEL, 1_000, 4_500, 1, 13, (65536, 1, 1), (1024, 1, 1), 99, b"uneg_f32")
    r = parse_record(ctypes.addressof(buf))
    assert r == KernelRecord("uneg_f32", 1_000, 4_500, 1, 13, (65536, 1, 1), (1024, 1, 1), 99)
    assert r.ms == pytest.approx(0.0035)


def test_parse_record_skips_other_kinds_and_survives_a_null_name():
    memcpy, _ = _record(1, 0, 10, 0, 1, (1, 1, 1), (1, 1, 1), 1, b"x")
    assert parse_record(ctypes.addressof(memcpy)) is None
    anon, _ = _record(3, 0, 10, 0, 1, (1, 1, 1), (1, 1, 1), 1, None)
    assert parse_record(ctypes.addressof(anon)).name == ""


def _k(name, start, end, device=0):
    return KernelRecord(name, start, end, device, 1, (1, 1, 1), (1, 1, 1), 0)


def test_sample_times_split_runs_and_drop_the_clocks_kernels():
    recs = [_k("parity_hold", 0, 10)]
    for i in range(3):                              # flush, then a two-kernel enqueue, per sample
        base = 100 + 1000 * i
        recs += [_k("parity_l2_read", base, base + 50), _k("im2col", base + 60, base + 70),
                 _k("gemm", base + 72, base + 90 + i)]
    recs.append(_k("other_gpu", 5, 9, device=1))
    assert kernel_sample_times(recs, 3, 0) == pytest.approx([30e-6, 31e-6, 32e-6])
    assert kernel_sample_times(recs[:-2], 3, 0) is None       # a sample lost a kernel
    assert kernel_sample_times([_k("parity_l2_read", 0, 1)], 1, 0) is None   # a memcpy enqueue: no kernel


def test_loading_without_libcupti_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setattr(KernelRecorder, "_instance", None)
    monkeypatch.setattr(KernelRecorder, "_why_not", "")
    monkeypatch.setattr(cupti, "library_candidates", lambda: ["/nonexistent/libcupti.so.13", "libnot-cupti.so"])
    assert KernelRecorder.load() is None
    assert KernelRecorder.why_not().startswith("no usable libcupti")
    assert KernelRecorder.load() is None                      # decided once per process
    monkeypatch.setattr(KernelRecorder, "_why_not", "")
    monkeypatch.setenv("PARITY_NO_CUPTI", "1")
    assert KernelRecorder.load() is None and KernelRecorder.why_not() == "PARITY_NO_CUPTI is set"


class CalibratedClock:
    """A fake CUDA clock: every launch's events read `event_ms`; CUPTI says the empty kernel took `empty_ms`."""
    api, name = "fake", "fake-calibrated"
    recorder = object()

    def __init__(self, event_ms, empty_ms):
        self.event_ms, self.empty_ms = event_ms, empty_ms

    def measure(self, enqueue, k, before=None):
        for _ in range(k):
            if before:
                before()
            enqueue()
        return [self.event_ms] * k

    def kernel_times(self, enqueue, k):
        return [self.empty_ms] * k

    def period(self, enqueue, k):
        return 0.002

    def flush(self):
        pass

    def copy(self, dst, src, n):
        pass

    def synchronize(self):
        pass

    def empty_kernel(self):
        return (lambda: None), "fake empty kernel"


class Prep:
    inplace = False

    def refresh(self):
        pass

    def restore(self, clock):
        pass

    def enqueue(self):
        pass


def test_event_overhead_is_events_minus_cupti_on_an_empty_kernel(monkeypatch):
    from parity import timing
    monkeypatch.setattr(timing, "_OVERHEADS", {})
    ms, how = timing.event_overhead(CalibratedClock(0.00334, 0.00064))
    assert ms == pytest.approx(0.0027) and "events 3.34 us, CUPTI 0.64 us" in how
    monkeypatch.setattr(timing, "_OVERHEADS", {})
    no_cupti = CalibratedClock(0.00334, 0.00064)
    no_cupti.recorder = None
    assert timing.event_overhead(no_cupti) == (0.0, "not calibrated (no CUPTI): raw event times")


def test_time_prepared_subtracts_the_overhead_and_keeps_the_raw_median(monkeypatch):
    from parity import timing
    monkeypatch.setattr(timing, "_OVERHEADS", {})
    monkeypatch.setattr(timing, "_FLOORS", {})
    clock = CalibratedClock(0.0100, 0.0007)
    clock.name = "fake-a"
    t = time_prepared(Prep(), clock, TimingOptions(min_samples=10))
    overhead = 0.0100 - 0.0007                              # the fake reads 10 us for the empty kernel too
    assert t.source == "events-overhead" and t.event_ms == pytest.approx(0.0100)
    assert t.overhead_ms == pytest.approx(overhead) and t.median_ms == pytest.approx(0.0100 - overhead)
    assert t.fields()["event_ms"] == pytest.approx(0.0100) and t.fields()["time_source"] == "events-overhead"
    assert t.launch_bound is False                          # judged on the raw 10 us vs the 2 us launch period
    plain = CalibratedClock(0.5, 0.0007)
    plain.name, plain.recorder = "fake-b", None
    t = time_prepared(Prep(), plain, TimingOptions(min_samples=10))
    assert t.source == "events" and t.median_ms == pytest.approx(0.5) and t.overhead_ms is None


def test_timing_report_shows_the_raw_event_median_beside_the_corrected_one():
    from parity.reports import timing as timing_report
    from parity.results import Results
    row = {"case_id": "unary.neg/f32/contiguous/normal/s0", "level": "hip-on-nvidia", "verdict": "pass",
           "kernel_ms": 0.0064, "time_p10": 0.006, "time_p90": 0.007, "samples": 50, "time_noise": 0.01,
           "event_ms": 0.0091, "event_overhead_ms": 0.0027, "time_source": "events-overhead"}
    md = timing_report.markdown(Results.from_rows([row, {**row, "level": "cupy", "time_source": "events"}]))
    assert "device events minus the CUPTI-calibrated event overhead" in md
    lines = [l for l in md.splitlines() if "unary.neg" in l]
    assert "| 6.4 |" in lines[0] and "| 9.1 |" in lines[0]        # corrected median, raw events beside
    assert "| 9.1 |" not in lines[1]                               # raw event rows have nothing to put beside
