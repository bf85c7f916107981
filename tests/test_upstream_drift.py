"""`parity coverage --cuda-src DIR --drift` (#31): every upstream change since the catalog caught up
is one line with file and line — a new kernel, a kernel gone, a changed parameter list — and exit 1;
an unchanged upstream is exit 0. Upstream here is a small CUDA suite of our own and its record."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from parity.cli.main import main
from parity.suite.coverage import snapshot_text, upstream_snapshot
from parity.core.resources import data_dir
from parity.suite.scan import discover

AFFINE = """#include <stdint.h>
extern "C" __global__ void affine_f32(const size_t numel, const size_t num_dims, const size_t *info,
    const float *inp, float *out, const float mul, const float add) {}
extern "C" __global__ void affine_f64(const size_t numel, const size_t num_dims, const size_t *info,
    const double *inp, double *out, const double mul, const double add) {}
"""


def _cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _upstream(tmp_path, text):
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    (d / "affine.cu").write_text(text)
    return d


def test_an_unchanged_upstream_is_current(tmp_path):
    src = _upstream(tmp_path, AFFINE)
    rec = tmp_path / "record.json"
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(rec), "--update-snapshot")
    assert r.exit_code == 0, r.output
    assert json.loads(rec.read_text())["kernels"]["affine_f64"] == {
        "file": "affine.cu", "line": 4,
        "params": ["size_t", "size_t", "const size_t*", "const f64*", "f64*", "f64", "f64"]}
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(rec))
    assert r.exit_code == 0, r.output
    assert "0 new upstream, 0 gone upstream, 0 parameters changed: the catalog is current" in r.output


def test_each_upstream_change_is_a_line_with_file_and_line(tmp_path):
    src = _upstream(tmp_path, AFFINE)
    rec = tmp_path / "record.json"
    rec.write_text(snapshot_text(upstream_snapshot(discover(src), "test upstream v1")))
    # v2: affine_f64 gone, affine_f32 takes a 32-bit numel, a kernel no catalog op expects
    _upstream(tmp_path, """#include <stdint.h>
extern "C" __global__ void affine_f32(const unsigned int numel, const size_t num_dims, const size_t *info,
    const float *inp, float *out, const float mul, const float add) {}
extern "C" __global__ void affine_gelu_f32(const size_t numel, const float *inp, float *out) {}
""")
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(rec))
    assert r.exit_code == 1, r.output
    lines = [ln.split("\t") for ln in r.output.splitlines() if "\t" in ln]
    assert lines == [
        ["new upstream", "affine_gelu_f32", "affine.cu:4", "closest: affine_u32 (affine)"],
        ["gone upstream", "affine_f64", "affine.cu:4 (snapshot)",
         "was (size_t, size_t, const size_t*, const f64*, f64*, f64, f64)"],
        ["parameters changed", "affine_f32", "affine.cu:2",
         "was (size_t, size_t, const size_t*, const f32*, f32*, f32, f32), "
         "now (u32, size_t, const size_t*, const f32*, f32*, f32, f32); "
         "catalog's affine: #0: expected size_t, suite has u32"]]
    assert "since test upstream v1: 1 new upstream, 1 gone upstream, 1 parameters changed" in r.output


def test_a_bad_record_is_one_line(tmp_path):
    src = _upstream(tmp_path, AFFINE)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(bad))
    assert r.exit_code == 2 and "is not an upstream record" in r.output
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(tmp_path / "none.json"))
    assert r.exit_code == 2 and "does not exist (write one with --update-snapshot)" in r.output
    r = _cli("coverage", "--cuda-src", str(src), "--snapshot", str(bad))
    assert r.exit_code == 2 and "go with --drift" in r.output
    for text in ('{"kernels": {"affine_f32": {"file": "affine.cu", "line": 1, "params": [1]}}}',   # were exit 3
                 '{"kernels": {"affine_f32": []}}', '{"kernels": {"a": {"file": ["x"]}}}', "[" * 100000,
                 '{"kernels": {"zzz_gone_kernel": {"params": ["ptr"]}}}'):
        bad.write_text(text)
        r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(bad))
        assert r.exit_code == 2 and r.output.startswith(f"Error: {bad} is not an upstream record ("), r.output


def test_the_bundled_record_is_every_kernel_the_catalog_expects_of_candle():
    """The record the default drift check compares against: Candle main's kernels when the catalog
    caught up (#31), each one a catalog kernel (library routines aside)."""
    from parity.ops import expected_kernels
    rec = json.loads((data_dir() / "candle-upstream.json").read_text())
    abi = {k for k, v in expected_kernels().items() if not v[0].spec.library}
    assert len(rec["kernels"]) >= 991
    assert set(rec["kernels"]) <= abi


# ------------------------------------------------------------------ what a pointer points to
FILL = """extern "C" __global__ void fill_f32(float *buf, float value, const size_t numel) {}
"""


def _lines(output: str) -> list[list[str]]:
    return [ln.split("\t") for ln in output.splitlines() if "\t" in ln]


def test_a_pointer_to_another_type_upstream_is_a_parameters_changed_line(tmp_path):
    """Candle's `const size_t *info` turned `const uint32_t *info`, or `float *buf` turned `double *buf`:
    the same ABI class (a pointer), another kernel. The record keeps each pointee and its const."""
    src = _upstream(tmp_path, AFFINE)
    (src / "fill.cu").write_text(FILL)
    rec = tmp_path / "record.json"
    rec.write_text(snapshot_text(upstream_snapshot(discover(src), "test upstream v1")))
    assert json.loads(rec.read_text())["kernels"]["fill_f32"]["params"] == ["f32*", "f32", "size_t"]
    _upstream(tmp_path, AFFINE.replace("const size_t *info,\n    const float", "const uint32_t *info,\n    const float"))
    (src / "fill.cu").write_text(FILL.replace("float *buf", "double *buf"))
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(rec))
    assert r.exit_code == 1, r.output
    assert _lines(r.output) == [
        ["parameters changed", "affine_f32", "affine.cu:2",
         "was (size_t, size_t, const size_t*, const f32*, f32*, f32, f32), "
         "now (size_t, size_t, const u32*, const f32*, f32*, f32, f32)"],
        ["parameters changed", "fill_f32", "fill.cu:1", "was (f32*, f32, size_t), now (f64*, f32, size_t)"]]
    assert "0 new upstream, 0 gone upstream, 2 parameters changed" in r.output


def test_a_record_written_before_pointees_were_kept_still_matches(tmp_path):
    """A record of `ptr` pointers (parity before pointees were recorded) takes any pointer: no drift."""
    src = _upstream(tmp_path, AFFINE)
    snap = upstream_snapshot(discover(src), "old")
    for k in snap["kernels"].values():
        k["params"] = ["ptr" if t.endswith("*") else t for t in k["params"]]
    rec = tmp_path / "old.json"
    rec.write_text(snapshot_text(snap))
    r = _cli("coverage", "--cuda-src", str(src), "--drift", "--snapshot", str(rec))
    assert r.exit_code == 0 and "the catalog is current" in r.output, r.output


def test_plain_coverage_flags_a_pointer_to_elements_of_another_width(tmp_path):
    """Coverage of a CUDA tree compares pointees with the record of Candle the catalog follows: info as
    u32 where the host passes size_t is a signature-mismatch; the same width spelled otherwise is not."""
    src = _upstream(tmp_path, AFFINE.replace("const size_t *info,\n    const float", "const uint32_t *info,\n    const float")
                    .replace("const double *inp", "const uint64_t *inp"))
    r = _cli("coverage", "--cuda-src", str(src), "--json", "--ops", "affine")
    rows = {x["kernel"]: x for x in json.loads(r.output[r.output.index("{"):])["cuda"]["rows"]}
    assert rows["affine_f32"]["status"] == "signature-mismatch"
    assert rows["affine_f32"]["suggestion"] == "#2: expected const size_t*, suite has const u32* (8-byte elements, not 4)"
    assert rows["affine_f64"]["status"] == "present"
    assert rows["affine_f64"]["suggestion"] == "#3: u64* for f64* (same element width)"


def test_the_drift_report_goes_to_stdout(tmp_path):
    """`parity coverage --drift > file` keeps the lines and the summary; stderr has nothing of them."""
    src = _upstream(tmp_path, AFFINE)
    rec = tmp_path / "record.json"
    rec.write_text(snapshot_text(upstream_snapshot(discover(src), "test upstream v1")))
    (src / "affine.cu").write_text(AFFINE + 'extern "C" __global__ void affine_gelu_f32(const size_t numel) {}\n')
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "parity", "coverage", "--cuda-src", str(src), "--drift", "--snapshot",
                        str(rec)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.splitlines()[0].startswith("new upstream\taffine_gelu_f32\taffine.cu:6")
    assert "since test upstream v1: 1 new upstream, 0 gone upstream, 0 parameters changed" in p.stdout
    assert p.stderr == ""


def test_a_folder_that_is_not_candles_tree_is_a_setup_error():
    """--cuda-src of another project (the declared-port example's CUDA original): not 999 `gone upstream`
    lines but one line, exit 2."""
    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "declared-port" / "cuda"
    r = _cli("coverage", "--cuda-src", str(example), "--drift")
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "gone upstream" not in r.output
    assert f"{example} is not the tree the record was taken from" in r.output
    assert "none of its" in r.output and "affine.cu" in r.output


def test_the_bundled_record_keeps_every_pointers_pointee():
    rec = json.loads((data_dir() / "candle-upstream.json").read_text())
    params = [t for k in rec["kernels"].values() for t in k["params"]]
    assert "ptr" not in params
    assert rec["kernels"]["affine_f32"]["params"][2] == "const size_t*"
    assert rec["kernels"]["fill_f32"]["params"][0] == "f32*"


def test_a_snapshot_of_a_folder_without_kernels_is_refused(tmp_path):
    """It recorded 0 kernels and said `the catalog is current`: every later drift would compare with nothing."""
    empty, snap = tmp_path / "src", tmp_path / "snap.json"
    empty.mkdir()
    r = _cli("coverage", "--drift", "--cuda-src", str(empty), "--update-snapshot", "--snapshot", str(snap))
    assert r.exit_code == 2 and not snap.exists()
    assert r.output.strip() == (f"Error: --update-snapshot: {empty} defines no kernel: nothing to record "
                                "(is it candle-kernels/src?)")
