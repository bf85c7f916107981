"""A chain's geometry worked out for each of its dtypes when its file is loaded, before any case is made.

`format.parse_chain` checks the file's keys and types; this builds every step as a case would (the
op, its dtype key, each operand's views over the tensor it reads, what Candle's host refuses, the
output's shape and size) without data. A chain file that cannot run is then refused when it is
loaded, in one line naming the file, the chain, the step and the key (exit 2), never a traceback
from inside a run (exit 3). Whatever the dry run raises is the file's problem: said the same way.
"""
from __future__ import annotations

from parity.chains.format import Chain, ChainError, check_size
from parity.chains.steps import StepBuilder, Tensor
from parity.core.dtypes import dtype
from parity.core.suggest import unknown
from parity.ops import CATALOG


def check_chain(chain: Chain) -> Chain:
    """`chain`, once each of its dtypes builds; ChainError (one line) for the first step that does not."""
    for step in chain.steps:
        if step.op not in CATALOG:
            raise ChainError(f"{step.label}: op: {unknown('op', step.op, CATALOG, 'see `parity list`')}")
    for key in chain.dtypes:
        where = f"dtype {key}: " if len(chain.dtypes) > 1 else ""
        try:
            _dry_run(chain, key)
        except ChainError as e:
            raise ChainError(f"{where}{e}") from None
    return chain


def _dry_run(chain: Chain, key: str) -> None:
    tensors: dict[str, Tensor] = {}
    for n, decl in chain.tensors.items():
        tensors[n] = Tensor(dtype(decl.dtype.replace("{dt}", key)), decl.shape)
    for step in chain.steps:
        try:
            sb = StepBuilder(step, step.key(key), tensors)
            out = sb.out_tensor()
            sb.allowance()                  # the op's tolerance and reference exist for this step
        except ChainError:
            raise
        except Exception as e:              # (the geometry of an op the chain layer reads wrongly)
            raise ChainError(f"{step.label}: {type(e).__name__}: {e}") from None
        check_size(out.shape, f"{step.label}: out {step.out}")
        tensors[step.out] = out
