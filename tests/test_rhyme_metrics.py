"""The rhyme metric family, its tables and `poeval rhyme`, against scipy and hand-computed cases."""

import json

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from poeval import tables
from poeval.cli import main
from poeval.errors import PoevalError
from poeval.evaluate import evaluate
from poeval.io import read_jsonl
from poeval.metrics import rhyme
from poeval.rhyme import SCHEMES_4

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
    assert rhyme.entropy(_counts(abab=5, aabb=5, abba=5, abcd=5)) == pytest.approx(2.0)
    assert rhyme.entropy(_counts(aaaa=7)) == 0.0
    c = _counts(abab=40, aabb=25, abcb=20, abcd=10, abba=5)
    assert rhyme.entropy(c) == pytest.approx(scipy_entropy(c, base=2))


@pytest.mark.parametrize("smoothing", [1.0, 0.5])
def test_kl_and_cross_entropy_match_scipy_on_smoothed_distributions(smoothing):
    human = _counts(abab=400, aabb=250, abcb=200, abcd=100, abba=50)
    sample = _counts(abab=10, aabb=80, aaaa=10)
    out = rhyme.divergence(sample, human, smoothing)
    p = (human + smoothing) / (human.sum() + 15 * smoothing)
    q = (sample + smoothing) / (sample.sum() + 15 * smoothing)
    assert out["kl"] == pytest.approx(scipy_entropy(p, q, base=2))
    assert out["cross_entropy"] == pytest.approx(scipy_entropy(p, base=2) + scipy_entropy(p, q, base=2))
    same = rhyme.divergence(human, human, smoothing)
    assert same["kl"] == pytest.approx(0.0, abs=1e-12)


def test_unsmoothed_missing_scheme_is_infinite_divergence():
    out = rhyme.divergence(_counts(abab=3), _counts(abab=1, aabb=1), 0.0)
    assert out == {"kl": float("inf"), "cross_entropy": float("inf")}


def test_rhyme_pairs_count_repetitions_apart_from_real_rhymes():
    assert rhyme.rhyme_pairs(AABB, "aabb", "en") == (2, 0)
    assert rhyme.rhyme_pairs(REPEAT, "aaab", "en") == (3, 1)   # way/day, day/way real; way/way repeated
    assert rhyme.rhyme_pairs(ABAB, "abcd", "en") == (0, 0)
    assert rhyme.rhyme_pairs(["a", "b", "c", "d"], "aaaa", "en")[0] == 6


def test_bad_scheme_labels_are_errors():
    with pytest.raises(PoevalError, match="four-line scheme"):
        rhyme.scheme_counts(["abab", "abcde"])
    with pytest.raises(PoevalError, match="four-line scheme"):
        rhyme.scheme_counts(["bbaa"])


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
    p = (_counts(abab=6, aabb=3, abcd=1) + 1) / 25
    q = (_counts(abab=1, aabb=2, aaab=1) + 1) / 19
    assert out["kl"] == pytest.approx(scipy_entropy(p, q, base=2))
    # pairs: abab 2, aabb 2 + 2, aaab 3 (one repetition) -> 9 pairs, 1 repetition
    assert out["rhyme_pairs_per_poem"] == pytest.approx(9 / 4)
    assert out["repetitions"] == pytest.approx(1 / 9) and out["real_rhymes"] == pytest.approx(8 / 9)
    assert out["human_n"] == 10 and out["smoothing"] == 1.0
    low, high = out["ci"]["distribution.aabb"]
    assert 0 <= low <= 0.5 <= high <= 1
    # without scheme fields the reference is labelled by the detector: all ABAB
    ref2 = _jsonl(tmp_path / "r2.jsonl", [{"id": r["id"], "lines": r["lines"]} for r in ref_rows])
    out2 = evaluate(samples, ref2, "en", ["rhyme"])["rhyme"]
    q_only_abab = rhyme.divergence(_counts(abab=1, aabb=2, aaab=1), _counts(abab=10), 1.0)
    assert out2["kl"] == pytest.approx(q_only_abab["kl"])


def test_rhyme_tables_from_cells(tmp_path):
    def cell(name, system, decoding, dist, pairs, reps):
        counts = np.array([dist.get(s, 0) for s in SCHEMES_4], dtype=float)
        body = rhyme.from_counts(counts, _counts(abab=5, aabb=5), pairs, reps, int(counts.sum()), 1.0)
        path = tmp_path / name
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding},
                                    "n_poems": int(counts.sum()), "rhyme": body}))
        return str(path)

    cells = [cell("h0.json", "HUMAN", "human0", {"abab": 2, "aabb": 2}, 8, 0),
             cell("h1.json", "HUMAN", "human1", {"abab": 4}, 8, 2),
             cell("m.json", "m", "v", {"abcd": 3, "aaaa": 1}, 6, 6)]
    t6, t10 = tmp_path / "t6.tsv", tmp_path / "t10.tsv"
    tables.family_table(cells, "rhyme", str(t6))
    tables.family_table(cells, "rhyme", str(t10), columns=tables.TABLE_COLUMNS["table10"])
    head, human, model = [r.split("\t") for r in t6.read_text().splitlines()]
    assert head[4:7] == ["entropy", "kl", "cross_entropy"] and head[7:] == [f"{s}_pct" for s in SCHEMES_4]
    col = {name: i for i, name in enumerate(head)}
    assert human[col["entropy"]] == "0.500" and human[col["abab_pct"]] == "75.00"   # mean of 1 bit and 0 bits
    assert model[col["abcd_pct"]] == "75.00" and model[col["aaaa_pct"]] == "25.00"
    head, human, model = [r.split("\t") for r in t10.read_text().splitlines()]
    assert head[4:] == ["rhyme_pairs_per_poem", "real_rhymes_pct", "repetitions_pct"]
    assert human[4:] == ["2.000", "87.50", "12.50"] and model[4:] == ["1.500", "0.00", "100.00"]


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


def test_cli_rhyme_bad_record_writes_nothing(tmp_path, capsys):
    src = _jsonl(tmp_path / "bad.jsonl", [{"lines": ABAB}, {"lines": "not a list"}])
    out = tmp_path / "out.jsonl"
    assert main(["rhyme", str(src), "--lang", "de", "--out", str(out)]) == 2
    assert "record 2" in capsys.readouterr().err and not out.exists()
