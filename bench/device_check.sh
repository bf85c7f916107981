#!/usr/bin/env bash
# Judge and time a change to the bundled HIP suite in one device call (the device tool's `run`, from the
# repository root; $OUT is its folder). Each step has its own time limit and writes its log to $OUT as
# it goes, so a slow or failing step cannot take the others' output with it.
#
#   bench/device_check.sh OPS FAMILIES [BEFORE_DIR] [PYTEST_TARGETS]
#
#   OPS             catalog globs to judge, e.g. 'reduce.*' (comma separated)
#   FAMILIES        bench/suite_speed.py families to time, e.g. reduce or nn,reduce
#   BEFORE_DIR      a copy of the suite before the change, timed beside it (e.g. .before/hip from
#                   `git archive <rev> backends/hip | tar -x -C .before --strip-components=1`)
#   PYTEST_TARGETS  GPU test files to run (default: every test marked gpu)
#
# DEADLINE (seconds, default 570: inside the device tool's 600 s a call) caps every step at the time
# left, so the call's last output still comes back. VARIANTS="NAME=DIR ..." judges and times other
# candidate suites beside backends/hip in the same call (their pr sweeps at both waves, a speed column
# each), so two ways of writing a change are compared side by side on one machine.
#
# What it runs: the pr sweep of OPS on hip-on-nvidia at wave 64 and 32; the same cases on Candle's CUDA
# kernels (the cuda level) where .candle/candle-kernels/src is there; the speed table of FAMILIES
# (before, after, Candle); the GPU tests. Carry .candle (Candle's kernels), .gguf and .xdist (the
# gguf and pytest-xdist packages, `pip install --no-deps --target`): the device has no registry.
set -uo pipefail
: "${OUT:?run this on the device machine, where \$OUT is its output folder}"
[ $# -ge 2 ] || { sed -n '2,20p' "$0"; exit 2; }
ops=$1 families=$2 before=${3:-} tests=${4:-}
candle=.candle/candle-kernels/src
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/.xdist:$PWD/.gguf${PYTHONPATH:+:$PYTHONPATH}

deadline=${DEADLINE:-570}
step() {  # step NAME SECONDS COMMAND...: its log in $OUT/NAME.log, its last lines and status here
  local name=$1 limit=$2 t0=$SECONDS rc; shift 2
  (( limit > deadline - SECONDS )) && limit=$((deadline - SECONDS))
  (( limit > 0 )) || { echo "== $name: skipped, no time left"; return; }
  echo "== $name: $*"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; rc=$?
  tail -n 4 "$OUT/$name.log"
  echo "== $name: exit $rc in $((SECONDS - t0)) s$([ $rc = 124 ] && echo ", past its ${limit} s")"
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step install 120 bash -c 'pip install --no-deps --no-build-isolation -e . || pip install --no-deps -e .'
for v in =backends/hip ${VARIANTS:-}; do  # the change (logs pr-w64, pr-w32), then each variant (pr-NAME-w64, ...)
  name=${v%%=*}
  for w in 64 32; do
    step "pr-${name:+$name-}w$w" 240 python3 -m parity run -q --sweep pr --ops "$ops" --levels hip-on-nvidia --wave "$w" --hip-src "${v#*=}" --out "$OUT/pr-${name:+$name-}w$w"
  done
done
[ -d "$candle" ] && step pr-candle 240 python3 -m parity run -q --sweep pr --ops "$ops" --levels cuda --cuda-src "$candle" --out "$OUT/pr-candle"
suites=(--suite after=backends/hip)
[ -n "$before" ] && suites=(--suite "before=$before" "${suites[@]}")
for v in ${VARIANTS:-}; do suites+=(--suite "$v"); done
step speed 300 python3 bench/suite_speed.py "$OUT/speed" --families "$families" "${suites[@]}"  # Candle: its default, .candle/candle-kernels/src
[ -f "$OUT/speed/suite_speed.md" ] && cat "$OUT/speed/suite_speed.md"
workers=(); python3 -c 'import xdist' 2>/dev/null && workers=(-n 12 --dist worksteal)  # compiling is CPU-bound
# shellcheck disable=SC2086  # PYTEST_TARGETS is a list of paths
step gpu-tests 420 python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" ${tests:-tests}
