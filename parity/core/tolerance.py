"""How a result is judged: a ULP budget, an absolute floor, or bit-exactness.

A leaf module, so the comparator applies the tolerances ops declare without importing ops."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """How a float result is judged. Integers, cmp and copies are always exact."""
    exact: bool = False                      # bit patterns must match (NaN-ness for NaNs)
    ulp: int | dict[str, int] = 0            # budget in ULPs of the output dtype
    atol: float | dict[str, float] = 0.0     # absolute floor near zero
    signed_zero: bool = False                # -0 and +0 must match
    nan_payload: bool = False                # copies must keep NaN bits, not just NaN-ness

    def ulp_for(self, dt: str) -> int:
        return self.ulp.get(dt, self.ulp.get("*", 0)) if isinstance(self.ulp, dict) else self.ulp

    def atol_for(self, dt: str) -> float:
        return self.atol.get(dt, self.atol.get("*", 0.0)) if isinstance(self.atol, dict) else self.atol

    def describe(self, dt: str) -> str:
        if self.exact:
            return "bit-exact"
        s = f"{self.ulp_for(dt)} ulp"
        if self.atol_for(dt):
            s += f" or |err| <= {self.atol_for(dt):g}"
        return s


EXACT = Tolerance(exact=True)
COPY = Tolerance(exact=True, signed_zero=True, nan_payload=True)
