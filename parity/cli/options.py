"""What the commands share: the setup error, the subject's options (declared once, with their one
default), the mapping of a session's one-line errors onto click's exit code 2, and the reading of a
results file given on the command line."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from parity.cli.params import InputPath, Selection, SetupError, Text
from parity.run.session import SessionError, csv_list  # noqa: F401  (csv_list: the commands' list options)

if TYPE_CHECKING:
    from parity.run.results import Results

SUITE = InputPath(file=False, folder=True)     # --hip-src, --cuda-src: a folder
RESULTS = InputPath(file=True, folder=True, what="results file")   # a results.json, or a run folder for its own


@contextmanager
def setup_errors():
    """A SessionError (parity.run.session) inside becomes a SetupError: one line, exit 2."""
    try:
        yield
    except SessionError as e:
        raise SetupError(str(e)) from None


@contextmanager
def writing(output: Path):
    """Writing a file the command line named (-o): a refusal (parity.core.files: a FIFO, a device, a
    folder there) or the OS's error is one line, exit 2."""
    from parity.core.files import FileRefused
    try:
        yield
    except FileRefused as e:
        raise SetupError(str(e)) from None
    except OSError as e:
        raise SetupError(f"cannot write {output}: {e.strerror or e}") from None


PROFILE_HELP = ("The ABI profile: candle, rocm-rs, or a parity-kernels.toml declaring a port's own kernels "
                "(docs/profiles.md) [default: --hip-src DIR/parity-kernels.toml when there, else the profile whose "
                "kernel names the suite defines, else candle].")


def hip_src_option(f):
    """--hip-src: the one declaration (default worked out in parity.run.session.subject)."""
    return click.option("--hip-src", type=SUITE,
                        help="HIP kernel suite folder [default: the bundled suite, backends/hip].")(f)


def cuda_src_option(help_: str = "CUDA kernel suite folder (e.g. candle-kernels/src)."):
    return click.option("--cuda-src", type=SUITE, help=help_)


def profile_option(f, help_: str = PROFILE_HELP):
    return click.option("--profile", "profile_opt", type=Text(), metavar="NAME|FILE", help=help_)(f)


# `parity list` has no suite to take a profile from
LIST_PROFILE_HELP = ("The ABI profile whose catalog to list: candle, rocm-rs, or a parity-kernels.toml declaring a "
                     "port's own kernels (docs/profiles.md) [default: candle].")


def selection_option(name: str, help_: str, dest: str | None = None, **kw):
    """A comma-separated list option (--ops, --dtypes, ...): one that names nothing is exit 2."""
    return click.option(name, *([dest] if dest else []), type=Selection(), help=help_, **kw)


def not_a_folder(output: Path, name: str) -> None:
    """-o naming a folder is exit 2, `name` saying what to name instead: a file is never written
    beside it (numpy's `folder.npz`) or renamed over it."""
    if Path(output).is_dir():
        raise SetupError(f"-o {output} is a folder; name {name}")


def not_into_a_run(output: Path, what: str, own=(), fmt: str = "") -> None:
    """-o naming a run's folder, or a file in one (it has run.json), is exit 2: its files are that run's
    own (its reports, and the rows `--resume` reads). own: the run folder or results file rendered, whose
    folder may take its own reports again (RUN_REPORTS, each in its own format `fmt`; never run.json,
    its rows or its lock)."""
    import os

    from parity.run.session import RUN_FILE, RUN_REPORT_FORMATS, RUN_REPORTS
    out = Path(output)
    folder = out if out.is_dir() else out.parent
    if not (folder / RUN_FILE).exists():
        return
    mine = {os.path.realpath(p if Path(p).is_dir() else Path(p).parent) for p in map(Path, own)}
    if os.path.realpath(folder) not in mine or out.is_dir() or out.name not in RUN_REPORTS:
        raise SetupError(f"-o {output}: {folder} is a run's folder (it has {RUN_FILE}): its files are that run's; "
                         f"write {what} elsewhere")
    want = RUN_REPORT_FORMATS[out.name]
    if fmt and fmt != want:                  # (its summary.md replaced by XML)
        raise SetupError(f"-o {output} is the run's {want} report: --format {fmt} would replace it with another "
                         f"format; use --format {want}, or write the {fmt} elsewhere")


def not_an_input(output: Path, inputs) -> None:
    """-o naming a file the command reads (a run folder's results.json) is exit 2: the output would
    replace what it is made from."""
    import os

    from parity.run.results import results_path
    out = os.path.realpath(output)
    for p in map(Path, inputs):
        if os.path.realpath(results_path(p)) == out:
            raise SetupError(f"-o {output} is the input {p}: writing it would replace what it is made from; "
                             "name another file")


def read_results(path) -> Results:
    """A results file given on the command line, read defensively (parity.run.results): SetupError
    for one that is not a results file; what was skipped of it said on stderr, one line per file."""
    from parity.run.results import Results
    try:
        res = Results.from_json(path)
    except ValueError as e:
        raise SetupError(str(e))
    for note in res.notes:
        click.echo(f"warning: {note}", err=True)
    return res


def port_options(f):
    """--port FILE and the --port-* options: a port's build line (parity.suite.port), and --profile (its kernel
    conventions, parity.profiles), for run, coverage, compile."""
    opts = [
        profile_option,
        click.option("--port", "port_file", type=InputPath(),
                     help="The port's build line (parity-port.toml: sources, include folders in order, force-included "
                          "headers, defines; docs/shim-ports.md) [default: --hip-src DIR/parity-port.toml when there]."),
        click.option("--port-source", multiple=True, metavar="GLOB",
                     help="Add sources of the port (relative to --hip-src; .cu included)."),
        click.option("--port-include", multiple=True, metavar="DIR",
                     help="Add an include folder of the port, after its own (repeatable)."),
        click.option("--port-force-include", multiple=True, metavar="FILE",
                     help="Add a header force-included ahead of every source (-include), after the port's own."),
        click.option("--port-define", multiple=True, metavar="K=V", help="Add a define of the port's build line (repeatable)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def discover_folder(folder):
    """The suite of a folder (--cuda-src's); exit 2 when discovery cannot go on (a FIFO in it)."""
    from parity.suite.scan import SuiteError, discover
    try:
        return discover(folder)
    except SuiteError as e:
        raise SetupError(str(e)) from None


def subject_of(hip_src, cuda_src=None, profile_opt=None, port_file=None, port_source=(), port_include=(),
               port_force_include=(), port_define=(), check: bool = True):
    """The session's subject from a command's --hip-src/--cuda-src/--profile/--port* options; exit 2 on a mistake."""
    from parity.run.session import subject
    with setup_errors():
        subj = subject(hip_src, cuda_src, profile=profile_opt, port_file=port_file, port_source=port_source,
                       port_include=port_include, port_force_include=port_force_include, port_define=port_define)
        if check:
            subj.check_folders()
    return subj
