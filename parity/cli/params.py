"""The commands' option types: every path, number and list a user types is checked here, once, at
parse time, and refused with one line (`Error: ...`, exit 2) naming the option.

* `InputPath`: a path parity reads: a regular file (or a folder where one is meant), never a FIFO,
  a device or a socket (parity.core.files says what is there);
* `OutputFile` / `OutFolder`: a path parity writes (renames over, or makes a run folder in);
* `Seconds`, `Number`, `Count`: finite numbers in their range (no `nan`, no `-1` seconds);
* `Selection`: a comma-separated list that names at least one thing (`--ops ""` selects nothing,
  it does not mean "every op");
* `Text`: a value that must not be empty (`--hip-src ""` is not the bundled suite).
"""
from __future__ import annotations

import math
from pathlib import Path

import click

from parity.core import files


class SetupError(click.ClickException):
    """A user mistake or a missing prerequisite: one line, exit code 2, no traceback."""
    exit_code = 2


def flag(param: click.Parameter | None) -> str:
    """How the user wrote the option: `--case-timeout`, `-o`, or an argument's name (RESULTS)."""
    if param is None:
        return "value"
    if isinstance(param, click.Argument):
        return param.human_readable_name
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs or param.opts or [param.name or "value"])[0]


class _Type(click.ParamType):
    def fail_line(self, param, value, why: str):
        raise SetupError(f"{flag(param)} {value!r}: {why}" if value == "" or not isinstance(value, (str, Path))
                         else f"{flag(param)} {value}: {why}")

    def empty(self, value, param) -> None:
        if isinstance(value, str) and not value.strip():
            raise SetupError(f"{flag(param)} is empty ({value!r}): give a value, or leave the option out")


class Text(_Type):
    """A string option that must say something (an empty one is a mistake, not the default)."""
    name = "text"

    def convert(self, value, param, ctx):
        self.empty(value, param)
        return value


class InputPath(_Type):
    """A path parity reads: a regular file (file=True) and/or a folder (folder=True). Anything else
    there (a FIFO, a device, a socket, a dangling link) is refused before it is opened; a path with
    nothing there is left to the reader, which says so in its own words."""
    name = "path"

    def __init__(self, file: bool = True, folder: bool = False, what: str = ""):
        self.file, self.folder, self.what = file, folder, what

    def convert(self, value, param, ctx):
        self.empty(value, param)
        path = Path(value)
        why = files.refusal(path, self.what or flag(param), file=self.file, folder=self.folder)
        if why:
            raise SetupError(why)
        return path


class OutputFile(_Type):
    """A file parity writes (renamed over): never a FIFO, a device or a socket that is there. A folder
    is left to the command (it names the file to write instead). A symbolic link is written through:
    its target is the file replaced, as a shell's `>` would write it (the rename would replace the link
    itself); one whose target does not exist is refused."""
    name = "file"

    def convert(self, value, param, ctx):
        self.empty(value, param)
        if str(value) == "-":                        # (it wrote a file named `-`)
            raise SetupError(f"{flag(param)} -: give a file name; '-' is not stdout here"
                             + (" (without it the report goes to stdout)"
                                if ctx is not None and ctx.info_name == "report" else ""))
        path = Path(value)
        if path.is_symlink():
            try:
                path = path.resolve(strict=True)
            except (OSError, RuntimeError):          # (RuntimeError: a loop, on Python < 3.13)
                raise SetupError(f"{flag(param)} {value} is a symbolic link to nothing (its target does not exist "
                                 "or is a loop of links): refused (not replaced)") from None
        why = files.refusal(path, flag(param), file=True, folder=True, write=True)
        if why:
            raise SetupError(why)
        return path


class OutFolder(_Type):
    """A folder parity makes its report folders in: absent (made) or a folder."""
    name = "folder"

    def convert(self, value, param, ctx):
        self.empty(value, param)
        path = Path(value)
        what = files.kind(path)
        if what not in ("nothing", "a folder"):
            extra = " (its target does not exist)" if what == "a dangling symbolic link" else ""
            raise SetupError(f"{flag(param)} {path} is {what}{extra}, not a folder")
        return path


class Number(_Type):
    """A finite number with lo < x (lo_open) or lo <= x, and x <= hi; `what` says the range in words."""
    name = "number"

    def __init__(self, what: str, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 integer: bool = False):
        self.what, self.lo, self.hi, self.lo_open, self.integer = what, lo, hi, lo_open, integer

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = value
        else:
            self.empty(value, param)
            try:
                x = int(value) if self.integer else float(value)
            except ValueError:
                self.fail_line(param, value, f"not {'a whole number' if self.integer else 'a number'}; "
                                             f"must be {self.what}")
        if not math.isfinite(x) or (self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo)) \
                or (self.hi is not None and x > self.hi):
            self.fail_line(param, value, f"must be {self.what}")
        return x


def Seconds(what: str = "a number of seconds greater than 0") -> Number:       # noqa: N802
    return Number(what, 0.0, lo_open=True)


def Count(lo: int = 1) -> Number:                                               # noqa: N802
    return Number(f"a whole number, at least {lo}", lo, integer=True)


class Selection(_Type):
    """A comma-separated list (`unary.*,cast`, `f16,bf16`): kept as the string the commands split, but
    one naming nothing (`""`, `","`) is refused: an empty selection is not "everything"."""
    name = "list"

    def convert(self, value, param, ctx):
        if not any(v.strip() for v in str(value).split(",")):
            raise SetupError(f"{flag(param)} {value!r}: empty selection list (name one or more, comma separated, "
                             "or leave the option out)")
        return value
