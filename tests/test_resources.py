"""The bundled files are found through parity.core.resources (importlib.resources), the one place
that knows where they are: no module reaches out of the package to the checkout's layout."""
import re
from pathlib import Path

from parity.core import resources

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_files_are_found():
    assert resources.check() == []
    assert (resources.hip_suite() / "unary_f32.hip").is_file()
    assert (resources.hip_mapping() / "hip" / "hip_runtime.h").is_file()
    assert (resources.cuda_rtc_stubs() / "stdint.h").is_file()
    assert {p.stem for p in resources.sweep_dir().glob("*.toml")} >= {"smoke", "pr", "nightly", "huge", "bench"}
    assert (resources.data_dir() / "cuda-golden-elementwise.json").is_file()


def test_in_a_checkout_the_links_resolve_to_the_edited_folders():
    # parity/_bundled/* link to the top-level folders people edit; messages show those paths
    assert resources.hip_suite() == (ROOT / "backends" / "hip").resolve()
    assert resources.sweep_dir() == (ROOT / "cases").resolve()
    for name, target in (("hip", "backends/hip"), ("cuda_rtc", "backends/cuda_rtc"), ("cases", "cases")):
        link = ROOT / "parity" / "_bundled" / name
        assert link.is_symlink() and link.resolve() == (ROOT / target).resolve()


def test_every_default_path_comes_from_resources():
    from parity.executors import hip_nvidia
    from parity.run.cases import SWEEP_DIR
    from parity.run.session import DEFAULT_HIP_SRC
    assert DEFAULT_HIP_SRC == resources.hip_suite()
    assert hip_nvidia.HIP_MAPPING == resources.hip_mapping()
    assert hip_nvidia.CUDA_RTC_STUBS == resources.cuda_rtc_stubs()
    assert SWEEP_DIR == resources.sweep_dir()
    escapes = re.compile(r"parents\[\d\]|parent\.parent|/\s*[\"'](backends|cases)[\"']")
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "parity").rglob("*.py") if p.name != "resources.py"
           for i, line in enumerate(p.read_text().splitlines(), 1) if escapes.search(line)]
    assert not bad, bad


def test_doctor_reports_the_bundled_files():
    from parity.run.doctor import doctor
    (row,) = [r for r in doctor() if r.level == "bundled"]
    assert row.available and str(resources.hip_suite()) in row.details
