"""The tables' significance tests (``<table>_tests.tsv``) on small synthetic cells."""

import json

import numpy as np
import pytest
from scipy import stats

from poeval.cli import main
from poeval.errors import PoevalError
from poeval.metrics.evaluate import evaluate
from poeval.report import table_tests
from poeval.metrics.families import family
from poeval.report.tables import FAMILY_OF_TABLE, own_columns

SCHEMES = ["aabb", "abab", "abcb", "abcd"]
HUMAN_SHARES = [0.3, 0.3, 0.2, 0.2]


def _cell(path, lang, system, decoding, family, section, n=None):
    n = n or len(section.get("per_poem", [])) or sum(section.get("counts", {}).values())
    doc = {"cell": {"lang": lang, "system": system, "decoding": decoding}, "n_poems": n, family: section}
    path.write_text(json.dumps(doc))
    return str(path)


def _length_section(values):
    numbers = dict.fromkeys([key for key, *_ in own_columns("length")], 1.0)   # the main table's columns
    return numbers | {"per_poem": [int(v) for v in values]}


def _length_cells(tmp_path, rng):
    """Three HUMAN samples and HUMAN (train) with lengths around 10 tokens, a model of the same
    distribution ("same") and one three tokens longer ("far")."""
    draw = lambda mean: np.round(rng.normal(mean, 2, 150))
    rows = [("HUMAN", f"human{k}", 10) for k in range(3)] + [("HUMAN", "train", 10), ("far", "vanilla", 13),
                                                              ("same", "vanilla", 10)]
    return [_cell(tmp_path / f"{system}-{decoding}.json", "en", system, decoding, "length", _length_section(draw(m)))
            for system, decoding, m in rows]


def _rows(path):
    header, *rows = [line.split("\t") for line in path.read_text().splitlines()]
    return [dict(zip(header, row)) for row in rows]


def test_a_different_model_is_significant_and_a_same_distribution_one_is_not(tmp_path):
    paths = _length_cells(tmp_path, np.random.default_rng(7))
    out = tmp_path / "t5_tests.tsv"
    table_tests.tests_table(paths, "length", str(out), permutations=999, seed=1)
    rows = {(r["system"], r["decoding"]): r for r in _rows(out)}
    # HUMAN (train) is not tested; the HUMAN samples (leave one out) and both models are
    assert list(rows) == [("HUMAN", "human0"), ("HUMAN", "human1"), ("HUMAN", "human2"), ("far", "vanilla"),
                          ("same", "vanilla")]
    far, same = rows["far", "vanilla"], rows["same", "vanilla"]
    assert float(far["p"]) == 1 / 1000 and float(far["p_holm"]) < 0.05
    assert float(same["p"]) > 0.05
    assert (far["test"], far["n"], far["n_human"]) == ("permutation", "150", "450")
    assert all(float(rows["HUMAN", f"human{k}"]["p_holm"]) > 0.05 for k in range(3))
    assert rows["HUMAN", "human0"]["n_human"] == "300"   # the other two samples
    # the statistic: model mean - pooled HUMAN mean
    cells = [json.loads(open(p).read())["length"]["per_poem"] for p in paths]
    assert float(far["statistic"]) == pytest.approx(np.mean(cells[4]) - np.mean(cells[0] + cells[1] + cells[2]),
                                                    abs=5e-5)


def test_holm_runs_over_the_model_rows_and_separately_over_the_human_rows(tmp_path):
    paths = _length_cells(tmp_path, np.random.default_rng(7))
    out = tmp_path / "t5_tests.tsv"
    table_tests.tests_table(paths, "length", str(out), permutations=999, seed=1)
    rows = _rows(out)
    model = sorted(float(r["p"]) for r in rows if r["system"] != "HUMAN")
    # two model rows: the smaller p doubled, the larger one kept (not below the first)
    hand = {model[0]: min(1, 2 * model[0]), model[1]: max(min(1, 2 * model[0]), model[1])}
    assert {float(r["p"]): float(r["p_holm"]) for r in rows if r["system"] != "HUMAN"} == pytest.approx(hand)
    human = sorted(float(r["p"]) for r in rows if r["system"] == "HUMAN")
    assert float(next(r["p_holm"] for r in rows if float(r["p"]) == human[0] and r["system"] == "HUMAN")) \
        == pytest.approx(min(1, 3 * human[0]), rel=1e-3)


def test_scheme_counts_get_a_chi_square_test_of_the_summed_human_counts(tmp_path):
    rng = np.random.default_rng(3)
    counts = lambda shares: dict(zip(SCHEMES, rng.multinomial(400, shares).tolist()))
    human = [counts(HUMAN_SHARES) for _ in range(2)]
    paths = [_cell(tmp_path / f"h{k}.json", "en", "HUMAN", f"human{k}", "rhyme", {"counts": c})
             for k, c in enumerate(human)]
    model = counts([0.1, 0.1, 0.2, 0.6])
    paths.append(_cell(tmp_path / "m.json", "en", "m", "vanilla", "rhyme", {"counts": model}))
    out = tmp_path / "t6_tests.tsv"
    table_tests.tests_table(paths, "rhyme", str(out), permutations=999, seed=1)
    row = _rows(out)[-1]
    pooled = [human[0][s] + human[1][s] for s in SCHEMES]
    ref = stats.chi2_contingency([[model[s] for s in SCHEMES], pooled], correction=False)
    assert (row["measure"], row["test"], row["n"], row["n_human"]) == ("schemes", "chi2", "400", "800")
    assert float(row["statistic"]) == pytest.approx(ref.statistic, abs=5e-5)
    assert float(row["p"]) == pytest.approx(ref.pvalue, rel=1e-3) and ref.pvalue < 1e-10


def test_cli_writes_byte_identical_tests_for_the_same_cells(tmp_path):
    paths = _length_cells(tmp_path, np.random.default_rng(7))
    outs = []
    for k in range(2):
        out = tmp_path / f"tests{k}.tsv"
        assert main(["table", "table5", *paths, "--out", str(tmp_path / f"t{k}.tsv"), "--tests-out", str(out),
                     "--tests", '{"permutations": 499, "seed": 4}']) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert main(["table", "table5", *paths, "--out", str(tmp_path / "t.tsv"), "--tests-out",
                 str(tmp_path / "other.tsv"), "--tests", '{"permutations": 499, "seed": 5}']) == 0
    assert (tmp_path / "other.tsv").read_bytes() != outs[0]   # the seed reaches the tests


def test_a_cell_without_per_poem_values_is_named(tmp_path):
    path = _cell(tmp_path / "old.json", "en", "m", "vanilla", "lexical", {"attr": 0.9, "mattr": 0.8, "mtld": 50.0},
                 n=10)
    with pytest.raises(PoevalError, match="m/vanilla has no 'per_poem.ttr'.*rerun"):
        table_tests.tests_table([path], "lexical", str(tmp_path / "t.tsv"), permutations=9, seed=1)


def test_the_cells_hold_the_per_poem_values_the_tests_read(tmp_path):
    poems = [["the cat the cat", "a dog", "sat down", "on a mat"], ["one two three", "four five", "six", "seven"]]
    for path, rows in (("s.jsonl", poems), ("r.jsonl", poems[:1] * 3)):
        (tmp_path / path).write_text("".join(json.dumps({"id": f"{path}{i}", "lines": p}) + "\n"
                                             for i, p in enumerate(rows)))
    result = evaluate(tmp_path / "s.jsonl", tmp_path / "r.jsonl", "en", ["lexical", "memorization"])
    ttr = result["lexical"]["per_poem"]["ttr"]
    # poem 1: 8 types (the, cat, a, dog, sat, down, on, mat) in 11 tokens
    assert ttr == pytest.approx([8 / 11, 1.0]) and np.mean(ttr) == pytest.approx(result["lexical"]["attr"])
    memorized = result["memorization"]["per_poem"]
    assert memorized["quatrain"] == [1, 0]   # the first quatrain is in the reference
    for level in ("quatrain", "couplet", "verse"):
        units = result["memorization"]["n_units"][level]
        assert sum(memorized[level]) / units == pytest.approx(result["memorization"][level])


def test_the_rhyme_cell_tests_its_schemes_against_the_reference(tmp_path):
    lines = ["the night", "is bright", "the day", "is grey"]
    write = lambda path, labels: path.write_text("".join(
        json.dumps({"id": f"{path.stem}{i}", "lines": lines, "scheme": s}) + "\n" for i, s in enumerate(labels)))
    write(tmp_path / "s.jsonl", ["aabb"] * 30 + ["abab"] * 10 + ["abcd"] * 20)
    write(tmp_path / "r.jsonl", ["aabb"] * 40 + ["abab"] * 40 + ["abcd"] * 40)
    got = evaluate(tmp_path / "s.jsonl", tmp_path / "r.jsonl", "en", ["rhyme"])["rhyme"]["chi2_reference"]
    ref = stats.chi2_contingency([[30, 10, 20], [40, 40, 40]], correction=False)
    assert got == pytest.approx({"test": "chi2", "statistic": ref.statistic, "dof": 2, "p": ref.pvalue})


def test_every_family_table_has_its_tests():
    # the rule loop gives every family table a _tests.tsv: each family's record names its tests
    assert all(family(name).present.tests for name in set(FAMILY_OF_TABLE.values()))


def test_a_sample_without_a_labelled_quatrain_gets_an_untested_row(tmp_path):
    # a topics cell whose every quatrain lacks a vocabulary word has all-zero dominant-topic counts
    topics = [str(t) for t in range(3)]
    paths = [_cell(tmp_path / f"h{k}.json", "en", "HUMAN", f"human{k}", "topics",
                   {"counts": dict(zip(topics, [30, 20, 10]))}) for k in range(2)]
    paths.append(_cell(tmp_path / "m.json", "en", "m", "vanilla", "topics", {"counts": dict.fromkeys(topics, 0)}, n=4))
    out = tmp_path / "topics_tests.tsv"
    table_tests.tests_table(paths, "topics", str(out), permutations=99, seed=1)
    rows = _rows(out)
    assert [r["test"] for r in rows] == ["chi2", "chi2", "NA"] and rows[-1]["p"] == "NA"
