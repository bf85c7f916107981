"""The result schema: the verdict names a row can carry.

A leaf module (imports nothing of parity) so that every layer, from the ops' judges to the
renderers, names verdicts through one enum instead of string literals.
"""
from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """A row's verdict. A `str` so rows serialise, compare and sort as the plain names they were
    (results.json is unchanged): `Verdict.PASS == "pass"`, `json.dumps(Verdict.PASS) == '"pass"'`."""
    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"                        # the suite lacks the kernel
    COMPILE_ERROR = "compile-error"
    MAPPING_GAP = "mapping-gap"                # parity's HIP->CUDA mapping lacks an identifier
    SIGNATURE_MISMATCH = "signature-mismatch"  # declared with another parameter list than the ABI's
    CRASH = "crash"
    TIMEOUT = "timeout"
    OOB_WRITE = "oob-write"
    INPUT_CLOBBERED = "input-clobbered"
    UNAVAILABLE = "unavailable"                # the level cannot run it (no GPU, bench-sized on cpu)
    REFUSED = "refused"                        # the executor's host code refused the launch
    ERROR = "error"                            # a parity bug on this case
    XFAIL = "xfail"                            # failing, and the baseline says so
    XPASS = "xpass"
    XPASS_STRICT = "xpass-strict"

    def __str__(self) -> str:                  # f-strings and str() give the name, as a plain str did
        return self.value

    __format__ = str.__format__
