"""What any command's unexpected end becomes: exit 1 means a case failed, and nothing else.

* an exception parity did not expect: exit 3, its traceback saved to `parity-error-*.txt` in the
  command's report folder (`report_folder`) or the system's temp folder, one line naming the file;
* Ctrl-C: exit 130, SIGTERM (where a command turns it into `Terminated`): exit 143;
* click's own (usage errors, `SetupError`: exit 2) and `sys.exit` pass through.

`ParityGroup` is the `parity` group's class, so every command, present and future, gets this.
"""
from __future__ import annotations

import errno
import os
import sys
import tempfile
import traceback
from datetime import datetime
from pathlib import Path

import click

from parity.core import interrupts
from parity.core.interrupts import Terminated  # noqa: F401  (SIGTERM: exit 143)

INTERNAL_ERROR = 3
_FOLDER = "parity.report_folder"           # ctx.meta key: where a command writes its reports


_RESUME = "parity.resume"                    # ctx.meta key: (the run's folder, the command that finishes it)


def report_folder(folder: str | Path | None) -> None:
    """Say where the running command writes its reports: an internal error's traceback goes there."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and folder:
        ctx.meta[_FOLDER] = Path(folder)


def resumable(folder: Path, command: str) -> None:
    """Say which run folder the running command fills and the command that finishes it: a full disk's
    message names them."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_RESUME] = (folder, command)


def save_traceback(folder: Path | None, text: str) -> Path | None:
    """`text` as parity-error-<time>-<pid>.txt in `folder`, else in the temp folder; None if neither
    can be written."""
    for where in ([Path(folder)] if folder else []) + [Path(tempfile.gettempdir())]:
        try:
            where.mkdir(parents=True, exist_ok=True)
            path = where / f"parity-error-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
            with open(path, "x", encoding="utf-8") as f:        # a new file: never a node someone put there
                f.write(text)
            return path
        except OSError:
            continue
    return None


def internal_error(e: BaseException, folder: Path | None) -> None:
    """Exit 3 with the traceback of `e` (being handled) saved to a file and one line naming it."""
    path = save_traceback(folder, traceback.format_exc())
    what = f"{type(e).__name__}: {e}".splitlines()[0][:300] if str(e) else type(e).__name__
    click.echo(f"parity internal error: {what}" + (f" (traceback: {path})" if path else "") + "; please report it",
               err=True)
    sys.exit(INTERNAL_ERROR)


# what the machine refused, not a defect of parity: a full disk, a quota, a read-only file system
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


class ParityGroup(click.Group):
    """The `parity` group: every command runs with parity's signal handling (parity.core.interrupts:
    the first Ctrl-C or SIGTERM stops it through its cleanup, temporary folders removed and reports of
    what finished written; later ones do not cut that short) and exits 130/143 with one line, never
    click's `Aborted!` (exit 1); a command's unexpected exception is exit 3 (not click's exit 1 with a
    traceback)."""

    def invoke(self, ctx: click.Context):
        previous = interrupts.install()
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit,
                BrokenPipeError):
            raise                                 # click's own: usage errors (2), sys.exit, a closed pipe
        except KeyboardInterrupt as e:
            interrupts.finishing()
            click.echo(f"\ninterrupted ({interrupts.name(e)})", err=True)
            sys.exit(interrupts.exit_code(e))
        except OSError as e:
            if e.errno not in _MACHINE_ERRNOS:
                internal_error(e, ctx.meta.get(_FOLDER))
            folder, resume = ctx.meta.get(_FOLDER), ctx.meta.get(_RESUME)
            # (the folder is --out's until a run has its own folder: then its resume command is known)
            click.echo(f"Error: {e.strerror or e}" + (f": {e.filename}" if e.filename else "")
                       + (f" (what finished is kept in {resume[0]}; once there is room: {resume[1]})" if resume
                          else f" (what finished is kept under {folder})" if folder else ""), err=True)
            sys.exit(2)
        except Exception as e:
            internal_error(e, ctx.meta.get(_FOLDER))
        finally:
            interrupts.done(previous)
