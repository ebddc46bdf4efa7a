"""The request log: every answer an endpoint gave, appended as it arrives, keyed by its request.

A sample job that is killed, crashes or runs out of its failure budget leaves its log behind; the rerun
reads it and sends only the requests it does not hold, so nothing is paid twice and, one request in
flight at a time, the rerun's samples equal an uninterrupted run's. Each line is flushed and synced before
the next request's answer is counted; a line cut short by a kill is dropped (and the file truncated to
its last whole line) when the log is opened again. The first line marks the file as poeval's, so a file
of the same name that poeval did not write is never appended to.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from poeval.errors import PoevalError

HEADER = {"poeval_request_log": 1}


def log_path(out: str | os.PathLike) -> Path:
    """The request log of the samples file ``out``: ``<out stem>.requests.jsonl`` beside it."""
    out = Path(out)
    return out.with_name(f"{out.stem}.requests.jsonl")


class RequestLog:
    """Append-only, thread-safe; :meth:`get` returns a logged answer by request key."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.answers: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._read()
        self.reused = 0

    def _read(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append(HEADER)
            return
        if not self.path.is_file():
            raise PoevalError(f"{self.path}: not a regular file; the request log must be one")
        data = self.path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]
        lines = whole.decode("utf-8", errors="replace").splitlines()
        if not lines or _parse(lines[0]) != HEADER:
            raise PoevalError(f"{self.path}: not a poeval request log; move it away (poeval never writes over a "
                              "file it did not write)")
        if len(whole) < len(data):   # a line cut short by a kill: drop it, so the next append starts clean
            with open(self.path, "r+b") as handle:
                handle.truncate(len(whole))
        for line in lines[1:]:
            entry = _parse(line)
            if isinstance(entry, dict) and "key" in entry:
                self.answers[entry["key"]] = entry

    def get(self, key: str) -> dict | None:
        entry = self.answers.get(key)
        if entry is not None:
            self.reused += 1
        return entry

    def add(self, entry: dict) -> None:
        """Append one answer (with its ``key``), flushed and synced to disk before returning."""
        with self._lock:
            self._append(entry)
            self.answers[entry["key"]] = entry

    def _append(self, entry: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def _parse(line: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None
