"""HIP's device API as parity knows it: the compiler's first error, and gaps of the mapping.

Interim: `mapping_gap` knows no identifier list yet and answers None (a gap is then reported as
a plain compile-error); the list of what ROCm declares lands with the HIP mapping work."""
from __future__ import annotations

import re

_ERROR = re.compile(r"(\berror\b|\bfatal error\b)", re.IGNORECASE)


def first_error(compiler_output: str) -> str:
    """The first line that is an error (not a warning or a note), '' when there is none."""
    for line in compiler_output.splitlines():
        if _ERROR.search(line) and "detected in the compilation" not in line:
            return line.strip()
    return ""


def mapping_gap(compiler_output: str) -> str | None:
    """The undefined identifier ROCm declares that parity's mapping lacks (interim: none known)."""
    return None
