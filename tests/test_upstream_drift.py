"""`parity coverage --cuda-src DIR --drift` (#31): every upstream change since the catalog caught up
is one line with file and line — a new kernel, a kernel gone, a changed parameter list — and exit 1;
an unchanged upstream is exit 0. Upstream here is a small CUDA suite of our own and its record."""
from __future__ import annotations

import json

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
        "file": "affine.cu", "line": 4, "params": ["size_t", "size_t", "ptr", "ptr", "ptr", "f64", "f64"]}
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
        ["gone upstream", "affine_f64", "affine.cu:4 (snapshot)", "was (size_t, size_t, ptr, ptr, ptr, f64, f64)"],
        ["parameters changed", "affine_f32", "affine.cu:2",
         "was (size_t, size_t, ptr, ptr, ptr, f32, f32), now (u32, size_t, ptr, ptr, ptr, f32, f32); "
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


def test_the_bundled_record_is_every_kernel_the_catalog_expects_of_candle():
    """The record the default drift check compares against: Candle main's kernels when the catalog
    caught up (#31), each one a catalog kernel (library routines aside)."""
    from parity.ops import expected_kernels
    rec = json.loads((data_dir() / "candle-upstream.json").read_text())
    abi = {k for k, v in expected_kernels().items() if not v[0].spec.library}
    assert len(rec["kernels"]) >= 991
    assert set(rec["kernels"]) <= abi
