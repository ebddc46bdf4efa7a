"""Pseudo-sonnets and word2vec: the training data of the poetry-specific generators."""

import collections

import pytest

from poeval.errors import PoevalError
from poeval.generators.poetic import sonnets
from poeval.generators.poetic.common import Word2Vec, read_word2vec
from poeval.generators.poetic.sonnets import Sonnets
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
                                    str(tmp_path / "r.json"), Sonnets.from_dict({"seed": 1}))
    report = read_json(tmp_path / "r.json")
    assert report.pop("provenance")["inputs"]["dev"]["path"] == str(dev)
    assert summary == report and (report["train"]["sonnets"], report["dev"]["sonnets"]) == (3, 1)
    assert len(list(read_jsonl(tmp_path / "s.jsonl"))) == 3 and len(list(read_jsonl(tmp_path / "d.jsonl"))) == 1
    with pytest.raises(PoevalError, match=r"unknown key poetic\.sonnets\.size"):
        Sonnets.from_dict({"size": 3})
    cfg = Word2Vec.from_dict({"dim": 8, "epochs": 2, "min_count": 1, "seed": 1})
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


# --- recipe paper (parse_sonnets.py)


def _numbered(n, word="verse"):
    return [{"id": f"q{i}", "lines": [f"{word} {i} {j}," for j in range(4)]} for i in range(n)]


@pytest.mark.parametrize(("n", "sonnets_made"), [(3, 0), (4, 0), (7, 1), (8, 1), (9, 2), (12, 2), (13, 3)])
def test_paper_sonnets_are_groups_of_four_with_the_last_group_dropped(n, sonnets_made):
    """[quatrains[i:i+4] ...][:-1]: the last group goes, whether it is whole (4, 8, 12) or not."""
    assert len(sonnets.paper_sonnets(_numbered(n))) == sonnets_made


def test_paper_sonnet_is_three_quatrains_and_the_fourths_first_couplet_with_end_punctuation_stripped():
    quatrains = _numbered(9)
    quatrains[1]["lines"] = ["far , !", "wood.", "O!", "--"]
    quatrains[3]["lines"] = ["one: ", "two ...", "three;", "four?"]
    quatrains[2]["lines"][0] = "\u201cquoted\u201d"     # not ASCII punctuation: kept
    first, second = sonnets.paper_sonnets(quatrains)
    assert first["lines"] == (["verse 0 0", "verse 0 1", "verse 0 2", "verse 0 3"] + ["far ,", "wood", "O", ""]
                              + ["\u201cquoted\u201d", "verse 2 1", "verse 2 2", "verse 2 3"] + ["one:", "two"])
    # "one: ": the punctuation strip stops at the trailing space, the space strip comes after it
    assert first["couplet"] == ["one:", "two"] and first["half"] == 0
    assert first["sources"] == ["q0", "q1", "q2", "q3"] and second["sources"] == ["q4", "q5", "q6", "q7"]
    assert first["quatrains"][1] == ["far ,", "wood", "O", ""]
    assert quatrains[1]["lines"][0] == "far , !"   # the input is not changed


@pytest.mark.parametrize("n", [0, 1, 9, 10, 11, 20, 100, 253])
def test_paper_split_is_70_then_80_10_10_as_numpy_splits_it(n):
    np = pytest.importorskip("numpy")
    items = list(range(n))
    background, rest = np.split(np.array(items), [int(n * 0.7)])
    train, dev, test = np.split(rest, [int(len(rest) * 0.8), int(len(rest) * 0.9)])
    assert sonnets.paper_split(items) == tuple(list(map(int, part)) for part in (background, train, dev, test))


def test_paper_split_by_hand():
    parts = sonnets.paper_split(list(range(100)))
    assert [len(p) for p in parts] == [70, 24, 3, 3] and parts[1][0] == 70 and parts[3][-1] == 99
    assert [len(p) for p in sonnets.paper_split(list(range(20)))] == [14, 4, 1, 1]


def test_write_sonnets_and_word2vec_under_the_papers_recipe(tmp_path):
    """84 quatrains -> 21 groups, the last dropped -> 20 sonnets: 14 background (quatrains 0-55), 4 train
    (56-71), 1 dev, 1 test; the dev quatrain split is not read; word2vec sees the background only."""
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    write_jsonl(train, _numbered(56, "old") + _numbered(28, "new"))
    out, dev_out, rep = tmp_path / "s.jsonl", tmp_path / "d.jsonl", tmp_path / "r.json"
    summary = sonnets.write_sonnets(str(train), str(dev), str(out), str(dev_out), str(rep), Sonnets.from_dict({"recipe": "paper"}))
    assert {k: summary[k]["sonnets"] for k in ("background", "train", "dev", "test")} == {
        "background": 14, "train": 4, "dev": 1, "test": 1}
    assert summary["quatrains"] == 84 and read_json(rep)["recipe"] == "paper"
    records = list(read_jsonl(out))
    assert [r["id"] for r in records] == [f"sonnet{k:06d}" for k in range(14, 18)]
    assert records[0]["lines"][0] == "new 0 0" and records[-1]["sources"][-1] == "q15"
    assert [r["id"] for r in read_jsonl(dev_out)] == ["sonnet000018"]
    cfg = Word2Vec.from_dict({"dim": 8, "epochs": 2, "min_count": 1, "seed": 1})
    sonnets.write_word2vec(str(train), tmp_path / "w.txt", cfg, Sonnets.from_dict({"recipe": "paper"}))
    words = set(read_word2vec(tmp_path / "w.txt"))
    assert {"old", "<eos>", "55"} <= words and not {"new", "56", ","} & words
    with pytest.raises(PoevalError, match="recipe poeval"):
        Sonnets.from_dict({"recipe": "paper", "n": 3})
