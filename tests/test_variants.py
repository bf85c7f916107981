"""Ops of a family with several kernels declare which one they are (`StructuredSpec.variant`, an enum
of the family's module): the cupy level's array code reads its facts instead of the op's name, so a
variant must name the op's own kernel."""
from __future__ import annotations

from parity.ops import CATALOG

FAMILIES = ("reduce", "nn", "indexing", "sort", "pool", "conv")
PREFIX = {"reduce": "fast_", "sort": "asort_"}          # the kernel root around the variant's value
TOLD_BY_LAUNCH = {"reduce.sum_atomic", "conv.conv1d_host", "conv.conv2d_host"}   # num_sum_dims; conv.host


def test_every_kernel_of_a_family_with_variants_declares_its_own():
    ops = [op for op in CATALOG.values() if op.family in FAMILIES and op.name not in TOLD_BY_LAUNCH]
    assert len(ops) == 5 + 6 + 5 + 2 + 4 + 7
    for op in ops:
        assert op.root == PREFIX.get(op.family, "") + op.spec.variant.value, op.name
    assert all(CATALOG[name].spec.variant is None for name in TOLD_BY_LAUNCH)
