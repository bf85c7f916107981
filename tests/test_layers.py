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
