"""/etc/ld.so.cache, the dynamic loader's index of sonames to library paths (what `ldconfig -p`
prints), read without running ldconfig.

The layout is glibc's (sysdeps/generic/dl-cache.h: struct file_entry, cache_file, file_entry_new,
cache_file_new and the layout comment above them; elf/dl-cache.c _dl_load_cache_lookup, which
tells the three formats apart -- read at glibc commit 04277e02d7f5, 2.29), in the byte order of
the host that wrote it:

* old format (libc5, glibc 2.0-2.1), magic "ld.so-1.7.0" (11 bytes), then at offset 12 a u32
  nlibs, then nlibs entries of 12 bytes {i32 flags, u32 key, u32 value}; key (the soname) and
  value (the path) are offsets of NUL-terminated strings counted from the end of that array;
* new format, magic "glibc-ld.so.cache" + version "1.1" (20 bytes), u32 nlibs at 20, u32
  len_strings at 24, 20 more header bytes (flags, extension_offset, unused) up to offset 48,
  then nlibs entries of 24 bytes {i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap};
  key and value are offsets counted from the start of this header;
* both (glibc 2.2-2.31 wrote it so): the old format, then the new header at the next multiple of
  8 after the old entries; a reader takes the new part.

glibc >= 2.32 writes the new format alone. The byte order is tried little-endian first, then
big-endian; the one whose entries all point inside the file is taken.
"""

from __future__ import annotations

import struct
from typing import List, Optional, Tuple

from ...errors import ParseError

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
OLD_HEADER = 16   # magic (11), padding to 12, u32 nlibs
OLD_ENTRY = 12
NEW_HEADER = 48
NEW_ENTRY = 24


def parse(data: bytes) -> List[Tuple[str, str]]:
    """(soname, path) of every entry, in the cache's order. Raises ParseError when `data` is not
    an ld.so.cache of either format."""
    if data.startswith(NEW_MAGIC):
        return _new(data, 0)
    if data.startswith(OLD_MAGIC):
        for order in ("<", ">"):
            nlibs = _u32(data, 12, order)
            if nlibs is None:
                continue
            end = OLD_HEADER + nlibs * OLD_ENTRY
            if end > len(data):
                continue
            new_at = (end + 7) & ~7
            if data[new_at:new_at + len(NEW_MAGIC)] == NEW_MAGIC:
                return _new(data, new_at)
            entries = _entries(data, OLD_HEADER, nlibs, OLD_ENTRY, end, order)
            if entries is not None:
                return entries
        raise ParseError("ld.so.cache", "old-format entries point outside the file")
    raise ParseError("ld.so.cache", "neither 'ld.so-1.7.0' nor 'glibc-ld.so.cache1.1' at its start")


def _new(data: bytes, base: int) -> List[Tuple[str, str]]:
    for order in ("<", ">"):
        nlibs = _u32(data, base + 20, order)
        if nlibs is None or base + NEW_HEADER + nlibs * NEW_ENTRY > len(data):
            continue
        entries = _entries(data, base + NEW_HEADER, nlibs, NEW_ENTRY, base, order)
        if entries is not None:
            return entries
    raise ParseError("ld.so.cache", "new-format entries point outside the file")


def _entries(data: bytes, first: int, nlibs: int, size: int, strings: int,
             order: str) -> Optional[List[Tuple[str, str]]]:
    out = []
    for i in range(nlibs):
        _flags, key, value = struct.unpack_from(order + "iII", data, first + i * size)
        name, path = _string(data, strings + key), _string(data, strings + value)
        if name is None or path is None:
            return None
        out.append((name, path))
    return out


def _u32(data: bytes, offset: int, order: str) -> Optional[int]:
    if offset + 4 > len(data):
        return None
    return struct.unpack_from(order + "I", data, offset)[0]


def _string(data: bytes, offset: int) -> Optional[str]:
    if offset >= len(data):
        return None
    end = data.find(b"\0", offset)
    if end < 0:
        return None
    return data[offset:end].decode("utf-8", "replace")


def build(entries: List[Tuple[str, str]], order: str = "<", old: bool = False) -> bytes:
    """An ld.so.cache holding `entries` (soname, path): the new format alone, or with `old` the
    glibc 2.2-2.31 layout (old format, then the new one). For tests and fixtures."""
    strings = b""
    offsets = []
    for name, path in entries:
        offsets.append((len(strings), len(strings) + len(name) + 1))
        strings += name.encode() + b"\0" + path.encode() + b"\0"
    n = len(entries)
    strings_at = NEW_HEADER + n * NEW_ENTRY  # from the new header's start
    new = NEW_MAGIC + struct.pack(order + "II", n, len(strings)) + bytes(20)
    for k, v in offsets:
        new += struct.pack(order + "iIIIQ", 0x0303, strings_at + k, strings_at + v, 0, 0)
    new += strings
    if not old:
        return new
    head = OLD_MAGIC + b"\0" + struct.pack(order + "I", n)
    end = OLD_HEADER + n * OLD_ENTRY
    new_at = (end + 7) & ~7
    # old offsets count from the end of the old entries; the strings sit after the new part
    base = new_at - end + strings_at
    for k, v in offsets:
        head += struct.pack(order + "iII", 0x0303, base + k, base + v)
    return head + bytes(new_at - end) + new
