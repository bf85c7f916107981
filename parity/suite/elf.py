"""Kernel names from compiled code: clang offload bundles, device ELF symbol tables, and the
toolchain's own tools (cuobjdump, llvm-objdump) as a fallback."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

# --------------------------------------------------------------------------- binaries
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def unbundle(data: bytes) -> dict[str, bytes]:
    """Entries of a clang offload bundle (what `hipcc --genco` writes) by target triple."""
    if not data.startswith(BUNDLE_MAGIC):
        return {}
    n = struct.unpack_from("<Q", data, 24)[0]
    p, out = 32, {}
    for _ in range(n):
        off, size, tl = struct.unpack_from("<QQQ", data, p)
        p += 24
        triple = data[p:p + tl].decode(errors="replace")
        p += tl
        out[triple] = data[off:off + size]
    return out


def device_elf(data: bytes, arch: str | None = None) -> bytes:
    """The device ELF inside a bundle (or the data itself when it is an ELF already)."""
    if data[:4] == b"\x7fELF":
        return data
    entries = unbundle(data)
    for triple, blob in entries.items():
        if "amdgcn" in triple and (arch is None or triple.endswith(arch)) and blob[:4] == b"\x7fELF":
            return blob
    raise ValueError("no device ELF in the code object" + (f" for {arch}" if arch else ""))


def elf_symbols(elf: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, bind, other, shndx) for every symbol of a 64-bit little-endian ELF."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for sec in secs:
        if sec[1] not in (2, 11):            # SHT_SYMTAB, SHT_DYNSYM
            continue
        off, size, link, entsize = sec[4], sec[5], sec[6], sec[9] or 24
        stroff = secs[link][4]
        for k in range(size // entsize):
            st_name, st_info, st_other, st_shndx = struct.unpack_from("<IBBH", elf, off + k * entsize)
            end = elf.index(b"\0", stroff + st_name)
            name = elf[stroff + st_name:end].decode(errors="replace")
            out.append((name, st_info & 0xF, st_info >> 4, st_other, st_shndx))
        if sec[1] == 2:
            break                            # .symtab has everything .dynsym has
    return out


def _kernels_from_elf(elf: bytes) -> list[str]:
    syms = elf_symbols(elf)
    names = {s[0] for s in syms}
    amd = any(n.endswith(".kd") for n in names)
    out = set()
    for name, typ, bind, other, shndx in syms:
        if typ != 2 or bind not in (1, 2) or shndx == 0 or not name or name.startswith("$"):
            continue
        if amd and f"{name}.kd" not in names:
            continue                          # AMD: a kernel has a kernel descriptor
        if not amd and bind != 1:
            continue                          # cubin: kernels are GLOBAL, helpers WEAK
        out.add(name)
    return sorted(out)


def _kernels_with_tools(path: Path) -> list[str]:
    for tool, args in (("cuobjdump", ["-symbols"]), ("nm", ["--defined-only"]),
                       ("llvm-readelf", ["--syms"]), ("readelf", ["--syms", "-W"])):
        exe = shutil.which(tool)
        if not exe:
            continue
        p = subprocess.run([exe, *args, str(path)], capture_output=True, text=True, errors="replace")
        if p.returncode != 0:
            continue
        found = set()
        for ln in p.stdout.splitlines():
            parts = ln.split()
            if tool == "nm" and len(parts) == 3 and parts[1] == "T":
                found.add(parts[2])
            elif tool == "cuobjdump" and "STO_ENTRY" in ln:
                found.add(parts[-1])
            elif tool.endswith("readelf") and len(parts) >= 8 and parts[3] == "FUNC" and parts[4] == "GLOBAL":
                found.add(parts[7])
        if found:
            return sorted(found)
    return []


def kernels_from_binary(path_or_bytes: str | os.PathLike | bytes, arch: str | None = None) -> list[str]:
    """extern "C" kernel names in a cubin, an AMD code object, or an offload bundle of one."""
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else Path(path_or_bytes).read_bytes()
    try:
        return _kernels_from_elf(device_elf(data, arch))
    except (ValueError, struct.error, IndexError):
        if isinstance(path_or_bytes, bytes):
            with tempfile.NamedTemporaryFile(suffix=".bin") as f:
                f.write(data)
                f.flush()
                return _kernels_with_tools(Path(f.name))
        return _kernels_with_tools(Path(path_or_bytes))
