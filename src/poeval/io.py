"""Records on disk: reading lines, JSON and JSON lines within bounds, writing them (through
:func:`poeval.files.atomic_write`), and a cache's files checked against its sidecar. Writing and hashing are
:mod:`poeval.files`'s, poem formats :mod:`poeval.poem_files`'s."""

from __future__ import annotations

import gzip
import json
import os
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from poeval.errors import PoevalError, first_line
from poeval.files import unhashed, atomic_write, check_sha256, file_sha256


def input_file(path: str | os.PathLike) -> Path:
    """``path`` as a readable file, or a clear error (missing, or a directory where a file is expected)."""
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"input not found: {path}")
    if path.is_dir():
        raise PoevalError(f"{path}: is a directory; expected a file")
    return path


class _Hashed:
    """A binary file that feeds each byte read from it to ``digest``: what a reader parses is what it hashes."""

    def __init__(self, handle, digest):
        self._handle, self._digest = handle, digest

    def read(self, size: int = -1) -> bytes:
        return self._fed(self._handle.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._fed(self._handle.readline(size))

    def _fed(self, data: bytes) -> bytes:
        self._digest.update(data)
        return data


def _decode(raw: bytes, path: Path, lineno: int) -> str:
    """One line as text; a UTF-8 byte-order mark at the start of the file is dropped (Windows editors)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PoevalError(f"{path}: line {lineno}: not valid UTF-8 (byte {err.start + 1} of the line: "
                          f"{err.reason})") from None
    return text.removeprefix("\ufeff") if lineno == 1 else text


# Caps on what a reader takes in, so that a gzip bomb stops with an error instead of filling memory or running
# for hours (a file of newlines reads at about a million lines a second). No real input comes near them: a
# poem's JSON line is under 100 kB, a corpus a few GB and a few million lines at most. Raised through the
# environment (docs/inputs-errors.md).
MAX_LINE_BYTES = ("POEVAL_MAX_LINE_BYTES", 64 << 20)       # 64 MiB per line
MAX_INPUT_BYTES = ("POEVAL_MAX_INPUT_BYTES", 64 << 30)     # 64 GiB per file, decompressed
MAX_INPUT_LINES = ("POEVAL_MAX_INPUT_LINES", 100_000_000)  # lines per file, blank ones too


def cap(setting: tuple[str, int], unit: str = "bytes") -> int:
    """The value of a cap (``(environment variable, default)``): the variable's, where it is set."""
    name, default = setting
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise PoevalError(f"{name}={value!r}: expected a positive number of {unit}")
    return int(value)


def read_lines(path: str | os.PathLike, digest=None) -> Iterator[tuple[int, str]]:
    """(line number, text) of a (optionally gzipped) UTF-8 text file; bad bytes are reported with the
    number of the line that holds them (decoding line by line, not in buffered blocks). A line longer than
    :data:`MAX_LINE_BYTES`, a file longer than :data:`MAX_INPUT_BYTES` (decompressed) or of more than
    :data:`MAX_INPUT_LINES` lines is an error. ``digest`` (a :mod:`hashlib` object) is fed the file's bytes
    (as stored: gzipped for ``.gz``) in the same pass; it holds the whole file once the lines are exhausted."""
    path = input_file(path)
    caps = (cap(MAX_LINE_BYTES), cap(MAX_INPUT_BYTES), cap(MAX_INPUT_LINES, "lines"))
    total = 0
    with open(path, "rb") as stored:
        source = stored if digest is None else _Hashed(stored, digest)
        handle = gzip.GzipFile(fileobj=source, mode="rb") if path.suffix == ".gz" else source
        try:
            for lineno, raw in enumerate(iter(lambda: handle.readline(caps[0] + 1), b""), 1):
                total += len(raw)
                _check_caps(path, lineno, raw, total, caps)
                yield lineno, _decode(raw, path, lineno)
            while source.read(1 << 20):   # what gzip left unread (nothing, unless junk follows), for the digest
                pass
        except (OSError, EOFError, zlib.error) as err:   # a truncated or corrupt gzip stream
            raise PoevalError(f"{path}: cannot be read ({err})") from None


def _check_caps(path: Path, lineno: int, raw: bytes, total: int, caps: tuple[int, int, int]) -> None:
    line_cap, total_cap, lines_cap = caps
    if len(raw) > line_cap:
        raise PoevalError(f"{path}: line {lineno}: longer than {line_cap} bytes "
                          f"(the cap {MAX_LINE_BYTES[0]} raises)")
    if total > total_cap:
        raise PoevalError(f"{path}: more than {total_cap} bytes (decompressed) at line {lineno} "
                          f"(the cap {MAX_INPUT_BYTES[0]} raises)")
    if lineno > lines_cap:
        raise PoevalError(f"{path}: more than {lines_cap} lines (the cap {MAX_INPUT_LINES[0]} raises)")


def read_bytes(path: str | os.PathLike) -> bytes:
    """A whole file's bytes, for a format parsed in memory (Parquet, Arrow); more than :data:`MAX_INPUT_BYTES`
    is an error. A caller that stamps the file hashes these very bytes."""
    path, limit = input_file(path), cap(MAX_INPUT_BYTES)
    blocks, total = [], 0
    with open(path, "rb") as handle:   # in blocks: read(limit) would allocate the whole cap at once
        for block in iter(lambda: handle.read(1 << 24), b""):
            total += len(block)
            if total > limit:
                raise PoevalError(f"{path}: more than {limit} bytes (the cap {MAX_INPUT_BYTES[0]} raises)")
            blocks.append(block)
    return b"".join(blocks)


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield the records (JSON objects) of a (optionally gzipped) JSON-lines file, with clear errors for
    bad bytes, bad JSON and lines that are not objects."""
    return (record for _, record in read_jsonl_lines(path))


def read_jsonl_lines(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of :func:`read_jsonl`'s records, for errors that name a record's line."""
    return jsonl_records(path, read_lines(path))


def jsonl_records(path: str | os.PathLike, lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, dict]]:
    """(line number, record) of the numbered ``lines`` (:func:`read_lines`) of the JSON-lines file ``path``."""
    for lineno, line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise PoevalError(f"{path}: line {lineno}: invalid JSON ({err.msg})") from None
        except RecursionError:
            raise PoevalError(f"{path}: line {lineno}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise PoevalError(f"{path}: line {lineno}: expected a JSON object, got {_json_kind(record)}")
        yield lineno, record


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


EMPTY_FILE = "the file is empty or holds only blank lines"


def nothing_usable(path: str | os.PathLike, read: int, skipped: Counter | dict, unit: str = "records",
                   empty: str = EMPTY_FILE) -> PoevalError:
    """The error for an input that holds nothing usable, with what was read and why it was skipped
    (``empty`` says why nothing was read)."""
    if not read:
        return PoevalError(f"{path}: nothing usable: no {unit} ({empty})")
    why = ", ".join(f"{reason} {n}" for reason, n in sorted(skipped.items()) if n) or "none"
    return PoevalError(f"{path}: nothing usable: read {read} {unit}, kept 0; skipped: {why}")


def write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> int:
    """Write records atomically, one compact JSON object per line; return how many were written."""
    n = 0
    with atomic_write(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write one JSON document atomically with sorted keys, so equal content gives equal bytes."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, ensure_ascii=False, indent=2, sort_keys=True)
        handle.write("\n")


def read_json(path: str | os.PathLike) -> Any:
    text = "".join(line for _, line in read_lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PoevalError(f"{path}: line {err.lineno}: invalid JSON ({err.msg})") from None
    except RecursionError:
        raise PoevalError(f"{path}: JSON nested too deeply") from None


def cache_meta(meta_path: str | os.PathLike, fmt: str, input_path: str | os.PathLike | None, what: str,
               command: str) -> dict:
    """The metadata of a cache directory built from a training split (memorization index, topic model),
    checked: present, of format ``fmt``, its files those it recorded (``sha256``: :func:`dir_files_sha256`)
    and, given ``input_path``, built from that file's current bytes. ``what`` names the cache in errors,
    ``command`` the command that builds it."""
    meta_path = Path(meta_path)
    if not meta_path.is_file():
        raise PoevalError(f"{what} not found: {meta_path}; build it with `{command}`")
    meta = read_json(meta_path)
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise PoevalError(f"{meta_path.parent}: not a {what} of format {fmt}; rebuild it with `{command}`")
    files = meta.get("sha256")
    if not isinstance(files, dict) or not files:
        raise unhashed(meta_path.parent, meta_path, command)
    for name, recorded in sorted(files.items()):
        check_sha256(meta_path.parent / name, recorded, meta_path, command)
    if input_path is not None:
        check_built_from(meta_path.parent, meta.get("input_sha256"), input_path, f"rebuild it with `{command}`")
    return meta


def check_built_from(cache, recorded: str | None, input_path: str | os.PathLike, fix: str) -> None:
    """A cache of a file (its recorded ``input_sha256``) must be of that file's current bytes: else an error
    with both hashes, since a cache of another file and one of an older version look alike by name."""
    now = file_sha256(input_path)
    if now != recorded:
        was = f"sha256 {recorded[:12]}…" if isinstance(recorded, str) else "no recorded sha256"
        raise PoevalError(f"{cache} was built from another file, or another version of it ({was}), not from "
                          f"{input_path} as it is now (sha256 {now[:12]}…); {fix}")


def load_npz(path: str | os.PathLike, keys: Sequence[str], rebuild: str) -> dict:
    """The arrays ``keys`` of a cache's ``.npz`` file (no pickles), or one error naming the file when it is
    missing, truncated or lacks one; ``rebuild`` says how to make it again."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as arrays:
            return {key: arrays[key] for key in keys}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
        raise PoevalError(f"{path}: cannot read the cached arrays ({first_line(err)}); {rebuild}") from None


def load_npy(path: str | os.PathLike, rebuild: str):
    """A cache's ``.npy`` array, memory-mapped (no pickles), or one error naming the file."""
    import numpy as np

    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise PoevalError(f"{path}: cannot read the cached array ({first_line(err)}); {rebuild}") from None


def read_json_object(path: str | os.PathLike) -> dict:
    """:func:`read_json` of a file that must hold one JSON object (a cache's metadata, a manifest)."""
    value = read_json(path)
    if not isinstance(value, dict):
        raise PoevalError(f"{path}: expected a JSON object, got {_json_kind(value)}")
    return value
