"""parity mutate (#17): operators on snippets, sampling, classification, score and reports with a
fake runner, the CLI's --list and no-GPU answer; one GPU test (run on the device with -m gpu)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import main
from parity.mutate.operators import mask, mutants_of_text, sample
from parity.mutate.report import html_page, markdown, score, summary, write
from parity.mutate.run import Outcome, evaluate


def ops(text: str, operator: str) -> list[tuple[str, str]]:
    return [(m.original, m.replacement) for m in mutants_of_text(text, "k.hip", [operator])]


def mutated(text: str, operator: str) -> list[str]:
    return [m.apply(text) for m in mutants_of_text(text, "k.hip", [operator])]


def test_mask_blanks_comments_strings_and_directives_but_keeps_define_bodies():
    text = '#include "a.h"\nint x = a < b; // c < d\nconst char* s = "e < f"; /* g < h */\n#define M(a) a < 1\n'
    code = mask(text)
    assert len(code) == len(text) and code.count("\n") == text.count("\n")
    assert "c < d" not in code and "e < f" not in code and "g < h" not in code and "include" not in code
    assert "a < b" in code and "a < 1" in code and "define" not in code
    assert ops(text, "relational-boundary") == [("<", "<="), ("<", "<=")]


def test_relational_equality_logical():
    assert mutated("if (i < n && j >= m) {}", "relational-boundary") == \
        ["if (i <= n && j >= m) {}", "if (i < n && j > m) {}"]
    assert mutated("b = x == y;", "equality") == ["b = x != y;"]
    assert mutated("b = p && q;", "logical") == ["b = p || q;"]
    assert ops("template <class T> f(Num<T>::C x) { a->b; c >> 2; }", "relational-boundary") == []


def test_arithmetic_sign_only_in_index_arithmetic():
    assert mutated("y = x[i + 1];", "arithmetic-sign") == ["y = x[i - 1];"]
    assert mutated("usize off = base + k;", "arithmetic-sign") == ["usize off = base - k;"]
    assert ops("float y = a + b;", "arithmetic-sign") == []


def test_off_by_one_and_ternary():
    assert mutated("for (i = 0; i < n; ++i) {}", "off-by-one") == ["for (i = 0; i < n - 1; ++i) {}"]
    assert mutated("r = c ? f(a, b) : g[1];", "ternary-swap") == ["r = c ? g[1] : f(a, b);"]
    assert ops("r = c ? a : d ? b : e;", "ternary-swap") == [("b : e", "e : b")]   # the outer one: skipped
    assert ops("r = pk::f(x);", "ternary-swap") == []


def test_stride_index_nan_rounding_truncation():
    assert mutated("s = strides[k * num_dims + d];", "stride-index") == ["s = strides[k + num_dims + d];"]
    assert mutated("s = dims[d];", "stride-index") == ["s = dims[0];"]
    assert ops("__shared__ C shr[kMaxBlock]; T a[N];", "stride-index") == []
    assert mutated("if (isnan(x) || is_nan(f(y))) return;", "nan-check") == \
        ["if (false || is_nan(f(y))) return;", "if (isnan(x) || false) return;"]
    assert ops("PK_DEV bool is_nan(float x) { return x != x; }", "nan-check") == []
    assert mutated("u = (u + 0x7fffu) >> 16;", "rounding-bias") == ["u = (u + 0x8000u) >> 16;"]
    assert mutated("size_t i = g; usize n;", "index-truncation") == \
        ["unsigned int i = g; usize n;", "size_t i = g; unsigned int n;"]
    assert mutated("f(pk::usize numel, pk::usize n)", "index-truncation") == \
        ["f(unsigned int numel, pk::usize n)", "f(pk::usize numel, unsigned int n)"]   # qualified: whole


def test_mutant_records_position_and_one_line_diff():
    [m] = mutants_of_text("int a;\n  if (i == n) {}\n", "x.hip", ["equality"])
    assert (m.file, m.line, m.column, m.original, m.replacement, m.operator) == ("x.hip", 2, 9, "==", "!=", "equality")
    assert m.diff() == "x.hip:2: if (i == n) {}  ->  if (i != n) {}"


def test_sampling_is_deterministic_and_spread_over_files():
    ms = [m for f in ("a.hip", "b.hip", "c.h") for m in mutants_of_text("x = a < b && c == d;\n" * 5, f)]
    one, again = sample(ms, 6, seed=3), sample(ms, 6, seed=3)
    assert one == again and len(one) == 6
    assert {m.file for m in one} == {"a.hip", "b.hip", "c.h"}
    assert sample(ms, 6, seed=4) != one
    assert [m for m in ms if m in one] == one                 # in the deterministic order
    assert sample(ms, None) == ms


def _fake(verdicts: dict[str, str]):
    def run_mutant(m):
        v = verdicts[m.operator]
        return Outcome(m, v, case="unary.neg/f32/contiguous/normal/s0" if v == "killed" else "", case_verdict="fail"
                       if v == "killed" else "")
    return run_mutant


def test_classification_score_and_reports(tmp_path: Path):
    ms = mutants_of_text("if (i < n && dims[d] == 0) { y = x[i + 1]; }\n", "k.hip")
    verdicts = {"relational-boundary": "killed", "logical": "killed", "off-by-one": "survived",
                "stride-index": "equivalent", "equality": "compile-error", "arithmetic-sign": "survived"}
    seen = []
    outs = evaluate(ms, _fake(verdicts), seen.append)
    assert seen == outs and [o.mutant for o in outs] == ms
    assert score(outs) == pytest.approx(2 / 4)                 # equivalent and compile-error not counted
    s = summary(outs, {"k.hip": "unary"}, {"sweep": "pr", "level": "hip-on-nvidia"})
    assert s["counts"] == {"killed": 2, "survived": 2, "equivalent": 1, "compile-error": 1}
    assert {v["operator"] for v in s["survivors"]} == {"off-by-one", "arithmetic-sign"}
    assert all(v["family"] == "unary" and v["hint"] for v in s["survivors"])
    md = markdown(s)
    assert "# Mutation score: 50.0%" in md and "1 equivalent" in md and "k.hip:1" in md
    paths = write(s, tmp_path)
    assert json.loads(paths[0].read_text())["score"] == 0.5 and "50.0%" in paths[2].read_text()
    assert score([Outcome(ms[0], "equivalent")]) is None
    assert "Where the time went" not in md                  # (no runner timings in this meta)
    slow = [Outcome(ms[0], "killed", seconds=30.0, cases_run=3, phases={"compile": 20.0, "wait": 4.0, "run": 6.0,
                                                                         "sources": 2}),
            Outcome(ms[1], "survived", seconds=90.0, cases_run=800, phases={"compile": 10.0, "run": 80.0})]
    meta = {"sweep": "pr", "level": "hip-on-nvidia", "elapsed_s": 100.0, "jobs": 2, "runners": 1, "compile_s": 30.0,
            "wait_s": 4.0, "run_s": 86.0, "cases_run": 803}
    md = markdown(summary(slow, {}, meta))
    assert ("30 s compiling, 4 s waiting for one of 1 runners, 86 s running 803 cases" in md
            and md.index("| 90.0 | survived | 800 | compile 10 s, run 80 s |") < md.index("| 30.0 | killed | 3 |"))
    assert "compile 20 s, wait 4 s, run 6 s, 2 source(s)" in md
    assert "30 s compiling, 4 s waiting for one of 1 runners, 86 s running 803 cases" in html_page(summary(slow, {}, meta))


def test_cli_list_needs_no_gpu():
    r = CliRunner().invoke(main, ["mutate", "--list", "--max", "12", "--sweep", "smoke"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    [total] = [ln for ln in lines if ln.startswith("12 mutants over ")]
    assert "common.h" in total and not any("index-truncation" in ln.split()[0] for ln in lines[:12])
    assert any(ln.startswith("not sampled, out of the sweep's reach: ") and "past 2^32 elements" in ln for ln in lines)


def test_cli_names_the_profile_of_a_suite_it_cannot_score():
    """A declared port's suite got `no suite file defines a kernel of the selected cases`, as if it had none."""
    decl = Path(__file__).parents[1] / "docs" / "examples" / "declared-port" / "hip"
    r = CliRunner().invoke(main, ["mutate", "--list", "--max", "3", "--hip-src", str(decl)])
    assert r.exit_code == 2 and r.output.strip() == (
        f"Error: parity mutate scores suites in Candle's kernel ABI; {decl} has profile vecops (declared in "
        f"{decl / 'parity-kernels.toml'}): check its kernels with parity run")


def test_cli_without_gpu_level_says_so_in_one_line(monkeypatch):
    from parity.executors.base import Availability
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    monkeypatch.setattr(HipOnNvidiaExecutor, "availability", lambda self: Availability(False, "no GPU here"))
    r = CliRunner().invoke(main, ["mutate", "--max", "2", "--sweep", "smoke"])
    assert r.exit_code == 2
    assert r.output.strip() == "Error: parity mutate needs a GPU level: hip-on-nvidia is unavailable (no GPU here)"


@pytest.mark.gpu
def test_gpu_known_killable_unary_mutant_is_killed(tmp_path: Path):
    """~5 mutants of the unary family (unary.h, compiled through unary_f32.hip) on hip-on-nvidia:
    swapping relu's arms is killed; dropping relu's NaN check is equivalent in f32 (the check is
    `N::nan_max && is_nan(x)`, nan_max false for f32: the compiler folds it away)."""
    from parity.run.cases import Filters, load_sweep
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    from parity.run.session import DEFAULT_HIP_SRC
    from parity.mutate.operators import mutants_of
    from parity.mutate.run import GpuRunner
    from parity.mutate.targets import targets
    from parity.core.resources import hip_mapping
    if not HipOnNvidiaExecutor().availability().available:
        pytest.skip("no hip-on-nvidia level")
    cases = [c for c in load_sweep("smoke", Filters(["unary.relu", "unary.neg", "unary.abs"])) if c.dtype == "f32"]
    files = {"unary.h": targets(DEFAULT_HIP_SRC, [hip_mapping()])["unary.h"]}
    ms = mutants_of(DEFAULT_HIP_SRC, ["unary.h"])
    relu = [m for m in ms if "OpRelu" in m.source_line]
    swap = [m for m in relu if m.operator == "ternary-swap"]
    nan = [m for m in relu if m.operator == "nan-check"]
    chosen = swap + nan + [m for m in ms if m.operator == "relational-boundary"][:3]
    runner = GpuRunner(DEFAULT_HIP_SRC, HipOnNvidiaExecutor, files, cases, jobs=4, runners=2)
    try:
        outs = evaluate(chosen, runner.run_mutant, workers=4)
    finally:
        runner.close()
    for o in outs:
        print(o.verdict, o.case, o.case_verdict, o.mutant.diff(), f"{o.seconds:.1f}s")
    assert outs[0].verdict == "killed" and outs[0].case.startswith("unary.relu/f32"), outs[0]
    assert outs[1].verdict == "equivalent", outs[1]
    assert all(o.verdict in ("killed", "survived", "equivalent") for o in outs)
    assert all(o.phases["sources"] >= 1 and o.phases["compile"] > 0 for o in outs), [o.phases for o in outs]


def test_evaluate_in_parallel_keeps_the_mutants_order():
    import threading
    import time
    ms = mutants_of_text("if (i < n && dims[d] == 0) { y = x[i + 1]; }\n", "k.hip")
    threads = set()

    def slow(m):
        threads.add(threading.get_ident())
        time.sleep(0.05 * (len(ms) - ms.index(m)))          # the first mutant finishes last
        return Outcome(m, "survived")
    seen = []
    outs = evaluate(ms, slow, seen.append, workers=len(ms))
    assert [o.mutant for o in outs] == ms and len(threads) > 1
    assert [o.mutant for o in seen][-1] == ms[0]             # reported as they finish


def test_spread_interleaves_case_classes():
    from parity.run.cases import Filters, load_sweep
    from parity.mutate.targets import spread
    cases = load_sweep("smoke", Filters(["unary.neg"]))
    out = spread(cases)
    assert sorted(c.id for c in out) == sorted(c.id for c in cases)
    first = out[:len({(c.op, c.dtype, c.layout, c.values) for c in cases})]
    assert len({(c.dtype, c.layout, c.values) for c in first}) == len(first)   # one of each class first
    mixed = spread(load_sweep("pr", Filters(["chain.*", "unary.elu"])))   # both with cases of depth 2
    n_chain = sum(c.op.startswith("chain.") for c in mixed)
    assert n_chain and all(c.op.startswith("chain.") for c in mixed[-n_chain:])   # the costly chains last


def test_header_mutant_compiles_only_the_sources_that_can_use_the_changed_definition(tmp_path: Path):
    """A header mutant compiles the sources that mention the changed definition, or a definition of
    the header that does (transitively), or whose other headers do; the others cannot contain its
    code. File-scope code, free operators and a definition nobody uses: every source. A comment
    naming a definition is no use of it."""
    from parity.mutate.targets import FileTarget, enclosing_name, source_order
    header = ("#pragma once\n// clamp_idx: ids past the end read the last\nnamespace pk {\n// f(x) here\nstruct Acc {\n  int v;\n};\n"
              "__device__ int clamp_idx(int i, int n) {\n  return i < n ? i : n - 1;\n}\n"
              "template <class T>\n__device__ T at(const T* p, int i, int n) {\n  return p[clamp_idx(i, n)];\n}\n"
              "__device__ int unused(int i) {\n  return i > 0 ? i : 0;\n}\n"
              "__device__ Acc operator+(Acc a, Acc b) {\n  return Acc{a.v + b.v};\n}\n"
              "#define APPLY(x) \\\n  ((x) < 0 ? 0 : (x))\n}\n")
    at = header.index("i < n")
    assert enclosing_name(header, at) == "clamp_idx"
    assert enclosing_name(header, header.index("clamp_idx(int")) == "clamp_idx"       # its head too
    assert enclosing_name(header, header.index("(x) < 0")) == "APPLY"
    assert enclosing_name(header, header.index("int v")) == "Acc"
    assert enclosing_name(header, header.index("a.v + b.v")) is None                   # a free operator
    assert enclosing_name(header, header.index("#pragma")) is None
    (tmp_path / "h.h").write_text(header)
    (tmp_path / "g.h").write_text('#include "h.h"\n#define GET(p, i) pk::clamp_idx(i, 8)\n')
    (tmp_path / "a.hip").write_text('#include "h.h"\nint a() { return 1; }\n')
    (tmp_path / "b.hip").write_text('#include "h.h"\nint b(int i) { return pk::clamp_idx(i, 3); }\n')
    (tmp_path / "c.hip").write_text('#include "h.h"\nint c(const int* p) { return pk::at(p, 4, 3); }\n')
    (tmp_path / "d.hip").write_text('#include "g.h"\nint d(int i) { return GET(0, i); }\n')
    srcs = ["a.hip", "b.hip", "c.hip", "d.hip"]
    t = FileTarget("h.h", tuple((s, frozenset({s[0]})) for s in srcs))
    assert source_order(t, srcs, header, at, tmp_path) == ["b.hip", "c.hip", "d.hip"]
    every = sorted(srcs)
    assert source_order(t, srcs, header, header.index("i > 0"), tmp_path) == every        # used by none
    assert source_order(t, srcs, header, header.index("a.v + b.v"), tmp_path) == every
    assert source_order(t, srcs, header, header.index("#pragma"), tmp_path) == every


def test_an_interrupted_evaluation_keeps_what_finished():
    ms = mutants_of_text("if (i < n && dims[d] == 0) { y = x[i + 1]; }\n", "k.hip")

    def run(m):
        if m is ms[2]:
            raise KeyboardInterrupt
        return Outcome(m, "killed")
    seen = []
    with pytest.raises(KeyboardInterrupt):
        evaluate(ms, run, seen.append, workers=1)
    assert [o.mutant for o in seen] == ms[:2]


@pytest.mark.skipif(not __import__("shutil").which("cc"), reason="needs a C compiler to make ELF objects")
def test_object_sections_name_the_kernels_a_mutant_changed(tmp_path: Path):
    """gcc's -ffunction-sections objects are laid out like a cubin: a section per function."""
    import subprocess
    from parity.mutate.objcode import changed_kernels, sections

    def obj(body_a: str, helper: str = "return x;") -> dict[str, str]:
        src = tmp_path / "k.c"
        src.write_text(f"__attribute__((noinline)) int helper(int x) {{ {helper} }}\n"
                       f"int kern_a(int x) {{ {body_a} }}\nint kern_b(int x) {{ return helper(x) * 3; }}\n")
        subprocess.run(["cc", "-O2", "-ffunction-sections", "-c", str(src), "-o", str(tmp_path / "k.o")], check=True)
        return sections((tmp_path / "k.o").read_bytes())
    kernels = frozenset({"kern_a", "kern_b"})
    base = obj("return x < 5 ? x : 5;")
    assert ".text.kern_a" in base and ".text.kern_b" in base
    assert changed_kernels(base, obj("return x < 5 ? x : 5;"), kernels) == frozenset()       # equivalent
    assert changed_kernels(base, obj("return x <= 5 ? x : 5;"), kernels) == frozenset()      # folds the same
    assert changed_kernels(base, obj("return x < 5 ? 5 : x;"), kernels) == {"kern_a"}
    assert changed_kernels(base, obj("return x < 5 ? x : 5;", "return x + 1;"), kernels) is None   # shared code
    assert sections(b"not an elf") == {"<whole object>": sections(b"not an elf")["<whole object>"]}


def test_index_truncation_is_out_of_reach_without_a_case_that_large():
    from parity.run.cases import load_sweep
    from parity.mutate.scope import largest_case, unreachable
    [narrow, *_] = mutants_of_text("usize i = g;\n", "k.hip", ["index-truncation"])
    [rel] = mutants_of_text("if (i < n) {}\n", "k.hip", ["relational-boundary"])
    pr = largest_case(load_sweep("pr"))
    huge = largest_case(load_sweep("huge"))
    assert pr < 2 ** 31 < huge < 2 ** 32
    assert "past 2^32 elements" in unreachable(narrow, pr) and unreachable(narrow, huge)   # unsigned: 2^32
    assert unreachable(rel, pr) == ""
    signed = __import__("dataclasses").replace(narrow, replacement="int")
    assert "2^31" in unreachable(signed, pr) and unreachable(signed, huge) == ""


def test_code_a_size_guard_runs_only_past_2_32_elements_is_out_of_reach():
    """`if (n <= 0xffffffffull) {32-bit} else {64-bit}`: the 64-bit arm and the guard's boundary
    change results only at that size (the bundled copy2d); the 32-bit arm is in reach."""
    from parity.mutate.scope import unreachable, wide_spans
    text = ("void f(usize n, T* d) {\n  if (n <= 0xffffffffull) {\n    d[i + 1] = 0;\n  } else {\n"
            "    d[j + 1] = 0;\n  }\n  if (m > 0x7fffffffu) {\n    d[k + 1] = 0;\n  }\n  d[q + 1] = 0;\n}\n")
    spans = wide_spans(text)
    out = [m for m in mutants_of_text(text, "k.hip") if m.operator != "index-truncation"
           and unreachable(m, 163835, spans)]
    assert sorted({m.line for m in out}) == [2, 5, 7, 8]
    assert all("past 2^32" in unreachable(m, 163835, spans) for m in out if m.line in (2, 5))
    assert all("past 2^31" in unreachable(m, 163835, spans) for m in out if m.line in (7, 8))
    assert not [m for m in mutants_of_text(text, "k.hip") if unreachable(m, 2 ** 32, spans)
                and m.operator != "index-truncation"]
    from parity.run.session import DEFAULT_HIP_SRC
    fill = (DEFAULT_HIP_SRC / "fill.hip").read_text()
    wide = [m for m in mutants_of_text(fill, "fill.hip") if m.operator != "index-truncation"
            and unreachable(m, 163835, wide_spans(fill))]
    assert {m.source_line.strip() for m in wide} == {"if (n <= 0xffffffffull) {",
                                                    "dst[r * dst_s + c] = src[r * src_s + c];"}


def test_argued_equivalents_are_not_counted_unless_killed(tmp_path: Path):
    from parity.mutate.scope import argued, load_argued
    [m] = mutants_of_text("if (!(v > F(-1))) return 0u;\n", "cast.hip", ["relational-boundary"])
    f = tmp_path / "eq.toml"
    f.write_text('[[equivalent]]\nfile = "cast.hip"\nline = "if (!(v > F(-1))) return 0u;"\n'
                 'mutated = "if (!(v >= F(-1))) return 0u;"\nwhy = "cvt.rzi.u32 saturates -1.0 to 0"\n')
    table = load_argued(f)
    got = argued(Outcome(m, "survived"), table)
    assert (got.verdict, got.message) == ("argued-equivalent", "cvt.rzi.u32 saturates -1.0 to 0")
    assert argued(Outcome(m, "killed", case="c"), table).verdict == "killed"      # the argument was wrong
    # a journal's outcome (--resume) is judged by the table as it is now
    assert argued(Outcome(m, "argued-equivalent", message="old"), table).message.startswith("cvt")
    assert (argued(Outcome(m, "argued-equivalent", message="old"), {}).verdict, ) == ("survived", )
    s = summary([got, Outcome(m, "killed")], {}, {"sweep": "pr", "level": "x"})
    assert s["score"] == 1.0 and s["argued"][0]["why"].startswith("cvt") and "Argued equivalent (1)" in markdown(s)
    assert load_argued(tmp_path / "absent.toml") == {}
    f.write_text('[[equivalent]]\nfile = "cast.hip"\nline = "x"\n')
    with pytest.raises(ValueError, match="lacks mutated, why"):
        load_argued(f)
    # an argument from PTX's conversions holds on hip-on-nvidia only: on amd the survivor is one
    entry = ('[[equivalent]]\nfile = "cast.hip"\nline = "if (!(v > F(-1))) return 0u;"\n'
             'mutated = "if (!(v >= F(-1))) return 0u;"\nwhy = "cvt.rzi.u32 saturates"\n')
    f.write_text(entry + 'level = "hip-on-nvidia"\n')
    assert argued(Outcome(m, "survived"), load_argued(f, "hip-on-nvidia")).verdict == "argued-equivalent"
    assert argued(Outcome(m, "survived"), load_argued(f, "amd")).verdict == "survived"
    f.write_text(entry + 'levle = "hip-on-nvidia"\n')           # a misspelt level held everywhere
    with pytest.raises(ValueError, match="unknown key 'levle'; did you mean 'level'"):
        load_argued(f, "amd")
    f.write_text(entry + 'level = "rocm"\n')
    with pytest.raises(ValueError, match="unknown level 'rocm'"):
        load_argued(f, "amd")


def test_a_case_failing_on_the_unmutated_suite_kills_nothing():
    from parity.run.cases import Filters, load_sweep
    from parity.executors.cpu import CpuExecutor
    from parity.mutate.run import run_cases_until_fail

    class Broken(CpuExecutor):                  # every case fails, mutant or not
        def run(self, launch):
            res = super().run(launch)
            return type(res)("crash", message="always") if res.status == "ok" else res
    [m, *_] = mutants_of_text("if (i < n) {}\n", "k.hip")
    cases = list({c.layout: c for c in load_sweep("smoke", Filters(["unary.neg"], dtypes=["f32"]))}.values())[:3]
    out = run_cases_until_fail(m, cases, Broken(), 60, __import__("time").perf_counter(), original_passes=lambda c: False)
    assert (out.verdict, out.cases_run) == ("survived", 3)
    out = run_cases_until_fail(m, cases, Broken(), 60, __import__("time").perf_counter(), original_passes=lambda c: c is cases[1])
    assert (out.verdict, out.case) == ("killed", cases[1].id)


def test_a_case_held_back_after_a_fault_kills_nothing():
    """After a crash on a (kernel, layout) path, the engine holds the path's next cases back
    (`not-run`): they never ran on the mutant, so they cannot kill it, even where the original
    passes them (the original's own crash on the first case is no kill either)."""
    from parity.run.cases import Filters, load_sweep
    from parity.executors.cpu import CpuExecutor
    from parity.mutate.run import run_cases_until_fail

    class Broken(CpuExecutor):
        def run(self, launch):
            res = super().run(launch)
            return type(res)("crash", message="always") if res.status == "ok" else res
    [m, *_] = mutants_of_text("if (i < n) {}\n", "k.hip")
    path = [c for c in load_sweep("smoke", Filters(["unary.neg"], dtypes=["f32"], layouts=["contiguous"]))][:3]
    out = run_cases_until_fail(m, path, Broken(), 60, __import__("time").perf_counter(),
                               original_passes=lambda c: c is not path[0])
    assert len(path) >= 2 and (out.verdict, out.cases_run) == ("survived", len(path))


def test_a_kill_mid_pipeline_leaves_the_worker_answering_its_own_launches():
    """run_cases_until_fail pipelines launches (engine.drive); when a case kills the mutant, the
    launches already queued in the worker are collected and dropped, so the next mutant on the
    same worker gets its own answers, not the leftovers."""
    from fakes_worker import FailsNeg
    from parity.run.cases import Filters, load_sweep
    from parity.run.engine import run_case
    from parity.executors.worker import IsolatedExecutor
    from parity.mutate.run import run_cases_until_fail
    [m, *_] = mutants_of_text("if (i < n) {}\n", "k.hip")
    abs_ = load_sweep("smoke", Filters(["unary.abs"]))[:4]
    neg = load_sweep("smoke", Filters(["unary.neg"], values=["normal"]))[:2]
    ex = IsolatedExecutor(FailsNeg, timeout_s=10.0)
    try:
        out = run_cases_until_fail(m, [*abs_[:2], neg[0], *abs_[2:], neg[1]], ex, 60, __import__("time").perf_counter())
        assert (out.verdict, out.case, out.cases_run) == ("killed", neg[0].id, 3)
        assert [run_case(c, ex)["verdict"] for c in abs_] == ["pass"] * 4
        out = run_cases_until_fail(m, abs_, ex, 60, __import__("time").perf_counter())
        assert (out.verdict, out.cases_run) == ("survived", 4)
    finally:
        ex.close()


def test_every_bundled_argument_names_a_mutant_the_suite_has():
    """backends/hip/mutants-equivalent.toml is matched by (file, line, mutated line): an entry whose
    line was edited since would silently argue nothing."""
    from parity.run.session import DEFAULT_HIP_SRC
    from parity.mutate.operators import mutants_of
    from parity.mutate.scope import EQUIVALENT_FILE, load_argued
    table = load_argued(DEFAULT_HIP_SRC / EQUIVALENT_FILE)
    files = sorted({f for f, _, _ in table})
    have = {(m.file, m.source_line.strip(), m.mutated_line().strip()) for m in mutants_of(DEFAULT_HIP_SRC, files)}
    assert len(table) >= 49 and not set(table) - have, sorted(set(table) - have)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("where", ["common.h|if (!is_nan(r)) return r;|nan-check",
                                   "structured.h|if (tid < h) buf[tid]|relational-boundary",
                                   "unary.h|return (x > C(0)) ? x : alpha|ternary-swap"])
def test_a_source_a_header_mutant_leaves_out_compiles_to_the_originals_ptx(tmp_path: Path, where: str):
    """The static source selection is sound: the smallest bundled source that source_order leaves
    out for a header mutant compiles (nvcc, the hip-on-nvidia flags, PTX) to exactly the original's.
    Mutants are named by their line's text (the first line holding it), not its number: headers grow."""
    import subprocess
    from parity.run.cases import load_sweep
    from parity.executors.hip_nvidia import HipOnNvidiaExecutor
    from parity.run.session import DEFAULT_HIP_SRC
    from parity.mutate.operators import mutants_of
    from parity.mutate.targets import cases_for, source_order, sources_needed, targets
    from parity.core.resources import hip_mapping
    file, text_of_line, op = where.split("|")
    suite = DEFAULT_HIP_SRC
    t = targets(suite, [hip_mapping()])[file]
    need = sources_needed(t, cases_for(t, load_sweep("pr")))
    [m, *_] = [m for m in mutants_of(suite, [file], [op]) if text_of_line in m.source_line]
    text = m.apply((suite / file).read_text())
    left_out = [s for s in need if s not in source_order(t, need, text, m.offset, suite)]
    assert left_out
    src = min(left_out, key=lambda s: (suite / s).stat().st_size)
    shutil.copytree(suite, tmp_path / "s")
    (tmp_path / "s" / file).write_text(text)
    tc = HipOnNvidiaExecutor(arch="90", compiler="nvcc").toolchain

    def ptx(path: Path) -> str:
        out = path.with_suffix(".ptx")
        p = subprocess.run(["nvcc", "-ptx", "-arch=sm_90", *tc.flags(path), "-x", "cu", str(path), "-o", str(out)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[:500]
        return out.read_text()
    shutil.copytree(suite, tmp_path / "o")
    assert ptx(tmp_path / "s" / src) == ptx(tmp_path / "o" / src), (where, src)


def test_each_outcome_says_where_its_time_went():
    """GpuRunner's outcomes carry their phases (seconds waiting for a runner and running cases;
    compiling and sources compiled on a compiling level), and the runner sums them."""
    from fakes_worker import SuiteCpu
    from parity.run.cases import Filters, load_sweep
    from parity.run.session import DEFAULT_HIP_SRC
    from parity.mutate.operators import mutants_of
    from parity.mutate.run import GpuRunner
    from parity.mutate.targets import targets
    from parity.core.resources import hip_mapping
    cases = [c for c in load_sweep("smoke", Filters(["unary.neg"])) if c.dtype == "f32"][:4]
    files = {"unary.h": targets(DEFAULT_HIP_SRC, [hip_mapping()])["unary.h"]}
    ms = mutants_of(DEFAULT_HIP_SRC, ["unary.h"])[:2]
    runner = GpuRunner(DEFAULT_HIP_SRC, SuiteCpu, files, cases, jobs=2, runners=1)
    try:
        outs = evaluate(ms, runner.run_mutant, workers=2)
    finally:
        runner.close()
    assert [(o.verdict, o.cases_run) for o in outs] == [("survived", 4)] * 2
    assert all(set(o.phases) == {"wait", "run"} and o.phases["run"] > 0 for o in outs), [o.phases for o in outs]
    assert runner.cases_run == 8
    assert abs(sum(o.phases["run"] for o in outs) - runner.seconds["run"]) < 0.01


def test_resume_runs_only_the_mutants_the_journal_lacks(monkeypatch, tmp_path: Path):
    """`--resume FOLDER` after an interrupted run: the journal's outcomes are kept and only the rest
    run (GpuRunner on a suite-shaped cpu level: every mutant survives); a journal from another
    sample, or a folder without one, is a one-line usage error."""
    import parity.run.levels
    from fakes_worker import SuiteCpu
    from parity.executors.base import Availability
    from parity.run.levels import Level
    from parity.run.session import DEFAULT_HIP_SRC
    monkeypatch.setattr(parity.run.levels, "make", lambda *a, **k: Level("cpu", Availability(True, device="cpu"), SuiteCpu()))
    args = ["mutate", "--sweep", "smoke", "--ops", "unary.neg", "--max", "4", "--jobs", "2", "--runners", "1",
            "--out", str(tmp_path)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    [folder] = tmp_path.glob("mutate-smoke-*")
    lines = (folder / "mutants.jsonl").read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[0]) == {"scope": {
        "sweep": "smoke", "ops": "unary.neg", "max": 4, "seed": 0, "level": "hip-on-nvidia",
        "hip_src": str(DEFAULT_HIP_SRC)}}
    (folder / "mutants.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])   # killed mid-line
    r = CliRunner().invoke(main, [*args, "--resume", str(folder)])
    assert r.exit_code == 0, r.output
    assert f"(2 from {folder}/mutants.jsonl, 2 this run)" in r.output
    assert json.loads((folder / "mutants.json").read_text())["meta"]["done"] == 4
    ids = [json.loads(ln)["mutant"] for ln in (folder / "mutants.jsonl").read_text().splitlines()[1:3]]
    again = [json.loads(ln)["mutant"] for ln in (folder / "mutants.jsonl").read_text().splitlines()[4:]]
    assert len(again) == 2 and not set(ids) & set(again)
    assert json.loads((folder / "mutants.json").read_text())["meta"]["resumed_with"] == 2
    r = CliRunner().invoke(main, [*args[:-4], "--seed", "7", "--out", str(tmp_path), "--resume", str(folder)])
    assert r.exit_code == 2 and "that run was another one (seed 0 there, 7 now)" in r.output, r.output
    r = CliRunner().invoke(main, [*args[:2], "pr", *args[3:], "--resume", str(folder)])
    assert r.exit_code == 2 and "that run was another one (sweep 'smoke' there, 'pr' now)" in r.output, r.output
    (folder / "mutants.jsonl").write_text("\n".join(lines[1:3]) + "\n")      # a journal without its scope line:
    r = CliRunner().invoke(main, [*args[:-4], "--seed", "7", "--out", str(tmp_path), "--resume", str(folder)])
    assert r.exit_code == 2 and "is not in this run's sample" in r.output   # the sample still tells
    r = CliRunner().invoke(main, [*args, "--resume", str(tmp_path)])
    assert r.exit_code == 2 and "no mutants.jsonl there" in r.output
    first = json.loads(lines[1])                    # the mutated line reads otherwise now: another suite
    (folder / "mutants.jsonl").write_text(json.dumps({**first, "diff": first["diff"] + " (edited)"}) + "\n")
    r = CliRunner().invoke(main, [*args, "--resume", str(folder)])
    assert r.exit_code == 2 and "the suite changed since that run, start a new one" in r.output, r.output


def test_mutants_that_time_out_are_said_and_nothing_counted_fails_a_min_score(monkeypatch, tmp_path: Path):
    """Timeouts are not counted; a run where no mutant was counted cannot meet --min-score 0.5
    (it exited 0 with the score n/a)."""
    import parity.run.levels
    from fakes_worker import SuiteCpu
    from parity.executors.base import Availability
    from parity.run.levels import Level
    monkeypatch.setattr(parity.run.levels, "make", lambda *a, **k: Level("cpu", Availability(True, device="cpu"), SuiteCpu()))
    r = CliRunner().invoke(main, ["mutate", "--sweep", "smoke", "--ops", "unary.neg", "--max", "2", "--jobs", "1",
                                  "--mutant-timeout", "0.000001", "--min-score", "0.5", "--out", str(tmp_path)])
    assert r.exit_code == 1, r.output
    assert "mutation score n/a: 2 timeout in " in r.output
    assert "warning: 2 mutant(s) timed out (--mutant-timeout 1e-06 s): not counted" in r.output
    assert r.output.rstrip().endswith("no mutant was counted (killed or survived): the score cannot be held to "
                                      "--min-score 0.5")
    [folder] = tmp_path.glob("mutate-smoke-*")
    assert "**Timeouts**: 2 mutant(s) ran out of --mutant-timeout" in (folder / "summary.md").read_text()


def test_a_shim_port_is_refused_and_a_latin1_comment_is_read(tmp_path: Path):
    """mutate builds a suite folder's files as they are: a port with a build line is refused (its
    mutants would be built otherwise than parity run builds it); bytes that are not UTF-8 are kept."""
    r = CliRunner().invoke(main, ["mutate", "--hip-src", str(Path(__file__).parent / "fixtures/ports/shim-port"),
                                  "--list"])
    assert r.exit_code == 2 and "is a port built by its build line" in r.output, r.output
    from parity.run.session import DEFAULT_HIP_SRC
    shutil.copytree(DEFAULT_HIP_SRC, tmp_path / "s")
    (tmp_path / "s" / "affine.hip").write_bytes(b"// caf\xe9\n" + (DEFAULT_HIP_SRC / "affine.hip").read_bytes())
    r = CliRunner().invoke(main, ["mutate", "--hip-src", str(tmp_path / "s"), "--ops", "affine", "--list", "--max", "3"])
    assert r.exit_code == 0 and "3 mutants over" in r.output, r.output
