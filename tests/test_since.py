"""`parity run --since REF`: only cases whose kernels live in files changed since a git ref."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import main
from parity.suite.since import SinceError, kernels_changed

GOOD = Path(__file__).parent / "fixtures" / "suites" / "good"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree with a two-file suite and a shared header, all committed."""
    suite = tmp_path / "kernels"
    suite.mkdir()
    (suite / "helpers.h").write_text("#pragma once\n#define NEG(x) (-(x))\n")
    (suite / "neg.hip").write_text(
        '#include "helpers.h"\nextern "C" __global__ void uneg_f32(size_t numel, size_t num_dims, '
        "const size_t* info, const float* inp, float* out) { }\n")
    (suite / "exp.hip").write_text(
        'extern "C" __global__ void uexp_f32(size_t numel, size_t num_dims, '
        "const size_t* info, const float* inp, float* out) { }\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "suite")
    return suite


def test_nothing_changed_selects_nothing(repo: Path):
    assert kernels_changed("HEAD", repo) == (set(), [])


def test_a_changed_source_selects_its_kernels(repo: Path):
    (repo / "exp.hip").write_text((repo / "exp.hip").read_text() + "// edited\n")
    kernels, files = kernels_changed("HEAD", repo)
    assert kernels == {"uexp_f32"} and [f.name for f in files] == ["exp.hip"]


def test_a_changed_header_selects_the_sources_including_it(repo: Path):
    (repo / "helpers.h").write_text("#pragma once\n#define NEG(x) (0 - (x))\n")
    assert kernels_changed("HEAD", repo)[0] == {"uneg_f32"}


def test_a_header_of_any_name_counts_and_parity_files_select_everything(repo: Path):
    """`#include "ops.def"`: a change there selected nothing (headers were known by their suffix),
    nor did a change to parity-kernels.toml, parity-port.toml or a references module; a README is text."""
    (repo / "ops.def").write_text("#define K 1\n")
    (repo / "exp.hip").write_text('#include "ops.def"\n' + (repo / "exp.hip").read_text())
    _git(repo.parent, "add", ".")
    _git(repo.parent, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "def")
    (repo / "ops.def").write_text("#define K 2\n")
    assert kernels_changed("HEAD", repo)[0] == {"uexp_f32"}
    _git(repo.parent, "checkout", "-q", "--", ".")
    (repo / "README.md").write_text("notes\n")
    assert kernels_changed("HEAD", repo) == (set(), [])
    for name in ("parity-kernels.toml", "parity-port.toml", "refs.py"):
        (repo / name).write_text("# changed\n")
        assert kernels_changed("HEAD", repo)[0] == {"uexp_f32", "uneg_f32"}, name
        (repo / name).unlink()


def test_an_untracked_source_counts(repo: Path):
    (repo / "new.hip").write_text('extern "C" __global__ void usqrt_f32(size_t numel) { }\n')
    assert kernels_changed("HEAD", repo)[0] == {"usqrt_f32"}


def test_a_kernel_deleted_or_renamed_since_ref_counts(repo: Path, tmp_path: Path):
    """A commit that deleted a kernel (or its file) selected nothing of it: `--since HEAD` was green
    where the whole run said `missing`. The kernels a changed file defined at REF count too."""
    (repo / "exp.hip").write_text((repo / "exp.hip").read_text().replace("uexp_f32", "uexp2_f32"))
    assert kernels_changed("HEAD", repo)[0] == {"uexp_f32", "uexp2_f32"}
    (repo / "neg.hip").unlink()                      # its quoted include read from its own folder
    kernels, files = kernels_changed("HEAD", repo)
    assert kernels == {"uexp_f32", "uexp2_f32", "uneg_f32"} and sorted(f.name for f in files) == ["exp.hip", "neg.hip"]
    r = CliRunner().invoke(main, ["run", "--levels", "cpu,amd-static", "--ops", "unary.neg", "--dtypes", "f32",
                                  "--hip-src", str(repo), "--out", str(tmp_path / "o"), "-q", "--since", "HEAD"])
    if shutil.which("hipcc"):                        # (amd-static: the level that finds it missing here)
        assert r.exit_code == 1 and "not ported" in r.output, r.output



def test_a_kernel_a_header_renamed_counts_under_its_old_name(repo: Path):
    """A header's macro stamps the kernels' names: renaming there left the file itself unchanged, so its
    kernels at REF were scanned with today's header and the old name was never selected (exit 0)."""
    (repo / "helpers.h").write_text("#pragma once\n#define NAME(op) u##op##_f32\n")
    (repo / "abs.hip").write_text('#include "helpers.h"\nextern "C" __global__ void NAME(abs)(size_t numel) { }\n')
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "macro")
    (repo / "helpers.h").write_text("#pragma once\n#define NAME(op) u##op##2_f32\n")
    assert kernels_changed("HEAD", repo)[0] == {"uabs2_f32", "uabs_f32", "uneg_f32"}



def test_the_tree_at_ref_follows_links_and_odd_names_and_leaves_the_cache_alone(tmp_path: Path, monkeypatch):
    """REF's tree was a `git archive` of the folder: a header linked from elsewhere, a folder git
    archive leaves out (export-ignore) and a name git reads as pathspec magic (`:k`) lost the kernel's
    old name; each scan at REF added cache entries under a temporary path no one reads again."""
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path / "cache"))
    suite = tmp_path / ":k"
    (suite / "ops").mkdir(parents=True)
    (suite / "common").mkdir()
    (suite / "common" / "name.h").write_text("#define NAME(op) u##op##_f32\n")
    (suite / "ops" / "name.h").symlink_to(Path("..") / "common" / "name.h")
    (suite / "abs.hip").write_text('#include "ops/name.h"\nextern "C" __global__ void NAME(abs)(size_t numel) { }\n')
    (tmp_path / ".gitattributes").write_text(":k/** export-ignore\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "linked")
    (suite / "common" / "name.h").write_text("#define NAME(op) u##op##2_f32\n")
    before = sorted((tmp_path / "cache").rglob("*.json")) if (tmp_path / "cache").exists() else []
    assert kernels_changed("HEAD", suite)[0] == {"uabs2_f32", "uabs_f32"}
    assert sorted((tmp_path / "cache").rglob("*.json")) == before or \
        all("parity-since-" not in p.read_text() for p in (tmp_path / "cache").rglob("*.json"))


def test_the_tree_at_ref_survives_a_link_loop_and_a_file_become_a_folder(repo: Path):
    (repo / "loop").symlink_to("loop")
    (repo / "m.hip").write_text('extern "C" __global__ void kern_m(size_t n) { }\n')
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "m")
    (repo / "m.hip").unlink()
    (repo / "m.hip").mkdir()
    (repo / "m.hip" / "x.hip").write_text('extern "C" __global__ void kern_x(size_t n) { }\n')
    assert kernels_changed("HEAD", repo)[0] == {"kern_m", "kern_x"}


def test_a_force_include_added_since_ref_is_not_read_at_ref(tmp_path: Path):
    """A header force-included since REF that renames a kernel: REF's sources were scanned with it, so the
    kernel's old name was lost (exit 0 where it is `missing`)."""
    from parity.suite.port import load_port
    root = tmp_path / "port"
    root.mkdir()
    (tmp_path / "include").mkdir()
    (root / "neg.hip").write_text('extern "C" __global__ void uneg_f32(size_t n) { }\n')
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "port")
    (tmp_path / "include" / "compat.h").write_text("#define uneg_f32 uneg_f32_v2\n")
    (tmp_path / "parity-port.toml").write_text('force_includes = ["include/compat.h"]\n')
    port = load_port(tmp_path / "parity-port.toml", root)
    assert kernels_changed("HEAD", root, port)[0] == {"uneg_f32", "uneg_f32_v2"}

def test_a_header_in_a_ports_include_folder_counts(tmp_path: Path):
    """parity-port.toml's include folder beside the sources' folder, or outside --hip-src: a change to a
    header there selected nothing ("nothing to run", exit 0); a force-included header selects all."""
    from parity.suite.port import load_port
    root = tmp_path / "port"
    (root / "src").mkdir(parents=True)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "ops.h").write_text("#pragma once\n#define NEG(x) (-(x))\n")
    (tmp_path / "include" / "compat.h").write_text("#pragma once\n")
    (root / "src" / "neg.hip").write_text('#include "ops.h"\nextern "C" __global__ void uneg_f32(size_t n) { }\n')
    (root / "src" / "exp.hip").write_text('extern "C" __global__ void uexp_f32(size_t n) { }\n')
    (root / "inc").mkdir()                                        # and one inside the suite's folder
    (tmp_path / "parity-port.toml").write_text('include_dirs = ["include", "port/inc"]\n'
                                               'force_includes = ["include/compat.h"]\n')
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "port")
    port = load_port(tmp_path / "parity-port.toml", root)       # (--port FILE --hip-src port)
    (tmp_path / "include" / "ops.h").write_text("#pragma once\n#define NEG(x) (0 - (x))\n")
    kernels, files = kernels_changed("HEAD", root, port)
    assert kernels == {"uneg_f32"} and [f.name for f in files] == ["ops.h"]
    (tmp_path / "include" / "compat.h").write_text("#pragma once\n// edited\n")
    assert kernels_changed("HEAD", root, port)[0] == {"uneg_f32", "uexp_f32"}

def test_non_ascii_names_and_ignored_sources_count(repo: Path):
    """git quotes non-ASCII names (`"\\303\\274n.hip"`) unless -z: such a file was never selected. An
    ignored source (a suite under .gitignore) is read by discovery and cannot be told unchanged."""
    (repo / "ünï.hip").write_text('extern "C" __global__ void usqrt_f32(size_t numel) { }\n')
    assert kernels_changed("HEAD", repo)[0] == {"usqrt_f32"}
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "unicode")
    assert kernels_changed("HEAD", repo) == (set(), [])
    (repo / "ünï.hip").write_text((repo / "ünï.hip").read_text() + "// edited\n")
    assert kernels_changed("HEAD", repo)[0] == {"usqrt_f32"}
    (repo / ".gitignore").write_text("gen/\n")
    (repo / "gen").mkdir()
    (repo / "gen" / "made.hip").write_text('extern "C" __global__ void ulog_f32(size_t numel) { }\n')
    assert kernels_changed("HEAD", repo)[0] == {"usqrt_f32", "ulog_f32"}


def test_bad_ref_and_no_repo_are_one_line_errors(repo: Path, tmp_path_factory):
    with pytest.raises(SinceError, match="no-such-ref"):
        kernels_changed("no-such-ref", repo)
    plain = tmp_path_factory.mktemp("plain")
    shutil.copy(GOOD / "good.hip", plain)
    with pytest.raises(SinceError, match="not a git repository"):
        kernels_changed("HEAD", plain)


def test_cli_runs_only_changed_kernels(repo: Path, tmp_path: Path):
    run = CliRunner().invoke
    args = ["run", "--levels", "cpu", "--ops", "unary.neg,unary.exp", "--dtypes", "f32", "--hip-src", str(repo),
            "--out", str(tmp_path / "reports"), "-q", "--since", "HEAD"]
    r = run(main, args)
    assert r.exit_code == 0 and "nothing to run" in r.output, r.output
    (repo / "neg.hip").write_text((repo / "neg.hip").read_text() + "// edited\n")
    r = run(main, args)
    assert r.exit_code == 0, r.output
    import json
    (res,) = (tmp_path / "reports").glob("*/results.json")
    ops = {row["op"] for row in json.loads(res.read_text())["results"]}
    assert ops == {"unary.neg"}
    r = run(main, args[:-1] + ["no-such-ref"])
    assert r.exit_code == 2 and "no-such-ref" in r.output and "Traceback" not in r.output


@pytest.mark.skipif(not shutil.which("hipcc"), reason="hipcc not installed")
def test_compile_since_builds_only_the_changed_sources_for_amd(repo: Path):
    run = CliRunner().invoke
    args = ["compile", "--hip-src", str(repo), "--amd-arch", "gfx90a", "--since", "HEAD", "--json"]
    r = run(main, args)
    assert r.exit_code == 0 and r.stdout == "[]\n" and "nothing to compile" in r.stderr, r.output   # JSON all the same
    (repo / "exp.hip").write_text("#include <hip/hip_runtime.h>\n" + (repo / "exp.hip").read_text())
    r = run(main, args)
    import json
    rows = json.loads(r.output)
    assert r.exit_code == 0, r.output
    assert {row["kernel"] for row in rows} == {"uexp_f32"} and {row["status"] for row in rows} == {"ok"}
