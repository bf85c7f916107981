"""What parity knows about one family of kernel conventions: an ABI profile.

A profile is a catalog of ops (each with its kernel-name pattern, its parameters by role, the host
launch, a reference and a tolerance), the sweeps that select its cases, and how to recognise a
suite written in its conventions. Candle's ABI (parity/ops) is the first profile; rocm-rs's
rocarray kernels the second; a port author declares a third in a TOML file (parity.profiles.declared).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from parity.core.suggest import unknown
from parity.ops.base import Op

DECLARATION_FILE = "parity-kernels.toml"                  # a port's declared kernels, next to its sources
BUILTIN = {"candle": "parity.profiles.candle", "rocm-rs": "parity.profiles.rocm_rs"}   # name -> its module


@dataclass
class Profile:
    name: str                                   # "candle", "rocm-rs", a declared name
    title: str                                  # one line: whose kernels, which conventions
    ops: dict[str, Op]                          # op name -> op (other profiles' names carry `prefix`)
    prefix: str = ""                            # op-name prefix ("" for Candle, "rocm-rs." ...)
    source: str = "built-in"                    # "built-in", or the declaration file
    sweeps: dict[str, dict] = field(default_factory=dict)   # bundled sweeps as parsed TOML (not Candle's:
                                                # those are the files of cases/)
    notes: tuple[str, ...] = ()                 # facts of the profile every report should carry
    typed: Callable[[], dict[str, list[str]]] | None = field(default=None, repr=False, compare=False)
                                                # kernel -> its parameter types with what each pointer
                                                # points to (Candle's: its upstream record); None: the ops'

    def typed_signatures(self) -> dict[str, list[str]]:
        """Kernel -> parameter types with pointees (`const size_t*`, `f32*`), for the kernels whose
        pointees the profile knows: a described kernel's own (KernelOp.typed_signature), Candle's from
        its record of upstream. Coverage compares a suite's pointers against them."""
        if self.typed is not None:
            return self.typed()
        out = {}
        for op in self.ops.values():
            typed = getattr(op, "typed_signature", None)
            if typed is not None:
                out.update((op.kernel_name(key), typed(key)) for key in op.dtypes)
        return out

    # ---- the catalog
    def expected_kernels(self) -> dict[str, tuple[Op, str]]:
        """Every kernel name the profile expects a suite to define -> (op, dtype key)."""
        return {op.kernel_name(key): (op, key) for op in self.ops.values() for key in op.dtypes}

    def short(self, op_name: str) -> str:
        """An op's name without the profile prefix (what users type: `elementwise.add`)."""
        return op_name[len(self.prefix):] if self.prefix and op_name.startswith(self.prefix) else op_name

    def families(self) -> list[str]:
        return list(dict.fromkeys(op.family for op in self.ops.values()))

    def select(self, patterns: list[str] | None = None) -> list[Op]:
        """Ops matching any glob (on the full name, the name without the prefix, or the family);
        KeyError naming the closest ones when a pattern matches none."""
        if not patterns:
            return list(self.ops.values())
        chosen: dict[str, Op] = {}
        for pat in patterns:
            hits = [op for name, op in self.ops.items()
                    if fnmatch.fnmatchcase(name, pat) or fnmatch.fnmatchcase(self.short(name), pat)
                    or fnmatch.fnmatchcase(op.family, pat)]
            if not hits:
                names = [*(self.short(n) for n in self.ops), *self.families()]
                raise KeyError(unknown("op", pat, names, f"see `parity list --profile {self.name}`"))
            chosen.update((op.name, op) for op in hits)
        return list(chosen.values())

    def score(self, kernel_names: Iterable[str]) -> int:
        """How many of these kernel names the profile expects (recognition)."""
        expected = self.expected_kernels()
        return sum(1 for n in kernel_names if n in expected)

    def shape_classes(self) -> dict[str, str]:
        """Every shape-class name of the profile's ops -> its doc."""
        out: dict[str, str] = {}
        for op in self.ops.values():
            for name, sc in op.spec.shapes.items():
                out.setdefault(name, sc.doc)
        return out

    def meta(self) -> dict:
        """What results.json says about the profile (meta.profile)."""
        out = {"name": self.name, "title": self.title, "source": self.source,
               "ops": len(self.ops), "kernels": len(self.expected_kernels())}
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def sweep_names(self) -> list[str]:
        return sorted(self.sweeps)


def default_sweeps(extra_huge: list[str] | None = None) -> dict[str, dict]:
    """smoke / pr / nightly / huge of a profile without sweep files: every op on every shape class
    that is not opt-in (smoke: the normal and special values only), huge: the opt-in lengths."""
    return {
        "smoke": {"description": "every kernel x every shape class x {normal, special}", "seeds": [0],
                  "group": [{"ops": ["*"], "values": ["normal", "special"]}]},
        "pr": {"description": "every kernel x every shape class x every value class", "seeds": [0],
               "group": [{"ops": ["*"]}]},
        "nightly": {"description": "pr with three seeds", "seeds": [0, 1, 2], "group": [{"ops": ["*"]}]},
        "huge": {"description": "the opt-in lengths beyond 2^31 (GPU levels; many GiB)", "seeds": [0],
                 "group": [{"ops": ["*"], "layouts": ["huge"], "values": ["normal"],
                            **({"dtypes": extra_huge} if extra_huge else {})}]},
    }


def declaration_path(folder: Path | None) -> Path | None:
    """`parity-kernels.toml` of a suite folder, when there is one."""
    if folder is None:
        return None
    p = Path(folder) / DECLARATION_FILE
    return p if p.is_file() else None
