import json

import pytest

from poeval.cli import main
from poeval.evaluate import evaluate, read_poems

REF = [["the sun is warm today", "the sea is calm and blue", "I walk along the shore", "and think of you"]] * 3


def _write_jsonl(path, poems):
    path.write_text("".join(json.dumps({"id": str(i), "lines": p}) + "\n" for i, p in enumerate(poems)))
    return path


def test_plain_text_and_jsonl_give_the_same_result(tmp_path):
    poems = [["one two", "three", "four five six", "seven"], ["a b", "c d", "e f", "g h"]]
    jsonl = _write_jsonl(tmp_path / "s.jsonl", poems)
    text = tmp_path / "s.txt"
    text.write_text("\n\n".join("\n".join(p) for p in poems) + "\n")
    ref = _write_jsonl(tmp_path / "ref.jsonl", REF)
    a, b = evaluate(jsonl, ref, "en", ["length"]), evaluate(text, ref, "en", ["length"])
    assert a["length"] == b["length"]
    assert a["length"]["mean"] == 7.5


def test_bad_poems_are_counted_skips(tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("a b\nc d\ne f\ng h\n\nonly\nthree\nlines\n\nw x\n!!!\ny z\nu v\n")
    poems, skipped = read_poems(text)
    assert len(poems) == 1
    assert skipped == {"not_4_lines": 1, "punctuation_only_verse": 1}


def test_cli_writes_json_and_reports_bad_input_without_traceback(tmp_path, capsys):
    samples = _write_jsonl(tmp_path / "s.jsonl", REF[:1])
    ref = _write_jsonl(tmp_path / "ref.jsonl", REF)
    out = tmp_path / "out" / "m.json"
    assert main(["evaluate", str(samples), "--reference", str(ref), "--lang", "en", "--out", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert set(result["length"]) >= {"mean", "median", "std", "min", "max", "hist_intersection", "wasserstein"}
    assert result["length"]["hist_intersection"] == pytest.approx(1.0)

    missing = tmp_path / "nope.jsonl"
    assert main(["evaluate", str(missing), "--reference", str(ref), "--lang", "en", "--out", str(tmp_path / "x.json")]) == 2
    assert "input not found" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_non_utf8_and_empty_inputs(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9\nb\nc\nd\n")
    ref = _write_jsonl(tmp_path / "ref.jsonl", REF)
    assert main(["evaluate", str(bad), "--reference", str(ref), "--lang", "en", "--out", str(tmp_path / "o.json")]) == 2
    assert "UTF-8" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = evaluate(empty, ref, "en", ["length"])
    assert result["n_poems"] == 0 and result["length"]["mean"] is None
    assert main(["evaluate", str(ref), "--reference", str(empty), "--lang", "en", "--out", str(tmp_path / "o.json")]) == 2
    assert "no usable reference" in capsys.readouterr().err
