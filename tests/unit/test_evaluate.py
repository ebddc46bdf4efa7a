import json

import pytest

from poeval.cli import main
from poeval.errors import PoevalError
from poeval.poem_files import read_poems
from poeval.metrics.evaluate import evaluate

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
    assert skipped == {"not_4_lines": 1, "verse_without_word": 1}


# verses the samplers and evaluate must judge alike: punctuation, digits or symbols alone are no verse
VERSES = ['"', "--", " / ", "&", "1914", "~~", "…", "", "   ", "a", "O!", "'tis", "x 1914", "Ühr", "« la »", "42 -- b"]


def test_the_samplers_validity_rule_is_evaluates_filter(tmp_path):
    """A quatrain the shared sampling loop (and the ports' verse test) counts as valid is one evaluate keeps,
    and a rejected one is counted under its reason in the cell: one rule, poeval.text.verse_problem."""
    from poeval.generators.poetic.common import tokenize, verse_ok
    from poeval.generators.sampling import check_quatrain

    base = ["one fine day", "we sang", "and then", "we rested"]
    quatrains = [base[:3] + [verse] for verse in VERSES]
    sampled = [check_quatrain(q, True)[0] is not None for q in quatrains]
    poems, skipped = read_poems(_write_jsonl(tmp_path / "s.jsonl", quatrains))
    kept = {p["id"] for p in poems}
    assert sampled == [str(i) in kept for i in range(len(VERSES))]
    assert sampled == [verse_ok(tokenize(verse)) for verse in VERSES]
    # by hand: the first eight verses have no letter ("" and "   " are empty), the rest have a word
    assert sampled == [False] * 9 + [True] * 7
    assert skipped == {"empty_verse": 2, "verse_without_word": 7}
    result = evaluate(tmp_path / "s.jsonl", _write_jsonl(tmp_path / "r.jsonl", REF), "en", ["length"])
    assert result["n_poems"] == 7 and result["skipped"] == {"empty_verse": 2, "verse_without_word": 7}


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
    with pytest.raises(PoevalError, match="nothing usable: no poems"):
        evaluate(empty, ref, "en", ["length"])
    assert main(["evaluate", str(ref), "--reference", str(empty), "--lang", "en", "--out", str(tmp_path / "o.json")]) == 2
    assert "empty.txt: nothing usable" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_paper_switches_reach_their_metrics(tmp_path):
    """metrics.{length.bins, lexical.tokens, memorization.autojunk} pass through evaluate (and its bootstrap)."""
    from poeval.metrics import length, lexical, memorization

    pytest.importorskip("lexical_diversity")
    train = [" ".join(f"w{i}{k}" for k in range(14)) for i in range(4)]      # one quatrain of 4 x 14 tokens
    sample = [["cats cat", "runs run", "was is", "mice mouse"], [v.replace("w0", "v0", 1) for v in train]]
    reference = [train, ["a b"] * 3 + ["a b c"]]   # 9 tokens: one 30th of [8, 56] is 1.6 tokens wide
    samples, ref = _write_jsonl(tmp_path / "s.jsonl", sample), _write_jsonl(tmp_path / "r.jsonl", reference)
    paper = {"length": {"bins": 30}, "lexical": {"tokens": "flemmatize"}, "memorization": {"autojunk": True}}
    families = ["length", "lexical", "memorization"]
    default, switched = evaluate(samples, ref, "en", families), evaluate(samples, ref, "en", families, paper,
                                                                         bootstrap_reps=5)
    a, b = length.lengths(sample), length.lengths(reference)
    assert switched["length"]["hist_intersection"] == length.histogram_intersection(a, b, 30) == 1.0
    assert default["length"]["hist_intersection"] == length.histogram_intersection(a, b) == 0.5
    assert switched["lexical"]["attr"] == lexical.compute(sample, tokens="flemmatize")["attr"] < default["lexical"]["attr"]
    assert switched["memorization"]["quatrain"] == memorization.compute(sample, reference, autojunk=True)["quatrain"]
    assert (default["memorization"]["quatrain"], switched["memorization"]["quatrain"]) == (0.5, 0.0)
    assert "ci" in switched["lexical"]


def test_length_tokens_and_mtld_rule_switches_reach_their_metrics(tmp_path):
    """metrics.length.tokens: split and metrics.lexical.mtld_rule: lexical_diversity pass through evaluate."""
    from poeval.metrics import length, lexical

    sample = [["a a b c d e", "f g h i j k", "- the -- end", "l m / n"], ["o p & q", "r s", "t u", "v w x"]]
    reference = [["a b", "c d", "e f", "g h"]]
    samples, ref = _write_jsonl(tmp_path / "s.jsonl", sample), _write_jsonl(tmp_path / "r.jsonl", reference)
    switches = {"length": {"tokens": "split"}, "lexical": {"mtld_rule": "lexical_diversity"}}
    default, switched = (evaluate(samples, ref, "en", ["length", "lexical"], opts) for opts in ({}, switches))
    # by hand: split counts 6 + 6 + 4 + 4 = 20 and 4 + 2 + 2 + 3 = 11; punctuation removed, 17 and 10
    assert switched["length"]["per_poem"] == [20, 11] and default["length"]["per_poem"] == [17, 10]
    assert switched["length"]["wasserstein"] == length.compute(sample, reference, tokens="split")["wasserstein"]
    flat = [t for q in sample for t in lexical.quatrain_tokens(q)]
    assert switched["lexical"]["mtld"] == lexical.mtld(flat, rule="lexical_diversity") != default["lexical"]["mtld"]
    assert default["lexical"]["mtld"] == lexical.mtld(flat)
