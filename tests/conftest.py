import pytest


def _cuda_device() -> bool:
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


HAS_GPU = _cuda_device()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (cupy.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def level():
    """The hip-on-nvidia level on the bundled suite, shared by a module's GPU tests."""
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    lv = make("hip-on-nvidia", DEFAULT_HIP_SRC, None)
    if not lv.availability.available:
        pytest.skip(f"hip-on-nvidia unavailable: {lv.availability.reason}")
    yield lv
    lv.executor.close()


@pytest.fixture(scope="module")
def candle_level():
    """The cuda level on Candle's own kernels (PARITY_CANDLE_KERNELS=<candle-kernels/src>), shared by
    a module's GPU tests; skipped without them."""
    import os
    from pathlib import Path
    from parity.run.levels import make
    from parity.run.session import DEFAULT_HIP_SRC
    src = os.environ.get("PARITY_CANDLE_KERNELS")
    if not src:
        pytest.skip("PARITY_CANDLE_KERNELS (Candle's candle-kernels/src) not set")
    lv = make("cuda", DEFAULT_HIP_SRC, Path(src), case_timeout=600)   # quantized.cu compiles for minutes
    if not lv.availability.available:
        pytest.skip(f"cuda level unavailable: {lv.availability.reason}")
    yield lv
    lv.executor.close()
