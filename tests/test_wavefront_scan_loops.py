"""amd-static's halving-loop note fires on warp reductions (a shuffle in the loop's body), never on
shared-memory reductions: the bundled quantized_mmv.hip butterfly once got a false note."""
from __future__ import annotations

from pathlib import Path

from parity.suite.amd_static import wavefront_scan
from parity.run.session import DEFAULT_HIP_SRC

SHAPES = """\
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor(v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int mask = 16; mask > 0; mask >>= 1) {
    v = fmaxf(v, __shfl_xor(v, mask, 32));
  }
  return v;
}
__device__ void smem_butterfly(float& sum, unsigned t) {
  __shared__ float bs[1024];
  for (unsigned m = 16; m > 0; m >>= 1) {
    bs[t] = sum;
    __syncthreads();
    sum += bs[t ^ m];
    __syncthreads();
  }
  float after = __shfl_xor(sum, 1);   // a shuffle after the loop is not in its body
}
__device__ float smem_tree(float* s, unsigned t) {
  for (int k = 32; k > 0; k /= 2)
    if (t < k) s[t] += s[t + k];
  return s[0];
}
__device__ float nested(float v) {
  for (int o = 32; o > 0; o >>= 1) for (int r = 0; r < 1; ++r) v += __shfl_down(v, o, 64);
  return v;
}
"""


def _loop_lines(path: Path) -> list[int]:
    return [line for _, line, note in wavefront_scan([path]) if "warp-reduction loop" in note]


def test_loop_note_needs_a_shuffle_in_the_loop_body(tmp_path: Path):
    src = tmp_path / "shapes.hip"
    src.write_text(SHAPES)
    assert _loop_lines(src) == [2, 6, 27]      # the two shuffle loops and the nested one; no smem loop
    notes = {line: note for _, line, note in wavefront_scan([src])}
    assert "lanes 0-31 only" in notes[2] and "32-lane wave" in notes[27]


def test_no_loop_note_on_the_bundled_suite():
    files = sorted(DEFAULT_HIP_SRC.glob("*.hip")) + sorted(DEFAULT_HIP_SRC.glob("*.h"))
    assert any(f.name == "quantized_mmv.hip" for f in files)
    assert [f for f in files if _loop_lines(f)] == []
