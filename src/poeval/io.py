"""Reading and writing artifacts. Every write goes to a temp file first and is renamed into place,
so an interrupted job never leaves a half-written output behind."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from poeval.errors import PoevalError
from poeval.text import strip_punctuation


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temp file next to ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
        kwargs = {"encoding": encoding, "newline": "\n"} if "b" not in mode else {}
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield the records of a (optionally gzipped) JSON-lines file, with clear errors for bad bytes or JSON."""
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"input not found: {path}")
    with _open_text(path) as handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, 1):
                if line.strip():
                    yield json.loads(line)
        except UnicodeDecodeError as err:
            raise PoevalError(f"{path}: not valid UTF-8 near line {lineno + 1} ({err.reason})") from None
        except json.JSONDecodeError as err:
            raise PoevalError(f"{path}: line {lineno}: invalid JSON ({err.msg})") from None


def read_text_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a (optionally gzipped) UTF-8 text file, without their line ends."""
    path = Path(path)
    if not path.is_file():
        raise PoevalError(f"input not found: {path}")
    lines: list[str] = []
    with _open_text(path) as handle:
        try:
            for line in handle:
                lines.append(line.rstrip("\r\n"))
        except UnicodeDecodeError as err:
            raise PoevalError(f"{path}: not valid UTF-8 near line {len(lines) + 1} ({err.reason})") from None
    return lines


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
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"input not found: {path}")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (inputs recorded in caches and resume states)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_quatrain(lines) -> str | None:
    """Why a poem is not a usable quatrain, or None when it is."""
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        return "malformed"
    if len(lines) != 4:
        return "not_4_lines"
    if any(not v.strip() for v in lines):
        return "empty_verse"
    if any(not strip_punctuation(v).strip() for v in lines):
        return "punctuation_only_verse"
    return None


def _is_jsonl(path: Path) -> bool:
    if path.suffix in {".jsonl", ".gz"}:
        return True
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
    return head.startswith(b"{")


def _plain_text_poems(path: Path) -> list[list[str]]:
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as err:
        raise PoevalError(f"{path}: not valid UTF-8 (byte {err.start})") from None
    poems, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line.strip())
        elif current:
            poems.append(current)
            current = []
    if current:
        poems.append(current)
    return poems


def _scheme_field(record: dict) -> dict:
    return {"scheme": record["scheme"]} if isinstance(record.get("scheme"), str) else {}


def read_poems(path: str | Path) -> tuple[list[dict], Counter]:
    """Poems of a JSONL file (`{"id", "lines"}`) or a plain text file (blank line between poems).

    Returns the usable quatrains and a counter of skipped poems by reason."""
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"input not found: {path}")
    if _is_jsonl(path):
        records = [{"id": r.get("id", str(i)), "lines": r.get("lines")} | _scheme_field(r)
                   for i, r in enumerate(read_jsonl(path))]
    else:
        records = [{"id": str(i), "lines": lines} for i, lines in enumerate(_plain_text_poems(path))]
    kept, skipped = [], Counter()
    for record in records:
        reason = _check_quatrain(record["lines"])
        if reason:
            skipped[reason] += 1
        else:
            kept.append(record)
    return kept, skipped
