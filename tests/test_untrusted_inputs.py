"""Issue #29: untrusted ports and damaged files. parity writes nowhere it was not asked to, never
hangs on a FIFO, and answers bad input with one line (exit 2), never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import main

KERNEL = 'extern "C" __global__ void uneg_f32(const size_t n, const float *x, float *y) {}\n'


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _one_line_error(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    assert needle in lines[0], lines[0]


# ------------------------------------------------------------------- 1. suite discovery
def _planted_suite(tmp_path: Path, escape: Path) -> Path:
    """A suite whose source includes an absolute path and a ../ path that do not exist, under
    `escape` (a folder outside the suite, the cache and the temp folder)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    deep = "../" * 12
    (suite / "k.hip").write_text(textwrap.dedent(f'''\
        #include "{escape}/abs/x.h"
        #include <{deep}{str(escape).lstrip("/")}/rel/y.h>
        #include "../../../../planted/z.h"
        ''') + KERNEL)
    return suite


def _discover_in_subprocess(suite: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    code = ("import sys; from parity.suite.scan import discover; s = discover(sys.argv[1]); "
            "print(sorted(s.kernels)); print(s.notes)")
    return subprocess.run([sys.executable, "-c", code, str(suite)], capture_output=True, text=True,
                          timeout=timeout, env=env)



def test_a_suite_folder_named_like_an_option_is_discovered(tmp_path, monkeypatch):
    """`--hip-src=-dashsrc`: cpp read `-dashsrc/k.hip` as an option, and every kernel was `missing`."""
    from parity.suite.scan import discover
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-dashsrc").mkdir()
    (tmp_path / "-dashsrc" / "k.hip").write_text("#define NEG_F32 uneg_f32\n" + KERNEL.replace("uneg_f32", "NEG_F32"))
    s = discover("-dashsrc")
    assert (sorted(s.kernels), str(s.kernels["uneg_f32"].file), s.notes) == (["uneg_f32"], "-dashsrc/k.hip", [])

@pytest.mark.parametrize("name", ['u"+x+".hip', 'back\\slash.hip', 'a"b\\"c.hip'])
def test_a_source_named_with_quotes_or_backslashes_is_attributed_whole(tmp_path, name):
    """cpp escapes `"` and `\\` in its line markers: `u"+x+".hip` was attributed to `u\\`, and the repro
    script printed for it did not parse (its path pasted between double quotes)."""
    import ast

    from parity.run.repro import snippet
    from parity.suite.scan import discover
    (tmp_path / name).write_text("#define NEG_F32 uneg_f32\n" + KERNEL.replace("uneg_f32", "NEG_F32"))
    s = discover(tmp_path)
    assert s.kernels["uneg_f32"].file == tmp_path / name and s.file_of("uneg_f32") == tmp_path / name
    code = snippet(tmp_path / "c.npz", s.file_of("uneg_f32"), "hip-on-nvidia", "uneg_f32")
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "open"]
    assert [c.args[0].value for c in calls] == [str(tmp_path / name)]


def test_discovery_writes_no_stub_outside_its_temp_folder(tmp_path):
    escape = tmp_path / "outside"
    escape.mkdir()
    suite = _planted_suite(tmp_path, escape)
    work = tmp_path / "cwd"
    work.mkdir()
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    before = {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c",
                        "import sys; from parity.suite.scan import discover; s = discover(sys.argv[1]); "
                        "print(sorted(s.kernels)); print(s.notes)", str(suite)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=work)
    assert p.returncode == 0, p.stderr
    after = {p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "cache")}
    assert after == before                       # nothing under outside/, cwd/ or the suite
    assert not (tmp_path / "planted").exists()
    assert "uneg_f32" in p.stdout                # the declaration is still found
    assert "is not stubbed (an absolute or ../ name outside the include folders): preprocessed without it" in p.stdout


def test_parity_compile_does_not_pass_against_planted_stub_headers(tmp_path):
    """Before the fix, discovery left empty headers at the absolute path and `parity compile` said ok."""
    escape = tmp_path / "outside"
    escape.mkdir()
    suite = _planted_suite(tmp_path, escape)
    invoke("coverage", "--hip-src", str(suite))
    assert list(escape.iterdir()) == []


def test_a_fifo_in_the_suite_folder_is_refused_up_front_not_read(tmp_path):
    """A FIFO anywhere in the suite's folder could be reached by a computed #include (which no include
    scan follows): discovery refuses the suite before any cpp runs, naming the file (exit 2)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    os.mkfifo(suite / "pipe.h")
    (suite / "k.hip").write_text('#define FH "pipe.h"\n#include FH\n' + KERNEL)
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache")}
    p = _discover_in_subprocess(suite, env, timeout=60)   # a read of the FIFO would block: TimeoutExpired
    assert p.returncode == 1 and "SuiteError" in p.stderr, p.stderr
    assert f"{suite / 'pipe.h'} is a FIFO, not a regular file: refused (not opened)" in p.stderr
    r = invoke("coverage", "--hip-src", str(suite))
    _one_line_error(r, f"Error: {suite / 'pipe.h'} is a FIFO, not a regular file: refused (not opened): remove it "
                       "from the suite's folders")


def test_an_absolute_device_include_is_refused(tmp_path):
    from parity.suite.includes import include_walk
    src = tmp_path / "k.hip"
    src.write_text('#include "/dev/zero"\n' + KERNEL)
    headers, refused = include_walk(src)
    assert headers == [] and refused == [f"{src}: #include '/dev/zero': /dev/zero is a character device, "
                                         "not a regular file: refused (not opened)"]


def test_compile_source_refuses_a_source_reaching_a_fifo(tmp_path):
    from parity.suite.compile_cache import compile_source
    os.mkfifo(tmp_path / "pipe.h")
    src = tmp_path / "k.hip"
    src.write_text('#include "pipe.h"\n' + KERNEL)
    r = compile_source(src, [sys.executable], [], cache_root=tmp_path / "cache")
    assert not r.ok and "pipe.h is a FIFO" in r.error.message


def test_stub_path_never_leaves_the_stub_folder(tmp_path):
    from parity.suite.scan import stub_path
    assert stub_path(tmp_path, "/etc/x.h") is None
    assert stub_path(tmp_path, "../../../../../x.h") is None
    assert stub_path(tmp_path, "../../x.h") == tmp_path / "i" / "i" / "x.h"
    assert stub_path(tmp_path, "a/b.h").is_relative_to(tmp_path)


PORT = Path(__file__).parent / "fixtures" / "ports" / "candle-rocm-wip"


def _port_copy(tmp_path: Path, line: str, into: str = "unary.hip") -> Path:
    """The fixture port with `line` added after the first #include of `into`."""
    import shutil
    dest = tmp_path / "port"
    shutil.copytree(PORT, dest)
    f = dest / into
    lines = f.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("#include")) + 1
    f.write_text("".join(lines[:at] + [line + "\n"] + lines[at:]))
    return dest


def _coverage_summary(folder: Path) -> dict:
    import json
    r = CliRunner().invoke(main, ["coverage", "--hip-src", str(folder), "--json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)["hip"]["summary"]


def test_include_directives_are_read_as_cpp_reads_them():
    """`%:include`, a directive split by a backslash-newline or with a comment inside, and a computed
    include of a plain macro are includes too: the FIFO check once missed each of them."""
    from parity.suite.includes import include_directives
    text = ('%:include "a.h"\n#\\\ninclude "b.h"\n# /* c */ include <c.h>\n#define FH "d.h"\n#include FH\n'
            '// #include "not.h"\n/* #include "not2.h" */\n#include_next <e.h>\n')
    got = [(i.line, i.name, i.computed) for i in include_directives(text)]
    assert got == [(1, "a.h", ""), (2, "b.h", ""), (4, "c.h", ""), (6, "d.h", "FH"), (9, "e.h", "")]


@pytest.mark.parametrize("where", ["unary.hip", "hip_compat.h"])
def test_an_include_not_found_keeps_the_files_kernels_and_names_the_include(tmp_path, where):
    """Before: an absolute include that does not exist here made cpp stop, and the file's macro-stamped
    kernels were lost without a word (905 missing, 85 present instead of 111). It is preprocessed
    without that include now, in a private folder (nothing written where the name points), with one
    note naming it (one line for every source sharing the header)."""
    missing = tmp_path / "outside" / "hip" / "hip_runtime.h"
    port = _port_copy(tmp_path, f'#include "{missing}"', where)
    assert _coverage_summary(port) == _coverage_summary(PORT)
    r = CliRunner().invoke(main, ["coverage", "--hip-src", str(port)])
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1 and f"#include '{missing}'" in notes[0] and "preprocessed without it" in notes[0], notes
    assert not (tmp_path / "outside").exists()


def test_a_literal_include_of_a_device_is_left_out_not_read(tmp_path):
    port = _port_copy(tmp_path, '#include "/dev/zero"')
    assert _coverage_summary(port) == _coverage_summary(PORT)
    r = CliRunner().invoke(main, ["coverage", "--hip-src", str(port)])
    assert "#include '/dev/zero' (unary.hip:6) refused: /dev/zero is a character device" in r.stderr


def test_since_selects_the_kernels_of_a_file_with_an_unresolved_include(tmp_path):
    """Before: `--since HEAD` after adding such an include found no kernel in the changed file and said
    "nothing to run"."""
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(PORT, repo)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "port"]):
        subprocess.run(git + cmd, cwd=repo, check=True, capture_output=True)
    f = repo / "unary.hip"
    f.write_text(f.read_text().replace('#include "hip_compat.h"\n',
                                       '#include "hip_compat.h"\n#include "/opt/rocm/include/hip/hip_runtime.h"\n'))
    r = invoke("run", "--levels", "cpu", "--hip-src", str(repo), "--since", "HEAD", "--ops", "unary.exp",
               "--out", str(tmp_path / "out"), "-q")
    assert r.exit_code == 0, r.output
    assert "nothing to run" not in r.output and "cases x 1 level(s)" in r.output
    assert "note: " in r.stderr and "/opt/rocm/include/hip/hip_runtime.h" in r.stderr


def _never_ending_suite(tmp_path: Path, target: str, sources: int = 3) -> Path:
    """A suite whose every source includes a header with a computed include of `target` spelled by
    token pasting (no include scan resolves it: only cpp's limits stop it)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    a, b = target[:len(target) // 2], target[len(target) // 2:]
    (suite / "common.h").write_text(f'#define CAT(a, b) a##b\n#define STR(x) #x\n#define XSTR(x) STR(x)\n'
                                    f'#include XSTR(CAT({a},{b}))\n')
    for i in range(sources):
        (suite / f"k{i}.hip").write_text('#include "common.h"\n' + KERNEL.replace("uneg_f32", f"k{i}"))
    return suite


def test_a_cpp_that_never_finishes_fails_fast_naming_the_source(tmp_path, monkeypatch):
    """Before: a FIFO reached by a computed include cost the full cpp timeout (120 s) for every
    source, then every kernel was `missing` with no reason. Now the first source's timeout ends
    discovery: exit 2, one line naming it."""
    import time

    from parity.suite import preprocess
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    suite = _never_ending_suite(tmp_path, str(fifo))
    monkeypatch.setattr(preprocess, "CPP_TIMEOUT_S", 2)
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    t0 = time.monotonic()
    r = invoke("coverage", "--hip-src", str(suite))
    assert time.monotonic() - t0 < 2 * 2                # one timeout, not one per source
    _one_line_error(r, f"Error: preprocessing {suite / 'k0.hip'} did not finish in 2 s — an include that never ends "
                       "(FIFO/device)?")


def test_a_computed_include_of_dev_zero_is_stopped_by_the_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    suite = _never_ending_suite(tmp_path, "/dev/zero", sources=2)
    r = invoke("coverage", "--hip-src", str(suite))
    _one_line_error(r, f"Error: preprocessing {suite / 'k0.hip'} ran out of memory")


def test_coverage_stopped_by_sigterm_leaves_no_temporary_folder(tmp_path):
    """Before: SIGTERM during discovery killed parity with /tmp/parity-stubs-* left behind (and cpp
    still blocked on the FIFO). Now it stops like Ctrl-C: the folder is removed, cpp ends with it,
    exit 143."""
    import signal
    import time
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    suite = _never_ending_suite(tmp_path, str(fifo), sources=1)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PARITY_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp)}
    p = subprocess.Popen([sys.executable, "-m", "parity", "coverage", "--hip-src", str(suite)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not list(tmp.glob("parity-stubs-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.glob("parity-stubs-*")), "discovery never started"
    time.sleep(0.3)                                     # cpp is blocked on the FIFO now
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert "Traceback" not in err and "interrupted (SIGTERM)" in err
    assert list(tmp.iterdir()) == []
    import errno
    with pytest.raises(OSError) as e:                   # no cpp is left reading the FIFO: a writer finds
        os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)      # no reader (ENXIO)
    assert e.value.errno == errno.ENXIO


# ------------------------------------------------------------------- 2. sweep and chain files
def _sweep(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return p


@pytest.mark.parametrize("text,error", [
    ('[[group]]\nops = ["unary.neg"]\nlayout = ["transposed"]\n',
     "group 1: unknown key 'layout'; did you mean 'layouts'?"),
    ('[[group]]\nops = []\n', "group 1: ops: empty list (leave the key out for every one)"),
    ('[[group]]\nops = ["unary.neg"]\ndtypes = []\n', "group 1: dtypes: empty list"),
    ('[[group]]\nops = ["unary.neg"]\nlayouts = []\n', "group 1: layouts: empty list"),
    ('[[group]]\nops = ["unary.neg"]\nlayouts = ["transposd"]\n',
     "group 1: layouts: unknown layout 'transposd'; did you mean 'transposed'"),
    ('seeds = "12"\n[[group]]\nops = ["unary.neg"]\n', "seeds: must be a list of non-negative integers, not '12'"),
    ('[[group]]\nops = ["unary.neg"]\nshape = [4, 4]\n', "group 1: unknown key 'shape'"),
    ('[[group]]\nops = ["unary.neg"]\nsize = 4\n', "group 1: unknown key 'size'"),
    ('group = 5\n', "group: a sweep needs one or more [[group]] tables, not 5"),
    ('[[group]]\nops = [1, 2]\n', "group 1: ops: must be a list of names (strings), not [1, 2]"),
    ('[[group]]\nops = ["unary.nope"]\n', "group 1: ops: unknown op 'unary.nope'; did you mean"),
    ('[[group]]\nops = ["unary.neg"]\nvalues = ["specal"]\n',
     "group 1: values: unknown value class 'specal'; did you mean 'special'?"),
    ('[[group]]\nops = ["unary.neg"]\nseeds = [-1]\n', "group 1: seeds: must be a list of non-negative integers"),
    ('descripton = "x"\n[[group]]\nops = ["unary.neg"]\n', "unknown key 'descripton'; did you mean 'description'?"),
    ('[[group]]\nops = ["unary.neg"]\n[[group]]\nops = ["unary.neg"]\nlayouts = "transposed"\n',
     "group 2: layouts: must be a list of names (strings), not 'transposed'"),
])
def test_bad_sweep_file_is_one_line_naming_file_group_and_key(tmp_path, text, error):
    from parity.run.cases import load_sweep
    path = _sweep(tmp_path, text)
    with pytest.raises(ValueError) as e:
        load_sweep(str(path))
    assert str(e.value).startswith(f"{path}: {error}"), str(e.value)
    assert "\n" not in str(e.value)


def test_bad_sweep_file_exits_2_with_one_line(tmp_path):
    path = _sweep(tmp_path, '[[group]]\nops = ["unary.neg"]\nlayout = ["transposed"]\n')
    r = invoke("run", "--out", str(tmp_path / "out"), "--levels", "cpu", "--sweep", str(path), "--ops", "unary.neg")
    _one_line_error(r, f"{path}: group 1: unknown key 'layout'; did you mean 'layouts'?")
    assert not (tmp_path / "out").exists()


def test_sweep_naming_a_folder_is_one_line_exit_2(tmp_path):
    folder = tmp_path / "sweeps.toml"
    folder.mkdir()
    for arg in (str(folder), str(tmp_path)):
        r = invoke("run", "--out", str(tmp_path / "out"), "--levels", "cpu", "--sweep", arg, "--ops", "unary.neg")
        _one_line_error(r, "is a folder, not a sweep file (.toml)")


def test_sweep_that_is_a_fifo_is_refused_not_read(tmp_path):
    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)
    r = invoke("run", "--out", str(tmp_path / "out"), "--levels", "cpu", "--sweep", str(fifo), "--ops", "unary.neg")
    _one_line_error(r, f"sweep {fifo} is a FIFO, not a regular file: refused (not opened)")


def test_a_valid_sweep_with_aliases_still_runs(tmp_path):
    path = _sweep(tmp_path, '''\
        description = "tiny"
        seeds = [0]
        [[group]]
        ops = ["unary.neg"]
        dtypes = ["fp8", "f32"]
        layouts = ["transposed"]
        values = ["normal"]
        exclude = ["*/f32/*"]
        ''')
    from parity.run.cases import load_sweep
    assert [c.id for c in load_sweep(str(path))] == ["unary.neg/f8_e4m3/transposed/normal/s0"]


@pytest.mark.parametrize("args,line", [
    (["--layouts", "transposd"], "unknown layout 'transposd'; did you mean 'transposed'"),
    (["--dtypes", "f17"], "unknown dtype 'f17'; did you mean 'f16'?"),
    (["--ops", "unary.nope"], "unknown op 'unary.nope'; did you mean 'unary.neg'"),
    (["--values", "specal"], "unknown value class 'specal'; did you mean 'special'?"),
    (["--ops", "chain.atention"], "unknown chain 'chain.atention'; did you mean 'chain.attention'?"),
])
def test_misspelled_filter_is_a_did_you_mean_line(tmp_path, args, line):
    r = invoke("run", "--out", str(tmp_path), "--levels", "cpu", *(["--ops", "unary.neg"] if args[0] != "--ops" else []),
               *args)
    _one_line_error(r, line)
    assert len(r.output) < 200                   # not the 170-name list


@pytest.mark.parametrize("spec,error", [
    ({"tensors": {"x": {"shape": [4, -2]}}, "steps": [{"op": "unary.exp", "in": {"x": "x"}, "out": "y"}]},
     "tensor x: shape: must be a non-empty list of positive integers, not [4, -2]"),
    ({"tensors": {"x": {"shape": [4], "shap": 1}}, "steps": []}, "tensor x: unknown key 'shap'; did you mean 'shape'?"),
    ({"tensors": {"x": {"shape": [4]}}, "steps": [{"op": "unary.exp", "in": {"x": "x"}, "outt": "y"}]},
     "step 1 (unary.exp): unknown key 'outt'; did you mean 'out'?"),
    ({"tensors": {"x": {"shape": [4]}}, "steps": [{"op": "unary.exp", "in": {"x": "x.reshape(-4)"}, "out": "y"}]},
     "step 1 (unary.exp): in.x: .reshape(-4): sizes must be positive"),
    ({"tensors": {"x": {"shape": [4]}}, "steps": [{"op": "unary.exp", "in": {"x": "x.narrow(0,1)"}, "out": "y"}]},
     "step 1 (unary.exp): in.x: .narrow(0,1) takes 3 arguments"),
    ({"dtypes": [], "tensors": {"x": {"shape": [4]}}, "steps": []}, "dtypes: must be a non-empty list"),
    ({"tensors": {"x": {"shape": [4]}}, "steps": [{"op": 5, "out": "y"}]}, "step 1 (5): op: must be a non-empty string"),
])
def test_bad_chain_is_one_line_naming_tensor_or_step_and_key(spec, error):
    from parity.chains import ChainError
    from parity.chains.format import parse_chain
    with pytest.raises(ChainError) as e:
        parse_chain(spec)
    assert str(e.value) == error or str(e.value).startswith(error), str(e.value)
    assert "\n" not in str(e.value)


def test_bad_chain_file_names_the_file(tmp_path):
    from parity.chains import ChainError, load_chain
    p = tmp_path / "c.toml"
    p.write_text('[tensors]\nx = { shape = [0] }\n[[steps]]\nop = "unary.exp"\nin = { x = "x" }\nout = "y"\n')
    with pytest.raises(ChainError, match=r"c.toml: chain c: tensor x: shape: must be a non-empty list of positive "
                                         r"integers"):
        load_chain(p)


CHAIN = '[tensors]\nx = {{ shape = {shape}{dtype} }}\n[[steps]]\nop = "{op}"\nin = {{ x = "{operand}" }}\nout = "y"\n'


@pytest.mark.parametrize("fields,error", [
    (dict(op="unary.nosuch"), "step 1 (unary.nosuch): op: unknown op 'unary.nosuch'; did you mean"),
    (dict(operand="x.reshape(5,5)"), "step 1 (unary.exp): in.x = 'x.reshape(5,5)': reshape(5, 5) of 16 elements"),
    (dict(operand="x.transpose(0,9)"),
     "step 1 (unary.exp): in.x = 'x.transpose(0,9)': dim 9 out of range for a rank-2 tensor (4, 4)"),
    (dict(dtype=', dtype = "f99"'), "tensor x: dtype: unknown dtype 'f99'"),
    (dict(shape="[100000, 100000, 100000]"),
     "tensor x: shape: [100000, 100000, 100000] is 1,000,000,000,000,000 elements; a chain tensor may have at most "
     "67,108,864"),
])
def test_a_chain_that_cannot_build_is_refused_at_load_naming_file_chain_and_key(tmp_path, fields, error):
    """Before: each of these chains loaded, then failed inside the run (exit 3: ChainError, numpy's
    AxisError, KeyError, MemoryError). Every dtype's geometry is built when the file is loaded now."""
    from parity.chains import ChainError, load_chain
    p = tmp_path / "bad.toml"
    p.write_text(CHAIN.format(**{"shape": "[4, 4]", "dtype": "", "op": "unary.exp", "operand": "x", **fields}))
    with pytest.raises(ChainError) as e:
        load_chain(p)
    assert str(e.value).startswith(f"{p}: chain bad: {error}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_bad_chain_file_is_exit_2_naming_it(tmp_path, monkeypatch):
    import shutil

    from parity import chains
    from parity.core import resources
    folder = tmp_path / "chains"
    shutil.copytree(resources.chain_dir(), folder)
    (folder / "bad.toml").write_text(CHAIN.format(shape="[4, 4]", dtype="", op="unary.exp", operand="x.transpose(0,9)"))
    monkeypatch.setattr(resources, "chain_dir", lambda: folder)
    chains.chains.cache_clear()
    try:
        r = invoke("run", "--levels", "cpu", "--ops", "chain.*", "--out", str(tmp_path / "out"))
        _one_line_error(r, f"Error: {folder / 'bad.toml'}: chain bad: step 1 (unary.exp): in.x = 'x.transpose(0,9)'")
        r = invoke("repro", "chain.bad/f32/s0", "--level", "cpu")
        _one_line_error(r, f"{folder / 'bad.toml'}: chain bad: step 1 (unary.exp)")
    finally:
        chains.chains.cache_clear()
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------- 3. huge layouts on the cpu level
HUGE = "unary.exp/f32/huge/normal/s0"


def _no_building(monkeypatch):
    """Any build of a case's inputs fails the test: the guard must answer before."""
    from parity.ops.elementwise import ElementwiseSpec

    def boom(*a, **k):
        raise AssertionError("a huge case's inputs were built")
    monkeypatch.setattr(ElementwiseSpec, "prepare", boom)


def test_huge_layout_on_cpu_is_unavailable_with_the_numbers_before_building(monkeypatch):
    from parity.executors.cpu import CpuExecutor
    from parity.run import engine
    from parity.run.cases import Case
    monkeypatch.setattr(engine, "available_memory", lambda: 8 * 2**30)
    _no_building(monkeypatch)
    row = engine.run_case(Case.parse(HUGE), CpuExecutor())
    assert row["verdict"] == "unavailable"
    assert row["message"] == ("layout huge (2147484677 elements x 2 operands) needs about 48.0 GiB on the cpu "
                              "level; 8.0 GiB available (MemAvailable): not run (run it on a GPU level, or on a "
                              "machine with more memory)")


def test_huge_layout_runs_on_cpu_when_memory_allows(monkeypatch):
    from parity.run import engine
    from parity.run.cases import Case
    monkeypatch.setattr(engine, "available_memory", lambda: 2**40)
    assert engine.memory_refusal(Case.parse(HUGE), "cpu") is None
    monkeypatch.setattr(engine, "available_memory", lambda: 2**30)
    assert engine.memory_refusal(Case.parse(HUGE), "hip-on-nvidia") is None     # the guard is the cpu level's
    assert engine.memory_refusal(Case.parse("unary.exp/f32/transposed/normal/s0"), "cpu") is None


def test_repro_of_a_huge_case_exits_2_before_building(monkeypatch, tmp_path):
    from parity.run import engine
    monkeypatch.setattr(engine, "available_memory", lambda: 8 * 2**30)
    _no_building(monkeypatch)
    monkeypatch.chdir(tmp_path)
    r = invoke("repro", HUGE)
    _one_line_error(r, f"Error: {HUGE}: layout huge (2147484677 elements x 2 operands) needs about 48.0 GiB")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- 4. parity repro
@pytest.mark.parametrize("case_id,line", [
    ("unary.exp/f32/transposd/normal/s0",
     "unknown layout 'transposd' in case id 'unary.exp/f32/transposd/normal/s0'; did you mean 'transposed'"),
    ("unary.exq/f32/transposed/normal/s0", "unknown op 'unary.exq' in case id 'unary.exq/f32/transposed/normal/s0'; "
                                           "did you mean 'unary.exp'"),
    ("unary.exp/f23/transposed/normal/s0", "unknown dtype 'f23' in case id 'unary.exp/f23/transposed/normal/s0'; "
                                           "did you mean 'f32'?"),
    ("unary.exp/f32/transposed/specal/s0", "unknown value class 'specal' in case id "
                                           "'unary.exp/f32/transposed/specal/s0'; did you mean 'special'?"),
    ("unary.exp/f32/transposed/normal/s0@bogus=1",
     "case id 'unary.exp/f32/transposed/normal/s0@bogus=1': unary.exp takes no parameters (drop @bogus=...)"),
    ("affine/f32/transposed/normal/s0@mull=2,add=0",
     "unknown parameter 'mull' in case id 'affine/f32/transposed/normal/s0@mull=2,add=0'; did you mean 'mul'?"),
    ("affine/f32/transposed/normal/s0@mul",
     "malformed parameter 'mul' in case ID 'affine/f32/transposed/normal/s0@mul'; expected @name=number,..."),
    ("unary.exp/f32/transposed/normal/sx", "malformed case ID 'unary.exp/f32/transposed/normal/sx'"),
    ("chain.atention/f32/s0", "unknown chain 'chain.atention' in case id 'chain.atention/f32/s0'; "
                              "did you mean 'chain.attention'?"),
])
def test_repro_bad_case_id_names_the_wrong_part(tmp_path, monkeypatch, case_id, line):
    monkeypatch.chdir(tmp_path)
    r = invoke("repro", case_id)
    _one_line_error(r, "Error: " + line)
    assert list(tmp_path.iterdir()) == []


def test_repro_unknown_level_is_a_did_you_mean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line_error(invoke("repro", "unary.exp/f32/transposed/normal/s0", "--level", "cpuu"),
                    "Error: unknown level 'cpuu'; did you mean 'cpu'?")


def test_repro_writes_under_reports_repro_not_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("repro", "affine/f32/transposed/normal/s0@add=1,mul=2", "--no-snippet", "--level", "cpu")
    assert r.exit_code == 2 and "the reference alone" in r.output, r.output
    assert not (tmp_path / "case.npz").exists()
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()] == \
        [Path("reports/repro/affine_f32_transposed_normal_s0@add=1,mul=2.npz")]
    r = invoke("repro", "unary.exp/f32/transposed/normal/s0", "--no-snippet", "--level", "cpu", "-o",
               str(tmp_path / "a" / "b.npz"))
    assert r.exit_code == 2 and (tmp_path / "a" / "b.npz").is_file()


def test_repro_output_names_the_npz_written_and_a_folder_is_refused(tmp_path, monkeypatch):
    """Before: `-o out/x` wrote out/x.npz (numpy appends it) while `# wrote` and the snippet's np.load
    named out/x, and `-o folder` wrote folder.npz beside it, exit 0."""
    from parity.run import repro
    monkeypatch.chdir(tmp_path)
    case = "unary.exp/f32/transposed/normal/s0"
    r = invoke("repro", case, "--level", "cpu", "-o", "out/x")
    assert r.exit_code == 2, r.output                  # (cpu: the reference alone)
    assert "z = np.load('out/x.npz')" in r.stdout and "# wrote out/x.npz (kernel " in r.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["x.npz"]
    (tmp_path / "d").mkdir()
    named = Path("d") / repro.default_output(case).name
    _one_line_error(invoke("repro", case, "-o", "d"), f"Error: -o d is a folder; name the .npz to write, e.g. {named}")
    (tmp_path / "y.npz").mkdir()                    # what -o y would write: refused like -o y.npz
    _one_line_error(invoke("repro", case, "-o", "y"), "Error: --output y.npz is a folder, not a regular file: refused")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "out", "y.npz"] and not any((tmp_path / "d").iterdir())
    chain = repro.run("chain.attention/bf16/s0", "cpu", out=tmp_path / "c")
    assert chain.npz == tmp_path / "c.npz" and chain.npz.is_file() and f"--output {chain.npz}" in chain.snippet


def test_repro_default_output_cannot_escape_its_folder(tmp_path):
    from parity.run.repro import default_output
    for cid in ("../../../etc/x/s0", "/abs/x/y/z/s0", "..", "a\\b/c"):
        out = default_output(cid, tmp_path)
        assert out.parent == tmp_path and not out.name.startswith(".")


# ------------------------------------------------------------------- 5. FIFOs, devices and sockets on the command line
def _results(path: Path) -> Path:
    from parity.run.results import Results
    rows = [{"case_id": "unary.neg/f32/contiguous/normal/s0", "op": "unary.neg", "level": "cpu", "verdict": "pass"}]
    Results.from_rows(rows, {"sweep": "smoke", "levels": [{"level": "cpu", "available": True}],
                             "reference_only_requested": True}).to_json(path)
    return path


def _nodes(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a socket and (where this user may make one) a character device like /dev/null, made
    under tmp_path: never a real /dev entry."""
    import socket
    import stat
    out = {"a FIFO": tmp_path / "fifo"}
    os.mkfifo(out["a FIFO"])
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "sock"))
    s.close()
    out["a socket"] = tmp_path / "sock"
    try:
        os.mknod(tmp_path / "nulldev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out["a character device"] = tmp_path / "nulldev"
    except (PermissionError, OSError):
        pass                                        # not root: FIFO and socket only
    return out


def _kinds(nodes: dict[str, Path]) -> dict[Path, int]:
    return {p: os.lstat(p).st_mode for p in nodes.values()}


@pytest.fixture
def no_hang():
    """A command that blocks on a FIFO fails the test in 20 s instead of hanging the suite."""
    import signal

    def late(signum, frame):
        raise TimeoutError("the command blocked (a FIFO opened?)")
    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_no_output_path_replaces_a_device_fifo_or_socket(tmp_path, no_hang):
    """merge -o, report -o and baseline update -o write by rename: over /dev/null (as root in CI) that
    turned the device into a regular file. Each refuses, exit 2, one line, the node untouched."""
    a = _results(tmp_path / "a.json")
    nodes = _nodes(tmp_path)
    before = _kinds(nodes)
    for what, node in nodes.items():
        for args in (["merge", a, "-o", node], ["report", a, "-o", node], ["report", a, "--format", "html", "-o", node],
                     ["baseline", "update", a, "-o", node],
                     ["repro", "unary.neg/f32/contiguous/normal/s0", "-o", node]):
            r = invoke(*map(str, args))
            _one_line_error(r, f"--output {node} is {what}, not a regular file: refused (not replaced)")
    assert _kinds(nodes) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.json", *(p.name for p in nodes.values())])


def test_results_files_write_by_rename_refuse_a_special_file_below_the_cli(tmp_path):
    """The one writer (parity.core.files.write_text) refuses too, for a caller that skipped the option check."""
    from parity.core import files
    from parity.render import baseline as bl
    from parity.run.results import Results
    nodes = _nodes(tmp_path)
    before = _kinds(nodes)
    res = Results.from_json(_results(tmp_path / "a.json"))
    for what, node in nodes.items():
        with pytest.raises(files.FileRefused, match=f"{node} is {what}, not a regular file: refused"):
            res.to_json(node)
        with pytest.raises(files.FileRefused):
            bl.dump(bl.Baseline([]), node)
    assert _kinds(nodes) == before
    assert not list(tmp_path.glob(".*.tmp"))


def _run_folder(tmp_path: Path, name: str, **special: str) -> Path:
    """A run folder whose files named in `special` ({file: 'fifo'}) are FIFOs."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "run.json").write_text('{"sweep": "smoke", "ops": "unary.neg", "levels": "cpu"}')
    for f in special:
        (folder / f).unlink(missing_ok=True)
        os.mkfifo(folder / f)
    return folder


def test_every_file_read_from_the_command_line_refuses_a_fifo_or_device(tmp_path, no_hang):
    """results files, baselines, sweeps, port and profile files, equivalent-mutants files, snapshots, run
    folders: a FIFO blocked the read forever, /dev/zero ran out of memory. Each is one line, exit 2."""
    a = _results(tmp_path / "a.json")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    ff = str(fifo)
    out = ["--out", str(tmp_path / "out")]
    run = ["run", "--levels", "cpu", "--ops", "unary.neg", *out]
    cases = [(["report", ff], f"results file {ff} is a FIFO"), (["diff", ff, a], f"results file {ff} is a FIFO"),
             (["diff", a, ff], f"results file {ff} is a FIFO"), (["merge", ff, a, "-o", tmp_path / "m.json"], ff),
             (["baseline", "update", ff, "-o", tmp_path / "k.toml"], ff), (["report", a, "--baseline", ff], ff),
             ([*run, "--baseline", ff], f"--baseline {ff} is a FIFO"), ([*run, "--port", ff], f"--port {ff} is a FIFO"),
             ([*run, "--profile", ff], ff), ([*run, "--hip-src", ff], f"--hip-src {ff} is a FIFO, not a folder"),
             ([*run, "--resume", ff], f"--resume {ff} is a FIFO"),
             (["mutate", "--list", "--equivalent", ff], f"--equivalent {ff} is a FIFO"),
             (["coverage", "--drift", "--cuda-src", tmp_path, "--snapshot", ff], f"--snapshot {ff} is a FIFO"),
             (["report", "/dev/zero"], "results file /dev/zero is a character device"),
             (["diff", a, "/dev/zero"], "/dev/zero is a character device"),
             ([*run, "--baseline", "/dev/zero"], "--baseline /dev/zero is a character device")]
    for args, needle in cases:
        _one_line_error(invoke(*map(str, args)), needle)
    runs = tmp_path / "runs"
    runs.mkdir()
    inside = [(["report", _run_folder(runs, "r1", **{"results.json": "fifo"})], "results.json is a FIFO"),
              (["run", "--resume", _run_folder(runs, "r2", **{"run.json": "fifo"})], "run.json is a FIFO"),
              (["run", "--resume", _run_folder(runs, "r3", **{"results.partial.jsonl": "fifo"})],
               "results.partial.jsonl is a FIFO")]
    for args, needle in inside:
        r = invoke(*map(str, args))
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, r.output


def test_the_one_reader_never_blocks_on_a_fifo_swapped_in_after_the_check(tmp_path, monkeypatch, no_hang):
    """parity.core.files.read_bytes opens with O_NONBLOCK and checks the open file itself: a FIFO put
    there between the check and the open is refused, not waited on; a file over the cap is refused."""
    from parity.core import files
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "check", lambda *a, **k: None)
    with pytest.raises(files.FileRefused, match="is a FIFO, not a regular file: refused"):
        files.read_bytes(fifo, "baseline")
    monkeypatch.undo()
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(files.FileRefused, match="is 2,000 bytes, over parity's limit of 1,000"):
        files.read_bytes(big, "results file", limit=1000)
    assert files.read_bytes(big, limit=2000) == b" " * 2000


# ------------------------------------------------------------------- 6. options: numbers, lists, folders
@pytest.mark.parametrize("args,line", [
    (["run", "--gpus", "abc"], "Error: --gpus 'abc': expected 'all' or a number of GPUs (e.g. 2)"),
    (["run", "--gpus", "0"], "Error: --gpus '0': expected 'all' or a number of GPUs, at least 1"),
    (["run", "--case-timeout", "-1"], "Error: --case-timeout -1: must be a number of seconds greater than 0"),
    (["run", "--case-timeout", "nan"], "Error: --case-timeout nan: must be a number of seconds greater than 0"),
    (["run", "--case-timeout", "0"], "Error: --case-timeout 0: must be a number of seconds greater than 0"),
    (["run", "--case-timeout", "soon"], "Error: --case-timeout soon: not a number; must be a number of seconds "
                                        "greater than 0"),
    (["bench", "--case-timeout", "inf"], "Error: --case-timeout inf: must be a number of seconds greater than 0"),
    (["run", "--wave", ""], "Error: --wave '': empty selection list (name one or more, comma separated, or leave "
                            "the option out)"),
    (["run", "--ops", ""], "Error: --ops '': empty selection list"),
    (["run", "--dtypes", ","], "Error: --dtypes ',': empty selection list"),
    (["run", "--levels", " , "], "Error: --levels ' , ': empty selection list"),
    (["list", "--ops", ""], "Error: --ops '': empty selection list"),
    (["coverage", "--ops", ","], "Error: --ops ',': empty selection list"),
    (["run", "--out", ""], "Error: --out is empty (''): give a value, or leave the option out"),
    (["run", "--hip-src", ""], "Error: --hip-src is empty (''): give a value, or leave the option out"),
    (["run", "--shard", ""], "Error: --shard is empty (''): give a value, or leave the option out"),
    (["mutate", "--list", "--max", "-1"], "Error: --max -1: must be a whole number, at least 1"),
    (["mutate", "--list", "--max", "0"], "Error: --max 0: must be a whole number, at least 1"),
    (["mutate", "--list", "--min-score", "5"], "Error: --min-score 5: must be a fraction of mutants killed, from 0 "
                                               "to 1 (0.95 = 95%)"),
    (["mutate", "--list", "--min-score", "-0.1"], "Error: --min-score -0.1: must be a fraction"),
    (["diff", "a.json", "b.json", "--slowdown", "nan"], "Error: --slowdown nan: must be greater than 1"),
    (["diff", "a.json", "b.json", "--min-ms", "-1"], "Error: --min-ms -1: must be a number of milliseconds"),
])
def test_a_bad_option_value_is_one_line_naming_the_option(tmp_path, monkeypatch, args, line):
    monkeypatch.chdir(tmp_path)
    r = invoke(*args, *(["--levels", "cpu", "--out", "o"] if args[0] == "run" and "--out" not in args
                        and "--levels" not in args else []))
    _one_line_error(r, line)
    assert not (tmp_path / "o").exists()


def test_an_out_that_is_not_a_folder_says_what_it_is(tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    for name, what in (("file", "a regular file"), ("dangling", "a dangling symbolic link (its target does not "
                                                                "exist)"), ("fifo", "a FIFO")):
        r = invoke("run", "--levels", "cpu", "--ops", "unary.neg", "--out", str(tmp_path / name))
        _one_line_error(r, f"Error: --out {tmp_path / name} is {what}, not a folder")
    assert not (tmp_path / "nowhere").exists()


def test_list_selects_what_run_selects_chains_included():
    """`parity run --ops chain.attention` runs the chain; `parity list --ops chain.attention` said
    unknown op. Both go through run.cases.select_ops now, and list names the chain's step kernels."""
    import json
    r = invoke("list", "--ops", "chain.attention", "--json")
    assert r.exit_code == 0, r.output
    (op,) = json.loads(r.output)
    assert op["op"] == "chain.attention" and {"softmax_f32", "gemm_f16", "badd_bf16"} <= set(op["kernels"])
    r = invoke("list", "--ops", "chain.*,unary.neg", "--json")
    names = [o["op"] for o in json.loads(r.output)]
    assert "unary.neg" in names and "chain.llama-block" in names
    _one_line_error(invoke("list", "--ops", "chain.atention"), "unknown chain 'chain.atention'")
