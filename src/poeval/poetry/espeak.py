"""espeak-ng as the rhyme detector's grapheme-to-phoneme fallback: one persistent process per voice,
kept in step with its questions.

espeak-ng (``-q --ipa -v VOICE``) reads ``word.`` + newline on stdin and answers one IPA line per
sentence, but it wraps a long one (a word of about 700 letters) over several lines: read a line per word,
every later word got an earlier word's phones. So each word is cut to its last :data:`MAX_LETTERS`
letters (no other characters are sent), and each query is followed by the :data:`SENTINEL` word: the
answer counts only when the line after it is the sentinel's phones (read when the process starts). On
any other line, a silence or a dead process the process is restarted and the word asked once more; a
word that fails twice gets no phones. Answers are cached by the letters sent.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import threading

from poeval.errors import PoevalError

# A rhyme needs only the end of the word (its last stressed vowel onwards), and a German compound's last
# part fits in 40 letters; espeak-ng answers that in one line (it wraps only past ~700 letters)
MAX_LETTERS = 40
SENTINEL = "xylophone"   # a real word with a distinctive answer: a wrapped or shifted line is not it
TIMEOUT_S = 10.0
VOICES = {"en": "en-us", "de": "de"}
_MISSING = ("rhyme detection needs the espeak-ng phonemizer, which was not found on PATH; "
            "install it with `apt-get install espeak-ng` (or `brew install espeak-ng`)")


def _executable() -> str | None:
    return shutil.which("espeak-ng") or shutil.which("espeak")


def check_phonemizer() -> None:
    """Raise :class:`PoevalError` with install advice when espeak-ng is missing."""
    if _executable() is None:
        raise PoevalError(_MISSING)


def letters(word: str) -> str:
    """What espeak-ng is asked for a word: its letters only, the last :data:`MAX_LETTERS` of them."""
    return "".join(c for c in word if c.isalpha())[-MAX_LETTERS:]


class Espeak:
    """One persistent espeak-ng process for a voice; :meth:`ipa` answers one word at a time."""

    _lock = threading.Lock()

    def __init__(self, voice: str):
        self.voice = voice
        self.proc: subprocess.Popen | None = None
        self.cache: dict[str, str] = {}
        self._buf = b""
        self._sentinel = ""

    def _start(self) -> None:
        exe = _executable()
        if exe is None:
            raise PoevalError(_MISSING)
        self.proc = subprocess.Popen([exe, "-q", "--ipa", "-v", self.voice], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self._buf = b""
        self._send(SENTINEL)
        self._sentinel = self._line()

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=2)
            except Exception:  # pragma: no cover
                pass
            self.proc = None

    def ipa(self, word: str) -> str:
        """IPA of a word's last :data:`MAX_LETTERS` letters; ``""`` when it has none or espeak-ng fails."""
        word = letters(word)
        if not word:
            return ""
        if word not in self.cache:
            with self._lock:
                self.cache[word] = self._ask(word)
        return self.cache[word]

    def _ask(self, word: str) -> str:
        for _ in range(2):
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self._send(word)
                self._send(SENTINEL)
                answer = self._line()
                if self._line() == self._sentinel:
                    return answer
            except OSError:
                pass
            self.close()   # out of step, silent or dead: what it still holds is never read
        return ""

    def _send(self, word: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((word + ".\n").encode("utf-8"))
        self.proc.stdin.flush()

    def _line(self) -> str:
        """The next output line; read through the raw pipe, so ``select`` sees what is not yet read."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            if not select.select([fd], [], [], TIMEOUT_S)[0]:
                raise OSError("espeak-ng did not answer")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise OSError("espeak-ng closed its output")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode("utf-8", "replace").strip()


_POOL: dict[str, Espeak] = {}


@atexit.register
def _close_all() -> None:
    for e in _POOL.values():
        e.close()


def ipa(word: str, lang: str) -> str:
    """espeak-ng's IPA for a word in ``lang`` (``en``: the en-us voice, ``de``), from the voice's process."""
    voice = VOICES[lang]
    if voice not in _POOL:
        _POOL[voice] = Espeak(voice)
    return _POOL[voice].ipa(word)
