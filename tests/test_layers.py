"""The import contracts of pyproject.toml ([tool.importlinter]) hold: layers, ops without executors,
no GPU runtime on the CPU path, no UI libraries below the edge, no cycles (issue #15)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    # PYTHONPATH: lint the parity of this checkout, not whichever one is installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                        "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_package_tree_is_the_layering():
    """tools/arch_metrics.py on this checkout (#32): no module outside the layer packages but the
    pytest plugin (an entry point), no import circle between modules, no import up the layer order,
    no function over 80 lines, no branch on an op's name, family or root outside the catalog."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "tools/arch_metrics.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    counts = {line.split(":")[0]: int(line.rsplit(":", 1)[1]) for line in r.stdout.splitlines()
              if line and not line.startswith(" ")}
    assert counts == {"top-level modules (besides __init__/__main__)": 1,
                      "import cycles between modules": 0,
                      "upward imports (a lower layer's module imports a higher one's)": 0,
                      "functions over 80 lines": 0,
                      "branches on op identity outside parity/ops and parity/profiles": 0}, r.stdout
