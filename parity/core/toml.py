"""TOML reading on every Python parity supports: the standard library's tomllib (3.11+), tomli on 3.10."""
from __future__ import annotations

try:
    import tomllib as _toml
except ImportError:  # Python 3.10
    import tomli as _toml

TOMLDecodeError = _toml.TOMLDecodeError


def loads(text: str) -> dict:
    """The TOML document; TOMLDecodeError for one nested too deeply to read (a file of 100,000 `[`
    makes the parser recurse past Python's limit: a bad file, not a crash). A UTF-8 byte-order mark
    (a Windows editor's) is read past: tomllib took it for a statement ("Invalid statement" at 1:1)."""
    try:
        return _toml.loads(text.removeprefix("\ufeff"))
    except RecursionError:
        raise TOMLDecodeError("nested too deeply (arrays or tables inside each other beyond Python's recursion "
                              "limit)") from None
