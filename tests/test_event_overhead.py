"""The event overhead the CUDA clock subtracts (an empty event pair's median) and how timings and
the timing report carry it; no GPU needed. tests/test_timing.py times real launches on a GPU."""
from __future__ import annotations

import pytest

from parity import timing
from parity.timing import clocks
from parity.timing import TimingOptions, time_prepared


class PairClock:
    """A fake clock: an event pair reads `pair_ms` plus what is enqueued between its events
    (an enqueue returns its kernel's device time; the empty pair encloses nothing)."""
    name = "fake-pair"

    def __init__(self, pair_ms: float, api: str = "cuda"):
        self.pair_ms, self.api = pair_ms, api
        self.enclosed: list = []

    def measure(self, enqueue, k, before=None):
        out = []
        for _ in range(k):
            if before:
                before()
            self.enclosed.append(enqueue)
            out.append(self.pair_ms + (enqueue() or 0.0))
        return out

    def period(self, enqueue, k):
        return 0.002

    def flush(self):
        pass

    def copy(self, dst, src, n):
        pass

    def synchronize(self):
        pass

    def empty_kernel(self):
        return (lambda: 0.0007), "fake empty kernel"


class Prep:
    """A prepared launch whose kernel takes 8.8 us on the fake device."""
    inplace = False

    def refresh(self):
        pass

    def restore(self, clock):
        pass

    def enqueue(self):
        return 0.0088


@pytest.fixture(autouse=True)
def fresh_calibrations(monkeypatch):
    monkeypatch.setattr(clocks, "_OVERHEADS", {})
    monkeypatch.setattr(clocks, "_FLOORS", {})


def test_event_overhead_is_an_empty_event_pair_on_cuda_and_none_on_amd():
    clock = PairClock(0.00125)
    ms, how = timing.event_overhead(clock)
    assert ms == pytest.approx(0.00125) and how == "empty event pair: 1.25 us (median of 200)"
    assert all(e is clocks._nothing for e in clock.enclosed)          # nothing between the events
    n = len(clock.enclosed)
    assert timing.event_overhead(clock) == (ms, how) and len(clock.enclosed) == n   # once per device
    assert timing.event_overhead(PairClock(0.00125, api="hip")) == (0.0, "not calibrated on hip: raw event times")


def test_time_prepared_subtracts_the_overhead_and_keeps_the_raw_median():
    t = time_prepared(Prep(), PairClock(0.00125), TimingOptions(min_samples=10))
    assert t.source == "events-overhead" and t.event_ms == pytest.approx(0.01005)
    assert t.overhead_ms == pytest.approx(0.00125) and t.median_ms == pytest.approx(0.0088)   # the kernel's own time
    assert t.p10_ms == pytest.approx(0.0088) and t.p90_ms == pytest.approx(0.0088)
    assert t.fields()["event_ms"] == pytest.approx(0.01005) and t.fields()["time_source"] == "events-overhead"
    assert t.launch_bound is False                    # judged on raw event times: 10.05 us vs the 2 us launch period
    amd = PairClock(0.00125, api="hip")
    amd.name = "fake-amd"
    t = time_prepared(Prep(), amd, TimingOptions(min_samples=10))
    assert t.source == "events" and t.median_ms == pytest.approx(0.01005) and t.overhead_ms is None


def test_timing_report_shows_the_raw_event_median_beside_the_corrected_one():
    from parity.render import timing as timing_report
    from parity.run.results import Results
    row = {"case_id": "unary.neg/f32/contiguous/normal/s0", "level": "hip-on-nvidia", "verdict": "pass",
           "kernel_ms": 0.0064, "time_p10": 0.006, "time_p90": 0.007, "samples": 50, "time_noise": 0.01,
           "event_ms": 0.0077, "event_overhead_ms": 0.0013, "time_source": "events-overhead"}
    md = timing_report.markdown(Results.from_rows([row, {**row, "level": "cupy", "time_source": "events"}]))
    assert "device events minus an empty event pair's median" in md
    lines = [l for l in md.splitlines() if "unary.neg" in l]
    assert "| 6.4 |" in lines[0] and "| 7.7 |" in lines[0]        # corrected median, raw events beside
    assert "| 7.7 |" not in lines[1]                               # raw event rows have nothing to put beside
