"""Progress bars for long work, one factory for every command: tqdm's bar on a terminal (or a notebook), and
elsewhere, where stderr is a log file or a pipe, a plain line every :data:`LOG_INTERVAL` seconds and one at the
end. A bar that finishes within :data:`LOG_INTERVAL` writes nothing to a log, so a log holds no empty bar
(``rhyme schemes (en): 0stanza``) and no carriage-return redraws."""

from __future__ import annotations

import sys

# seconds between two lines of a bar in a log; also how long a bar waits before its first line there
LOG_INTERVAL = 10.0
# seconds between two redraws on a terminal: tqdm's default redraws ten times a second
TERMINAL_INTERVAL = 1.0


class _Lines:
    """A stream for tqdm that turns its redraws (``\\r`` + status, blank-padded) into whole lines of ``stream``."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self._stream.write(line + "\n")

    def flush(self) -> None:
        self._stream.flush()


def _interactive(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


def progress_bar(iterable=None, *, progress: bool = True, **kwargs):
    """A tqdm bar over ``iterable`` (or of ``total=``), shown only when ``progress``; ``kwargs`` are tqdm's
    (``desc``, ``unit``, ``total``, ``initial``…). On a terminal it redraws in place; in a log it writes a
    line every :data:`LOG_INTERVAL` seconds from then on, and its last state when it closes."""
    stream = sys.stderr
    if _interactive(stream):
        from tqdm.auto import tqdm

        return tqdm(iterable, disable=not progress, **{"mininterval": TERMINAL_INTERVAL, **kwargs})
    from tqdm import tqdm

    logged = {**kwargs, "file": _Lines(stream), "mininterval": LOG_INTERVAL, "maxinterval": LOG_INTERVAL,
              "delay": LOG_INTERVAL, "leave": True, "ascii": True, "ncols": 100}
    return tqdm(iterable, disable=not progress, **logged)
