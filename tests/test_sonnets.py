"""Pseudo-sonnets and word2vec: the training data of the poetry-specific generators."""

import collections

import pytest

from poeval.errors import PoevalError
from poeval.io import read_json, read_jsonl, write_jsonl
from poeval.poetic import sonnets
from poeval.poetic.common import read_word2vec


def _quatrains(n):
    return [{"id": f"q{i}", "lines": [f"verse {i} {j} of the wood" for j in range(4)], "scheme": "abab",
             "meter": "iambic"} for i in range(n)]


def test_each_sonnet_has_three_quatrains_and_a_couplet_from_four_different_quatrains():
    quatrains = _quatrains(40)
    by_id = {q["id"]: q for q in quatrains}
    records, report = sonnets.build(quatrains, seed=3)
    assert report["sonnets"] == len(records) == 10
    for r in records:
        assert len(r["lines"]) == 14 and len(set(r["sources"])) == 4
        assert r["quatrains"] == [by_id[s]["lines"] for s in r["sources"][:3]]
        fourth = by_id[r["sources"][3]]["lines"]
        assert r["couplet"] in (fourth[:2], fourth[2:])
        assert r["lines"] == sum(r["quatrains"], []) + r["couplet"]
        assert r["schemes"] == ["abab"] * 3 and r["meters"] == ["iambic"] * 3


def test_no_quatrain_is_reused_when_the_split_is_large_enough():
    records, report = sonnets.build(_quatrains(43), seed=1)
    uses = collections.Counter(s for r in records for s in r["sources"])
    assert report["sonnets"] == 10 and max(uses.values()) == 1 and report["reused_quatrains"] == 0
    assert report["quatrains_used"] == 40


def test_forced_reuse_is_balanced_and_keeps_sonnets_distinct():
    records, report = sonnets.build(_quatrains(10), n=7, seed=2, allow_reuse=True)
    uses = collections.Counter(s for r in records for s in r["sources"])
    assert sum(uses.values()) == 28 and set(uses.values()) <= {2, 3}   # 28 uses over 10 quatrains
    assert all(len(set(r["sources"])) == 4 for r in records)
    assert report["max_uses"] == 3


def test_too_small_a_corpus_fails_with_the_numbers():
    with pytest.raises(PoevalError, match=r"20 pseudo-sonnets need 80 .* has 30 \(at most 7"):
        sonnets.build(_quatrains(30), n=20)
    with pytest.raises(PoevalError, match="at least 4 training quatrains.*has 3"):
        sonnets.build(_quatrains(3), allow_reuse=True)


def test_same_seed_same_sonnets_and_another_seed_differs():
    a, _ = sonnets.build(_quatrains(40), seed=5)
    b, _ = sonnets.build(_quatrains(40), seed=5)
    c, _ = sonnets.build(_quatrains(40), seed=6)
    assert a == b and a != c


def test_write_sonnets_and_word2vec(tmp_path):
    train = tmp_path / "train.jsonl"
    write_jsonl(train, _quatrains(12))
    summary = sonnets.write_sonnets(str(train), str(tmp_path / "s.jsonl"), str(tmp_path / "r.json"), {"seed": 1})
    report = read_json(tmp_path / "r.json")
    assert report.pop("provenance")["inputs"]["train"]["path"] == str(train)
    assert summary == report and len(list(read_jsonl(tmp_path / "s.jsonl"))) == 3
    with pytest.raises(PoevalError, match="unknown poetic.sonnets"):
        sonnets.write_sonnets(str(train), str(tmp_path / "x.jsonl"), str(tmp_path / "x.json"), {"size": 3})
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
    assert main(["sonnets", "--train", str(train), "--sonnets", '{"n": 3}', "--out", str(tmp_path / "s.jsonl"),
                 "--report", str(tmp_path / "r.json")]) != 0     # 3 sonnets need 12 quatrains
    assert "12 different training quatrains, but the training split has 9" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "r.json").exists()
    model = json.dumps({"arch": "sa", "size": "S"})
    assert main(["train", "--train", str(train), "--dev", str(train), "--out", str(tmp_path / "m"),
                 "--model", model, "--training", "{}"]) != 0
    assert "give --sonnets and --lang" in capsys.readouterr().err
