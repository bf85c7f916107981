"""The `parity` command group: `parity list` here, every other command registered from its module.

The command modules import `parity.cli.options`, never this module, so registering them here
closes no import circle. Command bodies import what they use inside the function: `parity --help`
and a mistyped option answer in ~0.3 s instead of the ~2 s that importing NumPy, pandas and the
catalog takes.
"""
from __future__ import annotations

import functools
import json

import click
from rich.console import Console

from parity import __version__
from parity.cli import bench, commands, mutate, peak, run, suite
from parity.cli.errors import ParityGroup
from parity.cli.options import (LIST_PROFILE_HELP, SetupError, csv_list, profile_option, selection_option,
                                setup_errors)


@click.group(cls=ParityGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="parity")
def main() -> None:
    """parity proves, op by op, that a HIP port of Candle's CUDA kernels computes what the CUDA
    kernels and a CPU reference compute, over strided, sliced, broadcast, empty and huge layouts.

    Start with `parity run` (the smoke sweep on the bundled HIP suite), `parity list` to see the
    catalog, and `parity doctor` to see which levels this machine can run.
    """


@main.command("list")
@selection_option("--ops", "Glob patterns, comma separated: 'unary.*,cast,chain.*'.")
@functools.partial(profile_option, help_=LIST_PROFILE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(ops: str | None, as_json: bool, profile_opt: str | None = None) -> None:
    """The op catalog: op, dtypes, kernel names, tolerance and semantics (of a profile: Candle's by default)."""
    from parity.run.cases import listed_kernels, select_ops
    from parity.run.session import profile_only
    with setup_errors():
        profile = profile_only(profile_opt)
    try:
        chosen = select_ops(csv_list(ops), profile)          # what `parity run --ops` selects: chains too
    except KeyError as e:
        raise SetupError(str(e.args[0]))
    if as_json:
        click.echo(json.dumps([{"op": o.name, "family": o.family, "dtypes": list(o.dtypes),
                                "kernels": listed_kernels(o), "abi": list(o.abi),
                                "semantics": o.semantics, "divergences": list(o.divergences)}
                               for o in chosen], indent=1))
        return
    from parity.render.table import Col, fit_table
    rows = []
    for o in chosen:
        names = listed_kernels(o)
        shown = ", ".join(names[:6]) + (f", … ({len(names)} kernels)" if len(names) > 6 else "")
        rows.append((o.name, shown, o.spec.tolerance(o.dtypes[0]), o.semantics))
    console = Console()
    cols = (Col("op", name=True), Col("kernels"), Col("tolerance", drop=2), Col("semantics", drop=1, prose=True))
    console.print(fit_table(console, cols, rows, show_lines=False))
    kernels = len({k for o in chosen for k in listed_kernels(o)})
    click.echo(f"{len(chosen)} ops, {kernels} kernels" + ("" if profile.name == "candle" else f" (profile {profile.name})"))


for _module in (run, commands, suite, bench, peak, mutate):
    for _command in _module.COMMANDS:
        main.add_command(_command)

if __name__ == "__main__":
    main()
