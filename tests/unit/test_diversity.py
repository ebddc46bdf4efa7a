"""The general diversity measures (poeval.metrics.diversity, not in the paper), each against its
reference implementation on a small fixture: sacrebleu, rouge-score, vendi-score, mauve-text in this
environment; Shaib et al.'s `diversity` package by numbers stored from scripts/diversity_reference.py
(it needs transformers < 5, so it lives in a venv of its own); and hand-computed cases."""

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from poeval.errors import PoevalError
from poeval.metrics import diversity, semantic

FIXTURE = Path(__file__).parents[1] / "fixtures" / "diversity_quatrains.jsonl"   # 12: a duplicate, one German
QUATRAINS = [json.loads(line)["lines"] for line in FIXTURE.read_text("utf-8").splitlines()]
TEXTS = diversity.texts(QUATRAINS)

# `python scripts/diversity_reference.py tests/fixtures/diversity_quatrains.jsonl` in a venv with
# `pip install diversity` (package version below); the package rounds its scores to 3 digits.
EXPECTED = {
    "package": "diversity 0.3.1",
    "all": {"ngram_diversity": 3.527, "distinct": [0.70625, 0.9373040752351097, 0.940251572327044, 0.943217665615142],
             "compression_ratio": 1.691, "compression_sizes": [1672, 989],
             "homogenization_rougel": 0.101},
    "first5": {"ngram_diversity": 3.858, "distinct": [0.8582089552238806, 1.0, 1.0, 1.0],
             "compression_ratio": 1.429, "compression_sizes": [710, 497],
             "homogenization_rougel": 0.09},
}


def _unit(rng, n, d=16):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --- self-BLEU: sacrebleu ------------------------------------------------------------------------------

def test_self_bleu_equals_sacrebleu_sentence_bleu_against_all_others():
    """Tolerance 1e-9 (the same sacrebleu formula; only the n-gram bookkeeping is poeval's)."""
    import sacrebleu

    got = diversity.self_bleu(TEXTS, None)
    want = [sacrebleu.sentence_bleu(t, TEXTS[:i] + TEXTS[i + 1:]).score for i, t in enumerate(TEXTS)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert got[3] == pytest.approx(100.0) and got[10] == pytest.approx(100.0)   # d03 and its duplicate d10
    assert got[11] < 5                                                          # the German quatrain


@pytest.mark.parametrize("n", [1, 3, 7])
def test_self_bleu_with_n_drawn_references_equals_sacrebleu_on_the_same_draws(n):
    import sacrebleu

    got = diversity.self_bleu(TEXTS, n, seed=5)
    rng = np.random.default_rng([5, 0])       # the module's draw, reproduced
    want = []
    for i, t in enumerate(TEXTS):
        refs = diversity._draw_others(rng, len(TEXTS), i, n)
        assert len(refs) == n and i not in refs and len(set(refs.tolist())) == n
        want.append(sacrebleu.sentence_bleu(t, [TEXTS[j] for j in refs]).score)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(got, diversity.self_bleu(TEXTS, n, seed=5))          # seeded
    assert not np.array_equal(got, diversity.self_bleu(TEXTS, n, seed=6))


def test_self_bleu_needs_two_quatrains_and_more_references_than_others_means_all():
    assert diversity.self_bleu(TEXTS[:1]) is None
    np.testing.assert_array_equal(diversity.self_bleu(TEXTS, 11), diversity.self_bleu(TEXTS, None))


# --- distinct-n, n-gram diversity, compression: Shaib et al. and by hand -------------------------------

def test_distinct_n_of_a_two_line_toy_by_hand():
    # words: a b a | b a  ->  a b a b a: 2/5 unigrams, 2/4 bigrams, 2/3 trigrams (aba, bab), 2/2 4-grams;
    # n-grams run across the two texts, as the package joins them
    got = diversity.distinct_n(["a b a", "b a"])
    assert got == {1: 2 / 5, 2: 2 / 4, 3: 2 / 3, 4: 1.0}
    assert diversity.ngram_diversity(got) == pytest.approx(0.4 + 0.5 + 2 / 3 + 1.0, abs=1e-12)
    # the package splits on single spaces: a double space is an empty word, a newline none
    assert diversity.distinct_n(["a  b", "c\nd"])[1] == 1.0      # a, "", b, c\nd: 4 unique of 4
    assert diversity.distinct_n(["a  a"])[1] == 2 / 3            # a, "", a
    assert diversity.distinct_n(["a b"])[3] is None and diversity.ngram_diversity(diversity.distinct_n(["a b"])) is None


@pytest.mark.parametrize("part", ["all", "first5"])
def test_distinct_n_and_ngram_diversity_equal_the_diversity_package(part):
    """distinct-n to 1e-12; n-gram diversity to the package's 3 rounded digits."""
    texts = TEXTS if part == "all" else TEXTS[:5]
    want = EXPECTED[part]
    got = diversity.distinct_n(texts)
    np.testing.assert_allclose([got[n] for n in range(1, 5)], want["distinct"], rtol=0, atol=1e-12)
    assert round(diversity.ngram_diversity(got), 3) == want["ngram_diversity"]


@pytest.mark.parametrize("part", ["all", "first5"])
def test_compression_ratio_procedure_diversity_equals_the_package_byte_for_byte(part):
    texts = TEXTS if part == "all" else TEXTS[:5]
    original, compressed = EXPECTED[part]["compression_sizes"]
    assert diversity.compression_ratio(texts, "diversity") == original / compressed     # exact
    assert round(original / compressed, 3) == EXPECTED[part]["compression_ratio"]


def test_compression_ratio_gzip_by_hand():
    """gzip's size: a 10-byte header (no file name), the raw deflate stream at level 9, an 8-byte trailer."""
    data = " ".join(TEXTS).encode("utf-8")
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    size = 10 + len(deflate.compress(data) + deflate.flush()) + 8
    assert diversity.compression_ratio(TEXTS) == len(data) / size
    assert diversity.compression_ratio([]) is None
    with pytest.raises(PoevalError, match="compression"):
        diversity.compression_ratio(TEXTS, "xz")


# --- homogenization: rouge-score and the package ------------------------------------------------------------

def test_rouge_tokens_equal_rouge_scores_default_tokenizer():
    """On German and English verse, digits, apostrophes, dashes, Unicode case (İ, ß, Σ) and empty text."""
    from rouge_score.tokenizers import DefaultTokenizer

    tokenizer = DefaultTokenizer(use_stemmer=False)
    cases = TEXTS + ["Schön blüht die Heide, über'm Fluß", "İstanbul ΣΟΦΊΑ straße", "O'er the 2nd--and 3RD hill!",
                     "", "  \t\n", "ﬁne ﬂower Ⅻ ²", "don't won't can't", "naïve café résumé"]
    for text in cases:
        assert diversity.rouge_tokens(text) == tokenizer.tokenize(text), text


def test_lcs_bit_parallel_equals_rouge_scores_table():
    from rouge_score.rouge_scorer import _lcs_table

    rng = np.random.default_rng(0)
    for _ in range(300):
        a = [str(x) for x in rng.integers(0, 4, rng.integers(0, 12))]
        b = [str(x) for x in rng.integers(0, 4, rng.integers(1, 12))]
        assert diversity._lcs_length(a, diversity._masks(b), len(b)) == _lcs_table(a, b)[-1][-1]


def test_homogenization_equals_rouge_score_over_all_pairs_and_the_package():
    """Per quatrain, the mean ROUGE-L F1 of rouge-score's scorer over the others (1e-12); their mean is
    the package's homogenization_score(..., 'rougel') (3 rounded digits)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    got = diversity.homogenization(TEXTS, None)
    want = [np.mean([scorer.score(TEXTS[j], t)["rougeL"].fmeasure for j in range(len(TEXTS)) if j != i])
            for i, t in enumerate(TEXTS)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert got[3] > got[0]                      # the duplicate's partner scores 1
    assert round(float(got.mean()), 3) == EXPECTED["all"]["homogenization_rougel"]
    assert round(float(diversity.homogenization(TEXTS[:5], None).mean()), 3) == EXPECTED["first5"]["homogenization_rougel"]


def test_homogenization_with_drawn_partners_equals_rouge_score_on_the_same_draws():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    got = diversity.homogenization(TEXTS, 4, seed=3)
    rng = np.random.default_rng([3, 1])
    want = [np.mean([scorer.score(TEXTS[j], t)["rougeL"].fmeasure for j in diversity._draw_others(rng, 12, i, 4)])
            for i, t in enumerate(TEXTS)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert diversity.homogenization(TEXTS[:1]) is None


# --- Vendi score: vendi-score ------------------------------------------------------------------------

def test_vendi_dual_form_equals_vendi_score_with_the_cosine_kernel():
    """Tolerance 1e-9 relative: the n x n kernel's eigenvalues against the d x d dual's."""
    from vendi_score import vendi

    rng = np.random.default_rng(7)
    x = rng.standard_normal((12, 16)) * rng.uniform(0.5, 3, (12, 1))     # unnormalised rows
    x[5] = 2 * x[1]                                                       # a duplicate up to scale
    cosine = lambda a, b: float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))   # noqa: E731
    assert diversity.vendi(x) == pytest.approx(vendi.score(list(x), cosine), rel=1e-9)
    assert diversity.vendi(x) == pytest.approx(vendi.score_dual(x), rel=1e-9)
    # by hand: n copies of one direction are one item; n orthogonal directions are n
    assert diversity.vendi(np.ones((5, 3))) == pytest.approx(1.0)
    assert diversity.vendi(np.eye(6)) == pytest.approx(6.0)
    assert diversity.vendi(np.zeros((0, 3))) is None


# --- MAUVE: mauve-text ---------------------------------------------------------------------------------

def test_mauve_score_is_mauve_text_on_the_same_features_seed_and_buckets():
    """Equal (same call); seeded: twice the same; another seed moves it."""
    import mauve

    rng = np.random.default_rng(1)
    p, q = _unit(rng, 80), _unit(rng, 80) + 0.3
    got = diversity.mauve_score(p, q, buckets=4, seed=3)
    want = mauve.compute_mauve(p_features=p.astype(np.float32), q_features=q.astype(np.float32), num_buckets=4,
                               seed=3, verbose=False).mauve
    assert got == want and diversity.mauve_score(p, q, buckets=4, seed=3) == got
    assert 0 < got < 1
    assert diversity.mauve_score(p[:1], q) is None


# --- the family in poeval evaluate ---------------------------------------------------------------------



def _files(tmp_path, n_train=30):
    """A reference of the fixture's quatrains and shuffled variants of them, cached; a model sample (new
    ids) and a HUMAN sample (reference ids and verses)."""
    rng = np.random.default_rng(0)
    train = [{"id": f"t{i}", "lines": [QUATRAINS[i % 12][k] for k in rng.permutation(4)][:3] + [f"verse of t{i}"]}
             for i in range(n_train)]   # no two alike, even to the bag-of-words encoder
    ref = tmp_path / "train.jsonl"
    ref.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in train), "utf-8")
    npy = tmp_path / "train.npy"
    semantic.embed_file(str(ref), "default", str(npy), batch_size=4)
    model = tmp_path / "model.jsonl"
    model.write_text("".join(json.dumps({"id": f"m{i}", "lines": q}, ensure_ascii=False) + "\n"
                             for i, q in enumerate(QUATRAINS)), "utf-8")
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in train[:10]), "utf-8")
    return ref, npy, model, human, train


def test_cli_diversity_cell_has_every_measure_per_poem_values_and_intervals(fake, tmp_path):
    from poeval.cli import main

    ref, npy, model, _, train = _files(tmp_path)
    out = tmp_path / "cell.json"
    options = {"diversity": {"self_bleu_references": 5, "homogenization_partners": 6, "mauve_buckets": 3}}
    assert main(["evaluate", str(model), "--reference", str(ref), "--lang", "en", "--metrics", "diversity",
                 "--options", json.dumps(options), "--reference-embeddings", str(npy), "--bootstrap-reps", "50",
                 "--cell", "en/m/vanilla", "--out", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert "NaN" not in text
    cell = json.loads(text)["diversity"]
    measures = {"self_bleu", "distinct_1", "distinct_2", "distinct_3", "distinct_4", "ngram_diversity",
                "compression_ratio", "homogenization", "vendi", "mauve"}
    assert measures <= set(cell) and all(isinstance(cell[m], float) for m in measures)
    assert set(cell["ci"]) == {"self_bleu", "homogenization"}       # no interval for the set measures
    for key in cell["ci"]:
        low, high = cell["ci"][key]
        assert low <= cell[key] <= high and low < high
    # per-poem values: the module's, rounded to 6 digits; their mean is the cell's number
    sb = diversity.self_bleu(TEXTS, 5, seed=1)
    assert cell["per_poem"]["self_bleu"] == [round(float(v), 6) for v in sb]
    assert cell["self_bleu"] == pytest.approx(sb.mean(), abs=1e-12)
    assert len(cell["per_poem"]["homogenization"]) == 12
    assert (cell["self_bleu_references"], cell["homogenization_partners"], cell["mauve_buckets"]) == (5, 6, 3)
    assert cell["encoder"] == "all-MiniLM-L6-v2" and cell["mauve_human_n"] == 12
    # MAUVE: mauve-text on the sample's embeddings and those of the HUMAN quatrains drawn from the cache
    import mauve

    p = semantic.embed_quatrains(QUATRAINS, fake, progress=False)
    q = np.load(npy)[diversity.human_rows(len(train), 12, 1)]
    assert cell["mauve"] == mauve.compute_mauve(p_features=p, q_features=q, num_buckets=3, seed=25).mauve
    # the semantic options reach the cell's provenance (its encoder decides the embeddings)
    stamp = json.loads(text)["provenance"]
    assert "semantic" in json.dumps(stamp)


def test_a_human_cell_reads_its_embeddings_from_the_cache_and_draws_mauves_human_sample_elsewhere(fake, tmp_path,
                                                                                                monkeypatch):
    from poeval.metrics.evaluate import evaluate

    ref, npy, _, human, train = _files(tmp_path)
    encoded = []
    encode = fake.encode
    monkeypatch.setattr(fake, "encode", lambda batch, **kw: encoded.extend(batch) or encode(batch, **kw))
    options = {"semantic": {"reference_embeddings": str(npy)}, "diversity": {"mauve_buckets": 2}}
    result = evaluate(human, ref, "en", ["diversity"], options=options, exclude_sample_from_reference=True)
    cell = result["diversity"]
    assert result["n_reference"] == 20 and cell["mauve_human_n"] == 10
    # the encoder embeds only the three rows that check the cache (first, middle, last), no poem of the sample
    assert sorted(encoded) == sorted(semantic.quatrain_text(train[i]["lines"]) for i in (0, 15, 29))
    cached = np.load(npy)
    assert cell["vendi"] == pytest.approx(diversity.vendi(cached[:10]), rel=1e-12)
    # the HUMAN sample of MAUVE comes from the reference minus the sample's own quatrains (rows 10..29)
    import mauve

    rows = diversity.human_rows(20, 10, 1)
    assert cell["mauve"] == mauve.compute_mauve(p_features=cached[:10], q_features=cached[10:][rows], num_buckets=2,
                                                seed=25).mauve
    assert cell["mauve"] != mauve.compute_mauve(p_features=cached[:10], q_features=cached[rows], num_buckets=2,
                                                seed=25).mauve   # the same draw among all rows differs


def test_a_one_quatrain_sample_gives_nulls_not_errors(fake, tmp_path):
    from poeval.metrics.evaluate import evaluate

    ref, npy, model, _, _ = _files(tmp_path)
    one = tmp_path / "one.jsonl"
    one.write_text(model.read_text("utf-8").splitlines()[0] + "\n", "utf-8")
    cell = evaluate(one, ref, "en", ["diversity"], options={"semantic": {"reference_embeddings": str(npy)}},
                    bootstrap_reps=10)["diversity"]
    assert cell["self_bleu"] is None and cell["homogenization"] is None and cell["mauve"] is None
    assert cell["vendi"] == pytest.approx(1.0) and cell["distinct_1"] is not None


def test_diversity_options_are_checked_by_the_schema():
    from poeval.metrics.evaluate import family_options

    assert family_options("diversity", {})["self_bleu_references"] is None
    with pytest.raises(PoevalError, match="self_bleu_refs"):
        family_options("diversity", {"self_bleu_refs": 5})
    with pytest.raises(PoevalError):
        family_options("diversity", {"mauve_buckets": "many"})


def test_diversity_tables_average_the_human_samples_and_list_a_model_cells_intervals(tmp_path):
    """tables.family_table on diversity cells: the HUMAN row is the mean of the samples, a model row
    its cell with the bootstrap interval of self-BLEU; MAUVE has none (NA)."""
    from poeval.report.tables import DECODING_TABLES, FAMILY_OF_TABLE, family_table, own_columns

    assert FAMILY_OF_TABLE["diversity"] == FAMILY_OF_TABLE["diversity_decodings"] == "diversity"
    assert "diversity_decodings" in DECODING_TABLES and "diversity" not in DECODING_TABLES
    keys = [key for key, *_ in own_columns("diversity")]
    paths = []
    for k, (system, decoding, value) in enumerate([("HUMAN", "human0", 1.0), ("HUMAN", "human1", 2.0),
                                                    ("gpt2-s", "vanilla", 4.0)]):
        section = {key: value for key in keys}
        if system != "HUMAN":
            section["ci"] = {"self_bleu": [3.5, 4.5], "homogenization": [3.0, 5.0]}
        path = tmp_path / f"{k}.json"
        path.write_text(json.dumps({"cell": {"lang": "en", "system": system, "decoding": decoding}, "n_poems": 10,
                                    "diversity": section}))
        paths.append(str(path))
    family_table(paths, "diversity", str(tmp_path / "t.tsv"), str(tmp_path / "ci.tsv"))
    rows = [line.split("\t") for line in (tmp_path / "t.tsv").read_text().splitlines()]
    assert rows[0][:5] == ["lang", "system", "decoding", "n", "self_bleu"] and rows[0][-1] == "mauve"
    assert rows[1][:5] == ["en", "HUMAN (mean of 2)", "-", "10", "1.50"] and rows[1][-1] == "1.500"
    assert rows[2][:5] == ["en", "gpt2-s", "vanilla", "10", "4.00"]
    ci = {(r[1], r[3]): r[4:7] for r in (line.split("\t") for line in (tmp_path / "ci.tsv").read_text().splitlines())}
    assert ci[("gpt2-s", "self_bleu")] == ["4.00", "3.50", "4.50"]
    assert ci[("gpt2-s", "mauve")][1:] == ["NA", "NA"]


def test_provenance_recomputes_a_diversity_cell_and_expects_the_semantic_params_in_its_stamp(fake, tmp_path,
                                                                                           monkeypatch):
    """The cell's stamp records the semantic options it embedded with; `poeval provenance` reruns the
    diversity family alone on them and finds the same numbers, and expects those params from the config."""
    from poeval.cli import main
    from poeval.report.recompute import recompute_cell
    from poeval.config import fill
    from poeval.jobs.cell import cell_job
    from poeval.metrics.evaluate import family_record

    ref, npy, model, _, _ = _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    options = {"diversity": {"mauve_buckets": 3}, "semantic": {"encoder": "default"}}
    assert main(["evaluate", model.name, "--reference", ref.name, "--lang", "en", "--metrics", "diversity",
                 "--options", json.dumps(options), "--reference-embeddings", npy.name, "--bootstrap-reps", "20",
                 "--out", "cell.json", "--quiet"]) == 0
    stamp = json.loads((tmp_path / "cell.json").read_text())["provenance"]
    filled = {name: family_record(name, section).to_dict() for name, section in options.items()}   # the schema's defaults
    assert filled["diversity"]["mauve_buckets"] == 3 and filled["semantic"]["batch_size"] == 16
    assert stamp["params"]["metrics"] == filled and stamp["inputs"]["embeddings"]["path"] == npy.name
    diffs, recomputed = recompute_cell("cell.json", tmp_path)
    assert diffs == [] and "semantic" not in recomputed
    config = fill({"metrics": options | {"bootstrap": {"reps": 20, "seed": 1}}})
    assert cell_job(config, "en", "gpt2-s", "vanilla", "diversity").recorded()["metrics"] == filled
