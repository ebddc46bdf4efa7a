"""Provenance stamps, written at build time: every step that produces an artifact stores :func:`stamp`
under a ``"provenance"`` key of its JSON side file (the sha256 of each input as it was consumed, the params
it ran with, the code revision and the creation time). :mod:`poeval.report.provenance` reads them back
and checks them; this half sits low in the package, so that every stage can stamp what it builds without
importing the report stage.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from poeval.errors import PoevalError
from poeval import paths
from poeval.files import file_sha256, is_stream
from poeval.io import write_json

# Left out of a checkpoint's hash: training_log.json holds wall-clock timings and the training stamp's
# creation time, so two bit-identical trainings would otherwise hash differently. What sampling reads
# (weights, config, tokenizer) is all in the hash.
DIR_HASH_EXCLUDE = frozenset({"training_log.json"})


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        # no optional locks: `git status` must not take index.lock from someone committing in the same checkout
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def code_revision() -> str:
    """The revision of the poeval code that is running: ``git rev-parse HEAD`` (+ ``-dirty`` with
    uncommitted changes to tracked files) when the package is a tracked file of a git checkout, else
    ``poeval <version>``. The package's own directory is asked, not the working directory: a workflow
    runs in a data directory, and an installed package may sit inside some unrelated checkout."""
    package = Path(__file__).resolve().parent   # poeval/, this module being poeval/stamps.py
    if _git(["ls-files", "--error-unmatch", "__init__.py"], package) is not None:
        head = _git(["rev-parse", "HEAD"], package)
        if head:
            dirty = _git(["status", "--porcelain", "--untracked-files=no"], package)
            return head + ("-dirty" if dirty else "")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"poeval {version('poeval')}"
    except PackageNotFoundError:
        return "poeval (unknown version)"


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def files_under(path: Path) -> list[Path]:
    return sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(path).as_posix())


def dir_sha256(path: str | os.PathLike, exclude: frozenset[str] = DIR_HASH_EXCLUDE,
               file_hash: Callable[[Path], str] = file_sha256) -> str:
    """sha256 over the sorted relative paths and file hashes of a directory, without the top-level
    names in ``exclude``; a renamed, added, removed or changed file changes it. ``file_hash`` hashes one
    file (a reader that parses the bytes it hashes passes its own)."""
    path = Path(path)
    digest = hashlib.sha256()
    for file in files_under(path):
        rel = file.relative_to(path).as_posix()
        if rel not in exclude:
            digest.update(f"{rel}\0{file_hash(file)}\n".encode())
    return digest.hexdigest()


def path_sha256(path: str | os.PathLike) -> str:
    """:func:`poeval.files.file_sha256` of a file, :func:`dir_sha256` of a directory."""
    path = Path(path)
    if not path.exists():
        raise PoevalError(f"input not found: {path}")
    return dir_sha256(path) if path.is_dir() else file_sha256(path)


def stamp(inputs: dict[str, str | os.PathLike | None], params: dict) -> dict:
    """What an artifact was built from, to store under its ``"provenance"`` key: each input's path and
    sha256 (a directory: :func:`dir_sha256`; ``None`` inputs are left out), the params as given, the
    code revision and the UTC creation time."""
    recorded = {name: {"path": str(p), "sha256": path_sha256(p)} for name, p in inputs.items() if p is not None}
    return {"inputs": recorded, "params": params, "code": code_revision(), "created": utc_now()}


def write_stamp_file(output: str | os.PathLike, inputs: dict[str, str | os.PathLike | None], params: dict) -> None:
    """:func:`stamp` into :func:`poeval.paths.stamp_file` of ``output``, for an output that cannot hold it; none
    beside an output written as a stream (``--out /dev/null``, a pipe), which leaves no file to describe."""
    if is_stream(output):
        return
    write_json(paths.stamp_file(str(output)), {"provenance": stamp(inputs, params)})


def numbered(files: list[str]) -> dict[str, str]:
    """The inputs of a step that reads a list of files (a table's cells), named by position from 1."""
    return {str(i): path for i, path in enumerate(files, 1)}


def train_stamp(train: str | os.PathLike, dev: str | os.PathLike, model_cfg: dict, train_cfg: dict,
                **other_inputs: str | os.PathLike | None) -> dict:
    """Stamp for a checkpoint's ``training_log.json``: ``model_cfg`` and ``train_cfg`` as received
    (params ``models.<system>`` and ``training``; a system's own ``training`` block merged in, as
    `poeval train` does), before defaults are filled in. ``train`` is the file trained on (pseudo-sonnets
    for deepspeare/sa); ``other_inputs`` adds more, e.g. ``word2vec=path``."""
    return stamp({"train": train, "dev": dev, **other_inputs}, {"model": model_cfg, "training": train_cfg})


def sample_stamp(model_dir: str | os.PathLike, decoding: dict, sampling: dict, prompt: dict | None = None) -> dict:
    """Stamp for a samples file's ``.stats.json``: ``sampling`` holds the params ``sampling`` keys as
    received (n, batch_size, max_new_tokens, max_new_bytes, max_attempts, seed); ``prompt``, for a prompted
    generator only, what it was asked (so the stamps of every other sample keep their params)."""
    params = {"decoding": decoding, "sampling": sampling} | ({"prompt": prompt} if prompt is not None else {})
    return stamp({"model": model_dir}, params)


def supplied_stamp(source: str | os.PathLike, sha256: str, params: dict | None = None) -> dict:
    """Stamp for the ``.stats.json`` of samples the user supplied (rule import_samples): the file's path as
    params gave it, and the sha256 of the bytes the import parsed (a folder: :func:`dir_sha256`'s), hashed as
    they were read: a file rewritten while it was read is stamped as it was read, so it is stale afterwards.
    ``params``: what it records instead of the path (the rule's job)."""
    recorded = stamp({}, {"source": str(source)} if params is None else params)
    return recorded | {"inputs": {"source": {"path": str(source), "sha256": sha256}}}
