"""The wheel is usable on its own: built from a copy of the checkout, installed into a fresh venv,
run from a folder outside the checkout, it finds its HIP suite, mapping headers and sweeps.

(A wheel without them once answered `no sweep 'smoke'; bundled sweeps: ` and `kernel suite folder
.../site-packages/backends/hip does not exist`.) Slow (about 30 s), but part of CI's run.
"""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

# What the checkout has that a build does not need (and must not be polluted with build/ output).
_TOP_SKIP = {".git", "tests", "bench", "reports", "build", "dist"}


def _skip(folder: str, names: list[str]) -> set[str]:
    top = _TOP_SKIP if Path(folder) == ROOT else set()
    return {n for n in names if n in top or n in ("__pycache__", ".pytest_cache") or n.endswith(".egg-info")}


def _run(cmd: list[str], cwd: Path, timeout: int = 180, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _running_site_packages() -> list[str]:
    """The site-packages folders of the Python running the tests — its dependencies. In a venv
    these are the venv's (plus the base's only if the venv itself includes them); `venv
    --system-site-packages` would instead borrow the *base* Python's, which lack them there."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def _borrow_site_packages(venv: Path) -> None:
    """Put the running Python's site-packages on the venv's sys.path, after its own.

    Plain folder lines in a .pth are appended without processing the .pth files inside them, so
    the checkout's editable-install hook stays off and `import parity` finds the installed wheel."""
    (own,) = (venv / "lib").glob("python3.*/site-packages")
    (own / "_borrowed_deps.pth").write_text("".join(d + "\n" for d in _running_site_packages()))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(venv bin folder, wheel) — the wheel built with `python -m build` (sdist, then wheel from
    it) and installed with --no-deps into a venv that borrows the dependencies of this Python
    (its site-packages, through a .pth: works from a venv and from a system Python alike)."""
    pytest.importorskip("build", reason="pip install build (in the dev extra)")
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_skip)     # symlinks kept: parity/_bundled → backends, cases
    r = _run([sys.executable, "-m", "build", "--outdir", str(tmp / "dist"), str(src)], tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheel = next((tmp / "dist").glob("parity-*.whl"))
    venv = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", str(venv)], tmp)
    assert r.returncode == 0, r.stderr
    _borrow_site_packages(venv)
    r = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
              str(wheel)], tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return venv / "bin", wheel


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
    env["COLUMNS"] = "200"
    return env


def test_wheel_carries_suite_mapping_and_sweeps(installed):
    _, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in ("parity/_bundled/hip/unary_f32.hip", "parity/_bundled/hip/common.h",
                 "parity/_bundled/hip/mutants-equivalent.toml",
                 "parity/_bundled/hip/include/hip/hip_runtime.h", "parity/_bundled/hip/include/hip/hip_fp16.h",
                 "parity/_bundled/cuda_rtc/stdint.h", "parity/_bundled/cases/smoke.toml",
                 "parity/_bundled/cases/pr.toml", "parity/data/cuda-golden-elementwise.json",
                 "parity/render/templates/scoreboard.html.j2"):
        assert want in names, want
    assert not [n for n in names if n.startswith(("backends/", "cases/", "tests/"))]


def test_installed_parity_is_the_wheel(installed, tmp_path):
    bin_, _ = installed
    r = _run([str(bin_ / "python"), "-c", "import parity, parity.core.resources as r; print(parity.__file__); "
              "print(r.check())"], tmp_path, env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(bin_.parent / "lib" / f"python{sys.version_info.major}."
                                         f"{sys.version_info.minor}" / "site-packages" / "parity" / "__init__.py"),
                                     "[]"]
    r = _run([str(bin_ / "parity"), "--version"], tmp_path, env=_env())
    meta = _run([str(bin_ / "python"), "-c", "import importlib.metadata as m; print(m.version('parity'))"],
                tmp_path, env=_env()).stdout.strip()
    from parity import __version__
    assert meta == __version__                                 # the wheel's metadata says what the code says
    assert r.returncode == 0 and r.stdout.strip() == f"parity, version {__version__}"


def test_run_and_coverage_from_outside_the_checkout(installed, tmp_path):
    bin_, _ = installed
    r = _run([str(bin_ / "parity"), "run", "--levels", "cpu", "--ops", "unary.neg", "--out", "out"], tmp_path,
             env=_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Error" not in r.stdout + r.stderr
    assert "pass" in r.stdout
    (run_dir,) = (tmp_path / "out").iterdir()               # out/smoke-<time>/
    for f in ("results.json", "summary.md", "junit.xml"):
        assert (run_dir / f).is_file(), f
    r = _run([str(bin_ / "parity"), "coverage", "--json"], tmp_path, env=_env())
    hip = json.loads(r.stdout)["hip"]
    assert "site-packages/parity/_bundled/hip" in hip["suite"] and hip["summary"]["present"] > 0
    # the installed suite covers the whole catalog (GGUF included: backends/hip/quantized*.hip, mmq too)
    off = {row["kernel"]: row["status"] for row in hip["rows"] if row["status"] != "present"}
    assert not off, (off, r.stderr[-3000:])
    r = _run([str(bin_ / "parity"), "list", "--ops", "unary.neg"], tmp_path, env=_env())
    assert r.returncode == 0 and "uneg_f32" in r.stdout
