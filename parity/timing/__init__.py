"""Kernel timing you can trust: device events, warm-up, L2 flushed between samples (cold) or
back-to-back launches (hot), samples until the spread is small, median with p10/p90.

    opts = TimingOptions(mode="cold", max_noise=0.02)
    t = time_launch(executor, launch, opts, reference_outputs=result.outputs)   # executor: a Timeable
    t.median_ms, t.p10_ms, t.p90_ms, t.n, t.launch_bound, t.verified

Rules (docs/DESIGN.md "Timing", docs/prior-art.md "Timing"):
* device timestamps only: CUDA events through CuPy (hipEvents through hip-python on AMD). Events
  time the stream from one event record to the next, so every sample includes the front end's
  processing of the end event's record (H100: 1.25 us, +22% on a 5.7 us kernel). On NVIDIA that
  cost is measured once per device and process (`event_overhead`: the median of an event pair
  with nothing enqueued between) and subtracted; what is left agrees with Nsight Compute's
  `gpu__time_duration` from 5 us to 5 ms (bench/gpu_validate.py, part b). The raw event median
  stays in the row (`event_ms`). Not CUPTI's kernel records: they start at the first block, after
  the launch that ncu counts (an empty kernel: 0.86 us vs ncu's 2.24 us), and on Hopper their
  instrumentation slows wide grids (+9% on a 65,536-block copy);
* cold mode: before every sample, outside the timed window, the output buffers are restored
  from a pristine device copy (an in-place op starts from its input again, and no output is
  left over for a kernel to "reuse"), then a buffer of 2x the device's L2 is read, so the
  kernel reads its inputs from DRAM and finds no dirty lines to write back (as after Nsight
  Compute's cache flush); hot mode: back-to-back launches, no flush;
* CUDA: each batch of samples is enqueued behind a hold kernel released by the host, so the GPU
  runs flush, event, kernel, event without waiting for the host in between;
* inputs are re-uploaded from the host before timing, and the output after timing is compared
  byte for byte with the output the correctness run produced (`verified`);
* samples are taken in batches (one synchronisation per batch) until the robust relative spread
  IQR/(1.349*median) is below `max_noise` (and at least `min_samples`), or the time cap;
* `launch_bound`: the median is below the measured cost of launching an empty kernel through
  the same dispatch path (max of its device time and the back-to-back launch period).

The sampler (`sample`) takes the measuring function and the clock as arguments, so its stop
logic is tested on synthetic timings without a GPU.

Modules: `statistics` (options, results, sampler), `clocks` (CUDA/HIP event clocks, event overhead,
launch floor), `measure` (time a prepared launch; the `Timeable` executor protocol), `bandwidth`
(bytes moved, copy-bandwidth peak), `environment` (device and toolkit facts). Device images live
with the executors that own them (parity/executors/device_images.py).
"""
from parity.timing.bandwidth import (bytes_moved, bytes_moved_built, distinct_elements, gbps, measure_copy_gbps,
                                     peak_bandwidth, peak_path)
from parity.timing.clocks import (Clock, CupyClock, HipClock, cupy_clock, event_overhead, hip_clock, launch_floor,
                                  subtract_event_overhead)
from parity.timing.environment import gpu_environment
from parity.timing.measure import PreparedLaunch, Timeable, time_launch, time_prepared
from parity.timing.statistics import MODES, Timing, TimingOptions, is_launch_bound, noise, quantile, sample, summarize

__all__ = ["MODES", "Clock", "CupyClock", "HipClock", "PreparedLaunch", "Timeable", "Timing", "TimingOptions",
           "bytes_moved", "bytes_moved_built", "cupy_clock", "distinct_elements", "event_overhead", "gbps",
           "gpu_environment", "hip_clock", "is_launch_bound", "launch_floor", "measure_copy_gbps", "noise",
           "peak_bandwidth", "peak_path", "quantile", "sample", "subtract_event_overhead", "summarize",
           "time_launch", "time_prepared"]
