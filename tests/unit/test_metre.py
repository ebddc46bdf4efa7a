"""The metre family (not in the paper): label counts, entropy, KL and cross-entropy against scipy and hand
computations, the factored label-count function shared with rhyme, German without labels, table and figure."""

import json

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from poeval.cli import main
from poeval.errors import PoevalError
from poeval.metrics import distribution, metre, schemes
from poeval.metrics.evaluate import evaluate
from poeval.poetry.schemes import SCHEMES_4
from poeval.poetry.style import METERS
from poeval.report import figures, tables

VERSES = ["The sun is warm and bright", "the waves are calm today", "I walk into the light",
          "and watch the children play"]


def _counts(labels, **given):
    return np.array([given.get(label, 0) for label in labels], dtype=float)


def test_label_numbers_by_hand_and_against_scipy():
    """Q = (1/2, 1/4, 1/4) over three used families, P = (1/4, 1/4, 1/2) on the same: by hand H(Q) = 1.5 bits,
    KL(Q || P) = 1/2 log2 2 + 1/4 log2 1 + 1/4 log2 1/2 = 0.25, CE = 1.75; scipy as a second reference."""
    sample = _counts(METERS, iambic=2, trochaic=1, anapaestic=1)
    human = _counts(METERS, iambic=25, trochaic=25, anapaestic=50, dactylic=0)   # unused families: smoothed
    out = distribution.label_numbers(METERS, sample, human, 0.0)
    assert out["entropy"] == 1.5 and out["kl"] == 0.25 and out["cross_entropy"] == 1.75
    assert out["counts"] == {"iambic": 2, "trochaic": 1, "anapaestic": 1, "dactylic": 0, "amphibrachic": 0,
                             "alexandrine": 0, "other": 0}
    assert list(out["distribution"]) == list(METERS) and out["distribution"]["iambic"] == 0.5
    smoothed = distribution.label_numbers(METERS, sample, human, 1.0)
    p = (human + 1) / (human.sum() + len(METERS))
    q = sample / sample.sum()
    assert smoothed["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert smoothed["entropy"] == pytest.approx(scipy_entropy(q, base=2))
    assert smoothed["cross_entropy"] - smoothed["kl"] == pytest.approx(smoothed["entropy"])
    empty = distribution.label_numbers(METERS, np.zeros(len(METERS)), human, 1.0)
    assert empty["entropy"] is empty["kl"] is empty["cross_entropy"] is None


def test_rhyme_keeps_its_numbers_through_the_shared_function():
    """schemes.from_counts (rhyme) is label_numbers over SCHEMES_4 plus its own counts, value for value:
    the numbers the rhyme family had before the factoring (hand-computed here)."""
    counts = _counts(SCHEMES_4, abab=2, aabb=1, abcd=1)
    human = _counts(SCHEMES_4, **{s: 10 for s in SCHEMES_4})
    out = schemes.from_counts(counts, human, pairs=6, reps=1, repeating=1, n_poems=4, smoothing=1.0)
    assert out["entropy"] == 1.5
    assert out["kl"] == pytest.approx(1.5 * 0 + (0.5 * np.log2(0.5 * 15) + 0.5 * np.log2(0.25 * 15)))
    assert out["cross_entropy"] == pytest.approx(np.log2(15))
    assert out["real_rhymes"] == 0.5 and out["repetitions"] == 0.25 and out["pair_repetitions"] == 1 / 6
    assert {k: out[k] for k in ("distribution", "counts", "entropy", "kl", "cross_entropy")} == \
        distribution.label_numbers(SCHEMES_4, counts, human, 1.0)
    assert schemes.entropy is distribution.entropy and schemes.divergence is distribution.divergence


# Goethe's "Mailied" (iambic dimeter, a feminine ending in every other verse) and his "Heidenröslein" (trochaic)
GERMAN_IAMBIC = ["Wie herrlich leuchtet", "Mir die Natur!", "Wie glänzt die Sonne!", "Wie lacht die Flur!"]
GERMAN_TROCHAIC = ["Sah ein Knab ein Röslein stehn,", "Röslein auf der Heiden,", "War so jung und morgenschön,",
                   "Lief er schnell es nah zu sehn,"]


def test_labels_come_from_the_meter_field_else_the_labeller_in_both_languages():
    assert metre.label({"lines": VERSES, "meter": "trochaic"}, "de") == "trochaic"
    assert metre.label({"lines": VERSES}, "en") == "iambic"
    assert metre.label({"lines": GERMAN_TROCHAIC}, "de") == "trochaic"     # Goethe's Heidenröslein
    # DLK's measures are not read: one labeller for corpus and samples
    assert metre.label({"lines": GERMAN_TROCHAIC, "measure": ["iambic.tetra"] * 4}, "de") == "trochaic"
    with pytest.raises(PoevalError, match="unknown metre label 'spondaic'"):
        metre.label({"id": "q1", "lines": VERSES, "meter": "spondaic"}, "en")


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _records(prefix, meters):
    return [{"id": f"{prefix}{i}", "lines": [f"{v} {prefix}{i}" for v in VERSES], "meter": m}
            for i, m in enumerate(meters)]


def test_evaluate_cell_counts_labels_and_bootstraps(tmp_path):
    sample = _write(tmp_path / "s.jsonl", _records("s", ["iambic"] * 6 + ["anapaestic"] * 2))
    train = _write(tmp_path / "t.jsonl", _records("t", ["iambic"] * 5 + ["anapaestic"] * 3 + ["other"] * 2))
    out = evaluate(sample, train, "en", ["metre"], bootstrap_reps=20, seed=3)["metre"]
    q = np.array([6, 0, 2, 0, 0, 0, 0]) / 8
    p = (np.array([5, 0, 3, 0, 0, 0, 2]) + 1.0) / (10 + 7)          # human misses families: smoothed by 1
    assert out["counts"] == {"iambic": 6, "trochaic": 0, "anapaestic": 2, "dactylic": 0, "amphibrachic": 0,
                             "alexandrine": 0, "other": 0}
    assert out["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert out["entropy"] == pytest.approx(scipy_entropy(q, base=2))
    assert out["human_n"] == 10 and out["human_smoothed"] is True
    assert set(out["ci"]) >= {"entropy", "kl", "cross_entropy", "distribution.iambic"}
    low, high = out["ci"]["distribution.iambic"]
    assert low <= 0.75 <= high


def test_german_model_samples_are_labelled_by_their_stresses(tmp_path):
    """A German model's quatrains carry no label: the labeller gives them one, as it gave the corpus's."""
    sample = _write(tmp_path / "s.jsonl", [{"id": "s0", "lines": GERMAN_TROCHAIC}, {"id": "s1", "lines": GERMAN_IAMBIC}])
    train = _write(tmp_path / "t.jsonl", _records("t", ["iambic", "trochaic"]))
    out = evaluate(sample, train, "de", ["metre"], bootstrap_reps=10)["metre"]
    assert out["counts"]["trochaic"] == 1 and out["counts"]["iambic"] == 1 and out["entropy"] == 1.0
    # P: the two training families smoothed by 1 over the 7 (the others unused): 2/9 each; KL = log2(0.5 / (2/9))
    assert out["kl"] == pytest.approx(np.log2(9 / 4)) and "note" not in out


def test_cli_table_and_figure(tmp_path):
    train = _write(tmp_path / "t.jsonl", _records("t", ["iambic"] * 3 + ["other"]))
    cells = []
    for system, meters in (("HUMAN", ["iambic", "other"]), ("gpt2-s", ["anapaestic", "iambic"])):
        sample = _write(tmp_path / f"{system}.jsonl", _records(system, meters))
        out = tmp_path / f"{system}.json"
        decoding = "human0" if system == "HUMAN" else "vanilla"
        assert main(["evaluate", str(sample), "--reference", str(train), "--lang", "en", "--metrics", "metre",
                     "--cell", f"en/{system}/{decoding}", "--out", str(out), "--quiet"]) == 0
        cells.append(str(out))
    tables.family_table(cells, "metre", str(tmp_path / "metre.tsv"))
    header, *rows = [line.split("\t") for line in (tmp_path / "metre.tsv").read_text().splitlines()]
    assert header[4:7] == ["entropy", "kl", "cross_entropy"] and header[7:] == [f"{m}_pct" for m in METERS]
    assert rows[1][1] == "gpt2-s" and rows[1][4] == "1.000" and rows[1][9] == "50.00"
    shares = figures.make("metre_figure", cells, str(tmp_path / "metre.png"))
    assert list(shares) == ["HUMAN (en), n=2", "gpt2-s (vanilla) (en), n=2"]
    assert list(shares["gpt2-s (vanilla) (en), n=2"]) == [50.0, 0.0, 50.0, 0.0, 0.0, 0.0, 0.0]
