"""The rhyme metric family, its tables and `poeval rhyme`, against scipy and hand-computed cases."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from helpers import MADE, NIGHT, SKY
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.io import read_jsonl
from poeval.metrics import schemes
from poeval.metrics.evaluate import evaluate
from poeval.poetry.schemes import SCHEMES_4
from poeval.report import tables

ABAB = ["The sun is warm and bright", "the waves are calm today", "I walk into the light",
        "and watch the children play"]
AABB = ["I saw a little cat", "it sat upon a mat", "the dog ran in the fog", "and jumped upon a log"]
REPEAT = ["We walk along the way", "and stop to rest all day", "then walk along the way", "to find the gate by night"]


def _counts(**shares):
    c = np.zeros(len(SCHEMES_4))
    for s, v in shares.items():
        c[SCHEMES_4.index(s)] = v
    return c


def test_entropy_matches_scipy_and_hand_values():
    assert schemes.entropy(_counts(abab=5, aabb=5, abba=5, abcd=5)) == pytest.approx(2.0)
    assert schemes.entropy(_counts(aaaa=7)) == 0.0
    c = _counts(abab=40, aabb=25, abcb=20, abcd=10, abba=5)
    assert schemes.entropy(c) == pytest.approx(scipy_entropy(c, base=2))


def test_kl_and_cross_entropy_run_from_the_sample_to_the_human_distribution():
    """KL(Q_sample || P_human) and CE = -sum Q log P (scipy as the reference); CE - KL = H(sample)."""
    human = _counts(**{s: 1 for s in SCHEMES_4}) + _counts(abab=400, aabb=250, abcb=200, abcd=100, abba=50)
    sample = _counts(abab=10, aabb=80, aaaa=10)
    out = schemes.divergence(sample, human, 1.0)
    p, q = human / human.sum(), sample / sample.sum()      # every scheme is used: P is not smoothed
    assert out["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert out["cross_entropy"] == pytest.approx(-(q[q > 0] * np.log2(p[q > 0])).sum())
    assert out["cross_entropy"] - out["kl"] == pytest.approx(schemes.entropy(sample))
    assert out["kl"] != pytest.approx(scipy_entropy(p, q + 1e-9, base=2), abs=0.1)   # not KL(P || Q)
    same = schemes.divergence(human, human, 1.0)
    assert same["kl"] == 0.0 and same["cross_entropy"] == pytest.approx(schemes.entropy(human))


@pytest.mark.parametrize("smoothing", [1.0, 0.5])
def test_only_a_human_distribution_missing_a_scheme_is_smoothed(smoothing):
    human = _counts(abab=40, aabb=25, abcb=20, abcd=10, abba=5)   # ten schemes never used
    sample = _counts(abab=10, aabb=80, aaaa=10)                    # aaaa: not in the human data
    out = schemes.divergence(sample, human, smoothing)
    p = (human + smoothing) / (human.sum() + 15 * smoothing)
    q = sample / sample.sum()                                      # the sample is never smoothed
    assert out["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert out["cross_entropy"] - out["kl"] == pytest.approx(scipy_entropy(q, base=2))
    assert schemes.smooths_human(human, smoothing) and not schemes.smooths_human(human + 1, smoothing)


def test_unsmoothed_missing_scheme_is_infinite_divergence():
    out = schemes.divergence(_counts(abab=1, aabb=1), _counts(abab=3), 0.0)
    assert out == {"kl": float("inf"), "cross_entropy": float("inf")}
    assert schemes.divergence(_counts(abab=3), _counts(abab=1, aabb=1), 0.0)["kl"] == pytest.approx(1.0)


# The paper's Table 6 (entropy, KL, CE per language; DE, then EN; None where it has no row).
PAPER_TABLE6 = {
    "HUMAN": ((2.90, 0.00, 2.90), (3.10, 0.00, 3.10)), "DeepSpeare": ((2.97, 0.55, 3.52), (3.16, 0.48, 3.64)),
    "SA": ((3.14, 1.43, 4.57), (3.22, 1.17, 4.39)), "ByGPT5-L": ((2.89, 1.23, 4.12), (2.92, 1.08, 4.00)),
    "ByGPT5-S": ((3.13, 1.09, 4.21), (2.91, 1.13, 4.04)), "GPT2-L": ((2.86, 1.26, 4.13), (2.97, 1.06, 4.03)),
    "GPT2-S": ((3.16, 1.13, 4.29), (2.99, 1.03, 4.03)), "GPTNeo-L": (None, (2.80, 1.18, 3.99)),
    "GPTNeo-S": (None, (3.16, 0.96, 4.11)), "LLaMA2-L": ((2.93, 1.18, 4.11), (3.24, 0.71, 3.95)),
    "LLaMA2-S": ((3.18, 1.04, 4.21), (3.24, 0.71, 3.95)), "LLaMA3": ((3.27, 0.83, 4.10), (3.45, 0.56, 4.02)),
    "ByGPT5-L-con": ((3.17, 0.67, 3.84), (3.22, 0.83, 4.05)), "ByGPT5-S-con": ((3.16, 0.58, 3.75), (3.38, 0.54, 3.92)),
    "GPT2-L-con": ((2.98, 0.99, 3.97), (3.41, 0.61, 4.02)), "GPT2-S-con": ((3.11, 1.04, 4.14), (3.22, 0.85, 4.07)),
    "GPTNeo-L-con": (None, (3.43, 0.45, 3.89)), "GPTNeo-S-con": (None, (3.29, 0.83, 4.11)),
    "LLaMA2-L-con": ((2.69, 1.33, 4.02), (2.89, 0.95, 3.85)), "LLaMA2-S-con": ((3.11, 0.71, 3.83), (2.67, 1.07, 3.74)),
    "LLaMA3-con": ((2.98, 1.06, 4.04), (2.58, 0.94, 3.52)),
}


@pytest.mark.parametrize("model", sorted(PAPER_TABLE6))
def test_paper_table6_rows_satisfy_ce_minus_kl_equals_their_own_entropy(model):
    """In every row of the paper's Table 6, CE - KL is that row's entropy (to rounding), not the human
    one: the paper's divergences run from the sample to the human distribution, as poeval's do."""
    for row, human in zip(PAPER_TABLE6[model], PAPER_TABLE6["HUMAN"]):
        if row is None:
            continue
        h, kl, ce = row
        assert abs(ce - kl - h) <= 0.015
        if abs(h - human[0]) > 0.05:
            assert abs(ce - kl - human[0]) > 0.03


def test_hand_built_sample_shares_of_real_rhymes_and_repetitions():
    """8 abcd, 1 aabb, 1 abab whose rhyming lines repeat an end word: real rhymes 0.10, repetitions 0.10."""
    repeated = ["We walk along the way", "the sun is warm and bright", "then walk along the way", "into the light"]
    poems = [(ABAB, "abcd")] * 8 + [(AABB, "aabb"), (repeated, "abab")]
    for mode in schemes.REPETITION_MODES:
        flags = [schemes.is_repeating_quatrain(lines, label, "en", mode) for lines, label in poems]
        pairs = [schemes.rhyme_pairs(lines, label, "en") for lines, label in poems]
        out = schemes.from_counts(schemes.scheme_counts([label for _, label in poems]), _counts(abab=1, aabb=1, abcd=1),
                                sum(p for p, _ in pairs), sum(r for _, r in pairs), sum(flags), len(poems), 1.0)
        assert out["real_rhymes"] == pytest.approx(0.10) and out["repetitions"] == pytest.approx(0.10), mode
        assert out["distribution"]["abcd"] == pytest.approx(0.80)
        assert out["pair_repetitions"] == pytest.approx(1 / 4) and out["rhyme_pairs_per_poem"] == pytest.approx(0.4)


def test_repetition_modes_follow_the_papers_text_and_its_code():
    """rhyme_pair: lines paired by the scheme end in the same (normalised) word; end_word (the paper's
    get_fake_rhymes): any two end words are the same string after punctuation is stripped."""
    unpaired = ["We walk along the way", "and stop along the way!", "then rest all day", "into the night"]
    assert schemes.end_words(unpaired) == ["way", "way", "day", "night"]
    assert not schemes.is_repeating_quatrain(unpaired, "abac", "en", "rhyme_pair")   # only way/day is paired
    assert schemes.is_repeating_quatrain(unpaired, "abac", "en", "end_word")
    cased = ["We walk along the Way", "the sun is bright", "then walk along the way", "into the light"]
    assert schemes.is_repeating_quatrain(cased, "abab", "en", "rhyme_pair")
    assert not schemes.is_repeating_quatrain(cased, "abab", "en", "end_word")         # the code keeps case
    assert not schemes.is_repeating_quatrain(REPEAT[:2] + REPEAT[:2], "abcd", "en", "end_word")   # abcd never
    with pytest.raises(PoevalError, match="repetition mode"):
        schemes.is_repeating_quatrain(ABAB, "abab", "en", "same")


def _get_last_word(quatrain):
    """The paper's helper_functions.get_last_word, restated from its definition: ASCII punctuation deleted, the
    last whitespace token of each verse left with one."""
    import string

    cleaned = [line.translate(str.maketrans("", "", string.punctuation)).split() for line in quatrain]
    return [tokens[-1] for tokens in cleaned if tokens]


def test_the_papers_end_word_keeps_line_numbers_and_unicode_dashes():
    numbered = ["Upon the hill we stood, 120", "and saw the valley wide;", "the river ran beneath the wood—",
                "don't go, the shadows cried. 120"]
    assert schemes.end_words(numbered, "paper") == _get_last_word(numbered) == ["120", "wide", "wood—", "120"]
    assert schemes.end_words(numbered) == ["stood", "wide", "wood", "cried"]
    # the two rules disagree on whether the numbered quatrain repeats an end word
    assert schemes.is_repeating_quatrain(numbered, "abab", "en", "end_word", end_word_rule="paper")
    assert not schemes.is_repeating_quatrain(numbered, "abab", "en", "end_word")
    assert schemes.end_words(["...", "so it goes", "!!", "and goes"], "paper") == ["goes", "goes"]
    assert schemes.paper_end_word("I don't") == "dont"
    with pytest.raises(PoevalError, match="end-word rule"):
        schemes.end_words(numbered, "both")
    # the switch reaches the rhyme cell (Tables 10, 11)
    poems, reference = [{"id": "q", "lines": numbered}], [{"id": "r", "lines": ABAB}]
    shares = {rule: evaluate(poems, reference, "en", ["rhyme"],
                             options={"rhyme": {"repetition": "end_word", "end_word": rule}})["rhyme"]
              for rule in ("poeval", "paper")}
    assert shares["paper"]["distribution"]["abab"] == 1.0
    assert (shares["poeval"]["repetitions"], shares["paper"]["repetitions"]) == (0.0, 1.0)


def test_rhyme_pairs_count_repetitions_apart_from_real_rhymes():
    assert schemes.rhyme_pairs(AABB, "aabb", "en") == (2, 0)
    assert schemes.rhyme_pairs(REPEAT, "aaab", "en") == (3, 1)   # way/day, day/way real; way/way repeated
    assert schemes.rhyme_pairs(ABAB, "abcd", "en") == (0, 0)
    assert schemes.rhyme_pairs(["a", "b", "c", "d"], "aaaa", "en")[0] == 6


def test_bad_scheme_labels_are_errors():
    with pytest.raises(PoevalError, match="four-line scheme"):
        schemes.scheme_counts(["abab", "abcde"])
    with pytest.raises(PoevalError, match="four-line scheme"):
        schemes.scheme_counts(["bbaa"])


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_evaluate_rhyme_family(tmp_path):
    """Samples are labelled by the detector; a reference's `scheme` fields are taken as given."""
    samples = _jsonl(tmp_path / "s.jsonl", [{"id": f"s{i}", "lines": q} for i, q in enumerate([ABAB, AABB, AABB, REPEAT])])
    ref_rows = [{"id": f"r{i}", "lines": ABAB, "scheme": s} for i, s in enumerate(["abab"] * 6 + ["aabb"] * 3 + ["abcd"])]
    ref = _jsonl(tmp_path / "r.jsonl", ref_rows)
    out = evaluate(samples, ref, "en", ["rhyme"], bootstrap_reps=30)["rhyme"]
    assert out["distribution"]["abab"] == 0.25 and out["distribution"]["aabb"] == 0.5
    assert out["distribution"]["aaab"] == 0.25 and sum(out["distribution"].values()) == pytest.approx(1.0)
    assert out["entropy"] == pytest.approx(1.5)
    p = (_counts(abab=6, aabb=3, abcd=1) + 1) / 25          # the human data miss 12 schemes: smoothed
    q = _counts(abab=1, aabb=2, aaab=1) / 4
    assert out["kl"] == pytest.approx(scipy_entropy(q, p, base=2))
    assert out["cross_entropy"] - out["kl"] == pytest.approx(out["entropy"]) and out["human_smoothed"]
    # pairs: abab 2, aabb 2 + 2, aaab 3 (one repetition) -> 9 pairs, 1 repetition; quatrains: 1 of 4 repeats
    assert out["rhyme_pairs_per_poem"] == pytest.approx(9 / 4)
    assert out["pair_repetitions"] == pytest.approx(1 / 9) and out["pair_real_rhymes"] == pytest.approx(8 / 9)
    assert out["repetitions"] == pytest.approx(1 / 4) and out["real_rhymes"] == pytest.approx(3 / 4)
    assert out["human_n"] == 10 and out["smoothing"] == 1.0 and out["repetition"] == "rhyme_pair"
    low, high = out["ci"]["distribution.aabb"]
    assert 0 <= low <= 0.5 <= high <= 1
    # without scheme fields the reference is labelled by the detector: all ABAB
    ref2 = _jsonl(tmp_path / "r2.jsonl", [{"id": r["id"], "lines": r["lines"]} for r in ref_rows])
    out2 = evaluate(samples, ref2, "en", ["rhyme"])["rhyme"]
    q_only_abab = schemes.divergence(_counts(abab=1, aabb=2, aaab=1), _counts(abab=10), 1.0)
    assert out2["kl"] == pytest.approx(q_only_abab["kl"])


def test_rhyme_tables_from_cells(tmp_path):
    def cell(name, system, decoding, dist, pairs, reps, repeating):
        counts = np.array([dist.get(s, 0) for s in SCHEMES_4], dtype=float)
        # smoothing 0: P is the training set's own shares, so a model using another scheme is infinitely far
        body = schemes.from_counts(counts, _counts(abab=5, aabb=5), pairs, reps, repeating, int(counts.sum()), 0.0)
        path = tmp_path / name
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding},
                                    "n_poems": int(counts.sum()), "rhyme": body}))
        return str(path)

    cells = [cell("h0.json", "HUMAN", "human0", {"abab": 2, "aabb": 2}, 8, 0, 0),
             cell("h1.json", "HUMAN", "human1", {"abab": 4}, 8, 2, 1),
             cell("ht.json", "HUMAN", "train", {"abab": 5, "aabb": 5}, 20, 0, 0),
             cell("m.json", "m", "v", {"abcd": 3, "aaaa": 1}, 6, 6, 1)]
    t6, t10 = tmp_path / "t6.tsv", tmp_path / "t10.tsv"
    tables.family_table(cells, "rhyme", str(t6))
    tables.family_table(cells, "rhyme", str(t10), columns=tables.table_columns("table10"))
    head, human, train, model = [r.split("\t") for r in t6.read_text().splitlines()]
    assert head[4:7] == ["entropy", "kl", "cross_entropy"] and head[7:] == [f"{s}_pct" for s in SCHEMES_4]
    col = {name: i for i, name in enumerate(head)}
    assert human[1] == "HUMAN (mean of 2)" and human[col["entropy"]] == "0.500"   # mean of 1 bit and 0 bits
    assert human[col["abab_pct"]] == "75.00"
    # the paper's HUMAN row: the whole training set against itself
    assert train[:4] == ["en", "HUMAN (train)", "-", "10"] and train[col["kl"]] == "0.000"
    assert train[col["entropy"]] == train[col["cross_entropy"]] == "1.000"
    assert model[col["abcd_pct"]] == "75.00" and model[col["aaaa_pct"]] == "25.00" and model[col["kl"]] == "NA"
    head, human, train, model = [r.split("\t") for r in t10.read_text().splitlines()]
    assert head[4:] == ["real_rhymes", "repetitions", "abcd", "rhyme_pairs_per_poem", "pair_real_rhymes",
                        "pair_repetitions"]
    assert human[4:] == ["0.875", "0.125", "0.000", "2.000", "0.875", "0.125"]
    assert model[4:] == ["0.000", "0.250", "0.750", "1.500", "0.000", "1.000"]
    # a sample without valid quatrains has no shares at all, not an abcd share of 0
    empty = cell("e.json", "m", "w", {}, 0, 0, 0)
    tables.family_table([empty], "rhyme", str(t10), columns=tables.table_columns("table10"))
    assert t10.read_text().splitlines()[1].split("\t")[3:] == ["0"] + ["NA"] * 6
    tables.family_table([empty], "rhyme", str(t6))
    assert t6.read_text().splitlines()[1].split("\t")[3:] == ["0"] + ["NA"] * 18


def test_cli_rhyme_adds_scheme_and_keeps_fields(tmp_path, capsys):
    src = _jsonl(tmp_path / "gold.jsonl", [{"id": "x", "lines": AABB, "scheme": "abab", "author": "me"},
                                          {"lines": ["one line only"]}])
    out = tmp_path / "pred.jsonl"
    assert main(["rhyme", str(src), "--lang", "en", "--out", str(out), "--field", "pred", "--meter"]) == 0
    rows = list(read_jsonl(out))
    assert rows[0] == {"id": "x", "lines": AABB, "scheme": "abab", "author": "me", "pred": "aabb",
                       "meter": rows[0]["meter"]}
    assert rows[0]["meter"] in ("iambic", "anapaestic", "other") and rows[1]["pred"] == "a"
    assert main(["rhyme", str(src), "--lang", "en"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["scheme"] for r in printed] == ["aabb", "a"]


def test_cli_rhyme_labels_a_poem_together(tmp_path, capsys):
    """--poem id/..: the stanzas whose ids share a parent are one poem; made / side (about -2.2 alone) reads
    abab beside two abab sisters, and alone (another poem) abcb."""
    rows = [{"id": "c/poet/000/000", "lines": NIGHT}, {"id": "c/poet/000/001", "lines": MADE},
            {"id": "c/poet/000/002", "lines": SKY}, {"id": "c/poet/001/000", "lines": MADE}]
    src = _jsonl(tmp_path / "poems.jsonl", rows)
    out = tmp_path / "pred.jsonl"
    assert main(["rhyme", str(src), "--lang", "en", "--out", str(out), "--poem", "id/.."]) == 0
    assert [r["scheme"] for r in read_jsonl(out)] == ["abab", "abab", "abab", "abcb"]
    assert json.loads(Path(f"{out}.stamp.json").read_text())["provenance"]["params"]["poem"] == "id/.."
    assert main(["rhyme", str(src), "--lang", "en", "--out", str(out)]) == 0   # each stanza alone
    assert [r["scheme"] for r in read_jsonl(out)] == ["abab", "abcb", "abab", "abcb"]
    capsys.readouterr()
    for poem, says in (("title", "record 1 has no 'title'"), ("/..", "expected a field name"),
                       ("lines/..", "record 1 has no 'lines'")):
        out.unlink(missing_ok=True)
        assert main(["rhyme", str(src), "--lang", "en", "--out", str(out), "--poem", poem]) == 2
        assert says in capsys.readouterr().err and not out.exists()
    flat = _jsonl(tmp_path / "flat.jsonl", [{"id": "solo", "lines": NIGHT}])
    assert main(["rhyme", str(flat), "--lang", "en", "--poem", "id/.."]) == 2
    assert "id 'solo' has no parent" in capsys.readouterr().err


def test_cli_rhyme_bad_record_writes_nothing(tmp_path, capsys):
    src = _jsonl(tmp_path / "bad.jsonl", [{"lines": ABAB}, {"lines": "not a list"}])
    out = tmp_path / "out.jsonl"
    assert main(["rhyme", str(src), "--lang", "de", "--out", str(out)]) == 2
    assert "record 2" in capsys.readouterr().err and not out.exists()
