"""Progress bars (poeval.progress): redrawn in place on a terminal; in a log, whole lines every few seconds and
nothing for a bar that ends sooner."""

import json
import subprocess
import sys
import time

from helpers import BIN
from poeval import progress


def test_a_command_whose_bars_end_quickly_leaves_no_bar_in_its_log(tmp_path):
    """The rhyme labeller draws a bar over its stanzas; stderr to a log (a pipe here) gets no redraw and no empty
    bar such as `rhyme schemes (en): 0stanza`."""
    stanzas = tmp_path / "s.jsonl"
    stanzas.write_text("".join(json.dumps({"id": str(i), "lines": ["The cat sat on the mat", "The dog ran in the fog",
                                                                     "I see the sea", "A frog upon a log"]}) + "\n"
                               for i in range(30)))
    proc = subprocess.run([str(BIN / "poeval"), "rhyme", str(stanzas), "--lang", "en",
                           "--out", str(tmp_path / "out.jsonl")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "rhyme schemes" not in proc.stderr, proc.stderr


def test_a_long_bar_writes_whole_lines_to_a_log_and_its_last_state(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.05)
    for _ in progress.progress_bar(range(6), desc="work", unit="step"):
        time.sleep(0.03)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and len(lines) >= 2, err   # after the first interval, then at least the closing state
    assert all(line.startswith("work:") for line in lines), err
    assert "6/6" in lines[-1], err


def test_a_bar_shown_on_a_terminal_redraws_in_place(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    for _ in progress.progress_bar(range(3), desc="work"):
        pass
    err = capsys.readouterr().err
    assert "\r" in err and "3/3" in err, err


def test_no_bar_at_all_when_progress_is_off(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    assert list(progress.progress_bar(range(3), progress=False, desc="work")) == [0, 1, 2]
    assert capsys.readouterr().err == ""
