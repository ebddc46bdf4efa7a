"""Similarity between rows (poeval.metrics.similarity, `poeval similarity cell|table|figure`) against brute force
and hand-computed cases."""

from __future__ import annotations

import csv
import difflib
import itertools
import json
import random

import numpy as np
import pytest

from poeval.cli import main
from poeval.jobs import similarity as jobs
from poeval.metrics import lexical, semantic, similarity

WORDS = "day night sun moon rain snow light dark sea sky wind fire heart song".split()


def _quatrains(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) for _ in range(4)] for _ in range(n)]


def _unit(rows: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(rows, 8)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _compare(a, b, ea, eb, ngram=2, threshold=0.7, reps=0):
    return similarity.compare(a, b, ea, eb, tokenize=lexical.quatrain_tokens, ngram=ngram, threshold=threshold,
                              autojunk=False, reps=reps, seed=1)


def test_compare_matches_brute_force():
    a, b = _quatrains(7, 1), _quatrains(7, 2)
    b[3] = list(a[5])                                   # an exact copy
    b[4] = [a[2][0] + " x", *a[2][1:]]                  # a near-duplicate
    ea, eb = _unit(7, 3), _unit(7, 4)
    got = _compare(a, b, ea, eb)
    a_to_b = np.mean([max(float(x @ y) for y in eb) for x in ea])
    b_to_a = np.mean([max(float(y @ x) for x in ea) for y in eb])
    assert got["semantic"] == pytest.approx((a_to_b + b_to_a) / 2, abs=1e-6)

    def grams(side):
        return {tuple(t[i:i + 2]) for q in side for t in [" ".join(q).lower().split()] for i in range(len(t) - 1)}

    def ends(side):
        return {v.split()[-1].lower() for q in side for v in q}

    for key, f in (("ngram_jaccard", grams), ("end_word_jaccard", ends)):
        x, y = f(a), f(b)
        assert got[key] == pytest.approx(len(x & y) / len(x | y))
    # every pair by difflib, the other set's quatrain first (the memorization definition)
    ratio = {(i, j): difflib.SequenceMatcher(None, " ".join(q), " ".join(p), autojunk=False).ratio()
             for (i, p), (j, q) in itertools.product(enumerate(a), enumerate(b))}   # B's unit first: A -> B
    back = {(i, j): difflib.SequenceMatcher(None, " ".join(a[i]), " ".join(b[j]), autojunk=False).ratio()
            for i, j in ratio}                                                   # A's unit first: B -> A
    hit_a = {i for i in range(7) if max(ratio[i, j] for j in range(7)) >= 0.7}
    hit_b = {j for j in range(7) if max(back[i, j] for i in range(7)) >= 0.7}
    assert {5, 2} <= hit_a and {3, 4} <= hit_b
    assert got["near_duplicate_share"] == pytest.approx((len(hit_a) / 7 + len(hit_b) / 7) / 2)
    best_a = {(i, max(range(7), key=lambda j: (ratio[i, j], -j))) for i in hit_a}
    best_b = {(max(range(7), key=lambda i: (back[i, j], -i)), j) for j in hit_b}
    assert got["near_duplicate_pairs"] == len(best_a | best_b)
    assert got["n"] == 7 and got["ci"] == {}


def test_hand_computed_case():
    a = [["the day is long", "the night is here", "a sun", "the moon"]]
    b = [["the day is short", "no night is here", "the rain", "the snow"]]
    e = np.eye(2, dtype=np.float32)
    got = _compare(a, b, e[:1], e[1:], ngram=3)
    # 3-grams of a: the day is / day is long / is long the / long the night / the night is / night is here /
    # is here a / here a sun / a sun the / sun the moon (10); b shares "the day is" and "night is here"
    # and has 8 more: 2 / 18
    assert got["ngram_jaccard"] == pytest.approx(2 / 18)
    assert got["end_word_jaccard"] == pytest.approx(1 / 7)   # {long, here, sun, moon} vs {short, here, rain, snow}
    assert got["semantic"] == 0.0   # orthogonal embeddings
    # difflib's ratio of the two joined quatrains is 0.727 (b's first) and 0.707 (a's first): both >= 0.7, so
    # each quatrain has a near-duplicate in the other set, and the two directions find the same pair; at 0.72
    # only one direction reaches the threshold
    assert got["near_duplicate_share"] == 1.0 and got["near_duplicate_pairs"] == 1
    at = _compare(a, b, e[:1], e[1:], ngram=3, threshold=0.72)
    assert at["near_duplicate_share"] == 0.5 and at["near_duplicate_pairs"] == 1


def test_identical_sets_and_intervals():
    a = _quatrains(12, 5)
    e = _unit(12, 6)
    got = _compare(a, a, e, e, reps=50)
    assert got["semantic"] == pytest.approx(1.0) and got["near_duplicate_share"] == 1.0
    assert got["ngram_jaccard"] == 1.0 and got["near_duplicate_pairs"] == 12
    assert got["ci"]["near_duplicate_share"] == [1.0, 1.0]
    lo, hi = got["ci"]["ngram_jaccard"]
    assert lo <= 1.0 <= hi   # the bias-corrected interval of a set measure holds its value


def test_draws_and_baseline():
    a = [{"lines": q} for q in _quatrains(9, 7)]
    b = [{"lines": q} for q in _quatrains(5, 8)] + a[:3]
    assert similarity.without(b, a) == b[:5]
    da, db = similarity.common_draw(a, b, 1)
    assert len(da) == len(db) == 8 and db == b and all(p in a for p in da)
    assert similarity.common_draw(a, b, 1) == (da, db)


def _write(path, quatrains):
    path.write_text("".join(json.dumps({"id": f"{path.stem}{i}", "lines": q}) + "\n" for i, q in enumerate(quatrains)))
    return str(path)


def test_cli_cells_table_and_figure(tmp_path, fake):
    train = _quatrains(30, 9)
    ref = _write(tmp_path / "train.jsonl", train)
    npy = tmp_path / "train.npy"
    semantic.embed_file(ref, "default", str(npy))
    h0 = _write(tmp_path / "h0.jsonl", train[:10])
    h1 = _write(tmp_path / "h1.jsonl", train[8:20])
    model = _write(tmp_path / "m.jsonl", _quatrains(6, 10))
    base = dict(lang="en", ngram=3, seed=1, tokens="poeval", threshold=0.7, autojunk=False, encoder="default",
                backend="torch", batch_size=4, bootstrap_reps=20, bootstrap_seed=1)
    cells = []
    for a, b, pa, pb, diag in (("HUMAN", "HUMAN", h0, h1, True), ("HUMAN", "sys", h0, model, False)):
        job = jobs.SimilarityCellJob(a=jobs.Row(a, "human0"), b=jobs.Row(b, "human1" if diag else "vanilla"),
                                     baseline=diag, **base)
        out = str(tmp_path / f"{a}~{b}.json")
        assert main(["similarity", "cell", pa, pb, "--reference", ref, "--embeddings", str(npy),
                     "--job", job.to_json(), "--out", out]) == 0
        cells.append(out)
    diag, pair = (json.loads(open(c).read()) for c in cells)
    assert diag["n"] == 10 and diag["near_duplicate_share"] < 1   # h1 less the two shared quatrains: 10 left
    enc = semantic.embed_quatrains(train[:10], fake, progress=False)
    other = semantic.embed_quatrains([q for q in train[10:20]], fake, progress=False)
    want = (np.mean((enc @ other.T).max(axis=1)) + np.mean((other @ enc.T).max(axis=1))) / 2
    assert diag["semantic"] == pytest.approx(want, abs=1e-5)
    assert pair["n"] == 6 and "provenance" in pair
    rows = jobs.SimilarityTableJob({"en": ["HUMAN", "sys"]}).to_json()
    table, ci, png = (str(tmp_path / name) for name in ("s.tsv", "s.ci.tsv", "s.png"))
    main(["similarity", "table", *cells, "--job", rows, "--out", table, "--ci-out", ci])
    main(["similarity", "figure", *cells, "--job", rows, "--out", png])
    got = list(csv.DictReader(open(table), delimiter="\t"))
    assert [(r["row_a"], r["row_b"], r["semantic"]) for r in got] == [
        ("HUMAN", "HUMAN", f"{diag['semantic']:.4f}"), ("HUMAN", "sys", f"{pair['semantic']:.4f}")]
    assert open(png, "rb").read(4) == b"\x89PNG"
    # a cell of a row the job does not name: one line of error, the table left as it was
    assert main(["similarity", "table", *cells, "--job", jobs.SimilarityTableJob({"en": ["HUMAN"]}).to_json(),
                 "--out", table]) == 2
    assert list(csv.DictReader(open(table), delimiter="\t")) == got


def test_stale_sees_a_similarity_cell_and_table_by_their_steps(tmp_path, root):
    import yaml

    from poeval.params import resolve
    from poeval.report.stale import stale_outputs
    from poeval.stamps import stamp, write_stamp_file

    config = yaml.safe_load((root / "params.yaml").read_text())
    params = resolve(config)
    cell = tmp_path / "results/similarity/en/HUMAN~gpt2-s.json"
    cell.parent.mkdir(parents=True)
    recorded = jobs.similarity_cell_job(params, "en", "HUMAN", "gpt2-s").recorded()
    cell.write_text(json.dumps({"provenance": stamp({}, recorded | {"ngram": 2})}))
    table = tmp_path / "results/tables/similarity.tsv"
    table.parent.mkdir(parents=True)
    table.write_text("lang\n")
    write_stamp_file(str(table), {}, jobs.similarity_table_job(params).recorded())
    found = stale_outputs(config, tmp_path)
    assert [(s.rule, s.stamped) for s in found] == [("similarity_cell", "results/similarity/en/HUMAN~gpt2-s.json")]
    assert "ngram" in found[0].reasons[0]
    config["metrics"]["similarity"]["enabled"] = False   # off: not this run's to rebuild
    assert stale_outputs(config, tmp_path) == []


def test_the_rows_are_humans_and_the_systems_params_name(root):
    import yaml

    from poeval.errors import PoevalError
    from poeval.params import resolve

    config = yaml.safe_load((root / "params.yaml").read_text())
    config["systems"] = ["gpt2-s", "llama-s", "smollm2"]
    every = resolve(config)
    assert jobs.pairs(every, "en") == [("HUMAN", "HUMAN"), ("HUMAN", "gpt2-s"), ("HUMAN", "llama-s"),
                                       ("HUMAN", "smollm2"), ("gpt2-s", "llama-s"), ("gpt2-s", "smollm2"),
                                       ("llama-s", "smollm2")]
    # named in another order, and one that is a model but not in this run: the run's systems, in their order
    config["metrics"]["similarity"]["systems"] = ["smollm2", "gpt2-s", "bygpt5-s"]
    assert jobs.pairs(resolve(config), "en") == [("HUMAN", "HUMAN"), ("HUMAN", "gpt2-s"), ("HUMAN", "smollm2"),
                                                 ("gpt2-s", "smollm2")]
    config["metrics"]["similarity"]["systems"] = ["gtp2-s"]
    with pytest.raises(PoevalError, match="'gtp2-s' is no system of `models`"):
        jobs.pairs(resolve(config), "en")
