"""Dense peak throughput per dtype (TFLOP/s) for GEMM efficiency: a table keyed by device name,
with the datasheet it comes from, and a measured fallback for devices not in the table."""
from __future__ import annotations

H100_SXM = "NVIDIA H100 Tensor Core GPU datasheet (SXM5): FP16/BF16 Tensor 1979 TFLOPS with sparsity = 989.4 dense; " \
           "FP32 66.9 TFLOPS; FP64 Tensor Core 66.9 TFLOPS"
H200 = "NVIDIA H200 Tensor Core GPU datasheet (SXM): same GH100 compute as H100 SXM: FP16/BF16 989.4 dense, " \
       "FP32 66.9, FP64 Tensor Core 66.9 TFLOPS"
H100_PCIE = "NVIDIA H100 Tensor Core GPU datasheet (PCIe): FP16/BF16 1513 with sparsity = 756.5 dense; FP32 51.2; " \
            "FP64 Tensor Core 51.2 TFLOPS"
A100 = "NVIDIA A100 datasheet: FP16/BF16 Tensor 312 dense; FP32 19.5; FP64 Tensor Core 19.5 TFLOPS"

# (match substrings, all required) -> (peaks, provenance)
TABLE = [
    (("H200",), {"f16": 989.4, "bf16": 989.4, "f32": 66.9, "f64": 66.9}, H200),
    (("H100", "PCIe"), {"f16": 756.5, "bf16": 756.5, "f32": 51.2, "f64": 51.2}, H100_PCIE),
    (("H100",), {"f16": 989.4, "bf16": 989.4, "f32": 66.9, "f64": 66.9}, H100_SXM),
    (("A100",), {"f16": 312.0, "bf16": 312.0, "f32": 19.5, "f64": 19.5}, A100),
]


# variants whose datasheets give other clocks and power, hence other peaks, than the row their name
# would match (H100 NVL, H200 NVL: not the SXM numbers): not in the table, so measured where asked
NOT_IN_TABLE = ("nvl",)


def lookup(device_name: str) -> tuple[dict, str] | None:
    """(peaks by dtype, provenance) for a device name, or None."""
    low = device_name.lower()
    if any(v in low.split() for v in NOT_IN_TABLE):
        return None
    for needles, peaks, src in TABLE:
        if all(n.lower() in low for n in needles):
            return dict(peaks), src
    return None


def peak(device_name: str, measure=None) -> dict:
    """{"device", "peaks": {dtype: TFLOP/s}, "source"}; `measure(dtype) -> TFLOP/s` is the
    fallback for devices not in the table (the best of a few large GEMMs)."""
    hit = lookup(device_name)
    if hit:
        return {"device": device_name, "peaks": hit[0], "source": hit[1]}
    if measure is None:
        return {"device": device_name, "peaks": {}, "source": "unknown device: not in parity.timing.peak.TABLE, nothing measured"}
    peaks = {dt: float(measure(dt)) for dt in ("f16", "bf16", "f32", "f64")}
    return {"device": device_name, "peaks": peaks,
            "source": "measured: best cuBLAS GEMM (8192^3 f16/bf16/f32, 4096^3 f64) on this device"}


def measured_peak(blas, dt: str) -> float:
    n = 4096 if dt == "f64" else 8192
    return max(blas.bench(dt, n, n, n, iters=5)["tflops"] for _ in range(2))
