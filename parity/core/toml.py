"""TOML reading on every Python parity supports: the standard library's tomllib (3.11+), tomli on 3.10."""
from __future__ import annotations

try:
    import tomllib as _toml
except ImportError:  # Python 3.10
    import tomli as _toml

loads = _toml.loads
TOMLDecodeError = _toml.TOMLDecodeError
