"""One truthful verdict for the whole run (#28): never green when nothing of the subject was verified.

Each test is a user's run on a machine without a GPU, and asserts the one outcome every output
shows: the terminal's last line, summary.md's heading, index.html's badge, JUnit's parity.render.outcome
suite, and the exit code.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import main
from parity.run.session import run_folder

HIPCC = shutil.which("hipcc") is not None
needs_hipcc = pytest.mark.skipif(not HIPCC, reason="hipcc not installed (apt-get install hipcc libamdhip64-dev)")
NEG = ('extern "C" __global__ void uneg_f32(const size_t numel, const size_t num_dims, const size_t *info,\n'
       '                                   const float *inp, float *out) {\n'
       '    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x)\n'
       '        out[i] = -(inp ? inp[i] : out[i]);\n}\n')


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


def outputs(out: Path) -> dict:
    """The outcome as each report of the one run folder under `out` shows it."""
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    junit = ET.fromstring((folder / "junit.xml").read_text())
    case = junit.find("testsuite[@name='parity.outcome']/testcase")
    state = "failure" if case.find("failure") is not None else "skipped" if case.find("skipped") is not None else "pass"
    page = (folder / "index.html").read_text()
    badge = page.split('<span class="badge"', 1)[1].split(">", 1)[1].split("<", 1)[0]
    return {"md": (folder / "summary.md").read_text().splitlines()[0], "junit": (case.get("name"), state),
            "badge": badge, "folder": folder}


def suite(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "port"
    d.mkdir()
    (d / "unary.hip").write_text("#include <hip/hip_runtime.h>\n" + text)
    return d


RUN = ("run", "--ops", "unary.neg", "--dtypes", "f32", "--layouts", "contiguous,transposed", "--values", "normal")


@needs_hipcc
def test_a_port_checked_only_by_amd_static_is_compiled_not_passed(tmp_path):
    r = invoke(*RUN, "--hip-src", suite(tmp_path, NEG), "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    head = "⚠️ parity: compiled, not executed — 1/1 kernels compile for gfx90a, gfx1030 (amd-static); no level here ran them"
    assert head in r.output.splitlines()                         # one line, then what would run them
    o = outputs(tmp_path / "o")
    assert o["md"] == f"## {head}" and o["badge"] == "COMPILED, NOT RUN" and o["junit"] == ("compiled", "skipped")


@needs_hipcc
def test_an_empty_port_fails_with_nothing_ported(tmp_path):
    (tmp_path / "empty").mkdir()
    r = invoke(*RUN, "--hip-src", tmp_path / "empty", "--out", tmp_path / "o")
    assert r.exit_code == 1, r.output
    o = outputs(tmp_path / "o")
    assert o["md"] == ("## ❌ parity: ported 0/1 kernels (0%) · 1 not ported (1 cause) · 1 family not started · "
                       "compile checks only (amd-static), nothing executed")
    assert o["badge"] == "FAIL" and o["junit"] == ("fail", "failure")


@needs_hipcc
def test_a_port_that_does_not_compile_fails_with_hipccs_error(tmp_path):
    r = invoke(*RUN, "--hip-src", suite(tmp_path, NEG.replace("out[i] = ", "out[i] = = ")), "--out", tmp_path / "o",
               "-q")
    assert r.exit_code == 1, r.output
    o = outputs(tmp_path / "o")
    # it never ran: it does not compile, it is not `wrong`
    assert o["md"] == ("## ❌ parity: ported 1/1 kernels (100%) · 0 compile, 1 does not compile (1 cause) · "
                       "0/2 cases compile · compile checks only (amd-static), nothing executed")
    rows = json.loads((o["folder"] / "results.json").read_text())["results"]
    static = [r for r in rows if r["level"] == "amd-static"]
    assert {r["verdict"] for r in static} == {"compile-error"}
    assert static[0]["message"].startswith("hipcc --offload-arch=gfx90a: ") and "error: expected expression" \
        in static[0]["message"]



@needs_hipcc
def test_a_kernel_two_files_define_is_checked_in_the_ports_file_and_the_report_says_so(tmp_path):
    """Candle's CUDA original kept beside its port (`ref/unary.cu` sorts before `unary.hip`): the HIP
    file's definition is checked, not the one found first; a definition that does not compile is the
    verdict (never passed over for another file's), one its module leaves out (#if) gives way to the
    next; summary.md names the files (a stderr note alone was lost in CI logs)."""
    port = suite(tmp_path, NEG)
    (port / "ref").mkdir()
    (port / "ref" / "unary.cu").write_text("#include <cuda_fp16.h>\n" + NEG)     # no such header for hipcc
    r = invoke(*RUN, "--hip-src", port, "--out", tmp_path / "o", "-q")
    assert r.exit_code == 0, r.output
    o = outputs(tmp_path / "o")
    assert o["md"].startswith("## ⚠️ parity: compiled, not executed — 1/1 kernels compile"), o["md"]
    summary = (o["folder"] / "summary.md").read_text()
    assert f"- uneg\\_f32 defined twice: {md_path(port / 'unary.hip')}:2 and {md_path(port / 'ref' / 'unary.cu')}:2; " \
           "parity checks the first file's" in summary, summary
    (port / "ref" / "unary.cu").rename(port / "a.hip")              # both .hip, the first by path does not build:
    r = invoke(*RUN, "--hip-src", port, "--out", tmp_path / "o2", "-q")      # its compile error is the verdict
    assert r.exit_code == 1 and "1 does not compile" in outputs(tmp_path / "o2")["md"], r.output
    (port / "a.hip").write_text("#include <hip/hip_runtime.h>\n#if !defined(__HIPCC__)\n" + NEG + "#endif\n")
    r = invoke(*RUN, "--hip-src", port, "--out", tmp_path / "o3", "-q")       # scanned, left out by #if: the next
    assert r.exit_code == 0 and "1/1 kernels compile" in outputs(tmp_path / "o3")["md"], r.output


def test_a_ports_own_header_not_found_is_said_not_silently_stubbed(tmp_path):
    """Sources in src/, headers in include/, no include folder given: `#include "binary.h"` became an
    empty stub without a word, and its 48 macro-stamped kernels were `missing`."""
    from parity.suite.scan import discover
    (tmp_path / "src").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "ops.h").write_text('#define NEG(T) extern "C" __global__ void uneg_##T(size_t n) {}\n')
    for name in ("a", "b"):
        (tmp_path / "src" / f"{name}.hip").write_text(
            f'#include <hip/hip_runtime.h>\n#include "cuda_fp16.h"\n#include "ops.h"\nNEG({name})\n')
    s = discover(tmp_path / "src")
    assert (sorted(s.kernels), s.notes) == ([], [
        "#include 'ops.h' is not found: an empty stub stood in for it, so what it defines (kernels its macros make "
        "among them) is not seen; give its folder (--port-include DIR, or include_dirs in parity-port.toml) "
        "(in 2 sources: a.hip, b.hip)"])
    s = discover(tmp_path / "src", [tmp_path / "include"])
    assert (sorted(s.kernels), s.notes) == (["uneg_a", "uneg_b"], [])


def md_path(p: Path) -> str:
    return str(p).replace("_", "\\_")

def test_nothing_that_runs_the_suite_is_a_setup_error(tmp_path):
    empty_path = tmp_path / "bin"
    empty_path.mkdir()                                  # no hipcc on PATH; no GPU on this machine
    if _gpu():
        pytest.skip("a GPU level runs here")
    r = invoke(*RUN, "--out", tmp_path / "o", env={"PATH": str(empty_path)})
    assert r.exit_code == 2
    assert r.output.startswith("Error: nothing here runs or compiles the kernels of ")
    assert "`--levels cpu` runs the reference's case machinery alone" in r.output
    assert not (tmp_path / "o").exists()                # refused before anything was written


def test_a_named_level_that_is_unavailable_is_a_setup_error(tmp_path):
    if _gpu():
        pytest.skip("a GPU level runs here")
    r = invoke(*RUN, "--levels", "amd", "--out", tmp_path / "o")
    assert r.exit_code == 2 and r.output.startswith("Error: level amd (named in --levels) is unavailable: ")
    r = invoke(*RUN, "--require", "hip-on-nvdia", "--out", tmp_path / "o")
    assert r.exit_code == 2 and r.output.startswith("Error: unknown level 'hip-on-nvdia'; did you mean 'hip-on-nvidia'")


def test_the_reference_alone_says_what_it_proves_and_what_not(tmp_path):
    r = invoke(*RUN, "--levels", "cpu", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    head = ("⚠️ parity: reference only — cpu passed 2/2 cases of the case machinery; "
            "no kernel of the suite ran or compiled")
    lines = r.output.rstrip().splitlines()
    assert head in lines and any(line.startswith("  Not verified — the suite's kernels did not run here")
                                 for line in lines)
    o = outputs(tmp_path / "o")
    assert o["md"] == f"## {head}" and o["badge"] == "REFERENCE ONLY" and o["junit"] == ("reference-only", "skipped")
    md = (o["folder"] / "summary.md").read_text()
    assert "- Verified here — cpu: the case machinery: layouts, `info` arrays and argument packing" in md


def test_resume_takes_sweep_and_filters_from_its_folder(tmp_path):
    r = invoke("run", "--sweep", "pr", "--ops", "unary.neg", "--dtypes", "f16", "--levels", "cpu", "-q",
               "--out", tmp_path)
    assert r.exit_code == 0, r.output
    (folder,) = tmp_path.iterdir()
    n = len(json.loads((folder / "results.json").read_text())["results"])
    r = invoke("run", "--resume", folder, "-q")         # no --sweep, no filters: the folder's
    assert r.exit_code == 0, r.output
    doc = json.loads((folder / "results.json").read_text())
    assert doc["meta"]["sweep"] == "pr" and len(doc["results"]) == n
    r = invoke("run", "--resume", folder, "--sweep", "smoke", "-q")
    assert r.exit_code == 2
    assert r.output == (f"Error: --resume {folder} continues a run with --sweep pr; this command says --sweep smoke: "
                        "drop the option, or start a new run\n")


def test_resume_refuses_another_shard_and_another_out(tmp_path):
    """`--resume FOLDER --shard 1/2` on an unsharded run rewrote its results with half the cases;
    `--out OTHER` was ignored without a word."""
    assert invoke(*RUN, "--levels", "cpu", "-q", "--shard", "1/2", "--out", tmp_path).exit_code == 0
    (folder,) = tmp_path.iterdir()
    before = (folder / "results.json").read_bytes()
    for opt, says in ((("--shard", "2/2"), "continues a run with --shard 1/2; this command says --shard 2/2: drop "
                                            "the option, or start a new run"),
                      (("--out", tmp_path / "other"), f"writes into that run folder; --out {tmp_path / 'other'} "
                                                       "names another place: drop --out")):
        r = invoke("run", "--resume", folder, *opt, "-q")
        assert (r.exit_code, r.output) == (2, f"Error: --resume {folder} {says}\n")
    assert (folder / "results.json").read_bytes() == before and not (tmp_path / "other").exists()
    for same in (("--shard", "1/2"), ("--out", tmp_path), ()):
        assert invoke("run", "--resume", folder, *same, "-q").exit_code == 0


def test_a_shard_that_holds_no_case_says_so_and_exits_0(tmp_path):
    """A CI matrix wider than the selection: a shard with none of its cases was `the filters select no
    case`, exit 2, no folder, and the merge of the matrix then refused the missing shard. It is a run
    of its own that says it had nothing to do (not a pass), and the shards merge."""
    from parity.run.cases import Filters, load_sweep
    from parity.run.shard import shard_index
    n = 8
    cases = load_sweep("smoke", Filters(["unary.neg"], ["f32"], ["contiguous", "transposed"], ["normal"]))
    used = {shard_index(c.id, n) for c in cases}
    empty = min(set(range(n)) - used) + 1
    for k in range(1, n + 1):
        r = invoke(*RUN, "--levels", "cpu", "-q", "--shard", f"{k}/{n}", "--out", tmp_path / str(k))
        assert r.exit_code == 0, r.output
    head = (f"⚠️ parity: shard {empty}/{n} holds none of the {len(cases)} selected cases — nothing to run in this job; "
            "`parity merge` the shards for the run's verdict")
    o = outputs(tmp_path / str(empty))
    assert o["md"] == f"## {head}" and o["badge"] == "EMPTY SHARD" and o["junit"] == ("empty-shard", "skipped")
    r = invoke("merge", *[next((tmp_path / str(k)).iterdir()) for k in range(1, n + 1)], "-o", tmp_path / "m.json")
    assert r.exit_code == 0 and f"{len(cases)} rows from {n} file(s): cpu {len(cases)} pass" in r.output, r.output
    assert "empty_shard_of" not in json.loads((tmp_path / "m.json").read_text())["meta"]


def test_runs_into_one_out_in_the_same_second_get_their_own_folders(tmp_path):
    folders = {run_folder(tmp_path, "smoke") for _ in range(3)}
    assert len(folders) == 3 and all(f.is_dir() for f in folders)
    (tmp_path / "file").write_text("")
    with pytest.raises(Exception, match="is a file, not a folder"):
        run_folder(tmp_path / "file", "smoke")


def test_two_concurrent_runs_keep_both_results(tmp_path):
    cmd = [sys.executable, "-m", "parity", *RUN, "--levels", "cpu", "-q", "--out", str(tmp_path)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    folders = sorted(p for p in tmp_path.iterdir())
    assert len(folders) == 2 and all((f / "results.json").is_file() for f in folders)


def test_an_internal_error_exits_3_with_its_traceback_in_a_file(tmp_path, monkeypatch):
    import parity.run.engine

    def broken(*a, **k):
        raise RuntimeError("planted")
    monkeypatch.setattr(parity.run.engine, "run_cases", broken)
    r = CliRunner().invoke(main, [*RUN, "--levels", "cpu", "--out", str(tmp_path)])
    assert r.exit_code == 3
    assert r.stderr.startswith("parity internal error: RuntimeError: planted (traceback: ")
    (saved,) = tmp_path.glob("parity-error-*.txt")
    assert "RuntimeError: planted" in saved.read_text()


def _planted(*a, **k):
    raise RuntimeError("planted")


@pytest.mark.parametrize("args,where", [
    (["report", "{r}"], "parity.render.markdown.render"),
    (["report", "{r}", "--format", "html"], "parity.render.html.render"),
    (["merge", "{r}", "-o", "{tmp}/m.json"], "parity.cli.bench.merge_results"),
    (["diff", "{r}", "{r}"], "parity.render.diff.diff"),
    (["baseline", "update", "{r}", "-o", "{tmp}/k.toml"], "parity.render.baseline.update"),
    (["list"], "parity.run.cases.select_ops"), (["doctor"], "parity.run.doctor.doctor"),
    (["coverage"], "parity.suite.coverage.coverage"),
])
def test_an_internal_error_in_any_command_exits_3_with_its_traceback_in_a_file(tmp_path, monkeypatch, args, where):
    """Only `run` had the exit-3 handler: anywhere else a bug was a traceback and exit 1 (`a case
    failed`, as CI reads it). The `parity` group turns it into exit 3 and a parity-error-*.txt in the
    temp folder (these commands have no report folder), named in one line."""
    import importlib
    import tempfile
    from parity.run.results import Results
    r = tmp_path / "r.json"
    Results.from_rows([{"case_id": "unary.neg/f32/contiguous/normal/s0", "op": "unary.neg", "level": "cpu",
                        "verdict": "pass"}], {"sweep": "smoke"}).to_json(r)
    module, name = where.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, _planted)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    res = CliRunner().invoke(main, [a.format(r=r, tmp=tmp_path) for a in args])
    assert res.exit_code == 3, res.output
    (saved,) = (tmp_path / "tmp").glob("parity-error-*.txt")
    assert res.stderr == f"parity internal error: RuntimeError: planted (traceback: {saved}); please report it\n"
    assert "RuntimeError: planted" in saved.read_text() and "Traceback" not in res.output


def test_ctrl_c_in_any_command_exits_130_not_1(tmp_path, monkeypatch):
    """click answered Ctrl-C with `Aborted!` and exit 1: a failed case, to CI."""
    import parity.render.markdown

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    from parity.run.results import Results
    r = tmp_path / "r.json"
    Results.from_rows([{"case_id": "unary.neg/f32/contiguous/normal/s0", "op": "unary.neg", "level": "cpu",
                        "verdict": "pass"}], {"sweep": "smoke"}).to_json(r)
    monkeypatch.setattr(parity.render.markdown, "render", interrupted)
    res = CliRunner().invoke(main, ["report", str(r)])
    assert res.exit_code == 130 and res.stderr.strip() == "interrupted (Ctrl-C)"


def test_sigterm_writes_the_reports_exits_143_and_leaves_no_process(tmp_path):
    mark = uuid.uuid4().hex
    env = {**os.environ, "PARITY_TEST_MARK": mark, "PARITY_PREPARE_JOBS": "2"}     # the preparation pool on
    p = subprocess.Popen([sys.executable, "-m", "parity", "run", "--sweep", "pr", "--levels", "cpu", "--out",
                          str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob("*/results.partial.jsonl")):
        time.sleep(0.2)
    time.sleep(2)
    p.send_signal(signal.SIGTERM)
    out = p.communicate(timeout=60)[0]
    assert p.returncode == 143, out
    assert "stopped early: interrupted after" in out and "resume with:\n  parity run --resume " in out
    (folder,) = tmp_path.iterdir()
    assert (folder / "results.json").is_file() and (folder / "summary.md").read_text().startswith("## ⏹️ parity:")
    time.sleep(1)
    assert _marked(mark) == [], "processes left running after SIGTERM"


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries the mark (the run and every process it started)."""
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"PARITY_TEST_MARK={mark}".encode() in env.read_bytes():
                out.append(int(env.parent.name))
        except OSError:
            continue
    return out


def test_time_and_gpus_without_a_gpu_level_say_they_are_ignored(tmp_path):
    r = CliRunner().invoke(main, [*RUN, "--levels", "cpu", "--time", "--gpus", "all", "-q",
                                                  "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[:2] == ["--time: no GPU level runs here, so nothing is timed",
                                         "--gpus all: no GPU level runs here; ignored"]


def _gpu() -> bool:
    from conftest import HAS_GPU
    return HAS_GPU


def test_the_header_names_the_suites_the_levels_that_ran_read():
    """A run of the cuda level alone (--cuda-src) read the CUDA suite, not the bundled HIP folder."""
    from parity.render.outcome import suites_line
    cuda = {"hip_src": "backends/hip", "cuda_src": "candle/src",
            "levels": [{"level": "cuda", "available": True}, {"level": "hip-on-nvidia", "available": False}]}
    assert suites_line(cuda) == "CUDA suite `candle/src`"
    both = dict(cuda, levels=[{"level": "cuda", "available": True}, {"level": "hip-on-nvidia", "available": True}])
    assert suites_line(both) == "HIP suite `backends/hip` · CUDA suite `candle/src`"
    assert suites_line(dict(cuda, levels=[{"level": "cpu", "available": True}])) == "no suite ran (reference levels only)"


def test_baselined_failures_are_said_and_never_counted_as_passes():
    """A baseline over every failure of a port whose file does not compile gave `compiled — 0/1 kernels
    compile`, and one over a GPU run `14/14 cases pass` with 5 of them xfail: the headline counts
    passes only and says how many failures the baseline accepted."""
    import pandas as pd

    from parity.render.outcome import decide
    gpu = {"level": "hip-on-nvidia", "available": True}
    rows = [{"case_id": f"unary.neg/f32/c{i}", "op": "unary.neg", "level": "hip-on-nvidia", "kernel": "uneg_f32",
             "verdict": "xfail" if i < 5 else "pass"} for i in range(14)]
    o = decide(pd.DataFrame(rows), {"levels": [gpu], "planned_rows": 14})
    assert (o.status, o.headline) == ("pass", "parity: 9/14 cases pass on hip-on-nvidia — 1 kernel executed · "
                                              "5 known failures accepted by the baseline (xfail)")
    # a baseline over every failure is no verdict on anything: never pass or compiled (a port with no kernel
    # of the catalog, its 16 `missing` cases baselined, said `compiled` and ✅ `0/16 cases pass`, exit 0)
    static = [dict(r, level="amd-static", verdict="xfail", raw_verdict="missing") for r in rows]
    o = decide(pd.DataFrame(static), {"levels": [dict(gpu, level="amd-static")], "planned_rows": 14})
    assert (o.status, o.exit_code, o.proves) == ("nothing", 2, [])
    assert o.headline == ("parity: nothing verified — no case passed or compiled on amd-static · "
                          "14 known failures accepted by the baseline (xfail)")
    run = [dict(r, verdict="xfail", raw_verdict="missing") for r in rows]
    o = decide(pd.DataFrame(run), {"levels": [gpu], "planned_rows": 14})
    assert (o.status, o.kernels_executed) == ("nothing", 0) and "no case passed or compiled on hip-on-nvidia" in o.headline
    both = run + [dict(r, level="amd-static", verdict="compiled") for r in rows]
    o = decide(pd.DataFrame(both), {"levels": [gpu, dict(gpu, level="amd-static")], "planned_rows": 28})
    assert o.status == "compiled" and o.headline.startswith("parity: compiled, not executed — 1/1 kernels compile")
    assert "(amd-static); hip-on-nvidia ran them and passed none (every case a known failure)" in o.headline
    assert [p.split(":")[0] for p in o.proves] == ["amd-static"]    # hip-on-nvidia verified nothing


def test_reference_failures_beside_a_port_score_are_in_the_headline():
    """A declared kernel's reference that raised (16 reference-errors on cpu) beside 8 compiled kernels:
    the headline gave the port's score alone, `8 compile`, and exit 1 with no word of why."""
    import pandas as pd

    from parity.render.outcome import decide
    static = [{"case_id": f"vec.axpy/f32/c{i}", "op": "vec.axpy", "family": "vec", "level": "amd-static",
               "kernel": "axpy_f32", "verdict": "compiled"} for i in range(4)]
    ref = [dict(r, level="cpu", verdict="reference-error") for r in static[:3]] + [dict(static[3], level="cpu",
                                                                                          verdict="pass")]
    levels = [{"level": "amd-static", "available": True}, {"level": "cpu", "available": True}]
    o = decide(pd.DataFrame(static + ref), {"levels": levels, "planned_rows": 8})
    assert o.status == "fail" and o.exit_code == 1
    assert o.headline.endswith(" · 3 failing on cpu, the reference"), o.headline


def test_strict_stale_entries_are_said_not_counted_as_cases_that_do_not_compile():
    """--strict over a baseline whose 16 entries now compile said `0 compile, 1 wrong · 0/16 cases compile`:
    they compile; what fails is the baseline, and the headline says so (still exit 1)."""
    import pandas as pd

    from parity.render.outcome import decide
    rows = [{"case_id": f"unary.exp/f32/c{i}", "op": "unary.exp", "family": "unary", "level": "amd-static",
             "kernel": "uexp_f32", "verdict": "xpass-strict"} for i in range(16)]
    o = decide(pd.DataFrame(rows), {"levels": [{"level": "amd-static", "available": True}], "planned_rows": 16})
    assert (o.status, o.exit_code) == ("fail", 1)
    assert o.headline == ("parity: ported 1/1 kernels (100%) · 1 compile · 16/16 cases compile · 16 cases the baseline "
                          "expects to fail compiled (xpass-strict: stale entries) · compile checks only (amd-static), "
                          "nothing executed")


def test_a_level_a_stopped_run_never_reached_is_not_said_to_have_run():
    """Interrupted during cpu, before amd-static's first case: the level table said `amd-static | ran`."""
    from parity.render import markdown
    from parity.run.results import Results
    rows = [{"case_id": "unary.exp/f32/c0", "op": "unary.exp", "level": "cpu", "verdict": "pass"}]
    levels = [{"level": "cpu", "available": True}, {"level": "amd-static", "available": True}]
    text = markdown.render(Results.from_rows(rows, {"levels": levels, "interrupted": True, "planned_rows": 32}))
    assert "| cpu | ran |  |" in text and "| amd-static | not reached (the run stopped) |  |" in text
    text = markdown.render(Results.from_rows(rows, {"levels": levels[:1], "planned_rows": 1}))
    assert "| cpu | ran |  |" in text


def test_a_baselined_failure_counts_as_what_it_was_in_the_port_score():
    """Beside a new failure, 167 baselined kernels still missing or not compiling counted as `ported
    288/289 · 288 compile`: a baselined row is judged by its own verdict (accepted, not fixed)."""
    import pandas as pd

    from parity.render.outcome import decide

    def rows(op, kernel, verdict, raw=None):
        return [{"case_id": f"{op}/f32/c{i}", "op": op, "family": "unary", "level": "amd-static", "kernel": kernel,
                 "verdict": verdict, **({"raw_verdict": raw} if raw else {})} for i in range(4)]
    t = pd.DataFrame(rows("unary.exp", "uexp_f32", "xfail", "missing") + rows("unary.neg", "uneg_f32", "compiled")
                     + rows("unary.abs", "uabs_f32", "missing") + rows("unary.sin", "usin_f32", "xfail", "compile-error"))
    o = decide(t, {"levels": [{"level": "amd-static", "available": True}], "planned_rows": 16})
    assert o.status == "fail" and o.headline.startswith(
        "parity: ported 2/4 kernels (50%) · 1 compile, 1 does not compile (0 causes) · 4/16 cases compile · "
        "2 not ported"), o.headline


def test_cases_the_host_refuses_are_no_kernel_executed():
    """min/argmax of an empty tensor are refused by Candle's host before any launch: right, so such
    a case passes, but a port whose every selected case is one (--layouts empty, a narrow --since or
    shard) ran none of its kernels: nothing verified, exit 2, never a green pass; mixed with launched
    cases, only the launched ones' kernels count as executed."""
    from parity.executors.cpu import CpuExecutor
    from parity.ops.base import ExecResult
    from parity.render import outcome
    from parity.run.cases import Filters, load_sweep
    from parity.run.engine import run_case
    from parity.run.results import Results

    class Port(CpuExecutor):                      # the emulation as an executing level's subject
        level = "hip-on-nvidia"

    class EmptyPort(Port):
        def run(self, launch):
            return ExecResult("missing", message=f"no kernel {launch.kernel} in the suite")

    meta = {"levels": [{"level": "hip-on-nvidia", "available": True, "reason": "", "device": "x"}]}
    refused = load_sweep("smoke", Filters(ops=["reduce.min", "reduce.argmax"], layouts=["empty"]))
    rows = [run_case(c, EmptyPort()) for c in refused]
    assert {r["verdict"] for r in rows} == {"pass"} and all(r["not_launched"] for r in rows)
    o = outcome.of(Results.from_rows(rows, meta))
    assert (o.status, o.exit_code, o.kernels_executed) == ("nothing", 2, 0)
    assert o.headline == (f"parity: nothing verified — no kernel ran on hip-on-nvidia: its {len(rows)} cases are all "
                          "ones the host refuses before any launch (those pass; the port's kernels are not reached)")
    from parity.render import findings, junit
    res = Results.from_rows(rows, meta)
    assert findings.of(res).scoreboard == []            # was: 14/14 kernels at parity (100%)
    xml = junit.render(res)
    assert xml.count("<skipped message=\"expected error, not launched: ") == len(rows)
    launched = load_sweep("smoke", Filters(ops=["reduce.min"], layouts=["row100"]))
    rows += [run_case(c, Port()) for c in launched]
    o = outcome.of(Results.from_rows(rows, meta))
    assert (o.status, o.kernels_executed) == ("pass", len({k for c in launched for k in c.kernels}))


def test_cases_not_run_on_a_level_that_ran_are_counted_in_the_headline():
    """Unavailable rows (a case no launch can express) are neither passed nor failed: left out of
    'N/N cases pass' without a word, a run whose fifth of cases never ran read as 100%."""
    from parity.render import outcome
    from parity.run.results import Results
    rows = [{"case_id": f"unary.neg/f32/c{i}/normal/s0", "op": "unary.neg", "kernel": "uneg_f32",
             "family": "unary", "level": "hip-on-nvidia", "verdict": v, "message": m} for i, (v, m) in
            enumerate([("pass", ""), ("pass", ""), ("unavailable", "k.hip: compiler timed out after 8 s\nmore")])]
    meta = {"levels": [{"level": "hip-on-nvidia", "available": True, "reason": "", "device": "x"}]}
    o = outcome.of(Results.from_rows(rows, meta))
    assert (o.status, o.headline) == ("pass", "parity: 2/2 cases pass on hip-on-nvidia — 1 kernel executed · 1 case "
                                              "not run (hip-on-nvidia: unavailable, neither passed nor failed; e.g. "
                                              "k.hip: compiler timed out after 8 s)")


def test_a_reader_that_goes_away_or_an_ascii_locale_changes_no_exit_code(tmp_path):
    """`parity run | head -1` stopped the run at the next print (BrokenPipeError: exit 1, no report);
    a locale that cannot encode ✅ or — turned every finished run into exit 3."""
    args = [sys.executable, "-m", "parity", "run", "--sweep", "smoke", "--levels", "cpu", "--ops", "unary.neg"]
    p = subprocess.Popen([*args, "--out", str(tmp_path / "pipe")], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    p.stdout.close()                              # the reader is gone
    assert p.wait(timeout=120) == 0
    (folder,) = (tmp_path / "pipe").iterdir()
    assert (folder / "results.json").is_file() and (folder / "summary.md").is_file()
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}
    r = subprocess.run([*args, "--out", str(tmp_path / "ascii")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "parity: reference only" in r.stdout and "?" in r.stdout
