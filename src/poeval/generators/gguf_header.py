"""A GGUF file's header walked before any reader allocates for it.

gguf-py (and so transformers) trusts the header's counts: a file that claims 2**60 tensors, or a string of
2**62 bytes, makes it try to allocate that much or fail with a ``struct.error`` deep inside. :func:`check`
reads the header (llama.cpp's gguf.md: magic, version, tensor and key/value counts, the key/value pairs, the
tensor infos) and bounds every count by the bytes the file has left, so a damaged or hostile file gives one
error naming it and what is wrong, before a byte of it is handed on.
"""

from __future__ import annotations

import struct
from pathlib import Path

from poeval.errors import PoevalError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
# value type -> size in bytes of the fixed-size types (gguf.md's GGUFValueType); 8 is a string, 9 an array
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9
MAX_DIMS = 8   # GGML_MAX_DIMS is 4; room for a later format
# arrays of arrays: gguf-py reads them by recursion, so a file nesting them 1000 deep would crash it (and
# this walk); no model file nests any (a tokenizer's tokens, scores and merges are flat arrays)
MAX_NESTING = 8


class _Header:
    """A cursor over the header that never reads or skips past the end of the file."""

    def __init__(self, handle, size: int, path: Path, where: str):
        self.handle, self.size, self.path, self.where = handle, size, path, where
        self.order = "<"

    def fail(self, what: str) -> PoevalError:
        return PoevalError(f"{self.where}: {self.path}: not a readable GGUF file: {what}")

    def left(self) -> int:
        return self.size - self.handle.tell()

    def unpack(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        data = self.handle.read(n)
        if len(data) < n:
            raise self.fail(f"the file ends inside the {what}")
        return struct.unpack(self.order + fmt, data)[0]

    def count(self, what: str, item_bytes: int) -> int:
        """A count of items of at least ``item_bytes`` each, refused when the file cannot hold them."""
        n = self.unpack("Q", what)
        if n * item_bytes > self.left():
            raise self.fail(f"{what} {n} does not fit in the file's {self.size} bytes")
        return n

    def skip(self, n: int, what: str) -> None:
        if n > self.left():
            raise self.fail(f"{what} {n} does not fit in the file's {self.size} bytes")
        self.handle.seek(n, 1)

    def string(self, what: str) -> None:
        self.skip(self.unpack("Q", f"{what} length"), f"{what} length")

    def value(self, kind: int, what: str, depth: int = 0) -> None:
        if kind in FIXED:
            self.skip(FIXED[kind], what)
        elif kind == STRING:
            self.string("string")
        elif kind == ARRAY:
            item = self.unpack("I", "array type")
            if item == ARRAY and depth + 2 > MAX_NESTING:   # this array and its items: depth + 2 levels
                raise self.fail(f"arrays nested more than {MAX_NESTING} deep in {what}")
            n = self.count("array length", FIXED.get(item, 8))   # a string or an array item takes >= 8 bytes
            if item in FIXED:
                self.skip(n * FIXED[item], "array length")
            else:
                for _ in range(n):
                    self.value(item, what, depth + 1)
        else:
            raise self.fail(f"unknown value type {kind} of {what}")


def check(path: Path, where: str) -> None:
    """Walk the header of the GGUF file ``path``; PoevalError (headed by ``where``) naming the file and the
    first count, length or type that the file cannot hold."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        header = _Header(handle, size, path, where)
        if handle.read(4) != MAGIC:
            raise header.fail("it does not start with the GGUF magic")
        version = header.unpack("I", "version")
        if version not in VERSIONS and struct.unpack(">I", struct.pack("<I", version))[0] in VERSIONS:
            header.order = ">"   # a big-endian file, as gguf-py reads them too
        elif version not in VERSIONS:
            raise header.fail(f"version {version} (poeval reads versions {', '.join(map(str, VERSIONS))})")
        # a tensor info takes at least 28 bytes (name length, dims, type, offset), a key/value pair 13
        tensors = header.count("tensor count", 28)
        for _ in range(header.count("key/value count", 13)):
            header.string("key")
            header.value(header.unpack("I", "value type"), "a value")
        for _ in range(tensors):
            header.string("tensor name")
            dims = header.unpack("I", "tensor dimensions")
            if dims > MAX_DIMS:
                raise header.fail(f"a tensor of {dims} dimensions")
            header.skip(8 * dims + 4 + 8, "tensor info")
