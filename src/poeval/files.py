"""Atomic file writing and hashing: every write goes to a temp file first and is renamed into place, so an
interrupted job never leaves a half-written output behind; what stands at an output path (a device, a pipe, a
link, a folder, a file poeval did not write) is checked first; a file's and a cache's bytes are hashed. Records
(JSON, JSON lines, bounded reading) are :mod:`poeval.io`'s, poem formats :mod:`poeval.poem_files`'s."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from poeval.errors import PoevalError


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temp file next to ``path``; rename it over ``path`` only if the block succeeds. What already
    stands at ``path`` is never replaced by anything but a regular file (:func:`write_target`): a character
    device or a pipe is written through, a symbolic link within the folder is written at its target."""
    path = Path(path)
    target, stream = write_target(path)
    kwargs = {"encoding": encoding, "newline": "\n"} if "b" not in mode else {}
    if stream:
        with _streamed(target, mode, kwargs) as handle:
            yield handle
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _raise_write_error(err, path)
        raise


def _streamed_kind(mode: int) -> bool:
    """Whether a file of this ``st_mode`` takes a write as a stream (a device like /dev/null, a pipe)."""
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def is_stream(path: str | os.PathLike) -> bool:
    """Whether the output ``path`` is written through as a stream (a device such as /dev/null, a pipe, a link to
    one): it keeps no file beside it (a stamp), since there is no file to describe."""
    try:
        return _streamed_kind(os.stat(path).st_mode)
    except OSError:
        return False


_KINDS = ((stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def write_target(path: Path) -> tuple[Path, bool]:
    """Where a write of the output ``path`` goes, and whether it streams there. A character device or a pipe
    (also behind a link: ``/dev/stdout``) is opened and written through, never replaced; a regular file or
    nothing is replaced atomically. A symbolic link to a regular file (or to nothing) is written at its
    target when the target lies in the output's folder, and refused otherwise; any other kind of file
    (a directory, a block device, a socket) is refused."""
    try:
        mode = os.stat(path).st_mode   # follows links: what a write would reach
    except FileNotFoundError:
        mode = None
    except OSError as err:   # a loop of links, a file where a folder should be
        raise PoevalError(f"cannot write {path}: {err.strerror}") from None
    if mode is not None and _streamed_kind(mode):
        return path, True
    for is_kind, kind in _KINDS:
        if mode is not None and is_kind(mode):
            raise PoevalError(f"{path}: is {kind}; expected a file to write")
    if not path.is_symlink():
        return path, False
    target, folder = path.resolve(), path.parent.resolve()
    if not _inside(target.parent, folder):
        raise PoevalError(f"{path}: is a symbolic link to {target}, outside its folder; poeval does not write "
                          "through it: name the file itself, or another path")
    return target, False


@contextlib.contextmanager
def _streamed(path: Path, mode: str, kwargs: dict):
    """``path`` (a device or a pipe) opened for writing as it is: no creating, truncating or renaming.
    A pipe waits for its reader, as a shell's ``>`` does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
    except OSError as err:
        raise PoevalError(f"cannot write {path}: {err.strerror}") from None
    if not _streamed_kind(os.fstat(fd).st_mode):   # swapped for another kind of file since write_target
        os.close(fd)
        raise PoevalError(f"{path}: changed while poeval opened it; try again")
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
    except BrokenPipeError:
        raise PoevalError(f"cannot write {path}: its reader closed it") from None
    except BaseException as err:
        _raise_write_error(err, path)
        raise


# A temp file or folder of an output is ``.<name>.<pid>.<8 random characters>.tmp`` (an older poeval's had
# no pid). A process killed outright (SIGKILL, out of memory, power loss) leaves it behind; the next write of
# that output removes it once it is stale: its process is gone from this machine and it has not changed for
# STALE_TEMP_SECONDS. Both, because a pid says nothing about a process on another machine that shares the
# folder, and a live writer keeps touching its file.
STALE_TEMP_SECONDS = 600


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def _running(pid: str | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):   # no such process; a number too big to be a pid
        return False
    except PermissionError:   # another user's process
        return True
    return True


def remove_stale_temps(path: Path) -> None:
    """Remove the stale temp files and folders of the output ``path`` (see :data:`STALE_TEMP_SECONDS`)."""
    own = re.compile(rf"\.{re.escape(path.name)}\.(?:(\d+)\.)?[a-z0-9_]{{8}}\.tmp")
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            match = own.fullmatch(entry.name)
            if match is None or _running(match[1]):
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime < STALE_TEMP_SECONDS:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved, so links and ``..`` count)."""
    return path == folder or folder in path.parents


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: equal once resolved (symlinks, ``..``), or hard links of one file."""
    if Path(a).resolve() == Path(b).resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:   # one of them does not exist (yet)
        return False


def sidecars(path: str | os.PathLike) -> list[str]:
    """The files poeval keeps beside a file to describe it: its provenance stamp (:func:`poeval.paths.stamp_file`)
    and, of an embeddings cache, its metadata (``<file>.npy.json``, :func:`poeval.metrics.semantic.sidecar_path`)."""
    from poeval.paths import stamp_file

    return [stamp_file(str(path)), *([f"{path}.json"] if str(path).endswith(".npy") else [])]


def clash(out: str | os.PathLike, path: str | os.PathLike) -> str | None:
    """How writing ``out`` would overwrite ``path`` (an input, or another output): ``"is also"`` (one file,
    also through a link), ``"lies inside"`` (the folder ``path``: a cache), ``"is the sidecar of"``
    (:func:`sidecars`); ``None`` where it would not."""
    if not str(path):
        return None
    if same_file(out, path):
        return "is also"
    if _inside(Path(out).resolve(), Path(path).resolve()):
        return "lies inside"
    if any(same_file(out, side) for side in sidecars(path)):
        return "is the sidecar of"
    return None


def check_out_dir(path: str | os.PathLike, command: str, marker: str, inputs: Iterable = (),
                  force: bool = False) -> None:
    """Refuse to replace the folder ``path`` unless it is absent, empty or holds ``command``'s own earlier
    output (a file matching the glob ``marker``), or ``force``. A folder that is or holds the working
    directory or one of ``inputs`` is refused even with ``force``: replacing it would delete them."""
    path = Path(path)
    where = path.resolve()
    if _inside(Path.cwd().resolve(), where):
        raise PoevalError(f"refusing to replace {path}: it is or holds the working directory; choose another folder")
    for name in inputs:
        if name is not None and _inside(Path(name).resolve(), where):
            raise PoevalError(f"refusing to replace {path}: it holds {name}, an input of `{command}`; "
                              "choose another folder")
    if path.is_dir() and not force and any(path.iterdir()) and not any(path.glob(marker)):
        raise PoevalError(f"refusing to replace {path}: it holds files that are not an earlier `{command}` output "
                          f"(no {marker}); empty it, choose another folder, or pass --force")


def check_out_file(path: str | os.PathLike, command: str, is_own, mark: str, force: bool = False) -> None:
    """:func:`check_out_dir` of a file: refuse to replace the file ``path`` unless it is absent, empty or
    ``command``'s own earlier output (``is_own(path)``: it bears ``mark``), or ``force``."""
    path = Path(path)
    if path.is_file() and path.stat().st_size and not force and not is_own(path):
        raise PoevalError(f"refusing to replace {path}: it is not an earlier `{command}` output (no {mark}); "
                          "choose another path, or pass --force")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, command: str, marker: str, inputs: Iterable = (), force: bool = False):
    """A temp directory next to ``path`` to fill; it takes the place of ``path`` (replacing an earlier one)
    only if the block succeeds, and only where :func:`check_out_dir` allows it (checked first)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise PoevalError(f"{path}: is a file; expected a directory to write")
    check_out_dir(path, command, marker, inputs, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / path.name)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        _raise_write_error(err, path)
        raise


# What a full disk, a quota or a file-size limit raise while writing: the user's to fix, said in one line.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS})


def _raise_write_error(err: BaseException, path: Path) -> None:
    """A write that the disk refused as one PoevalError naming ``path``; any other error is left as it is."""
    if isinstance(err, OSError) and err.errno in WRITE_ERRNOS:
        raise PoevalError(f"cannot write {path}: {err.strerror}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (inputs recorded in caches and resume states)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dir_files_sha256(folder: str | os.PathLike) -> dict[str, str]:
    """{name: sha256} of the files of a cache directory being written, for its sidecar (:func:`cache_meta`)."""
    return {p.name: file_sha256(p) for p in sorted(Path(folder).iterdir()) if p.is_file()}


def unhashed(path: str | os.PathLike, sidecar: str | os.PathLike, command: str) -> PoevalError:
    return PoevalError(f"{path}: its sidecar {Path(sidecar).name} records no sha256 (written by an older poeval); "
                       f"rebuild it with `{command}`")


def check_sha256(path: str | os.PathLike, recorded: Any, sidecar: str | os.PathLike, command: str) -> None:
    """Refuse a cache file whose bytes are not those its sidecar recorded when it was written: a file
    edited, swapped or left by an interrupted build would otherwise be used as if it were the cache.
    ``command`` builds the cache again. One read of the file (about 1 GB/s)."""
    path, name = Path(path), Path(sidecar).name
    if not isinstance(recorded, str):
        raise unhashed(path, sidecar, command)
    if not path.is_file():
        raise PoevalError(f"{path}: not found, though its sidecar {name} lists it; rebuild it with `{command}`")
    actual = file_sha256(path)
    if actual != recorded:
        raise PoevalError(f"{path}: does not match its sidecar {name} (sha256 {actual[:12]}..., recorded "
                          f"{recorded[:12]}...); rebuild it with `{command}`")
