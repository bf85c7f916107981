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
    from parity.levels import DEFAULT_HIP_SRC, make
    lv = make("hip-on-nvidia", DEFAULT_HIP_SRC, None)
    if not lv.availability.available:
        pytest.skip(f"hip-on-nvidia unavailable: {lv.availability.reason}")
    yield lv
    lv.executor.close()
