"""Timing options and results, and the sampler's statistics: robust spread, stop rule,
launch-bound test. Pure: testable on synthetic timings without a GPU."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

MODES = ("cold", "hot")

# ------------------------------------------------------------------------------ options/result
@dataclass
class TimingOptions:
    mode: str = "cold"              # cold: L2 flushed + outputs restored before each sample; hot: back to back
    max_noise: float = 0.02         # stop when IQR/(1.349*median) is below this
    min_samples: int = 10
    max_samples: int = 5000
    warmup: int = 3                 # launches before sampling (module load, clocks, TLBs)
    time_cap_s: float = 2.0         # stop sampling after this long even if still noisy
    batch_ms: float = 25.0          # device time enqueued per synchronisation
    flush_factor: float = 2.0       # flush buffer = this x the device's L2
    verify: bool = True             # compare the output after timing with the correctness run's

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown timing mode {self.mode!r}; known: {', '.join(MODES)}")
        if not (0 < self.max_noise < 1):
            raise ValueError("max_noise must be a fraction between 0 and 1 (0.02 = 2%)")


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    n: int
    noise: float                    # IQR/(1.349*median) of the samples
    converged: bool                 # noise <= max_noise before the cap
    mode: str = "cold"
    launch_floor_ms: float | None = None
    launch_bound: bool | None = None
    verified: bool | None = None    # output after timing == correctness run's output (None: not checked)
    note: str = ""
    peak_gbps: float | None = None  # the device's measured copy bandwidth (parity.timing.peak_bandwidth)
    source: str = "events"          # events: raw event times; events-overhead: an empty event pair's time subtracted
    event_ms: float | None = None   # the raw event median (before the overhead was subtracted)
    overhead_ms: float | None = None  # the event overhead subtracted (parity.timing.event_overhead)

    def fields(self) -> dict:
        """The result-row columns of this timing."""
        return {"kernel_ms": self.median_ms, "time_p10": self.p10_ms, "time_p90": self.p90_ms,
                "samples": self.n, "time_noise": self.noise, "time_converged": self.converged,
                "timing_mode": self.mode, "launch_bound": self.launch_bound,
                "launch_floor_ms": self.launch_floor_ms, "timing_verified": self.verified,
                "timing_note": self.note, "time_source": self.source, "event_ms": self.event_ms,
                "event_overhead_ms": self.overhead_ms}


# ----------------------------------------------------------------------------------- statistics
def quantile(xs, q: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q * 100.0))


def noise(xs) -> float:
    """Robust relative spread: interquartile range / (1.349 * median) (the relative standard
    deviation for normal samples; a few outliers do not move it, a bimodal spread does).
    inf for fewer than 2 samples."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size < 2:
        return math.inf
    med = float(np.median(a))
    if med <= 0:
        return math.inf
    q1, q3 = np.percentile(a, [25.0, 75.0])
    return float(q3 - q1) / (1.349 * med)


def summarize(xs, mode: str = "cold", max_noise: float = 0.02, capped: bool = False) -> Timing:
    a = np.asarray(xs, dtype=np.float64)
    nz = noise(a)
    return Timing(float(np.median(a)), quantile(a, 0.1), quantile(a, 0.9), int(a.size), nz,
                  nz <= max_noise and not capped, mode)


def sample(measure: Callable[[int], list[float]], opts: TimingOptions,
           clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Warm up, then measure in batches until the spread is below opts.max_noise (with at least
    opts.min_samples), opts.max_samples are taken, or opts.time_cap_s has passed.

    measure(k) runs k samples and returns their times in ms; clock() is seconds (injectable)."""
    est = None
    if opts.warmup > 0:
        warm = [t for t in measure(opts.warmup) if t > 0]
        est = float(np.median(warm)) if warm else None
    samples: list[float] = []
    t0 = clock()
    converged = False
    while True:
        if not samples:
            k = opts.min_samples
        else:
            est = float(np.median(samples))
            k = int(opts.batch_ms / max(est, 1e-4))
        k = max(1, min(k, 256, opts.max_samples - len(samples)))
        samples += list(measure(k))
        if len(samples) >= opts.min_samples and noise(samples) <= opts.max_noise:
            converged = True
            break
        if len(samples) >= opts.max_samples or clock() - t0 >= opts.time_cap_s:
            break
    t = summarize(samples, opts.mode, opts.max_noise)
    t.converged = converged
    if not converged:
        t.note = f"spread {t.noise:.1%} above {opts.max_noise:.1%} after {t.n} samples (cap)"
    return t


def is_launch_bound(median_ms: float, floor_ms: float | None) -> bool | None:
    """A kernel whose median is below the cost of launching an empty kernel is launch-bound."""
    if floor_ms is None or not math.isfinite(floor_ms):
        return None
    return bool(median_ms < floor_ms)

