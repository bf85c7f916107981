"""Which kernels a mutant changed, read from the object code's ELF sections.

nvcc's cubin gives every kernel sections of its own (`.text.K`, `.nv.info.K`, `.nv.constant0.K`,
`.rel.text.K`, ...), so comparing a mutant's sections with the original's names the kernels whose
machine code differs, and only their cases need to run. A changed section that belongs to no
kernel of the source (a non-inlined device function, global data) may affect any kernel: then
every kernel counts as changed. Objects that are not ELF (or keep all kernels in one `.text`, as
AMD's code objects do) compare whole.
"""
from __future__ import annotations

import hashlib
import struct

# bookkeeping sections that change whenever any kernel's size or resources do
_LEDGER = {"", ".shstrtab", ".strtab", ".symtab", ".symtab_shndx", ".nv.info", ".nv.callgraph",
           ".nv.prototype", ".nv.rel.action", ".nv.compat", ".note.nv.tkinfo", ".note.nv.cuinfo"}
WHOLE = "<whole object>"


def sections(blob: bytes) -> dict[str, str]:
    """section name -> sha256 of its bytes (name WHOLE -> the blob's hash when it is not ELF64)."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or len(blob) < 64:
        return {WHOLE: hashlib.sha256(blob).hexdigest()}
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)

    def header(i: int) -> tuple[int, int, int, int]:      # name offset, type, file offset, size
        name, kind, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", blob, shoff + i * shentsize)
        return name, kind, off, size
    _, _, stroff, _ = header(shstrndx)
    out = {}
    for i in range(shnum):
        name_at, kind, off, size = header(i)
        name = blob[stroff + name_at:blob.index(b"\0", stroff + name_at)].decode(errors="replace")
        data = b"" if kind == 8 else blob[off:off + size]      # SHT_NOBITS (.bss, shared): size only
        out[name] = hashlib.sha256(size.to_bytes(8, "little") + data).hexdigest()
    return out


def changed_kernels(original: dict[str, str], mutant: dict[str, str], kernels: frozenset[str]) -> frozenset[str] | None:
    """The kernels among `kernels` whose sections differ; None when something that may belong to
    any kernel differs (then all of them must run); empty when nothing but bookkeeping differs."""
    changed = frozenset(original) ^ frozenset(mutant) | {n for n in original.keys() & mutant.keys()
                                                         if original[n] != mutant[n]}
    hit = set()
    for name in changed - _LEDGER:
        owner = next((k for k in kernels if name.endswith("." + k)), None)
        if owner is None:
            return None
        hit.add(owner)
    return frozenset(hit)
