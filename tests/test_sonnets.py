"""Pseudo-sonnets and word2vec: the training data of the poetry-specific generators."""

import collections

import pytest

from poeval.errors import PoevalError
from poeval.generators.poetic import sonnets
from poeval.generators.poetic.common import read_word2vec
from poeval.io import read_json, read_jsonl, write_jsonl


def _quatrains(n):
    return [{"id": f"q{i}", "lines": [f"verse {i} {j} of the wood" for j in range(4)], "scheme": "abab",
             "meter": "iambic"} for i in range(n)]


def _verse_uses(records, quatrains):
    """Times each (quatrain id, verse) occurs in the sonnets, found from the text, not the records' plan."""
    where = {line: (q["id"], v) for q in quatrains for v, line in enumerate(q["lines"])}
    return collections.Counter(where[line] for r in records for line in r["lines"])


def test_each_sonnet_has_three_quatrains_and_a_couplet_from_four_different_quatrains():
    quatrains = _quatrains(40)
    by_id = {q["id"]: q for q in quatrains}
    records, report = sonnets.build(quatrains, seed=3)
    assert report["sonnets"] == len(records) == 11   # floor(2 x 40 / 7)
    for r in records:
        assert len(r["lines"]) == 14 and len(set(r["sources"])) == 4
        assert r["quatrains"] == [by_id[s]["lines"] for s in r["sources"][:3]]
        fourth = by_id[r["sources"][3]]["lines"]
        assert r["couplet"] == fourth[2 * r["half"] : 2 * r["half"] + 2]
        assert r["lines"] == sum(r["quatrains"], []) + r["couplet"]
        assert r["schemes"] == ["abab"] * 3 and r["meters"] == ["iambic"] * 3


@pytest.mark.parametrize("n", [4, 6, 7, 10, 11, 43, 100])
def test_the_papers_count_floor_two_sevenths_with_every_verse_used_once(n):
    """Table 1 of the paper: SonNet = floor(2/7 x QuaTrain) (253,843 -> 72,526; 28,205 -> 8,058)."""
    quatrains = _quatrains(n)
    records, report = sonnets.build(quatrains, seed=1)
    assert len(records) == report["sonnets"] == 2 * n // 7 == sonnets.capacity(n)
    uses = _verse_uses(records, quatrains)
    assert set(uses.values()) == {1} and sum(uses.values()) == 14 * len(records) == report["verses_used"]
    assert report["max_verse_uses"] == 1
    assert (sonnets.capacity(253_843), sonnets.capacity(28_205)) == (72_526, 8_058)


def test_a_couplet_quatrain_gives_its_two_halves_to_two_sonnets():
    records, _ = sonnets.build(_quatrains(7), seed=4)
    assert len(records) == 2 and records[0]["sources"][3] == records[1]["sources"][3]
    assert {records[0]["half"], records[1]["half"]} == {0, 1}
    assert not set(records[0]["sources"][:3]) & set(records[1]["sources"][:3])


def test_forced_reuse_packs_fresh_passes_and_keeps_sonnets_distinct():
    quatrains = _quatrains(14)   # 4 sonnets per pass
    records, report = sonnets.build(quatrains, n=10, seed=2, allow_reuse=True)
    assert all(len(set(r["sources"])) == 4 for r in records)
    assert set(_verse_uses(records, quatrains).values()) <= {1, 2, 3} and report["max_verse_uses"] == 3


def test_too_small_a_corpus_fails_with_the_numbers():
    with pytest.raises(PoevalError, match=r"20 pseudo-sonnets need 280 verses.* has 30 quatrains \(at most 8"):
        sonnets.build(_quatrains(30), n=20)
    with pytest.raises(PoevalError, match="at least 4 quatrains.*has 3"):
        sonnets.build(_quatrains(3), allow_reuse=True)


def test_same_seed_same_sonnets_and_another_seed_differs():
    a, _ = sonnets.build(_quatrains(40), seed=5)
    b, _ = sonnets.build(_quatrains(40), seed=5)
    c, _ = sonnets.build(_quatrains(40), seed=6)
    assert a == b and a != c


def test_write_sonnets_and_word2vec(tmp_path):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    write_jsonl(train, _quatrains(12))
    write_jsonl(dev, _quatrains(5))
    summary = sonnets.write_sonnets(str(train), str(dev), str(tmp_path / "s.jsonl"), str(tmp_path / "d.jsonl"),
                                    str(tmp_path / "r.json"), {"seed": 1})
    report = read_json(tmp_path / "r.json")
    assert report.pop("provenance")["inputs"]["dev"]["path"] == str(dev)
    assert summary == report and (report["train"]["sonnets"], report["dev"]["sonnets"]) == (3, 1)
    assert len(list(read_jsonl(tmp_path / "s.jsonl"))) == 3 and len(list(read_jsonl(tmp_path / "d.jsonl"))) == 1
    with pytest.raises(PoevalError, match=r"unknown key poetic\.sonnets\.size"):
        sonnets.write_sonnets(str(train), str(dev), str(tmp_path / "x.jsonl"), str(tmp_path / "y.jsonl"),
                              str(tmp_path / "x.json"), {"size": 3})
    cfg = {"dim": 8, "epochs": 2, "min_count": 1, "seed": 1}
    sonnets.write_word2vec(str(train), tmp_path / "a.txt", cfg)
    sonnets.write_word2vec(str(train), tmp_path / "b.txt", cfg)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()   # seeded, single worker
    vectors = read_word2vec(tmp_path / "a.txt")
    assert {"verse", "wood", "of"} <= set(vectors) and all(len(v) == 8 for v in vectors.values())


def test_cli_builds_sonnets_and_refuses_a_poetic_train_without_them(tmp_path, capsys):
    import json

    from poeval.cli import main

    train = tmp_path / "train.jsonl"
    write_jsonl(train, _quatrains(9))
    assert main(["sonnets", "--train", str(train), "--dev", str(train), "--sonnets", '{"n": 3}',
                 "--out", str(tmp_path / "s.jsonl"), "--dev-out", str(tmp_path / "d.jsonl"),
                 "--report", str(tmp_path / "r.json")]) != 0     # 9 quatrains give floor(18/7) = 2
    assert "3 pseudo-sonnets need 42 verses, but the split has 9 quatrains (at most 2" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "r.json").exists()
    model = json.dumps({"arch": "sa", "size": "S"})
    assert main(["train", "--train", str(train), "--dev", str(train), "--out", str(tmp_path / "m"),
                 "--model", model, "--training", "{}"]) != 0
    assert "give --sonnets and --lang" in capsys.readouterr().err
