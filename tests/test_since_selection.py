"""`parity run --since REF` chooses its cases in well under a second and says what chose them.

(It once called `expected_kernels()` once per case — 9,081 calls, 6.7 M `kernel_name` calls, 7-20 s:
longer than the smoke sweep it replaces.)"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import parity.host.routines as routines
import parity.suite.since as since
from parity.run.cases import Filters, load_sweep
from parity.cli.main import main
from parity.run import session
from parity.suite.since import selection_line


def test_selection_line_names_the_files_the_kernels_and_the_cases():
    line = selection_line("HEAD~3", [Path("a/unary.hip"), Path("a/binary.hip")], {f"k{i}" for i in range(120)},
                          1204, 9081)
    assert line == "--since HEAD~3: 2 changed files (unary.hip, binary.hip) define 120 kernels: 1,204 of 9,081 cases"
    assert selection_line("main", [Path("common.h")], {"x"}, 3, 10) == \
        "--since main: 1 changed file (common.h) defines 1 kernel: 3 of 10 cases"
    assert selection_line("main", [], set(), 0, 10) == "--since main: no kernel file changed: 0 of 10 cases"


def test_since_works_out_each_kernel_once_not_once_per_case(monkeypatch):
    cases = load_sweep("pr", Filters(None, None, None, None))
    calls = []
    real = routines.expected_kernels
    monkeypatch.setattr(routines, "expected_kernels", lambda: calls.append(1) or real())
    monkeypatch.setattr(since, "kernels_changed",
                        lambda ref, suite, include_dirs=(), discovered=None: ({"uneg_f32", "im2col_f32", "softmax_f16"},
                                                             [Path("unary.hip")]))
    chosen, line = session.changed_cases(cases, "HEAD~1", session.subject(Path("."), profile="candle"))
    assert len(calls) < 50 < len(cases)             # once per host-routine name, not per case
    ops = {c.op for c in chosen}
    assert {"unary.neg", "nn.softmax"} <= ops       # a routine's own launches (conv: im2col) count too
    assert any(c.op.startswith("conv") for c in chosen), ops
    assert any(c.op.startswith("chain.") for c in chosen), ops   # a chain's softmax step
    assert all(c.op != "unary.exp" for c in chosen)
    assert line.startswith("--since HEAD~1: 1 changed file (unary.hip) defines 3 kernels:")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    suite = tmp_path / "kernels"
    suite.mkdir()
    for name in ("neg", "exp"):
        (suite / f"{name}.hip").write_text(
            f'extern "C" __global__ void u{name}_f32(size_t numel, size_t num_dims, '
            "const size_t* info, const float* inp, float* out) { }\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "suite")
    return suite


def test_cli_since_says_which_changed_files_chose_the_cases(repo: Path, tmp_path: Path):
    (repo / "neg.hip").write_text((repo / "neg.hip").read_text() + "// edited\n")
    r = CliRunner().invoke(main, [
        "run", "--levels", "cpu", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--hip-src", str(repo),
        "--out", str(tmp_path / "reports"), "--since", "HEAD"])
    assert r.exit_code == 0, r.output
    assert "--since HEAD: 1 changed file (neg.hip) defines 1 kernel: " in r.stderr
    r = CliRunner().invoke(main, [
        "run", "--levels", "cpu", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--hip-src", str(repo),
        "--out", str(tmp_path / "reports"), "-q", "--since", "HEAD"])
    assert r.exit_code == 0 and "--since HEAD" not in r.stderr                           # -q: the summary only
