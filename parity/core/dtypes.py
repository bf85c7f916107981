"""The dtypes of the kernel ABIs (Candle's and the other profiles'), their NumPy storage and their kernel-name spellings."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str          # canonical name, as in `_f32` kernel suffixes; fp8 is "f8_e4m3"
    np: np.dtype       # storage dtype in NumPy (ml_dtypes for bf16 and fp8)
    kind: str          # "uint", "int" or "float"
    bits: int
    mant_bits: int = 0  # explicit mantissa bits (floats)
    emin: int = 0       # exponent of the smallest normal (floats)
    max_finite: float = 0.0

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def bits_dtype(self) -> np.dtype:
        """Unsigned integer dtype of the same width, to read bit patterns."""
        return np.dtype(f"u{self.bits // 8}")

    def spelling(self, fp8_spelling: str = "f8_e4m3") -> str:
        return fp8_spelling if self.name == "f8_e4m3" else self.name

    def __str__(self) -> str:
        return self.name


def _float(name: str, npd, bits: int, mant: int, emin: int, maxf: float) -> DType:
    return DType(name, np.dtype(npd), "float", bits, mant, emin, maxf)


DTYPES: dict[str, DType] = {d.name: d for d in [
    DType("u8", np.dtype(np.uint8), "uint", 8),
    DType("u32", np.dtype(np.uint32), "uint", 32),
    DType("i16", np.dtype(np.int16), "int", 16),
    DType("i32", np.dtype(np.int32), "int", 32),
    DType("i64", np.dtype(np.int64), "int", 64),
    # integer widths no Candle kernel has, which other ABI profiles' kernels take (rocm-rs: char,
    # ushort, unsigned long long; parity.profiles)
    DType("i8", np.dtype(np.int8), "int", 8),
    DType("u16", np.dtype(np.uint16), "uint", 16),
    DType("u64", np.dtype(np.uint64), "uint", 64),
    _float("f16", np.float16, 16, 10, -14, 65504.0),
    _float("bf16", ml_dtypes.bfloat16, 16, 7, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    _float("f32", np.float32, 32, 23, -126, float(np.finfo(np.float32).max)),
    _float("f64", np.float64, 64, 52, -1022, float(np.finfo(np.float64).max)),
    _float("f8_e4m3", ml_dtypes.float8_e4m3fn, 8, 3, -6, 448.0),
]}

# Spellings users and kernel names use for the same dtype.
ALIASES = {"fp8": "f8_e4m3", "f8": "f8_e4m3", "fp8_e4m3": "f8_e4m3", "f8e4m3": "f8_e4m3",
           "f8_e4m3fn": "f8_e4m3"}

STD = ("u8", "u32", "i64", "f32", "f64")
FLOATS = ("f16", "bf16", "f32", "f64", "f8_e4m3")


def dtype(name: str) -> DType:
    """Look a dtype up by canonical name or alias; KeyError names the known ones."""
    key = ALIASES.get(name, name)
    if key not in DTYPES:
        raise KeyError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}")
    return DTYPES[key]
